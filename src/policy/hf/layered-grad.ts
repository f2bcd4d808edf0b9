/**
 * A LoRA adapter's gradient on a frozen Hugging Face base, layer by layer with recomputation
 * (gradient checkpointing at every block), so that a real model's update holds one block's
 * activations and a few hundred tokens' logits at a time instead of the whole graph's.
 *
 * One fused program (engine/train.ts `accumulate`) keeps every block's attention probabilities,
 * feed-forward inputs and the [B,T,V] logits with their log-softmax and entropy terms alive for
 * its backward: at Qwen3-0.6B's shape (V = 151,936) one micro-batch of 4 × 448 tokens took the
 * process from 7.2 to 22.4 GB (docs/real-checkpoints.md). Here one micro-batch runs:
 *
 * 1. the embedding, gathered on the host (the table is frozen: no gradient reaches it);
 * 2. forward, block by block: x_{l+1} = block_l(x_l) (one program serves every layer: the layer's
 *    weights are inputs), keeping only each block's input x_l [B,T,D];
 * 3. the head, over chunks of N tokens flattened across rows: the final norm, the log-prob of each
 *    next token, the log-partition (and entropy) over the vocabulary, the value head when the
 *    run has a critic, the per-token loss and its metrics, and the loss's gradient with respect to
 *    the chunk's x_L (and the value head). Every per-token loss here is elementwise in the tokens
 *    (rl/loss.ts `ppoLoss`, `crossEntropy`), so chunking changes nothing but the summation order;
 * 4. backward, block by block from the last: the block's forward is recomputed from x_l inside the
 *    program that takes its vector-Jacobian product (jax-js `vjp`), giving dx_l and the block's
 *    adapter gradient.
 *
 * Step 4 recomputes the forward of step 2: about a third more arithmetic than the fused program,
 * as PyTorch's gradient checkpointing costs. A micro-batch's rows go through 1–4 in groups of at
 * most GROUP_TOKENS tokens (their sums are the batch's). Dropout masks are drawn from one key per
 * (micro-batch, row group, layer), the same in the forward and in its recomputation.
 *
 * B=batch rows, T=time, D=hidden, N=head-chunk tokens, V=vocabulary, L=layers.
 */
import { mixSeeds } from "../../core/random.ts";
import { type JaxArray, jax, nn, np, random } from "../../engine/jax.ts";
import { takeHostData } from "../../engine/onnx/host-copies.ts";
import { abstractInput, abstractTree, buildProgram, type Compiled } from "../../engine/onnx/jit.ts";
import type { HostData } from "../../engine/onnx/runtime.ts";
import type { MicroBatchGradient } from "../../engine/train.ts";
import {
  arrayFromHost,
  flattenTree,
  type HostTensor,
  type ParamTree,
  unflattenTree,
} from "../../engine/tree.ts";
import {
  type PerTokenLoss,
  type TokenBatch,
  type TokenLossOptions,
  weighTokenLoss,
} from "../embedded/losses.ts";
import { type ValueHeadParams, valueHeadScores } from "../embedded/model.ts";
import { type LoraConfig, type LoraParams, loraAdapters } from "./lora.ts";
import { blockContext, blockNorm, type HfLayerParams, hfBlock } from "./model.ts";
import type { WithValueHead } from "./token-loss.ts";
import type { HfCheckpoint } from "./weights.ts";

type Program = Extract<Compiled, { kind: "onnx" }>;

/**
 * Whether a LoRA gradient on `checkpoint` runs layer by layer: AGENTRL_HF_LAYERED=1 always, =0
 * never (one fused program per micro-batch), unset when its weights pass 1 GiB. The fused program
 * is faster where the whole graph fits memory easily (at Qwen3-0.6B's shape the layered update took
 * 60–65 s a step where the fused one took 38 s, and 5.9 GB instead of 23.3 GB for the run), so small
 * models keep it.
 */
export function layeredGradientsOn(weightBytes: number): boolean {
  const raw = process.env.AGENTRL_HF_LAYERED;
  if (raw === undefined || raw === "") return weightBytes > LAYERED_FROM_BYTES;
  if (raw === "1") return true;
  if (raw === "0") return false;
  throw new Error(`AGENTRL_HF_LAYERED must be 0 or 1, got "${raw}"`);
}

