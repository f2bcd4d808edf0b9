/**
 * Test-only: the PEFT reference fixtures of scripts/hf-lora-fixtures.py (src/policy/hf/fixtures/lora/)
 * and the adapter and merged folders our writers make from them, the same files the script had
 * PEFT and transformers load.
 */
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { type JaxArray, jax, np } from "../../engine/jax.ts";
import {
  disposeTree,
  flattenTree,
  type HostTensor,
  type ParamTree,
  treeFromHost,
} from "../../engine/tree.ts";
import { ppoLoss } from "../../rl/loss.ts";
import {
  crossEntropy,
  type PerTokenLoss,
  type TokenBatch,
  type TokenLossOptions,
} from "../embedded/losses.ts";
import { type LoraConfig, type LoraParams, loraParamShapes, resolveLoraConfig } from "./lora.ts";
import type { HfParams } from "./model.ts";
import { peftKey, writeMergedCheckpoint, writePeftAdapter } from "./peft.ts";
import { FIXTURES } from "./testing-fixtures.ts";
import { type HfLoraBatch, hfLoraTokenLoss, type WithValueHead } from "./token-loss.ts";
import { type HfCheckpoint, loadHfCheckpoint } from "./weights.ts";

export const LORA_FIXTURES = join(FIXTURES, "lora");
export const LORA_FIXTURE_NAMES = ["qwen3-tied", "llama3-bf16", "gpt2"] as const;
export type LoraFixtureName = (typeof LORA_FIXTURE_NAMES)[number];

export interface LoraReference {
  base: HfCheckpoint;
  config: LoraConfig;
  ids: number[][];
  mask: number[][];
  /** [B,T] per token. */
  advantages: Float32Array;
  /** [B,T] the PPO ratio's denominators. */
  oldLogprobs: Float32Array;
  clip: [low: number, high: number];
  /** The adapter PEFT used, by tree path (`layers.N.q.a`). */
  adapter: Record<string, HostTensor>;
  losses: Record<"sft" | "ppo", { value: number; grads: Record<string, Float32Array> }>;
  /** PeftModel's logits [B,T,V] with this adapter. */
  peftLogits: Float32Array;
  prompt: number[];
  /** PeftModel's greedy continuation of `prompt`. */
  peftGreedy: number[];
}

export interface LoraWritten {
  adapter_sha256: Record<string, string>;
  merged_sha256: Record<string, string>;
  merged_dtype: string;
  adapter_logits: Float32Array;
  merged_logits: Float32Array;
}

export function floats(base64: string): Float32Array<ArrayBuffer> {
  const bytes = Buffer.from(base64, "base64");
  return new Float32Array(new Uint8Array(bytes).buffer);
}

export function readLoraReference(name: LoraFixtureName): LoraReference {
  const raw = JSON.parse(readFileSync(join(LORA_FIXTURES, name, "reference.json"), "utf8"));
  const base = loadHfCheckpoint(join(FIXTURES, raw.base));
  const config = resolveLoraConfig({ rank: raw.r, alpha: raw.lora_alpha, targets: raw.targets }, base.config);
  const byPath = (record: Record<string, string | { data: string }>) => {
    const out: Record<string, Float32Array<ArrayBuffer>> = {};
    for (const { path, layer, module, part } of loraParamShapes(config, base.config)) {
      const key = peftKey(layer, module, part, base.config);
      const entry = record[key];
      if (entry === undefined) throw new Error(`${name}: the reference has no ${key}`);
      out[path] = floats(typeof entry === "string" ? entry : entry.data);
    }
    return out;
  };
  const shapes = Object.fromEntries(loraParamShapes(config, base.config).map((e) => [e.path, e.shape]));
  const adapter = Object.fromEntries(
    Object.entries(byPath(raw.adapter)).map(([path, data]) => [
      path,
      { dtype: "float32", shape: shapes[path], data } satisfies HostTensor,
    ]),
  );
  const loss = (key: "sft" | "ppo") => ({
    value: raw.losses[key].value,
    grads: byPath(raw.losses[key].grads),
  });
  return {
    base,
    config,
    ids: raw.ids,
    mask: raw.mask,
    advantages: floats(raw.advantages),
    oldLogprobs: floats(raw.old_logprobs),
    clip: raw.clip,
    adapter,
    losses: { sft: loss("sft"), ppo: loss("ppo") },
    peftLogits: floats(raw.peft_logits),
    prompt: raw.prompt,
    peftGreedy: raw.peft_greedy,
  };
}

