/**
 * `code` verifier (LiveCodeBench / APPS / TACO): the program of the answer (code-tests.ts) is run
 * against every test of the task, public and hidden, in the Python sandbox (src/tools/python-
 * sandbox.ts: one fresh interpreter per program, a fresh `__main__` per test, `testTimeoutMs` per
 * test); correct only if every test passes. The first failing test stops the run (the answer is
 * wrong whatever the rest says). Expected outputs never enter the sandbox: the guest returns what
 * it printed or returned, and the host compares, so a program cannot forge a pass.
 *
 * Asynchronous, with at most `concurrency` programs running at once (n samples × many tests stay
 * bounded by the machine, not by the caller's batch). A task without tests in a known shape, or an
 * answer without a program, is incorrect.
 */
import { availableParallelism } from "node:os";
import {
  type PythonSandboxOptions,
  type PythonSandboxPool,
  sharedPythonPool,
} from "../tools/python-sandbox.ts";
import type { Task } from "../types/task.ts";
import { extractProgram, returnMatches, stdoutMatches, taskCodeTests } from "./code-tests.ts";

export interface CodeVerifierOptions extends PythonSandboxOptions {
  /** Wall time of one test in milliseconds (default 6000, LiveCodeBench's). */
  testTimeoutMs?: number;
  /** Programs verified at once (default: the machine's cores, at most 8). */
  concurrency?: number;
  /** Most characters of output kept per test (default 1 MiB of text); more fails the test. */
  maxOutputChars?: number;
  pool?: PythonSandboxPool;
}

/** What happened to one answer, for reports and tests. */
export interface CodeVerdict {
  correct: boolean;
  /** Tests that passed, of `total`. */
  passed: number;
  total: number;
  /** Why it is not correct: no tests, no program, a failed test (its index, hidden or not), a timeout. */
  reason?: string;
}

/** A counting semaphore: at most `limit` holders. */
function semaphore(limit: number) {
  let active = 0;
  const waiting: (() => void)[] = [];
  return async <T>(work: () => Promise<T>): Promise<T> => {
    if (active >= limit) await new Promise<void>((resolve) => waiting.push(resolve));
    active++;
    try {
      return await work();
    } finally {
      active--;
      waiting.shift()?.();
    }
  };
}

export function createCodeVerifier(options: CodeVerifierOptions = {}) {
  const testTimeoutMs = options.testTimeoutMs ?? 6000;
  const maxOutputChars = options.maxOutputChars ?? 1024 * 1024;
  const concurrency = options.concurrency ?? Math.min(8, availableParallelism());
  if (!Number.isInteger(testTimeoutMs) || testTimeoutMs < 1) {
    throw new Error(`code verifier: testTimeoutMs must be a positive integer, got ${testTimeoutMs}`);
  }
  if (!Number.isInteger(concurrency) || concurrency < 1) {
    throw new Error(`code verifier: concurrency must be a positive integer, got ${concurrency}`);
  }
  let pool = options.pool ?? null;
  const limit = semaphore(concurrency);

  /** `signal` (the episode loop's verifier deadline, judge-answer.ts) kills the program's sandbox. */
  async function judge(task: Task, answer: string | null, signal?: AbortSignal): Promise<CodeVerdict> {
    const suite = taskCodeTests(task);
    if (!suite) return { correct: false, passed: 0, total: 0, reason: "the task has no tests" };
    const total = suite.tests.length;
    const program = answer === null ? null : extractProgram(answer);
    if (!program)
      return { correct: false, passed: 0, total, reason: "no fenced python program in the answer" };
    pool ??= sharedPythonPool({ ...options, poolSize: options.poolSize ?? Math.min(concurrency, 4) });
    const sandbox = pool;
    let passed = 0;
    let reason: string | undefined;
    const { stop } = await limit(() =>
      sandbox.runTests(
        {
          program,
          mode: suite.mode,
          ...(suite.fnName ? { fnName: suite.fnName } : {}),
          inputs: suite.tests.map((test) => test.input),
          maxOutputChars,
        },
        testTimeoutMs,
        (report) => {
          const test = suite.tests[report.index];
          const ok =
            report.outcome === "ok" &&
            !report.truncated &&
            (suite.mode === "stdio"
              ? stdoutMatches(report.output, test.output)
              : returnMatches(report.output, test.output));
          if (ok) passed++;
          else {
            const which = `${test.hidden ? "hidden" : "public"} test ${report.index + 1}`;
            reason = report.error ? `${which}: ${report.error}` : `${which}: wrong output`;
          }
          return ok;
        },
        signal,
      ),
    );
    // Cut by the deadline: no verdict (the loop records verifier-timeout), never "wrong".
    if (signal?.aborted) throw signal.reason;
    if (passed === total) return { correct: true, passed, total };
    if (!reason && stop)
      reason = `test ${passed + 1}: ${stop === "timeout" ? `timed out after ${testTimeoutMs} ms` : stop}`;
    return { correct: false, passed, total, ...(reason ? { reason } : {}) };
  }

  const verify = async (
    task: Task,
    answer: string | null,
    context?: { signal?: AbortSignal },
  ): Promise<boolean> => (await judge(task, answer, context?.signal)).correct;
  return Object.assign(verify, { judge });
}

let sharedVerifier: ReturnType<typeof createCodeVerifier> | null = null;

/** The `code` verifier with default options (its sandbox pool starts on first use). */
export function verifyCode(
  task: Task,
  answer: string | null,
  context?: { signal?: AbortSignal },
): Promise<boolean> {
  sharedVerifier ??= createCodeVerifier();
  return sharedVerifier(task, answer, context);
}
