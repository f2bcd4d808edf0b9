/**
 * `hf:<folder>`: a Hugging Face checkpoint folder loaded as a chat policy: the model on the
 * engine (engine.ts) and the text side from the folder's own files (tokenizer.ts:
 * `tokenizer.json`; chat-template.ts: `chat_template.jinja` or `tokenizer_config.json`'s
 * `chat_template`; tool-calls.ts: the tool-call format its template writes).
 */
import { loadChatTemplate } from "./chat-template.ts";
import { HfEngineModel } from "./engine.ts";
import { HfPolicy, type HfPolicyOptions, type HfTextSide } from "./policy.ts";
import { loadHfTokenizer } from "./tokenizer.ts";
import { parseToolCalls, toolCallFormatOfTemplate } from "./tool-calls.ts";

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
