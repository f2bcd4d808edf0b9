/**
 * Credit fidelity and gradient variance measured on batches sampled from one policy, with no
 * training: groups of rollouts of world tasks (the RL loop's episode machinery, no tool noise, so
 * every departure from the gold plan is the policy's), rewarded with the credit runs' reward, then
 * every estimator's advantages on that same batch (credit-fidelity.ts).
 *
 * MT-PPO (`gae`) reads the critic's values: the credit runs start from a base without a value head,
 * and the RL trainer gives such a model a zero head (model.ts `initValueHead`), so V = 0 on every
 * token is exactly what MT-PPO's first batch gets; GAE with γ = λ = 1 is then the whitened
 * reward-to-go of the turn and outcome rewards.
 */
import { mixSeeds } from "../core/random.ts";
import { datasetTasks } from "../data/tasks.ts";
import { DEFAULT_BUDGETS, runEpisodes } from "../env/run-episodes.ts";
import { worldToolsFor } from "../env/task-set.ts";
import { resolvePolicy } from "../policy/resolve.ts";
import { withRewards } from "../reward/index.ts";
import { TASK_FAMILIES, type TaskFamily } from "../types/task.ts";
import { flattenTrajectory } from "../types/trajectory.ts";
import { checkAnswer } from "../world/index.ts";
import { type AnchorMode, toAdvantageBatch } from "./advantages/index.ts";
import { blameOnFaultyTurns, faultyTurn, gradientWeights } from "./credit-fidelity.ts";

export interface FidelitySampleOptions {
  /** Checkpoint directory of the policy sampled. */
  policy: string;
  /** Families the tasks are drawn from, evenly (the blame is read on `blameFamily`'s episodes). */
  families: readonly TaskFamily[];
  blameFamily: TaskFamily;
  /** Tasks per family, and rollouts per task (the estimators' group). */
  tasksPerFamily: number;
  groupSize: number;
  temperature: number;
  topP?: number;
  reward: string;
  estimators: readonly string[];
  anchors?: AnchorMode;
  seed: number;
  batch?: number;
  onProgress?: (fraction: number) => void;
}

/** One group (a task's rollouts) of the sample: what the verdicts and their bootstrap read. */
export interface FidelityGroup {
  taskId: string;
  family: string;
  hops: number;
  /** Episodes of the group that failed with a faulty turn (and at least one other turn). */
  failed: number;
  /** Per estimator, the blame on each such episode's faulty turn (credit-fidelity.ts `BlameRecord.blame`). */
  blame: Record<string, number[]>;
  /** Per estimator, how many of them got strictly the lowest advantage of their episode on the faulty turn. */
  lowest: Record<string, number>;
  /** Per estimator, the mean over the group's episodes of Σ_p A_p² with raw (unnormalised) advantages. */
  weight: Record<string, number>;
  /** Mean policy tokens per episode. */
  tokens: number;
  correct: number;
}

export interface FidelitySample {
  episodes: number;
  groups: FidelityGroup[];
}

export async function sampleCreditFidelity(options: FidelitySampleOptions): Promise<FidelitySample> {
  for (const family of [...options.families, options.blameFamily]) {
    if (!(TASK_FAMILIES as readonly string[]).includes(family))
      throw new Error(`credit fidelity: unknown family "${family}"; valid: ${TASK_FAMILIES.join(", ")}`);
  }
  const tasks = options.families.flatMap((family, f) =>
    datasetTasks({
      count: options.tasksPerFamily,
      seed: mixSeeds(options.seed, f),
      split: "train",
      family,
    }),
  );
  const policy = await resolvePolicy(options.policy, {
    temperature: options.temperature,
    ...(options.topP !== undefined ? { topP: options.topP } : {}),
  });
  const specs = tasks.flatMap((task, t) =>
    Array.from({ length: options.groupSize }, (_, e) => ({
      task,
      group: t,
      seed: mixSeeds(mixSeeds(options.seed, 0xf1de + t), e),
      id: `fidelity/${t}/${e}`,
    })),
  );
  let done = 0;
  const sampled = await runEpisodes({
    policy,
    episodes: specs,
    tools: worldToolsFor({}),
    verify: checkAnswer,
    budgets: DEFAULT_BUDGETS,
    batchSize: options.batch ?? 64,
    onEpisode: () => options.onProgress?.(++done / specs.length),
  }).finally(() => policy.close?.());
  const rewarded = sampled.map((trajectory, i) => withRewards(trajectory, specs[i].task, options.reward));
  // the whole sample is one batch, as a training step's groups are: GAE whitens over it and the
  // blame's scale (each estimator's RMS advantage) is the batch's
  const batch = toAdvantageBatch(rewarded, {
    anchors: options.anchors ?? "observation",
    // the zero critic of MT-PPO's first batch (see the header)
    values: rewarded.map((trajectory) => new Float32Array(flattenTrajectory(trajectory).lossMask.length)),
  });
  const faulty = rewarded.map((trajectory, i) =>
    specs[i].task.family === options.blameFamily ? faultyTurn(trajectory, specs[i].task) : null,
  );
  const blame = blameOnFaultyTurns(
    batch,
    faulty,
    rewarded.map((trajectory) => trajectory.turns.length),
    options.estimators,
  );
  const raw = { normalization: "none", whiten: false } as const;
  const weights = Object.fromEntries(
    options.estimators.map((estimator) => [estimator, gradientWeights(batch, estimator, raw)]),
  );
  const groupOf = (episode: number) => Math.floor(episode / options.groupSize);
  const groups: FidelityGroup[] = tasks.map((task, t) => {
    const members = rewarded.slice(t * options.groupSize, (t + 1) * options.groupSize);
    const records = (estimator: string) => blame[estimator].filter((record) => groupOf(record.episode) === t);
    const mean = (values: readonly number[]) =>
      values.reduce((sum, x) => sum + x, 0) / Math.max(1, values.length);
    return {
      taskId: task.id,
      family: task.family,
      hops: task.hops ?? 0,
      failed: records(options.estimators[0]).length,
      blame: Object.fromEntries(
        options.estimators.map((estimator) => [estimator, records(estimator).map((record) => record.blame)]),
      ),
      lowest: Object.fromEntries(
        options.estimators.map((estimator) => [
          estimator,
          records(estimator).filter((record) => record.lowest).length,
        ]),
      ),
      weight: Object.fromEntries(
        options.estimators.map((estimator) => [
          estimator,
          mean(weights[estimator].slice(t * options.groupSize, (t + 1) * options.groupSize)),
        ]),
      ),
      tokens: mean(
        members.map((trajectory) => flattenTrajectory(trajectory).lossMask.filter(Boolean).length),
      ),
      correct: members.filter((trajectory) => trajectory.correct).length,
    };
  });
  return { episodes: rewarded.length, groups };
}
