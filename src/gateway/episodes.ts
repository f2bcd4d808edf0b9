/**
 * The gateway's open episodes: the calls recorded so far, posted rewards, a failure, and an abort
 * controller that ends in-flight upstream calls when the episode is finished (an agent that timed
 * out must not keep sampling). Episode ids are opaque strings chosen by whoever opens the episode.
 *
 * State is bounded: an episode holds at most `EpisodeLimits.maxCalls` calls and `maxBytes` of
 * recorded requests and responses (`admit` refuses the next call with the limit named), and an
 * episode idle for `ttlMs` is handed back by `expired` for the gateway to end it (an agent that
 * crashed before `/end` would otherwise keep its calls in memory for good).
 */
import { hashString, mixSeeds } from "../core/random.ts";
import type { Failure } from "../types/failure.ts";
import type { GatewayCall, PostedReward } from "./types.ts";

export const EPISODE_ID = /^[A-Za-z0-9._:@-]{1,200}$/;

export interface EpisodeMeta {
  taskId?: string;
  family?: string;
  /** Seed of the episode: a call without `seed` is sent with `mix(seed, call index)`. */
  seed?: number;
}

export interface EpisodeLimits {
  /** Milliseconds an episode may go without a call or a reward before it is ended. */
  ttlMs: number;
  /** Calls one episode may record. */
  maxCalls: number;
  /** Bytes of recorded requests and responses one episode may hold (JSON text). */
  maxBytes: number;
}

export const EPISODE_LIMITS: EpisodeLimits = { ttlMs: 3_600_000, maxCalls: 4096, maxBytes: 256 << 20 };

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
  /** The failure recorded on the episode when it ends (a call or byte limit it hit). */
  failure: Failure | null = null;
  /** `Date.now()` of the last call or reward. */
  lastActive = Date.now();
  /** JSON bytes of the calls recorded so far. */
  bytes = 0;

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

  /** The episodes idle for longer than `ttlMs` at `now` (none with a call in flight). */
  expired(now: number, ttlMs: number): EpisodeLog[] {
    return [...this.episodes.values()].filter(
      (episode) => episode.inFlight === 0 && now - episode.lastActive > ttlMs,
    );
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
 * Why an episode may not record one more call (or null): an `agent` failure naming the limit and
 * how to change it. The class is `agent` (DESIGN's definitions): the limits bound the calls and
 * bytes an agent's own loop sends through the gateway (memory the gateway holds for it, like the
 * idle TTL's `episode-expired`), not a budget of the model's: an agent that keeps calling past
 * thousands of calls in one episode has no turn budget of its own or is stuck retrying. Its episode
 * counts as that agent's failure in pass@k and is never trained on as the model's sample; the
 * in-process loop's own budgets (turns, tokens) stay `policy`.
 */
export function limitReached(episode: EpisodeLog, limits: EpisodeLimits): Failure | null {
  if (episode.calls.length >= limits.maxCalls)
    return {
      class: "agent",
      code: "episode-call-limit",
      message: `episode ${episode.id} has made ${episode.calls.length} calls, the limit (maxEpisodeCalls, --max-episode-calls); end it and start a new episode`,
    };
  if (episode.bytes >= limits.maxBytes)
    return {
      class: "agent",
      code: "episode-byte-limit",
      message: `episode ${episode.id} holds ${episode.bytes} bytes of calls, the limit (maxEpisodeBytes, --max-episode-bytes); end it and start a new episode`,
    };
  return null;
}

/** The JSON size of a recorded call's request and response, what an episode holds per call. */
export function callBytes(call: { request: unknown; response: unknown }): number {
  return JSON.stringify(call.request).length + JSON.stringify(call.response ?? null).length;
}

/**
 * The header a slot's own calls carry naming the episode that made them (worker slots add it to
 * every `fetch` to the slot URL made inside an episode's run, src/agents/slot-worker.ts): a call of
 * a finished episode that reaches the slot after the next episode started is then refused instead
 * of being recorded into the next one.
 */
export const SLOT_EPISODE_HEADER = "x-agentrl-slot-episode";

/**
 * Slot URLs (`/slots/<slot>/v1/…`): each isolated agent slot (src/agents/worker-slot.ts) gets one
 * fixed base URL for its lifetime, in its environment and as the `baseURL` its agent function is
 * handed, so clients made once at module level, set as a global default or cached by a provider are
 * recorded too; the table names the episode the slot runs now. The rule (`slotEpisode`): a call on a
 * slot URL belongs to the episode the slot runs when the call arrives; a call that arrives between
 * episodes has none and is refused, and one that names (`SLOT_EPISODE_HEADER`) an episode other than
 * the current one is refused too. A call already admitted stays its episode's when the episode ends
 * (it is aborted, and recorded there), never moved into the next.
 */
export class SlotTable {
  private readonly current = new Map<string, string>();

  bind(slot: string, episodeId: string | null): void {
    if (!EPISODE_ID.test(slot)) throw new Error(`slot id "${slot}" must match ${EPISODE_ID}`);
    if (episodeId === null) this.current.delete(slot);
    else this.current.set(slot, episodeId);
  }

  /**
   * The episode a call on slot `slot` belongs to, or why it belongs to none: `named` is the
   * episode the call says made it (`SLOT_EPISODE_HEADER`), when it says one.
   */
  slotEpisode(slot: string, named: string | undefined): { episodeId: string } | { refused: string } {
    const current = this.current.get(slot);
    if (current === undefined)
      return {
        refused: named
          ? `slot ${slot} runs no episode now: episode ${named}, which made this call, has ended`
          : `slot ${slot} runs no episode now (it is between episodes): a call on a slot URL belongs to the episode the slot runs when the call arrives, and one made after its agent returned belongs to none`,
      };
    if (named !== undefined && named !== current)
      return {
        refused: `this call was made by episode ${named}, which has ended; slot ${slot} now runs episode ${current}, and a finished episode's calls are never recorded into the next`,
      };
    return { episodeId: current };
  }
}
