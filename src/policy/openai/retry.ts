/**
 * Retries of endpoint requests: exponential backoff with full jitter (delay drawn uniformly in
 * [0, min(maxDelay, base · 2^attempt)], the AWS "full jitter" scheme, so many episodes that failed
 * together do not retry together), raised to the server's `retry-after` when it sends one (capped
 * at `maxDelayMs`).
 *
 * Retryable: network errors, timeouts, HTTP 408, 409, 429 and 5xx (what the openai client itself
 * retries). Anything else (400 bad request, 401, 404 unknown model, 422) fails at once: repeating
 * the same request cannot fix it. The openai client's own retries are switched off (`maxRetries:
 * 0`) so this is the only retry loop and its count is exact.
 */
import { APIConnectionError, APIError, APIUserAbortError } from "openai";
import type { Rng } from "../../core/random.ts";

export interface RetryOptions {
  /** Retries after the first attempt (so at most `maxRetries + 1` requests). */
  maxRetries: number;
  /** Base of the exponential backoff, in ms. */
  baseDelayMs: number;
  /** Cap of one delay, in ms. */
  maxDelayMs: number;
  /** Jitter stream (seeded: a run's retry timing is reproducible). */
  rng: Rng;
  signal?: AbortSignal;
  /** Called before each retry (logging, tests). */
  onRetry?: (info: { attempt: number; delayMs: number; error: unknown }) => void;
}

export function isRetryable(error: unknown): boolean {
  if (error instanceof APIUserAbortError) return false;
  if (error instanceof APIConnectionError) return true;
  if (error instanceof APIError) {
    const status = error.status;
    if (status === undefined) return true;
    return status === 408 || status === 409 || status === 429 || status >= 500;
  }
  // Anything else thrown by the transport (a reset socket surfacing as a TypeError) is transient.
  return !(error instanceof Error && error.name === "AbortError");
}

/** Full-jitter delay before retry number `attempt` (0-based). */
export function backoffDelay(
  attempt: number,
  options: Pick<RetryOptions, "baseDelayMs" | "maxDelayMs" | "rng">,
): number {
  const ceiling = Math.min(options.maxDelayMs, options.baseDelayMs * 2 ** attempt);
  return Math.floor(options.rng.next() * ceiling);
}

/** Seconds or HTTP date of a `retry-after` header, in ms; undefined when absent or unreadable. */
export function retryAfterMs(error: unknown): number | undefined {
  if (!(error instanceof APIError) || !error.headers) return undefined;
  const raw = error.headers.get("retry-after-ms") ?? undefined;
  if (raw !== undefined && Number.isFinite(Number(raw))) return Math.max(0, Number(raw));
  const header = error.headers.get("retry-after");
  if (header === null) return undefined;
  const seconds = Number(header);
  if (Number.isFinite(seconds)) return Math.max(0, seconds * 1000);
  const date = Date.parse(header);
  return Number.isFinite(date) ? Math.max(0, date - Date.now()) : undefined;
}

/** Runs `request` until it succeeds, fails with a non-retryable error, or the retries run out. */
export async function withRetries<T>(
  request: (attempt: number) => Promise<T>,
  options: RetryOptions,
): Promise<T> {
  for (let attempt = 0; ; attempt++) {
    try {
      return await request(attempt);
    } catch (error) {
      if (attempt >= options.maxRetries || !isRetryable(error) || options.signal?.aborted) throw error;
      const delayMs = Math.min(
        options.maxDelayMs,
        Math.max(backoffDelay(attempt, options), retryAfterMs(error) ?? 0),
      );
      options.onRetry?.({ attempt, delayMs, error });
      await sleep(delayMs, options.signal);
    }
  }
}

function sleep(ms: number, signal?: AbortSignal): Promise<void> {
  return new Promise((resolve) => {
    const timer = setTimeout(done, ms);
    function done() {
      clearTimeout(timer);
      signal?.removeEventListener("abort", done);
      resolve();
    }
    signal?.addEventListener("abort", done, { once: true });
  });
}
