/**
 * A loaded Hugging Face checkpoint on the ONNX engine: its parameters stay host arrays (never
 * copied into jax-js's heap: a real model's weights would not fit its 4 GiB), the programs are
 * traced from model.ts on abstract inputs and run in ONNX Runtime. `kvModel` serves the host KV
 * caches (policy/embedded/host-kv.ts: prefill and decode output only their new K/V rows);
 * `logits` runs the full causal forward, for scoring and for checking parity. With `lora` (a PEFT
 * adapter, peft.ts) every program computes the adapted model, the adapter's tensors being inputs
 * beside the base's (unmerged: a new adapter of the same shape reuses the programs). With
 * `trainedWeights` (full fine-tuning: a checkpoint whose weights change every optimizer step) no
 * program bakes the weights in: every one takes them as inputs, so an engine model over the next
 * step's weights reuses the programs and reads the new values. `sequenceValues` scores sequences
 * with a critic's value head (rl/hf-training.ts's `gae`) on the same forward.
 */
import { jax } from "../../engine/jax.ts";
import { abstractInput, abstractTree, buildProgram, type Compiled } from "../../engine/onnx/jit.ts";
import type { HostData } from "../../engine/onnx/runtime.ts";
import { type KvModel, releaseFixedParams } from "../embedded/host-kv.ts";
import { type ValueHeadParams, valueHeadValues } from "../embedded/model.ts";
import type { HfModelConfig } from "./config.ts";
import { headChunkTokens } from "./layered-grad.ts";
import { type LoraParams, loraAdapters } from "./lora.ts";
import {
  type HfLayerAdapter,
  type HfParams,
  hfForwardChunk,
  hfHeadLogprobs,
  hfHidden,
  hfLogits,
  hfTokenLogprobs,
  splitHead,
} from "./model.ts";
import type { PeftAdapter } from "./peft.ts";
import { type HfCheckpoint, loadHfCheckpoint } from "./weights.ts";

/** The engine's parameter tree: the base's, and the adapter's under `lora`. */
type EngineParams = HfParams & { lora?: LoraParams };

export interface HfEngineOptions {
  maxLen?: number;
  /** Serve the base with this adapter (unmerged). */
  lora?: PeftAdapter;
  /**
   * The checkpoint's weights are a trainer's, new each step (full fine-tuning): the decode
   * programs take them as inputs instead of baking them in as constants (which would serve the
   * weights of the step that first built them, or build and hold a packed copy per step).
   */
  trainedWeights?: boolean;
  /** Tokens per head chunk of `sequenceLogprobs` (default `headChunkTokens(V)`). */
  headTokens?: number;
}

/**
 * A name for each loaded checkpoint's weights, which no engine model changes (an adapter is trained
 * beside them): decode programs bake them in as constants and are shared by every engine model of
 * the checkpoint (a trainer makes one per step). Once the checkpoint is collected, its programs
 * are closed.
 */
const checkpointIds = new WeakMap<HfCheckpoint, string>();
let checkpointCount = 0;
const released = new FinalizationRegistry<string>(releaseFixedParams);

function checkpointId(checkpoint: HfCheckpoint): string {
  let id = checkpointIds.get(checkpoint);
  if (id === undefined) {
    id = `hf-checkpoint-${++checkpointCount}`;
    checkpointIds.set(checkpoint, id);
    released.register(checkpoint, id);
  }
  return id;
}

