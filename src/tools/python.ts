/**
 * `python(code)`: a code interpreter for model-written Python, the tool the paper's models were
 * trained with (arXiv:2510.11701, SandboxFusion there), run in Pyodide (CPython 3 in WebAssembly,
 * with its standard library) in a child process. Model text is never evaluated by the host.
 *
 * Guarantees, per call (python-sandbox.ts and python-worker.ts say how):
 * - a fresh interpreter: each process runs one call and exits; a warm pool keeps Pyodide's load
 *   (2-5 s) off the hot path;
 * - time: the process is killed `timeoutMs` after the program starts → `timeout`;
 * - memory: `memoryBytes` of guest heap (`MemoryError`), and the process's resident size bounded;
 * - stack: deep recursion is Python's `RecursionError`;
 * - output: printed text (stdout and stderr) past `maxOutputChars` is dropped, with a note;
 * - no capabilities: the process runs under Node's permission model (reads of the Pyodide package
 *   only, no writes, no processes, no workers), with code generation from strings disabled, every
 *   socket API replaced by one that throws, `js`/`pyodide_js` removed; the guest's files are an
 *   in-memory file system that dies with the process.
 *
 * The observation has the `code` tool's format (code.ts `observe`): printed text, then
 * `=> <repr>` of the last expression when it is not None, or `Name: message (line L)` for an
 * uncaught exception. Statuses: `ok`, `empty`, `error`, `timeout`.
 */
import { z } from "zod";
import { injectFault } from "../core/faults.ts";
import type { Tool, ToolCallOptions, ToolResult } from "../types/tool.ts";
import { observe } from "./code.ts";
import { type PythonSandboxOptions, type PythonSandboxPool, sharedPythonPool } from "./python-sandbox.ts";
import type { PythonRunReport } from "./python-worker.ts";

export interface PythonToolOptions extends PythonSandboxOptions {
  /** Wall time of the program in milliseconds (default 5000). */
  timeoutMs?: number;
  /** Most characters of printed output kept (default 4000). */
  maxOutputChars?: number;
  /** Longest program accepted, in characters (default 20000). */
  maxCodeLength?: number;
  /** Tool name (default `python`). */
  name?: string;
  /** The pool to run in (default: the process-wide pool for these sandbox options). */
  pool?: PythonSandboxPool;
}

export const pythonArguments = z.object({
  code: z
    .string()
    .describe("Python 3 code to run; print with print(). The value of the last expression is shown too."),
});
export type PythonArguments = z.infer<typeof pythonArguments>;

const DEFAULTS = { timeoutMs: 5000, maxOutputChars: 4000, maxCodeLength: 20_000 };

function positiveInteger(name: string, value: number): number {
  if (!Number.isInteger(value) || value < 1) {
    throw new Error(`python tool: ${name} must be a positive integer, got ${value}`);
  }
  return value;
}

function result(status: ToolResult["status"], content: string): ToolResult {
  return { status, content, injected: false };
}

export function createPythonTool(options: PythonToolOptions = {}): Tool<PythonArguments> {
  const limits = { ...DEFAULTS, ...options };
  positiveInteger("timeoutMs", limits.timeoutMs);
  positiveInteger("maxOutputChars", limits.maxOutputChars);
  positiveInteger("maxCodeLength", limits.maxCodeLength);
  const pool = options.pool ?? sharedPythonPool(options);
  return {
    name: options.name ?? "python",
    description:
      "Run Python 3 (standard library; no files outside memory, no network, no subprocesses) and " +
      `return what it prints and the value of its last expression; limited to ${limits.timeoutMs} ms.`,
    schema: pythonArguments,
    textArgument: "code",
    async call(args, callOptions?: ToolCallOptions): Promise<ToolResult> {
      if (!args.code.trim()) return result("error", "error: empty program");
      if (args.code.length > limits.maxCodeLength) {
        return result("error", `error: program longer than ${limits.maxCodeLength} characters`);
      }
      const fault = callOptions?.key === undefined ? null : injectFault("sandbox-kill", callOptions.key);
      const report = await pool.runCode(
        { code: args.code, maxOutputChars: limits.maxOutputChars },
        limits.timeoutMs,
        callOptions?.signal,
        fault !== null,
      );
      if (fault && report.outcome === "crashed") {
        return { ...observe({ outcome: "crashed" }, limits.timeoutMs), failure: fault.failure };
      }
      switch (report.outcome) {
        case "memory":
          return observe(
            { ...report, outcome: "error", error: "MemoryError: out of memory" },
            limits.timeoutMs,
          );
        case "cancelled":
        case "crashed":
          return observe({ outcome: report.outcome }, limits.timeoutMs);
        case "timeout":
          return observe(
            { outcome: "timeout", output: report.output, truncated: report.truncated },
            limits.timeoutMs,
          );
        default:
          return observe(report as PythonRunReport, limits.timeoutMs);
      }
    },
  };
}
