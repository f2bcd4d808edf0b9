/**
 * The child-process side of the `python` tool (python.ts) and the code verifier: loads Pyodide
 * (CPython compiled to WebAssembly) once, says `ready`, then runs exactly one job read from stdin
 * and exits. One job per process is what gives every call a fresh interpreter.
 *
 * Pyodide is not a sandbox: any JS proxy hands the guest the host's `Function` constructor, and
 * `js`/`pyodide_js` reach the host's globals. So isolation is the process's, set up by the parent
 * (python-sandbox.ts) and here, in layers:
 * - Node's permission model (`--permission`): reads only of the Pyodide package, this file and an
 *   optional wheels folder; no writes, no child processes, no workers, no addons, no WASI, no
 *   inspector. The guest's files live in Pyodide's in-memory file system.
 * - `--disallow-code-generation-from-strings`: `Function(…)`/`eval` throw, so a JS proxy's
 *   `.constructor` cannot turn text into host code.
 * - Network (which Node 24's permission model does not restrict): before any guest code runs, every
 *   userland way to open a socket is replaced by a function that throws (`net.Socket#connect`,
 *   `net.Server#listen`, `dgram`, `fetch`, `WebSocket`, `process.getBuiltinModule`), and Python's
 *   `socket` module is replaced by one that raises.
 * - An empty `jsglobals`, and `js`/`pyodide_js` removed from `sys.modules` and unregistered.
 * - Memory: `WebAssembly.Memory#grow` refuses to grow the guest's heap past `memoryBytes` (Python
 *   sees a `MemoryError`); the parent also bounds V8's heap and watches the resident size.
 *
 * Protocol (newline-delimited JSON): this process writes `ready`, reads one job line, writes
 * `started`, then `out` chunks (already capped) and one `report` (tool job) or one `test` line per
 * test and `done` (tests job). The parent treats every line as untrusted.
 */
import { constants as fsConstants, readFileSync, writeFileSync } from "node:fs";
import { createInterface } from "node:readline";

/** A tool call: run `code`, show what it prints and the value of its last expression. */
export interface PythonRunJob {
  type: "run";
  code: string;
  maxOutputChars: number;
}

/**
 * A program against tests: for each input, a fresh `__main__` namespace; `stdio` feeds the input as
 * stdin and returns what the program prints; `call` runs the program, then calls `fnName` (a method
 * of `Solution` if the program defines one) with the input's arguments and returns the value as JSON.
 */
export interface PythonTestsJob {
  type: "tests";
  program: string;
  mode: "stdio" | "call";
  fnName?: string;
  /** Per test: stdin text (`stdio`) or a JSON array of arguments (`call`). */
  inputs: string[];
  maxOutputChars: number;
}

export type PythonJob = PythonRunJob | PythonTestsJob;

export interface PythonRunReport {
  outcome: "ok" | "error";
  /** What the program printed (stdout and stderr), at most `maxOutputChars` characters. */
  output: string;
  truncated: boolean;
  /** `repr()` of the last expression's value (absent when it is None or there is none). */
  value?: string;
  /** `Name: message (line L)` of an uncaught exception. */
  error?: string;
}

export interface PythonTestReport {
  index: number;
  outcome: "ok" | "error";
  /** `stdio`: the printed text; `call`: the returned value as JSON. */
  output: string;
  truncated: boolean;
  error?: string;
}

export type PythonWorkerMessage =
  | { type: "ready" }
  | { type: "started"; index?: number }
  | { type: "out"; text: string }
  | ({ type: "report" } & PythonRunReport)
  | ({ type: "test" } & PythonTestReport)
  | { type: "done" };

