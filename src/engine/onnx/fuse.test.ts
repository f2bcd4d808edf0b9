/**
 * Fused operators (fuse.ts): each pattern the model writes is replaced by its operator and gives
 * jax-js's values; a pattern whose intermediates are used elsewhere (a gradient), whose constants
 * make it something else, or whose dtype the operator lacks is left as it is and stays correct.
 */
import assert from "node:assert/strict";
import { mkdtempSync, readdirSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { test } from "node:test";
import {
  attend,
  causalMask,
  gelu as modelGelu,
  layerNorm as modelLayerNorm,
  projectQkv,
} from "../../policy/embedded/model.ts";
import { rmsNorm } from "../../policy/hf/model.ts";
import { type JaxArray, jax, nn, np } from "../jax.ts";
import { fuseGraph, withRankedScalars } from "./fuse.ts";
import { onnxJit } from "./jit.ts";
import { encodeModel, type OnnxGraph } from "./proto.ts";
import { OrtProgram } from "./runtime.ts";

type Fn = (...args: JaxArray[]) => JaxArray[];

function randomArray(shape: number[], seed: number, dtype = np.float32): JaxArray {
  let state = seed;
  const n = shape.reduce((a, b) => a * b, 1);
  const data = Array.from({ length: n }, () => {
    state = (state * 1103515245 + 12345) % 2147483648;
    return (state / 2147483648) * 8 - 4;
  });
  return np.array(data, { shape, dtype });
}

/** Runs f on ONNX Runtime and jax-js; returns what was fused and the largest difference. */
function run(f: Fn, inputs: () => JaxArray[]): { fused: Record<string, number>; worst: number } {
  const reference = jax.jit(f as never) as unknown as Fn & { dispose(): void };
  const converted = onnxJit(f);
  const want = reference(...inputs()).map((a) => Array.from(a.dataSync() as Float32Array));
  const got = converted(...inputs()).map((a) => Array.from(a.dataSync() as Float32Array));
  reference.dispose();
  const [info] = converted.programs();
  converted.dispose();
  assert.equal(info.kind, "onnx", info.reason);
  let worst = 0;
  want.forEach((values, o) => {
    values.forEach((v, i) => {
      worst = Math.max(worst, Math.abs(got[o][i] - v) / Math.max(1, Math.abs(v)));
    });
  });

  return { fused: info.fused ?? {}, worst };
}

const layerNorm = (x: JaxArray, scale: JaxArray, bias: JaxArray) => modelLayerNorm(x, { scale, bias });
const lnInputs = () => [randomArray([3, 5, 16], 1), randomArray([16], 2), randomArray([16], 3)];

test("LayerNorm, RMSNorm, softmax, log-softmax and GELU become one operator each, with jax-js's values", () => {
  const cases: [string, Fn, () => JaxArray[]][] = [
    ["LayerNormalization", (x, s, b) => [layerNorm(x, s, b)], lnInputs],
    [
      "SimplifiedLayerNormalization",
      (x, s) => [rmsNorm(x, s, 1e-6)],
      () => [randomArray([3, 5, 16], 7), randomArray([16], 8)],
    ],
    ["Softmax", (z) => [nn.softmax(z, -1)], () => [randomArray([4, 6, 9], 4)]],
    ["LogSoftmax", (z) => [nn.logSoftmax(z, -1)], () => [randomArray([4, 6, 9], 5)]],
    ["FastGelu", (x) => [modelGelu(x)], () => [randomArray([4, 33], 6)]],
  ];
  for (const [op, f, inputs] of cases) {
    const { fused, worst } = run(f, inputs);
    assert.deepEqual(fused, { [op]: 1 }, op);
    assert.ok(worst < 2e-5, `${op}: differs from jax-js by ${worst}`);
  }
});

test("a bias added just before a GELU joins the FastGelu (the projection stays a plain MatMul), unless something else reads the sum", () => {
  const dir = mkdtempSync(join(tmpdir(), "agentrl-fuse-dump-"));
  const inputs = () => [randomArray([6, 16], 11), randomArray([16, 24], 12), randomArray([24], 13)];
  const listing = (f: Fn) => {
    rmSync(dir, { recursive: true, force: true });
    process.env.AGENTRL_ONNX_DUMP = dir;
    try {
      const result = run(f, inputs);
      const [txt] = readdirSync(dir).filter((name) => name.endsWith(".txt"));
      return { ...result, nodes: readFileSync(join(dir, txt), "utf8").trim().split("\n") };
    } finally {
      delete process.env.AGENTRL_ONNX_DUMP;
    }
  };
  try {
    const biased = listing((x, w, b) => [modelGelu(np.matmul(x, w).add(b))]);
    assert.deepEqual(biased.fused, { FastGelu: 1 });
    assert.ok(biased.worst < 2e-5, `differs from jax-js by ${biased.worst}`);
    const gelu = biased.nodes.filter((line) => line.includes("FastGelu("));
    assert.equal(gelu.length, 1);
    assert.match(gelu[0], /FastGelu\([^,]+, [^,]+\)/, "FastGelu reads the bias");
    assert.ok(!biased.nodes.some((line) => / = Add\(/.test(line)), biased.nodes.join("\n"));
    // the sum is also an output: the Add stays, the GELU alone is fused
    const shared = listing((x, w, b) => {
      const h = np.matmul(x, w).add(b);
      return [modelGelu(h.ref), h];
    });
    assert.deepEqual(shared.fused, { FastGelu: 1 });
    assert.ok(shared.worst < 2e-5, `differs from jax-js by ${shared.worst}`);
    assert.ok(shared.nodes.some((line) => / = Add\(/.test(line)));
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});

test("a LayerNorm whose intermediates a gradient reads becomes LayerNormalization with Mean and InvStdDev, with jax-js's value and gradients", () => {
  const f: Fn = (x, s, b) => {
    const w = randomArray([3, 5, 16], 9);
    const loss = (p: { x: JaxArray; s: JaxArray; b: JaxArray }) => layerNorm(p.x, p.s, p.b).mul(w.ref).sum();
    const [value, grads] = jax.valueAndGrad(loss)({ x, s, b }) as [JaxArray, Record<string, JaxArray>];
    w.dispose();
    return [value, grads.x, grads.s, grads.b];
  };
  const { fused, worst } = run(f, lnInputs);
  assert.deepEqual(fused, { LayerNormalizationWithGradient: 1 });
  assert.ok(worst < 1e-4, `differs from jax-js by ${worst}`);
});

test("a LayerNorm whose variance is read elsewhere stays unfused and correct", () => {
  const f: Fn = (x, s, b) => {
    const loss = (xx: JaxArray) => {
      const mean = xx.ref.mean(-1, { keepdims: true });
      const centered = xx.sub(mean);
      const variance = np.square(centered.ref).mean(-1, { keepdims: true });
      const y = centered
        .div(np.sqrt(variance.ref.add(1e-5)))
        .mul(s.ref)
        .add(b.ref);
      return y.sum().add(variance.sum());
    };
    const [value, grad] = jax.valueAndGrad(loss)(x);
    s.dispose();
    b.dispose();
    return [value, grad];
  };
  const { fused, worst } = run(f, lnInputs);
  assert.equal(fused.LayerNormalization ?? 0, 0);
  assert.equal(fused.LayerNormalizationWithGradient ?? 0, 0);
  assert.ok(worst < 1e-4, `differs from jax-js by ${worst}`);
});

test("look-alikes are not fused: a mean over the wrong width, a sum over another axis, float64 GELU", () => {
  // (x − Σx/8)·… over a last axis of 16: not a LayerNorm.
  const notMean: Fn = (x, s, b) => {
    const m = x.ref.sum(-1, { keepdims: true }).mul(1 / 8);
    const c = x.sub(m);
    const v = np
      .square(c.ref)
      .sum(-1, { keepdims: true })
      .mul(1 / 8);
    return [
      c
        .div(np.sqrt(v.add(1e-5)))
        .mul(s)
        .add(b),
    ];
  };
  const wrong = run(notMean, lnInputs);
  assert.equal(wrong.fused.LayerNormalization ?? 0, 0);
  assert.ok(wrong.worst < 2e-5);
  // softmax over the first axis of three
  const firstAxis = run(
    (z) => [nn.softmax(z, 0)],
    () => [randomArray([4, 6, 9], 7)],
  );
  assert.equal(firstAxis.fused.Softmax ?? 0, 0);
  assert.ok(firstAxis.worst < 2e-5);
  const float64 = run(
    (x) => [modelGelu(x)],
    () => [randomArray([4, 33], 8, np.float64)],
  );
  assert.equal(float64.fused.FastGelu ?? 0, 0);
  // (jax-js's float64 exp is good to about 2e-8 relative)
  assert.ok(float64.worst < 1e-6, `float64 GELU differs by ${float64.worst}`);
});

test("GELU with its gradient (a train step's) becomes the closed-form pair, with jax-js's values and gradient", () => {
  const f: Fn = (x, w) => {
    // y = Σ gelu(x)·w: the gradient flows into GELU from a product, as from a block's next layer.
    const [value, grad] = jax.valueAndGrad((xx: JaxArray) => modelGelu(xx).mul(w.ref).sum())(x);
    w.dispose();
    return [value, grad];
  };
  // Inputs reach past the ±80 clip of 2z (|x| ≳ 9) on both sides.
  const inputs = () => [randomArray([6, 40], 9).mul(3), randomArray([6, 40], 10)];
  const { fused, worst } = run(f, inputs);
  assert.deepEqual(fused, { GeluWithGradient: 1 });
  assert.ok(worst < 1e-5, `differs from jax-js by ${worst}`);
});

// Causal self-attention as the model writes it (B=2, T=8, D=16, H=2): x, the packed q/k/v
// projection and its bias; `mask` builds the additive mask from T.
const attentionInputs = () => [
  randomArray([2, 8, 16], 11).mul(0.5),
  randomArray([16, 48], 12).mul(0.3),
  randomArray([48], 13),
];
const attention =
  (mask: (T: number) => JaxArray): Fn =>
  (x, w, b) => {
    const [q, k, v] = projectQkv(x, w, b, 2);
    return [attend(q, k, v, mask(8))];
  };

test("causal self-attention becomes one Attention operator, with jax-js's values", () => {
  const { fused, worst } = run(
    attention((T) => causalMask(T, "float32")),
    attentionInputs,
  );
  assert.equal(fused.Attention, 1);
  assert.ok(worst < 2e-5, `differs from jax-js by ${worst}`);
});

test("attention under another mask, or whose probabilities a gradient reads, stays unfused and correct", () => {
  // A mask that blocks the diagonal too, and one that blocks nothing: neither is causal.
  const strict = (T: number) => np.tri(T, T, -1, { dtype: np.float32 }).sub(1).mul(1e9);
  const open = (T: number) => np.zeros([T, T], { dtype: np.float32 });
  for (const mask of [strict, open]) {
    const { fused, worst } = run(attention(mask), attentionInputs);
    assert.equal(fused.Attention ?? 0, 0);
    assert.ok(worst < 2e-5, `differs from jax-js by ${worst}`);
  }
  const withGradient: Fn = (x, w, b) => {
    const [value, grad] = jax.valueAndGrad((ww: JaxArray) =>
      attention((T) => causalMask(T, "float32"))(x.ref, ww, b.ref)[0].sum(),
    )(w);
    x.dispose();
    b.dispose();
    return [value, grad];
  };
  const { fused, worst } = run(withGradient, attentionInputs);
  assert.equal(fused.Attention ?? 0, 0);
  assert.ok(worst < 1e-4, `differs from jax-js by ${worst}`);
});

test("the gradient of slicing a value into parts becomes one Concat; overlapping slices stay Pads", () => {
  // d/dx Σ (x[:, :, 0]·a + x[:, :, 1]·b + x[:, :, 2]·c): one padded piece per slice, tiling axis 2.
  const parts: Fn = (x, w) => {
    const grad = jax.grad((xx: JaxArray) => {
      const [q, k, v] = [0, 1, 2].map((i) => xx.ref.slice([], [], i));
      xx.dispose();
      return q.mul(w.ref).add(k.mul(w.ref).mul(2)).add(v.mul(w.ref).mul(3)).sum();
    })(x);
    w.dispose();
    return [grad];
  };
  const inputs = () => [randomArray([2, 5, 3, 4], 14), randomArray([2, 5, 4], 15)];
  const tiled = run(parts, inputs);
  assert.equal(tiled.fused.Concat, 1);
  assert.ok(tiled.worst < 1e-6, `differs from jax-js by ${tiled.worst}`);
  // x[:, :, 0:2] and x[:, :, 1:3] overlap at 1: a sum, not a concatenation.
  const overlapping: Fn = (x, u) => {
    const grad = jax.grad((xx: JaxArray) => {
      const a = xx.ref.slice([], [], [0, 2]);
      const b = xx.slice([], [], [1, 3]);
      return a.mul(u.ref).add(b.mul(u.ref).mul(2)).sum();
    })(x);
    u.dispose();
    return [grad];
  };
  const summed = run(overlapping, () => [randomArray([2, 5, 3, 4], 14), randomArray([2, 5, 2, 4], 16)]);
  assert.equal(summed.fused.Concat ?? 0, 0);
  assert.ok(summed.worst < 1e-6, `differs from jax-js by ${summed.worst}`);
});

test("a scalar constant meeting a tensor whose last axis is 1 gets that tensor's rank (same values); others stay scalars", () => {
  const io = (name: string, shape: number[]) => ({ name, dtype: "float32" as const, shape });
  const graph: OnnxGraph = {
    nodes: [
      { op: "Mul", inputs: ["x", "c"], outputs: ["a"] },
      { op: "Add", inputs: ["c", "a"], outputs: ["b"] },
      { op: "Mul", inputs: ["y", "c"], outputs: ["z"] },
    ],
    initializers: [{ name: "c", dtype: "float32", shape: [], data: Float32Array.of(0.5) }],
    inputs: [io("x", [4, 3, 1]), io("y", [4, 3])],
    outputs: [io("b", [4, 3, 1]), io("z", [4, 3])],
  };
  const info = new Map([
    ["x", { shape: [4, 3, 1], dtype: "float32" as const }],
    ["a", { shape: [4, 3, 1], dtype: "float32" as const }],
    ["y", { shape: [4, 3], dtype: "float32" as const }],
  ]);
  const rewritten = withRankedScalars(graph, info);
  assert.deepEqual(
    rewritten.nodes.map((node) => node.inputs.join(" ")),
    ["x c_rank3", "c_rank3 a", "y c"],
  );
  assert.deepEqual(rewritten.initializers.find((t) => t.name === "c_rank3")?.shape, [1, 1, 1]);
  const x = Float32Array.from({ length: 12 }, (_, i) => i - 5);
  const y = Float32Array.from({ length: 12 }, (_, i) => 2 * i);
  const run = (g: OnnxGraph) => new OrtProgram(encodeModel(g), g.inputs, g.outputs).run([x, y]);
  assert.deepEqual(run(rewritten), run(graph));
});

test("chains of Reshapes collapse into one (same values); a Reshape to its input's shape goes; a target with 0 keeps its chain", () => {
  const io = (name: string, shape: number[]) => ({ name, dtype: "float32" as const, shape });
  const shape = (name: string, dims: number[]) => ({
    name,
    dtype: "int64" as const,
    shape: [dims.length],
    data: BigInt64Array.from(dims.map(BigInt)),
  });
  const graph: OnnxGraph = {
    nodes: [
      { op: "Reshape", inputs: ["x", "s24"], outputs: ["a"] },
      { op: "Reshape", inputs: ["a", "s68"], outputs: ["b"] },
      { op: "Reshape", inputs: ["b", "s48"], outputs: ["c"] },
      { op: "Mul", inputs: ["c", "c"], outputs: ["y"] },
      { op: "Reshape", inputs: ["b", "s234"], outputs: ["z"] }, // back to x's own shape: x itself
      { op: "Neg", inputs: ["z"], outputs: ["nz"] },
      { op: "Reshape", inputs: ["a", "s0"], outputs: ["w"] }, // 0 copies a's first dimension
    ],
    initializers: [
      shape("s24", [2, 24]),
      shape("s68", [6, 8]),
      shape("s48", [48]),
      shape("s234", [2, 3, 8]),
      shape("s0", [0, 24]),
    ],
    inputs: [io("x", [2, 3, 8])],
    outputs: [io("y", [48]), io("nz", [2, 3, 8]), io("w", [2, 24])],
  };
  const info = new Map(
    (
      [
        ["x", [2, 3, 8]],
        ["a", [2, 24]],
        ["b", [6, 8]],
        ["c", [48]],
        ["z", [2, 3, 8]],
      ] as const
    ).map(([name, dims]) => [name, { shape: [...dims], dtype: "float32" as const }]),
  );
  const { graph: rewritten } = fuseGraph(graph, info);
  assert.deepEqual(
    rewritten.nodes.map((node) => `${node.outputs[0]} = ${node.op}(${node.inputs.join(" ")})`),
    ["a = Reshape(x s24)", "c = Reshape(x s48)", "y = Mul(c c)", "nz = Neg(x)", "w = Reshape(a s0)"],
  );
  const x = Float32Array.from({ length: 48 }, (_, i) => i - 20);
  const run = (g: OnnxGraph) => new OrtProgram(encodeModel(g), g.inputs, g.outputs).run([x]);
  assert.deepEqual(run(rewritten), run(graph));
});
