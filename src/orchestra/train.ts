/**
 * RL of an embedded orchestrator through the RL trainer (`trainRl` with an env): GRPO on fresh
 * orchestration tasks of the train split, reward 0.9 · correct + 0.1 · executed without error
 * (env.ts). The config is the RL config (src/rl/config.ts) with orchestration defaults plus an
 * `orchestra` block: which axes, the largest axis value, the degree and the sub-agents' competence.
 */
import { writeFileSync } from "node:fs";
import { join } from "node:path";
import { z } from "zod";
import { createRng, mixSeeds } from "../core/random.ts";
import { parseRlConfig, type RlConfig } from "../rl/config.ts";
import type { TaskSampler } from "../rl/tasks.ts";
import { type RlResult, type TrainRlOptions, trainRl } from "../rl/train.ts";
import { checkAnswer } from "../world/index.ts";
import { DEGREES, ORCHESTRA_BUDGETS, orchestraToolsFor, withOrchestraReward } from "./env.ts";
import { AXIS_RANGE, generateOrchestraTasks } from "./generate.ts";
import { AXES, type Axis } from "./graph.ts";
import { COMPETENCE_LEVELS } from "./sub-agents.ts";

export const OrchestraSettingsSchema = z
  .object({
    /** Axes the training tasks vary (each task varies one), in equal shares. */
    axes: z.array(z.enum(AXES)).min(1),
    /** Largest axis value of a training task (values run from each axis's minimum). */
    maxValue: z.number().int().min(2).max(12),
    /** `low`: at most one sub-agent call per episode; `high`: any number, parallel plans allowed. */
    degree: z.enum(DEGREES),
    /** Sub-agents' per-step error rate: `weak`, `strong` or a number in [0, 1]. */
    competence: z.union([
      z.enum(Object.keys(COMPETENCE_LEVELS) as ["strong", "weak"]),
      z.number().min(0).max(1),
    ]),
  })
  .strict();
export type OrchestraSettings = z.infer<typeof OrchestraSettingsSchema>;

export const DEFAULT_ORCHESTRA_SETTINGS: OrchestraSettings = {
  axes: [...AXES],
  maxValue: 3,
  degree: "high",
  competence: "weak",
};

/** RL defaults of orchestration (boundary tracking measures world tasks, so it is off). */
const ORCHESTRA_RL_DEFAULTS: Partial<RlConfig> = {
  name: "orchestrator-grpo",
  base: "models/orchestrator-base",
  estimator: "grpo",
  budgets: ORCHESTRA_BUDGETS,
  evalEvery: 0,
  learningRate: 3e-4,
};

export interface OrchestraTrainConfig {
  rl: RlConfig;
  orchestra: OrchestraSettings;
}

/** Validates `{ ...rl fields, orchestra: {...} }` over the defaults; errors name the bad field. */
export function parseOrchestraTrainConfig(input: unknown): OrchestraTrainConfig {
  if (input === null || typeof input !== "object" || Array.isArray(input)) {
    throw new Error("invalid orchestra train config: expected a JSON object");
  }
  const { orchestra, ...rl } = input as { orchestra?: unknown };
  const parsed = OrchestraSettingsSchema.safeParse({
    ...DEFAULT_ORCHESTRA_SETTINGS,
    ...(orchestra as object),
  });
  if (!parsed.success) {
    const problems = parsed.error.issues.map(
      (issue) => `orchestra.${issue.path.join(".")}: ${issue.message}`,
    );
    throw new Error(`invalid orchestra train config:\n  ${problems.join("\n  ")}`);
  }
  return { rl: parseRlConfig({ ...ORCHESTRA_RL_DEFAULTS, ...rl }), orchestra: parsed.data };
}

export function errorRateOf(competence: OrchestraSettings["competence"]): number {
  return typeof competence === "number" ? competence : COMPETENCE_LEVELS[competence];
}

