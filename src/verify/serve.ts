/**
 * `agentrl verify serve`: our verifiers over HTTP, for reward functions that live in another
 * process (verl's `compute_score`, src/verl/templates/agentrl_reward.py).
 *
 *   POST /verify  { answer: string | null,
 *                   task?: Task | string (JSON),      the whole task (answer, aliases, tests, …)
 *                   task_id?: string,                 else a task of the server's --tasks set
 *                   ground_truth?: string,            else the answer alone (text/math verifiers)
 *                   verifier?: "math" | … | "world" } default: the server's --verifier
 *   → 200 { correct: boolean, score: 1 | 0, verifier, task_id }
 *   GET /health → { ok: true, verifiers: [...] }
 *
 * The door checks of src/http/boundary.ts (Host, Origin, application/json, timeouts); binds
 * 127.0.0.1 unless told otherwise, and another address only with a token (or `allowRemote`); with a
 * token every request needs `Authorization: Bearer <token>`. Bad requests answer 400 naming the
 * field and the valid values. The answer is untrusted model text: the verifiers parse it with
 * bounded parsers, and `code` runs it in the Python sandbox only.
 */
import type { IncomingMessage, Server, ServerResponse } from "node:http";
import type { AddressInfo } from "node:net";
import { checkBind, HostPolicy } from "../http/boundary.ts";
import { authorized, createJsonServer, readJson, sendJson, sha256 } from "../http/json.ts";
import { RequestError } from "../http/request-error.ts";
import type { Task } from "../types/task.ts";
import { checkAnswer } from "../world/index.ts";
import { getVerifier, VERIFIER_NAMES, type Verifier } from "./index.ts";

/** Verifier names the service takes: ours, plus `world` (the embedded world's answer check). */
export const SERVED_VERIFIERS = [...VERIFIER_NAMES, "world"] as const;
export type ServedVerifierName = (typeof SERVED_VERIFIERS)[number];

export function servedVerifier(name: string): Verifier {
  if (name === "world") return checkAnswer;
  if (!(SERVED_VERIFIERS as readonly string[]).includes(name))
    throw new Error(`unknown verifier "${name}" (valid: ${SERVED_VERIFIERS.join(", ")})`);
  return getVerifier(name);
}

export interface VerifyServeOptions {
  host?: string;
  port?: number;
  token?: string;
  /** Allow a non-loopback host without a token (warns). */
  allowRemote?: boolean;
  /** Host names answered besides loopback and the bound address (`--allow-host`). */
  allowHosts?: readonly string[];
  /** Verifier of requests that name none. */
  verifier: ServedVerifierName;
  /** Tasks a request may name by `task_id`. */
  tasks?: readonly Task[];
  maxBodyBytes?: number;
  log?: (line: string) => void;
}

export interface VerifyResponse {
  correct: boolean;
  score: number;
  verifier: string;
  task_id: string | null;
}

function bad(message: string, param: string): RequestError {
  return new RequestError(400, message, param);
}

/** Scores one request (exported for in-process use and tests). */
export async function verifyRequest(
  body: unknown,
  options: Pick<VerifyServeOptions, "verifier" | "tasks">,
  byId: ReadonlyMap<string, Task> = new Map((options.tasks ?? []).map((task) => [task.id, task])),
): Promise<VerifyResponse> {
  if (body === null || typeof body !== "object" || Array.isArray(body))
    throw bad("the request body must be a JSON object", "body");
  const request = body as Record<string, unknown>;
  const answer = request.answer;
  if (answer !== null && typeof answer !== "string") throw bad("answer must be a string or null", "answer");
  const name = request.verifier ?? options.verifier;
  if (typeof name !== "string" || !(SERVED_VERIFIERS as readonly string[]).includes(name))
    throw bad(`verifier must be one of ${SERVED_VERIFIERS.join(", ")}`, "verifier");
  let task: Task | undefined;
  if (request.task !== undefined && request.task !== null) {
    let raw = request.task;
    if (typeof raw === "string") {
      try {
        raw = JSON.parse(raw);
      } catch {
        throw bad("task is a string but not JSON", "task");
      }
    }
    if (raw === null || typeof raw !== "object" || typeof (raw as Task).answer !== "string")
      throw bad("task must be an agentrl task object with a string answer", "task");
    task = raw as Task;
  } else if (typeof request.task_id === "string") {
    task = byId.get(request.task_id);
    if (!task) throw bad(`task_id "${request.task_id}" is not in the server's task set`, "task_id");
  } else if (typeof request.ground_truth === "string") {
    task = { id: "ground-truth", question: "", answer: request.ground_truth, family: "" };
  } else {
    throw bad("give task, task_id or ground_truth", "task");
  }
  if (typeof request.ground_truth === "string" && request.task !== undefined && request.task !== null) {
    const accepted = [task.answer, ...(task.aliases ?? [])];
    if (!accepted.includes(request.ground_truth))
      throw bad("ground_truth differs from the task's answer and aliases", "ground_truth");
  }
  const correct = Boolean(await servedVerifier(name)(task, answer as string | null));
  return {
    correct,
    score: correct ? 1 : 0,
    verifier: name,
    task_id: task.id === "ground-truth" ? null : task.id,
  };
}

export interface RunningVerifyServer {
  server: Server;
  url: string;
  close(): Promise<void>;
}

/** Starts the service; resolves once it listens. */
export async function serveVerify(options: VerifyServeOptions): Promise<RunningVerifyServer> {
  const host = options.host ?? "127.0.0.1";
  const tokenDigest = options.token ? sha256(options.token) : null;
  const byId = new Map((options.tasks ?? []).map((task) => [task.id, task]));
  const maxBody = options.maxBodyBytes ?? 4 * 1024 * 1024;
  const log = options.log ?? ((line: string) => console.error(line));
  const warning = checkBind("agentrl verify", host, { token: options.token, insecure: options.allowRemote });
  if (warning) log(warning);
  const handle = async (req: IncomingMessage, res: ServerResponse) => {
    if (tokenDigest && !authorized(req.headers.authorization, tokenDigest))
      throw new RequestError(401, "a bearer token is required (Authorization: Bearer <token>)");
    const path = new URL(req.url ?? "/", "http://localhost").pathname;
    if (path === "/health" && req.method === "GET") {
      sendJson(res, 200, { ok: true, verifiers: SERVED_VERIFIERS, default: options.verifier });
      return;
    }
    if (path !== "/verify") throw new RequestError(404, "not found: POST /verify or GET /health");
    if (req.method !== "POST") throw new RequestError(405, "POST /verify takes POST only");
    sendJson(res, 200, await verifyRequest(await readJson(req, maxBody), options, byId));
  };
  const server = createJsonServer(handle, {
    label: "agentrl verify",
    log,
    hosts: new HostPolicy(host, options.allowHosts),
  });
  await new Promise<void>((resolve, reject) => {
    server.once("error", reject);
    server.listen(options.port ?? 8301, host, () => resolve());
  });
  const { port } = server.address() as AddressInfo;
  return {
    server,
    url: `http://${host.includes(":") ? `[${host}]` : host}:${port}`,
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}
