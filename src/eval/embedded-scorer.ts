/**
 * A `TokenScorer` over an embedded checkpoint: per-token log-probs from `scoreTokens` at
 * temperature 1 (the model's own distribution, as the paper's perplexity uses), context window
 * `maxLen`. The model code is imported only when a checkpoint is scored.
 */
import { existsSync } from "node:fs";
import { join } from "node:path";
import { MANIFEST_FILE } from "../engine/checkpoint.ts";
import type { TokenScorer } from "./perplexity.ts";

/** True when `spec` names a checkpoint directory (it holds a checkpoint manifest). */
export function isCheckpointDirectory(spec: string): boolean {
  return existsSync(join(spec, MANIFEST_FILE));
}

export async function loadEmbeddedScorer(directory: string): Promise<TokenScorer> {
  const { loadModelCheckpoint, scoreTokens } = await import("../policy/embedded/index.ts");
  const { disposeTree } = await import("../engine/tree.ts");
  const checkpoint = await loadModelCheckpoint(directory);
  if (checkpoint.training) disposeTree(checkpoint.training.opt as never);
  const { params, config, tokenizer } = checkpoint;
  return {
    id: `embedded:${directory}`,
    tokenizer,
    maxLength: config.maxLen,
    async score(sequences) {
      const { logprobs } = await scoreTokens(params, config, sequences);
      return logprobs.map((row) => Array.from(row));
    },
    close() {
      disposeTree(params);
    },
  };
}

/** The scorer of an eval run's policy when it is an embedded checkpoint, else null. */
export async function scorerForPolicySpec(spec: string): Promise<TokenScorer | null> {
  return isCheckpointDirectory(spec) ? loadEmbeddedScorer(spec) : null;
}

/**
 * The model an eval run sampled from: its policy spec, or for an `agentrl eval --agent` run (policy
 * `agent:<module>@<model>`) the model behind its gateway, as `--policy` named it.
 */
export function evalRunModelSpec(config: { policy: string; agent?: { policy?: unknown } }): string {
  const behind = config.agent?.policy;
  return typeof behind === "string" ? behind : config.policy;
}

/** The scorer of an eval run's model when it is an embedded checkpoint (agent runs included), else null. */
export async function scorerForEvalRun(config: {
  policy: string;
  agent?: { policy?: unknown };
}): Promise<TokenScorer | null> {
  return scorerForPolicySpec(evalRunModelSpec(config));
}