/** Fresh train-split tasks: per task an axis (equal shares) and a value up to `maxValue`. */
export function orchestraSampler(settings: OrchestraSettings, seed: number): TaskSampler {
  return {
    description: `orchestration tasks (${settings.axes.join(", ")}; values up to ${settings.maxValue})`,
    draw(step, round, count) {
      const drawSeed = mixSeeds(mixSeeds(seed, step), round + 0x0c);
      const rng = createRng(drawSeed);
      return Array.from({ length: count }, (_, i) => {
        const axis: Axis = settings.axes[(i + rng.int(settings.axes.length)) % settings.axes.length];
        const value = rng.range(AXIS_RANGE[axis].min, Math.max(AXIS_RANGE[axis].min, settings.maxValue));
        return generateOrchestraTasks({
          axis,
          value,
          count: 1,
          seed: mixSeeds(drawSeed, i),
          split: "train",
        })[0];
      });
    },
  };
}

export async function trainOrchestrator(
  config: OrchestraTrainConfig,
  options: Omit<TrainRlOptions, "config" | "env">,
): Promise<RlResult> {
  return trainRl({
    ...options,
    config: config.rl,
    env: {
      sampler: orchestraSampler(config.orchestra, mixSeeds(config.rl.seed, 0x7a51)),
      tools: orchestraToolsFor({
        degree: config.orchestra.degree,
        errorRate: errorRateOf(config.orchestra.competence),
      }),
      verify: checkAnswer,
      reward: withOrchestraReward,
    },
  });
}

/** Writes `MODEL_CARD.md` and `card.json` next to a trained orchestrator, from its run's metrics. */
export function writeTrainedOrchestratorCard(
  config: OrchestraTrainConfig,
  result: RlResult,
  curve: { reward: { step: number; value: number }[]; accuracy: { step: number; value: number }[] },
): void {
  const window = (points: { value: number }[], from: number, to?: number) => {
    const slice = points.slice(from, to);
    return slice.reduce((sum, point) => sum + point.value, 0) / Math.max(1, slice.length);
  };
  const first = { reward: window(curve.reward, 0, 5), accuracy: window(curve.accuracy, 0, 5) };
  const last = {
    reward: window(curve.reward, -5, undefined),
    accuracy: window(curve.accuracy, -5, undefined),
  };
  const card = {
    name: config.rl.name,
    base: config.rl.base,
    config,
    result: { ...result, lastMetrics: undefined },
    first,
    last,
    curve,
  };
  writeFileSync(join(result.modelDir, "card.json"), `${JSON.stringify(card, null, 2)}\n`);
  const lines = [
    `# ${config.rl.name}`,
    "",
    `GRPO of \`${config.rl.base}\` as an orchestrator (\`agentrl orchestra train\`, src/orchestra/train.ts): reward 0.9 · correct + 0.1 · no execution error, ${config.orchestra.degree}-degree orchestration, ${config.orchestra.competence} sub-agents, train tasks of ${config.orchestra.axes.join(", ")} at values up to ${config.orchestra.maxValue}.`,
    "",
    `${result.steps} steps of ${config.rl.tasksPerStep} tasks × ${config.rl.groupSize} rollouts (dynamic sampling, up to ${config.rl.maxExtraRollouts} extra rollouts a step), learning rate ${config.rl.learningRate}, seed ${config.rl.seed}; ${result.episodes} episodes in ${(result.seconds / 60).toFixed(1)} min on ${process.platform} ${process.arch}, Node ${process.versions.node}.`,
    "",
    "| rollouts (temperature 1) | reward | accuracy |",
    "| --- | --- | --- |",
    `| first 5 steps | ${first.reward.toFixed(3)} | ${(100 * first.accuracy).toFixed(1)}% |`,
    `| last 5 steps | ${last.reward.toFixed(3)} | ${(100 * last.accuracy).toFixed(1)}% |`,
    "",
    "Per-axis test results against the single agent and the fixed strategies: `agentrl orchestra report` (scripts/orchestrator.sh).",
    "",
  ];
  writeFileSync(join(result.modelDir, "MODEL_CARD.md"), lines.join("\n"));
}
