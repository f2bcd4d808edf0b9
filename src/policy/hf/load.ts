/**
 * `hf:<folder>`: a Hugging Face checkpoint folder loaded as a chat policy: the model on the
 * engine (engine.ts) and the text side from the folder's own files (tokenizer.ts:
 * `tokenizer.json`; chat-template.ts: `chat_template.jinja` or `tokenizer_config.json`'s
 * `chat_template`; tool-calls.ts: the tool-call format).
 */
import { HfEngineModel } from "./engine.ts";
import { HfPolicy, type HfPolicyOptions, type HfTextSide } from "./policy.ts";

export { parseHfSpec } from "./spec.ts";

type TextModules = {
  loadHfTokenizer(folder: string): Promise<HfTextSide["tokenizer"]>;
  loadChatTemplate(folder: string): Promise<HfTextSide["template"]>;
  toolCallFormatOf(folder: string, modelType: string): Promise<string>;
  parseToolCalls: HfTextSide["parseToolCalls"];
};

/**
 * The text-side modules, imported by name at run time: they are built on their own (tokenizer,
 * template and tool-call parsing from maintained libraries) and the model side must not fail to
 * load without them.
 */
async function textModules(): Promise<TextModules> {
  // The built package is JavaScript: name the sibling files with this module's own extension.
  const ext = import.meta.url.endsWith(".ts") ? ".ts" : ".js";
  const names = ["./tokenizer", "./chat-template", "./tool-calls"].map((name) => name + ext);
  try {
    const loaded = await Promise.all(names.map((name) => import(name)));
    return Object.assign({}, ...loaded) as TextModules;
  } catch (error) {
    throw new Error(
      `hf: policies need the Hugging Face text side (${names.join(", ")}): ${error instanceof Error ? error.message : error}`,
    );
  }
}

/** Loads the text side of a checkpoint folder. */
export async function loadHfTextSide(folder: string, modelType: string): Promise<HfTextSide> {
  const modules = await textModules();
  const [tokenizer, template, toolFormat] = await Promise.all([
    modules.loadHfTokenizer(folder),
    modules.loadChatTemplate(folder),
    modules.toolCallFormatOf(folder, modelType),
  ]);
  return { tokenizer, template, toolFormat, parseToolCalls: modules.parseToolCalls };
}

export async function loadHfPolicy(
  folder: string,
  options: HfPolicyOptions & { maxLen?: number } = {},
): Promise<HfPolicy> {
  const model = HfEngineModel.load(folder, { maxLen: options.maxLen });
  const text = await loadHfTextSide(folder, model.config.modelType);
  if (text.tokenizer.vocabSize > model.config.vocabSize)
    throw new Error(
      `${folder}: the tokenizer has ${text.tokenizer.vocabSize} tokens, the model's embedding ${model.config.vocabSize}`,
    );
  return new HfPolicy(model, text, options);
}
