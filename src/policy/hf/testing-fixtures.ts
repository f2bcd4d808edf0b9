/** The committed transformers reference fixtures (scripts/hf-fixtures.py), for tests. */
import { readFileSync } from "node:fs";
import { join } from "node:path";

export const FIXTURES = join(import.meta.dirname, "fixtures");
export const FIXTURE_NAMES = [
  "qwen3-tied",
  "qwen3-untied-sharded",
  "llama3-bf16",
  "smollm2",
  "qwen2.5",
] as const;

export interface HfReference {
  ids: number[][];
  /** transformers' logits [B,T,V] in float32. */
  logits: Float32Array;
  prompt: number[];
  /** transformers' 64-token greedy continuation of `prompt`. */
  greedy: number[];
  /** The rotary inverse frequencies transformers computed. */
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
