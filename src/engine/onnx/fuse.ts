/**
 * Fused operators from the patterns jax-js's decompositions leave in a converted graph. ONNX
 * Runtime's CPU provider has no general element-wise fusion, and each of these patterns is 9-15
 * passes over the activations that one kernel does in one:
 *
 *   LayerNorm   c = x − Σx·(1/D);  c · 1/√(Σc²·(1/D) + ε) · scale + bias   → LayerNormalization
 *   RMSNorm     x · 1/√(Σx²·(1/D) + ε) · scale                             → SimplifiedLayerNormalization
 *   softmax     e = exp(z − max z);  e · 1/Σe                              → Softmax
 *   log-softmax s = z − max z;  s − log Σ exp s                             → LogSoftmax
 *   GELU (tanh) x / (exp(−clip(2√(2/π)(x + 0.044715x³), ±80)) + 1)        → com.microsoft FastGelu
 *
 * (sums and maxima over the last axis; the GELU is model.ts's x·sigmoid(2z) form, whose ±80 clip
 * only changes values below 1e-34). A pattern is fused only when every value inside it is used
 * inside it alone: in a train step the backward pass reads the forward's intermediates, so there
 * the pattern stays as it is (computing them twice would cost more than it saves). Every check
 * that makes the rewrite exact — the axis is the last one, 1/D is the width's reciprocal, the
 * scale and bias are [D] — reads the shapes the converter recorded; a value whose shape is unknown
 * is not fused. Train steps get their own rewrites (the GELU with its gradient, slice gradients as
 * one Concat), and forward-only programs the whole causal attention (attention.ts).
 */

import { matchAttention } from "./attention.ts";
import {
  close,
  type FusionCounts,
  GraphIndex,
  type Match,
  orders,
  other,
  single,
  type TensorInfo,
} from "./patterns.ts";
import type { OnnxGraph, OnnxNode, OnnxTensor } from "./proto.ts";

export type { FusionCounts, TensorInfo };

/**
 * `Reshape(Reduce<op>(x, [last axis], keepdims=0), keepdims shape of x)`, the converter's form of
 * a reduction over the last axis that keeps it; returns the nodes, or null.
 */
function lastAxisReduce(index: GraphIndex, name: string, op: string, x: string | null): OnnxNode[] | null {
  const reshape = index.def(name, "Reshape");
  if (!reshape) return null;
  const reduce = index.def(reshape.inputs[0], op);
  if (!reduce || (x !== null && reduce.inputs[0] !== x)) return null;
  const shape = index.info(reduce.inputs[0])?.shape;
  if (!shape || shape.length === 0) return null;
  const axes = index.ints(reduce.inputs[1]);
  const target = index.ints(reshape.inputs[1]);
  const keepShape = [...shape.slice(0, -1), 1];
  if (axes?.length !== 1 || (axes[0] !== shape.length - 1 && axes[0] !== -1)) return null;
  if (reduce.attributes?.keepdims !== 0 || !target || target.join() !== keepShape.join()) return null;
  return [reshape, reduce];
}

/** `Neg(Reshape(ReduceMax(z)))` over the last axis: returns [nodes, z]. */
function negatedMax(index: GraphIndex, name: string): [OnnxNode[], string] | null {
  const neg = index.def(name, "Neg");
  if (!neg) return null;
  const max = lastAxisReduce(index, neg.inputs[0], "ReduceMax", null);
  return max ? [[neg, ...max], max[1].inputs[0]] : null;
}

/** `z + (−max z)` over the last axis (the stable shift of softmax): returns [nodes, z]. */
function shifted(index: GraphIndex, name: string): [OnnxNode[], string] | null {
  const add = index.def(name, "Add");
  if (!add) return null;
  for (const [z, negMax] of orders(add)) {
    const found = negatedMax(index, negMax);
    if (found && found[1] === z) return [[add, ...found[0]], z];
  }
  return null;
}

function matchSoftmax(index: GraphIndex, root: OnnxNode): Match | null {
  if (root.op !== "Mul" || root.domain) return null;
  for (const [e, r] of orders(root)) {
    const exp = index.def(e, "Exp");
    const reciprocal = index.def(r, "Reciprocal");
    if (!exp || !reciprocal) continue;
    const sum = lastAxisReduce(index, reciprocal.inputs[0], "ReduceSum", e);
    const shift = shifted(index, exp.inputs[0]);
    if (!sum || !shift) continue;
    const [shiftNodes, z] = shift;
    return single(root, [exp, reciprocal, ...sum, ...shiftNodes], {
      op: "Softmax",
      inputs: [z],
      outputs: root.outputs,
      attributes: { axis: -1 },
    });
  }
  return null;
}

