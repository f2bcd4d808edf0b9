/**
 * Recipe stages run in child processes. jax-js's wasm heap only grows within a process (it is
 * capped at 4 GiB), and a recipe loads a dozen models, trains ten of them and samples tens of
 * thousands of episodes: in one process the heap of earlier stages would be the next stage's OOM.
 *
 * On the ONNX Runtime engine (the default) a child runs several stages one after another: the
 * models' activations live in ONNX Runtime, not in the wasm heap, and a child that is kept saves
 * each later stage the start (loading the modules, ~1 s) and the programs it shares with earlier
 * ones (tracing, converting and building the same scoring, prefill and decode sessions). A child is
 * retired after an error, after `MAX_STAGES_PER_CHILD` stages, or once its memory passes
 * `RETIRE_RSS_BYTES`; on jax-js every stage gets a fresh child, as before. Children are kept per
 * thread count (a stage's share of the cores, given to ONNX Runtime when a child starts).
 *
 * The parent sends `{ config, stage, results }` (the results of the stages this one reads); the
 * child rebuilds the plan from the config, runs that one stage in its folder, and answers with
 * progress messages and then the result (or the error). SIGINT (Ctrl-C reaches the whole process
 * group) aborts the running stage's signal, so trainers save a checkpoint before the child exits;
 * an idle child just exits.
 */
import { type ChildProcess, fork } from "node:child_process";
import { fileURLToPath } from "node:url";
import { engineName } from "../engine/backend.ts";
import { parseRecipeConfig, type RecipeConfig } from "./config.ts";
import { recipeStages } from "./pipeline.ts";
import type { StageContext, StageResults, StageSpec } from "./stages.ts";

interface StartMessage {
  type: "start";
  config: RecipeConfig;
  stage: string;
  dir: string;
  results: StageResults;
}

type ChildMessage =
  | { type: "progress"; fraction: number; info?: string }
  | { type: "done"; result: unknown; rss: number }
  | { type: "error"; message: string; stack?: string };

const CHILD_SCRIPT = fileURLToPath(import.meta.url);

/** Stages one child runs before it is replaced. */
export const MAX_STAGES_PER_CHILD = 12;
/** A child whose resident memory passes this after a stage is replaced. */
export const RETIRE_RSS_BYTES = 3 * 2 ** 30;

type Worker = { child: ChildProcess; threads: number | undefined; stages: number };

/**
 * A stage executor for `runStages` that runs each stage of `config`'s plan in a child process,
 * reusing idle children on ONNX Runtime (`reuse`, default: when that is the engine and
 * AGENTRL_RECIPE_FRESH_CHILDREN is not 1). `close()` ends the children; call it when the stages
 * are done.
 */
