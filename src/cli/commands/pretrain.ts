/**
 * `agentrl pretrain`: trains a base model from scratch on the generated corpus, with progress,
 * ETA, checkpoints and `--resume`, then writes the base and its model card (pass@1 per family).
 */
import type { Command } from "commander";
import { parseConfigFrom, readConfigFile } from "../../core/config-file.ts";
import { resolvePolicy } from "../../policy/resolve.ts";
import { parsePretrainConfig } from "../../pretrain/config.ts";
import { CORPUS_MIXES } from "../../pretrain/corpus.ts";
import { evaluateForCard, writeModelCard } from "../../pretrain/model-card.ts";
import { pretrain } from "../../pretrain/pretrain.ts";
import { finishRunAfterError } from "../../store/run-failure.ts";
import { createProgress } from "../progress.ts";
import { interruptOnSigint, openTrainingRun } from "../training-run.ts";

/** A pretraining run: fresh from a config (file plus flag overrides, validated), or `--resume`d. */
export function openPretrainRun(
  options: { resume?: string; runs: string; config?: string },
  fresh: Record<string, unknown>,
) {
  return openTrainingRun({
    kind: "pretrain",
    resume: options.resume,
    runs: options.runs,
    parse: parsePretrainConfig,
    fresh: () => parseConfigFrom(options.config, "pretrain config", () => parsePretrainConfig(fresh)),
    defaultId: (c) => `pretrain-${c.name}-${Date.now()}`,
  });
}

export function register(program: Command): void {
  program
    .command("pretrain")
    .description("pretrain a base model on the generated behaviour corpus and write it with its model card")
    .option("--config <file>", "JSON config (fields of src/pretrain/config.ts; missing fields take defaults)")
    .option("--name <name>", "name of the base (overrides the config)")
    .option("--mix <mix>", `corpus mix (${Object.keys(CORPUS_MIXES).join(", ")})`)
    .option("--steps <n>", "optimizer steps (overrides the config)")
    .option("--seed <n>", "seed (overrides the config)")
    .option("--out <dir>", "folder for the finished base (overrides the config)")
    .option("--resume <runDir>", "continue a pretraining run from its last checkpoint")
    .option("--runs <dir>", "root folder of run directories", "runs")
    .option("--json", "print the result as JSON")
    .action(async (options) => {
      const fromFile = options.config ? readConfigFile(options.config, "pretrain config") : {};
      const overrides: Record<string, unknown> = {};
      if (options.name) overrides.name = options.name;
      if (options.mix) overrides.mix = options.mix;
      if (options.steps) overrides.steps = Number(options.steps);
      if (options.seed) overrides.seed = Number(options.seed);
      if (options.out) overrides.out = options.out;
      const { config, directory, store, runId } = openPretrainRun(options, { ...fromFile, ...overrides });
      const progress = createProgress(`pretrain ${config.name}`, config.steps, {
        quiet: Boolean(options.json),
      });
      const interrupt = interruptOnSigint();
      try {
        const result = await pretrain({
          config,
          runDir: directory,
          store,
          runId,
          signal: interrupt.signal,
          onProgress: (p) =>
            progress.update(p.step, { loss: p.loss, "tok/s": Math.round(p.tokensPerSecond) }),
        });
        progress.stop();
        let evaluation = null;
        if (config.cardEpisodes > 0) {
          process.stderr.write(`model card: pass@1 on ${config.cardEpisodes} test tasks…\n`);
          const policy = await resolvePolicy(result.checkpointDir, { temperature: 1 });
          evaluation = await evaluateForCard(
            policy,
            config.cardEpisodes,
            CORPUS_MIXES[config.mix].withheldTemplates,
          );
          await policy.close?.();
          writeModelCard(result.checkpointDir, config, result, evaluation);
        }
        store.finishRun(runId, "completed", { ...result, evaluation });
        if (options.json) console.log(JSON.stringify({ run: directory, ...result, evaluation }, null, 2));
        else {
          console.log(`base written to ${result.checkpointDir} (run ${directory})`);
          console.log(
            `${result.steps} steps, ${(result.tokens / 1e6).toFixed(2)}M tokens, final loss ${result.finalLoss.toFixed(4)}, ${(result.seconds / 60).toFixed(1)} min`,
          );
          if (evaluation)
            console.log(
              `pass@1: ${JSON.stringify(evaluation.pass1)} withheld: ${JSON.stringify(evaluation.withheld)}`,
            );
        }
      } catch (error) {
        finishRunAfterError(store, runId, error, interrupt.signal);
        throw error;
      } finally {
        interrupt.dispose();
        store.close();
      }
    });
}
