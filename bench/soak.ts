/**
 * Soak: bounded loopback load on `agentrl serve` (the embedded models/base-strong checkpoint) and on
 * `agentrl gateway` in front of it, each in its own child process (its memory alone is measured).
 * `CLIENTS` concurrent clients send requests back to back to each server, for a warm-up of
 * `AGENTRL_SOAK_WARMUP_SECONDS` (default 10: serve's memory settles after ~12 s of load, as the
 * decode session and ONNX Runtime size their buffers) and then `AGENTRL_SOAK_SECONDS` measured
 * (default 10). Three requests in four are good (chat completions at a few sampling settings; through the
 * gateway, episodes of three calls then `/end`), one in four hostile (a rebinding Host, a
 * cross-site text/plain POST, a body over the size limit, malformed JSON).
 *
 * Reported per server: p50/p99 latency of the good requests, their error rate, 5xx answers of any
 * request (goal 0), hostile requests answered 2xx (goal 0), and the server's resident memory at the
 * end of the warm-up and at the end, with their ratio (goal within 1.1); all over the measured part.
 */
import { type ChildProcess, spawn } from "node:child_process";
import { readFileSync } from "node:fs";
import { request } from "node:http";
import { fileURLToPath } from "node:url";
import { rolloutTasks } from "../src/env/task-set.ts";

const CLIENTS = 8;
const CHECKPOINT = "models/base-strong";
const AGENTRL = fileURLToPath(new URL("../bin/agentrl.js", import.meta.url));

interface Answer {
  status: number;
  ms: number;
}

/** One request on a fresh connection (node:http: the hostile ones set Host, which fetch cannot). */
function send(url: string, headers: Record<string, string>, body: string): Promise<Answer> {
  const target = new URL(url);
  const started = performance.now();
  return new Promise((resolve) => {
    const req = request(
      {
        hostname: target.hostname,
        port: target.port,
        path: target.pathname,
        method: "POST",
        agent: false,
        headers: { "content-length": Buffer.byteLength(body), ...headers },
      },
      (res) => {
        res.resume();
        res.on("end", () => resolve({ status: res.statusCode ?? 0, ms: performance.now() - started }));
      },
    );
    // A reset (the server closing on a 413 before reading the body) is an answer, not a crash.
    req.on("error", () => resolve({ status: 0, ms: performance.now() - started }));
    req.end(body);
  });
}

const JSON_TYPE = { "content-type": "application/json" };

/** The hostile requests, in turn: each must be refused (never 2xx, never 5xx). */
function hostile(url: string, good: string, index: number): Promise<Answer> {
  switch (index % 4) {
    case 0:
      return send(url, { ...JSON_TYPE, host: "attacker.example" }, good);
    case 1:
      return send(url, { "content-type": "text/plain", origin: "https://evil.example" }, good);
    case 2:
      return send(url, JSON_TYPE, `{"pad":"${"x".repeat(5 << 20)}"}`);
    default:
      return send(url, JSON_TYPE, `${good.slice(0, -3)}…`);
  }
}

/** Resident memory of a process, in MiB (Linux /proc; null elsewhere). */
function rssMb(pid: number | undefined): number | null {
  try {
    const match = /VmRSS:\s+(\d+) kB/.exec(readFileSync(`/proc/${pid}/status`, "utf8"));
    return match ? Number(match[1]) / 1024 : null;
  } catch {
    return null;
  }
}

/** Starts `agentrl <args>` and resolves with the URL it prints (`ready`'s first group). */
async function start(args: string[], ready: RegExp): Promise<{ child: ChildProcess; url: string }> {
  const child = spawn(process.execPath, [AGENTRL, ...args], { stdio: ["ignore", "pipe", "pipe"] });
  const url = await new Promise<string>((resolve, reject) => {
    let seen = "";
    const look = (chunk: Buffer) => {
      seen += chunk.toString("utf8");
      const match = ready.exec(seen);
      if (match) resolve(match[1]);
    };
    child.stdout?.on("data", look);
    child.stderr?.on("data", look);
    child.once("exit", (code) => reject(new Error(`agentrl ${args[0]} exited ${code}: ${seen}`)));
  });
  return { child, url };
}

async function stop(child: ChildProcess) {
  if (child.exitCode !== null) return;
  const exited = new Promise((done) => child.once("exit", done));
  child.kill("SIGTERM");
  await exited;
}

function percentile(sorted: readonly number[], p: number): number | null {
  if (sorted.length === 0) return null;
  return sorted[Math.min(sorted.length - 1, Math.floor(p * sorted.length))];
}

/**
 * `CLIENTS` clients for `warmUpSeconds + seconds`: each sends `good(client, n)` three times in four
 * and a hostile request otherwise. Only the last `seconds` are counted; the server's memory is read
 * when they start and at the end.
 */