function matchLogSoftmax(index: GraphIndex, root: OnnxNode): Match | null {
  if (root.op !== "Add" || root.domain) return null;
  for (const [s, negLog] of orders(root)) {
    const neg = index.def(negLog, "Neg");
    const log = neg && index.def(neg.inputs[0], "Log");
    if (!neg || !log) continue;
    const shift = shifted(index, s);
    if (!shift) continue;
    const reshape = index.def(log.inputs[0], "Reshape");
    const reduce = reshape && index.def(reshape.inputs[0], "ReduceSum");
    const exp = reduce && index.def(reduce.inputs[0], "Exp");
    if (!exp || exp.inputs[0] !== s) continue;
    const sum = lastAxisReduce(index, log.inputs[0], "ReduceSum", exp.outputs[0]);
    if (!sum) continue;
    const [shiftNodes, z] = shift;
    return single(root, [neg, log, ...sum, exp, ...shiftNodes], {
      op: "LogSoftmax",
      inputs: [z],
      outputs: root.outputs,
      attributes: { axis: -1 },
    });
  }
  return null;
}

/** `Mul(Reshape(ReduceSum(v)), 1/D)` over the last axis of width D: the mean. */
function mean(index: GraphIndex, name: string, of: string | null): OnnxNode[] | null {
  const mul = index.def(name, "Mul");
  if (!mul) return null;
  for (const [summed, inverse] of orders(mul)) {
    const sum = lastAxisReduce(index, summed, "ReduceSum", of);
    if (!sum) continue;
    const width = index.info(sum[1].inputs[0])?.shape.at(-1);
    if (width !== undefined && close(index.scalar(inverse), 1 / width)) return [mul, ...sum];
  }
  return null;
}

/** A LayerNorm's nodes (root, the bias Add, last) and the values inside it, by role. */
type LayerNormParts = {
  x: string;
  scale: string;
  bias: string;
  epsilon: number;
  inside: OnnxNode[];
  /** mean [.., 1], −mean, c = x − mean, c², 1/√(var + ε), √(var + ε), c · 1/√(var + ε) */
  mean: string;
  negMean: string;
  centered: string;
  inverse: string;
  std: string;
  normed: string;
};

/**
 * `value · 1/√(Σvalue²·(1/D) + ε) · scale` rooted at the Mul `scaleMul`, every way its inputs can
 * be read so: the core both norms share (a LayerNorm's value is x − mean(x), an RMSNorm's x).
 */
function* scaledNorms(index: GraphIndex, scaleMul: OnnxNode) {
  for (const [normed, scale] of orders(scaleMul)) {
    const normMul = index.def(normed, "Mul");
    if (!normMul) continue;
    for (const [value, inverse] of orders(normMul)) {
      const reciprocal = index.def(inverse, "Reciprocal");
      const sqrt = reciprocal && index.def(reciprocal.inputs[0], "Sqrt");
      const plusEps = sqrt && index.def(sqrt.inputs[0], "Add");
      if (!plusEps) continue;
      for (const [variance, eps] of orders(plusEps)) {
        const epsilon = index.scalar(eps);
        const squareMean = epsilon === null ? null : mean(index, variance, null);
        const square = squareMean && index.def(squareMean[2].inputs[0], "Mul");
        if (!squareMean || !square || square.inputs[0] !== value || square.inputs[1] !== value) continue;
        yield {
          value,
          scale,
          normed,
          inverse,
          epsilon: epsilon as number,
          std: reciprocal.inputs[0],
          inside: [normMul, reciprocal, sqrt, plusEps, ...squareMean, square],
        };
      }
    }
  }
}

function layerNormParts(index: GraphIndex, root: OnnxNode): LayerNormParts | null {
  if (root.op !== "Add" || root.domain) return null;
  for (const [scaled, bias] of orders(root)) {
    const scaleMul = index.def(scaled, "Mul");
    if (!scaleMul) continue;
    for (const norm of scaledNorms(index, scaleMul)) {
      const sub = index.def(norm.value, "Add");
      if (!sub) continue;
      for (const [x, negMean] of orders(sub)) {
        const neg = index.def(negMean, "Neg");
        const xMean = neg && mean(index, neg.inputs[0], x);
        const info = index.info(x);
        if (!xMean || !info) continue;
        const width = info.shape.at(-1);
        const isVector = (name: string) => index.info(name)?.shape.join() === `${width}`;
        if (!isVector(norm.scale) || !isVector(bias)) continue;
        return {
          x,
          scale: norm.scale,
          bias,
          epsilon: norm.epsilon,
          inside: [scaleMul, ...norm.inside, sub, neg, ...xMean],
          mean: neg.inputs[0],
          negMean,
          centered: norm.value,
          inverse: norm.inverse,
          std: norm.std,
          normed: norm.normed,
        };
      }
    }
  }
  return null;
}

