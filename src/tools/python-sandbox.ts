/**
 * Python sandboxes: child processes running Pyodide (python-worker.ts) under Node's permission
 * model, kept warm in a pool so that loading Pyodide (2-5 s of CPU) is off the hot path. Each
 * process runs one job and exits, so every call gets a fresh interpreter; the pool starts a
 * replacement as soon as one is taken.
 *
 * Limits, enforced by the host (this process) whatever the guest does:
 * - time: the child is killed `timeoutMs` after it says a run (or a test) started → `timeout`;
 * - memory: the guest's WebAssembly heap is capped inside the child (a `MemoryError` in Python),
 *   V8's heap by `--max-old-space-size`, and the child's resident size is polled (Linux) and the
 *   child killed past `memoryBytes + RSS_HEADROOM_BYTES` → an out-of-memory `error`;
 * - output: the child caps what it sends, and the host kills a child that sends more than
 *   `maxOutputChars` allows (every line it writes is untrusted and parsed with bounds).
 * The child gets no environment variables, no file system writes, no child processes, no workers
 * and no network (python-worker.ts lists the layers). Idle children are unref'd: a warm pool
 * never keeps the host process alive.
 */
import { type ChildProcess, spawn } from "node:child_process";
import { mkdtempSync, readdirSync, readFileSync, rmSync, statSync } from "node:fs";
import { createRequire } from "node:module";
import { availableParallelism, tmpdir } from "node:os";
import { dirname, join, resolve } from "node:path";
import { fileURLToPath } from "node:url";
import type {
  PythonJob,
  PythonRunJob,
  PythonRunReport,
  PythonTestReport,
  PythonTestsJob,
  PythonWorkerMessage,
  PythonWorkerSettings,
} from "./python-worker.ts";

export interface PythonSandboxOptions {
  /** Guest WebAssembly heap cap in bytes (default 256 MiB). */
  memoryBytes?: number;
  /** Warm processes kept ready (default 2). */
  poolSize?: number;
  /** Jobs running at once; more wait (default: the machine's cores, at least `poolSize`). */
  maxRunning?: number;
  /** A folder of pure-Python wheels (`*.whl`) installed in every interpreter, offline. */
  wheelsDir?: string;
}

/** How a job ended when the guest did not report: killed for time or memory, cancelled, or crashed. */
export type HostStop = "timeout" | "memory" | "cancelled" | "crashed";

export const DEFAULT_PYTHON_MEMORY_BYTES = 256 * 1024 * 1024;
const DEFAULT_POOL_SIZE = 2;
/** Resident memory a child may use beyond the guest heap (Pyodide's code, V8, the stdlib). */
const RSS_HEADROOM_BYTES = 384 * 1024 * 1024;
const V8_HEAP_MB = 256;
const RSS_POLL_MS = 100;
/** Time a child may take to load Pyodide before it counts as crashed. */
const START_TIMEOUT_MS = 60_000;
/** Protocol overhead allowed per line on top of the output a child may send. */
const LINE_SLACK_CHARS = 64 * 1024;

const WORKER_PATH = fileURLToPath(new URL("./python-worker.ts", import.meta.url));

/** The installed `pyodide` package's folder (its files are all the child may read). */
function pyodideDir(): string {
  const require = createRequire(import.meta.url);
  return dirname(require.resolve("pyodide/package.json"));
}

function wheelsIn(folder: string): string[] {
  const absolute = resolve(folder);
  if (!statSync(absolute, { throwIfNoEntry: false })?.isDirectory()) {
    throw new Error(`python sandbox: wheels folder ${absolute} does not exist`);
  }
  return readdirSync(absolute)
    .filter((name) => name.endsWith(".whl"))
    .sort()
    .map((name) => join(absolute, name));
}

/** One started child: ready once Pyodide loaded; `lines` delivers its parsed messages. */
interface Sandbox {
  child: ChildProcess;
  ready: Promise<boolean>;
  onMessage: ((message: PythonWorkerMessage) => void) | null;
  onExit: ((stop: HostStop) => void) | null;
  /** Set when the host killed it for memory. */
  stop: HostStop | null;
  exited: boolean;
  stderr: string;
  lineLimit: number;
}