const LAYERED_FROM_BYTES = 2 ** 30;

/**
 * Tokens a micro-batch's rows are grouped into (at least one row): the block programs' activations
 * (attention scores T² per head, feed-forward [tokens, intermediate]) are those of one group.
 */
const GROUP_TOKENS = 2048;

/** Tokens per head chunk: N·V floats ≤ 2^24 (64 MB per [N,V] array), between 32 and 1024. */
export function headChunkTokens(vocabSize: number): number {
  return Math.max(32, Math.min(1024, Math.floor(2 ** 24 / vocabSize / 16) * 16));
}

/** A tree of host tensors as a program's abstract argument, its data and paths in leaf order. */
function hostArgument(tensors: Record<string, { shape: readonly number[]; data: unknown }>): {
  abstract: unknown;
  data: HostData[];
  paths: string[];
} {
  const { abstract, paths } = abstractTree(
    Object.fromEntries(
      Object.entries(tensors).map(([path, { shape, data }]) => [
        path,
        { shape, dtype: data instanceof Int32Array ? "int32" : "float32" },
      ]),
    ),
  );
  return { abstract, data: paths.map((path) => tensors[path].data as HostData), paths };
}

export interface LayeredGradientOptions {
  loss: PerTokenLoss;
  lossOptions?: TokenLossOptions;
  /** Seed of the dropout keys. */
  seed?: number;
  /** Tokens per head chunk (default `headChunkTokens(V)`). */
  headTokens?: number;
  /** Tokens per group of rows (default GROUP_TOKENS). */
  groupTokens?: number;
}

/**
 * The layered gradient of `lora` on `checkpoint`'s frozen weights: `gradients(params, batch, step,
 * index)` for micro-batch `index` of optimizer step `step` (its dropout keys), consuming the batch
 * and not the params; `dispose` closes the programs.
 */
