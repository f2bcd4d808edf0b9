/**
 * `hf:<folder>`: a Hugging Face checkpoint folder (or a PEFT adapter folder naming its base) loaded as a chat policy: the model on the
 * engine (engine.ts) and the text side from the folder's own files (tokenizer.ts:
 * `tokenizer.json`; chat-template.ts: `chat_template.jinja` or `tokenizer_config.json`'s
 * `chat_template`; tool-calls.ts: the tool-call format its template writes).
 */
import { existsSync, readFileSync } from "node:fs";
import { join, resolve } from "node:path";
import { loadChatTemplate } from "./chat-template.ts";
import { HfEngineModel } from "./engine.ts";
import { LoraConfigError } from "./lora.ts";
import { ADAPTER_CONFIG, readPeftAdapter } from "./peft.ts";
import { HfPolicy, type HfPolicyOptions, type HfTextSide } from "./policy.ts";
import { loadHfTokenizer } from "./tokenizer.ts";
import { parseToolCalls, toolCallFormatOfTemplate } from "./tool-calls.ts";
import { loadHfCheckpoint } from "./weights.ts";

export { parseHfSpec } from "./spec.ts";

/**
 * Loads the text side of a checkpoint folder. A folder without a chat template (a base model)
 * is refused here by name (NoChatTemplateError): a chat policy has nothing to render turns with.
 */
export async function loadHfTextSide(folder: string, modelType: string): Promise<HfTextSide> {
  const [tokenizer, template] = await Promise.all([loadHfTokenizer(folder), loadChatTemplate(folder)]);
  const toolFormat = toolCallFormatOfTemplate(template.sources.join("\n"), modelType);
  return { tokenizer, template, toolFormat, parseToolCalls };
}

/**
 * A checkpoint folder, or a PEFT adapter folder (`adapter_config.json`, no `config.json`): then its
 * `base_model_name_or_path` (a folder, absolute or relative to the adapter's) is loaded with the
 * adapter applied unmerged (engine.ts `lora`), and the text side is the base's.
 */
export async function loadHfPolicy(
  folder: string,
  options: HfPolicyOptions & { maxLen?: number } = {},
): Promise<HfPolicy> {
  const adapter = adapterBase(folder);
  const model = adapter
    ? await loadAdapted(adapter, folder, options.maxLen)
    : HfEngineModel.load(folder, { maxLen: options.maxLen });
  const textFolder = adapter ?? folder;
  const text = await loadHfTextSide(textFolder, model.config.modelType);
  if (text.tokenizer.vocabSize > model.config.vocabSize)
    throw new Error(
      `${textFolder}: the tokenizer has ${text.tokenizer.vocabSize} tokens, the model's embedding ${model.config.vocabSize}`,
    );
  return new HfPolicy(model, text, { ...(adapter ? { id: `hf:${folder}` } : {}), ...options });
}

/** The base folder an adapter folder names, or null for a checkpoint folder. */
export function adapterBase(folder: string): string | null {
  const configPath = join(folder, ADAPTER_CONFIG);
  if (!existsSync(configPath) || existsSync(join(folder, "config.json"))) return null;
  let named: unknown;
  try {
    named = JSON.parse(readFileSync(configPath, "utf8")).base_model_name_or_path;
  } catch (error) {
    throw new LoraConfigError(`${configPath}: ${(error as Error).message}`);
  }
  if (typeof named !== "string" || named === "")
    throw new LoraConfigError(
      `${configPath}: base_model_name_or_path must name the base checkpoint's folder`,
    );
  const base = resolve(folder, named);
  if (!existsSync(join(base, "config.json")))
    throw new LoraConfigError(
      `${configPath}: base_model_name_or_path "${named}" is not a checkpoint folder here (${base} has no config.json); point it at the base's local folder (a hub name is not downloaded)`,
    );
  return base;
}

async function loadAdapted(base: string, adapterFolder: string, maxLen?: number): Promise<HfEngineModel> {
  const checkpoint = loadHfCheckpoint(base);
  const lora = await readPeftAdapter(adapterFolder, checkpoint.config);
  return new HfEngineModel(checkpoint, { maxLen, lora });
}
