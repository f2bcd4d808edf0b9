/**
 * A counting semaphore: at most `limit` tasks run at once, the rest wait in FIFO order. The OpenAI
 * policy shares one across every `act` call, so the limit holds for the whole process.
 */

export interface Semaphore {
  /** Runs `task` once a slot is free and frees the slot when it settles. */
  run<T>(task: () => Promise<T>): Promise<T>;
  readonly active: number;
  readonly waiting: number;
}

export function createSemaphore(limit: number): Semaphore {
  if (!Number.isInteger(limit) || limit < 1)
    throw new Error(`semaphore: limit must be an integer >= 1, got ${limit}`);
  let active = 0;
  const queue: (() => void)[] = [];
  const release = () => {
    const next = queue.shift();
    // Hand the slot straight to the next waiter, so `active` never dips below the limit in between.
    if (next) next();
    else active--;
  };
  return {
    get active() {
      return active;
    },
    get waiting() {
      return queue.length;
    },
    async run<T>(task: () => Promise<T>): Promise<T> {
      if (active < limit) active++;
      else await new Promise<void>((resolve) => queue.push(resolve));
      try {
        return await task();
      } finally {
        release();
      }
    },
  };
}
