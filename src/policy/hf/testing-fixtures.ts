/** The committed transformers reference fixtures (scripts/hf-fixtures.py), for tests. */
import { readFileSync } from "node:fs";
import { join } from "node:path";
import type { HfTextSide } from "./policy.ts";

export const FIXTURES = join(import.meta.dirname, "fixtures");
export const FIXTURE_NAMES = [
  "qwen3-tied",
  "qwen3-untied-sharded",
  "llama3-bf16",
  "smollm2",
  "qwen2.5",
  "gpt2",
] as const;

export interface HfReference {
  ids: number[][];
  /** transformers' logits [B,T,V] in float32. */
  logits: Float32Array;
  prompt: number[];
  /** transformers' 64-token greedy continuation of `prompt`. */
  greedy: number[];
  /** The rotary inverse frequencies transformers computed (empty for GPT-2: no rotary). */
  invFreq: Float32Array;
  /** bfloat16 checkpoints: transformers computing in bfloat16. */
  bf16Logits?: Float32Array;
}

function floats(base64: string): Float32Array {
  const bytes = Buffer.from(base64, "base64");
  return new Float32Array(bytes.buffer.slice(bytes.byteOffset, bytes.byteOffset + bytes.byteLength));
}

export function readReference(name: string): HfReference {
  const raw = JSON.parse(readFileSync(join(FIXTURES, name, "reference.json"), "utf8"));
  return {
    ids: raw.ids,
    logits: floats(raw.logits),
    prompt: raw.prompt,
    greedy: raw.greedy,
    invFreq: floats(raw.inv_freq),
    bf16Logits: raw.bf16_logits ? floats(raw.bf16_logits) : undefined,
  };
}

/** Largest absolute difference of two equally long arrays. */
export function maxAbsDiff(a: ArrayLike<number>, b: ArrayLike<number>): number {
  if (a.length !== b.length) throw new Error(`maxAbsDiff: lengths ${a.length} and ${b.length}`);
  let worst = 0;
  for (let i = 0; i < a.length; i++) worst = Math.max(worst, Math.abs(a[i] - b[i]));
  return worst;
}

const BASE = 0x4e00;

/** The stand-in tokenizer's text of ids: one CJK character per id. */
export const chars = (ids: readonly number[]) => String.fromCodePoint(...ids.map((id) => BASE + id));

/**
 * A stand-in text side for the fixtures' 256-token models: each id is one character, the template
 * concatenates the user, assistant and tool contents, and the parser returns the text as content,
 * with `callTools` as the arguments of one `echo` tool call, with `malformed` as an unreadable call.
 */
export function standInTextSide(options: { callTools?: boolean; malformed?: boolean } = {}): HfTextSide {
  return {
    tokenizer: {
      encode: (text) => [...text].map((c) => c.codePointAt(0)! - BASE),
      decode: (ids) => chars(ids),
      eosTokenIds: [],
      vocabSize: 256,
    },
    template: {
      render: (messages) =>
        (messages as { role: string; content: string | null }[])
          .filter((m) => m.role === "user" || m.role === "tool" || m.role === "assistant")
          .map((m) => m.content ?? "")
          .join(""),
    },
    toolFormat: "none",
    parseToolCalls: (text) =>
      options.malformed
        ? { content: "", toolCalls: [], malformed: [text] }
        : options.callTools
          ? {
              content: "",
              toolCalls: [
                {
                  id: "call_0",
                  type: "function",
                  function: { name: "echo", arguments: JSON.stringify({ text }) },
                },
              ],
              malformed: [],
            }
          : { content: text, toolCalls: [], malformed: [] },
  };
}
