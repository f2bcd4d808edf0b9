/**
 * The credit-assignment experiment: outcome-only GRPO vs turn-level MT-GRPO vs GiGPO vs MT-PPO
 * (GAE with a value head) on a long-chain family, from one base, with the same seed, tasks, reward
 * and rollout budget for each. One RL run per estimator (src/rl/train.ts), then per-step curves
 * read back from each run's store and SVG charts (src/report/plots.ts).
 *
 * The reward is `turn-credit` (src/reward/spec.ts): exact match as the outcome, and turn rewards
 * that pay each distinct gold document and gold calc step once, as shares capped at 1 per episode.
 * GRPO reads only the outcome; the turn-level estimators the turn rewards too. The earlier
 * `mt-grpo` preset (a 0.2 format bonus, 0.2 per executed call) was farmed here: GRPO learned to
 * answer without tools for the format bonus and the turn-level estimators to call tools ~10 times
 * an episode, so comparisons under it measured the farming, not the credit assignment.
 *
 * Groups without signal are dropped without refill (`maxExtraRollouts: 0`), so every estimator
 * spends the same rollouts per step (src/rl/dynamic-sampling.ts: gae judges signal as gigpo does).
 *
 *   const result = await runCreditAssignment({ out: "runs/credit-assignment", steps: 20 });
 *   result.curves[i]            // per estimator: per-step train metrics, held-out boundary points
 *   result.files                // the JSON and SVGs written under `out`
 */