function matchLayerNorm(index: GraphIndex, root: OnnxNode): Match | null {
  const parts = layerNormParts(index, root);
  if (!parts) return null;
  return single(root, parts.inside, {
    op: "LayerNormalization",
    inputs: [parts.x, parts.scale, parts.bias],
    outputs: root.outputs,
    attributes: { axis: -1, epsilon: { float: parts.epsilon } },
  });
}

/**
 * An RMSNorm (the Llama and Qwen blocks' norm, hf/model.ts `rmsNorm`): ONNX Runtime's
 * SimplifiedLayerNormalization (its own operator in the default domain, float accumulation),
 * x / √(mean(x²) + ε) · scale over the last axis.
 */
function matchRmsNorm(index: GraphIndex, root: OnnxNode): Match | null {
  if (root.op !== "Mul" || root.domain) return null;
  for (const { value: x, scale, epsilon, inside } of scaledNorms(index, root)) {
    const info = index.info(x);
    if (info?.dtype !== "float32" || index.info(scale)?.shape.join() !== `${info.shape.at(-1)}`) continue;
    // x − mean(x): a LayerNorm's inside (its own match, which has the bias Add as root).
    const centering = index.def(x, "Add");
    if (centering?.inputs.some((input) => index.def(input, "Neg"))) continue;
    return single(root, inside, {
      op: "SimplifiedLayerNormalization",
      inputs: [x, scale],
      outputs: root.outputs,
      attributes: { axis: -1, epsilon: { float: epsilon } },
    });
  }
  return null;
}

/**
 * A LayerNorm whose intermediates a gradient reads (a train step's): the forward becomes one
 * LayerNormalization with its Mean and InvStdDev outputs, and the values the backward reads are
 * recomputed from those — c = x − mean, −mean, √(var + ε) = 1/InvStdDev, c·InvStdDev — one or two
 * passes over the activations instead of the six (and seven small ones) jax-js's decomposition
 * takes. With any other intermediate read outside the pattern stays as it is.
 */
function matchLayerNormWithGradient(index: GraphIndex, root: OnnxNode): Match | null {
  const parts = layerNormParts(index, root);
  if (!parts || index.info(parts.x)?.dtype !== "float32") return null;
  const inside = new Set([root, ...parts.inside]);
  const readOutside = (name: string) => (index.consumers.get(name) ?? []).some((node) => !inside.has(node));
  const produced = parts.inside.flatMap((node) => node.outputs);
  const { mean, negMean, centered, inverse, std, normed } = parts;
  const recomputable = new Set([mean, negMean, centered, inverse, std, normed]);
  const wanted = produced.filter(readOutside);
  if (wanted.length === 0 || wanted.some((name) => !recomputable.has(name))) return null;
  // The group takes the place of the pattern's first node (the backward may read an intermediate
  // before the LayerNorm's last node): x, scale and bias must exist by then.
  const anchor = [root, ...parts.inside].reduce((a, b) =>
    index.position.get(a)! < index.position.get(b)! ? a : b,
  );
  const at = index.position.get(anchor)!;
  for (const input of [parts.x, parts.scale, parts.bias]) {
    const producer = index.producer.get(input);
    if (producer && index.position.get(producer)! > at) return null;
  }
  const fresh = index.freshNames("ln");
  const name = (value: string) => (wanted.includes(value) ? value : fresh());
  const meanName = name(mean);
  const inverseName = name(inverse);
  const emitted: OnnxNode[] = [
    {
      op: "LayerNormalization",
      inputs: [parts.x, parts.scale, parts.bias],
      outputs: [root.outputs[0], meanName, inverseName],
      attributes: { axis: -1, epsilon: { float: parts.epsilon } },
    },
  ];
  const centeredName = wanted.includes(centered) || wanted.includes(normed) ? name(centered) : null;
  if (centeredName) emitted.push({ op: "Sub", inputs: [parts.x, meanName], outputs: [centeredName] });
  if (wanted.includes(negMean)) emitted.push({ op: "Neg", inputs: [meanName], outputs: [negMean] });
  if (wanted.includes(std)) emitted.push({ op: "Reciprocal", inputs: [inverseName], outputs: [std] });
  if (centeredName && wanted.includes(normed))
    emitted.push({ op: "Mul", inputs: [centeredName, inverseName], outputs: [normed] });
  return {
    name: "LayerNormalizationWithGradient",
    remove: [root, ...parts.inside],
    emit: new Map([[anchor, emitted]]),
    keep: [...root.outputs, ...wanted],
  };
}

