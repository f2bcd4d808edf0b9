/**
 * Test helper, not used at run time: "kill anywhere, lose nothing". Runs a long `agentrl` job as a
 * child process (the real CLI, `node bin/agentrl.js …`), SIGKILLs it at seeded random points, runs
 * the resume command after each kill, and lets it finish; the test then compares the job's store
 * with an uninterrupted run's.
 *
 * A kill point is drawn per kill from the seed: when the job reports progress (episodes or steps in
 * its store, polled every few milliseconds), a progress target between the last one and the total,
 * then a random extra delay so the kill lands inside the next unit of work rather than just after a
 * commit; otherwise a delay after the child starts. A target the job has already passed when it
 * restarts means a kill during start-up or the resume itself, which must be as safe.
 */
import assert from "node:assert/strict";
import { spawn } from "node:child_process";
import { existsSync } from "node:fs";
import { DatabaseSync } from "node:sqlite";
import { createRng } from "../core/random.ts";

export interface KillRunOptions {
  /** Arguments of the job (after `agentrl`). */
  args: readonly string[];
  /**
   * Arguments after a kill (default `args`: the job continues when run again); a function decides
   * after each kill (e.g. `--resume <dir>` once the run directory exists, else `args` again).
   */
  resumeArgs?: readonly string[] | (() => readonly string[]);
  /** Kills to try; fewer land when the job finishes first. */
  kills: number;
  seed: number;
  /** Progress stored so far (polled while the job runs); with `total`, kill points follow it. */
  progress?: () => number;
  /** Progress of a finished job. */
  total?: number;
  /** Extra delay after a progress target, or the delay after start without progress (ms). */
  delayMs: readonly [number, number];
  /** Per child process (default 120 s). */
  timeoutMs?: number;
  /** Called after each kill (e.g. to check the store's integrity). */
  afterKill?: (kill: number) => void;
}

export interface KillRunReport {
  /** Kill points tried. */
  tried: number;
  /** Kills that hit a running job (the others found it finished). */
  landed: number;
  /** Progress at each landed kill. */
  progressAtKill: number[];
  /** stdout of the run that finished the job. */
  stdout: string;
}

const sleep = (ms: number) => new Promise((done) => setTimeout(done, ms));

/** Runs `agentrl <args>` to the end; resolves with stdout, rejects with stderr on a non-zero exit. */
export async function runAgentrl(args: readonly string[], timeoutMs = 120_000): Promise<string> {
  const child = startAgentrl(args);
  const exit = await child.exited(timeoutMs);
  assert.equal(
    exit.code,
    0,
    `agentrl ${args.join(" ")} exited ${exit.code ?? exit.signal}: ${child.stderr()}`,
  );
  return child.stdout();
}

/** Starts `agentrl <args>` as a child process (stdout and stderr collected). */
export function startAgentrl(args: readonly string[]) {
  const child = spawn(process.execPath, ["bin/agentrl.js", ...args], { stdio: ["ignore", "pipe", "pipe"] });
  let stdout = "";
  let stderr = "";
  child.stdout.on("data", (chunk) => {
    stdout += chunk;
  });
  child.stderr.on("data", (chunk) => {
    stderr += chunk;
  });
  const exit = new Promise<{ code: number | null; signal: NodeJS.Signals | null }>((done) =>
    child.on("exit", (code, signal) => done({ code, signal })),
  );
  return {
    running: () => child.exitCode === null && child.signalCode === null,
    kill: (signal: NodeJS.Signals = "SIGKILL") => child.kill(signal),
    stdout: () => stdout,
    stderr: () => stderr,
    exited: async (timeoutMs: number) => {
      let timedOut = false;
      const timer = setTimeout(() => {
        timedOut = true;
        child.kill("SIGKILL");
      }, timeoutMs);
      try {
        const result = await exit;
        assert.ok(!timedOut, `agentrl ${args.join(" ")} ran past ${timeoutMs} ms: ${stderr}`);
        return result;
      } finally {
        clearTimeout(timer);
      }
    },
  };
}

/** Starts the job, kills it at `kills` seeded points (resuming after each), and lets it finish. */
export async function killAndResume(options: KillRunOptions): Promise<KillRunReport> {
  const rng = createRng(options.seed);
  const timeoutMs = options.timeoutMs ?? 120_000;
  const total = options.total;
  const targets =
    options.progress && total !== undefined && total > 1
      ? Array.from({ length: options.kills }, () => rng.range(1, total - 1)).sort((a, b) => a - b)
      : [];
  const report: KillRunReport = { tried: 0, landed: 0, progressAtKill: [], stdout: "" };
  let args = options.args;
  for (let kill = 0; kill < options.kills; kill++) {
    const [low, high] = options.delayMs;
    const delay = low + rng.next() * (high - low);
    const child = startAgentrl(args);
    const deadline = Date.now() + timeoutMs;
    report.tried++;
    if (options.progress && targets.length > 0) {
      while (child.running() && safely(options.progress) < targets[kill]) {
        if (Date.now() >= deadline) {
          child.kill();
          assert.fail(`agentrl ${args.join(" ")} made no progress in ${timeoutMs} ms: ${child.stderr()}`);
        }
        await sleep(5);
      }
    }
    await sleep(delay);
    if (child.running()) {
      child.kill();
      const exit = await child.exited(timeoutMs);
      if (exit.signal === "SIGKILL") {
        report.landed++;
        report.progressAtKill.push(options.progress ? safely(options.progress) : 0);
        options.afterKill?.(kill);
        args = resumeArgs(options);
        continue;
      }
      assert.equal(exit.code, 0, `agentrl ${args.join(" ")} failed: ${child.stderr()}`);
    } else {
      const exit = await child.exited(timeoutMs);
      assert.equal(
        exit.code,
        0,
        `agentrl ${args.join(" ")} exited ${exit.code ?? exit.signal}: ${child.stderr()}`,
      );
    }
    // The job finished before this kill point: it is complete.
    report.stdout = child.stdout();
    return landedOnce(report);
  }
  report.stdout = await runAgentrl(resumeArgs(options), timeoutMs);
  return landedOnce(report);
}

/** A run no kill hit tests nothing: at least one must land. */
function landedOnce(report: KillRunReport): KillRunReport {
  assert.ok(report.landed > 0, `no kill landed in ${report.tried} tries: the job finished first`);
  return report;
}

function resumeArgs(options: KillRunOptions): readonly string[] {
  const resume = options.resumeArgs ?? options.args;
  return typeof resume === "function" ? resume() : resume;
}

/** Progress read while the job writes: a store still being created (or locked) counts as none. */
function safely(progress: () => number): number {
  try {
    return progress();
  } catch (error) {
    if (/no such table|database is locked|unable to open|not a database/i.test(String(error))) return 0;
    throw error;
  }
}

/** Rows in `table` of the SQLite file at `path` (0 when it does not exist yet), read-only. */
export function countRows(path: string, table: string, where = ""): number {
  if (!existsSync(path)) return 0;
  const database = new DatabaseSync(path, { readOnly: true });
  try {
    const row = database.prepare(`SELECT COUNT(*) AS n FROM ${table} ${where}`).get() as { n: number };
    return Number(row.n);
  } finally {
    database.close();
  }
}

/** `PRAGMA integrity_check` of the SQLite file at `path`: "ok" when sound. */
export function integrityCheck(path: string): string {
  const database = new DatabaseSync(path);
  try {
    const rows = database.prepare("PRAGMA integrity_check").all() as { integrity_check: string }[];
    return rows.map((row) => row.integrity_check).join("; ");
  } finally {
    database.close();
  }
}
