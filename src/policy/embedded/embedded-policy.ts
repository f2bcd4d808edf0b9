/**
 * The embedded transformer as a `Policy` (text protocol). `act` advances every context by one turn
 * in lock-step on one `DecodeSession`: each episode keeps a cache slot, only the tokens added since
 * its last turn (the prompt the first time, then the last observation) are fed, and sampling runs
 * until a stop tag (`STOP_TOKENS`, plus any other closing action tag in the checkpoint's vocabulary)
 * or the turn's `maxTokens`.
 *
 * What the model conditions on is exactly `prompt.tokenIds`, then per turn `tokenIds` and
 * `observation.tokenIds`: the sequence `flattenTrajectory` rebuilds (no implicit BOS), so scoring
 * a trajectory later reproduces the sampling log-probs. If a context's history is not an
 * extension of what the slot holds (the loop rewrote a turn), the slot is rebuilt from scratch.
 *
 * Randomness: turn k of an episode samples from `createRng(mixSeeds(mixSeeds(seed, context.seed), k))`
 * where `seed` is the policy's option (default 0). A (policy seed, episode seed) pair therefore
 * reproduces an episode whatever else is in the batch. Log-probs follow sampler.ts: log
 * softmax(logits / temperature), before top-p truncation. A context's own `sampling` overrides the
 * policy's temperature and top-p for that context (rows of one batch may differ).
 *
 * More contexts than `capacity` are served in groups; slots of episodes outside the current group
 * are evicted least-recently-used first and rebuilt when their episode comes back.
 */
import { createRng, mixSeeds } from "../../core/random.ts";
import { OBS_CLOSE, QUESTION_CLOSE, STOP_TOKENS } from "../../env/protocol.ts";
import type { Policy, PolicyContext, PolicyStep } from "../../types/policy.ts";
import type { GptConfig } from "./config.ts";
import { DecodeSession } from "./decode-session.ts";
import type { GptParams } from "./model.ts";
import { validateSampling } from "./sampler.ts";
import type { WordTokenizer } from "./tokenizer.ts";

export interface EmbeddedPolicyOptions {
  /** Sampling temperature (default 1; 0 = greedy). */
  temperature?: number;
  /** Nucleus mass (default 1 = off). */
  topP?: number;
  /** Episodes decoded together, i.e. KV-cache slots (default 64). */
  capacity?: number;
  /** Mixed into every episode's sampling seed (default 0). */
  seed?: number;
  /** Tokens per slot per prefill step (default 16). */
  prefillChunk?: number;
  /** Decode steps between flushes of the recent KV cache (default 16; see kv-cache.ts). */
  recentSlots?: number;
  /** Policy id recorded in trajectories (default "embedded"). */
  id?: string;
}

export interface EmbeddedModel {
  config: GptConfig;
  tokenizer: WordTokenizer;
  params: GptParams;
}

/**
 * The tokens a text-protocol turn stops at: the protocol's stop tags, plus any other closing action
 * tag the vocabulary holds (an orchestrator's `</searcher>`): a checkpoint's own tags end its turns.
 */
export function textStopTokens(tokens: readonly string[]): string[] {
  const extraStops = tokens.filter(
    (token) =>
      /^<\/[\w.-]+>$/.test(token) &&
      token !== QUESTION_CLOSE &&
      token !== OBS_CLOSE &&
      !STOP_TOKENS.includes(token),
  );
  return [...STOP_TOKENS, ...extraStops];
}

export class EmbeddedPolicy implements Policy {
  readonly id: string;
  readonly protocol = "text" as const;
  readonly tokenizer: WordTokenizer;
  readonly config: GptConfig;
  readonly temperature: number;
  readonly topP: number;
  readonly capacity: number;
  readonly seed: number;
  #session: DecodeSession;
  #slotOf = new Map<string, number>();
  #episodeOf: (string | null)[];
  #lastUsed: number[];
  #clock = 0;
  #stopIds: number[];

