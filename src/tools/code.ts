/**
 * `code(code)`: a code interpreter for model-written JavaScript (the tool of arXiv:2510.11701), run
 * in QuickJS compiled to WebAssembly. Model text is never evaluated by the host's JavaScript engine.
 *
 * Isolation, per call:
 * - a fresh worker thread (code-worker.ts) with a fresh QuickJS runtime and context: nothing
 *   survives from one call to the next, and the worker's exit frees all of its memory;
 * - time: QuickJS's interrupt handler stops the guest at `timeoutMs`; the host kills the worker at
 *   `timeoutMs + KILL_GRACE_MS` whatever it is doing (a guest thrashing the garbage collector at the
 *   memory limit is not interruptible from inside). Both are a `timeout` result;
 * - memory: `memoryBytes` for everything the guest allocates (an allocation past it is an `error`,
 *   `InternalError: out of memory`), plus `resourceLimits` on the worker's own heap;
 * - stack: `stackBytes` of QuickJS stack, on a worker whose native stack (8 MB) is far larger, so a
 *   deep recursion is a guest `InternalError: stack overflow`, never a host stack overflow;
 * - output: `console.*` text past `maxOutputChars` is dropped, with a truncation note;
 * - no capabilities: bare QuickJS has no `require`, `process`, `fetch`, file system, network,
 *   timers or module loader (`import()` fails), and the guest gets nothing but `console`.
 *
 * The observation is the printed text, then `=> <value>` for a completion value other than
 * `undefined` (`42`, `"text"`, JSON for objects), or `Name: message (line L)` for an uncaught error.
 * Statuses: `ok`; `empty` (nothing printed and no value); `error` (an uncaught error, including out
 * of memory and stack overflow); `timeout`. Promises are settled before the value is read
 * (`(async () => …)()` works; top-level `await` is a syntax error in a script).
 *
 * Cost: a worker start, about 80 ms per call on a slow laptop core; the host event loop stays free
 * meanwhile, so concurrent episodes are not blocked.
 */
import { Worker } from "node:worker_threads";
import { z } from "zod";
import { injectFault } from "../core/faults.ts";
import { infraFailure } from "../types/failure.ts";
import type { Tool, ToolCallOptions, ToolResult } from "../types/tool.ts";
import type { SandboxMessage, SandboxReport, SandboxRequest } from "./code-worker.ts";

export interface CodeToolOptions {
  /** Wall time of the guest program in milliseconds (default 2000). */
  timeoutMs?: number;
  /** Memory the guest may allocate, in bytes (default 32 MiB). */
  memoryBytes?: number;
  /** QuickJS stack size in bytes (default 256 KiB, at most 1 MiB). */
  stackBytes?: number;
  /** Most characters of console output kept (default 4000). */
  maxOutputChars?: number;
  /** Longest program accepted, in characters (default 20000). */
  maxCodeLength?: number;
  /** Tool name (default `code`). */
  name?: string;
}

export const codeArguments = z.object({
  code: z
    .string()
    .describe("JavaScript to run; print with console.log. The value of the last expression is shown too."),
});
export type CodeArguments = z.infer<typeof codeArguments>;

/** Time the worker gets past the guest deadline before the host kills it. */
export const KILL_GRACE_MS = 500;
/** Time a worker may take to start QuickJS before the call fails. */
const START_TIMEOUT_MS = 15_000;
const WORKER_STACK_MB = 8;
const MAX_STACK_BYTES = 1024 * 1024;

const DEFAULTS = {
  timeoutMs: 2000,
  memoryBytes: 32 * 1024 * 1024,
  stackBytes: 256 * 1024,
  maxOutputChars: 4000,
  maxCodeLength: 20_000,
};

const WORKER_URL = new URL("./code-worker.ts", import.meta.url);

function positiveInteger(name: string, value: number, max = Number.MAX_SAFE_INTEGER): number {
  if (!Number.isInteger(value) || value < 1 || value > max) {
    throw new Error(`code tool: ${name} must be an integer in [1, ${max}], got ${value}`);
  }
  return value;
}

