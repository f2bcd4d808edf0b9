/**
 * `runRecipe`: the whole recipe in one call: the plan of pipeline.ts through the stage cache, then
 * the report (report.ts): `report.html` (self-contained, inline SVG) and `report.json` (every
 * number) in the output folder, which it marks as its own (output-folder.ts).
 *
 *   const { report } = await runRecipe({ config: parseRecipeConfig({}, "quick"), out: "runs/recipe-quick" });
 */
import { mkdirSync, writeFileSync } from "node:fs";
import { availableParallelism, cpus, totalmem } from "node:os";
import { join } from "node:path";
import type { RecipeConfig } from "./config.ts";
import { markRecipeOutput } from "./output-folder.ts";
import { recipeStages } from "./pipeline.ts";
import { buildReport, type RecipeReport } from "./report.ts";
import { childProcessExecutor } from "./stage-child.ts";
import {
  type RunStagesOptions,
  runStages,
  type StageOutcome,
  type StageResults,
  type StageSpec,
} from "./stages.ts";

export interface RunRecipeOptions {
  config: RecipeConfig;
  /** Output folder: stages/ (cached), report.html, report.json. */
  out: string;
  onProgress?: RunStagesOptions["onProgress"];
  onStage?: RunStagesOptions["onStage"];
  signal?: AbortSignal;
  /** Run every stage in this process instead of one child process per stage (debugging). */
  inProcess?: boolean;
  /** Stages run side by side (default: one per core; 1 with `inProcess`). */
  parallel?: number;
}

export interface RecipeRun {
  report: RecipeReport;
  files: { html: string; json: string };
  outcomes: StageOutcome[];
  seconds: number;
}

export const REPORT_HTML = "report.html";
/** Version of what the stages compute: bumping it makes every cached stage run again. */
export const RECIPE_STAGES_VERSION = 1;
export const REPORT_JSON = "report.json";

/**
 * The stages `names` and every stage they read (transitively), in plan order: part of a recipe run,
 * through the same cache (`agentrl recipe --stages`). Unknown names are an error listing the stages.
 */
export function recipeStagesFor(config: RecipeConfig, names: readonly string[]): StageSpec[] {
  const plan = recipeStages(config);
  const byName = new Map(plan.map((stage) => [stage.name, stage]));
  const unknown = names.filter((name) => !byName.has(name));
  if (unknown.length > 0)
    throw new Error(
      `recipe: no stage ${unknown.join(", ")}; stages: ${plan.map((stage) => stage.name).join(", ")}`,
    );
  const wanted = new Set<string>();
  const add = (name: string) => {
    if (wanted.has(name)) return;
    wanted.add(name);
    for (const dependency of byName.get(name)?.after ?? []) add(dependency);
  };
  for (const name of names) add(name);
  return plan.filter((stage) => wanted.has(stage.name));
}

/** Runs `stages` of the recipe in `out` through the stage cache (no report). */
export async function runRecipeStages(
  options: RunRecipeOptions & { stages?: readonly StageSpec[] },
): Promise<{ results: StageResults; outcomes: StageOutcome[] }> {
  mkdirSync(options.out, { recursive: true });
  markRecipeOutput(options.out, options.config.preset);
  const execute = options.inProcess ? undefined : childProcessExecutor(options.config);
  return runStages(options.stages ?? recipeStages(options.config), {
    root: options.out,
    version: RECIPE_STAGES_VERSION,
    execute,
    parallel: options.inProcess ? 1 : (options.parallel ?? availableParallelism()),
    cores: availableParallelism(),
    onProgress: options.onProgress,
    onStage: options.onStage,
    signal: options.signal,
  }).finally(() => execute?.close());
}

export async function runRecipe(options: RunRecipeOptions): Promise<RecipeRun> {
  const started = performance.now();
  const { results, outcomes } = await runRecipeStages(options);
  const seconds = (performance.now() - started) / 1000;
  const { report, html } = await buildReport({
    config: options.config,
    results,
    outcomes,
    seconds,
    machine: {
      cpus: cpus().length,
      cpuModel: cpus()[0]?.model ?? "unknown",
      memoryGiB: Number((totalmem() / 2 ** 30).toFixed(1)),
      node: process.version,
      platform: `${process.platform}-${process.arch}`,
    },
  });
  const files = { html: join(options.out, REPORT_HTML), json: join(options.out, REPORT_JSON) };
  writeFileSync(files.html, html);
  writeFileSync(files.json, `${JSON.stringify(report, null, 2)}\n`);
  return { report, files, outcomes, seconds };
}