/** Settings the parent passes as one JSON command-line argument. */
export interface PythonWorkerSettings {
  pyodideDir: string;
  memoryBytes: number;
  /** Wheels (`.whl`) to install before the job, by absolute path; their folder must be readable. */
  wheels: string[];
  /**
   * A memory snapshot of a freshly loaded interpreter: loading from it costs about a quarter of
   * a plain load. With `makeSnapshot`, this process only writes it there (no job, no guest code).
   */
  snapshotPath?: string;
  makeSnapshot?: boolean;
}

function send(message: PythonWorkerMessage) {
  // Writes to a pipe are synchronous on Linux and macOS: what is sent before a kill arrives.
  process.stdout.write(`${JSON.stringify(message)}\n`);
}

function denied(): never {
  throw new Error("network access is disabled in the sandbox");
}

/** Replaces every userland way to open a socket (see the file comment). */
async function disableNetwork() {
  const net = await import("node:net");
  const dgram = await import("node:dgram");
  const tls = await import("node:tls");
  const http = await import("node:http");
  const https = await import("node:https");
  const http2 = await import("node:http2");
  const dns = await import("node:dns");
  for (const proto of [net.Socket.prototype, net.Server.prototype, dgram.Socket.prototype]) {
    for (const name of ["connect", "listen", "bind", "send", "addMembership"]) {
      if (name in proto) Object.defineProperty(proto, name, { value: denied, writable: false });
    }
  }
  for (const module of [
    net.default,
    tls.default,
    http.default,
    https.default,
    http2.default,
    dgram.default,
  ]) {
    for (const name of ["connect", "createConnection", "request", "get", "createSocket", "createServer"]) {
      if (name in module) Object.defineProperty(module, name, { value: denied, writable: false });
    }
  }
  // DNS queries leave the machine too (a name can carry data).
  for (const module of [dns.default, dns.default.promises] as unknown as Record<string, unknown>[]) {
    for (const name of Object.keys(module)) {
      if (typeof module[name] === "function")
        Object.defineProperty(module, name, { value: denied, writable: false });
    }
  }
  for (const name of ["fetch", "WebSocket", "EventSource", "XMLHttpRequest", "require"]) {
    Object.defineProperty(globalThis, name, { value: undefined, writable: false, configurable: false });
  }
  Object.defineProperty(process, "getBuiltinModule", { value: denied, writable: false });
  Object.defineProperty(process, "binding", { value: denied, writable: false });
}

/** Caps the guest's WebAssembly heap: a grow past the cap throws, and emscripten's malloc then fails. */
function capMemory(memoryBytes: number) {
  const grow = WebAssembly.Memory.prototype.grow;
  Object.defineProperty(WebAssembly.Memory.prototype, "grow", {
    value(this: WebAssembly.Memory, pages: number) {
      if (this.buffer.byteLength + pages * 65536 > memoryBytes) throw new RangeError("memory limit");
      return grow.call(this, pages);
    },
    writable: false,
  });
}