export function readLoraWritten(name: LoraFixtureName): LoraWritten {
  const raw = JSON.parse(readFileSync(join(LORA_FIXTURES, name, "written.json"), "utf8"));
  return { ...raw, adapter_logits: floats(raw.adapter_logits), merged_logits: floats(raw.merged_logits) };
}

/**
 * Writes `out/adapter` (PEFT format) and `out/merged` from the reference's adapter weights; the
 * merged folder in float32, as the script recorded transformers loading it (for every base, bf16
 * included).
 */
export async function writeLoraFixtureFolders(name: LoraFixtureName, out: string): Promise<LoraReference> {
  const reference = readLoraReference(name);
  const { base, config, adapter } = reference;
  await writePeftAdapter(join(out, "adapter"), adapter, config, base.config, name);
  await writeMergedCheckpoint(base, adapter, config, join(out, "merged"), { dtype: "float32" });
  return reference;
}

/**
 * A fixture's token batch: ids [B,T], token-mean weights over the masked (response) tokens, as the
 * reference scripts' losses weigh them, and with `ppo` the PPO extras (per-token old log-probs and
 * advantages, unit loss scales, token-mean metric scales).
 */
export function referenceTokenBatch(
  ids: number[][],
  mask: number[][],
  ppo?: { oldLogprobs: ArrayLike<number>; advantages: ArrayLike<number> },
): TokenBatch {
  const shape = [ids.length, ids[0].length];
  const flat = mask.flat();
  const count = flat.reduce((a, b) => a + b, 0);
  const perToken = (values: ArrayLike<number>) => np.array(Float32Array.from(values), { shape });
  return {
    ids: np.array(Int32Array.from(ids.flat()), { shape, dtype: np.int32 }),
    weights: perToken(flat.map((m) => m / count)),
    extra: ppo
      ? {
          oldLogprobs: perToken(ppo.oldLogprobs),
          advantages: perToken(ppo.advantages),
          lossScale: perToken(flat.map(() => 1)),
          metricScale: perToken(flat.map((m) => m / count)),
        }
      : {},
  };
}

/** The LoRA reference's token batch with PPO extras, the base beside it. */
export function loraReferenceBatch(reference: LoraReference): HfLoraBatch {
  return {
    ...referenceTokenBatch(reference.ids, reference.mask, reference),
    base: treeFromHost<HfParams>(reference.base.tensors),
  };
}

/** The two token losses the PEFT fixtures hold references for: [title, key, loss, entropy]. */
export function loraLossCases(reference: LoraReference): [string, "sft" | "ppo", PerTokenLoss, boolean][] {
  return [
    ["masked cross-entropy", "sft", crossEntropy, false],
    ["PPO-clip", "ppo", ppoLoss({ clipLow: reference.clip[0], clipHigh: reference.clip[1] }), true],
  ];
}

/**
 * The one-program gradient of a token loss on the reference's adapter (jax-js `valueAndGrad`,
 * eager): the loss, the metrics and every gradient by tree path. Consumes `params` and `batch`.
 */
export function fusedLoraGradients(
  reference: LoraReference,
  perToken: PerTokenLoss,
  lossOptions: TokenLossOptions,
  params: WithValueHead<LoraParams> = treeFromHost<LoraParams>(reference.adapter),
  batch: HfLoraBatch = loraReferenceBatch(reference),
): { loss: number; metrics: Record<string, number>; grads: Map<string, Float32Array> } {
  const loss = hfLoraTokenLoss(reference.base.config, reference.config, perToken, lossOptions);
  const [[value, metrics], grads] = jax.valueAndGrad(
    (p: WithValueHead<LoraParams>, b: HfLoraBatch) => {
      const out = loss(p, b);
      return [out.loss, out.metrics] as never;
    },
    { hasAux: true },
  )(params as never, batch as never) as unknown as [[JaxArray, Record<string, JaxArray>], LoraParams];
  const byPath = new Map(
    flattenTree(grads as ParamTree).map(([path, leaf]) => [path, leaf.ref.dataSync() as Float32Array]),
  );
  disposeTree(grads as never);
  return {
    loss: value.item() as number,
    metrics: Object.fromEntries(Object.entries(metrics).map(([name, m]) => [name, m.item() as number])),
    grads: byPath,
  };
}