const GELU_CUBIC = 0.044715;
const GELU_SCALE = 2 * Math.sqrt(2 / Math.PI);

/** The forward GELU ending in `root` = x · r: its input, its nodes and the values a gradient reads. */
type GeluForward = {
  x: string;
  /** (x²·a + 1), the cubic's factor */
  p: string;
  /** 2z before the clip */
  u: string;
  clipped: OnnxNode;
  e: string;
  r: string;
  nodes: OnnxNode[];
};

function geluForward(index: GraphIndex, root: OnnxNode): GeluForward | null {
  if (root.op !== "Mul" || root.domain) return null;
  for (const [x, r] of orders(root)) {
    const reciprocal = index.def(r, "Reciprocal");
    const plusOne = reciprocal && index.def(reciprocal.inputs[0], "Add");
    if (!plusOne) continue;
    for (const [e, one] of orders(plusOne)) {
      const exp = index.scalar(one) === 1 ? index.def(e, "Exp") : null;
      const neg = exp && index.def(exp.inputs[0], "Neg");
      // clip(t, −80, 80) as Max(Min(t, 80), −80)
      const max = neg && index.def(neg.inputs[0], "Max");
      const min = max && index.def(max.inputs[0], "Min");
      if (!min || index.scalar(max.inputs[1]) !== -80 || index.scalar(min.inputs[1]) !== 80) continue;
      // t = (x²·a + 1)·x·c
      const scaled = index.def(min.inputs[0], "Mul");
      if (!scaled) continue;
      for (const [cubic, c] of orders(scaled)) {
        if (!close(index.scalar(c), GELU_SCALE)) continue;
        const times = index.def(cubic, "Mul");
        if (!times) continue;
        for (const [inner, x2] of orders(times)) {
          if (x2 !== x) continue;
          const plus = index.def(inner, "Add");
          if (!plus) continue;
          for (const [aTerm, one2] of orders(plus)) {
            const aMul = index.scalar(one2) === 1 ? index.def(aTerm, "Mul") : null;
            if (!aMul) continue;
            for (const [sq, a] of orders(aMul)) {
              const square = index.def(sq, "Mul");
              if (!square || !close(index.scalar(a), GELU_CUBIC)) continue;
              if (square.inputs[0] !== x || square.inputs[1] !== x) continue;
              return {
                x,
                p: inner,
                u: min.inputs[0],
                clipped: min,
                e,
                r,
                nodes: [root, reciprocal, plusOne, exp, neg, max, min, scaled, times, plus, aMul, square],
              };
            }
          }
        }
      }
    }
  }
  return null;
}

/**
 * `x = a + bias`, or `x = Reshape(a + bias)` keeping the last axis, with `bias` of shape [last dim]
 * and `a` of the sum's shape: FastGelu adds such a bias itself, so the projection before it stays a
 * plain MatMul instead of ORT's Gemm with the bias copied into its output first (measured: ~1 ms
 * less per layer of scoring). Returns the nodes it replaces, `a`, `bias` and the Reshape's shape.
 */
function biasAdd(
  index: GraphIndex,
  x: string,
): { nodes: OnnxNode[]; a: string; bias: string; reshape: string | null } | null {
  const reshape = index.def(x, "Reshape");
  const sum = reshape ? reshape.inputs[0] : x;
  const add = index.def(sum, "Add");
  const shape = index.info(sum)?.shape;
  if (!add || !shape || shape.length < 2 || (reshape && index.info(x)?.shape.at(-1) !== shape.at(-1)))
    return null;
  if (reshape && (index.uses.get(sum) !== 1 || index.outputs.has(sum))) return null;
  for (const [a, bias] of orders(add)) {
    const biasShape = index.info(bias)?.shape;
    if (
      biasShape?.length === 1 &&
      biasShape[0] === shape.at(-1) &&
      index.info(a)?.shape.join() === shape.join()
    )
      return { nodes: reshape ? [reshape, add] : [add], a, bias, reshape: reshape?.inputs[1] ?? null };
  }
  return null;
}

