/**
 * A Hugging Face checkpoint as a chat `Policy` (`--policy hf:<folder>`): each turn the episode is
 * rendered by the checkpoint's own chat template (messages as the OpenAI policy builds them, tools
 * included, generation prompt on), encoded by its own tokenizer, decoded on the engine's host KV
 * caches (engine.ts) until an end-of-sequence id or the turn's budget, and the text parsed into
 * tool calls by the checkpoint's format (Hermes `<tool_call>`, Llama 3 JSON).
 *
 * Ids: a slot keeps what it has fed and sampled. When the next turn's rendering extends those ids
 * (the template kept the earlier turns as sampled), only the new ids are fed and the earlier
 * turns' sampled ids are what the model conditions on. When it does not (Qwen3 drops earlier
 * `<think>` blocks, a template re-serialises tool-call JSON, the tokenizer re-encodes the text
 * differently), the slot is rebuilt from the rendering, as a server re-rendering each request
 * would, and the break is counted (`prefixBreaks`): how often the real template breaks the prefix.
 *
 * Randomness as the embedded policy: turn k of an episode samples from
 * createRng(mix(mix(seed, episode seed), k)); a context's `sampling` overrides the defaults, which
 * are the policy's options, else generation_config.json's (temperature 0 unless it samples).
 * generation_config's top_k is not applied (the sampler has temperature and top-p).
 */
import type { ChatToolCall, Policy, PolicyContext, PolicyStep, Tokenizer } from "../../types/policy.ts";
import { DecodeSession } from "../embedded/decode-session.ts";
import { actInGroups, decodeRequests, EpisodeSlots } from "../embedded/episode-slots.ts";
import { validateSampling } from "../embedded/sampler.ts";
import { buildChatMessages, chatTools, type RecordedTurn } from "../openai/messages.ts";
import { MALFORMED_CALL } from "./chat-template.ts";
import type { HfEngineModel } from "./engine.ts";
import {
  type ParseToolCallsOptions,
  rendersMalformed,
  stopIsText,
  type ToolCallFormat,
} from "./tool-calls.ts";

/** The text side of a checkpoint (tokenizer.ts, chat-template.ts, tool-calls.ts), as the policy uses it. */
export interface HfTextSide {
  tokenizer: {
    encode(text: string, options?: { addSpecialTokens?: boolean }): number[];
    decode(ids: readonly number[], options?: { skipSpecialTokens?: boolean }): string;
    readonly eosTokenIds: readonly number[];
    readonly vocabSize: number;
  };
  template: {
    render(
      messages: readonly unknown[],
      options: { tools?: readonly unknown[]; addGenerationPrompt: boolean; extra?: Record<string, unknown> },
    ): string;
  };
  /** The checkpoint's tool-call format and its parser. */
  toolFormat: ToolCallFormat;
  parseToolCalls(
    text: string,
    format: ToolCallFormat,
    options?: ParseToolCallsOptions,
  ): {
    content: string;
    reasoning?: string;
    toolCalls: { id: string; type: "function"; function: { name: string; arguments: string } }[];
    /** Raw text of each call that could not be parsed. */
    malformed: string[];
  };
}

export { MALFORMED_CALL };

export interface HfPolicyOptions {
  temperature?: number;
  topP?: number;
  /** Episodes decoded together (KV-cache slots; default 8). */
  capacity?: number;
  seed?: number;
  /** Policy id recorded in trajectories (default `hf:<folder>`). */
  id?: string;
  /** The system prompt when the task has none (default: the OpenAI policy's). */
  systemPrompt?: string;
  /** Passed to the template (e.g. `{ enable_thinking: false }` for Qwen3). */
  templateExtra?: Record<string, unknown>;
  /**
   * Keep, per episode, the rendered ids fed before each turn until `takeContexts` (training: the
   * ids the model read, fed-ids.ts); off by default, as a server would keep them forever.
   */
  recordContexts?: boolean;
}

export class HfPolicy implements Policy {
  readonly id: string;
  readonly protocol = "chat" as const;
  readonly tokenizer: Tokenizer;
  readonly model: HfEngineModel;
  readonly temperature: number;
  readonly topP: number;
  readonly capacity: number;
  readonly seed: number;
  /** Turns whose rendering did not extend the ids the slot held (the slot was rebuilt). */
  prefixBreaks = 0;
  /** Turns fed after an earlier turn of the same episode (the denominator of `prefixBreaks`). */
  continuedTurns = 0;
  readonly #text: HfTextSide;
  readonly #options: HfPolicyOptions;
  readonly #slots: EpisodeSlots;
  readonly #stopIds: number[];
  #recorded = new Map<string, RecordedTurn[]>();
  #contexts = new Map<string, number[][]>();

  constructor(model: HfEngineModel, text: HfTextSide, options: HfPolicyOptions = {}) {
    this.model = model;
    this.#text = text;
    this.#options = options;
    this.id = options.id ?? `hf:${model.checkpoint.folder}`;
    const generation = model.checkpoint.generation;
    this.temperature = options.temperature ?? generation.temperature;
    this.topP = options.topP ?? generation.topP;
    validateSampling({ temperature: this.temperature, topP: this.topP });
    this.capacity = options.capacity ?? 8;
    this.seed = options.seed ?? 0;
    const { tokenizer } = text;
    this.tokenizer = {
      encode: (s: string) => tokenizer.encode(s, { addSpecialTokens: false }),
      decode: (ids: number[]) => tokenizer.decode(ids),
      vocabSize: tokenizer.vocabSize,
    };
    this.#stopIds = [...new Set([...generation.eosTokenIds, ...tokenizer.eosTokenIds])];
    if (this.#stopIds.length === 0)
      throw new Error(
        `${this.id}: no end-of-sequence id in generation_config.json, config.json or the tokenizer`,
      );
    this.#slots = new EpisodeSlots(
      new DecodeSession(model.kvModel, null, { rows: this.capacity }),
      this.capacity,
    );
  }

