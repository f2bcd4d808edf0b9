/**
 * Test-only: real llama.cpp (the prebuilt CPU build of the `node-llama-cpp` dev dependency, no
 * build and no download) reading the GGUF files `export gguf` writes, and checkpoint folders for it.
 *
 * llama.cpp is run the way its logits match a float32 reference closest: an F32 KV cache (its
 * default F16 cache rounds every key and value) and flash attention off.
 */
import { cp, mkdtemp, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import {
  type ControlledEvaluateInputItem,
  getLlama,
  type Llama,
  LlamaLogLevel,
  type LlamaModel,
  type Token,
} from "node-llama-cpp";
import { createRng } from "../../core/random.ts";
import type { Policy, PolicyStep } from "../../types/policy.ts";
import { DecodeSession } from "../embedded/decode-session.ts";
import { textStopTokens } from "../embedded/embedded-policy.ts";
import type { WordTokenizer } from "../embedded/tokenizer.ts";
import type { HfEngineModel } from "./engine.ts";

let llama: Promise<Llama> | undefined;
/** llama.cpp's messages while a load is held quiet; null: errors are printed. */
let held: string[] | null = null;

/** The CPU build, loaded once per process; llama.cpp's errors printed. */
export function cpuLlama(): Promise<Llama> {
  llama ??= getLlama({
    build: "never",
    gpu: false,
    logLevel: LlamaLogLevel.error,
    logger: (level, message) => {
      if (held) held.push(message);
      else if (level === LlamaLogLevel.error || level === LlamaLogLevel.fatal)
        console.error(message.trimEnd());
    },
  });
  return llama;
}

/**
 * A GGUF file loaded by llama.cpp. `vocabOnly`: the tokenizer alone (a file may then hold no
 * tensors; node-llama-cpp's trial load for its memory estimate fails on it and logs so: those
 * messages are printed only if the load itself fails).
 */
export async function loadGguf(path: string, options: { vocabOnly?: boolean } = {}): Promise<LlamaModel> {
  const runtime = await cpuLlama();
  if (!options.vocabOnly) return runtime.loadModel({ modelPath: path });
  held = [];
  try {
    return await runtime.loadModel({ modelPath: path, vocabOnly: true });
  } catch (error) {
    for (const message of held) console.error(message.trimEnd());
    throw error;
  } finally {
    held = null;
  }
}

/** A fresh context: F32 keys and values, flash attention off, 1 thread. */
async function context(model: LlamaModel, length: number) {
  return model.createContext({
    // Room past the last token: a context the tokens fill exactly is shifted by node-llama-cpp
    // (its oldest tokens dropped) before the last one is evaluated.
    contextSize: length + 64,
    batchSize: length + 64,
    flashAttention: false,
    experimentalKvCacheKeyType: "F32",
    experimentalKvCacheValueType: "F32",
    threads: 1,
  });
}

/** llama.cpp's logits [T·V] at every position of `ids` (one causal pass). */
export async function llamaLogits(
  model: LlamaModel,
  ids: readonly number[],
  vocabSize: number,
): Promise<Float32Array> {
  const ctx = await context(model, ids.length);
  try {
    const results = await ctx
      .getSequence()
      .controlledEvaluate(ids.map((id) => [id as Token, { generateNext: { logits: true } }]));
    const out = new Float32Array(ids.length * vocabSize);
    results.forEach((result, position) => {
      const logits = result?.next?.logits;
      if (!logits || logits.size !== vocabSize)
        throw new Error(
          `llamaLogits: position ${position} gave ${logits?.size} logits, expected ${vocabSize}`,
        );
      for (const [token, value] of logits) out[position * vocabSize + token] = value;
    });
    return out;
  } finally {
    await ctx.dispose();
  }
}

/**
 * llama.cpp's greedy continuation of `prompt`: up to `count` tokens, through its own sampler at
 * temperature 0 and its KV cache, ending early only at one of `stop` (included, as the engine's
 * decode includes it; an end-of-generation token does not stop it unless listed).
 */
export async function llamaGreedy(
  model: LlamaModel,
  prompt: readonly number[],
  count: number,
  stop: readonly number[] = [],
): Promise<number[]> {
  const ctx = await context(model, prompt.length + count);
  try {
    const sequence = ctx.getSequence();
    const out: number[] = [];
    let input: ControlledEvaluateInputItem[] = prompt.map((id) => id as Token);
    while (out.length < count) {
      const last = input.at(-1) as Token;
      input[input.length - 1] = [last, { generateNext: { token: true, options: { temperature: 0 } } }];
      const results = await sequence.controlledEvaluate(input);
      const token = results.at(-1)?.next?.token;
      if (token == null) throw new Error(`llamaGreedy: no token after ${out.length}`);
      out.push(token);
      if (stop.includes(token)) break;
      input = [token];
    }
    return out;
  } finally {
    await ctx.dispose();
  }
}

/**
 * A text-protocol policy on llama.cpp at temperature 0, as the lab's embedded policy acts: fed the
 * episode's ids (its prompt, then each turn's ids and observation's), it decodes greedily until a
 * turn's stop tag or `maxTokens`. No log-probs.
 */
export function llamaTextPolicy(model: LlamaModel, tokenizer: WordTokenizer): Policy {
  const stop = textStopTokens(tokenizer.tokens).map((token) => tokenizer.requireId(token));
  return {
    id: "llama.cpp",
    protocol: "text",
    tokenizer,
    act: async (contexts) => {
      const steps: PolicyStep[] = [];
      for (const c of contexts) {
        const ids = [...c.prompt.tokenIds];
        for (const turn of c.turns) ids.push(...turn.tokenIds, ...(turn.observation?.tokenIds ?? []));
        const tokenIds = await llamaGreedy(model, ids, c.maxTokens, stop);
        const stopped = stop.includes(tokenIds.at(-1)!);
        steps.push({
          text: tokenizer.decode(tokenIds),
          tokenIds,
          logprobs: null,
          finishReason: stopped ? "stop" : "length",
        });
      }
      return steps;
    },
  };
}

/** The engine's greedy continuation of `prompt` through its KV-cache decode (the rollout path). */
export async function engineGreedy(
  model: HfEngineModel,
  prompt: readonly number[],
  count: number,
): Promise<number[]> {
  const session = new DecodeSession(model.kvModel, null, { rows: 1 });
  try {
    session.feed(0, [...prompt]);
    const [result] = await session.generate([
      { slot: 0, maxNew: count, stop: [], rng: createRng(0), sampling: { temperature: 0, topP: 1 } },
    ]);
    return result!.ids;
  } finally {
    session.dispose();
  }
}

/** GPT-2's byte → character table (`bytes_to_unicode`): printable bytes as themselves, the rest from U+0100. */
export function byteLevelCharacters(): string[] {
  const chars: string[] = [];
  let next = 256;
  for (let b = 0; b < 256; b++) {
    const printable = (b >= 0x21 && b <= 0x7e) || (b >= 0xa1 && b <= 0xac) || (b >= 0xae && b <= 0xff);
    chars.push(String.fromCodePoint(printable ? b : next++));
  }
  return chars;
}

/**
 * A copy of a checkpoint folder (the fixtures have no tokenizer; llama.cpp needs one) with a
 * byte-level BPE tokenizer.json of 256 ids: id b is byte b, except id 127 (DEL), which is the one
 * merge's `Ġt` (llama.cpp refuses a BPE vocabulary without merges); Qwen2's pre-tokenizer.
 */
export async function withByteTokenizer(folder: string): Promise<string> {
  const copy = join(await mkdtemp(join(tmpdir(), "agentrl-gguf-")), "model");
  await cp(folder, copy, { recursive: true });
  const vocab: Record<string, number> = {};
  byteLevelCharacters().forEach((char, id) => {
    if (id !== 127) vocab[char] = id;
  });
  vocab["Ġt"] = 127;
  const regex =
    "(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\\r\\n\\p{L}\\p{N}]?\\p{L}+|\\p{N}| ?[^\\s\\p{L}\\p{N}]+[\\r\\n]*|\\s*[\\r\\n]+|\\s+(?!\\S)|\\s+";
  const tokenizer = {
    version: "1.0",
    added_tokens: [],
    normalizer: null,
    pre_tokenizer: {
      type: "Sequence",
      pretokenizers: [
        { type: "Split", pattern: { Regex: regex }, behavior: "Isolated", invert: false },
        { type: "ByteLevel", add_prefix_space: false, trim_offsets: false, use_regex: false },
      ],
    },
    post_processor: null,
    decoder: { type: "ByteLevel", add_prefix_space: true, trim_offsets: true, use_regex: true },
    model: { type: "BPE", vocab, merges: [["Ġ", "t"]] },
  };
  await writeFile(join(copy, "tokenizer.json"), JSON.stringify(tokenizer));
  return copy;
}
