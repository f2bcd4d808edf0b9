/**
 * The gateway's open episodes: the calls recorded so far, posted rewards, a failure, and an abort
 * controller that ends in-flight upstream calls when the episode is finished (an agent that timed
 * out must not keep sampling). Episode ids are opaque strings chosen by whoever opens the episode.
 */
import { hashString, mixSeeds } from "../core/random.ts";
import type { GatewayCall, PostedReward } from "./types.ts";

export const EPISODE_ID = /^[A-Za-z0-9._:@-]{1,200}$/;

export interface EpisodeMeta {
  taskId?: string;
  family?: string;
  /** Seed of the episode: a call without `seed` is sent with `mix(seed, call index)`. */
  seed?: number;
}

export class EpisodeLog {
  readonly id: string;
  readonly meta: EpisodeMeta;
  readonly seed: number;
  readonly calls: GatewayCall[] = [];
  readonly controller = new AbortController();
  nextSeq = 0;
  inFlight = 0;
  reward: PostedReward = {};
  error: string | null = null;

  constructor(id: string, meta: EpisodeMeta = {}) {
    this.id = id;
    this.meta = meta;
    this.seed = meta.seed ?? hashString(id);
  }

  /** The sampling seed of the next call. */
  callSeed(seq: number): number {
    return mixSeeds(this.seed >>> 0, seq);
  }
}

export class EpisodeRegistry {
  private readonly episodes = new Map<string, EpisodeLog>();
  /** Ids of ended episodes (the most recent 65 536): a late call of an agent that ran past its end is refused. */
  private readonly ended = new Set<string>();

  isEnded(id: string): boolean {
    return this.ended.has(id);
  }

  open(id: string, meta: EpisodeMeta = {}): EpisodeLog {
    if (!EPISODE_ID.test(id)) throw new Error(`episode id "${id}" must match ${EPISODE_ID}`);
    let episode = this.episodes.get(id);
    if (!episode) {
      episode = new EpisodeLog(id, meta);
      this.episodes.set(id, episode);
    }
    return episode;
  }

  get(id: string): EpisodeLog | undefined {
    return this.episodes.get(id);
  }

  /** Removes the episode and aborts its in-flight calls. */
  close(id: string): EpisodeLog | undefined {
    const episode = this.episodes.get(id);
    if (!episode) return undefined;
    this.episodes.delete(id);
    this.ended.add(id);
    if (this.ended.size > 65_536) this.ended.delete(this.ended.values().next().value!);
    episode.controller.abort(new Error(`episode ${id} ended`));
    return episode;
  }

  get size(): number {
    return this.episodes.size;
  }
}

/**
 * Slot URLs (`/slots/<slot>/v1/…`): each isolated agent slot (src/agents/worker-slot.ts) gets one
 * fixed base URL for its lifetime, in its environment, so clients made once at module level or set
 * as a global default are recorded too; the table names the episode the slot runs now. A call on a
 * slot between episodes has no episode to belong to and is refused.
 */
export class SlotTable {
  private readonly current = new Map<string, string>();

  bind(slot: string, episodeId: string | null): void {
    if (!EPISODE_ID.test(slot)) throw new Error(`slot id "${slot}" must match ${EPISODE_ID}`);
    if (episodeId === null) this.current.delete(slot);
    else this.current.set(slot, episodeId);
  }

  episodeOf(slot: string): string | undefined {
    return this.current.get(slot);
  }
}
