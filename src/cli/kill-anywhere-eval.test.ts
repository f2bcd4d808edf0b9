/**
 * Kill anywhere, lose nothing: `agentrl eval`, `eval --agent`, `data collect` and `data collect
 * --agent` SIGKILLed at seeded random points (kill-harness.ts: when a drawn number of episodes is
 * stored, plus a random delay), resumed, end with the uninterrupted run's episodes: the same keys
 * and contents, none twice, `PRAGMA integrity_check` ok, the same pass@k.
 */
import assert from "node:assert/strict";
import { mkdirSync, mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";
import { DatabaseSync } from "node:sqlite";
import { after, test } from "node:test";
import { openRunDirectory, runStorePath } from "../store/index.ts";
import { register as registerData } from "./commands/data.ts";
import { register as registerEval } from "./commands/eval.ts";
import { countRows, integrityCheck, killAndResume, startAgentrl } from "./kill-harness.ts";
import { runCli } from "./testing.ts";

const root = mkdtempSync(join(tmpdir(), "agentrl-kill-eval-"));
after(() => rmSync(root, { recursive: true, force: true }));

/** The run's episodes by key (sorted), its status, and how many rows it stores. */
export function storedEpisodes(directory: string) {
  const store = openRunDirectory(directory);
  try {
    const [run] = store.listRuns();
    const episodes = [...store.iterateTrajectories(run.id)].map(
      (stored) => [stored.key, withoutTimings(stored.trajectory)] as const,
    );
    return {
      status: run.status,
      rows: store.countTrajectories(run.id),
      episodes: episodes.sort(([a], [b]) => a.localeCompare(b)),
    };
  } finally {
    store.close();
  }
}

/** Wall-clock measurements (`latencyMs`, `timingsMs`) differ between any two runs; nothing else may. */
function withoutTimings(value: unknown): unknown {
  if (Array.isArray(value)) return value.map(withoutTimings);
  if (value === null || typeof value !== "object") return value;
  return Object.fromEntries(
    Object.entries(value)
      .filter(([key]) => key !== "latencyMs" && key !== "timingsMs")
      .map(([key, item]) => [key, withoutTimings(item)]),
  );
}

/** The gateway names episodes and calls with random ids; everything else is the straight run's. */
function withoutGatewayIds(value: unknown): unknown {
  return JSON.parse(
    JSON.stringify(value)
      .replace(/ep-[0-9a-f]{16}/g, "ep-*")
      .replace(/call_[0-9a-f]{24}/g, "call_*"),
  );
}

/** The eval's results; `gateway/*` counts the calls of one process, so a resumed run has fewer. */
function comparable(result: { metrics: Record<string, number>; counts: unknown; totals: unknown }) {
  const metrics = Object.fromEntries(
    Object.entries(result.metrics).filter(([key]) => !key.startsWith("gateway/")),
  );
  return { metrics, counts: result.counts, totals: result.totals };
}

/**
 * The job run straight (its JSON output parsed), then run again SIGKILLed at `kills` seeded points
 * and resumed (`resumeArgs`, else the same command again) in `directory`; both runs' stored
 * episodes, the resumed run's parsed output, and the harness's report.
 */
async function straightThenKilled(options: {
  register: Parameters<typeof runCli>[0];
  straightArgs: string[];
  straightDirectory: string;
  killedArgs: string[];
  resumeArgs?: string[];
  directory: string;
  total: number;
  kills: number;
  seed: number;
  delayMs: [number, number];
}) {
  const { directory } = options;
  const straight = JSON.parse((await runCli(options.register, options.straightArgs)).out.join("\n"));
  const report = await killAndResume({
    args: options.killedArgs,
    ...(options.resumeArgs ? { resumeArgs: options.resumeArgs } : {}),
    kills: options.kills,
    seed: options.seed,
    progress: () => countRows(runStorePath(directory), "trajectories"),
    total: options.total,
    delayMs: options.delayMs,
    afterKill: () => assert.equal(integrityCheck(runStorePath(directory)), "ok"),
  });
  return {
    straight,
    resumed: JSON.parse(report.stdout),
    expected: storedEpisodes(options.straightDirectory),
    got: storedEpisodes(directory),
    report,
  };
}

test("agentrl eval killed anywhere, then --resume, stores every episode once: the straight run's", async (t) => {
  const job = ["--policy", "expert", "--tasks", "30", "--n", "8", "--noise", "0.3", "--batch", "4"];
  const directory = join(root, "killed");
  const total = 30 * 8;
  const { straight, resumed, expected, got, report } = await straightThenKilled({
    register: registerEval,
    straightArgs: ["eval", ...job, "--runs", root, "--run-id", "straight", "--json"],
    straightDirectory: join(root, "straight"),
    killedArgs: ["eval", ...job, "--runs", root, "--run-id", "killed", "--json"],
    resumeArgs: ["eval", "--resume", directory, "--json"],
    directory,
    total,
    kills: 4,
    seed: 1,
    delayMs: [0, 20],
  });
  assert.equal(integrityCheck(runStorePath(directory)), "ok");
  assert.equal(got.rows, total, "every episode stored, none twice");
  assert.deepEqual(got, expected);
  assert.deepEqual(comparable(resumed), comparable(straight));
  t.diagnostic(
    `eval: ${report.tried} kill points tried, ${report.landed} landed (at ${report.progressAtKill.join(", ")} episodes), ${total - got.rows} episodes lost`,
  );
});

test("agentrl eval --agent killed anywhere, then --resume, stores every episode once", async (t) => {
  const agent = resolve("examples/agents/openai.ts");
  const job = ["--agent", agent, "--policy", "expert", "--tasks", "4", "--n", "4", "--concurrency", "2"];
  const directory = join(root, "agent-killed");
  const total = 4 * 4;
  const { straight, resumed, expected, got, report } = await straightThenKilled({
    register: registerEval,
    straightArgs: ["eval", ...job, "--runs", root, "--run-id", "agent-straight", "--json"],
    straightDirectory: join(root, "agent-straight"),
    killedArgs: ["eval", ...job, "--runs", root, "--run-id", "agent-killed", "--json"],
    resumeArgs: ["eval", "--resume", directory, "--json"],
    directory,
    total,
    kills: 2,
    seed: 2,
    delayMs: [0, 50],
  });
  assert.equal(got.rows, total, "every episode stored, none twice");
  assert.deepEqual(withoutGatewayIds(got), withoutGatewayIds(expected));
  assert.deepEqual(comparable(resumed), comparable(straight));
  t.diagnostic(
    `eval --agent: ${report.tried} kill points tried, ${report.landed} landed (at ${report.progressAtKill.join(", ")} episodes), ${total - got.rows} episodes lost`,
  );
});

test("agentrl data collect killed anywhere, then run again, collects the straight run's dataset", async (t) => {
  const job = ["--policy", "expert", "--tasks", "60", "--samples", "2", "--noise", "0.3", "--filter", "all"];
  const small = ["--keep-per-task", "2", "--chunk-tasks", "3", "--batch", "4", "--json"];
  const directory = join(root, "collect-killed");
  const total = 60 * 2;
  const { straight, resumed, expected, got, report } = await straightThenKilled({
    register: registerData,
    straightArgs: ["data", "collect", ...job, ...small, "--out", join(root, "collect-straight")],
    straightDirectory: join(root, "collect-straight"),
    killedArgs: ["data", "collect", ...job, ...small, "--out", directory],
    directory,
    total,
    kills: 4,
    seed: 3,
    delayMs: [0, 20],
  });
  assert.equal(got.rows, total, "every episode stored, none twice");
  assert.deepEqual(got, expected);
  const counts = ({
    tasks,
    episodes,
    kept,
    rejected,
    rejections,
    tasksWithKept,
  }: Record<string, unknown>) => ({
    tasks,
    episodes,
    kept,
    rejected,
    rejections,
    tasksWithKept,
  });
  assert.deepEqual(counts(resumed), counts(straight));
  t.diagnostic(
    `data collect: ${report.tried} kill points tried, ${report.landed} landed (at ${report.progressAtKill.join(", ")} episodes), ${total - got.rows} episodes lost`,
  );
});

test("agentrl data collect --agent killed anywhere, then run again, collects the straight run's dataset", async (t) => {
  const agent = resolve("examples/agents/openai.ts");
  const job = ["--agent", agent, "--policy", "expert", "--tasks", "8", "--samples", "2", "--filter", "all"];
  const small = ["--keep-per-task", "2", "--chunk-tasks", "2", "--concurrency", "2", "--json"];
  const directory = join(root, "collect-agent-killed");
  const total = 8 * 2;
  const { straight, resumed, expected, got, report } = await straightThenKilled({
    register: registerData,
    straightArgs: ["data", "collect", ...job, ...small, "--out", join(root, "collect-agent-straight")],
    straightDirectory: join(root, "collect-agent-straight"),
    killedArgs: ["data", "collect", ...job, ...small, "--out", directory],
    directory,
    total,
    kills: 2,
    seed: 4,
    delayMs: [0, 50],
  });
  assert.equal(got.rows, total, "every episode stored, none twice");
  assert.deepEqual(withoutGatewayIds(got), withoutGatewayIds(expected));
  // Counts and gateway totals are committed with each chunk: the resumed run reports the straight one's.
  const { directory: _a, runId: _b, ...resumedCounts } = resumed;
  const { directory: _c, runId: _d, ...straightCounts } = straight;
  assert.deepEqual(resumedCounts, straightCounts);
  t.diagnostic(
    `data collect --agent: ${report.tried} kill points tried, ${report.landed} landed (at ${report.progressAtKill.join(", ")} episodes), ${total - got.rows} episodes lost`,
  );
});

test("SIGTERM interrupts eval and data collect: the run is marked interrupted, eval says how to resume", async () => {
  const sleep = (ms: number) => new Promise((done) => setTimeout(done, ms));
  for (const [name, args, resume] of [
    [
      "eval",
      ["eval", "--policy", "expert", "--tasks", "200", "--n", "4", "--runs", root, "--run-id", "term-eval"],
      ["eval", "--resume", join(root, "term-eval")],
    ],
    [
      "data collect",
      [
        "data",
        "collect",
        "--policy",
        "expert",
        "--tasks",
        "400",
        "--chunk-tasks",
        "2",
        "--out",
        join(root, "term-collect"),
      ],
      null,
    ],
  ] as const) {
    const directory = join(root, name === "eval" ? "term-eval" : "term-collect");
    const child = startAgentrl(args);
    while (child.running() && safeCount(directory) < 8) await sleep(5);
    child.kill("SIGTERM");
    const exit = await child.exited(60_000);
    assert.notEqual(exit.code, 0, `${name} reports the interruption: ${child.stderr()}`);
    const store = openRunDirectory(directory, { readOnly: true });
    const [run] = store.listRuns();
    store.close();
    assert.equal(run.status, "interrupted", `${name}: ${child.stderr()}`);
    if (resume) assert.match(child.stderr(), /resume with agentrl eval --resume/);
  }
});

function safeCount(directory: string): number {
  try {
    return countRows(runStorePath(directory), "trajectories");
  } catch (error) {
    if (/no such table|unable to open|locked/i.test(String(error))) return 0;
    throw error;
  }
}

test("eval --run-id after a kill during the run's creation: an empty folder, or a run without its task list", async () => {
  const job = ["eval", "--policy", "expert", "--tasks", "3", "--n", "2", "--runs", root, "--json"];
  mkdirSync(join(root, "created-empty"));
  const fromEmpty = JSON.parse(
    (await runCli(registerEval, [...job, "--run-id", "created-empty"])).out.join("\n"),
  );
  assert.equal(fromEmpty.totals.samples, 6);
  // A run killed before its task list was written: the run row only.
  await runCli(registerEval, [...job, "--run-id", "created-bare"]);
  const database = new DatabaseSync(runStorePath(join(root, "created-bare")));
  database.exec("DELETE FROM trajectories; DELETE FROM state; DELETE FROM metrics; DELETE FROM artifacts");
  database.close();
  const fromBare = JSON.parse(
    (await runCli(registerEval, [...job, "--run-id", "created-bare"])).out.join("\n"),
  );
  assert.deepEqual(comparable(fromBare), comparable(fromEmpty));
  assert.equal(storedEpisodes(join(root, "created-bare")).rows, 6);
});
