/**
 * `agentrl recipe` (what `npm start` runs): the article's recipe end to end on the embedded lab, with
 * one progress bar and ETA over every stage, and a report at the end.
 *
 *   agentrl recipe                 the default preset (within 8 min on 2 cores; docs/recipe.md: measured)
 *   agentrl recipe --quick         every stage, tiny (under a minute); too small to separate most curves
 *   agentrl recipe --full          longer training and larger evaluations (docs/recipe.md: measured)
 *   agentrl recipe --config my.json --out runs/my-recipe
 *   agentrl recipe --show-config   print the resolved config (every field) and exit
 *   agentrl recipe --stages sft-real,select
 *                                  only those stages and the stages they read (same cache), no report
 *   agentrl recipe compare runs/recipe-default runs/recipe-seed2 runs/recipe-seed3
 *                                  the verdicts of several runs (seeds) side by side
 *
 * Stages are cached by config hash in `<out>/stages/`: after a crash or Ctrl-C the same command
 * continues where it stopped, and a changed field redoes only the stages that depend on it.
 */
import { writeFileSync } from "node:fs";
import type { Command } from "commander";
import {
  compareRecipeRuns,
  comparisonMarkdown,
  loadRecipeReport,
  seedSplitReports,
} from "../../recipe/compare.ts";
import { loadRecipeConfigFile, parseRecipeConfig, type RecipePreset } from "../../recipe/config.ts";
import { clearRecipeOutput } from "../../recipe/output-folder.ts";
import { type RunRecipeOptions, recipeStagesFor, runRecipe, runRecipeStages } from "../../recipe/recipe.ts";
import { createProgress, type Progress } from "../progress.ts";
import { interruptOnSigint } from "../training-run.ts";
import { parseNumber } from "./options.ts";

interface RecipeCommandOptions {
  quick?: boolean;
  full?: boolean;
  config?: string;
  out?: string;
  fresh?: boolean;
  stages?: string;
  showConfig?: boolean;
  json?: boolean;
  seed?: string;
  seeds?: string;
}

function presetOf(options: RecipeCommandOptions): RecipePreset | undefined {
  if (options.quick && options.full) throw new Error("recipe: give --quick or --full, not both");
  return options.quick ? "quick" : options.full ? "full" : undefined;
}

