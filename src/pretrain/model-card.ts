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

export const percent = (x: number) => `${(100 * x).toFixed(1)}%`;

/** The machine a card's run took its time on. */
export const cardMachine = () => `${process.platform} ${process.arch}, Node ${process.versions.node}`;

/** A card's opening sentence: the architecture and the command that pretrained it. */
export function architectureSentence(config: PretrainConfig, command: string): string {
  const { nLayers, dModel, maxLen } = config.model;
  return `A ${nLayers}-layer, d=${dModel} GPT (context ${maxLen}) pretrained from scratch by \`${command}\``;
}

/** A card's training paragraph up to the seed: steps, tokens, minutes, final loss. */
export function trainingSentence(config: PretrainConfig, result: PretrainResult): string {
  return (
    `${result.steps} steps, ${(result.tokens / 1e6).toFixed(2)}M tokens (${(result.policyTokens / 1e6).toFixed(2)}M policy tokens in the loss), ` +
    `${(result.seconds / 60).toFixed(1)} min on ${cardMachine()}, final loss ${result.finalLoss.toFixed(4)} nats/token, seed ${config.seed}`
  );
}

/** Writes `card.json` (every number) and `MODEL_CARD.md` (the same, for people) into `dir`. */
export function writeCardFiles(dir: string, card: object, markdown: string[]): void {
  writeFileSync(join(dir, "card.json"), `${JSON.stringify(card, null, 2)}\n`);
  writeFileSync(join(dir, "MODEL_CARD.md"), markdown.join("\n"));
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
    machine: cardMachine(),
  };
  const lines = [
    `# ${config.name}`,
    "",
    `${architectureSentence(config, "agentrl pretrain")} on the \`${config.mix}\` corpus mix.`,
    "",
    "## Corpus",
    "",
    "| behaviour | share |",
    "| --- | --- |",
    ...mix.components.map(({ weight, behaviour }) => `| ${behaviour.id} | ${percent(weight)} |`),
    "",
    `Withheld (never demonstrated): ${mix.withheldTemplates.join(", ")}. Tool noise in corpus episodes: ${config.noise ?? mix.noise}. ` +
      `${result.corpus.episodes} episodes generated, ${percent(result.corpus.successRate)} of them correct.`,
    "",
    "## Training",
    "",
    trainingSentence(config, result) +
      (config.init ? `, continued from \`${config.init}\` (see its own card)` : ", from a random init") +
      `; loss weight of prompt and observation tokens ${config.contextLossWeight}.`,
    "",
    "## pass@1 (temperature 1, one episode per task, test worlds)",
    "",
    `Measured on ${evaluation.tasks} tasks; reproduce with \`npx agentrl rollout --policy ${dir} --tasks ${evaluation.tasks} --seed 1 --temperature 1\`.`,
    "",
    "| family | pass@1 |",
    "| --- | --- |",
    ...Object.entries(evaluation.pass1).map(([family, rate]) => `| ${family} | ${percent(rate)} |`),
    `| all | ${percent(evaluation.pass1Overall)} |`,
    ...Object.entries(evaluation.withheld).map(
      ([template, rate]) => `| withheld ${template} | ${percent(rate)} |`,
    ),
    "",
  ];
  writeCardFiles(dir, card, lines);
}
