/**
 * Scoring: per-token log-probs (and entropies) of given sequences under the model, for PPO ratios,
 * KL estimates and perplexity. Batches have a fixed number of rows and T rounded up to a multiple
 * of 16, so a few programs serve every call.
 */
import { compileProgram, engineName } from "../../engine/backend.ts";
import { ExecutionSite, readArrays } from "../../engine/exec.ts";
import { type JaxArray, np } from "../../engine/jax.ts";
import { refTree } from "../../engine/tree.ts";
import { bucketLength } from "./batch.ts";
import type { GptConfig } from "./config.ts";
import { type GptParams, tokenStats, withoutValueHead } from "./model.ts";

export interface ScoreOptions {
  /** Logits are divided by it (use the sampling temperature to get the sampling log-probs). */
  temperature?: number;
  /** Also return the entropy of each predicting distribution. */
  entropy?: boolean;
  /** Also return the value head's value of each token's state (needs `params.value`). */
  values?: boolean;
  /** Rows per compiled call (default: as many as fit in 8192 tokens, at most 64). */
  rows?: number;
}

export interface ScoreResult {
  /** Per sequence, aligned with its ids: logprobs[i][t] = log p(ids[t] | ids[<t]); [i][0] = 0. */
  logprobs: Float32Array[];
  /** Same alignment; null unless asked for. */
  entropy: Float32Array[] | null;
  /** Same alignment: values[i][t] = V(state before token t) (model.ts `tokenStats`); null unless asked for. */
  values: Float32Array[] | null;
}

type Scorer = { run: (params: GptParams, ids: JaxArray) => JaxArray[]; site: ExecutionSite };
const scorers = new Map<string, Scorer>();

function scorerFor(config: GptConfig, temperature: number, entropy: boolean, values: boolean): Scorer {
  const key = JSON.stringify([engineName(), config, temperature, entropy, values]);
  let scorer = scorers.get(key);
  if (!scorer) {
    const run = compileProgram((params: GptParams, ids: JaxArray) => {
      const stats = tokenStats(params, ids, config, { temperature, entropy, values, gather: true });
      // jit outputs must be arrays (no null): logprobs, then entropy and values when asked for.
      return [stats.logprobs, stats.entropy, stats.values].filter((x) => x) as never;
    }, "score") as unknown as Scorer["run"];
    scorer = { run, site: new ExecutionSite(`score-${scorers.size}`) };
    scorers.set(key, scorer);
  }
  return scorer;
}

/** Scores every sequence (each ≤ maxLen tokens). Does not consume params. */
export async function scoreTokens(
  params: GptParams,
  config: GptConfig,
  sequences: readonly (readonly number[])[],
  options: ScoreOptions = {},
): Promise<ScoreResult> {
  const temperature = options.temperature ?? 1;
  if (!(temperature > 0)) throw new Error(`scoreTokens: temperature must be > 0, got ${temperature}`);
  const wantEntropy = options.entropy ?? false;
  const wantValues = options.values ?? false;
  if (wantValues && !params.value) throw new Error("scoreTokens: values need a value head (params.value)");
  const result: ScoreResult = {
    logprobs: [],
    entropy: wantEntropy ? [] : null,
    values: wantValues ? [] : null,
  };
  if (sequences.length === 0) return result;
  const longest = Math.max(1, ...sequences.map((s) => s.length));
  if (longest > config.maxLen)
    throw new Error(`scoreTokens: a sequence has ${longest} tokens, maxLen is ${config.maxLen}`);
  const T = bucketLength(longest, config.maxLen);
  const rows = options.rows ?? Math.max(1, Math.min(64, Math.floor(8192 / T)));
  const scorer = scorerFor(config, temperature, wantEntropy, wantValues);
  const scored = wantValues ? params : withoutValueHead(params);
  for (let start = 0; start < sequences.length; start += rows) {
    const group = sequences.slice(start, start + rows);
    const ids = new Int32Array(rows * T);
    for (const [row, sequence] of group.entries()) ids.set(sequence, row * T);
    const mode = scorer.site.begin();
    const outputs = scorer.run(refTree(scored), np.array(ids, { shape: [rows, T], dtype: np.int32 }));
    const read = (await readArrays(outputs, mode)) as Float32Array[];
    scorer.site.end();
    const [lp, en, va] = [read[0], wantEntropy ? read[1] : null, wantValues ? read.at(-1)! : null];
    group.forEach((sequence, row) => {
      const cut = (values: Float32Array) => values.slice(row * T, row * T + sequence.length);
      result.logprobs.push(cut(lp));
      if (en) result.entropy!.push(cut(en));
      if (va) result.values!.push(cut(va));
    });
  }
  return result;
}