export function childProcessExecutor(config: RecipeConfig, options: { reuse?: boolean } = {}) {
  const reuse =
    options.reuse ?? (engineName() === "onnx" && process.env.AGENTRL_RECIPE_FRESH_CHILDREN !== "1");
  const idle: Worker[] = [];
  const live = new Set<ChildProcess>();

  const spawn = (threads: number | undefined): Worker => {
    // The stage's share of the cores goes to ONNX Runtime's thread pool (it runs the models).
    const env = threads ? { ...process.env, AGENTRL_ORT_THREADS: String(threads) } : process.env;
    const child = fork(CHILD_SCRIPT, [], { stdio: ["ignore", "inherit", "inherit", "ipc"], env });
    live.add(child);
    child.on("exit", () => {
      live.delete(child);
      const at = idle.findIndex((worker) => worker.child === child);
      if (at >= 0) idle.splice(at, 1);
    });
    return { child, threads, stages: 0 };
  };
  const take = (threads: number | undefined): Worker => {
    const at = idle.findIndex((worker) => worker.threads === threads); // exited ones leave `idle`
    if (at < 0) return spawn(threads);
    const [worker] = idle.splice(at, 1);
    worker.child.ref();
    worker.child.channel?.ref();
    return worker;
  };
  const release = (worker: Worker, rss: number) => {
    worker.stages++;
    if (!reuse || worker.stages >= MAX_STAGES_PER_CHILD || rss > RETIRE_RSS_BYTES) {
      worker.child.kill();
      return;
    }
    // An idle child does not keep the parent alive.
    worker.child.unref();
    worker.child.channel?.unref();
    idle.push(worker);
  };

  const execute = (stage: StageSpec, context: StageContext, results: StageResults): Promise<unknown> =>
    new Promise((resolve, reject) => {
      const worker = take(context.threads);
      const { child } = worker;
      let settled = false;
      const finish = (error: Error | null, result?: unknown, rss = 0) => {
        if (settled) return;
        settled = true;
        context.signal?.removeEventListener("abort", onAbort);
        child.off("message", onMessage);
        child.off("error", onError);
        child.off("exit", onExit);
        if (error) {
          child.kill();
          reject(error);
        } else {
          release(worker, rss);
          resolve(result);
        }
      };
      const onAbort = () => child.kill("SIGINT");
      const onMessage = (message: ChildMessage) => {
        if (message.type === "progress") context.progress(message.fraction, message.info);
        else if (message.type === "done") finish(null, message.result, message.rss);
        else {
          const error = new Error(message.message);
          if (message.stack) error.stack = message.stack;
          finish(error);
        }
      };
      const onError = (error: Error) => finish(error);
      const onExit = (code: number | null, signal: NodeJS.Signals | null) =>
        finish(
          new Error(`recipe stage "${stage.name}" exited (${signal ?? `code ${code}`}) before finishing`),
        );
      context.signal?.addEventListener("abort", onAbort, { once: true });
      child.on("message", onMessage);
      child.on("error", onError);
      child.on("exit", onExit);
      const dependencies = Object.fromEntries(stage.after.map((name) => [name, results[name]]));
      child.send({
        type: "start",
        config,
        stage: stage.name,
        dir: context.dir,
        results: dependencies,
      } satisfies StartMessage);
    });

  return Object.assign(execute, {
    /** Ends every child (idle ones; a running stage's child too). */
    close(): void {
      for (const child of live) child.kill();
      idle.length = 0;
    },
  });
}

/** The running stage's abort controller in a child (null while idle). */
let running: AbortController | null = null;

async function runStage(message: StartMessage): Promise<void> {
  const send = (reply: ChildMessage) => new Promise<void>((done) => process.send!(reply, () => done()));
  const controller = new AbortController();
  running = controller;
  try {
    // validated again (over its preset): a parent started by an older version may lack newer fields
    const config = parseRecipeConfig(message.config);
    const stage = recipeStages(config).find((candidate) => candidate.name === message.stage);
    if (!stage) throw new Error(`recipe: no stage "${message.stage}" in this config's plan`);
    let lastSent = 0;
    const context: StageContext = {
      dir: message.dir,
      signal: controller.signal,
      progress: (fraction, info) => {
        const now = Date.now();
        if (now - lastSent < 250 && fraction < 1) return;
        lastSent = now;
        process.send!({ type: "progress", fraction, info } satisfies ChildMessage);
      },
    };
    const result = await stage.run(context, message.results);
    running = null;
    await send({ type: "done", result, rss: process.memoryUsage().rss });
    if (controller.signal.aborted) process.exit(0); // interrupted: the recipe is stopping
  } catch (error) {
    const failure = error instanceof Error ? error : new Error(String(error));
    await send({ type: "error", message: failure.message, stack: failure.stack });
    process.exit(0); // the parent starts a clean child for what comes next
  }
}

if (process.send && process.argv[1] === CHILD_SCRIPT) {
  // Ctrl-C, or the parent gone: stop the running stage (it checkpoints and returns), or exit.
  const stop = () => {
    if (running) running.abort();
    else process.exit(0);
  };
  process.on("SIGINT", stop);
  process.on("disconnect", stop);
  process.on("message", (message: StartMessage) => {
    void runStage(message);
  });
}
