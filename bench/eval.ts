/**
 * Eval throughput of an embedded base: `evaluate({ persist: false })` (the `agentrl eval` driver,
 * in memory) on 32 test-world tasks x n = 8 with the world tools, batch 64, the paper's sampling
 * (temperature 0.6, top-p 0.95), the episode loop's default budgets.
 *
 * - `eval_episodes_per_s`: episodes per second of `models/base-strong` when it exists; otherwise of
 *   a freshly initialised model of the shipped config (`DEFAULT_PRETRAIN_CONFIG.model` over the
 *   embedded vocabulary, seed 0) saved to a temporary checkpoint and loaded like a shipped one. An
 *   untrained model writes unparseable turns and ends after two format errors, a trained base makes
 *   several tool calls: the two figures are not comparable. Which one ran is said on stderr.
 *
 * One warm-up eval first (it compiles the decode programs and builds the worlds' search indexes).
 */
import { existsSync, mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { keyFromSeed } from "../src/engine/init.ts";
import { evaluate } from "../src/eval/run-eval.ts";
import { saveModelCheckpoint } from "../src/policy/embedded/checkpoint.ts";
import { loadEmbeddedPolicy } from "../src/policy/embedded/index.ts";
import { initGpt } from "../src/policy/embedded/model.ts";
import { createWordTokenizer } from "../src/policy/embedded/tokenizer.ts";
import { DEFAULT_PRETRAIN_CONFIG } from "../src/pretrain/config.ts";
import { embeddedVocabulary } from "../src/pretrain/corpus.ts";

const SHIPPED_BASE = "models/base-strong";

/** A checkpoint of the shipped model config with fresh weights, in a temporary folder. */
async function freshCheckpoint(): Promise<string> {
  const tokenizer = createWordTokenizer(embeddedVocabulary());
  const config = { vocabSize: tokenizer.vocabSize, ...DEFAULT_PRETRAIN_CONFIG.model };
  const dir = join(mkdtempSync(join(tmpdir(), "agentrl-bench-eval-")), "fresh-base");
  await saveModelCheckpoint(dir, { config, tokenizer, params: initGpt(config, keyFromSeed(0)) });
  return dir;
}

export async function benchEval(): Promise<Record<string, number>> {
  const shipped = existsSync(SHIPPED_BASE);
  const dir = shipped ? SHIPPED_BASE : await freshCheckpoint();
  process.stderr.write(
    shipped
      ? `bench: eval_episodes_per_s measures ${SHIPPED_BASE}\n`
      : `bench: eval_episodes_per_s measures a freshly initialised model of the shipped config (${SHIPPED_BASE} not found)\n`,
  );
  const sampling = { temperature: 0.6, topP: 0.95 };
  const policy = await loadEmbeddedPolicy(dir, sampling);
  try {
    const run = async (count: number, n: number) => {
      const started = performance.now();
      const result = await evaluate({
        policy,
        tasks: { type: "world", split: "test", count, seed: 1 },
        n,
        ...sampling,
        batchSize: 64,
        persist: false,
        curves: { bootstrap: false },
      });
      // Every episode ran, infra-failed ones too (they are only left out of pass@k's samples).
      const { samples, infraFailures } = result.totals;
      return {
        seconds: (performance.now() - started) / 1000,
        episodes: samples + infraFailures,
        infraFailures,
      };
    };
    await run(8, 8);
    const { seconds, episodes, infraFailures } = await run(32, 8);
    return { eval_episodes_per_s: episodes / seconds, eval_infra_failures: infraFailures };
  } finally {
    await policy.close();
    if (!shipped) rmSync(join(dir, ".."), { recursive: true, force: true });
  }
}
