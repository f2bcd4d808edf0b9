/**
 * Opening a training run for a CLI command: a fresh run directory with the validated config, or,
 * with `--resume <runDir>`, the existing run reopened with the config it was started with (so a
 * resumed run can never silently change its own settings).
 */

import { createRunDirectory, directoryRun, openRunDirectory, type Store } from "../store/index.ts";
import { finishRunAfterError } from "../store/run-failure.ts";
import type { RunKind } from "../store/types.ts";
import { createProgress, type Progress } from "./progress.ts";

export interface OpenedTrainingRun<C> {
  config: C;
  directory: string;
  store: Store;
  runId: string;
}

export function openTrainingRun<C extends object>(options: {
  kind: RunKind;
  /** Run directory to resume, if any. */
  resume?: string;
  /** Root of new run directories. */
  runs: string;
  runId?: string;
  /** Validates a stored config (on resume). */
  parse: (raw: unknown) => C;
  /** The config of a fresh run (validated by the caller). */
  fresh: () => C;
  /** Default run id of a fresh run. */
  defaultId: (config: C) => string;
}): OpenedTrainingRun<C> {
  if (options.resume) {
    const store = openRunDirectory(options.resume);
    const run = store.reopenRun(directoryRun(store, options.resume).id);
    return { config: options.parse(run.config), directory: options.resume, store, runId: run.id };
  }
  const config = options.fresh();
  const created = createRunDirectory({
    kind: options.kind,
    root: options.runs,
    config,
    id: options.runId ?? options.defaultId(config),
  });
  return { config, directory: created.directory, store: created.store, runId: created.run.id };
}

/**
 * Ctrl-C (or SIGTERM, as a scheduler or `kill` sends) for a long command: the first one aborts the
 * returned signal (the job finishes its step or episode, keeps what it stored, and the run is
 * marked interrupted, so `--resume` continues); `dispose` removes the handlers.
 */
export function interruptOnSigint(): { signal: AbortSignal; dispose(): void } {
  const controller = new AbortController();
  const interrupt = () => controller.abort();
  process.once("SIGINT", interrupt);
  process.once("SIGTERM", interrupt);
  return {
    signal: controller.signal,
    dispose: () => {
      process.off("SIGINT", interrupt);
      process.off("SIGTERM", interrupt);
    },
  };
}

/**
 * The shell of a training command around its work: a progress line, Ctrl-C (`signal`), the run
 * finished as completed with what `work` returns, or as interrupted / failed with the error, and
 * the store closed in every case.
 */
export async function runTraining<C, R extends object>(
  run: OpenedTrainingRun<C>,
  options: { label: string; steps: number; quiet: boolean },
  work: (context: { progress: Progress; signal: AbortSignal }) => Promise<R>,
): Promise<R> {
  const progress = createProgress(options.label, options.steps, { quiet: options.quiet });
  const interrupt = interruptOnSigint();
  try {
    const result = await work({ progress, signal: interrupt.signal });
    progress.stop();
    run.store.finishRun(run.runId, "completed", result);
    return result;
  } catch (error) {
    progress.stop();
    finishRunAfterError(run.store, run.runId, error, interrupt.signal);
    throw error;
  } finally {
    interrupt.dispose();
    run.store.close();
  }
}