export function layeredLoraGradients(
  checkpoint: HfCheckpoint,
  lora: LoraConfig,
  options: LayeredGradientOptions,
): {
  gradients(
    params: WithValueHead<LoraParams>,
    batch: TokenBatch,
    step: number,
    index: number,
  ): Promise<MicroBatchGradient<WithValueHead<LoraParams>>>;
  dispose(): void;
} {
  const config = checkpoint.config;
  const tensors = checkpoint.tensors;
  const {
    temperature = 1,
    entropy = false,
    values: wantValues = false,
    valueGradient = false,
  } = options.lossOptions ?? {};
  const D = config.hiddenSize;
  const V = config.vocabSize;
  const N = options.headTokens ?? headChunkTokens(V);
  const dropout = lora.dropout > 0;
  const programs = new Map<string, Program>();

  const layerTensors = (layer: number) =>
    Object.fromEntries(
      Object.entries(tensors)
        .filter(([path]) => path.startsWith(`layers.${layer}.`))
        .map(([path, tensor]) => [path.slice(`layers.${layer}.`.length), tensor]),
    );
  const layerWeights = Array.from({ length: config.layers }, (_, l) => hostArgument(layerTensors(l)));
  const headTensors: Record<string, HostTensor> = {
    norm: tensors.norm,
    head: tensors.lmHead ?? tensors.embed,
  };
  if (tensors.normBias) headTensors.normBias = tensors.normBias;
  const headWeights = hostArgument(headTensors);
  const keyShape = (() => {
    const key = random.key(0);
    const shape = [...key.shape];
    key.dispose();
    return shape;
  })();

  const program = (
    name: string,
    signature: string,
    f: (...args: never[]) => unknown,
    abstract: unknown[],
  ) => {
    const key = `${name} ${signature}`;
    let built = programs.get(key);
    if (!built) {
      const compiled = buildProgram(f as never, abstract, jax.tree.leaves(abstract as never).length, key, {
        name: `hf-layered-${name}`,
        memPattern: false,
        arena: false,
      });
      if (compiled.kind === "fallback") throw new Error(`layered LoRA gradient: ${compiled.reason}`);
      built = compiled;
      programs.set(key, built);
    }
    return built;
  };

  /** block_l(x) with the layer's adapter (and its dropout key). Consumes everything. */
  const block = (w: HfLayerParams, a: LoraParams["layers"][number], key: JaxArray | null, x: JaxArray) => {
    const [rope, mask] = blockContext(x.shape[1], config);
    const adapter = loraAdapters({ layers: [a] }, lora, key ? { dropoutKey: key } : {})[0];
    return hfBlock(x, w, rope, mask, config, adapter);
  };

  const layerAbstract = (adapter: unknown, B: number, T: number) => [
    layerWeights[0].abstract,
    adapter,
    ...(dropout ? [abstractInput(keyShape, "uint32")] : []),
    abstractInput([B, T, D], "float32"),
  ];
  const forwardProgram = (adapter: unknown, B: number, T: number) =>
    program(
      "forward",
      `${B}x${T}`,
      (w: HfLayerParams, a: LoraParams["layers"][number], ...rest: JaxArray[]) =>
        block(w, a, dropout ? rest[0] : null, rest.at(-1)!),
      layerAbstract(adapter, B, T),
    );
  const backwardProgram = (adapter: unknown, B: number, T: number) =>
    program(
      "backward",
      `${B}x${T}`,
      (w: HfLayerParams, a: LoraParams["layers"][number], ...rest: JaxArray[]) => {
        const key = dropout ? rest[0] : null;
        const [x, cotangent] = rest.slice(-2);
        const [y, vjpFn] = jax.vjp(
          (adapterParams: LoraParams["layers"][number], input: JaxArray) =>
            block(w, adapterParams, key, input),
          [a, x] as never,
        ) as unknown as [JaxArray, ((ct: JaxArray) => [ParamTree, JaxArray]) & { dispose(): void }];
        y.dispose();
        const [da, dx] = vjpFn(cotangent);
        vjpFn.dispose();
        return [dx, da];
      },
      [...layerAbstract(adapter, B, T), abstractInput([B, T, D], "float32")],
    );

  /**
   * The head program over N flattened tokens: [loss, metrics, dx [N,D], dValue?] from the block
   * stack's output x [N,D], the next ids [N] (the token each position predicts), the per-token
   * extras and weights [N] aligned with those next ids, and the value head when the run has one.
   */
  const headProgram = (extraNames: string[], value: unknown | null) =>
    program(
      "head",
      `${N} ${extraNames.join(",")} value=${value !== null}`,
      (
        weights: { norm: JaxArray; normBias?: JaxArray; head: JaxArray },
        x: JaxArray,
        next: JaxArray,
        extra: Record<string, JaxArray>,
        tokenWeights: JaxArray,
        valueHead?: ValueHeadParams,
      ) => {
        const lossOf = (input: JaxArray, head: ValueHeadParams | null) => {
          const h = blockNorm(input, weights.norm, weights.normBias, config.normEps); // [N,D]
          const headWeight = weights.head;
          let picked = h.ref.mul(np.take(headWeight.ref, next, 0)).sum(-1); // [N]
          let logits = np.matmul(h.ref, headWeight.transpose()); // [N,V]
          if (temperature !== 1) {
            logits = logits.div(temperature);
            picked = picked.div(temperature);
          }
          const logZ = nn.logsumexp(logits.ref, -1); // [N]
          let tokenEntropy: JaxArray | null = null;
          if (entropy) {
            const logp = logits.sub(np.expandDims(logZ.ref, -1));
            tokenEntropy = np.exp(logp.ref).mul(logp).sum(-1).neg();
          } else logits.dispose();
          let scores: JaxArray | null = null;
          if (head) scores = valueHeadScores(h, head, valueGradient);
          else h.dispose();
          const out = weighTokenLoss(
            options.loss,
            { logprobs: picked.sub(logZ), entropy: tokenEntropy, values: scores },
            extra,
            tokenWeights,
          );
          return [out.loss, out.metrics];
        };
        if (!valueHead) {
          const [[loss, metrics], dx] = jax.valueAndGrad((input: JaxArray) => lossOf(input, null) as never, {
            hasAux: true,
          })(x) as unknown as [[JaxArray, Record<string, JaxArray>], JaxArray];
          return { loss, metrics, dx };
        }
        const [[loss, metrics], [dx, dValue]] = jax.valueAndGrad(
          (input: JaxArray, head: ValueHeadParams) => lossOf(input, head) as never,
          { hasAux: true, argnums: [0, 1] },
        )(x, valueHead as never) as unknown as [
          [JaxArray, Record<string, JaxArray>],
          [JaxArray, ValueHeadParams],
        ];
        return { loss, metrics, dx, dValue };
      },
      [
        headWeights.abstract,
        abstractInput([N, D], "float32"),
        abstractInput([N], "int32"),
        Object.fromEntries(extraNames.map((name) => [name, abstractInput([N], "float32")])),
        abstractInput([N], "float32"),
        ...(value === null ? [] : [value]),
      ],
    );

  /** A program's outputs as the tree it returned (leaves: host arrays). */
  const run = (built: Program, data: HostData[]) =>
    jax.tree.unflatten(built.outTree as never, built.program.run(data) as never) as unknown;

  return {
    async gradients(params, batch, step, index) {
      const [B, T] = batch.ids.shape;
      const ids = takeHostData(batch.ids) as Int32Array;
      const tokenWeights = takeHostData(batch.weights) as Float32Array;
      const extraNames = Object.keys(batch.extra).sort();
      const extras = extraNames.map((name) => takeHostData(batch.extra[name]) as Float32Array);
      const { value, ...adapterTree } = params;
      const critic = wantValues ? (value ?? null) : null;
      if (wantValues && !critic) throw new Error("hf token loss: values need a value head (params.value)");
      // The adapter's host data per layer (the arrays stay the caller's).
      const adapterLayers = (adapterTree as LoraParams).layers.map((layer) =>
        hostArgument(
          Object.fromEntries(
            flattenTree(layer as ParamTree).map(([path, leaf]) => [
              path,
              { shape: leaf.shape, data: takeHostData(leaf.ref, true) },
            ]),
          ),
        ),
      );
      const adapterAbstract = adapterLayers[0].abstract;
      const valueArgument = critic
        ? hostArgument({
            w: { shape: critic.w.shape, data: takeHostData(critic.w.ref, true) },
            b: { shape: critic.b.shape, data: takeHostData(critic.b.ref, true) },
          })
        : null;
      const head = headProgram(extraNames, valueArgument?.abstract ?? null);
      // Sums over the row groups: the loss, the metrics and every gradient, by tree path.
      let loss = 0;
      const metrics: Record<string, number> = {};
      const sums = new Map<string, Float32Array<ArrayBuffer>>();
      const add = (path: string, data: Float32Array) => {
        const sum = sums.get(path);
        if (!sum) sums.set(path, Float32Array.from(data));
        else for (let i = 0; i < data.length; i++) sum[i] += data[i];
      };

      // The micro-batch's rows in groups of at most GROUP_TOKENS tokens: every loss here is a sum
      // over tokens with weights computed on the host, so the groups' sums are the batch's.
      const groupRows = Math.max(1, Math.min(B, Math.floor((options.groupTokens ?? GROUP_TOKENS) / T)));
      for (let first = 0; first < B; first += groupRows) {
        const rows = Math.min(groupRows, B - first);
        const group = (first / groupRows) | 0;
        const at = first * T;
        const groupIds = ids.subarray(at, at + rows * T);
        const groupWeights = tokenWeights.subarray(at, at + rows * T);
        const groupExtras = extras.map((array) => array.subarray(at, at + rows * T));
        const keys = Array.from({ length: config.layers }, (_, l) => {
          if (!dropout) return [];
          const seed = mixSeeds(mixSeeds(mixSeeds(mixSeeds(options.seed ?? 0, step), index), group), l);
          return [takeHostData(random.key(seed >>> 0))];
        });

        // ---- 1. embedding (host gather; GPT-2 adds its learned positions) ----
        let x: Float32Array = new Float32Array(rows * T * D);
        const table = tensors.embed.data as Float32Array;
        const positions = tensors.positions?.data as Float32Array | undefined;
        for (let i = 0; i < rows * T; i++) {
          x.set(table.subarray(groupIds[i] * D, groupIds[i] * D + D), i * D);
          if (positions) {
            const p = Math.min(i % T, config.maxPositions - 1) * D;
            for (let d = 0; d < D; d++) x[i * D + d] += positions[p + d];
          }
        }

        // ---- 2. forward, block by block, keeping each block's input ----
        const forward = forwardProgram(adapterAbstract, rows, T);
        const inputs: Float32Array[] = [];
        for (let l = 0; l < config.layers; l++) {
          inputs.push(x);
          x = forward.program.run([
            ...layerWeights[l].data,
            ...adapterLayers[l].data,
            ...keys[l],
            x,
          ])[0] as Float32Array;
        }

        // ---- 3. the head over chunks of N tokens: loss, metrics, dL/dx_L ----
        const dxL = new Float32Array(rows * T * D);
        const chunkX = new Float32Array(N * D);
        const chunkNext = new Int32Array(N);
        const chunkExtras = extraNames.map(() => new Float32Array(N));
        const chunkWeights = new Float32Array(N);
        // Position p of row b predicts ids[b, p + 1]: its extras and weight are those of p + 1;
        // the last position of a row predicts nothing (weight 0), nor does a weightless token.
        const live: number[] = [];
        for (let b = 0; b < rows; b++)
          for (let p = 0; p + 1 < T; p++) if (groupWeights[b * T + p + 1] !== 0) live.push(b * T + p);
        for (let start = 0; start < live.length; start += N) {
          const part = live.slice(start, start + N);
          chunkX.fill(0);
          chunkNext.fill(0);
          chunkWeights.fill(0);
          for (const array of chunkExtras) array.fill(0);
          part.forEach((position, j) => {
            chunkX.set(x.subarray(position * D, position * D + D), j * D);
            chunkNext[j] = groupIds[position + 1];
            chunkWeights[j] = groupWeights[position + 1];
            groupExtras.forEach((array, e) => {
              chunkExtras[e][j] = array[position + 1];
            });
          });
          const out = run(head, [
            ...headWeights.data,
            chunkX,
            chunkNext,
            ...chunkExtras,
            chunkWeights,
            ...(valueArgument?.data ?? []),
          ]) as {
            loss: Float32Array;
            metrics: Record<string, Float32Array>;
            dx: Float32Array;
            dValue?: { w: Float32Array; b: Float32Array };
          };
          loss += out.loss[0];
          for (const [name, v] of Object.entries(out.metrics)) metrics[name] = (metrics[name] ?? 0) + v[0];
          part.forEach((position, j) => {
            dxL.set(out.dx.subarray(j * D, j * D + D), position * D);
          });
          if (out.dValue) {
            add("value.w", out.dValue.w);
            add("value.b", out.dValue.b);
          }
        }

        // ---- 4. backward, block by block, recomputing each block's forward ----
        const backward = backwardProgram(adapterAbstract, rows, T);
        let cotangent: Float32Array = dxL;
        for (let l = config.layers - 1; l >= 0; l--) {
          const [dx, da] = run(backward, [
            ...layerWeights[l].data,
            ...adapterLayers[l].data,
            ...keys[l],
            inputs[l],
            cotangent,
          ]) as [Float32Array, ParamTree];
          inputs[l] = new Float32Array(0);
          cotangent = dx;
          // The adapter's gradient leaves in the order the adapter's leaves were fed.
          (jax.tree.leaves(da as never) as unknown as Float32Array[]).forEach((data, j) => {
            add(`layers.${l}.${adapterLayers[l].paths[j]}`, data);
          });
        }
      }
      // The gradient tree in the params' own leaf order (the update adds it to a sum of their shape).
      const gradTree = unflattenTree(
        flattenTree(params as ParamTree).map(([path, leaf]) => {
          const shape = [...leaf.shape];
          const data = sums.get(path) ?? new Float32Array(shape.reduce((a, b) => a * b, 1));
          return [path, arrayFromHost({ dtype: "float32", shape, data })];
        }),
      ) as WithValueHead<LoraParams>;
      return { loss, metrics, grads: gradTree };
    },
    dispose() {
      for (const built of programs.values()) built.program.dispose();
      programs.clear();
    },
  };
}
