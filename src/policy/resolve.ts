/**
 * Turns a `--policy` argument into a Policy: a scripted policy name (`expert`, `guesser`, …), a
 * checkpoint directory of the embedded transformer (`models/base-strong`), a Hugging Face
 * checkpoint folder (`hf:<folder>`: Qwen3, Llama 3, SmolLM2, Qwen2.5; policy/hf/), or an
 * OpenAI-compatible endpoint (`openai:<base-url>#<model>`). Heavy backends are imported only when
 * asked for.
 */
import { existsSync } from "node:fs";
import type { Policy } from "../types/policy.ts";
import { parseHfSpec } from "./hf/spec.ts";
import type { OpenAiPolicyOptions } from "./openai/policy.ts";
import { parseOpenAiSpec } from "./openai/spec.ts";
import { SCRIPTED_POLICY_NAMES, scriptedPolicy } from "./scripted/index.ts";

export interface ResolvePolicyOptions {
  temperature?: number;
  topP?: number;
  /** Further options of an `openai:` policy (concurrency, retries, logprobs…). */
  openai?: Omit<Partial<OpenAiPolicyOptions>, "baseURL" | "model" | "temperature" | "topP">;
}

export async function resolvePolicy(spec: string, options: ResolvePolicyOptions = {}): Promise<Policy> {
  if ((SCRIPTED_POLICY_NAMES as readonly string[]).includes(spec)) return scriptedPolicy(spec);
  const endpoint = parseOpenAiSpec(spec);
  if (endpoint) {
    const { createOpenAiPolicy } = await import("./openai/policy.ts");
    return createOpenAiPolicy({
      ...options.openai,
      ...endpoint,
      ...(options.temperature !== undefined ? { temperature: options.temperature } : {}),
      ...(options.topP !== undefined ? { topP: options.topP } : {}),
    });
  }
  const hfFolder = parseHfSpec(spec);
  if (hfFolder !== null) {
    const { loadHfPolicy } = await import("./hf/load.ts");
    return loadHfPolicy(hfFolder, {
      ...(options.temperature !== undefined ? { temperature: options.temperature } : {}),
      ...(options.topP !== undefined ? { topP: options.topP } : {}),
    });
  }
  if (existsSync(spec)) {
    const { loadEmbeddedPolicy } = await import("./embedded/index.ts");
    return loadEmbeddedPolicy(spec, options);
  }
  throw new Error(
    `unknown policy "${spec}": expected a scripted policy (${SCRIPTED_POLICY_NAMES.join(", ")}), a checkpoint directory, hf:<folder> or openai:<base-url>#<model>`,
  );
}
