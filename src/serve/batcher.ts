/**
 * Batching of concurrent requests into one `act` call. Requests that arrive while the policy is
 * busy (or in the same tick) wait in a queue; when the policy is free, as many queued requests as
 * fit in `maxBatch` contexts go into one `act` (always at least one request, however many samples
 * it has). One `act` runs at a time per policy: the embedded transformer decodes a batch in
 * lock-step, and a policy need not be re-entrant.
 *
 * If a batched `act` throws, each of its requests is retried alone, so one bad request (a scripted
 * policy that cannot solve a task it does not know) fails only itself. Episode ids are released
 * after every call (requests are stateless), except those of a request that asks to keep them: a
 * caller that names its episode (the gateway does) sends the same conversation again, one turn
 * longer, so the embedded policy extends that episode's KV cache instead of prefilling it again;
 * it evicts the least recently used episode when it needs the room.
 */
import type { Policy, PolicyContext, PolicyStep } from "../types/policy.ts";

export interface ActBatcher {
  /** `keep`: leave the contexts' episode ids with the policy after the call (a named episode). */
  act(contexts: readonly PolicyContext[], options?: { keep?: boolean }): Promise<PolicyStep[]>;
  /** `act` calls made so far. */
  readonly calls: number;
  /** True while an `act` runs or requests wait. */
  readonly busy: boolean;
}

interface Pending {
  contexts: readonly PolicyContext[];
  keep: boolean;
  resolve: (steps: PolicyStep[]) => void;
  reject: (error: unknown) => void;
}

export interface ActBatcherOptions {
  /** Called at each `act` call of the policy. */
  onCall?: () => void;
  /**
   * Requests the server has begun to read that have not reached `act` yet. While some are on
   * their way, or while the policy was busy less than 50 ms ago (concurrent clients, whose next
   * requests are in flight), the batcher lets others join (one event-loop turn at a time, at most
   * `gatherMs`) before it starts a batch; a request after a quiet spell starts at once.
   */
  arriving?: () => number;
  /** Longest wait for requests to join a batch (default 3 ms). */
  gatherMs?: number;
}

/** A batch that ended less than this long ago means concurrent clients: the next batch gathers. */
const RECENT_MS = 50;

/**
 * Why the wait: the policy decodes on this event loop, so while a batch runs nothing else is read;
 * afterwards the requests of concurrent clients come in over a few turns of the loop (the
 * gateway's forward on a fresh connection, its headers, its body), and a batch started at the
 * first of them holds it alone. The embedded model's step costs about the same for 1 row as for 8
 * (its smallest program): `eval --agent` at 8 slots ran all of its 799 calls as batches of 1
 * (16 episodes/s); waiting up to 3 ms made the mean batch 3.7-4.4 and the run 31-35 episodes/s
 * (1 ms: 26, 5 ms: 27, 10 ms: 20: longer waits cost more than the larger batches save).
 */
export function createActBatcher(
  policy: Policy,
  maxBatch: number,
  options: ActBatcherOptions = {},
): ActBatcher {
  const { onCall, arriving = () => 0, gatherMs = 3 } = options;
  const queue: Pending[] = [];
  let running = false;
  let scheduled = false;
  let calls = 0;

  /** Runs one `act`; afterwards releases `release` (the episode ids no request asked to keep). */
  const call = async (
    contexts: readonly PolicyContext[],
    release: readonly string[],
  ): Promise<PolicyStep[]> => {
    calls++;
    onCall?.();
    try {
      const steps = await policy.act(contexts);
      if (!Array.isArray(steps) || steps.length !== contexts.length) {
        throw new Error(
          `policy ${policy.id} returned ${steps?.length} steps for ${contexts.length} contexts`,
        );
      }
      return steps;
    } finally {
      if (release.length > 0) policy.release?.(release);
    }
  };

  const releasedBy = (pendings: readonly Pending[]) =>
    pendings
      .filter((pending) => !pending.keep)
      .flatMap((pending) => pending.contexts.map((c) => c.episodeId));
  let gatherSince: number | null = null;
  /** When the last batch ended (null before the first). */
  let lastEnd: number | null = null;
  const queued = () => queue.reduce((sum, pending) => sum + pending.contexts.length, 0);
  const pump = async () => {
    scheduled = false;
    if (running || queue.length === 0) return;
    const recent = lastEnd !== null && performance.now() - lastEnd < RECENT_MS;
    if ((arriving() > 0 || recent) && queued() < maxBatch) {
      gatherSince ??= performance.now();
      if (performance.now() - gatherSince < gatherMs) {
        scheduled = true;
        setImmediate(() => void pump());
        return;
      }
    }
    gatherSince = null;
    running = true;
    const batch: Pending[] = [queue.shift()!];
    let size = batch[0].contexts.length;
    while (queue.length > 0 && size + queue[0].contexts.length <= maxBatch) {
      size += queue[0].contexts.length;
      batch.push(queue.shift()!);
    }
    try {
      const steps = await call(
        batch.flatMap((pending) => pending.contexts),
        releasedBy(batch),
      );
      let offset = 0;
      for (const pending of batch) {
        pending.resolve(steps.slice(offset, offset + pending.contexts.length));
        offset += pending.contexts.length;
      }
    } catch (error) {
      if (batch.length === 1) batch[0].reject(error);
      else {
        for (const pending of batch) {
          await call(pending.contexts, releasedBy([pending])).then(pending.resolve, pending.reject);
        }
      }
    } finally {
      running = false;
      lastEnd = performance.now();
      schedule();
    }
  };

  const schedule = () => {
    if (scheduled || running || queue.length === 0) return;
    scheduled = true;
    // setImmediate: requests parsed in the same turn of the event loop join one batch.
    setImmediate(() => void pump());
  };

  return {
    act(contexts, options) {
      return new Promise<PolicyStep[]>((resolve, reject) => {
        queue.push({ contexts, keep: options?.keep === true, resolve, reject });
        schedule();
      });
    },
    get calls() {
      return calls;
    },
    get busy() {
      return running || queue.length > 0;
    },
  };
}
