/**
 * The HTML page of `agentrl boundary`: pass@k curves on one log-k plot and pass^k curves on
 * another beside it, crossover and
 * sampling-efficiency gap per pair, solvable sets and their differences (with one example solution
 * per task solved by one model only), per-family curves and tables, and perplexity of each run's
 * correct trajectories under each scorable model. Self-contained: inline SVG and CSS, no scripts;
 * every text (including model output) is escaped by src/report/html.ts.
 */
import { type Block, type Cell, renderPage, type Section } from "../report/html.ts";
import { histogram } from "../report/plots.ts";
import type { Trajectory } from "../types/trajectory.ts";
import type { CurveComparison, SolvableSets } from "./boundary.ts";
import { type CurveMeasure, passAtKChart } from "./passk-chart.ts";
import type { BoundaryExample, BoundaryResult } from "./run-boundary.ts";

const percent = (value: number | null) => (value === null ? "–" : `${(100 * value).toFixed(1)}%`);
const signedPoints = (value: number) => `${value >= 0 ? "+" : ""}${(100 * value).toFixed(1)} pts`;

function leaderText(comparison: CurveComparison, a: string, b: string): string {
  return comparison.leaderAtK1 === "a" ? a : comparison.leaderAtK1 === "b" ? b : "tie";
}

function crossoverText(comparison: CurveComparison, a: string, b: string): string {
  if (comparison.leaderAtK1 === null) return "– (tie at k = 1)";
  const behind = comparison.leaderAtK1 === "a" ? b : a;
  return comparison.crossoverK === null
    ? `none up to k = ${comparison.kMax}`
    : `k = ${comparison.crossoverK} (${behind} reaches)`;
}

function comparisonRow(name: string, comparison: CurveComparison, a: string, b: string): Cell[] {
  return [
    name,
    percent(comparison.passAt1.a),
    percent(comparison.passAt1.b),
    percent(comparison.passAtKMax.a),
    percent(comparison.passAtKMax.b),
    percent(comparison.passHatKMax.a),
    percent(comparison.passHatKMax.b),
    leaderText(comparison, a, b),
    crossoverText(comparison, a, b),
    signedPoints(comparison.gap.aOverB),
    signedPoints(comparison.gap.bOverA),
  ];
}

function comparisonColumns(a: string, b: string, kMax: number): string[] {
  return [
    "",
    `pass@1 ${a}`,
    `pass@1 ${b}`,
    `pass@${kMax} ${a}`,
    `pass@${kMax} ${b}`,
    `pass^${kMax} ${a}`,
    `pass^${kMax} ${b}`,
    "ahead at k = 1",
    "crossover",
    `ΔSE pass@${kMax}(${a}) − pass@1(${b})`,
    `ΔSE pass@${kMax}(${b}) − pass@1(${a})`,
  ];
}

function solvableRow(name: string, sets: SolvableSets): Cell[] {
  return [
    name,
    sets.a,
    sets.b,
    sets.both,
    sets.onlyA.length,
    sets.onlyB.length,
    sets.neither,
    sets.aSubsetOfB ? "yes" : "no",
    sets.bSubsetOfA ? "yes" : "no",
  ];
}

function trajectoryText(trajectory: Trajectory): string {
  const lines: string[] = [];
  for (const turn of trajectory.turns) {
    lines.push(`policy> ${turn.text}`);
    if (turn.observation) lines.push(`   env> ${turn.observation.text}`);
  }
  lines.push(`answer: ${trajectory.finalAnswer ?? "(none)"} (${trajectory.correct ? "correct" : "wrong"})`);
  return lines.join("\n");
}

function exampleBlocks(examples: readonly BoundaryExample[], pair: string, solvedBy: string): Block[] {
  return examples
    .filter((example) => example.pair === pair && example.solvedBy === solvedBy)
    .map((example) => ({
      type: "details" as const,
      summary: `${example.taskId}: ${example.question}`,
      blocks: [{ type: "pre" as const, text: trajectoryText(example.trajectory) }],
    }));
}

