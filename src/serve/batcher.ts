/**
 * Batching of concurrent requests into one `act` call. Requests that arrive while the policy is
 * busy (or in the same tick) wait in a queue; when the policy is free, as many queued requests as
 * fit in `maxBatch` contexts go into one `act` (always at least one request, however many samples
 * it has). One `act` runs at a time per policy: the embedded transformer decodes a batch in
 * lock-step, and a policy need not be re-entrant.
 *
 * If a batched `act` throws, each of its requests is retried alone, so one bad request (a scripted
 * policy that cannot solve a task it does not know) fails only itself. Episode ids are released
 * after every call (requests are stateless).
 */
import type { Policy, PolicyContext, PolicyStep } from "../types/policy.ts";

export interface ActBatcher {
  act(contexts: readonly PolicyContext[]): Promise<PolicyStep[]>;
  /** `act` calls made so far. */
  readonly calls: number;
  /** True while an `act` runs or requests wait. */
  readonly busy: boolean;
}

interface Pending {
  contexts: readonly PolicyContext[];
  resolve: (steps: PolicyStep[]) => void;
  reject: (error: unknown) => void;
}

export function createActBatcher(policy: Policy, maxBatch: number, onCall?: () => void): ActBatcher {
  const queue: Pending[] = [];
  let running = false;
  let scheduled = false;
  let calls = 0;

  const call = async (contexts: readonly PolicyContext[]): Promise<PolicyStep[]> => {
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
      policy.release?.(contexts.map((context) => context.episodeId));
    }
  };

  const pump = async () => {
    scheduled = false;
    if (running || queue.length === 0) return;
    running = true;
    const batch: Pending[] = [queue.shift()!];
    let size = batch[0].contexts.length;
    while (queue.length > 0 && size + queue[0].contexts.length <= maxBatch) {
      size += queue[0].contexts.length;
      batch.push(queue.shift()!);
    }
    try {
      const steps = await call(batch.flatMap((pending) => pending.contexts));
      let offset = 0;
      for (const pending of batch) {
        pending.resolve(steps.slice(offset, offset + pending.contexts.length));
        offset += pending.contexts.length;
      }
    } catch (error) {
      if (batch.length === 1) batch[0].reject(error);
      else {
        for (const pending of batch) {
          await call(pending.contexts).then(pending.resolve, pending.reject);
        }
      }
    } finally {
      running = false;
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
    act(contexts) {
      return new Promise<PolicyStep[]>((resolve, reject) => {
        queue.push({ contexts, resolve, reject });
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
