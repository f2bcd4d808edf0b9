/**
 * The worker side of the `code` tool (code.ts): runs one piece of model-written JavaScript in a
 * fresh QuickJS runtime compiled to WebAssembly and posts one `SandboxReport` back. The worker
 * exists so that the host can always kill a run (`worker.terminate()`): QuickJS checks its
 * interrupt deadline only between bytecodes, and a run that thrashes the garbage collector near
 * the memory limit, or a native call that loops, would otherwise block the host's event loop. It
 * also gives QuickJS a native stack of known depth (see `stackBytes` in code.ts).
 *
 * The only capability the guest gets is `console.*`, which appends to a bounded output buffer; bare
 * QuickJS has no `require`, `process`, `fetch`, file system, timers or module loader.
 */
import { parentPort, workerData } from "node:worker_threads";
import { getQuickJS, shouldInterruptAfterDeadline } from "quickjs-emscripten";

/** What the host sends (as `workerData`). */
export interface SandboxRequest {
  code: string;
  timeoutMs: number;
  memoryBytes: number;
  stackBytes: number;
  maxOutputChars: number;
}

/** What the worker posts: `started` once the runtime exists (the host's clock starts), then the report. */
export type SandboxMessage = { type: "started" } | ({ type: "report" } & SandboxReport);

export interface SandboxReport {
  outcome: "ok" | "error" | "timeout";
  /** Text printed with `console.*`, at most `maxOutputChars` characters. */
  output: string;
  truncated: boolean;
  /** The completion value shown as a REPL would (absent when it is `undefined`). */
  value?: string;
  /** `Name: message (line L)` of an uncaught error. */
  error?: string;
}

// Formatting runs inside the guest (it only sees guest values); a hostile getter or toJSON is
// still under the deadline. Strings print raw in console output and quoted as a completion value.
// A line is cut to the output limit inside the guest, so a huge string never crosses to the host.
const PRELUDE = `((limit) => {
  const print = globalThis.__agentrl_print;
  delete globalThis.__agentrl_print;
  const show = (value, raw) => {
    try {
      if (typeof value === "string") return raw ? value : JSON.stringify(value);
      if (typeof value === "bigint") return value + "n";
      if (typeof value === "function") return "[Function" + (value.name ? " " + value.name : "") + "]";
      if (value === null || typeof value !== "object") return String(value);
      if (value instanceof Error) return value.name + ": " + value.message;
      const text = JSON.stringify(value, (key, item) => (typeof item === "bigint" ? item + "n" : item));
      return text === undefined ? String(value) : text;
    } catch (error) {
      try { return String(value); } catch { return "[value]"; }
    }
  };
  const log = (...args) => { print(args.map((arg) => show(arg, true)).join(" ").slice(0, limit + 1)); };
  globalThis.console = { log, info: log, warn: log, error: log, debug: log };
  return (value) => show(value, false).slice(0, limit + 1);
})`;

function errorText(error: unknown): string {
  if (typeof error === "object" && error !== null && "message" in error) {
    const { name, message, stack } = error as { name?: unknown; message?: unknown; stack?: unknown };
    const where = typeof stack === "string" ? /code\.js:(\d+)/.exec(stack) : null;
    const head = `${typeof name === "string" && name ? name : "Error"}: ${String(message)}`;
    return where ? `${head} (line ${where[1]})` : head;
  }
  return `Uncaught ${typeof error === "string" ? error : (JSON.stringify(error) ?? String(error))}`;
}

/** Console output so far (module state, so a run that crashes the worker still reports it). */
const printed = { output: "", truncated: false };

async function run(request: SandboxRequest): Promise<SandboxReport> {
  const QuickJS = await getQuickJS();
  const runtime = QuickJS.newRuntime();
  runtime.setMemoryLimit(request.memoryBytes);
  runtime.setMaxStackSize(request.stackBytes);
  const context = runtime.newContext();
  const print = context.newFunction("__agentrl_print", (line) => {
    if (printed.truncated) return;
    const text = `${context.getString(line)}\n`;
    if (printed.output.length + text.length > request.maxOutputChars) {
      printed.output += text.slice(0, request.maxOutputChars - printed.output.length);
      printed.truncated = true;
    } else {
      printed.output += text;
    }
  });
  context.setProp(context.global, "__agentrl_print", print);
  print.dispose();
  const show = context.unwrapResult(context.evalCode(`${PRELUDE}(${request.maxOutputChars})`, "prelude.js"));

  parentPort!.postMessage({ type: "started" } satisfies SandboxMessage);
  const deadline = Date.now() + request.timeoutMs;
  runtime.setInterruptHandler(shouldInterruptAfterDeadline(deadline));
  const report = (outcome: SandboxReport["outcome"], extra: Partial<SandboxReport> = {}): SandboxReport => ({
    outcome,
    ...printed,
    ...extra,
  });
  const failure = (errorHandle: { dispose(): void }) => {
    const error = context.dump(errorHandle as never);
    errorHandle.dispose();
    const interrupted =
      typeof error === "object" &&
      error !== null &&
      (error as { message?: unknown }).message === "interrupted";
    return interrupted || Date.now() >= deadline
      ? report("timeout")
      : report("error", { error: errorText(error) });
  };

  const result = context.evalCode(request.code, "code.js");
  if (result.error) return failure(result.error);
  // Settle promise callbacks (async functions, .then) until none remain or the deadline stops them.
  for (;;) {
    const jobs = runtime.executePendingJobs(1000);
    if (jobs.error) {
      result.value.dispose();
      return failure(jobs.error);
    }
    if (jobs.value === 0) break;
  }
  let completion = result.value;
  const state = context.getPromiseState(completion);
  if (state.type === "rejected") {
    completion.dispose();
    return failure(state.error);
  }
  if (state.type === "fulfilled" && !state.notAPromise) {
    completion.dispose();
    completion = state.value;
  }
  if (state.type === "pending") {
    completion.dispose();
    return report("ok", { value: "Promise { <pending> }" });
  }
  if (context.typeof(completion) === "undefined") {
    completion.dispose();
    return report("ok");
  }
  const shown = context.callFunction(show, context.undefined, completion);
  completion.dispose();
  if (shown.error) return failure(shown.error);
  const text = context.getString(shown.value);
  shown.value.dispose();
  const value =
    text.length > request.maxOutputChars ? `${text.slice(0, request.maxOutputChars)} [truncated]` : text;
  // The worker exits after posting, which frees the runtime and its memory with it.
  return report("ok", { value });
}

if (parentPort && (workerData as { agentrlCodeSandbox?: SandboxRequest } | null)?.agentrlCodeSandbox) {
  const request = (workerData as { agentrlCodeSandbox: SandboxRequest }).agentrlCodeSandbox;
  let report: SandboxReport;
  try {
    report = await run(request);
  } catch (error) {
    // A native stack overflow or a QuickJS abort escapes as a host exception; the worker dies with it.
    const message = error instanceof Error ? error.message : String(error);
    report = {
      outcome: "error",
      ...printed,
      error: /call stack/i.test(message) ? "InternalError: stack overflow" : "InternalError: sandbox failure",
    };
  }
  parentPort.postMessage({ type: "report", ...report } satisfies SandboxMessage);
}