async function soak(
  name: string,
  pid: number | undefined,
  timing: { warmUpSeconds: number; seconds: number },
  good: (client: number, n: number) => { url: string; body: string },
): Promise<Record<string, number | null>> {
  const latencies: number[] = [];
  let goodCount = 0;
  let goodFailed = 0;
  let serverErrors = 0;
  let hostileCount = 0;
  let hostileAccepted = 0;
  const measured = performance.now() + timing.warmUpSeconds * 1000;
  const end = measured + timing.seconds * 1000;
  let rssStart: number | null = null;
  const warmUp = setTimeout(() => {
    rssStart = rssMb(pid);
  }, timing.warmUpSeconds * 1000);
  const client = async (index: number) => {
    for (let n = 0; performance.now() < end; n++) {
      const request = good(index, n);
      const counted = performance.now() >= measured;
      if (n % 4 === 3) {
        const answer = await hostile(request.url, request.body, index + n);
        if (!counted) continue;
        hostileCount++;
        if (answer.status >= 200 && answer.status < 300) hostileAccepted++;
        if (answer.status >= 500) serverErrors++;
      } else {
        const answer = await send(request.url, JSON_TYPE, request.body);
        if (!counted) continue;
        goodCount++;
        latencies.push(answer.ms);
        if (answer.status !== 200) goodFailed++;
        if (answer.status >= 500) serverErrors++;
      }
    }
  };
  await Promise.all(Array.from({ length: CLIENTS }, (_, index) => client(index)));
  clearTimeout(warmUp);
  const rssEnd = rssMb(pid);
  latencies.sort((a, b) => a - b);
  return {
    [`soak_${name}_requests`]: goodCount + hostileCount,
    [`soak_${name}_p50_ms`]: percentile(latencies, 0.5),
    [`soak_${name}_p99_ms`]: percentile(latencies, 0.99),
    [`soak_${name}_error_rate`]: goodCount ? goodFailed / goodCount : null,
    [`soak_${name}_5xx`]: serverErrors,
    [`soak_${name}_hostile`]: hostileCount,
    [`soak_${name}_hostile_accepted`]: hostileAccepted,
    [`soak_${name}_rss_start_mb`]: rssStart,
    [`soak_${name}_rss_end_mb`]: rssEnd,
    [`soak_${name}_rss_ratio`]: rssStart && rssEnd ? rssEnd / rssStart : null,
  };
}

export async function benchSoak(): Promise<Record<string, number | null>> {
  const seconds = Number(process.env.AGENTRL_SOAK_SECONDS ?? 10);
  const warmUpSeconds = Number(process.env.AGENTRL_SOAK_WARMUP_SECONDS ?? 10);
  if (!(seconds > 0)) throw new Error("AGENTRL_SOAK_SECONDS must be a positive number of seconds");
  if (!(warmUpSeconds >= 0)) throw new Error("AGENTRL_SOAK_WARMUP_SECONDS must be a number of seconds >= 0");
  const timing = { warmUpSeconds, seconds };
  const questions = rolloutTasks({ split: "test", count: 64, seed: 7 }).map((task) => task.question);
  const chat = (n: number, client: number) =>
    JSON.stringify({
      model: "base-strong",
      messages: [{ role: "user", content: questions[(client * 31 + n) % questions.length] }],
      max_tokens: 16,
      temperature: [0.5, 0.7, 1][n % 3],
      seed: n,
    });

  const serve = await start(
    ["serve", "--policy", CHECKPOINT, "--port", "0", "--json"],
    /"url":"(http:\/\/127\.0\.0\.1:\d+\/v1)"/,
  );
  const figures: Record<string, number | null> = {};
  try {
    Object.assign(
      figures,
      await soak("serve", serve.child.pid, timing, (client, n) => ({
        url: `${serve.url}/chat/completions`,
        body: chat(n, client),
      })),
    );
    const gateway = await start(
      ["gateway", "--upstream", `openai:${serve.url}#base-strong`, "--port", "0"],
      / at (http:\/\/127\.0\.0\.1:\d+)\/episodes\//,
    );
    try {
      Object.assign(
        figures,
        await soak("gateway", gateway.child.pid, timing, (client, n) => {
          // Episodes of three calls, each ended with /end (the fourth request of a round is hostile).
          const episode = `soak-${client}-${Math.floor(n / 4)}`;
          return n % 4 === 2
            ? { url: `${gateway.url}/episodes/${episode}/end`, body: JSON.stringify({ answer: "done" }) }
            : { url: `${gateway.url}/episodes/${episode}/v1/chat/completions`, body: chat(n, client) };
        }),
      );
    } finally {
      await stop(gateway.child);
    }
  } finally {
    await stop(serve.child);
  }
  return figures;
}