export function register(program: Command): void {
  const recipe = program.command("recipe");
  recipe
    .description(
      "run the article's recipe end to end (base → selection → SFT → RL → boundary, credit, noise) and write a report",
    )
    .option(
      "--quick",
      "tiny preset, a smoke run (under a minute on 2 cores; docs/recipe.md has measured times): every stage runs, most differences are too small to call",
    )
    .option(
      "--full",
      "large preset (29 to 70 min on 2 cores at its 3 training seeds; docs/recipe.md has measured times): longer RL and SFT, larger evaluations, orchestration",
    )
    .option("--config <file>", "JSON config merged over the preset (fields: src/recipe/config.ts)")
    .option("--out <dir>", "output folder (default runs/recipe-<preset>)")
    .option(
      "--fresh",
      "delete the output folder first instead of reusing cached stages (only a folder the recipe wrote)",
    )
    .option(
      "--stages <names>",
      "only these stages (comma-separated) and the stages they read, through the same cache; no report",
    )
    .option("--seed <n>", "top-level seed (training seeds seed … seed + seeds − 1; default 1)")
    .option("--seeds <n>", "training seeds per arm (default 3; quick: 1)")
    .option("--show-config", "print the resolved config and exit")
    .option("--json", "print the report's verdicts as JSON")
    .action(async (options: RecipeCommandOptions) => {
      const loaded = options.config
        ? loadRecipeConfigFile(options.config, presetOf(options))
        : parseRecipeConfig({}, presetOf(options));
      const overrides = {
        ...(options.seed !== undefined
          ? { seed: parseNumber("--seed", options.seed, { integer: true, min: 0 }) }
          : {}),
        ...(options.seeds !== undefined
          ? { seeds: parseNumber("--seeds", options.seeds, { integer: true, min: 1, max: 10 }) }
          : {}),
      };
      const config = parseRecipeConfig({ ...loaded, ...overrides }, loaded.preset);
      if (options.showConfig) {
        console.log(JSON.stringify(config, null, 2));
        return;
      }
      const out = options.out ?? `runs/recipe-${config.preset}`;
      const stages = options.stages
        ? recipeStagesFor(
            config,
            options.stages.split(",").map((name) => name.trim()),
          )
        : undefined;
      if (options.fresh) clearRecipeOutput(out);
      process.stderr.write(`recipe (${config.preset}) → ${out}\n`);
      let progress: Progress | null = null;
      const interrupt = interruptOnSigint();
      try {
        const runOptions: RunRecipeOptions = {
          config,
          out,
          signal: interrupt.signal,
          onStage: ({ name, cached, seconds, event }) => {
            if (event === "end" && cached) process.stderr.write(`  ${name}: cached\n`);
            if (event === "end" && !cached)
              process.stderr.write(`\n  ${name}: done in ${seconds.toFixed(0)}s\n`);
          },
          onProgress: ({ stage, done, total, info }) => {
            progress ??= createProgress("recipe", Math.max(1, Math.round(total)), {
              quiet: Boolean(options.json),
            });
            progress.update(Math.round(done), { stage, ...(info ? { at: info } : {}) });
          },
        };
        if (stages) {
          const { results, outcomes } = await runRecipeStages({ ...runOptions, stages });
          (progress as Progress | null)?.stop();
          if (options.json) console.log(JSON.stringify({ outcomes, results }, null, 2));
          else
            for (const outcome of outcomes)
              console.log(`${outcome.name}: ${outcome.cached ? "cached" : "done"}`);
          return;
        }
        const run = await runRecipe(runOptions);
        (progress as Progress | null)?.stop();
        if (options.json) {
          console.log(JSON.stringify({ files: run.files, verdicts: run.report.verdicts }, null, 2));
          return;
        }
        console.log(`\nreport: ${run.files.html}\nnumbers: ${run.files.json}`);
        console.log(`recipe (${config.preset}) finished in ${(run.seconds / 60).toFixed(1)} min\n`);
        for (const verdict of run.report.verdicts) {
          console.log(`[${verdict.status}] ${verdict.id}: ${verdict.claim}\n    ${verdict.evidence}`);
        }
      } catch (error) {
        (progress as Progress | null)?.stop();
        if (interrupt.signal.aborted) {
          console.error(`\nrecipe interrupted; run the same command again to continue from ${out}`);
        }
        throw error;
      } finally {
        interrupt.dispose();
      }
    });

  recipe
    .command("compare")
    .description(
      "the verdicts of several finished recipe runs (e.g. seeds) side by side, as a Markdown table",
    )
    .argument("<dirs...>", "--out folders of finished agentrl recipe runs")
    .option(
      "--by-seed",
      "one run of several training seeds: its verdicts at each seed alone (rebuilt from its stages), side by side",
    )
    .option("--out <file>", "also write the table to this Markdown file")
    .option("--json", "print the comparison as JSON")
    .action(async (dirs: string[], _: unknown, command: Command) => {
      // The recipe command's own --out and --json parse first and take those flags wherever they
      // stand (`compare --json` printed Markdown): read them with the parent's.
      const options = command.optsWithGlobals<{ out?: string; json?: boolean; bySeed?: boolean }>();
      if (options.bySeed && dirs.length !== 1)
        throw new Error(`recipe compare --by-seed: give one run folder, got ${dirs.length}`);
      const comparison = options.bySeed
        ? compareRecipeRuns(await seedSplitReports(dirs[0]), "training seed")
        : compareRecipeRuns(dirs.map((dir) => ({ dir, report: loadRecipeReport(dir) })));
      const markdown = comparisonMarkdown(comparison);
      if (options.out) writeFileSync(options.out, markdown);
      console.log(options.json ? JSON.stringify(comparison, null, 2) : markdown);
    });
}