import { fork } from "node:child_process";
import { existsSync, mkdirSync, readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { lineChart } from "../report/plots.ts";
import type { RewardSpec } from "../reward/index.ts";
import { createRunDirectory } from "../store/index.ts";
import { finishRunAfterError } from "../store/run-failure.ts";
import type { TaskFamily } from "../types/task.ts";
import type { BoundaryPoint } from "./boundary-tracker.ts";
import { parseRlConfig, type RlConfig } from "./config.ts";
import { type RlProgress, trainRl } from "./train.ts";

export const CREDIT_ASSIGNMENT_ESTIMATORS = ["grpo", "mt-grpo", "gigpo", "gae"] as const;

export interface CreditAssignmentOptions {
  /** Folder of the run directories, the per-estimator curve files, the summary and the charts. */
  out: string;
  /** Estimators compared (default: grpo, mt-grpo, gigpo, gae). Any RL estimator name is accepted. */
  estimators?: readonly string[];
  /** The task family trained and evaluated (default `chain`, 4–6 hops). */
  family?: TaskFamily;
  /** Starting checkpoint (default `models/base-strong`). */
  base?: string;
  /** RL steps per estimator (default 20). */
  steps?: number;
  /** Groups per step (default 8) and rollouts per group (default 8). */
  tasksPerStep?: number;
  groupSize?: number;
  seed?: number;
  /** Peak learning rate (default 2e-4). */
  learningRate?: number;
  /** Reward preset or spec (default `turn-credit`). */
  reward?: string | RewardSpec;
  /** Held-out evaluation every this many steps (default 10), on this many test tasks (default 32) × samples (default 8), at temperature 1. */
  evalEvery?: number;
  evalTasks?: number;
  evalSamples?: number;
  /** Other RL config fields applied to every run (e.g. `{ valueCoef: 1 }`); validated like a config file. */
  overrides?: Record<string, unknown>;
  /**
   * Reuse an estimator's curve file (`<out>/curves-<estimator>.json`) when it was written with the
   * same config, instead of training again: a comparison can be split over several processes.
   */
  reuse?: boolean;
  /**
   * Train each estimator in its own child process (default true). jax-js's wasm heap never
   * shrinks and keeps freed blocks for reuse by size, so runs with other shapes in one process
   * add up: measured here, the fourth 20-step chain run of one process hit the 4 GiB limit (no
   * leak: live buffers stay flat, tested in the trainer). A child gives each run a fresh heap.
   */
  isolate?: boolean;
  onProgress?: (estimator: string, progress: RlProgress) => void;
}

/** One training step of one estimator (the rollout batch's metrics). */
export interface CreditCurvePoint {
  step: number;
  /** Mean outcome reward of the batch (exact match: the batch pass@1 over scored episodes). */
  rewardMean: number;
  /** Mean return, outcome + Σ turn rewards (what the turn-level estimators optimise). */
  returnMean: number;
  passAt1: number;
  toolCallsPerEpisode: number;
  keptGroups: number;
  /** Population variance of the return over the batch's episodes, by chain length (hops). */
  returnVarianceByHops: Record<string, number>;
}

export interface CreditCurve {
  estimator: string;
  runDir: string;
  /** Training seconds of the run. */
  seconds: number;
  config: RlConfig;
  train: CreditCurvePoint[];
  /** Held-out pass@1 and pass@k (k = evalSamples) at step 0, every `evalEvery` steps and the end. */
  heldout: BoundaryPoint[];
}

export interface CreditAssignmentResult {
  family: TaskFamily;
  base: string;
  steps: number;
  tasksPerStep: number;
  groupSize: number;
  seed: number;
  curves: CreditCurve[];
  /** Paths written: `summary` (JSON), `train`, `heldout`, `toolCalls`, `variance` (SVG). */
  files: Record<"summary" | "train" | "heldout" | "toolCalls" | "variance", string>;
}

/** The RL config of one estimator's run. */
export function creditAssignmentConfig(options: CreditAssignmentOptions, estimator: string): RlConfig {
  const steps = options.steps ?? 20;
  return parseRlConfig({
    name: `credit-${estimator}`,
    base: options.base ?? "models/base-strong",
    steps,
    seed: options.seed ?? 1,
    families: [options.family ?? "chain"],
    tasksPerStep: options.tasksPerStep ?? 8,
    groupSize: options.groupSize ?? 8,
    reward: options.reward ?? "turn-credit",
    estimator,
    dynamicSampling: true,
    maxExtraRollouts: 0,
    learningRate: options.learningRate ?? 2e-4,
    evalEvery: options.evalEvery ?? 10,
    evalTasks: options.evalTasks ?? 32,
    evalSamples: options.evalSamples ?? 8,
    evalTemperature: 1,
    evalTopP: 1,
    checkpointEvery: steps,
    keepCheckpoints: 1,
    ...options.overrides,
  });
}

function curveFileOf(options: CreditAssignmentOptions, estimator: string): string {
  return join(options.out, `curves-${estimator}.json`);
}

/** What crosses into a child: the options without the callback. */
export type CreditAssignmentChildOptions = Omit<CreditAssignmentOptions, "onProgress" | "isolate">;

/** A message from a child: one step's progress. */
export type CreditAssignmentChildMessage = { estimator: string; progress: RlProgress };

/** Trains one estimator in a child process (credit-assignment-child.ts); resolves with its curve file. */
function trainInChild(options: CreditAssignmentOptions, estimator: string): Promise<CreditCurve> {
  const { onProgress, isolate: _isolate, ...plain } = options;
  const entry = fileURLToPath(new URL("./credit-assignment-child.ts", import.meta.url));
  return new Promise((resolve, reject) => {
    const child = fork(entry, [JSON.stringify({ options: plain, estimator })], {
      execPath: process.execPath,
      stdio: ["ignore", "inherit", "inherit", "ipc"],
    });
    child.on("message", (message: CreditAssignmentChildMessage) =>
      onProgress?.(message.estimator, message.progress),
    );
    child.on("error", reject);
    child.on("exit", (code, signal) => {
      if (code === 0)
        resolve(JSON.parse(readFileSync(curveFileOf(options, estimator), "utf8")) as CreditCurve);
      else reject(new Error(`credit assignment: the ${estimator} run failed (exit ${code ?? signal})`));
    });
  });
}

/** Trains one estimator in this process and writes its curve file. */
export async function trainCreditAssignmentEstimator(
  options: CreditAssignmentOptions,
  estimator: string,
): Promise<CreditCurve> {
  const config = creditAssignmentConfig(options, estimator);
  const curveFile = curveFileOf(options, estimator);
  const { directory, store, run } = createRunDirectory({
    kind: "rl",
    root: options.out,
    config,
    id: `credit-${estimator}-${Date.now()}`,
  });
  try {
    const result = await trainRl({
      config,
      runDir: directory,
      store,
      runId: run.id,
      onProgress: (progress) => options.onProgress?.(estimator, progress),
    });
    const curve: CreditCurve = {
      estimator,
      runDir: directory,
      seconds: result.seconds,
      config,
      train: creditCurvePoints(
        (key) => new Map(store.metrics(run.id, key).map((point) => [point.step, point.value])),
        store.metricKeys(run.id),
      ),
      heldout: result.boundary,
    };
    store.finishRun(run.id, "completed", { boundary: result.boundary });
    writeFileSync(curveFile, `${JSON.stringify(curve, null, 2)}\n`);
    return curve;
  } catch (error) {
    finishRunAfterError(store, run.id, error);
    throw error;
  } finally {
    store.close();
  }
}

/**
 * Per-step curve points from the RL trainer's metrics: `series(key)` maps step → value of one
 * metric, `keys` lists the metric keys logged (the `return/std_hops_<h>` ones are read from it).
 */
export function creditCurvePoints(
  series: (key: string) => ReadonlyMap<number, number>,
  keys: readonly string[],
): CreditCurvePoint[] {
  const [reward, returns, pass, calls, kept] = [
    "reward/mean",
    "return/mean",
    "rollout/pass@1",
    "rollout/tool_calls_per_episode",
    "rollout/kept_groups",
  ].map(series);
  const variances = keys.flatMap((key) => {
    const match = /^return\/std_hops_(\d+)$/.exec(key);
    return match ? [{ hops: match[1], values: series(key) }] : [];
  });
  return [...pass.keys()]
    .sort((a, b) => a - b)
    .map((step) => ({
      step,
      rewardMean: reward.get(step) ?? Number.NaN,
      returnMean: returns.get(step) ?? Number.NaN,
      passAt1: pass.get(step)!,
      toolCallsPerEpisode: calls.get(step) ?? Number.NaN,
      keptGroups: kept.get(step) ?? 0,
      returnVarianceByHops: Object.fromEntries(
        variances.flatMap(({ hops, values }) => {
          const std = values.get(step);
          return std === undefined ? [] : [[hops, std * std]];
        }),
      ),
    }));
}

/** Mean over a trailing window of `width` points (a batch of 64 episodes is noisy). */
function trailingMean(points: { x: number; y: number }[], width: number) {
  return points.map((point, i) => {
    const window = points.slice(Math.max(0, i - width + 1), i + 1);
    return { x: point.x, y: window.reduce((sum, p) => sum + p.y, 0) / window.length };
  });
}

/** The four charts of a comparison, as SVG strings. */
export async function creditAssignmentCharts(
  curves: readonly Pick<CreditCurve, "estimator" | "train" | "heldout">[],
  family: string,
): Promise<Record<"train" | "heldout" | "toolCalls" | "variance", string>> {
  const perStep = (pick: (point: CreditCurvePoint) => number, smooth: number) =>
    curves.map((curve) => ({
      name: curve.estimator,
      points: trailingMean(
        curve.train.map((point) => ({ x: point.step, y: pick(point) })),
        smooth,
      ),
    }));
  const hops = [
    ...new Set(curves.flatMap((curve) => curve.train.flatMap((p) => Object.keys(p.returnVarianceByHops)))),
  ]
    .map(Number)
    .sort((a, b) => a - b);
  return {
    train: await lineChart({
      title: `training batch pass@1 (${family}, 5-step trailing mean)`,
      xLabel: "RL step",
      yLabel: "pass@1",
      series: perStep((point) => point.passAt1, 5),
    }),
    heldout: await lineChart({
      title: `held-out pass@1 (${family}, test worlds, T = 1)`,
      xLabel: "RL step",
      yLabel: "pass@1",
      series: curves.map((curve) => ({
        name: curve.estimator,
        points: curve.heldout.map((point) => ({ x: point.step, y: point.passAt1 })),
      })),
    }),
    toolCalls: await lineChart({
      title: `tool calls per episode (${family}, 5-step trailing mean)`,
      xLabel: "RL step",
      yLabel: "tool calls / episode",
      series: perStep((point) => point.toolCallsPerEpisode, 5),
    }),
    variance: await lineChart({
      title: `return variance by chain length (${family}, mean over the run's steps)`,
      xLabel: "hops",
      yLabel: "variance of the return",
      xTicks: hops,
      series: curves.map((curve) => ({
        name: curve.estimator,
        points: hops.flatMap((h) => {
          const values = curve.train.flatMap((p) =>
            p.returnVarianceByHops[h] === undefined ? [] : [p.returnVarianceByHops[h]],
          );
          return values.length === 0 ? [] : [{ x: h, y: values.reduce((a, b) => a + b, 0) / values.length }];
        }),
      })),
    }),
  };
}

/** Trains every estimator in turn (or reuses its curve file), then writes the summary and charts. */
export async function runCreditAssignment(options: CreditAssignmentOptions): Promise<CreditAssignmentResult> {
  const estimators = options.estimators ?? CREDIT_ASSIGNMENT_ESTIMATORS;
  if (estimators.length === 0) throw new Error("runCreditAssignment: no estimators");
  // Validate every config before the first (long) run starts.
  for (const estimator of estimators) creditAssignmentConfig(options, estimator);
  mkdirSync(options.out, { recursive: true });
  const curves: CreditCurve[] = [];
  for (const estimator of estimators) {
    const curveFile = curveFileOf(options, estimator);
    if (options.reuse && existsSync(curveFile)) {
      const saved = JSON.parse(readFileSync(curveFile, "utf8")) as CreditCurve;
      if (JSON.stringify(saved.config) === JSON.stringify(creditAssignmentConfig(options, estimator))) {
        curves.push(saved);
        continue;
      }
    }
    curves.push(
      options.isolate === false
        ? await trainCreditAssignmentEstimator(options, estimator)
        : await trainInChild(options, estimator),
    );
  }
  const family = options.family ?? "chain";
  const charts = await creditAssignmentCharts(curves, family);
  const files = {
    summary: join(options.out, "credit-assignment.json"),
    train: join(options.out, "credit-assignment-train.svg"),
    heldout: join(options.out, "credit-assignment-heldout.svg"),
    toolCalls: join(options.out, "credit-assignment-tool-calls.svg"),
    variance: join(options.out, "credit-assignment-variance.svg"),
  };
  const first = curves[0].config;
  const result: CreditAssignmentResult = {
    family,
    base: first.base,
    steps: first.steps,
    tasksPerStep: first.tasksPerStep,
    groupSize: first.groupSize,
    seed: first.seed,
    curves,
    files,
  };
  writeFileSync(files.summary, `${JSON.stringify(result, null, 2)}\n`);
  for (const name of ["train", "heldout", "toolCalls", "variance"] as const)
    writeFileSync(files[name], charts[name]);
  return result;
}