export function createCodeTool(options: CodeToolOptions = {}): Tool<CodeArguments> {
  const limits = { ...DEFAULTS, ...options };
  positiveInteger("timeoutMs", limits.timeoutMs);
  positiveInteger("memoryBytes", limits.memoryBytes);
  positiveInteger("stackBytes", limits.stackBytes, MAX_STACK_BYTES);
  positiveInteger("maxOutputChars", limits.maxOutputChars);
  positiveInteger("maxCodeLength", limits.maxCodeLength);
  return {
    name: options.name ?? "code",
    description:
      "Run JavaScript in a sandbox (no files, no network, no modules) and return what it prints " +
      `with console.log and the value of its last expression; limited to ${limits.timeoutMs} ms.`,
    schema: codeArguments,
    textArgument: "code",
    async call(args, callOptions?: ToolCallOptions): Promise<ToolResult> {
      if (!args.code.trim()) return result("error", "error: empty program");
      if (args.code.length > limits.maxCodeLength) {
        return result("error", `error: program longer than ${limits.maxCodeLength} characters`);
      }
      // AGENTRL_FAULTS `sandbox-kill`: the worker is really terminated once the guest started.
      const fault = callOptions?.key === undefined ? null : injectFault("sandbox-kill", callOptions.key);
      const outcome = await runSandbox(
        {
          code: args.code,
          timeoutMs: limits.timeoutMs,
          memoryBytes: limits.memoryBytes,
          stackBytes: limits.stackBytes,
          maxOutputChars: limits.maxOutputChars,
        },
        callOptions?.signal,
        fault !== null,
      );
      const observed = observe(outcome, limits.timeoutMs);
      return fault && outcome.outcome === "crashed" ? { ...observed, failure: fault.failure } : observed;
    },
  };
}

/** How the host ended a run that did not report: aborted by the caller, or the worker died. */
type HostOutcome = { outcome: "cancelled" } | { outcome: "crashed" };

function result(status: ToolResult["status"], content: string): ToolResult {
  return { status, content, injected: false };
}

/** The observation of a sandbox report (format in the file comment). */
export function observe(report: SandboxReport | HostOutcome, timeoutMs: number) {
  if (report.outcome === "cancelled") return result("error", "error: cancelled");
  if (report.outcome === "crashed") {
    // The worker died without a report: the sandbox broke, not the program (infra, never scored).
    return {
      ...result("error", "error: the sandbox failed"),
      failure: infraFailure("sandbox-died", "the sandbox worker exited without a report"),
    };
  }
  const lines: string[] = [];
  const printed = report.output.replace(/\n$/, "");
  if (printed) lines.push(printed);
  if (report.truncated) lines.push(`[output truncated]`);
  if (report.outcome === "timeout") {
    lines.push(`error: timed out after ${timeoutMs} ms`);
    return result("timeout", lines.join("\n"));
  }
  if (report.outcome === "error") {
    lines.push(report.error ?? "Error");
    return result("error", lines.join("\n"));
  }
  if (report.value !== undefined) lines.push(`=> ${report.value}`);
  return lines.length === 0 ? result("empty", "(no output)") : result("ok", lines.join("\n"));
}

/** Runs `request` in a fresh worker; resolves with its report, or how the host stopped it. */
function runSandbox(
  request: SandboxRequest,
  signal?: AbortSignal,
  killOnStart = false,
): Promise<SandboxReport | HostOutcome> {
  if (signal?.aborted) return Promise.resolve({ outcome: "cancelled" });
  return new Promise((resolve) => {
    const worker = new Worker(WORKER_URL, {
      workerData: { agentrlCodeSandbox: request },
      // The guest's memory lives in WebAssembly memory (bounded by QuickJS); this bounds the worker's JS.
      resourceLimits: {
        maxOldGenerationSizeMb: 64,
        maxYoungGenerationSizeMb: 16,
        stackSizeMb: WORKER_STACK_MB,
      },
      stdout: true,
      stderr: true,
    });
    let timer = setTimeout(() => settle({ outcome: "crashed" }), START_TIMEOUT_MS);
    let settled = false;
    const onAbort = () => settle({ outcome: "cancelled" });
    signal?.addEventListener("abort", onAbort, { once: true });
    function settle(outcome: SandboxReport | HostOutcome) {
      if (settled) return;
      settled = true;
      clearTimeout(timer);
      signal?.removeEventListener("abort", onAbort);
      void worker.terminate();
      resolve(outcome);
    }
    worker.on("message", (message: SandboxMessage) => {
      if (killOnStart) {
        // Killed as soon as it says anything: a report already queued is never read.
        void worker.terminate();
        return;
      }
      if (message.type === "started") {
        clearTimeout(timer);
        timer = setTimeout(
          () => settle({ outcome: "timeout", output: "", truncated: false }),
          request.timeoutMs + KILL_GRACE_MS,
        );
      } else {
        const { type: _type, ...report } = message;
        settle(report);
      }
    });
    worker.on("error", () => settle({ outcome: "crashed" }));
    worker.on("exit", () => settle({ outcome: "crashed" }));
  });
}