/** `ids` padded at the end to a multiple of 64 tokens (a few programs serve every length). */
function padRow(ids: readonly number[]): Int32Array {
  const padded = new Int32Array(Math.ceil(ids.length / 64) * 64);
  padded.set(ids);
  return padded;
}

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

  readonly lora: PeftAdapter | undefined;
  readonly #headTokens: number;

  constructor(checkpoint: HfCheckpoint, options: HfEngineOptions = {}) {
    this.checkpoint = checkpoint;
    this.config = checkpoint.config;
    this.lora = options.lora;
    this.#headTokens = options.headTokens ?? headChunkTokens(checkpoint.config.vocabSize);
    this.maxLen = Math.min(options.maxLen ?? DEFAULT_CONTEXT, this.config.maxPositions);
    const tensors = { ...checkpoint.tensors };
    for (const [path, tensor] of Object.entries(options.lora?.tensors ?? {}))
      tensors[`lora.${path}`] = tensor;
    // The parameter tree with abstract leaves, and the host data in its leaf order.
    const { abstract, paths } = abstractTree(
      Object.fromEntries(
        Object.entries(tensors).map(([path, { shape }]) => [path, { shape, dtype: "float32" }]),
      ),
    );
    this.#abstract = abstract;
    this.#data = paths.map((path) => tensors[path].data as HostData);
    const config = this.config;
    this.kvModel = {
      key: JSON.stringify({ hf: config, maxLen: this.maxLen, lora: options.lora?.config ?? null }),
      layers: config.layers,
      kvHeads: config.kvHeads,
      headDim: config.headDim,
      vocabSize: config.vocabSize,
      maxLen: this.maxLen,
      abstractParams: this.#abstract,
      paramData: this.#data,
      normalise: true,
      smallSteps: true,
      reserveCapacity: true,
      ...(options.trainedWeights
        ? {}
        : {
            fixedParams: {
              id: checkpointId(checkpoint),
              leaves: paths.map((path) => !path.startsWith("lora.")),
            },
          }),
      forward: (p, keys, values, ids, start, count, withLogits, rowIndex) => {
        const [base, adapters] = this.#split(p as EngineParams);
        return hfForwardChunk(base, keys, values, ids, start, count, config, withLogits, rowIndex, adapters);
      },
    };
  }

  /** The base's tree and the adapter's per-layer terms (none without an adapter). */
  #split(params: EngineParams): [HfParams, HfLayerAdapter[] | undefined] {
    const { lora, ...base } = params;
    return [base, lora && this.lora ? loraAdapters(lora, this.lora.config) : undefined];
  }

  /** Reads a checkpoint folder. */
  static load(folder: string, options: HfEngineOptions = {}): HfEngineModel {
    return new HfEngineModel(loadHfCheckpoint(folder), options);
  }

  /** Logits [B·T·V] of a full causal pass over `ids` (B rows of T tokens, row-major). */
  logits(ids: Int32Array, rows: number): Float32Array {
    return this.#run("logits", ids, rows, (p, x) => {
      const [base, adapters] = this.#split(p);
      return hfLogits(base, x, this.config, { gather: true, adapters });
    });
  }

  /**
   * log p(ids[t] | ids[<t]) for t ≥ 1: [B·(T−1)] (scoring, without the [B,T,V] logits leaving ORT),
   * under softmax(logits / temperature).
   */
  tokenLogprobs(ids: Int32Array, rows: number, temperature = 1): Float32Array {
    return this.#run(`logprobs@${temperature}`, ids, rows, (p, x) => {
      const [base, adapters] = this.#split(p);
      return hfTokenLogprobs(base, x, this.config, adapters, temperature);
    });
  }

  /**
   * log p(ids[t] | ids[<t]) of each sequence, aligned with its ids (0 at t = 0), one row at a time
   * padded at the end to a multiple of 64 tokens (a causal pass: the padding changes nothing before
   * it, and a few programs serve every length), under softmax(logits / temperature). The body
   * runs once per sequence and the head over chunks of tokens (layered-grad.ts's
   * `headChunkTokens`), so no [T, V] logits are ever held: at Qwen3-0.6B's vocabulary one
   * 512-token row's logits and log-softmax are 0.6 GB.
   */
  sequenceLogprobs(sequences: readonly (readonly number[])[], temperature = 1): Float32Array[] {
    const D = this.config.hiddenSize;
    const N = this.#headTokens;
    return sequences.map((ids) => {
      const out = new Float32Array(ids.length);
      if (ids.length < 2) return out;
      const hidden = this.#run(
        "hidden",
        padRow(ids),
        1,
        (p, x) => {
          const [base, adapters] = this.#split(p);
          const [body, lmHead] = splitHead(base);
          lmHead.dispose();
          return hfHidden(body, x as never, this.config, { gather: true, adapters });
        },
        [],
        { arena: false },
      ); // [T,D], final-normed
      const chunk = new Float32Array(N * D);
      const next = new Int32Array(N);
      for (let start = 0; start < ids.length - 1; start += N) {
        const n = Math.min(N, ids.length - 1 - start);
        chunk.fill(0);
        next.fill(0);
        chunk.set(hidden.subarray(start * D, (start + n) * D));
        for (let j = 0; j < n; j++) next[j] = ids[start + 1 + j];
        const logprobs = this.#run(
          `head@${temperature}`,
          next,
          1,
          (p, h, nextIds) => {
            const [base] = this.#split(p);
            const [body, head] = splitHead(base);
            jax.tree.dispose(body as never);
            return hfHeadLogprobs(h as never, head, nextIds as never, temperature);
          },
          [{ shape: [N, D], data: chunk }],
          { arena: false },
        );
        out.set(logprobs.subarray(0, n), start + 1);
      }
      return out;
    });
  }

  /**
   * A critic's values of each sequence, aligned with its ids as the trainer's (index t: V of the
   * state before token t, read from the final normed hidden state that predicts token t; 0 at
   * t = 0), from the value head `head` (host arrays: `w` [D], `b` [1]; inputs of the program, so
   * every head reuses it) on this model's forward (the adapter applied). Rows padded as in
   * `sequenceLogprobs`.
   */
  sequenceValues(
    sequences: readonly (readonly number[])[],
    head: { w: Float32Array; b: Float32Array },
  ): Float32Array[] {
    const D = this.config.hiddenSize;
    if (head.w.length !== D || head.b.length !== 1)
      throw new Error(
        `HfEngineModel.sequenceValues: a value head of [${D}] and [1], got [${head.w.length}] and [${head.b.length}]`,
      );
    const inputs = [
      { shape: [D], data: head.w },
      { shape: [1], data: head.b },
    ];
    return sequences.map((ids) => {
      const out = new Float32Array(ids.length);
      if (ids.length < 2) return out;
      const values = this.#run(
        "values",
        padRow(ids),
        1,
        (p, w, b, x) => {
          const [base, adapters] = this.#split(p);
          const [body, lmHead] = splitHead(base);
          lmHead.dispose();
          const hidden = hfHidden(body, x as never, this.config, { gather: true, adapters });
          return valueHeadValues(hidden, { w, b } as ValueHeadParams, true);
        },
        inputs,
      );
      out.set(values.subarray(0, ids.length));
      return out;
    });
  }

  #run(
    name: string,
    ids: Int32Array,
    rows: number,
    f: (p: EngineParams, ...inputs: never[]) => unknown,
    extra: { shape: number[]; data: Float32Array }[] = [],
    runtime: { arena?: boolean } = {},
  ): Float32Array {
    const T = ids.length / rows;
    if (!Number.isInteger(T) || T < 1)
      throw new Error(`HfEngineModel.${name}: ${ids.length} ids for ${rows} rows`);
    const key = `${name} ${rows}x${T}`;
    let program = this.#programs.get(key);
    if (!program) {
      const built = buildProgram(
        f as never,
        [
          this.#abstract,
          ...extra.map(({ shape }) => abstractInput(shape, "float32")),
          abstractInput([rows, T], "int32"),
        ],
        this.#data.length + extra.length + 1,
        key,
        { name: `hf-${name}`, ...runtime },
      );
      if (built.kind === "fallback") throw new Error(`HfEngineModel: ${built.reason}`);
      program = built;
      this.#programs.set(key, program);
    }
    return program.program.run([...this.#data, ...extra.map(({ data }) => data), ids])[0] as Float32Array;
  }

  /** Closes the full-forward sessions (the KV programs are shared and bounded in host-kv.ts). */
  dispose(): void {
    for (const program of this.#programs.values()) program.program.dispose();
    this.#programs.clear();
  }
}
