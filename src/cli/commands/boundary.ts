/**
 * `agentrl boundary`: compares eval runs on their shared tasks: pass@k and pass^k curves (log k),
 * crossover k, solvable sets at k = n and their differences, the sampling-efficiency gap, a
 * per-family breakdown, and the perplexity of each run's correct trajectories under every run whose
 * policy is an embedded checkpoint (for an `eval --agent` run: the checkpoint behind its gateway).
 * Writes boundary.html (self-contained), boundary.json and boundary-passk.svg.
 *
 *   agentrl boundary runs/eval-base runs/eval-rl --out runs/boundary-base-rl
 */
import { join } from "node:path";
import type { Command } from "commander";
import type { CurveComparison } from "../../eval/boundary.ts";
import { scorerForEvalRun } from "../../eval/embedded-scorer.ts";
import { type BoundaryResult, boundaryJson, runBoundary } from "../../eval/run-boundary.ts";
import { defaultRunId } from "../../store/index.ts";
import { parseNumber } from "./options.ts";

interface BoundaryCommandOptions {
  out?: string;
  runs: string;
  perplexity: boolean;
  pplTrajectories: string;
  examples: string;
  json?: boolean;
}

export function register(program: Command): void {
  program
    .command("boundary")
    .description(
      "compare eval runs on shared tasks: pass@k curves, crossover, solvable sets, ΔSE (the sampling-efficiency gap, pass@k_max of one run − pass@1 of the other), perplexity",
    )
    .argument("<runs...>", "two or more eval run directories (the first is A in every pair it opens)")
    .option("--out <dir>", "folder for boundary.html/json/svg (default: <runs>/boundary-<date>)")
    .option("--runs <dir>", "root folder for the default --out", "runs")
    .option("--no-perplexity", "skip scoring trajectories under the checkpoints")
    .option("--ppl-trajectories <n>", "correct trajectories scored per run (seeded choice)", "256")
    .option("--examples <n>", "example solutions shown per 'solved by one only' list", "3")
    .option("--json", "print boundary.json to stdout")
    .action(async (directories: string[], raw: BoundaryCommandOptions) => {
      const out = raw.out ?? join(raw.runs, defaultRunId("boundary"));
      const result = await runBoundary({
        directories,
        out,
        perplexityTrajectories: parseNumber("--ppl-trajectories", raw.pplTrajectories, {
          integer: true,
          min: 1,
        }),
        examples: parseNumber("--examples", raw.examples, { integer: true, min: 0 }),
        ...(raw.perplexity ? { scorerFor: (run) => scorerForEvalRun(run.config) } : {}),
      });
      if (raw.json) console.log(JSON.stringify(boundaryJson(result), null, 2));
      else printSummary(result);
    });
}

const pct = (value: number) => `${(100 * value).toFixed(1)}%`;
const pctOrDash = (value: number | null) => (value === null ? "–" : pct(value));

function crossoverText(comparison: CurveComparison): string {
  if (comparison.leaderAtK1 === null) return "tie at k = 1";
  return comparison.crossoverK === null
    ? `none up to k = ${comparison.kMax}`
    : `k = ${comparison.crossoverK}`;
}

function printSummary(result: BoundaryResult): void {
  const { analysis } = result;
  for (const warning of analysis.warnings) console.error(`warning: ${warning}`);
  const labels = analysis.runs.map((run) => run.label);
  const widths = labels.map((label) => Math.max(8, label.length));
  console.log(`${analysis.tasks.length} shared tasks`);
  for (const measure of ["pass@k", "pass^k"] as const) {
    console.log([measure.padStart(6), ...labels.map((label, i) => label.padStart(widths[i]))].join("  "));
    analysis.ks.forEach((k, i) => {
      const values = analysis.runs.map((run, r) => {
        const point = run.curves.overall[i];
        const value = measure === "pass@k" ? point.passAtK : point.passHatK;
        return (value?.toFixed(3) ?? "–").padStart(widths[r]);
      });
      console.log([String(k).padStart(6), ...values].join("  "));
    });
  }
  for (const pair of analysis.pairs) {
    const leader = pair.leaderAtK1 === "a" ? pair.a : pair.leaderAtK1 === "b" ? pair.b : "neither";
    const s = pair.solvable;
    console.log(`\n${pair.a} vs ${pair.b}`);
    console.log(`  ahead at k = 1: ${leader}; crossover: ${crossoverText(pair)}`);
    console.log(
      `  pass^${pair.kMax} (all ${pair.kMax} samples correct): ${pair.a} ${pctOrDash(pair.passHatKMax.a)}, ` +
        `${pair.b} ${pctOrDash(pair.passHatKMax.b)}`,
    );
    console.log(
      `  ΔSE: pass@${pair.kMax}(${pair.a}) − pass@1(${pair.b}) = ${pct(pair.gap.aOverB)}; ` +
        `pass@${pair.kMax}(${pair.b}) − pass@1(${pair.a}) = ${pct(pair.gap.bOverA)}`,
    );
    console.log(
      `  solvable at k = n: ${pair.a} ${s.a}, ${pair.b} ${s.b}, both ${s.both}, only ${pair.a} ${s.onlyA.length}, ` +
        `only ${pair.b} ${s.onlyB.length}; ${pair.a} ⊆ ${pair.b}: ${s.aSubsetOfB}, ${pair.b} ⊆ ${pair.a}: ${s.bSubsetOfA}`,
    );
    for (const [family, comparison] of Object.entries(pair.families)) {
      console.log(
        `    ${family.padEnd(11)} pass@1 ${pct(comparison.passAt1.a)} / ${pct(comparison.passAt1.b)}, ` +
          `pass@${comparison.kMax} ${pct(comparison.passAtKMax.a)} / ${pct(comparison.passAtKMax.b)}, ` +
          `pass^${comparison.kMax} ${pctOrDash(comparison.passHatKMax.a)} / ${pctOrDash(comparison.passHatKMax.b)}, ` +
          `crossover ${crossoverText(comparison)}, solvable ${comparison.solvable.a} / ${comparison.solvable.b}`,
      );
    }
  }
  if (result.perplexity.length > 0) console.log("\nperplexity of correct trajectories (policy tokens):");
  for (const { trajectoriesOf, scoredBy, result: r } of result.perplexity) {
    console.log(
      `  ${trajectoriesOf} under ${scoredBy}: pooled ${r.pooled?.toFixed(3) ?? "–"}, median ${r.median?.toFixed(3) ?? "–"} ` +
        `(${r.scored} trajectories, ${r.tokens} tokens)`,
    );
  }
  for (const note of result.perplexityNotes) console.log(`  ${note}`);
  if (result.files) console.log(`\nfiles: ${result.files.html}, ${result.files.json}, ${result.files.svg}`);
}
