/**
 * The model card written next to every base: where it came from (corpus mix, withheld templates,
 * steps, tokens, time, final loss) and what it does (pass@1 per family at temperature 1 on test
 * worlds, measured through the real episode loop, plus the withheld template on its own).
 * `agentrl rollout --policy models/<base> --tasks 200 --json` reproduces the pass@1 figures.
 */
import { writeFileSync } from "node:fs";
import { join } from "node:path";
import { runEpisodes } from "../env/run-episodes.ts";
import { rolloutTasks, worldToolsFor } from "../env/task-set.ts";
import { rolloutStatsByFamily } from "../eval/rollout-stats.ts";
import type { Policy } from "../types/policy.ts";
import { TASK_FAMILIES } from "../types/task.ts";
import { checkAnswer } from "../world/index.ts";
import type { PretrainConfig } from "./config.ts";
import { CORPUS_MIXES } from "./corpus.ts";
import type { PretrainResult } from "./pretrain.ts";

export interface CardEvaluation {
  /** Tasks evaluated (one episode each, temperature 1, test worlds, seed 1). */
  tasks: number;
  pass1: Record<string, number>;
  pass1Overall: number;
  /** pass@1 on each withheld template alone. */
  withheld: Record<string, number>;
}

/** pass@1 as `agentrl rollout --policy <dir> --tasks N --seed 1` measures it, plus withheld templates. */
export async function evaluateForCard(
  policy: Policy,
  tasks: number,
  withheldTemplates: string[],
): Promise<CardEvaluation> {
  const run = async (list: ReturnType<typeof rolloutTasks>) =>
    runEpisodes({
      policy,
      episodes: list.map((task, i) => ({ task, seed: 1 * 1_000_003 + i })),
      tools: worldToolsFor(),
      verify: checkAnswer,
      batchSize: 128,
    });
  const all = await run(rolloutTasks({ split: "test", count: tasks, seed: 1 }));
  const stats = rolloutStatsByFamily(all);
  const withheld: Record<string, number> = {};
  for (const template of withheldTemplates) {
    const arithmetic = rolloutTasks({ split: "test", count: 400, seed: 2, family: "arithmetic" }).filter(
      (task) => task.template === template,
    );
    const trajectories = await run(arithmetic);
    withheld[template] = trajectories.filter((t) => t.correct).length / Math.max(1, trajectories.length);
  }
  return {
    tasks,
    pass1: Object.fromEntries(
      TASK_FAMILIES.filter((family) => stats.families[family]).map((family) => [
        family,
        stats.families[family].success_rate,
      ]),
    ),
    pass1Overall: stats.overall.success_rate,
    withheld,
  };
}

/** What a card records of a pretraining run (shared by every base's card). */
export function trainingFacts(config: PretrainConfig, result: PretrainResult) {
  return {
    steps: result.steps,
    tokens: result.tokens,
    policyTokens: result.policyTokens,
    seconds: result.seconds,
    finalLoss: result.finalLoss,
    learningRate: config.learningRate,
    seed: config.seed,
    contextLossWeight: config.contextLossWeight,
  };
}

export function writeModelCard(
  dir: string,
  config: PretrainConfig,
  result: PretrainResult,
  evaluation: CardEvaluation,
) {
  const mix = CORPUS_MIXES[config.mix];
  const card = {
    name: config.name,
    model: config.model,
    corpus: {
      mix: config.mix,
      components: mix.components.map(({ weight, behaviour }) => ({ weight, behaviour })),
      withheldTemplates: mix.withheldTemplates,
      noise: config.noise ?? mix.noise,
      episodes: result.corpus.episodes,
      correctFraction: result.corpus.successRate,
    },
    training: { ...trainingFacts(config, result), init: config.init ?? null },
    evaluation,
    machine: `${process.platform} ${process.arch}, Node ${process.versions.node}`,
  };
  writeFileSync(join(dir, "card.json"), `${JSON.stringify(card, null, 2)}\n`);
  const pct = (x: number) => `${(100 * x).toFixed(1)}%`;
  const lines = [
    `# ${config.name}`,
    "",
    `A ${config.model.nLayers}-layer, d=${config.model.dModel} GPT (context ${config.model.maxLen}) pretrained from scratch by \`agentrl pretrain\` on the \`${config.mix}\` corpus mix.`,
    "",
    "## Corpus",
    "",
    "| behaviour | share |",
    "| --- | --- |",
    ...mix.components.map(({ weight, behaviour }) => `| ${behaviour.id} | ${pct(weight)} |`),
    "",
    `Withheld (never demonstrated): ${mix.withheldTemplates.join(", ")}. Tool noise in corpus episodes: ${config.noise ?? mix.noise}. ` +
      `${result.corpus.episodes} episodes generated, ${pct(result.corpus.successRate)} of them correct.`,
    "",
    "## Training",
    "",
    `${result.steps} steps, ${(result.tokens / 1e6).toFixed(2)}M tokens (${(result.policyTokens / 1e6).toFixed(2)}M policy tokens in the loss), ` +
      `${(result.seconds / 60).toFixed(1)} min on ${card.machine}, final loss ${result.finalLoss.toFixed(4)} nats/token, seed ${config.seed}` +
      (config.init ? `, continued from \`${config.init}\` (see its own card)` : ", from a random init") +
      `; loss weight of prompt and observation tokens ${config.contextLossWeight}.`,
    "",
    "## pass@1 (temperature 1, one episode per task, test worlds)",
    "",
    `Measured on ${evaluation.tasks} tasks; reproduce with \`npx agentrl rollout --policy ${dir} --tasks ${evaluation.tasks} --seed 1 --temperature 1\`.`,
    "",
    "| family | pass@1 |",
    "| --- | --- |",
    ...Object.entries(evaluation.pass1).map(([family, rate]) => `| ${family} | ${pct(rate)} |`),
    `| all | ${pct(evaluation.pass1Overall)} |`,
    ...Object.entries(evaluation.withheld).map(
      ([template, rate]) => `| withheld ${template} | ${pct(rate)} |`,
    ),
    "",
  ];
  writeFileSync(join(dir, "MODEL_CARD.md"), lines.join("\n"));
}
