/**
 * Each recipe stage runs in its own child process. jax-js's wasm heap only grows within a process
 * (it is capped at 4 GiB), and a recipe loads a dozen models, trains ten of them and samples tens of
 * thousands of episodes: in one process the heap of earlier stages would be the next stage's OOM.
 * A child starts clean and its memory is returned when it exits.
 *
 * The parent sends `{ config, stage, results }` (the results of the stages this one reads); the
 * child rebuilds the plan from the config, runs that one stage in its folder, and answers with
 * progress messages and then the result (or the error). SIGINT (Ctrl-C reaches the whole process
 * group) aborts the stage's signal, so trainers save a checkpoint before the child exits.
 */
import { fork } from "node:child_process";
import { fileURLToPath } from "node:url";
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
  | { type: "done"; result: unknown }
  | { type: "error"; message: string; stack?: string };

const CHILD_SCRIPT = fileURLToPath(import.meta.url);

/** A stage executor for `runStages` that runs each stage of `config`'s plan in a child process. */
export function childProcessExecutor(config: RecipeConfig) {
  return (stage: StageSpec, context: StageContext, results: StageResults): Promise<unknown> =>
    new Promise((resolve, reject) => {
      // The stage's share of the cores goes to ONNX Runtime's thread pool (it runs the models).
      const env = context.threads
        ? { ...process.env, AGENTRL_ORT_THREADS: String(context.threads) }
        : process.env;
      const child = fork(CHILD_SCRIPT, [], { stdio: ["ignore", "inherit", "inherit", "ipc"], env });
      let settled = false;
      const finish = (error: Error | null, result?: unknown) => {
        if (settled) return;
        settled = true;
        context.signal?.removeEventListener("abort", onAbort);
        if (error) reject(error);
        else resolve(result);
      };
      const onAbort = () => child.kill("SIGINT");
      context.signal?.addEventListener("abort", onAbort, { once: true });
      child.on("message", (message: ChildMessage) => {
        if (message.type === "progress") context.progress(message.fraction, message.info);
        else if (message.type === "done") finish(null, message.result);
        else {
          const error = new Error(message.message);
          if (message.stack) error.stack = message.stack;
          finish(error);
        }
      });
      child.on("error", (error) => finish(error));
      child.on("exit", (code, signal) => {
        finish(
          new Error(`recipe stage "${stage.name}" exited (${signal ?? `code ${code}`}) before finishing`),
        );
      });
      const dependencies = Object.fromEntries(stage.after.map((name) => [name, results[name]]));
      child.send({
        type: "start",
        config,
        stage: stage.name,
        dir: context.dir,
        results: dependencies,
      } satisfies StartMessage);
    });
}

async function runChild(message: StartMessage): Promise<void> {
  const send = (reply: ChildMessage) => new Promise<void>((done) => process.send!(reply, () => done()));
  const controller = new AbortController();
  process.once("SIGINT", () => controller.abort());
  process.once("disconnect", () => controller.abort()); // the parent died: checkpoint and stop
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
    await send({ type: "done", result });
  } catch (error) {
    const failure = error instanceof Error ? error : new Error(String(error));
    await send({ type: "error", message: failure.message, stack: failure.stack });
  }
  process.exit(0); // a model's worker pool may keep the event loop alive: the stage is over
}

if (process.send && process.argv[1] === CHILD_SCRIPT) {
  process.once("message", (message: StartMessage) => {
    void runChild(message);
  });
}
