/**
 * The orchestration experiment (MAS-Orchestra's comparison on our MASBench-style tasks): per axis,
 * value and sub-agent competence, on the same test tasks and seeds,
 *
 * - `single-agent`: the solver worker alone on the whole question (no orchestrator);
 * - `delegate-one`: low degree, the whole question handed to one sub-agent (the solver);
 * - `call-every`: high degree, every sub-task to its sub-agent and every lookup cross-checked by the
 *   verifier, independent lookups in parallel, one retry;
 * - each embedded orchestrator given (the base and the RL-trained one), high degree;
 *
 * with accuracy, the MAS-Orchestra reward, sub-agent calls and parallel calls per task. The result
 * is plain JSON plus report sections (src/report), so `agentrl orchestra report` writes a page and
 * the recipe report can include the same sections.
 */
import { mkdirSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { resolvePolicy } from "../policy/resolve.ts";
import { type Block, formatNumber, renderPage, type Section } from "../report/html.ts";
import { lineChart } from "../report/plots.ts";
import type { Policy } from "../types/policy.ts";
import type { Degree } from "./env.ts";
import { evaluateOrchestrator, evaluateSingleAgent, type OrchestraScore } from "./evaluate.ts";
import { generateOrchestraTasks, validateAxisValue } from "./generate.ts";
import { AXES, type Axis } from "./graph.ts";
import { createStrategyPolicy, FIXED_STRATEGIES } from "./strategies.ts";
import { COMPETENCE_LEVELS, type CompetenceLevel } from "./sub-agents.ts";

export interface OrchestraExperimentOptions {
  /** Embedded orchestrators to evaluate (checkpoint directories), by display name. */
  orchestrators: { name: string; dir: string }[];
  axes?: readonly Axis[];
  values?: readonly number[];
  /** Test tasks per axis and value. */
  tasks?: number;
  seed?: number;
  competences?: readonly CompetenceLevel[];
  /** Sampling temperature of the embedded orchestrators (default 0: greedy). */
  temperature?: number;
  onProgress?: (message: string) => void;
}

export interface ExperimentRow extends OrchestraScore {
  axis: Axis;
  value: number;
  competence: CompetenceLevel;
  errorRate: number;
  contender: string;
  degree: Degree | "none";
}

export interface OrchestraExperimentResult {
  json: {
    settings: Required<Omit<OrchestraExperimentOptions, "onProgress">>;
    rows: ExperimentRow[];
    seconds: number;
  };
  sections: Section[];
}

export const SINGLE_AGENT = "single-agent";

export async function runOrchestraExperiment(
  options: OrchestraExperimentOptions,
): Promise<OrchestraExperimentResult> {
  const started = performance.now();
  const settings = {
    orchestrators: options.orchestrators,
    axes: options.axes ?? [...AXES],
    values: options.values ?? [2, 3, 4],
    tasks: options.tasks ?? 40,
    seed: options.seed ?? 1,
    competences: options.competences ?? (["weak", "strong"] as CompetenceLevel[]),
    temperature: options.temperature ?? 0,
  };
  for (const axis of settings.axes) for (const value of settings.values) validateAxisValue(axis, value);
  const contenders: { name: string; degree: Degree; policy: Policy }[] = [
    { name: "delegate-one", degree: "low", policy: createStrategyPolicy(FIXED_STRATEGIES["delegate-one"]) },
    { name: "call-every", degree: "high", policy: createStrategyPolicy(FIXED_STRATEGIES["call-every"]) },
  ];
  for (const orchestrator of settings.orchestrators) {
    contenders.push({
      name: orchestrator.name,
      degree: "high",
      policy: await resolvePolicy(orchestrator.dir, { temperature: settings.temperature }),
    });
  }
  const rows: ExperimentRow[] = [];
  try {
    for (const axis of settings.axes) {
      for (const value of settings.values) {
        const tasks = generateOrchestraTasks({
          axis,
          value,
          count: settings.tasks,
          seed: settings.seed,
          split: "test",
        });
        for (const competence of settings.competences) {
          const errorRate = COMPETENCE_LEVELS[competence];
          const base = { axis, value, competence, errorRate };
          rows.push({
            ...base,
            contender: SINGLE_AGENT,
            degree: "none",
            ...(await evaluateSingleAgent(tasks, errorRate, settings.seed)),
          });
          for (const contender of contenders) {
            const score = await evaluateOrchestrator({
              policy: contender.policy,
              degree: contender.degree,
              errorRate,
              tasks,
              seed: settings.seed,
            });
            rows.push({ ...base, contender: contender.name, degree: contender.degree, ...score });
          }
          options.onProgress?.(`${axis} ${value} ${competence}`);
        }
      }
    }
  } finally {
    for (const contender of contenders) await contender.policy.close?.();
  }
  const json = { settings, rows, seconds: (performance.now() - started) / 1000 };
  return { json, sections: await orchestraSections(json) };
}

/** Accuracy of a contender minus the single agent's, averaged over the values of an axis. */
export function gainOverSingleAgent(
  rows: readonly ExperimentRow[],
  contender: string,
  axis: Axis,
  competence: CompetenceLevel,
): number {
  const of = (name: string) =>
    rows.filter((row) => row.contender === name && row.axis === axis && row.competence === competence);
  const mine = of(contender);
  const single = new Map(of(SINGLE_AGENT).map((row) => [row.value, row.accuracy]));
  if (mine.length === 0) return Number.NaN;
  return (
    mine.reduce((sum, row) => sum + row.accuracy - (single.get(row.value) ?? Number.NaN), 0) / mine.length
  );
}

async function orchestraSections(json: OrchestraExperimentResult["json"]): Promise<Section[]> {
  const { settings, rows } = json;
  const contenders = [...new Set(rows.map((row) => row.contender))];
  const pct = (x: number) => `${(100 * x).toFixed(1)}%`;
  const setup: Block[] = [
    {
      type: "paragraph",
      text:
        `${settings.tasks} test tasks per axis and value (values ${settings.values.join(", ")}), seed ${settings.seed}, one episode per task; ` +
        `sub-agents weak (error rate ${COMPETENCE_LEVELS.weak} per step) and strong (${COMPETENCE_LEVELS.strong}). ` +
        "single-agent: the solver worker alone on the whole question. delegate-one: low degree, the question handed to the solver. " +
        "call-every: high degree, every sub-task to its sub-agent, every lookup cross-checked by the verifier, one retry. " +
        `Embedded orchestrators (${settings.orchestrators.map((o) => `${o.name}: ${o.dir}`).join(", ") || "none"}) run at high degree, temperature ${settings.temperature}. ` +
        `Measured in ${(json.seconds / 60).toFixed(1)} min.`,
    },
  ];
  const gains: Block = {
    type: "table",
    caption: "Accuracy minus the single agent's, averaged over the axis values (percentage points)",
    columns: ["contender", "competence", ...settings.axes],
    rows: contenders
      .filter((name) => name !== SINGLE_AGENT)
      .flatMap((name) =>
        settings.competences.map((competence) => [
          name,
          competence,
          ...settings.axes.map((axis) =>
            formatNumber(100 * gainOverSingleAgent(rows, name, axis, competence), 1),
          ),
        ]),
      ),
  };
  const charts: Block[] = [];
  for (const competence of settings.competences) {
    for (const axis of settings.axes) {
      const svg = await lineChart({
        title: `${axis}, ${competence} sub-agents`,
        width: 300,
        height: 180,
        xLabel: axis,
        yLabel: "accuracy",
        yDomain: [0, 1],
        xTicks: settings.values,
        series: contenders.map((name) => ({
          name,
          points: rows
            .filter((row) => row.contender === name && row.axis === axis && row.competence === competence)
            .map((row) => ({ x: row.value, y: row.accuracy })),
        })),
      });
      charts.push({ type: "svg", svg });
    }
  }
  const table: Block = {
    type: "table",
    caption: "Every cell: accuracy, calls per task (parallel calls per task), execution-error rate",
    columns: ["axis", "value", "competence", ...contenders],
    rows: settings.axes.flatMap((axis) =>
      settings.values.flatMap((value) =>
        settings.competences.map((competence) => [
          axis,
          value,
          competence,
          ...contenders.map((name) => {
            const row = rows.find(
              (r) =>
                r.contender === name && r.axis === axis && r.value === value && r.competence === competence,
            );
            if (!row) return "";
            return name === SINGLE_AGENT
              ? pct(row.accuracy)
              : `${pct(row.accuracy)} · ${row.callsPerTask.toFixed(1)} (${row.parallelCallsPerTask.toFixed(1)}) · ${pct(row.executionErrorRate)}`;
          }),
        ]),
      ),
    ),
  };
  return [
    { title: "Learnable orchestration: setup", blocks: setup },
    { title: "Learnable orchestration: gain over the single agent", blocks: [gains] },
    { title: "Learnable orchestration: accuracy per axis", blocks: charts },
    { title: "Learnable orchestration: every measurement", blocks: [table] },
  ];
}

/**
 * The summary as markdown: per competence, accuracy per axis (mean over the values) of every
 * contender, with calls and parallel calls per task in brackets.
 */
export function orchestraMarkdown(json: OrchestraExperimentResult["json"]): string {
  const { settings, rows } = json;
  const contenders = [...new Set(rows.map((row) => row.contender))];
  const mean = (values: number[]) => values.reduce((a, b) => a + b, 0) / Math.max(1, values.length);
  const lines = [
    `Accuracy per axis, mean over values ${settings.values.join(", ")} (${settings.tasks} test tasks each, seed ${settings.seed}, embedded orchestrators at temperature ${settings.temperature}); in brackets: sub-agent calls and parallel calls per task. Measured in ${(json.seconds / 60).toFixed(1)} min by \`agentrl orchestra report\`.`,
    "",
  ];
  for (const competence of settings.competences) {
    lines.push(`### ${competence} sub-agents (error rate ${COMPETENCE_LEVELS[competence]} per step)`, "");
    lines.push(`| axis | ${contenders.join(" | ")} |`, `| --- |${contenders.map(() => " --- |").join("")}`);
    for (const axis of settings.axes) {
      const cells = contenders.map((name) => {
        const mine = rows.filter(
          (r) => r.contender === name && r.axis === axis && r.competence === competence,
        );
        const accuracy = mean(mine.map((r) => r.accuracy));
        const calls = mean(mine.map((r) => r.callsPerTask));
        const parallel = mean(mine.map((r) => r.parallelCallsPerTask));
        return `${(100 * accuracy).toFixed(1)}% (${calls.toFixed(1)}, ${parallel.toFixed(1)})`;
      });
      lines.push(`| ${axis} | ${cells.join(" | ")} |`);
    }
    lines.push("");
  }
  return lines.join("\n");
}

/** Writes `orchestra.html`, `orchestra.json` and `orchestra.md` into `dir`; returns their paths. */
export function writeOrchestraReport(
  dir: string,
  result: OrchestraExperimentResult,
): { html: string; json: string; markdown: string } {
  mkdirSync(dir, { recursive: true });
  const html = join(dir, "orchestra.html");
  const json = join(dir, "orchestra.json");
  const markdown = join(dir, "orchestra.md");
  writeFileSync(markdown, orchestraMarkdown(result.json));
  writeFileSync(
    html,
    renderPage({
      title: "Learnable orchestration",
      subtitle: "agentrl orchestra report",
      sections: result.sections,
    }),
  );
  writeFileSync(json, `${JSON.stringify(result.json, null, 2)}\n`);
  return { html, json, markdown };
}