function matchGelu(index: GraphIndex, root: OnnxNode): Match | null {
  const forward = geluForward(index, root);
  if (!forward || index.info(forward.x)?.dtype !== "float32") return null;
  // The bias joins only when nothing else reads x (else the GELU alone is fused).
  const usesInside = forward.nodes.flatMap((node) => node.inputs).filter((name) => name === forward.x).length;
  const biased =
    index.uses.get(forward.x) === usesInside && !index.outputs.has(forward.x)
      ? biasAdd(index, forward.x)
      : null;
  const inside = forward.nodes.slice(1);
  if (!biased)
    return single(root, inside, {
      op: "FastGelu",
      domain: "com.microsoft",
      inputs: [forward.x],
      outputs: root.outputs,
    });
  const activated = biased.reshape ? index.freshNames("gelu")() : root.outputs[0];
  const gelu = {
    op: "FastGelu",
    domain: "com.microsoft",
    inputs: [biased.a, biased.bias],
    outputs: [activated],
  };
  const reshape = biased.reshape && {
    op: "Reshape",
    inputs: [activated, biased.reshape],
    outputs: root.outputs,
  };
  return {
    name: "FastGelu",
    remove: [root, ...inside, ...biased.nodes],
    emit: new Map([[root, reshape ? [gelu, reshape] : [gelu]]]),
    keep: [...root.outputs],
  };
}

/**
 * GELU and its gradient together, as jax-js's autodiff leaves them in a train step (32 passes over
 * the activations per layer: the forward keeps every intermediate for the backward, and the
 * backward differentiates the reciprocal, the exp and the clip one by one), rewritten as the
 * forward and the closed-form derivative sharing s = σ(u), u = c·x·(1 + a·x²):
 *   y = x·s        dy/dx = s + x·s·(1 − s)·c·(1 + 3a·x²)
 * in 14 passes. The clip only mattered where |u| > 80, where both give the same values to 1e-34.
 */
function matchGeluWithGradient(index: GraphIndex, root: OnnxNode): Match | null {
  const forward = geluForward(index, root);
  const dtype = forward && index.info(forward.x)?.dtype;
  if (!forward || (dtype !== "float32" && dtype !== "float64")) return null;
  const { x, p, u, clipped, e, r } = forward;
  const c = forward.nodes[7].inputs.find((name) => name !== forward.nodes[8].outputs[0])!;
  // The clip's gradient masks: Less(80, u) and Less(min(u, 80), −80).
  const lessHigh = index.use(u, "Less", (n) => index.scalar(n.inputs[0]) === 80 && n.inputs[1] === u);
  const lessLow = index.use(clipped.outputs[0], "Less", (n) => index.scalar(n.inputs[1]) === -80);
  // −r², the reciprocal's derivative.
  const r2 = index.use(r, "Mul", (n) => n.inputs[0] === r && n.inputs[1] === r);
  const negR2 = r2 && index.use(r2.outputs[0], "Neg");
  if (!lessHigh || !lessLow || !negR2) return null;
  // The incoming gradient g reaches the backward through x·g, whose product with −r² starts it.
  const times = index.use(negR2.outputs[0], "Mul");
  const xg = times && index.def(other(times, negR2.outputs[0]), "Mul");
  if (!times || !xg?.inputs.includes(x)) return null;
  const g = other(xg, x);
  const direct = index.use(r, "Mul", (n) => n !== r2 && n !== forward.nodes[0] && n.inputs.includes(g)); // g·r
  const de = index.use(times.outputs[0], "Mul", (n) => n.inputs.includes(e)); // e·(…)
  const negDe = de && index.use(de.outputs[0], "Neg");
  const whereLow = negDe && index.use(negDe.outputs[0], "Where", (n) => n.inputs[0] === lessLow.outputs[0]);
  const whereHigh =
    whereLow && index.use(whereLow.outputs[0], "Where", (n) => n.inputs[0] === lessHigh.outputs[0]);
  const gu = whereHigh && index.use(whereHigh.outputs[0], "Mul", (n) => n.inputs.includes(c)); // ∂/∂u
  if (!direct || !gu || index.scalar(whereLow.inputs[1]) !== 0 || index.scalar(whereHigh.inputs[1]) !== 0)
    return null;
  // u = p·x·c: the product rule's three terms, summed with g·r.
  const gux = index.use(gu.outputs[0], "Mul", (n) => n.inputs.includes(x)); // gu·x
  const guxa = gux && index.use(gux.outputs[0], "Mul"); // ·a
  // x·(gu·x·a) twice (the cube's two x factors), and gu·p
  const xTerms = guxa ? index.usesOf(guxa.outputs[0], "Mul", (n) => n.inputs.includes(x)) : [];
  const term3 = index.use(gu.outputs[0], "Mul", (n) => n.inputs.includes(p));
  if (!guxa || xTerms.length !== 2 || !term3 || !close(index.scalar(other(guxa, gux.outputs[0])), GELU_CUBIC))
    return null;
  const [term1, term2] = xTerms;
  const sum1 = index.use(direct.outputs[0], "Add", (n) => n.inputs.includes(term1.outputs[0]));
  const sum2 = sum1 && index.use(sum1.outputs[0], "Add", (n) => n.inputs.includes(term2.outputs[0]));
  const sum3 = sum2 && index.use(sum2.outputs[0], "Add", (n) => n.inputs.includes(term3.outputs[0]));
  if (!sum3) return null;

  const fresh = index.freshNames("gelu");
  const k = (value: number) => index.constant(dtype, value);
  const cValue = GELU_SCALE;
  const [x2, t1, t2, uu, s, oneMinus, sd, sdx, d1, d2, q1, q2] = Array.from({ length: 12 }, fresh);
  const node = (op: string, inputs: string[], output: string): OnnxNode => ({
    op,
    inputs,
    outputs: [output],
  });
  const forwardNodes = [
    node("Mul", [x, x], x2),
    node("Mul", [x2, k(cValue * GELU_CUBIC)], t1),
    node("Add", [t1, k(cValue)], t2),
    node("Mul", [t2, x], uu),
    node("Sigmoid", [uu], s),
    node("Mul", [x, s], root.outputs[0]),
  ];
  const backwardNodes = [
    node("Sub", [k(1), s], oneMinus),
    node("Mul", [s, oneMinus], sd),
    node("Mul", [sd, x], sdx),
    node("Mul", [x2, k(3 * cValue * GELU_CUBIC)], d1),
    node("Add", [d1, k(cValue)], d2),
    node("Mul", [sdx, d2], q1),
    node("Add", [q1, s], q2),
    node("Mul", [q2, g], sum3.outputs[0]),
  ];
  const backward = [lessHigh, lessLow, r2, negR2, times, xg, direct, de, negDe, whereLow, whereHigh, gu];
  return {
    name: "GeluWithGradient",
    remove: [...forward.nodes, ...backward, gux, guxa, term1, term2, term3, sum1, sum2, sum3],
    emit: new Map([
      [root, forwardNodes],
      [sum3, backwardNodes],
    ]),
    keep: [root.outputs[0], sum3.outputs[0]],
    constants: index.takeConstants(),
  };
}