function readRss(pid: number): number | null {
  try {
    const status = readFileSync(`/proc/${pid}/status`, "utf8");
    const match = /VmRSS:\s+(\d+) kB/.exec(status);
    return match ? Number(match[1]) * 1024 : null;
  } catch {
    return null;
  }
}

export class PythonSandboxPool {
  readonly memoryBytes: number;
  readonly poolSize: number;
  private readonly settings: PythonWorkerSettings;
  private readonly readFolders: string[];
  private readonly idle: Sandbox[] = [];
  private readonly maxRunning: number;
  private running = 0;
  private readonly waiting: (() => void)[] = [];
  private closed = false;
  private snapshot: Promise<string | null> | null = null;

  constructor(options: PythonSandboxOptions = {}) {
    this.memoryBytes = options.memoryBytes ?? DEFAULT_PYTHON_MEMORY_BYTES;
    this.poolSize = options.poolSize ?? DEFAULT_POOL_SIZE;
    if (!Number.isInteger(this.memoryBytes) || this.memoryBytes < 64 * 1024 * 1024) {
      throw new Error(`python sandbox: memoryBytes must be an integer ≥ 64 MiB, got ${this.memoryBytes}`);
    }
    if (!Number.isInteger(this.poolSize) || this.poolSize < 0 || this.poolSize > 64) {
      throw new Error(`python sandbox: poolSize must be an integer in [0, 64], got ${this.poolSize}`);
    }
    this.maxRunning = Math.max(options.maxRunning ?? availableParallelism(), this.poolSize, 1);
    const dir = pyodideDir();
    const wheels = options.wheelsDir ? wheelsIn(options.wheelsDir) : [];
    this.settings = { pyodideDir: dir, memoryBytes: this.memoryBytes, wheels };
    this.readFolders = [
      `${dir}/`,
      WORKER_PATH,
      ...(options.wheelsDir ? [`${resolve(options.wheelsDir)}/`] : []),
    ];
  }

  /**
   * Makes the memory snapshot children load from, once per pool, in a private temporary folder, by
   * a child that runs no guest code; null (plain loads) if that fails.
   */
  private makeSnapshot(): Promise<string | null> {
    this.snapshot ??= new Promise<string | null>((resolveSnapshot) => {
      const folder = mkdtempSync(join(tmpdir(), "agentrl-pyodide-"));
      const path = join(folder, "interpreter.snapshot");
      process.once("exit", () => rmSync(folder, { recursive: true, force: true }));
      const child = spawn(
        process.execPath,
        [
          "--permission",
          ...this.readFolders.map((item) => `--allow-fs-read=${item}`),
          `--allow-fs-write=${folder}/`,
          "--no-warnings",
          WORKER_PATH,
          JSON.stringify({ ...this.settings, wheels: [], snapshotPath: path, makeSnapshot: true }),
        ],
        { stdio: "ignore", env: {} },
      );
      // Kept referenced: a caller awaiting its first interpreter must keep the host alive meanwhile.
      const timer = setTimeout(() => child.kill("SIGKILL"), START_TIMEOUT_MS);
      timer.unref();
      child.on("exit", (code) => {
        clearTimeout(timer);
        resolveSnapshot(code === 0 && statSync(path, { throwIfNoEntry: false })?.isFile() ? path : null);
      });
      child.on("error", () => resolveSnapshot(null));
    });
    return this.snapshot;
  }

  /** Starts processes until `poolSize` are warm (or loading); resolves when they are ready. */
  async warm(): Promise<void> {
    await this.startable();
    while (!this.closed && this.idle.length < this.poolSize) this.idle.push(this.start());
    // Awaited loads keep the host alive; idle children again release it once loaded.
    const loading = [...this.idle];
    for (const sandbox of loading) this.idleRefs(sandbox, true);
    await Promise.all(loading.map((sandbox) => sandbox.ready));
    for (const sandbox of loading) if (this.idle.includes(sandbox)) this.idleRefs(sandbox, false);
  }

