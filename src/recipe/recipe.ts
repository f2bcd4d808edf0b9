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
import { type RunStagesOptions, runStages, type StageOutcome } from "./stages.ts";

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

export async function runRecipe(options: RunRecipeOptions): Promise<RecipeRun> {
  const started = performance.now();
  mkdirSync(options.out, { recursive: true });
  markRecipeOutput(options.out, options.config.preset);
  const execute = options.inProcess ? undefined : childProcessExecutor(options.config);
  const { results, outcomes } = await runStages(recipeStages(options.config), {
    root: options.out,
    version: RECIPE_STAGES_VERSION,
    execute,
    parallel: options.inProcess ? 1 : (options.parallel ?? availableParallelism()),
    cores: availableParallelism(),
    onProgress: options.onProgress,
    onStage: options.onStage,
    signal: options.signal,
  }).finally(() => execute?.close());
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
