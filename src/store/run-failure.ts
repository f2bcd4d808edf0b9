/**
 * How a run that threw is recorded, the same in every command: `interrupted` when it was stopped on
 * purpose (Ctrl-C or SIGTERM through an AbortSignal, or an AbortError), so `--resume` is the next
 * step; `failed` for any other error. The error's text is the run's summary.
 */
import type { Store } from "./store.ts";

/** `interrupted` for an abort (the signal fired, or the error is an AbortError), else `failed`. */
export function failureStatus(error: unknown, signal?: AbortSignal): "interrupted" | "failed" {
  if (signal?.aborted) return "interrupted";
  return error instanceof Error && error.name === "AbortError" ? "interrupted" : "failed";
}

/**
 * Marks `runId` interrupted or failed after `error`. When that write itself fails (a closed store,
 * a full disk), the error thrown names both, so the run's own error is never hidden by it.
 */
export function finishRunAfterError(store: Store, runId: string, error: unknown, signal?: AbortSignal): void {
  const status = failureStatus(error, signal);
  try {
    store.finishRun(runId, status, { error: String(error) });
  } catch (writeError) {
    throw new Error(
      `could not mark run "${runId}" ${status} (${String(writeError)}) after: ${String(error)}`,
      {
        cause: error,
      },
    );
  }
}