  /** Kills the idle processes; running jobs finish. */
  close() {
    this.closed = true;
    for (const sandbox of this.idle.splice(0)) sandbox.child.kill("SIGKILL");
  }

  /** Settles the snapshot before the first start (children read it if it exists). */
  private async startable() {
    const path = await this.makeSnapshot();
    if (path && !this.settings.snapshotPath) {
      this.settings.snapshotPath = path;
      this.readFolders.push(path);
    }
  }

  private start(): Sandbox {
    const child = spawn(
      process.execPath,
      [
        "--permission",
        ...this.readFolders.map((path) => `--allow-fs-read=${path}`),
        "--disallow-code-generation-from-strings",
        `--max-old-space-size=${V8_HEAP_MB}`,
        "--no-warnings",
        WORKER_PATH,
        JSON.stringify(this.settings),
      ],
      { stdio: ["pipe", "pipe", "pipe"], env: {} },
    );
    const sandbox: Sandbox = {
      child,
      ready: Promise.resolve(false),
      onMessage: null,
      onExit: null,
      stop: null,
      exited: false,
      stderr: "",
      lineLimit: LINE_SLACK_CHARS,
    };
    let buffered = "";
    child.stdout!.setEncoding("utf8");
    child.stdout!.on("data", (chunk: string) => {
      buffered += chunk;
      for (let newline = buffered.indexOf("\n"); newline >= 0; newline = buffered.indexOf("\n")) {
        const line = buffered.slice(0, newline);
        buffered = buffered.slice(newline + 1);
        let message: unknown;
        try {
          message = JSON.parse(line);
        } catch {
          message = null;
        }
        if (typeof message !== "object" || message === null || Array.isArray(message)) {
          this.kill(sandbox, "crashed");
          return;
        }
        sandbox.onMessage?.(message as PythonWorkerMessage);
      }
      if (buffered.length > sandbox.lineLimit) this.kill(sandbox, "crashed");
    });
    child.stderr!.setEncoding("utf8");
    child.stderr!.on("data", (chunk: string) => {
      if (sandbox.stderr.length < 4096) sandbox.stderr += chunk.slice(0, 4096);
    });
    child.stdin!.on("error", () => {}); // a child that died before reading its job
    // A failed spawn (no process at all) emits "error" and maybe no "exit".
    child.on("error", () => {
      clearInterval(poll);
      if (sandbox.exited) return;
      sandbox.exited = true;
      sandbox.onExit?.(sandbox.stop ?? "crashed");
    });
    const poll = setInterval(() => {
      const rss = readRss(child.pid ?? -1);
      if (rss !== null && rss > this.memoryBytes + RSS_HEADROOM_BYTES) this.kill(sandbox, "memory");
    }, RSS_POLL_MS);
    poll.unref();
    child.on("exit", () => {
      clearInterval(poll);
      if (sandbox.exited) return;
      sandbox.exited = true;
      const stderr = sandbox.stderr;
      // V8 out of memory (a huge JS object built through a proxy) is fatal to the child: report it as memory.
      const stop =
        sandbox.stop ??
        (/heap out of memory|memory limit|out of memory/i.test(stderr) ? "memory" : "crashed");
      sandbox.onExit?.(stop);
    });
    sandbox.ready = new Promise<boolean>((resolveReady) => {
      const timer = setTimeout(() => this.kill(sandbox, "crashed"), START_TIMEOUT_MS);
      timer.unref();
      sandbox.onMessage = (message) => {
        if (message.type === "ready") {
          clearTimeout(timer);
          sandbox.onMessage = null;
          sandbox.onExit = null;
          resolveReady(true);
        } else this.kill(sandbox, "crashed");
      };
      sandbox.onExit = () => {
        clearTimeout(timer);
        resolveReady(false);
      };
    });
    this.idleRefs(sandbox, false);
    return sandbox;
  }

