/**
 * A loaded Hugging Face checkpoint on the ONNX engine: its parameters stay host arrays (never
 * copied into jax-js's heap: a real model's weights would not fit its 4 GiB), the programs are
 * traced from model.ts on abstract inputs and run in ONNX Runtime. `kvModel` serves the host KV
 * caches (policy/embedded/host-kv.ts: prefill and decode output only their new K/V rows);
 * `logits` runs the full causal forward, for scoring and for checking parity.
 */
import { jax } from "../../engine/jax.ts";
import { abstractInput, buildProgram, type Compiled } from "../../engine/onnx/jit.ts";
import type { HostData } from "../../engine/onnx/runtime.ts";
import { unflattenTree } from "../../engine/tree.ts";
import type { KvModel } from "../embedded/host-kv.ts";
import type { HfModelConfig } from "./config.ts";
import { type HfParams, hfForwardChunk, hfLogits, hfTokenLogprobs } from "./model.ts";
import { type HfCheckpoint, loadHfCheckpoint } from "./weights.ts";

/** Context the engine allows by default (the caches grow in buckets up to it). */
export const DEFAULT_CONTEXT = 8192;

export class HfEngineModel {
  readonly checkpoint: HfCheckpoint;
  readonly config: HfModelConfig;
  /** Longest sequence served (≤ the checkpoint's max_position_embeddings). */
  readonly maxLen: number;
  readonly kvModel: KvModel;
  readonly #abstract: unknown;
  readonly #data: HostData[];
  readonly #programs = new Map<string, Extract<Compiled, { kind: "onnx" }>>();

  constructor(checkpoint: HfCheckpoint, options: { maxLen?: number } = {}) {
    this.checkpoint = checkpoint;
    this.config = checkpoint.config;
    this.maxLen = Math.min(options.maxLen ?? DEFAULT_CONTEXT, this.config.maxPositions);
    // The parameter tree with abstract leaves, and the host data in its leaf order.
    const pathOf = new Map<unknown, string>();
    const toAbstract = (node: unknown): unknown => {
      if (typeof node === "string") {
        const leaf = abstractInput([...checkpoint.tensors[node].shape], "float32");
        pathOf.set(leaf, node);
        return leaf;
      }
      if (Array.isArray(node)) return node.map(toAbstract);
      return Object.fromEntries(Object.entries(node as object).map(([k, v]) => [k, toAbstract(v)]));
    };
    this.#abstract = toAbstract(unflattenTree(Object.keys(checkpoint.tensors).map((path) => [path, path])));
    this.#data = (jax.tree.leaves(this.#abstract as never) as unknown[]).map(
      (leaf) => checkpoint.tensors[pathOf.get(leaf)!].data as HostData,
    );
    const config = this.config;
    this.kvModel = {
      key: JSON.stringify({ hf: config, maxLen: this.maxLen }),
      layers: config.layers,
      kvHeads: config.kvHeads,
      headDim: config.headDim,
      vocabSize: config.vocabSize,
      maxLen: this.maxLen,
      abstractParams: this.#abstract,
      paramData: this.#data,
      forward: (p, keys, values, ids, start, count, withLogits, rowIndex) =>
        hfForwardChunk(p as HfParams, keys, values, ids, start, count, config, withLogits, rowIndex),
    };
  }

  /** Reads a checkpoint folder. */
  static load(folder: string, options: { maxLen?: number } = {}): HfEngineModel {
    return new HfEngineModel(loadHfCheckpoint(folder), options);
  }

  /** Logits [B·T·V] of a full causal pass over `ids` (B rows of T tokens, row-major). */
  logits(ids: Int32Array, rows: number): Float32Array {
    return this.#run("logits", ids, rows, (p, x) => hfLogits(p, x, this.config, { gather: true }));
  }

  /** log p(ids[t] | ids[<t]) for t ≥ 1: [B·(T−1)] (scoring, without the [B,T,V] logits leaving ORT). */
  tokenLogprobs(ids: Int32Array, rows: number): Float32Array {
    return this.#run("logprobs", ids, rows, (p, x) => hfTokenLogprobs(p, x, this.config));
  }

  #run(name: string, ids: Int32Array, rows: number, f: (p: HfParams, ids: never) => unknown): Float32Array {
    const T = ids.length / rows;
    if (!Number.isInteger(T) || T < 2)
      throw new Error(`HfEngineModel.${name}: ${ids.length} ids for ${rows} rows`);
    const key = `${name} ${rows}x${T}`;
    let program = this.#programs.get(key);
    if (!program) {
      const built = buildProgram(
        f as never,
        [this.#abstract, abstractInput([rows, T], "int32")],
        this.#data.length + 1,
        key,
        { name: `hf-${name}` },
      );
      if (built.kind === "fallback") throw new Error(`HfEngineModel: ${built.reason}`);
      program = built;
      this.#programs.set(key, program);
    }
    return program.program.run([...this.#data, ids])[0] as Float32Array;
  }

  /** Closes the full-forward sessions (the KV programs are shared and bounded in host-kv.ts). */
  dispose(): void {
    for (const program of this.#programs.values()) program.program.dispose();
    this.#programs.clear();
  }
}
