/**
 * What `agentrl eval` and `agentrl eval --agent` share around the run itself: Ctrl-C or SIGTERM stops it
 * (stored episodes stay, and the error says how to resume), and a progress bar with the running
 * accuracy starts once the run knows its size.
 */
import type { EvalProgress } from "../../eval/run-eval.ts";
import { createProgress, type Progress } from "../progress.ts";
import { interruptOnSigint } from "../training-run.ts";

export interface EvalSessionHooks {
  signal: AbortSignal;
  onStart(start: { directory: string | null; total: number }): void;
  onProgress(update: EvalProgress): void;
}

/**
 * Runs `run` with the hooks to pass to the eval. `errorsLabel` names failed episodes in the bar;
 * `resume` is the run folder a `--resume` gave (the message names it if the run has not started).
 */
export async function runEvalSession<R>(
  options: { quiet: boolean; resume?: string; errorsLabel: string },
  run: (hooks: EvalSessionHooks) => Promise<R>,
): Promise<R> {
  const abort = interruptOnSigint();
  let progress: Progress | undefined;
  let runDirectory: string | null = options.resume ?? null;
  try {
    const result = await run({
      signal: abort.signal,
      onStart: ({ directory, total }) => {
        runDirectory = directory;
        progress = createProgress("eval", total, { quiet: options.quiet });
      },
      onProgress: ({ done, correct, policyErrors }) =>
        progress?.update(done, {
          correct: done > 0 ? correct / done : 0,
          ...(policyErrors > 0 ? { [options.errorsLabel]: policyErrors } : {}),
        }),
    });
    progress?.stop();
    return result;
  } catch (error) {
    progress?.stop();
    if (abort.signal.aborted && runDirectory) {
      throw new Error(
        `interrupted; stored episodes are kept: resume with agentrl eval --resume ${runDirectory}`,
      );
    }
    throw error;
  } finally {
    abort.dispose();
  }
}