  /** Idle children must not keep the host alive; busy ones must (their job is awaited). */
  private idleRefs(sandbox: Sandbox, busy: boolean) {
    const streams = [sandbox.child.stdout, sandbox.child.stderr, sandbox.child.stdin] as unknown as {
      ref?(): void;
      unref?(): void;
    }[];
    if (busy) {
      sandbox.child.ref();
      for (const stream of streams) stream.ref?.();
    } else {
      sandbox.child.unref();
      for (const stream of streams) stream.unref?.();
    }
  }

  private kill(sandbox: Sandbox, stop: HostStop) {
    sandbox.stop ??= stop;
    sandbox.child.kill("SIGKILL");
  }

  /** A ready process: a warm one if any, else a fresh one (slow); refills the pool. */
  private async acquire(): Promise<Sandbox | null> {
    if (this.closed) throw new Error("python sandbox: the pool is closed");
    await this.startable();
    for (let attempt = 0; attempt < 2; attempt++) {
      // An idle child that died meanwhile (killed from outside) is dropped.
      while (this.idle.length > 0 && this.idle[0].exited) this.idle.shift();
      const sandbox = this.idle.shift() ?? this.start();
      while (this.idle.length < this.poolSize) this.idle.push(this.start());
      this.idleRefs(sandbox, true);
      if ((await sandbox.ready) && !sandbox.exited) return sandbox;
    }
    return null;
  }

  /**
   * Runs one job in a fresh interpreter. `onMessage` sees each message after `ready`; it returns
   * true when the job is complete. The timer restarts at each `started` (one per run or test), and
   * the whole job is bounded by `timeoutMs × (starts + 1)` so a guest that forges messages cannot
   * run forever.
   */
  async runJob(
    job: PythonJob,
    timeoutMs: number,
    onMessage: (message: PythonWorkerMessage) => boolean,
    signal?: AbortSignal,
    killOnStart = false,
  ): Promise<HostStop | null> {
    if (signal?.aborted) return "cancelled";
    if (this.running >= this.maxRunning) await new Promise<void>((resolve) => this.waiting.push(resolve));
    this.running++;
    try {
      return await this.runAcquired(job, timeoutMs, onMessage, signal, killOnStart);
    } finally {
      this.running--;
      this.waiting.shift()?.();
    }
  }

  private async runAcquired(
    job: PythonJob,
    timeoutMs: number,
    onMessage: (message: PythonWorkerMessage) => boolean,
    signal?: AbortSignal,
    killOnStart = false,
  ): Promise<HostStop | null> {
    const sandbox = await this.acquire();
    if (!sandbox) return "crashed";
    // Aborted while a fresh interpreter was starting: the listener below would never fire, and
    // the job would run to its own timeout. Each job's interpreter is killed after it anyway.
    if (signal?.aborted) {
      sandbox.child.kill("SIGKILL");
      return "cancelled";
    }
    const starts = job.type === "tests" ? job.inputs.length : 1;
    sandbox.lineLimit = job.maxOutputChars * 8 + LINE_SLACK_CHARS;
    return new Promise<HostStop | null>((resolveJob) => {
      let settled = false;
      let timer: NodeJS.Timeout | undefined;
      const overall = setTimeout(() => this.kill(sandbox, "timeout"), timeoutMs * (starts + 1) + 5_000);
      const onAbort = () => this.kill(sandbox, "cancelled");
      signal?.addEventListener("abort", onAbort, { once: true });
      const settle = (stop: HostStop | null) => {
        if (settled) return;
        settled = true;
        clearTimeout(timer);
        clearTimeout(overall);
        signal?.removeEventListener("abort", onAbort);
        sandbox.onMessage = null;
        sandbox.onExit = null;
        if (!sandbox.exited) sandbox.child.kill("SIGKILL");
        resolveJob(stop);
      };
      sandbox.onExit = (stop) => settle(stop);
      sandbox.onMessage = (message) => {
        // AGENTRL_FAULTS `sandbox-kill`: the child is really killed once the guest started, and
        // nothing it sent after that is read.
        if (killOnStart) {
          if (message.type === "started") this.kill(sandbox, "crashed");
          return;
        }
        if (message.type === "started") {
          clearTimeout(timer);
          timer = setTimeout(() => this.kill(sandbox, "timeout"), timeoutMs);
        }
        if (onMessage(message)) settle(null);
      };
      sandbox.child.stdin!.write(`${JSON.stringify(job)}\n`);
    });
  }

