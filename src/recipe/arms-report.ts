/**
 * The report's section on the RL arms (arms.ts): one table row per arm and training seed (start
 * and end pass@1, their paired difference, learned or not) and a chart of each arm's interval.
 */
import type { Section } from "../report/html.ts";
import type { Arm } from "./arms.ts";
import { fixed } from "./experiments/context.ts";
import { intervalChart } from "./verdict-chart.ts";

const ARM_COLOURS = { learned: "#2e7d32", "did not learn": "#c62828" } as const;

/** "credit-grpo @ seed 2": the arm's row label. */
export function armLabel(arm: Pick<Arm, "run" | "seed">): string {
  return `${arm.run} @ seed ${arm.seed}`;
}

/** The chart's rows: one per arm and seed with a measured difference. */
export function armChartRows(arms: readonly Arm[]) {
  return arms
    .filter((arm) => arm.difference)
    .map((arm) => ({
      id: armLabel(arm),
      status: arm.learned ? "learned" : "did not learn",
      mean: arm.difference!.mean,
      lower: arm.difference!.interval.lower,
      upper: arm.difference!.interval.upper,
    }));
}

/**
 * "14 of 27 arm-seeds that could learn did; 3 start from a checkpoint that solves none of their
 * test tasks (rl-weak), which cannot": the count the report and docs/results.md give.
 */
export function learnedSummary(arms: readonly Arm[]): string {
  const bounded = arms.filter((arm) => arm.startSolvedNone && !arm.learned);
  const able = arms.filter((arm) => !bounded.includes(arm));
  const learned = able.filter((arm) => arm.learned).length;
  const runs = [...new Set(bounded.map((arm) => arm.run))].join(", ");
  return bounded.length === 0
    ? `${learned} of ${arms.length} arm-seeds learned`
    : `${learned} of the ${able.length} arm-seeds that could learn did; ${bounded.length} more (${runs}) start from a checkpoint that solved none of their test tasks in any sample, so no rollout group on them carries signal and they cannot learn by construction`;
}

/** The learned column: yes, `no` as the page spells it, or why an arm could not. */
export function learnedCell(arm: Arm, no = "NO"): string {
  if (arm.learned) return "yes";
  return arm.startSolvedNone ? "no (start solves none)" : no;
}

export async function armsSection(arms: readonly Arm[]): Promise<Section> {
  const svg = await intervalChart({
    intervals: armChartRows(arms),
    colours: ARM_COLOURS,
    title: "RL arms: pass@1 end − start, per training seed",
    xTitle: "pass@1 end − start (paired over the arm's test tasks)",
    rules: [0],
  });
  const signed = (x: number | undefined) => (x === undefined ? "n/a" : `${x >= 0 ? "+" : ""}${x.toFixed(3)}`);
  return {
    title: "RL arms: did each run learn?",
    blocks: [
      {
        type: "paragraph",
        text: `Every RL run the report uses, at every training seed: pass@1 of its start checkpoint and of its end on the arm's own test tasks (the main evaluation for the main-line runs, the credit family's test tasks for the credit runs, the noise experiment's tasks at its training noise for the noise runs), and the paired difference end − start with its 95% bootstrap interval over those tasks. An arm learned when that interval lies above 0: ${learnedSummary(arms)}. A claim comparing RL methods is called only where every arm it compares learned at every seed.`,
      },
      {
        type: "table",
        columns: [
          "arm",
          "seed",
          "family",
          "estimator",
          "start pass@1",
          "end pass@1",
          "end − start [95% CI]",
          "learned",
        ],
        rows: arms.map((arm) => [
          arm.run,
          arm.seed,
          arm.family,
          arm.estimator,
          fixed(arm.start),
          fixed(arm.end),
          arm.difference
            ? `${signed(arm.difference.mean)} [${signed(arm.difference.interval.lower)}, ${signed(arm.difference.interval.upper)}] (${arm.difference.tasks} tasks)`
            : "n/a",
          { text: learnedCell(arm), tone: arm.learned ? "good" : arm.startSolvedNone ? "none" : "bad" },
        ]),
      },
      ...(svg
        ? [
            {
              type: "svg" as const,
              svg,
              caption:
                "Each arm's end − start pass@1 at each training seed: the 95% bootstrap interval over its test tasks as a bar (green: above 0, the arm learned), the mean as a tick; the dashed line is 0.",
            },
          ]
        : []),
    ],
  };
}