  /**
   * The ids of a context's conversation rendered by the template, ready for the next turn: the
   * client's own messages when it sent them (serve), else the messages the OpenAI policy would send.
   */
  promptIds(context: PolicyContext): number[] {
    const messages =
      context.messages ??
      buildChatMessages(context, {
        ...(this.#options.systemPrompt ? { systemPrompt: this.#options.systemPrompt } : {}),
        recorded: this.#recorded.get(context.episodeId),
      });
    const rendered = this.#text.template.render(messages, {
      ...(context.tools.length > 0
        ? {
            tools: context.messages && context.requestTools ? context.requestTools : chatTools(context.tools),
          }
        : {}),
      addGenerationPrompt: true,
      ...(this.#options.templateExtra ? { extra: this.#options.templateExtra } : {}),
    });
    // The template writes the special tokens (BOS included) itself.
    return this.#text.tokenizer.encode(rendered, { addSpecialTokens: false });
  }

  async act(contexts: readonly PolicyContext[], options?: { signal?: AbortSignal }): Promise<PolicyStep[]> {
    return actInGroups(contexts, this.capacity, { ...options, name: "HfPolicy" }, (group) =>
      this.#actGroup(group),
    );
  }

  /** The ids fed before each turn of an episode (`recordContexts`), forgotten once taken. */
  takeContexts(episodeId: string): number[][] | undefined {
    const contexts = this.#contexts.get(episodeId);
    this.#contexts.delete(episodeId);
    return contexts;
  }

  release(episodeIds: readonly string[]): void {
    for (const id of episodeIds) this.#recorded.delete(id);
    this.#slots.release(episodeIds);
  }

  async close(): Promise<void> {
    this.#slots.dispose();
  }

  /** Feeds the slot the rendering's ids beyond what it holds, or rebuilds it (a prefix break). */
  #sync(slot: number, context: PolicyContext): number[] {
    const ids = this.promptIds(context);
    if (this.#options.recordContexts) {
      const contexts = this.#contexts.get(context.episodeId) ?? [];
      contexts[context.turns.length] = ids;
      this.#contexts.set(context.episodeId, contexts);
    }
    const { extended, held } = this.#slots.sync(slot, ids);
    if (context.turns.length > 0 && held > 0) this.continuedTurns++;
    if (!extended && held > 0) this.prefixBreaks++;
    return ids;
  }

  async #actGroup(contexts: readonly PolicyContext[]): Promise<PolicyStep[]> {
    const slots = this.#slots.assign(contexts.map((context) => context.episodeId));
    const fed = contexts.map((context, i) => this.#sync(slots[i], context));
    const results = await this.#slots.session.generate(
      decodeRequests(contexts, slots, {
        stop: this.#stopIds,
        seed: this.seed,
        sampling: { temperature: this.temperature, topP: this.topP },
      }),
    );
    return results.map((result, i) => {
      const context = contexts[i];
      if (this.#slots.session.isFull(slots[i]))
        return {
          text: "",
          tokenIds: [],
          logprobs: [],
          finishReason: "length" as const,
          promptIds: fed[i],
        };
      const stopped = result.finishReason === "stop";
      const body = stopped && !stopIsText(this.#text.toolFormat) ? result.ids.slice(0, -1) : result.ids;
      const raw = this.#text.tokenizer.decode(body, { skipSpecialTokens: false });
      const parsed = this.#text.parseToolCalls(raw, this.#text.toolFormat, { tools: context.tools });
      const toolCalls: ChatToolCall[] = parsed.toolCalls.map((call) => ({
        id: call.id,
        name: call.function.name,
        arguments: call.function.arguments,
      }));
      parsed.malformed.forEach((call, j) => {
        toolCalls.push({ id: `call_malformed_${j}`, name: MALFORMED_CALL, arguments: call });
      });
      // A turn with a call the parser could not read is a format failure, kept as the text the
      // model wrote: rendered back as parsed (a "malformed_tool_call" call) the template would
      // write other ids than it sampled, and the next prompt would not extend them.
      // (The lab's template renders the malformed call itself, as written: rendersMalformed.)
      const asWritten = parsed.malformed.length > 0 && !rendersMalformed(this.#text.toolFormat);
      const text = asWritten ? raw : parsed.content;
      const turns = this.#recorded.get(context.episodeId) ?? [];
      turns[context.turns.length] = { text, toolCalls: asWritten ? [] : toolCalls };
      this.#recorded.set(context.episodeId, turns);
      return {
        text,
        tokenIds: result.ids,
        logprobs: result.logprobs,
        ...(toolCalls.length > 0 ? { toolCalls } : {}),
        finishReason: toolCalls.length > 0 ? ("tool-calls" as const) : result.finishReason,
        promptIds: fed[i],
      };
    });
  }
}
