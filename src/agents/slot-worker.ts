/**
 * The worker thread of an `--agent` slot (worker-slot.ts): imports the agent module once, in its
 * own module graph and with the slot's own `process.env`, then runs one episode per `run` message.
 * Module-level clients, global default clients (`setDefaultOpenAIClient`) and clients read from the
 * environment therefore belong to this slot alone. It imports nothing of agentrl: a slot starts in
 * the time the agent's own imports take.
 *
 * Every `fetch` to the slot's URL made inside an episode's run (found by the async context the
 * episode runs in, so a retry or a stray call scheduled by that episode is still its own) carries
 * the episode's id in the slot-episode header: the gateway refuses such a call once its episode has
 * ended instead of recording it into the slot's next episode. A client that does not use `fetch`
 * (one on `node:http`) sends no header; its calls belong to the episode the slot runs when they
 * arrive (src/gateway/episodes.ts `SlotTable`).
 */
import { AsyncLocalStorage } from "node:async_hooks";
import { enableCompileCache } from "node:module";
import { parentPort, workerData } from "node:worker_threads";

export type ToWorker =
  | {
      type: "run";
      task: unknown;
      episodeId: string;
      context: { baseURL: string; apiKey: string; model: string };
    }
  | { type: "abort" };
export type FromWorker =
  | { type: "ready" }
  | { type: "load-error"; message: string }
  | { type: "answer"; answer: string | null }
  | { type: "threw"; message: string };

const port = parentPort;
if (!port) throw new Error("slot-worker.ts runs as a worker thread of an --agent slot");
const post = (message: FromWorker) => port.postMessage(message);

function answerText(value: unknown): string | null {
  if (value === null || value === undefined) return null;
  if (typeof value === "string") return value;
  if (typeof value === "number" || typeof value === "boolean") return String(value);
  return JSON.stringify(value) ?? null;
}

/** The episode whose run the current async context belongs to. */
const episodeContext = new AsyncLocalStorage<string>();

/** Wraps the global `fetch` (before the agent's module makes its clients) to tag calls to the slot's URL. */
function tagSlotCalls(slotURL: string, header: string): void {
  const original = globalThis.fetch;
  if (typeof original !== "function") return;
  const prefix = `${slotURL}/`;
  globalThis.fetch = (input: RequestInfo | URL, init?: RequestInit): Promise<Response> => {
    const episodeId = episodeContext.getStore();
    const url = typeof input === "string" ? input : input instanceof URL ? input.href : input.url;
    if (episodeId === undefined || !url.startsWith(prefix)) return original(input, init);
    const headers = new Headers(init?.headers ?? (input instanceof Request ? input.headers : undefined));
    headers.set(header, episodeId);
    return original(input, { ...init, headers });
  };
}

const { slotURL, episodeHeader } = workerData as { slotURL?: string; episodeHeader?: string };
if (slotURL && episodeHeader) tagSlotCalls(slotURL, episodeHeader);

type Agent = (task: unknown, context: unknown) => unknown;
let agent: Agent | null = null;
// Each slot compiles (and strips the types of) the agent's whole module graph again; the compile
// cache shared with the CLI (bin/agentrl.js) makes a slot's start ~5x shorter after the first.
enableCompileCache?.();
try {
  const module = (await import(workerData.moduleURL as string)) as { default?: unknown };
  if (typeof module.default !== "function")
    throw new Error(
      "its default export must be a function async (task, { baseURL, apiKey, model, signal }) => answer",
    );
  agent = module.default as Agent;
  post({ type: "ready" });
} catch (error) {
  post({ type: "load-error", message: (error as Error)?.message ?? String(error) });
}

let controller: AbortController | null = null;
port.on("message", async (message: ToWorker) => {
  if (message.type === "abort") {
    controller?.abort(new Error("the run stopped"));
    return;
  }
  if (!agent) return;
  controller = new AbortController();
  try {
    const run = agent;
    const { signal } = controller;
    const answer = await episodeContext.run(message.episodeId, () =>
      run(message.task, { ...message.context, signal }),
    );
    post({ type: "answer", answer: answerText(answer) });
  } catch (error) {
    post({ type: "threw", message: error instanceof Error ? error.message : String(error) });
  }
});
