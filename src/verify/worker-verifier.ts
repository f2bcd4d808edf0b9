/**
 * A synchronous verifier run on worker threads of its own, so that the episode loop's verifier
 * deadline (src/env/judge-answer.ts) is real for it: JavaScript busy on the main thread cannot be
 * interrupted, a worker can be terminated. The `math`, `choice`, `em` and `f1` verifiers run this
 * way (the CAS and the answer-extraction regexes see untrusted model text).
 *
 * Up to `maxWorkers` workers (default 2), started on demand and unreferenced while idle (they never
 * keep a process alive); each judges one answer at a time. A call whose `signal` aborts while it
 * runs terminates its worker, and one that aborts while waiting is dropped. With two workers, one
 * answer stuck until its deadline does not hold up the others. A verifier's `ClassifiedError` keeps
 * its failure across the thread.
 */
import { Worker } from "node:worker_threads";
import { ClassifiedError, type Failure } from "../types/failure.ts";
import type { Task } from "../types/task.ts";
import type { FromVerifierWorker, ToVerifierWorker } from "./verifier-worker.ts";

const WORKER_FILE = new URL("./verifier-worker.ts", import.meta.url);

export interface WorkerVerifier {
  (task: Task, answer: string | null, context?: { signal?: AbortSignal }): Promise<boolean>;
  /** Ends the workers (a later call starts others); calls not yet judged are rejected. */
  close(): Promise<void>;
}

interface Job {
  id: number;
  task: Task;
  answer: string | null;
  signal?: AbortSignal;
  resolve: (correct: boolean) => void;
  reject: (error: unknown) => void;
}

interface Slot {
  worker: Worker;
  ready: Promise<void>;
  job: Job | null;
}

/** The verifier exported as `exportName` by the module at `moduleURL`, run on worker threads. */
export function createWorkerVerifier(moduleURL: URL, exportName: string, maxWorkers = 2): WorkerVerifier {
  const slots: Slot[] = [];
  const queue: Job[] = [];
  let nextId = 0;

  const start = (): Slot => {
    const worker = new Worker(WORKER_FILE, { workerData: { moduleURL: moduleURL.href, exportName } });
    let started!: () => void;
    let failed!: (error: unknown) => void;
    const slot: Slot = {
      worker,
      ready: new Promise<void>((done, fail) => {
        started = done;
        failed = fail;
      }),
      job: null,
    };
    slot.ready.catch(() => {});
    worker.on("message", (message: FromVerifierWorker) => {
      if (message.id === -1) return started();
      const job = slot.job;
      if (!job || message.id !== job.id) return;
      slot.job = null;
      if ("correct" in message) job.resolve(message.correct);
      else if (message.error.failure) job.reject(new ClassifiedError(message.error.failure as Failure));
      else job.reject(new Error(`the ${exportName} verifier threw ${message.error.message}`));
      pump();
    });
    const gone = (error: unknown) => {
      failed(error);
      drop(slot, error);
    };
    worker.on("error", gone);
    worker.on("exit", () => gone(new Error(`the ${exportName} verifier's worker exited`)));
    slots.push(slot);
    return slot;
  };

  /** The slot's worker is gone (ended, crashed or terminated): its job fails, the rest go on. */
  const drop = (slot: Slot, error: unknown) => {
    const index = slots.indexOf(slot);
    if (index < 0) return;
    slots.splice(index, 1);
    const job = slot.job;
    slot.job = null;
    job?.reject(error);
    pump();
  };

  const pump = () => {
    while (queue.length > 0) {
      const job = queue[0];
      if (job.signal?.aborted) {
        queue.shift();
        job.reject(job.signal.reason);
        continue;
      }
      const slot = slots.find((s) => s.job === null) ?? (slots.length < maxWorkers ? start() : null);
      if (!slot) break;
      queue.shift();
      slot.job = job;
      slot.worker.ref();
      slot.ready.then(() => {
        if (slot.job === job)
          slot.worker.postMessage({
            id: job.id,
            task: job.task,
            answer: job.answer,
          } satisfies ToVerifierWorker);
      });
    }
    for (const slot of slots) if (slot.job === null) slot.worker.unref();
  };

  const verify = (task: Task, answer: string | null, context?: { signal?: AbortSignal }) =>
    new Promise<boolean>((resolve, reject) => {
      const signal = context?.signal;
      const job: Job = { id: nextId++, task, answer, ...(signal ? { signal } : {}), resolve, reject };
      signal?.addEventListener(
        "abort",
        () => {
          const slot = slots.find((s) => s.job === job);
          if (slot) {
            // Stuck or not, the verdict is no longer wanted: the thread goes, and its work with it.
            drop(slot, signal.reason);
            void slot.worker.terminate();
            return;
          }
          const waiting = queue.indexOf(job);
          if (waiting >= 0) {
            queue.splice(waiting, 1);
            reject(signal.reason);
          }
        },
        { once: true },
      );
      queue.push(job);
      pump();
    });

  return Object.assign(verify, {
    async close() {
      const closed = new Error(`the ${exportName} verifier was closed`);
      for (const job of queue.splice(0)) job.reject(closed);
      const ending = slots.splice(0);
      for (const slot of ending) slot.job?.reject(closed);
      await Promise.all(ending.map((slot) => slot.worker.terminate()));
    },
  });
}
