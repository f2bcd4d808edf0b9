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
import { OBS_CLOSE, QUESTION_CLOSE, STOP_TOKENS } from "../../env/protocol.ts";
import type { Policy, PolicyContext, PolicyStep } from "../../types/policy.ts";
import type { GptConfig } from "./config.ts";
import { DecodeSession } from "./decode-session.ts";
import { actInGroups, decodeRequests, EpisodeSlots } from "./episode-slots.ts";
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
  #slots: EpisodeSlots;
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
    const session = new DecodeSession(model.params, model.config, {
      rows: this.capacity,
      prefillChunk: options.prefillChunk,
      recentSlots: options.recentSlots,
    });
    this.#slots = new EpisodeSlots(session, this.capacity);
    this.#stopIds = textStopTokens(this.tokenizer.tokens).map((token) => this.tokenizer.requireId(token));
  }

  async act(contexts: readonly PolicyContext[], options?: { signal?: AbortSignal }): Promise<PolicyStep[]> {
    return actInGroups(contexts, this.capacity, { ...options, name: "EmbeddedPolicy" }, (group) =>
      this.#actGroup(group),
    );
  }

  release(episodeIds: readonly string[]): void {
    this.#slots.release(episodeIds);
  }

  async close(): Promise<void> {
    this.#slots.dispose();
  }

  async #actGroup(contexts: readonly PolicyContext[]): Promise<PolicyStep[]> {
    const slots = this.#slots.assign(contexts.map((context) => context.episodeId));
    // The slot is fed whatever the context has beyond what it holds (or rebuilt).
    contexts.forEach((context, i) => {
      this.#slots.sync(slots[i], episodeIds(context));
    });
    const results = await this.#slots.session.generate(
      decodeRequests(contexts, slots, {
        stop: this.#stopIds,
        seed: this.seed,
        sampling: { temperature: this.temperature, topP: this.topP },
      }),
    );
    return results.map((result) => ({
      text: this.tokenizer.decode(result.ids),
      tokenIds: result.ids,
      logprobs: result.logprobs,
      finishReason: result.finishReason,
    }));
  }
}

/** The ids of an episode so far: its prompt, then each turn's sampled ids and observation. */
function episodeIds(context: PolicyContext): number[] {
  const ids = [...context.prompt.tokenIds];
  for (const turn of context.turns) ids.push(...turn.tokenIds, ...(turn.observation?.tokenIds ?? []));
  if (ids.length === 0)
    throw new Error(`EmbeddedPolicy: episode ${context.episodeId} has no prompt token ids`);
  return ids;
}