/**
 * A sum of zero-padded pieces that tile one axis, `Pad(a) + Pad(b) + Pad(c)`, is their `Concat`:
 * the gradient of slicing a value into parts (a train step's q, k, v from the packed projection)
 * comes out of jax-js's autodiff as one Pad per part and the Adds between them, three passes over
 * the whole [B,T,3,H,K] value and two more for the sums where a Concat writes it once.
 */
function matchConcat(index: GraphIndex, root: OnnxNode): Match | null {
  if (root.op !== "Add" || root.domain) return null;
  const adds: OnnxNode[] = [root];
  const pads: OnnxNode[] = [];
  const visit = (name: string): boolean => {
    const add = index.def(name, "Add");
    if (add && index.uses.get(name) === 1) {
      adds.push(add);
      return add.inputs.every(visit);
    }
    const pad = index.def(name, "Pad");
    if (pad?.inputs.length !== 2 || (pad.attributes?.mode ?? "constant") !== "constant") return false;
    pads.push(pad);
    return true;
  };
  if (!root.inputs.every(visit) || pads.length < 2) return null;
  const shape = index.info(root.outputs[0])?.shape;
  if (!shape) return null;
  const rank = shape.length;
  let axis = -1;
  const pieces: { start: number; end: number; input: string }[] = [];
  for (const pad of pads) {
    const widths = index.ints(pad.inputs[1]);
    const inShape = index.info(pad.inputs[0])?.shape;
    if (widths?.length !== 2 * rank || inShape?.length !== rank) return null;
    const padded = [...Array(rank).keys()].filter((a) => widths[a] !== 0 || widths[rank + a] !== 0);
    if (padded.length !== 1 || widths.some((w) => w < 0)) return null;
    if (axis === -1) axis = padded[0];
    if (padded[0] !== axis || inShape.some((d, a) => a !== axis && d !== shape[a])) return null;
    pieces.push({ start: widths[axis], end: shape[axis] - widths[rank + axis], input: pad.inputs[0] });
  }
  pieces.sort((a, b) => a.start - b.start);
  if (pieces[0].start !== 0 || pieces.at(-1)!.end !== shape[axis]) return null;
  if (pieces.some((piece, i) => i > 0 && piece.start !== pieces[i - 1].end)) return null;
  return single(root, [...adds.slice(1), ...pads], {
    op: "Concat",
    inputs: pieces.map((p) => p.input),
    outputs: root.outputs,
    attributes: { axis },
  });
}

