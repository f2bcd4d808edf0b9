/**
 * What a recipe stage's run is called: `<stage>@s<seed>` (`credit-eval-gigpo@s2`), where the seed
 * is the training seed's place (1 for the first seed and for the stages every seed shares, `r + 1`
 * for a replica `<stage>@s<r + 1>`, pipeline/vocabulary.ts `replicaStage`), followed by the folders
 * between the stage folder and the run's own (`noise-eval-aware@s1/noise-0.3`), and by the run id
 * where it is not the run folder's name.
 *
 * Every stage run lives in `<out>/stages/<stage>/…/<run folder>/store.sqlite` and a stage's trainer
 * or evaluation names its run `run` (stage-runs.ts `STAGE_RUN`), so the name follows from the
 * store's path alone: outputs written before runs were named get the same names. New stage runs
 * also record it at creation (`STAGE_RUN_NAME_KEY` in the run's state), which the dashboard
 * prefers when present.
 */
import { sep } from "node:path";

/** Run state key holding a stage run's name, written when the run is created. */
export const STAGE_RUN_NAME_KEY = "recipe/run-name";

export interface StageRunName {
  /** `credit-eval-gigpo@s2`, `noise-eval-aware@s1/noise-0.3`. */
  name: string;
  /** The stage as the plan names it (`credit-eval-gigpo@s2`, or `eval-base-strong` at the first seed). */
  stage: string;
  /** The stage without its seed suffix: the same at every seed (`credit-eval-gigpo`). */
  base: string;
  /** The training seed's place, from 1. */
  seed: number;
  /** The recipe output folder: the store path up to `/stages/`. */
  recipe: string;
}

const SEEDED = /^(.+)@s(\d+)$/;

/** `credit-eval-gigpo@s2` → base `credit-eval-gigpo`, seed 2; a name without a suffix is seed 1. */
export function splitStage(stage: string): { base: string; seed: number } {
  const match = SEEDED.exec(stage);
  return match ? { base: match[1], seed: Number(match[2]) } : { base: stage, seed: 1 };
}

/**
 * The name of run `runId` stored at `storePath` (either separator), or null when the path is not
 * inside a recipe's `stages/` folder.
 *
 *   stageRunName("runs/r/stages/credit-eval-gigpo@s2/run/store.sqlite", "run").name → "credit-eval-gigpo@s2"
 *   stageRunName("r/stages/noise-eval-aware/noise-0.3/run/store.sqlite", "run").name → "noise-eval-aware@s1/noise-0.3"
 *   stageRunName("r/stages/data-real/dataset/store.sqlite", "dataset").name → "data-real@s1/dataset"
 */
export function stageRunName(storePath: string, runId: string): StageRunName | null {
  const parts = storePath.split(sep).join("/").split("/");
  const at = parts.lastIndexOf("stages");
  // stages/<stage>/<run folder>/store.sqlite at least
  if (at < 0 || parts.length - at < 4) return null;
  const stage = parts[at + 1];
  const folders = parts.slice(at + 2, -1);
  const runFolder = folders.at(-1);
  const between = folders.slice(0, -1);
  // the stage's own run folder (`run`) adds nothing; a named one (`dataset`) says what the run is
  if (runFolder !== "run") between.push(runFolder!);
  if (runId !== runFolder) between.push(runId);
  const { base, seed } = splitStage(stage);
  return {
    name: [`${base}@s${seed}`, ...between].join("/"),
    stage,
    base,
    seed,
    recipe: parts.slice(0, at).join("/"),
  };
}