// The guest-facing side, in Python. `socket` raises on use; `js`/`pyodide_js` are gone. The error
// line is `Name: message (line L)` with L the last line of the program in the traceback.
const PRELUDE = `
import sys, json, io, traceback, types
for _name in ("js", "pyodide_js"):
    sys.modules.pop(_name, None)

class _NoSocket(types.ModuleType):
    def __getattr__(self, name):
        if name.startswith("__"):
            raise AttributeError(name)
        raise OSError("network access is disabled in the sandbox")
for _name in ("socket", "_socket", "ssl", "_ssl", "select", "selectors"):
    sys.modules[_name] = _NoSocket(_name)

def _agentrl_error(exc, filename):
    line = None
    for frame in traceback.extract_tb(exc.__traceback__):
        if frame.filename == filename:
            line = frame.lineno
    if isinstance(exc, SyntaxError) and exc.filename == filename:
        line = exc.lineno
    head = type(exc).__name__ + (": " + str(exc) if str(exc) else "")
    if isinstance(exc, SyntaxError):
        head = type(exc).__name__ + ": " + str(exc.msg)
    return head + (" (line %d)" % line if line else "")

def _agentrl_flush():
    for stream in (sys.stdout, sys.stderr):
        try:
            stream.flush()
        except BaseException:
            pass

def _agentrl_run(source, limit):
    try:
        return _agentrl_run_inner(source, limit)
    finally:
        _agentrl_flush()

def _agentrl_run_inner(source, limit):
    from pyodide.code import eval_code
    namespace = {"__name__": "__main__", "__builtins__": __builtins__}
    try:
        value = eval_code(source, namespace, return_mode="last_expr", filename="<code>")
    except SystemExit as exc:
        return (None, None if exc.code in (None, 0) else "SystemExit: %s" % exc.code)
    except BaseException as exc:
        return (None, _agentrl_error(exc, "<code>"))
    if value is None:
        return (None, None)
    try:
        shown = repr(value)
    except BaseException as exc:
        return (None, _agentrl_error(exc, "<code>"))
    return (shown[: limit + 1], None)

def _agentrl_test(source, mode, fn_name, test_input):
    # A fresh stdin per test (with .buffer, as sys.stdin.buffer.read() solutions expect).
    sys.stdin = io.TextIOWrapper(io.BytesIO((test_input if mode == "stdio" else "").encode()), encoding="utf-8")
    try:
        return _agentrl_test_inner(source, mode, fn_name, test_input)
    finally:
        _agentrl_flush()

def _agentrl_test_inner(source, mode, fn_name, test_input):
    namespace = {"__name__": "__main__", "__builtins__": __builtins__}
    try:
        code = compile(source, "<program>", "exec")
        exec(code, namespace)
        if mode == "stdio":
            return (None, None)
        args = json.loads(test_input)
        target = namespace.get("Solution")
        fn = getattr(target(), fn_name) if isinstance(target, type) and hasattr(target, fn_name) else namespace.get(fn_name)
        if not callable(fn):
            return (None, "NameError: no function %s" % fn_name)
        result = fn(*args)
        return (json.dumps(result), None)
    except SystemExit as exc:
        return (None, None if exc.code in (None, 0) else "SystemExit: %s" % exc.code)
    except BaseException as exc:
        return (None, _agentrl_error(exc, "<program>"))
`;

interface Pyodide {
  runPython(code: string): unknown;
  globals: { get(name: string): (...args: unknown[]) => { toJs(): unknown[]; destroy(): void } };
  setStdout(options: { write(bytes: Uint8Array): number }): void;
  setStderr(options: { write(bytes: Uint8Array): number }): void;
  setStdin(options: { error: true } | { stdin: () => string | undefined }): void;
  unregisterJsModule(name: string): void;
  makeMemorySnapshot(): Uint8Array;
  loadPackage(paths: string[], options: { messageCallback(): void; errorCallback(): void }): Promise<unknown>;
}

/** Printed text, capped; `onChunk` streams what is kept to the parent (tool jobs). */
class Output {
  text = "";
  truncated = false;
  private readonly decoder = new TextDecoder();
  private readonly limit: number;
  private readonly onChunk?: (text: string) => void;
  constructor(limit: number, onChunk?: (text: string) => void) {
    this.limit = limit;
    this.onChunk = onChunk;
  }
  write(bytes: Uint8Array): number {
    if (this.truncated) return bytes.length;
    let chunk = this.decoder.decode(bytes, { stream: true });
    if (this.text.length + chunk.length > this.limit) {
      chunk = chunk.slice(0, this.limit - this.text.length);
      this.truncated = true;
    }
    this.text += chunk;
    if (chunk) this.onChunk?.(chunk);
    return bytes.length;
  }
}