type Matcher = (index: GraphIndex, root: OnnxNode) => Match | null;

const PASSES: Matcher[][] = [
  [
    matchLayerNorm,
    matchLayerNormWithGradient,
    matchRmsNorm,
    matchSoftmax,
    matchLogSoftmax,
    matchGelu,
    matchGeluWithGradient,
    matchConcat,
  ],
  [matchAttention],
];

/** Whether every value the match removes is used inside it alone (those it keeps excepted). */
function selfContained(index: GraphIndex, match: Match): boolean {
  const removed = new Set(match.remove);
  if (removed.size !== match.remove.length) return false;
  const keep = new Set(match.keep);
  const produced = new Set(match.remove.flatMap((node) => node.outputs).filter((name) => !keep.has(name)));
  const usedInside = new Map<string, number>();
  for (const node of match.remove)
    for (const input of node.inputs)
      if (produced.has(input)) usedInside.set(input, (usedInside.get(input) ?? 0) + 1);
  for (const name of produced) {
    if (index.outputs.has(name)) return false;
    if ((index.uses.get(name) ?? 0) !== (usedInside.get(name) ?? 0)) return false;
  }
  return true;
}

/** One pass: every self-contained match of `matchers` rewritten. */
function fusePass(
  graph: OnnxGraph,
  info: Map<string, TensorInfo>,
  matchers: Matcher[],
  counts: FusionCounts,
  skip: ReadonlySet<string>,
): OnnxGraph {
  const index = new GraphIndex(graph, info);
  const removed = new Set<OnnxNode>();
  const emitted = new Map<OnnxNode, OnnxNode[]>();
  const constants: OnnxTensor[] = [];
  for (const node of graph.nodes) {
    if (removed.has(node)) continue;
    for (const matcher of matchers) {
      const match = matcher(index, node);
      index.takeConstants();
      if (!match || skip.has(match.name) || match.remove.some((n) => removed.has(n))) continue;
      if (!selfContained(index, match)) continue;
      for (const inner of match.remove) removed.add(inner);
      for (const [anchor, nodes] of match.emit) emitted.set(anchor, nodes);
      constants.push(...(match.constants ?? []));
      counts[match.name] = (counts[match.name] ?? 0) + 1;
      break;
    }
  }
  if (emitted.size === 0) return graph;
  const nodes = graph.nodes.flatMap((node) => emitted.get(node) ?? (removed.has(node) ? [] : [node]));
  return { ...graph, nodes, initializers: [...graph.initializers, ...constants] };
}

/** The graph without nodes whose outputs nothing reads and initializers no node reads. */
function withoutDeadCode(graph: OnnxGraph): OnnxGraph {
  const live = new Set(graph.outputs.map((output) => output.name));
  const nodes: OnnxNode[] = [];
  for (let i = graph.nodes.length - 1; i >= 0; i--) {
    const node = graph.nodes[i];
    if (!node.outputs.some((name) => live.has(name))) continue;
    nodes.push(node);
    for (const input of node.inputs) live.add(input);
  }
  nodes.reverse();
  const initializers = graph.initializers.filter((tensor) => live.has(tensor.name));
  return { ...graph, nodes, initializers };
}

/**
 * The graph with chains of Reshapes collapsed (a Reshape of a Reshape reads the first one's input:
 * jax-js's decompositions leave chains of two and three, and each is a node ONNX Runtime runs,
 * 436 of a 28M model's 1,071 decode nodes) and without Reshapes to the shape their input already
 * has (the converter writes one for each weight a dot reads in its own layout: on a graph input
 * ONNX Runtime cannot alias the buffer, so each one copied its weight on every call). A Reshape
 * only relabels its input's elements, so the values are the same; the Reshapes no one reads any
 * more go with the dead code.
 */