  /** Runs a tool call; resolves with the guest's report, or how the host stopped it (with output so far). */
  async runCode(
    job: Omit<PythonRunJob, "type">,
    timeoutMs: number,
    signal?: AbortSignal,
    killOnStart = false,
  ): Promise<PythonRunReport | { outcome: HostStop; output: string; truncated: boolean }> {
    let report: PythonRunReport | null = null;
    let output = "";
    const stop = await this.runJob(
      { type: "run", ...job },
      timeoutMs,
      (message) => {
        if (message.type === "out" && typeof message.text === "string") {
          output = (output + message.text).slice(0, job.maxOutputChars);
        } else if (message.type === "report") {
          const { type: _type, ...rest } = message;
          report = rest;
          return true;
        }
        return false;
      },
      signal,
      killOnStart,
    );
    if (report) return boundReport(report, job.maxOutputChars);
    return { outcome: stop ?? "crashed", output, truncated: false };
  }

  /**
   * Runs a program against test inputs, one fresh `__main__` per test, `timeoutMs` per test.
   * `onTest` sees each test's result and returns false to stop early (the child is killed).
   * Tests not run (stopped, timeout, crash) get no result; `stop` says why the run ended early.
   */
  async runTests(
    job: Omit<PythonTestsJob, "type">,
    timeoutMs: number,
    onTest: (report: PythonTestReport) => boolean,
    signal?: AbortSignal,
  ): Promise<{ stop: HostStop | null; ran: number }> {
    let ran = 0;
    let stopped = false;
    const stop = await this.runJob(
      { type: "tests", ...job },
      timeoutMs,
      (message) => {
        if (message.type === "done") return true;
        if (message.type !== "test" || message.index !== ran) return false;
        ran++;
        const report: PythonTestReport = {
          index: message.index,
          outcome: message.outcome === "ok" ? "ok" : "error",
          output: String(message.output ?? "").slice(0, job.maxOutputChars),
          truncated: message.truncated === true,
          ...(typeof message.error === "string" ? { error: message.error.slice(0, 2000) } : {}),
        };
        if (!onTest(report)) {
          stopped = true;
          return true;
        }
        return ran >= job.inputs.length;
      },
      signal,
    );
    return { stop: stopped ? null : stop, ran };
  }
}

/** A report from the child, with its fields checked and bounded (the child is untrusted). */
function boundReport(report: PythonRunReport, limit: number): PythonRunReport {
  const text = (value: unknown, max: number) => String(value ?? "").slice(0, max);
  return {
    outcome: report.outcome === "ok" ? "ok" : "error",
    output: text(report.output, limit),
    truncated: report.truncated === true,
    ...(report.value !== undefined ? { value: text(report.value, limit + 1) } : {}),
    ...(report.error !== undefined ? { error: text(report.error, 2000) } : {}),
  };
}

const shared = new Map<string, PythonSandboxPool>();

/** One pool per settings for the whole process (tools and verifiers share warm interpreters). */
export function sharedPythonPool(options: PythonSandboxOptions = {}): PythonSandboxPool {
  const key = JSON.stringify([
    options.memoryBytes ?? DEFAULT_PYTHON_MEMORY_BYTES,
    options.poolSize ?? DEFAULT_POOL_SIZE,
    options.wheelsDir ? resolve(options.wheelsDir) : null,
  ]);
  let pool = shared.get(key);
  if (!pool) {
    pool = new PythonSandboxPool(options);
    shared.set(key, pool);
  }
  return pool;
}
