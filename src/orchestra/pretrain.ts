/**
 * The orchestrator's base: `pretrain` (src/pretrain) on the orchestration corpus and vocabulary
 * (corpus.ts), then a model card with what it does as an orchestrator before any RL (accuracy per
 * axis with weak sub-agents, high degree, temperature 1, test worlds). `config.mix` is unused
 * (the corpus replaces it) and `cardEpisodes` is the number of card tasks per axis and value.
 */
import { resolvePolicy } from "../policy/resolve.ts";
import type { PretrainConfig } from "../pretrain/config.ts";
import {
  architectureSentence,
  cardMachine,
  percent,
  trainingFacts,
  trainingSentence,
  writeCardFiles,
} from "../pretrain/model-card.ts";
import { type PretrainResult, pretrain } from "../pretrain/pretrain.ts";
import type { Store } from "../store/index.ts";
import { ORCHESTRA_CORPUS_MIX, orchestraCorpusEpisodes, orchestraVocabulary } from "./corpus.ts";
import { evaluateOrchestrator } from "./evaluate.ts";
import { generateOrchestraTasks } from "./generate.ts";
import { AXES } from "./graph.ts";
import { COMPETENCE_LEVELS } from "./sub-agents.ts";

export interface OrchestraPretrainOptions {
  config: PretrainConfig;
  runDir: string;
  store: Store;
  runId: string;
  onProgress?: (progress: { step: number; steps: number; loss: number; tokensPerSecond: number }) => void;
  /** Ctrl-C / SIGTERM: a checkpoint is saved and the call throws (see `pretrain`). */
  signal?: AbortSignal;
}

export async function pretrainOrchestrator(options: OrchestraPretrainOptions): Promise<PretrainResult> {
  return pretrain({
    ...options,
    corpus: { vocabulary: orchestraVocabulary(), episodes: orchestraCorpusEpisodes },
  });
}

/** Writes `card.json` and `MODEL_CARD.md` next to an orchestrator base. */
export function writeOrchestratorCard(
  dir: string,
  config: PretrainConfig,
  result: PretrainResult,
  evaluation: { label: string; accuracy: Record<string, number> } | null,
): void {
  const card = {
    name: config.name,
    model: config.model,
    corpus: {
      components: ORCHESTRA_CORPUS_MIX.map(({ weight, strategy, degree }) => ({ weight, degree, strategy })),
      episodes: result.corpus.episodes,
      correctFraction: result.corpus.successRate,
    },
    training: trainingFacts(config, result),
    evaluation,
    machine: cardMachine(),
  };
  const lines = [
    `# ${config.name}`,
    "",
    `${architectureSentence(config, "agentrl orchestra pretrain")} on scripted orchestration episodes (src/orchestra/corpus.ts). Its vocabulary is the world's plus the sub-agent tags and orchestration words, so it can only be used as an orchestrator.`,
    "",
    "## Corpus",
    "",
    "| behaviour | degree | share |",
    "| --- | --- | --- |",
    ...ORCHESTRA_CORPUS_MIX.map(
      ({ weight, strategy, degree }) => `| ${strategy.id} | ${degree} | ${percent(weight)} |`,
    ),
    "",
    `Tasks of every axis at values up to 4, train worlds, weak and strong sub-agents in equal shares. ${result.corpus.episodes} episodes generated, ${percent(result.corpus.successRate)} of them correct, ${result.corpus.dropped} longer than the context dropped.`,
    "",
    "## Training",
    "",
    `${trainingSentence(config, result)}; loss weight of prompt and observation tokens ${config.contextLossWeight}. Reproduce with \`scripts/orchestrator.sh\`.`,
    "",
    ...(evaluation
      ? [
          `## Accuracy as an orchestrator (${evaluation.label})`,
          "",
          "| axis | accuracy |",
          "| --- | --- |",
          ...Object.entries(evaluation.accuracy).map(([axis, rate]) => `| ${axis} | ${percent(rate)} |`),
          "",
        ]
      : []),
  ];
  writeCardFiles(dir, card, lines);
}

/** The card's evaluation: accuracy per axis at value 2 (weak sub-agents, high degree, temperature 1). */
export async function evaluateBaseForCard(
  dir: string,
  tasksPerAxis: number,
): Promise<{ label: string; accuracy: Record<string, number> }> {
  const policy = await resolvePolicy(dir, { temperature: 1 });
  const accuracy: Record<string, number> = {};
  try {
    for (const axis of AXES) {
      const tasks = generateOrchestraTasks({ axis, value: 2, count: tasksPerAxis, seed: 1, split: "test" });
      accuracy[axis] = (
        await evaluateOrchestrator({
          policy,
          degree: "high",
          errorRate: COMPETENCE_LEVELS.weak,
          tasks,
          seed: 1,
        })
      ).accuracy;
    }
  } finally {
    await policy.close?.();
  }
  return {
    label: `value 2, ${tasksPerAxis} test tasks per axis, weak sub-agents, high degree, temperature 1`,
    accuracy,
  };
}