function withoutIdentityReshapes(graph: OnnxGraph, info: Map<string, TensorInfo>): OnnxGraph {
  const index = new GraphIndex(graph, info);
  const renamed = new Map<string, string>();
  const resolve = (name: string) => renamed.get(name) ?? name;
  // Output of each Reshape kept → what it reshapes (never itself a Reshape's output).
  const reshaped = new Map<string, string>();
  let changed = false;
  const nodes: OnnxNode[] = [];
  for (const node of graph.nodes) {
    const inputs = node.inputs.map(resolve);
    if (node.op === "Reshape" && !node.domain) {
      const target = index.ints(node.inputs[1]);
      // Explicit sizes (−1 is inferred from the count; 0 would copy a dimension of the input).
      if (target?.every((d) => d > 0 || d === -1) && reshaped.has(inputs[0]))
        inputs[0] = reshaped.get(inputs[0])!;
      const shape = index.info(inputs[0])?.shape;
      if (
        !index.outputs.has(node.outputs[0]) &&
        shape &&
        target?.every((d) => d > 0) &&
        target.join() === shape.join()
      ) {
        renamed.set(node.outputs[0], inputs[0]);
        changed = true;
        continue;
      }
      reshaped.set(node.outputs[0], inputs[0]);
    }
    const same = inputs.every((name, i) => name === node.inputs[i]);
    changed ||= !same;
    nodes.push(same ? node : { ...node, inputs });
  }
  return changed ? { ...graph, nodes } : graph;
}

const BROADCASTING = new Set([
  "Add",
  "Sub",
  "Mul",
  "Div",
  "Pow",
  "Max",
  "Min",
  "Equal",
  "Less",
  "LessOrEqual",
  "Greater",
  "GreaterOrEqual",
  "And",
  "Or",
  "Where",
]);

/**
 * The graph with each rank-0 constant that meets, in an element-wise operator, a tensor whose last
 * axis is 1 (a mean or a sum kept as [B, T, 1]) given that tensor's rank as [1, …, 1]. ONNX
 * Runtime's CPU broadcast then walks the tensor in one span instead of one span per element:
 * measured on [32,64,1]·scalar, 54 µs a node instead of 11, and ~200 µs instead of 12 on
 * [32,4,64,1] (a train step has ~80 such nodes). The values are the same.
 */
export function withRankedScalars(graph: OnnxGraph, info: Map<string, TensorInfo>): OnnxGraph {
  const scalars = new Map(graph.initializers.filter((t) => t.shape.length === 0).map((t) => [t.name, t]));
  if (scalars.size === 0) return graph;
  const index = new GraphIndex(graph, info);
  const ranked = new Map<string, OnnxTensor>();
  const rankedName = (tensor: OnnxTensor, rank: number) => {
    const name = `${tensor.name}_rank${rank}`;
    if (!ranked.has(name)) ranked.set(name, { ...tensor, name, shape: Array(rank).fill(1) });
    return name;
  };
  let changed = false;
  const nodes = graph.nodes.map((node) => {
    if (node.domain || !BROADCASTING.has(node.op) || !node.inputs.some((name) => scalars.has(name)))
      return node;
    const shapes = node.inputs.filter((name) => !scalars.has(name)).map((name) => index.info(name)?.shape);
    if (shapes.length === 0 || shapes.some((shape) => shape === undefined)) return node;
    const rank = Math.max(...shapes.map((shape) => shape!.length));
    if (rank === 0 || !shapes.every((shape) => shape!.length === 0 || shape!.at(-1) === 1)) return node;
    changed = true;
    const inputs = node.inputs.map((name) =>
      scalars.has(name) ? rankedName(scalars.get(name)!, rank) : name,
    );
    return { ...node, inputs };
  });
  if (!changed) return graph;
  return withoutDeadCode({ ...graph, nodes, initializers: [...graph.initializers, ...ranked.values()] });
}

/**
 * The graph with every self-contained pattern rewritten (each emitted group in place of its
 * anchor, so the order stays topological), and how many of each it rewrote; `skip` names fusions
 * left out (by the names the counts use). Attention runs on the result of the element-wise pass,
 * whose Softmax it matches. Then Reshapes to their input's own shape are dropped, and so are the
 * values nothing reads any more (the causal mask once every layer's attention is fused, the
 * removed nodes' constants).
 */
export function fuseGraph(
  graph: OnnxGraph,
  info: Map<string, TensorInfo>,
  skip: ReadonlySet<string> = new Set(),
): { graph: OnnxGraph; counts: FusionCounts } {
  const counts: FusionCounts = {};
  let fused = graph;
  for (const matchers of PASSES) fused = fusePass(fused, info, matchers, counts, skip);
  fused = withoutIdentityReshapes(fused, info);
  return { graph: fused === graph ? graph : withoutDeadCode(fused), counts };
}
