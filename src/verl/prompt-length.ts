/**
 * How long a task's first prompt can be, in tokens, before any tokenizer is at hand: verl raises
 * mid-training on a prompt longer than `data.max_prompt_length`, and in agent mode the prompt the
 * rollout server renders carries the tool schemas, which `data.filter_overlong_prompts` does not
 * count (it sees only the dataset's messages). So `verl init` checks every task up front.
 *
 * The estimate errs long on purpose (the margin): 1 token per 3 UTF-8 bytes (BPE tokenizers of the
 * Qwen/Llama families average about 4 bytes per token on English and a little over 3 on JSON), plus
 * 200 tokens for the chat template's markers and the hermes tool-use instructions around the
 * schemas. A prompt that passes fits; one that fails may still fit, and the error says how to
 * raise the limit.
 */
import type { ToolSpec } from "../types/policy.ts";
import type { Task } from "../types/task.ts";

export const BYTES_PER_TOKEN = 3;
export const TEMPLATE_TOKENS = 200;

/** The tool schemas as the chat request carries them (what the template renders into the prompt). */
export function toolSchemasText(tools: readonly ToolSpec[]): string {
  return tools
    .map((tool) =>
      JSON.stringify({
        type: "function",
        function: { name: tool.name, description: tool.description, parameters: tool.parameters },
      }),
    )
    .join("\n");
}

/** An upper estimate of the rendered first prompt's tokens. */
export function estimatePromptTokens(system: string, question: string, tools: readonly ToolSpec[]): number {
  const bytes =
    Buffer.byteLength(system) + Buffer.byteLength(question) + Buffer.byteLength(toolSchemasText(tools));
  return Math.ceil(bytes / BYTES_PER_TOKEN) + TEMPLATE_TOKENS;
}

/** Throws naming the longest task when its estimate passes `maxPromptLength`. */
export function checkPromptLengths(
  tasks: readonly Task[],
  tools: readonly ToolSpec[],
  maxPromptLength: number,
  defaultSystemPrompt: string,
): void {
  let longest: { task: Task; tokens: number } | null = null;
  for (const task of tasks) {
    const tokens = estimatePromptTokens(task.systemPrompt ?? defaultSystemPrompt, task.question, tools);
    if (!longest || tokens > longest.tokens) longest = { task, tokens };
  }
  if (longest && longest.tokens > maxPromptLength) {
    const suggested = Math.ceil(longest.tokens / 256) * 256;
    throw new Error(
      `verl init: task ${longest.task.id}'s prompt may take up to ${longest.tokens} tokens with the ${tools.length} tool schemas ` +
        `(estimated at ${BYTES_PER_TOKEN} bytes per token plus ${TEMPLATE_TOKENS} for the template), more than ` +
        `--max-prompt-length ${maxPromptLength}: verl would raise mid-training. Give --max-prompt-length ${suggested}.`,
    );
  }
}