async function main() {
  const settings = JSON.parse(process.argv[2] ?? "{}") as PythonWorkerSettings;
  // Pyodide's file-system layer reads fs flag constants through process.binding, which the
  // permission model denies; this answers only that question.
  const host = process as unknown as { binding(name: string): unknown };
  const binding = host.binding;
  host.binding = (name) => (name === "constants" ? { fs: fsConstants } : binding.call(process, name));
  capMemory(settings.memoryBytes);
  const { loadPyodide } = (await import(new URL("pyodide.mjs", `file://${settings.pyodideDir}/`).href)) as {
    loadPyodide(options: object): Promise<Pyodide>;
  };
  const snapshot =
    settings.snapshotPath && !settings.makeSnapshot ? readFileSync(settings.snapshotPath) : undefined;
  const pyodide = await loadPyodide({
    ...(settings.makeSnapshot ? { _makeSnapshot: true } : {}),
    ...(snapshot ? { _loadSnapshot: snapshot } : {}),
    indexURL: `${settings.pyodideDir}/`,
    jsglobals: {},
    // Nothing may come from a CDN: packages load only from local wheel files.
    packageBaseUrl: `${settings.pyodideDir}/`,
    stdout: () => {},
    stderr: () => {},
  });
  if (settings.makeSnapshot && settings.snapshotPath) {
    writeFileSync(settings.snapshotPath, pyodide.makeMemorySnapshot());
    return;
  }
  // Before wheels load: anything that tried a CDN would fail here instead of fetching.
  await disableNetwork();
  if (settings.wheels.length > 0) {
    await pyodide.loadPackage(
      settings.wheels.map((path) => `file://${path}`),
      { messageCallback: () => {}, errorCallback: () => {} },
    );
  }
  pyodide.unregisterJsModule("js");
  pyodide.unregisterJsModule("pyodide_js");
  pyodide.runPython(PRELUDE);
  pyodide.setStdin({ error: true });
  send({ type: "ready" });

  const lines = createInterface({ input: process.stdin });
  const line = await new Promise<string>((resolve) => lines.once("line", resolve));
  lines.close();
  const job = JSON.parse(line) as PythonJob;
  if (job.type === "run") {
    const stream = new Output(job.maxOutputChars, (text) => send({ type: "out", text }));
    pyodide.setStdout(stream);
    pyodide.setStderr(stream);
    send({ type: "started" });
    const run = pyodide.globals.get("_agentrl_run");
    const result = run(job.code, job.maxOutputChars);
    const [value, error] = result.toJs() as [string | null, string | null];
    result.destroy();
    const base = { output: stream.text, truncated: stream.truncated };
    if (error != null) send({ type: "report", outcome: "error", ...base, error });
    else send({ type: "report", outcome: "ok", ...base, ...(value != null ? { value } : {}) });
  } else {
    const test = pyodide.globals.get("_agentrl_test");
    for (let index = 0; index < job.inputs.length; index++) {
      const output = new Output(job.maxOutputChars);
      pyodide.setStdout(job.mode === "stdio" ? output : new Output(0));
      pyodide.setStderr(new Output(0));
      let stdin: string | undefined = job.mode === "stdio" ? job.inputs[index] : undefined;
      pyodide.setStdin({
        stdin: () => {
          const text = stdin;
          stdin = undefined;
          return text;
        },
      });
      send({ type: "started", index });
      const result = test(job.program, job.mode, job.fnName ?? "", job.inputs[index]);
      const [value, error] = result.toJs() as [string | null, string | null];
      result.destroy();
      const printed = job.mode === "stdio" ? output.text : (value ?? "");
      const truncated = output.truncated || printed.length > job.maxOutputChars;
      const report = { index, output: printed.slice(0, job.maxOutputChars), truncated };
      send(
        error != null
          ? { type: "test", outcome: "error", ...report, error }
          : { type: "test", outcome: "ok", ...report },
      );
    }
    send({ type: "done" });
  }
}

try {
  await main();
  process.exit(0);
} catch (error) {
  // A failure of the worker itself (not of the guest program): the parent reports "sandbox failed".
  process.stderr.write(`${error instanceof Error ? error.message : String(error)}\n`);
  process.exit(70);
}
