/**
 * Trajectory writes against a failing disk. A write is one transaction (all or nothing), so one
 * that failed for an infrastructure reason (SQLite busy, locked, an I/O error, a full disk, or an
 * `AGENTRL_FAULTS` `sqlite-write` fault) is retried, up to `STORE_WRITE_ATTEMPTS` in all; then it
 * throws an infra `ClassifiedError` (`store-write-failed`) naming what it wrote. Anything else (a
 * constraint, a bug) throws at once, unchanged.
 */
import { injectFault } from "../core/faults.ts";
import { ClassifiedError, infraFailure } from "../types/failure.ts";

export const STORE_WRITE_ATTEMPTS = 3;

/** SQLite primary result codes of a failed write the same write may survive: BUSY, LOCKED, IOERR, FULL. */
const TRANSIENT_SQLITE_CODES = new Set([5, 6, 10, 13]);

function isTransient(error: unknown): boolean {
  if (error instanceof ClassifiedError) return error.failure.class === "infra";
  const code = (error as { errcode?: unknown } | null)?.errcode;
  return typeof code === "number" && TRANSIENT_SQLITE_CODES.has(code & 0xff);
}

/** Runs `write` (one transaction); `what` names it in the error, `key` keys fault injection. */
export function retryingWrite<T>(what: string, key: string, write: () => T): T {
  let last: unknown;
  for (let attempt = 0; attempt < STORE_WRITE_ATTEMPTS; attempt++) {
    try {
      const fault = injectFault("sqlite-write", `${key}:${attempt}`);
      if (fault) throw fault;
      return write();
    } catch (error) {
      if (!isTransient(error)) throw error;
      last = error;
    }
  }
  const reason = last instanceof Error ? last.message : String(last);
  throw new ClassifiedError(
    infraFailure("store-write-failed", `${what}: ${STORE_WRITE_ATTEMPTS} attempts failed (last: ${reason})`),
    { cause: last },
  );
}
