/**
 * `--agent <module>` slots: one worker thread per slot, each with its own instance of the agent
 * module, its own environment and its own stable gateway URL (slot.ts; the `baseURL` its function
 * is handed on every episode is that URL, so the OpenAI Agents SDK's default provider, which keeps
 * the first client it is given, keeps working), under a heap limit (`memoryMb`, V8's
 * `maxOldGenerationSizeMb`) and the episode's time limit. An agent that throws fails its episode;
 * one that hangs (even in a synchronous loop), exits (`process.exit` ends only its thread), or
 * allocates past the limit has its worker terminated: the episode is an `agent` failure and the
 * next episode starts a fresh worker (a module-level state is lost with it, as with a crash).
 *
 * Why threads and not processes (measured on this project's examples, 2 idle cores, Node 24): a
 * worker is ready in ~235 ms against ~285 ms for a child process, almost all of it the agent's own
 * imports (openai: ~210 ms, @openai/agents: ~700 ms, in either); a message round trip is ~0.2 ms;
 * eight slots of the `openai` example add ~330 MB to this process against ~850 MB for eight
 * processes. A thread contains exactly the failures above; what it cannot contain is a crash of
 * native code (a segfaulting addon, `process.abort()`), which takes the whole run down, and
 * `process.chdir`, which workers do not have. An agent that needs either runs as `--agent-cmd`.
 * Each slot compiles the agent's module graph again (TypeScript stripped by Node, ~1.3 s for one
 * that imports agentrl's world tools on a loaded machine): the worker turns Node's compile cache
 * on, which brings that to ~0.2 s once one slot has filled it.
 *
 * The agent's stdout goes to this process's stderr (so `--json` output stays clean); its stderr is
 * kept with the episode.
 */
import { resolve } from "node:path";
import { pathToFileURL } from "node:url";
import { Worker } from "node:worker_threads";
import { SLOT_EPISODE_HEADER } from "../gateway/episodes.ts";
import {
  type AgentSlot,
  agentFailure,
  agentProcessEnv,
  type SlotEpisode,
  type SlotOutcome,
  tail,
} from "./slot.ts";
import type { FromWorker, ToWorker } from "./slot-worker.ts";

export interface WorkerSlotOptions {
  /** Path of the agent module (as `--agent` named it). */
  path: string;
  /**
   * The slot's gateway URL (`<gateway>/slots/<slot>`, no `/v1`): its `/v1` is the `baseURL` the
   * agent function is handed on every episode, and the worker tags each `fetch` to it with the
   * episode that made it (slot-worker.ts).
   */
  slotURL: string;
  /** The slot's environment on top of this process's (slotEnvironment). */
  env: Record<string, string>;
  /** Heap limit of the slot in MB. */
  memoryMb: number;
}

const WORKER_FILE = new URL("./slot-worker.ts", import.meta.url);

export function workerSlot(options: WorkerSlotOptions): AgentSlot {
  let worker: Worker | null = null;
  let ready: Promise<void> | null = null;
  let stderr = "";
  /** The episode running now: settled by the worker's answer or by its end. */
  let pending: ((outcome: SlotOutcome) => void) | null = null;

  const start = () => {
    const started = new Worker(WORKER_FILE, {
      workerData: {
        moduleURL: pathToFileURL(resolve(options.path)).href,
        slotURL: options.slotURL,
        episodeHeader: SLOT_EPISODE_HEADER,
      },
      env: agentProcessEnv(options.env),
      resourceLimits: { maxOldGenerationSizeMb: options.memoryMb },
      stdout: true,
      stderr: true,
    });
    started.stdout.on("data", (chunk: Buffer) => process.stderr.write(chunk));
    started.stderr.on("data", (chunk: Buffer) => {
      stderr = tail(stderr + chunk.toString("utf8"), 65_536);
    });
    worker = started;
    ready = new Promise<void>((done, fail) => {
      const onMessage = (message: FromWorker) => {
        if (message.type === "ready") done();
        else if (message.type === "load-error")
          fail(new Error(`--agent ${options.path}: cannot import it: ${message.message}`));
        else settle({ answer: message.type === "answer" ? message.answer : undefined, message });
      };
      started.on("message", onMessage);
      started.on("error", (error: Error & { code?: string }) => {
        fail(new Error(`--agent ${options.path}: its slot failed while importing it: ${error.message}`));
        const outOfMemory = error.code === "ERR_WORKER_OUT_OF_MEMORY";
        end(
          started,
          agentFailure(
            outOfMemory ? "agent-out-of-memory" : "agent-crashed",
            outOfMemory
              ? `the agent ran past its memory limit (${options.memoryMb} MB): ${error.message}`
              : `the agent crashed its slot: ${error.message}`,
          ),
        );
      });
      started.on("exit", (code) => {
        fail(new Error(`--agent ${options.path}: its slot exited with code ${code} while importing it`));
        end(started, agentFailure("agent-exited", `the agent exited its slot with code ${code}`));
      });
    });
    // A load failure is reported by `run`; this keeps it from being an unhandled rejection meanwhile.
    ready.catch(() => {});
  };

  const settle = ({ answer, message }: { answer: unknown; message: FromWorker }) => {
    const done = pending;
    pending = null;
    const output = stderr ? { stderr } : {};
    if (message.type === "threw")
      done?.({ failure: agentFailure("agent-threw", `the agent threw: ${message.message}`), ...output });
    else done?.({ answer, ...output });
  };

  /** The worker is gone (or is being terminated): its episode, if any, fails; the next run starts another. */
  const end = (ended: Worker, failure: ReturnType<typeof agentFailure>) => {
    if (worker !== ended) return;
    worker = null;
    ready = null;
    const done = pending;
    pending = null;
    done?.({ failure, ...(stderr ? { stderr } : {}) });
  };

  return {
    async run(episode: SlotEpisode): Promise<SlotOutcome> {
      if (!worker) start();
      const current = worker as unknown as Worker;
      await ready;
      stderr = "";
      const outcome = new Promise<SlotOutcome>((done) => {
        pending = done;
      });
      const timer = setTimeout(() => {
        end(current, agentFailure("agent-timeout", `timeout: the agent ran past ${episode.timeoutMs} ms`));
        void current.terminate();
      }, episode.timeoutMs);
      const onStop = () => {
        end(current, agentFailure("agent-stopped", "the run stopped"));
        void current.terminate();
      };
      if (episode.signal?.aborted) onStop();
      episode.signal?.addEventListener("abort", onStop, { once: true });
      const message: ToWorker = {
        type: "run",
        task: episode.task,
        episodeId: episode.episodeId,
        context: { baseURL: `${options.slotURL}/v1`, apiKey: episode.apiKey, model: episode.model },
      };
      current.postMessage(message);
      try {
        return await outcome;
      } finally {
        clearTimeout(timer);
        episode.signal?.removeEventListener("abort", onStop);
      }
    },
    async close() {
      const current = worker;
      worker = null;
      ready = null;
      await current?.terminate();
    },
  };
}