  /** Keeps its own reference to the params (the caller keeps theirs). */
  constructor(model: EmbeddedModel, options: EmbeddedPolicyOptions = {}) {
    if (model.tokenizer.vocabSize !== model.config.vocabSize) {
      throw new Error(
        `EmbeddedPolicy: tokenizer has ${model.tokenizer.vocabSize} tokens, model ${model.config.vocabSize}`,
      );
    }
    this.id = options.id ?? "embedded";
    this.tokenizer = model.tokenizer;
    this.config = model.config;
    this.temperature = options.temperature ?? 1;
    this.topP = options.topP ?? 1;
    validateSampling({ temperature: this.temperature, topP: this.topP });
    this.capacity = options.capacity ?? 64;
    this.seed = options.seed ?? 0;
    this.#session = new DecodeSession(model.params, model.config, {
      rows: this.capacity,
      prefillChunk: options.prefillChunk,
      recentSlots: options.recentSlots,
    });
    this.#episodeOf = Array.from({ length: this.capacity }, () => null);
    this.#lastUsed = Array.from({ length: this.capacity }, () => 0);
    this.#stopIds = textStopTokens(this.tokenizer.tokens).map((token) => this.tokenizer.requireId(token));
  }

  async act(contexts: readonly PolicyContext[], options?: { signal?: AbortSignal }): Promise<PolicyStep[]> {
    const steps: PolicyStep[] = [];
    for (let start = 0; start < contexts.length; start += this.capacity) {
      if (options?.signal?.aborted) throw new Error("EmbeddedPolicy.act: aborted");
      steps.push(...(await this.#actGroup(contexts.slice(start, start + this.capacity))));
    }
    return steps;
  }

  release(episodeIds: readonly string[]): void {
    for (const id of episodeIds) {
      const slot = this.#slotOf.get(id);
      if (slot === undefined) continue;
      this.#slotOf.delete(id);
      this.#episodeOf[slot] = null;
      this.#session.reset(slot);
    }
  }

  async close(): Promise<void> {
    this.#session.dispose();
  }

  #slotFor(episodeId: string, pinned: Set<number>): number {
    const existing = this.#slotOf.get(episodeId);
    if (existing !== undefined) return existing;
    let slot = this.#episodeOf.indexOf(null);
    if (slot < 0) {
      // Evict the least recently used slot not needed by this group.
      let best = -1;
      for (let s = 0; s < this.capacity; s++) {
        if (!pinned.has(s) && (best < 0 || this.#lastUsed[s] < this.#lastUsed[best])) best = s;
      }
      slot = best;
      this.#slotOf.delete(this.#episodeOf[slot]!);
    }
    this.#episodeOf[slot] = episodeId;
    this.#slotOf.set(episodeId, slot);
    this.#session.reset(slot);
    return slot;
  }

  async #actGroup(contexts: readonly PolicyContext[]): Promise<PolicyStep[]> {
    const pinned = new Set<number>();
    for (const context of contexts) {
      const slot = this.#slotOf.get(context.episodeId);
      if (slot !== undefined) pinned.add(slot);
    }
    const slots = contexts.map((context) => {
      const slot = this.#slotFor(context.episodeId, pinned);
      pinned.add(slot);
      this.#lastUsed[slot] = ++this.#clock;
      this.#sync(slot, context);
      return slot;
    });
    const results = await this.#session.generate(
      contexts.map((context, i) => ({
        slot: slots[i],
        maxNew: Math.max(0, context.maxTokens),
        stop: this.#stopIds,
        rng: createRng(mixSeeds(mixSeeds(this.seed, context.seed), context.turns.length)),
        sampling: context.sampling ?? { temperature: this.temperature, topP: this.topP },
      })),
    );
    return results.map((result) => ({
      text: this.tokenizer.decode(result.ids),
      tokenIds: result.ids,
      logprobs: result.logprobs,
      finishReason: result.finishReason,
    }));
  }

  /** Feeds the slot whatever the context has beyond what the slot holds (or rebuilds it). */
  #sync(slot: number, context: PolicyContext): void {
    const expected = [...context.prompt.tokenIds];
    for (const turn of context.turns) expected.push(...turn.tokenIds, ...(turn.observation?.tokenIds ?? []));
    if (expected.length === 0)
      throw new Error(`EmbeddedPolicy: episode ${context.episodeId} has no prompt token ids`);
    const held = this.#session.tokens(slot);
    const extendsHeld =
      !this.#session.isFull(slot) &&
      held.length <= expected.length &&
      held.every((id, i) => id === expected[i]);
    if (extendsHeld) {
      this.#session.feed(slot, expected.slice(held.length));
    } else {
      this.#session.reset(slot);
      this.#session.feed(slot, expected);
    }
  }
}
