/**
 * A scripted mock policy for tests: each turn's output comes from a function of the context, so a
 * test states exactly what the "model" writes (including garbage) and the loop's reaction is checked.
 */
import type { Policy, PolicyContext, PolicyStep, Tokenizer } from "../types/policy.ts";

export type MockTurn = string | Partial<PolicyStep> | Error;

export function createMockPolicy(
  script: (context: PolicyContext) => MockTurn,
  options: { id?: string; protocol?: "text" | "chat"; tokenizer?: Tokenizer } = {},
): Policy & { released: string[]; calls: number } {
  const policy = {
    id: options.id ?? "mock",
    protocol: options.protocol ?? "text",
    ...(options.tokenizer ? { tokenizer: options.tokenizer } : {}),
    released: [] as string[],
    calls: 0,
    async act(contexts: readonly PolicyContext[]): Promise<PolicyStep[]> {
      policy.calls++;
      return contexts.map((context) => {
        const out = script(context);
        if (out instanceof Error) throw out;
        const step: Partial<PolicyStep> = typeof out === "string" ? { text: out } : out;
        const text = step.text ?? "";
        const tokenIds = step.tokenIds ?? options.tokenizer?.encode(text) ?? [];
        return { text, tokenIds, logprobs: step.logprobs ?? null, finishReason: "stop", ...step };
      });
    },
    release(ids: readonly string[]) {
      policy.released.push(...ids);
    },
  };
  return policy;
}
