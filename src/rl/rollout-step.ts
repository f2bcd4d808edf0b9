/**
 * Steps 1–2 of an RL step (train.ts): the step's rollouts. Groups of `groupSize` episodes per task
 * are sampled with the step's policy, rewarded, and stored with their step as each round ends;
 * infra-failed episodes leave their groups before anything is judged (infra-episodes.ts), and with
 * dynamic sampling groups without signal are dropped and more are drawn, up to `maxExtraRollouts`
 * extra episodes (dynamic-sampling.ts). Task draws and episode seeds are functions of (seed, step,
 * round, index), so a resumed run draws what an uninterrupted one would have.
 */
import { mixSeeds } from "../core/random.ts";
import type { EpisodeBudgets, EpisodeSpec, RunEpisodesOptions } from "../env/run-episodes.ts";
import type { Store } from "../store/index.ts";
import { isInfraFailure } from "../types/failure.ts";
import type { Task } from "../types/task.ts";
import type { AnyTool } from "../types/tool.ts";
import type { Trajectory } from "../types/trajectory.ts";
import { type AdvantageOptions, groupSignals, toAdvantageBatch } from "./advantages/index.ts";
import type { RlConfig } from "./config.ts";
import { groupsWithSignal } from "./dynamic-sampling.ts";
import { INFRA_FAILURES_METRIC, scorableEpisodes } from "./infra-episodes.ts";
import { rolloutMetrics } from "./rollout-metrics.ts";
import type { RolloutPolicy } from "./run-setup.ts";
import type { TaskSampler } from "./tasks.ts";

/** Advantage options of a config (gamma goes to GiGPO's step returns). */
export function advantageOptions(config: RlConfig): AdvantageOptions {
  return { ...config.advantage };
}

/** Where a run's episodes come from and how they are judged: world tasks, or an `RlEnvironment`. */
export interface RolloutEnvironment {
  sampler: TaskSampler;
  tools: (task: Task, seed: number) => readonly AnyTool[];
  verify: (task: Task, answer: string | null) => boolean;
  /** The trajectory with its rewards. */
  reward: (trajectory: Trajectory, task: Task) => Trajectory;
  budgets: EpisodeBudgets;
  /** Samples episodes with the live policy (`runEpisodes`, or a user's agent through the gateway). */
  rollout: (options: RunEpisodesOptions) => Promise<Trajectory[]>;
}

/** What one step sampled. */
export interface StepRollout {
  /** Every stored episode of the step (all rounds, infra failures and dropped groups included). */
  all: Trajectory[];
  /** The groups the update uses (their scorable episodes), at most `tasksPerStep`. */
  kept: Trajectory[][];
  taskById: Map<string, Task>;
  /** Groups sampled over all rounds. */
  groupCount: number;
  /** Episodes sampled after round 0 (dynamic sampling). */
  extraEpisodes: number;
  /** Episodes left out of their groups for an infra failure. */
  infraFailures: number;
}

/**
 * Samples, rewards and stores the step's groups with the step's policy (closed at the end) (each episode stored with
 * its step and `info.rl = { step, round, kept }`), at the sampling temperature.
 */
export async function sampleStepGroups(
  step: number,
  rollout: RolloutPolicy,
  environment: RolloutEnvironment,
  config: RlConfig,
  store: Store,
  runId: string,
): Promise<StepRollout> {
  try {
    return await sampleGroups(step, rollout, environment, config, store, runId);
  } finally {
    await rollout.policy.close?.();
  }
}

async function sampleGroups(
  step: number,
  { policy, exactIds }: RolloutPolicy,
  environment: RolloutEnvironment,
  config: RlConfig,
  store: Store,
  runId: string,
): Promise<StepRollout> {
  const sampled: StepRollout = {
    all: [],
    kept: [],
    taskById: new Map(),
    groupCount: 0,
    extraEpisodes: 0,
    infraFailures: 0,
  };
  const { kept } = sampled;
  for (let round = 0; ; round++) {
    const wanted = config.tasksPerStep - kept.length;
    const affordable =
      round === 0 ? wanted : Math.floor((config.maxExtraRollouts - sampled.extraEpisodes) / config.groupSize);
    const count = Math.min(wanted, affordable);
    if (count <= 0) break;
    const tasks = environment.sampler.draw(step, round, count);
    const specs: EpisodeSpec[] = [];
    tasks.forEach((task, t) => {
      sampled.taskById.set(task.id, task);
      const group = sampled.groupCount++;
      for (let e = 0; e < config.groupSize; e++) {
        specs.push({
          task,
          group,
          seed: mixSeeds(mixSeeds(mixSeeds(config.seed, step), round * 4096 + t), e),
          id: `rl/${step}/${round}/${t}/${e}`,
        });
      }
    });
    if (round > 0) sampled.extraEpisodes += specs.length;
    const episodes = await environment.rollout({
      policy,
      episodes: specs,
      tools: environment.tools,
      verify: environment.verify,
      budgets: environment.budgets,
      batchSize: config.rolloutBatch,
    });
    // Stored and trained on with the ids the model read (a chat template's), not a re-encoding.
    const rewarded = episodes.map((trajectory, i) =>
      environment.reward(exactIds ? exactIds(trajectory) : trajectory, specs[i].task),
    );
    // Infra failures leave their groups before anything is judged (infra-episodes.ts: shrunk).
    const signal = groupsWithSignal(
      config.estimator,
      toAdvantageBatch(scorableEpisodes(rewarded), { anchors: config.anchors }),
      advantageOptions(config),
    );
    const stored: Trajectory[] = [];
    for (let g = 0; g < tasks.length; g++) {
      const members = rewarded.slice(g * config.groupSize, (g + 1) * config.groupSize);
      const group = members[0].group ?? members[0].taskId;
      const scorable = scorableEpisodes(members);
      sampled.infraFailures += members.length - scorable.length;
      const keep =
        scorable.length > 0 &&
        (!config.dynamicSampling || signal.get(group) === true) &&
        kept.length < config.tasksPerStep;
      // Which episodes the update saw is part of the record (`info.rl`).
      const marked = members.map((trajectory) => ({
        ...trajectory,
        info: { ...trajectory.info, rl: { step, round, kept: keep && !isInfraFailure(trajectory) } },
      }));
      if (keep) kept.push(scorableEpisodes(marked));
      stored.push(...marked);
    }
    store.addTrajectories(runId, stored, { step });
    sampled.all.push(...stored);
    if (!config.dynamicSampling) break;
  }
  return sampled;
}

/**
 * The rollout keys of a step's metrics: rollout-metrics.ts over the scored episodes, the infra
 * failures, `rollout/zero_variance_group_fraction` over every sampled group, and the kept, dropped
 * and extra counts of dynamic sampling.
 */
export function rolloutStepMetrics(sampled: StepRollout): Record<string, number> {
  const metrics: Record<string, number> = {
    ...rolloutMetrics(scorableEpisodes(sampled.all), (id) => sampled.taskById.get(id)),
  };
  const allSignals = groupSignals(toAdvantageBatch(scorableEpisodes(sampled.all)));
  metrics[INFRA_FAILURES_METRIC] = sampled.infraFailures;
  metrics["rollout/zero_variance_group_fraction"] =
    allSignals.filter((signal) => !signal.outcomeSignal).length / Math.max(1, allSignals.length);
  metrics["rollout/kept_groups"] = sampled.kept.length;
  metrics["rollout/dropped_group_fraction"] = 1 - sampled.kept.length / Math.max(1, sampled.groupCount);
  metrics["rollout/extra_rollouts"] = sampled.extraEpisodes;
  return metrics;
}
