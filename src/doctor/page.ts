/**
 * The doctor's HTML page (src/report's builder: self-contained, no scripts): the verdict and what
 * to change, one row per check, then each check's measurements: the panel's share of the expert's
 * reward, coverage per family and the share of groups with signal against G, the tools' latency and
 * failure rates.
 */
import { type Block, type Cell, formatNumber, renderPage, type Section } from "../report/html.ts";
import { barChart, lineChart } from "../report/plots.ts";
import type { CoverageRow } from "./coverage.ts";
import type { ToolStats } from "./determinism.ts";
import type { MemberScore } from "./reward-hacking.ts";
import type { DoctorCheck, DoctorReport } from "./types.ts";

function statusCell(check: DoctorCheck): Cell {
  if (check.skipped) return { text: "skipped", tone: "none" };
  return check.ok ? { text: "pass", tone: "good" } : { text: "fail", tone: "bad" };
}

async function rewardHackingBlocks(check: DoctorCheck): Promise<Block[]> {
  const data = check.data as
    | { members?: MemberScore[]; expert?: MemberScore; threshold?: number }
    | undefined;
  if (!data?.members || !data.expert) return [];
  const rows = [data.expert, ...data.members].map((member): Cell[] => [
    member.member,
    member.mean,
    member.best,
    member.member === "expert"
      ? "100%"
      : {
          text: `${Math.round(member.share * 100)}%`,
          tone: member.share >= (data.threshold ?? 0.5) ? "bad" : "good",
        },
    member.farmed.map((entry) => `${entry.term} +${formatNumber(entry.excess)}`).join(", ") || "–",
  ]);
  const svg = await barChart({
    title: "reward above the floor, as a share of the expert's",
    bars: data.members.map((member) => ({ category: member.member, value: member.share })),
    xLabel: "panel member",
    yLabel: "share of the expert's reward",
    height: 200,
  });
  return [
    {
      type: "table",
      columns: ["policy", "mean reward", "best episode", "share of expert", "terms earned above the floor"],
      rows,
    },
    { type: "svg", svg },
  ];
}

async function coverageBlocks(check: DoctorCheck): Promise<Block[]> {
  const data = check.data as
    | {
        groupSize: number;
        overall: CoverageRow;
        families: CoverageRow[];
        allTasksAt: { groupSize: number; share: number }[];
        learnableAt: { groupSize: number; share: number }[];
        learnable: string[];
      }
    | undefined;
  if (!data?.overall) return [];
  const G = data.groupSize;
  const rows = [...data.families, data.overall].map((row): Cell[] => [
    row.family,
    row.tasks,
    row.passAt1,
    row.passAtG,
    row.passHat.find((point) => point.k === G)?.value ?? null,
    `${Math.round(row.allWrong * 100)}%`,
    `${Math.round(row.allRight * 100)}%`,
    `${Math.round(row.signalShare * 100)}%`,
  ]);
  const series = [
    { name: "all tasks", points: data.allTasksAt.map((entry) => ({ x: entry.groupSize, y: entry.share })) },
    ...(data.learnable.length > 0
      ? [
          {
            name: "learnable pool",
            points: data.learnableAt.map((entry) => ({ x: entry.groupSize, y: entry.share })),
          },
        ]
      : []),
  ];
  const svg = await lineChart({
    title: "expected share of GRPO groups with a non-zero advantage",
    series,
    xLabel: "group size G",
    yLabel: "groups with signal",
    xLog: true,
    yDomain: [0, 1],
    height: 220,
  });
  return [
    {
      type: "table",
      columns: [
        "family",
        "tasks",
        "pass@1",
        `pass@${G}`,
        `pass^${G}`,
        "never solved",
        "always solved",
        "groups with signal",
      ],
      rows,
    },
    { type: "svg", svg, caption: `measured at G = ${G}; larger G extrapolated from each task's pass rate` },
    ...(data.learnable.length > 0
      ? [
          {
            type: "details" as const,
            summary: `learnable pool: ${data.learnable.length} tasks with 0 < c < ${G}`,
            blocks: [{ type: "pre" as const, text: data.learnable.join("\n") }],
          },
        ]
      : []),
  ];
}

function determinismBlocks(check: DoctorCheck): Block[] {
  const tools = (check.data as { tools?: ToolStats[] } | undefined)?.tools ?? [];
  if (tools.length === 0) return [];
  return [
    {
      type: "table",
      columns: [
        "tool",
        "calls",
        "mean latency (ms)",
        "p95 latency (ms)",
        "failed on its own",
        "injected noise",
      ],
      rows: tools.map((tool) => [
        tool.tool,
        tool.calls,
        tool.meanLatencyMs,
        tool.p95LatencyMs,
        `${Math.round(tool.failureRate * 100)}%`,
        `${Math.round(tool.injectedRate * 100)}%`,
      ]),
    },
  ];
}

function verifierBlocks(check: DoctorCheck): Block[] {
  const broken = (check.data as { broken?: { taskId: string; reason: string }[] } | undefined)?.broken ?? [];
  if (broken.length === 0) return [];
  return [
    {
      type: "table",
      columns: ["broken task", "why"],
      rows: broken.map((entry) => [entry.taskId, entry.reason]),
    },
  ];
}

export async function doctorPage(report: DoctorReport, when = new Date()): Promise<string> {
  const verdict: Section = {
    title: report.ready ? "Verdict: ready" : "Verdict: not ready",
    blocks: [
      {
        type: "paragraph",
        text: report.ready
          ? "Every check passed: the policy samples successes on these tasks often enough for GRPO groups to carry signal, and the reward, verifier and environment hold."
          : "Fix these before spending GPU time on RL:",
      },
      ...(report.verdict.reasons.length > 0
        ? [{ type: "list" as const, items: report.verdict.reasons }]
        : []),
      ...(report.verdict.changes.length > 0
        ? [
            { type: "paragraph" as const, text: "What to change, first things first:" },
            {
              type: "list" as const,
              items: report.verdict.changes.map((change) => `${change.kind}: ${change.text}`),
            },
          ]
        : []),
    ],
  };
  const checks: Section = {
    title: "Checks",
    blocks: [
      {
        type: "table",
        columns: ["check", "result", "seconds", "detail"],
        rows: report.checks.map((check) => [
          check.id,
          statusCell(check),
          report.seconds[check.id] ?? null,
          check.detail,
        ]),
      },
    ],
  };
  const details: Section[] = [];
  for (const check of report.checks) {
    const blocks =
      check.id === "reward-hacking"
        ? await rewardHackingBlocks(check)
        : check.id === "coverage"
          ? await coverageBlocks(check)
          : check.id === "determinism"
            ? determinismBlocks(check)
            : check.id === "verifier"
              ? verifierBlocks(check)
              : [];
    if (blocks.length > 0) details.push({ title: check.id, blocks });
  }
  const setup: Section = {
    title: "Setup",
    blocks: [{ type: "pre", text: JSON.stringify(report.setup, null, 2) }],
  };
  return renderPage({
    title: "agentrl doctor",
    subtitle: `${String(report.setup.policy)} on ${String(report.setup.tasks)} · ${when.toISOString()} · ${report.seconds.total} s`,
    sections: [verdict, checks, ...details, setup],
  });
}
