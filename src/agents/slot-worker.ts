/**
 * The worker thread of an `--agent` slot (worker-slot.ts): imports the agent module once, in its
 * own module graph and with the slot's own `process.env`, then runs one episode per `run` message.
 * Module-level clients, global default clients (`setDefaultOpenAIClient`) and clients read from the
 * environment therefore belong to this slot alone. It imports nothing of agentrl: a slot starts in
 * the time the agent's own imports take.
 */
import { enableCompileCache } from "node:module";
import { parentPort, workerData } from "node:worker_threads";

export type ToWorker =
  | { type: "run"; task: unknown; context: { baseURL: string; apiKey: string; model: string } }
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
    const answer = await agent(message.task, { ...message.context, signal: controller.signal });
    post({ type: "answer", answer: answerText(answer) });
  } catch (error) {
    post({ type: "threw", message: error instanceof Error ? error.message : String(error) });
  }
});