export async function renderBoundaryPage(
  result: BoundaryResult,
  curvesSvg: string,
  examples: readonly BoundaryExample[],
): Promise<string> {
  const { analysis } = result;
  const labels = analysis.runs.map((run) => run.label);
  const sections: Section[] = [];

  if (analysis.warnings.length > 0) {
    sections.push({ title: "Warnings", blocks: [{ type: "list", items: analysis.warnings }] });
  }

  const curveTable = (measure: CurveMeasure): Block => ({
    type: "table",
    caption: measure,
    columns: ["k", ...labels],
    rows: analysis.ks.map((k, i) => [
      k,
      ...analysis.runs.map((run) => {
        const point = run.curves.overall[i];
        const [value, lower, upper] =
          measure === "pass@k"
            ? [point.passAtK, point.lower, point.upper]
            : [point.passHatK, point.passHatKLower, point.passHatKUpper];
        if (value === undefined) return "–";
        return lower !== undefined && upper !== undefined
          ? `${value.toFixed(3)} [${lower.toFixed(3)}, ${upper.toFixed(3)}]`
          : value.toFixed(3);
      }),
    ]),
  });
  const hatSvg = await passAtKChart(
    analysis.runs.map((run) => ({ name: run.label, curve: run.curves.overall })),
    `pass^k on ${analysis.tasks.length} shared tasks`,
    "pass^k",
  );
  sections.push({
    title: "pass@k",
    blocks: [
      {
        type: "svg",
        svg: curvesSvg,
        caption: `Unbiased pass@k on the ${analysis.tasks.length} tasks every run shares; bands are 95% bootstrap intervals over tasks.`,
      },
      curveTable("pass@k"),
    ],
  });
  sections.push({
    title: "pass^k",
    blocks: [
      {
        type: "svg",
        svg: hatSvg,
        caption:
          "Unbiased pass^k = C(c,k)/C(n,k) on the same tasks: the chance that all k samples are correct (reliability, as τ-bench reports it). pass@k asks whether a model can solve a task, pass^k whether it solves it every time.",
      },
      curveTable("pass^k"),
    ],
  });

  for (const pair of analysis.pairs) {
    const name = `${pair.a} vs ${pair.b}`;
    const families = Object.entries(pair.families);
    sections.push({
      title: name,
      blocks: [
        {
          type: "paragraph",
          text:
            "Crossover: the smallest k at which the run behind at k = 1 reaches the leader. " +
            "ΔSE (sampling-efficiency gap): pass@k_max of one run minus pass@1 of the other.",
        },
        {
          type: "table",
          caption: "Curves",
          columns: comparisonColumns(pair.a, pair.b, pair.kMax),
          rows: [
            comparisonRow("all", pair, pair.a, pair.b),
            ...families.map(([family, comparison]) => comparisonRow(family, comparison, pair.a, pair.b)),
          ],
        },
        {
          type: "table",
          caption: "Solvable sets at k = n (tasks solved at least once)",
          columns: [
            "",
            pair.a,
            pair.b,
            "both",
            `only ${pair.a}`,
            `only ${pair.b}`,
            "neither",
            `${pair.a} ⊆ ${pair.b}`,
            `${pair.b} ⊆ ${pair.a}`,
          ],
          rows: [
            solvableRow("all", pair.solvable),
            ...families.map(([family, comparison]) => solvableRow(family, comparison.solvable)),
          ],
        },
        {
          type: "details",
          summary: `${pair.solvable.onlyA.length} tasks only ${pair.a} solves`,
          blocks: [{ type: "list", items: pair.solvable.onlyA }, ...exampleBlocks(examples, name, pair.a)],
        },
        {
          type: "details",
          summary: `${pair.solvable.onlyB.length} tasks only ${pair.b} solves`,
          blocks: [{ type: "list", items: pair.solvable.onlyB }, ...exampleBlocks(examples, name, pair.b)],
        },
      ],
    });
  }

  const familyBlocks: Block[] = [];
  for (const family of Object.keys(analysis.families)) {
    const named = analysis.runs.map((run) => ({ name: run.label, curve: run.curves.families[family] }));
    const title = `${family} (${analysis.families[family].length} tasks)`;
    familyBlocks.push({ type: "svg", svg: await passAtKChart(named, `${title}: pass@k`) });
    familyBlocks.push({ type: "svg", svg: await passAtKChart(named, `${title}: pass^k`, "pass^k") });
  }
  sections.push({ title: "Per family", blocks: familyBlocks });

  const perplexityBlocks: Block[] = [
    {
      type: "paragraph",
      text:
        "Perplexity of each run's correct trajectories under each scorable model, over the policy's tokens only " +
        "(pooled: exp of the mean negative log-prob over all scored tokens). Low perplexity under another model " +
        "means that model already samples those solutions.",
    },
  ];
  if (result.perplexity.length > 0) {
    perplexityBlocks.push({
      type: "table",
      columns: [
        "trajectories of",
        "scored by",
        "scored",
        "tokens",
        "pooled PPL",
        "median PPL",
        "token ids",
        "skipped",
      ],
      rows: result.perplexity.map(({ trajectoriesOf, scoredBy, result: r }) => [
        trajectoriesOf,
        scoredBy,
        r.scored,
        r.tokens,
        r.pooled,
        r.median,
        `${r.tokenSource.stored} stored, ${r.tokenSource.reEncoded} re-encoded`,
        r.skippedTooLong + r.skippedEmpty,
      ]),
    });
    const byScorer = new Map<string, typeof result.perplexity>();
    for (const entry of result.perplexity) {
      byScorer.set(entry.scoredBy, [...(byScorer.get(entry.scoredBy) ?? []), entry]);
    }
    for (const [scoredBy, entries] of byScorer) {
      const samples = entries
        .filter((entry) => entry.result.perTrajectory.length > 0)
        .map((entry) => ({ name: entry.trajectoriesOf, values: entry.result.perTrajectory.map(Math.log) }));
      if (samples.length === 0) continue;
      perplexityBlocks.push({
        type: "svg",
        svg: await histogram({
          samples,
          xLabel: "log perplexity per trajectory",
          title: `under ${scoredBy}`,
        }),
      });
    }
  }
  if (result.perplexityNotes.length > 0)
    perplexityBlocks.push({ type: "list", items: result.perplexityNotes });
  sections.push({ title: "Perplexity", blocks: perplexityBlocks });

  sections.push({
    title: "Runs",
    blocks: [
      {
        type: "table",
        columns: ["label", "directory", "policy id", "status", "n", "tasks", "temperature", "top-p", "noise"],
        rows: result.runs.map((run) => [
          run.label,
          run.directory,
          run.policyId,
          run.status,
          run.n,
          run.tasks,
          run.config.temperature,
          run.config.topP,
          run.config.noise,
        ]),
      },
    ],
  });

  return renderPage({
    title: `Reasoning boundary: ${labels.join(" vs ")}`,
    subtitle: `${analysis.tasks.length} shared tasks, k up to ${analysis.ks[analysis.ks.length - 1]}`,
    sections,
  });
}
