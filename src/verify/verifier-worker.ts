/**
 * The worker thread of an isolated verifier (worker-verifier.ts): imports one synchronous verifier
 * (`workerData.moduleURL`, export `workerData.exportName`) and judges one answer per message. It
 * exists so that the thread it runs on can be terminated: a verifier stuck in a loop on this
 * thread is cut at the episode loop's deadline without stopping the loop.
 */
import { parentPort, workerData } from "node:worker_threads";

export type ToVerifierWorker = { id: number; task: unknown; answer: string | null };
export type FromVerifierWorker =
  | { id: number; correct: boolean }
  | { id: number; error: { message: string; failure?: unknown } };

const port = parentPort;
if (!port) throw new Error("verifier-worker.ts runs as a worker thread of an isolated verifier");
const module = (await import(workerData.moduleURL as string)) as Record<string, unknown>;
const verify = module[workerData.exportName as string];
if (typeof verify !== "function")
  throw new Error(`${workerData.moduleURL}: no function export "${workerData.exportName}"`);

port.on("message", async ({ id, task, answer }: ToVerifierWorker) => {
  let reply: FromVerifierWorker;
  try {
    reply = { id, correct: Boolean(await verify(task, answer)) };
  } catch (error) {
    const failure = (error as { failure?: unknown } | null)?.failure;
    const message = error instanceof Error ? `${error.name}: ${error.message}` : String(error);
    reply = { id, error: { message, ...(failure !== undefined ? { failure } : {}) } };
  }
  port.postMessage(reply);
});
port.postMessage({ id: -1, correct: true }); // ready
