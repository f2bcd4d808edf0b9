/**
 * The rows of a decode session's KV caches, shared by the episodes a policy plays (the embedded
 * GPT's and a Hugging Face checkpoint's alike): an episode keeps its slot between turns, so a turn
 * feeds only the ids it adds; a new episode takes a free slot, else the least recently used one that
 * no other episode of the same group needs.
 *
 * Randomness: turn k of an episode samples from createRng(mix(mix(policy seed, episode seed), k)),
 * whichever slot it runs in and whatever else is decoded beside it.
 */
import { createRng, mixSeeds } from "../../core/random.ts";
import type { PolicyContext } from "../../types/policy.ts";
import type { DecodeSession } from "./decode-session.ts";

export class EpisodeSlots {
  readonly session: DecodeSession;
  readonly capacity: number;
  #slotOf = new Map<string, number>();
  #episodeOf: (string | null)[];
  #lastUsed: number[];
  #clock = 0;

  constructor(session: DecodeSession, capacity: number) {
    this.session = session;
    this.capacity = capacity;
    this.#episodeOf = Array.from({ length: capacity }, () => null);
    this.#lastUsed = Array.from({ length: capacity }, () => 0);
  }

  /** The slot of each episode of a group (at most `capacity`), in order. */
  assign(episodeIds: readonly string[]): number[] {
    // The group's own slots are not evicted for another of its episodes.
    const pinned = new Set<number>();
    for (const id of episodeIds) {
      const slot = this.#slotOf.get(id);
      if (slot !== undefined) pinned.add(slot);
    }
    return episodeIds.map((id) => {
      const slot = this.#slotFor(id, pinned);
      pinned.add(slot);
      this.#lastUsed[slot] = ++this.#clock;
      return slot;
    });
  }

  /**
   * Feeds the slot what `ids` hold beyond its own ids when they extend them; else rebuilds the slot
   * from `ids`. `held`: how many ids the slot held before.
   */
  sync(slot: number, ids: readonly number[]): { extended: boolean; held: number } {
    const held = this.session.tokens(slot);
    const heldLength = held.length; // (the session's own array: feeding grows it)
    const extended =
      !this.session.isFull(slot) && held.length <= ids.length && held.every((id, i) => id === ids[i]);
    if (extended) {
      this.session.feed(slot, ids.slice(held.length));
    } else {
      this.session.reset(slot);
      this.session.feed(slot, [...ids]);
    }
    return { extended, held: heldLength };
  }

  release(episodeIds: readonly string[]): void {
    for (const id of episodeIds) {
      const slot = this.#slotOf.get(id);
      if (slot === undefined) continue;
      this.#slotOf.delete(id);
      this.#episodeOf[slot] = null;
      this.session.reset(slot);
    }
  }

  dispose(): void {
    this.session.dispose();
  }

  #slotFor(episodeId: string, pinned: Set<number>): number {
    const existing = this.#slotOf.get(episodeId);
    if (existing !== undefined) return existing;
    let slot = this.#episodeOf.indexOf(null);
    if (slot < 0) {
      let best = -1;
      for (let s = 0; s < this.capacity; s++)
        if (!pinned.has(s) && (best < 0 || this.#lastUsed[s] < this.#lastUsed[best])) best = s;
      slot = best;
      this.#slotOf.delete(this.#episodeOf[slot]!);
    }
    this.#episodeOf[slot] = episodeId;
    this.#slotOf.set(episodeId, slot);
    this.session.reset(slot);
    return slot;
  }
}

/** `act` over groups of at most `capacity` contexts, in order, checking the signal between groups. */
export async function actInGroups<T>(
  contexts: readonly PolicyContext[],
  capacity: number,
  options: { signal?: AbortSignal; name: string },
  actGroup: (group: readonly PolicyContext[]) => Promise<T[]>,
): Promise<T[]> {
  const out: T[] = [];
  for (let start = 0; start < contexts.length; start += capacity) {
    if (options.signal?.aborted) throw new Error(`${options.name}.act: aborted`);
    out.push(...(await actGroup(contexts.slice(start, start + capacity))));
  }
  return out;
}

/** The decode request of each context in its slot: its budget, the stop ids, its turn's random stream. */
export function decodeRequests(
  contexts: readonly PolicyContext[],
  slots: readonly number[],
  options: { stop: readonly number[]; seed: number; sampling: { temperature: number; topP: number } },
) {
  return contexts.map((context, i) => ({
    slot: slots[i],
    maxNew: Math.max(0, context.maxTokens),
    stop: options.stop,
    rng: createRng(mixSeeds(mixSeeds(options.seed, context.seed), context.turns.length)),
    sampling: context.sampling ?? options.sampling,
  }));
}
