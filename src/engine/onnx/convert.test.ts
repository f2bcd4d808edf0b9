/**
 * Differential tests: each primitive the converter lowers, on random shapes and values, run in
 * ONNX Runtime and in jax-js (`jax.jit`) from the same traced function, within float32 rounding.
 * The shapes are drawn so that broadcasts, transposes and dots take their virtual/pending paths.
 */
import assert from "node:assert/strict";
import { test } from "node:test";
import fc from "fast-check";
import { type JaxArray, jax, np } from "../jax.ts";
import { hostOnlyArray } from "./host-copies.ts";
import { type OnnxJitOptions, onnxJit } from "./jit.ts";

type Fn = (...args: JaxArray[]) => JaxArray[];
type Input = { shape: number[]; data: Float32Array | Int32Array; dtype: "float32" | "int32" };

const TOLERANCE = 2e-5;

function makeArray(input: Input): JaxArray {
  return np.array(input.data as never, {
    shape: input.shape,
    dtype: input.dtype === "int32" ? np.int32 : np.float32,
  });
}

/** Runs f on jax-js and on ONNX Runtime; returns the largest scaled difference and both outputs. */
function compare(
  f: Fn,
  inputs: Input[],
  options: OnnxJitOptions = {},
): { worst: number; jax: number[][]; onnx: number[][] } {
  const reference = jax.jit(f as never) as unknown as Fn & { dispose(): void };
  const converted = onnxJit(f, options);
  const want = reference(...inputs.map(makeArray)).map((a) => Array.from(a.dataSync() as Float32Array));
  const got = converted(...inputs.map(makeArray)).map((a) => Array.from(a.dataSync() as Float32Array));
  reference.dispose();
  const programs = converted.programs();
  converted.dispose();
  assert.equal(programs[0].kind, "onnx", `ran on jax-js: ${programs[0].reason}`);
  let worst = 0;
  assert.equal(got.length, want.length);
  want.forEach((values, o) => {
    assert.equal(got[o].length, values.length, `output ${o} size`);
    values.forEach((v, i) => {
      const diff = Math.abs(got[o][i] - v) / Math.max(1, Math.abs(v));
      if (!(diff <= worst)) worst = Number.isNaN(diff) ? Number.POSITIVE_INFINITY : diff;
    });
  });
  return { worst, jax: want, onnx: got };
}

function floats(shape: number[], seed: number, positive = false): Input {
  const n = shape.reduce((a, b) => a * b, 1);
  let state = seed * 2654435761 + 1;
  const data = Float32Array.from({ length: n }, () => {
    state = (state * 1103515245 + 12345) % 2147483648;
    const u = state / 2147483648;
    return positive ? 0.1 + 2 * u : 4 * u - 2;
  });
  return { shape, data, dtype: "float32" };
}

function ints(shape: number[], below: number, seed: number): Input {
  const n = shape.reduce((a, b) => a * b, 1);
  return {
    shape,
    data: Int32Array.from({ length: n }, (_, i) => (i * 7 + seed * 13) % below),
    dtype: "int32",
  };
}

const dims = (min: number, max: number) =>
  fc.array(fc.integer({ min: 1, max: 5 }), { minLength: min, maxLength: max });
const RUNS = { numRuns: 12 };

test("unary primitives match jax-js on random shapes", () => {
  const unary: [string, (x: JaxArray) => JaxArray, boolean][] = [
    ["neg", (x) => x.neg(), false],
    ["reciprocal", (x) => np.reciprocal(x), true],
    ["sqrt", (x) => np.sqrt(x), true],
    ["exp", (x) => np.exp(x), false],
    ["log", (x) => np.log(x), true],
    ["sin", (x) => np.sin(x), false],
    ["cos", (x) => np.cos(x), false],
    ["floor", (x) => np.floor(x), false],
    ["ceil", (x) => np.ceil(x), false],
  ];
  for (const [name, op, positive] of unary) {
    fc.assert(
      fc.property(dims(0, 4), fc.nat(1000), (shape, seed) => {
        const { worst } = compare((x) => [op(x)], [floats(shape, seed, positive)]);
        assert.ok(worst <= TOLERANCE, `${name} ${shape}: ${worst}`);
      }),
      { numRuns: 4 },
    );
  }
});

test("binary primitives with NumPy broadcasting (add, mul, min, max, compare, where)", () => {
  fc.assert(
    fc.property(dims(1, 4), fc.nat(1000), fc.integer({ min: 0, max: 15 }), (shape, seed, mask) => {
      // The second operand drops leading axes and has 1s where `mask` says: broadcast both ways.
      const other = shape.slice(1).map((d, i) => ((mask >> i) & 1 ? 1 : d));
      const [a, b] = [floats(shape, seed), floats(other, seed + 1)];
      const { worst } = compare(
        (x, y) => [
          x.ref.add(y.ref),
          x.ref.mul(y.ref),
          np.minimum(x.ref, y.ref),
          np.maximum(x.ref, y.ref),
          np.where(np.less(x.ref, y.ref), x.ref, y.ref.mul(2)),
          np.equal(x.ref, y.ref).astype(np.float32),
          np.lessEqual(x.ref, 0.5).astype(np.float32).add(x.mul(3)).sub(y),
        ],
        [a, b],
      );
      assert.ok(worst <= TOLERANCE, `${shape} vs ${other}: ${worst}`);
    }),
    RUNS,
  );
});

test("reductions over random axes, including broadcast axes", () => {
  fc.assert(
    fc.property(dims(1, 4), fc.nat(1000), fc.nat(15), (shape, seed, pick) => {
      const axes = shape.map((_, i) => i).filter((i) => (pick >> i) & 1);
      const axis = axes.length > 0 ? axes : [0];
      const { worst } = compare(
        (x) => {
          const wide = np.broadcastTo(np.expandDims(x.ref, 1), [shape[0], 3, ...shape.slice(1)]);
          return [x.ref.sum(axis), x.max(axis), wide.sum([1, ...axis.map((a) => (a === 0 ? 0 : a + 1))])];
        },
        [floats(shape, seed)],
      );
      assert.ok(worst <= TOLERANCE, `${shape} over ${axis}: ${worst}`);
    }),
    RUNS,
  );
});

test("sums over leading axes of many rows (a bias gradient's) match jax-js, with broadcast and unit axes", () => {
  fc.assert(
    fc.property(
      fc.integer({ min: 128, max: 350 }),
      fc.integer({ min: 1, max: 9 }),
      fc.nat(1000),
      (half, columns, seed) => {
        const rows = 2 * half;
        const { worst } = compare(
          (x) => {
            const wide = np.broadcastTo(np.expandDims(x.ref, 1), [rows, 2, columns]);
            const split = x.ref.reshape([2, half, columns]);
            return [x.sum(0), wide.sum([0, 1]), split.sum([0, 1])];
          },
          [floats([rows, columns], seed)],
        );
        // Another summation order: float32 rounding grows with the terms (n·ε·max|x|, |x| ≤ 2).
        const rounding = 2 * rows * 2 * 2 * 2 ** -23; // the widest sum has 2·rows terms
        assert.ok(worst <= rounding, `[${rows}, ${columns}]: ${worst} > ${rounding}`);
      },
    ),
    { numRuns: 6 },
  );
});

test("movement: transpose, reshape, slice, pad, flip, concatenate", () => {
  fc.assert(
    fc.property(dims(2, 4), fc.nat(1000), fc.nat(1000), (shape, seed, permSeed) => {
      const perm = shape.map((_, i) => i).sort((a, b) => ((a * 7 + permSeed) % 5) - ((b * 7 + permSeed) % 5));
      const total = shape.reduce((a, b) => a * b, 1);
      const { worst } = compare(
        (x) => {
          const t = np.transpose(x.ref, perm);
          return [
            t.ref.mul(2),
            t.ref.reshape([total]).add(1),
            np.transpose(t.ref, [...perm].reverse()).reshape([-1, shape.at(-1)!]),
            x.ref.slice([0, Math.max(1, shape[0] - 1)]),
            np.pad(
              x.ref,
              shape.map((_, i) => (i === 0 ? [1, 2] : [0, i % 2]) as [number, number]),
            ),
            np.flip(x.ref, 0),
            np.concatenate([x.ref, x.mul(-1)], 1),
            t,
          ];
        },
        [floats(shape, seed)],
      );
      assert.ok(worst <= TOLERANCE, `${shape} perm ${perm}: ${worst}`);
    }),
    RUNS,
  );
});

test("split, and the gradient of a concatenate (its transpose is a split)", () => {
  fc.assert(
    fc.property(dims(2, 4), fc.nat(1000), (shape, seed) => {
      const axis = shape.length - 1;
      const width = shape[axis] + 1; // ≥ 2: both parts non-empty
      const { worst } = compare(
        (x, w) => {
          const parts = np.split(x.ref, [Math.floor(width / 2)], axis);
          const gradient = jax.grad((y: JaxArray) =>
            np
              .concatenate([y.ref.mul(2), np.sin(y)], axis)
              .mul(w)
              .sum(),
          )(x);
          return [...parts, gradient];
        },
        [floats([...shape.slice(0, -1), width], seed), floats([...shape.slice(0, -1), 2 * width], seed + 1)],
      );
      assert.ok(worst <= TOLERANCE, `${shape}: ${worst}`);
    }),
    RUNS,
  );
});

test("matmuls with batch axes, broadcast operands and transposed layouts become exact MatMuls", () => {
  fc.assert(
    fc.property(
      fc.integer({ min: 1, max: 4 }),
      fc.integer({ min: 1, max: 5 }),
      fc.integer({ min: 1, max: 6 }),
      fc.integer({ min: 1, max: 5 }),
      fc.nat(1000),
      (B, M, K, N, seed) => {
        const { worst } = compare(
          (x, w, y) => [
            np.matmul(x.ref, w.ref), // [B,M,K]·[K,N]: w broadcast over B
            np.matmul(np.transpose(x.ref, [0, 2, 1]).reshape([B, K, M]).transpose([0, 2, 1]), w.ref), // a view chain
            np.matmul(np.transpose(w.ref), np.transpose(x.ref, [0, 2, 1])), // [N,K]·[B,K,M]
            np.matmul(x.ref, np.transpose(y.ref, [0, 2, 1])), // batched xᵀ-style
            np.vecdot(np.expandDims(x.ref, 2), np.expandDims(y.ref, 1)), // attention scores
            np.matmul(np.transpose(x, [0, 2, 1]), y), // weight-gradient shape: contraction over M
          ],
          [floats([B, M, K], seed), floats([K, N], seed + 1), floats([B, M, K], seed + 2)],
        );
        assert.ok(worst <= TOLERANCE, `B${B} M${M} K${K} N${N}: ${worst}`);
      },
    ),
    RUNS,
  );
});

test("weightsFirst: a few rows times a large weight (x·Wᵀ, the head's and a decode step's products) computed as W·xᵀ match jax-js", () => {
  fc.assert(
    fc.property(
      fc.integer({ min: 1, max: 16 }),
      fc.integer({ min: 1, max: 9 }),
      fc.integer({ min: 17, max: 40 }),
      fc.nat(1000),
      (M, K, N, seed) => {
        const { worst } = compare(
          (x, w, b) => [
            np.matmul(x.ref, np.transpose(w.ref)).add(b), // linear(): [M,K]·[N,K]ᵀ + bias
            np
              .matmul(x.reshape([M, 1, K]), np.transpose(w))
              .reshape([M, N])
              .mul(2), // rows through a view
          ],
          [floats([M, K], seed), floats([N, K], seed + 1), floats([N], seed + 2)],
          { weightsFirst: true },
        );
        assert.ok(worst <= TOLERANCE, `M${M} K${K} N${N}: ${worst}`);
      },
    ),
    RUNS,
  );
});

test("gathers: take rows, takeAlongAxis, one-hot by comparison", () => {
  fc.assert(
    fc.property(
      fc.integer({ min: 2, max: 6 }),
      fc.integer({ min: 1, max: 5 }),
      fc.nat(1000),
      (V, T, seed) => {
        const table = floats([V, 3], seed);
        const ids = ints([2, T], V, seed);
        const columns = ints([V, 2], 3, seed + 1);
        const { worst } = compare(
          (w, i, c) => [
            np.take(w.ref, i.ref, 0),
            np.takeAlongAxis(w.ref, c, -1),
            np
              .equal(i.reshape([2, T, 1]), np.arange(V, undefined, undefined, { dtype: np.int32 }))
              .astype(np.float32)
              .sum(1)
              .mul(w.sum(1)),
          ],
          [table, ids, columns],
        );
        assert.ok(worst <= TOLERANCE, `V${V} T${T}: ${worst}`);
      },
    ),
    RUNS,
  );
});

test("gradients through the lowered program: valueAndGrad of a small MLP with log-softmax", () => {
  const f = (w1: JaxArray, w2: JaxArray, x: JaxArray) => {
    const [loss, grads] = jax.valueAndGrad(
      (a: JaxArray, b: JaxArray) => {
        const h = np.maximum(np.matmul(x.ref, a), 0);
        const logits = np.matmul(h, b);
        return jax.nn.logSoftmax(logits, -1).sum().neg();
      },
      { argnums: [0, 1] } as never,
    )(w1, w2) as unknown as [JaxArray, JaxArray[]];
    x.dispose();
    return [loss, ...grads];
  };
  const { worst } = compare(f as Fn, [floats([5, 7], 1), floats([7, 4], 2), floats([3, 5], 3)]);
  assert.ok(worst <= TOLERANCE, `worst ${worst}`);
});

test("a primitive without a lowering runs on jax-js, with the same result and a warning naming it", () => {
  const warnings: string[] = [];
  const onWarning = (warning: Error) => warnings.push(warning.message);
  process.on("warning", onWarning);
  const f = onnxJit((x: JaxArray) => [np.sort(x)], { name: "sorter" });
  const out = f(np.array([3, 1, 2]))[0];
  assert.deepEqual(Array.from(out.dataSync() as Float32Array), [1, 2, 3]);
  assert.equal(f.programs()[0].kind, "fallback");
  assert.match(f.programs()[0].reason ?? "", /"sort"/);
  f.dispose();
  return new Promise<void>((resolve) =>
    setImmediate(() => {
      process.off("warning", onWarning);
      assert.ok(
        warnings.some((w) => w.includes("sorter") && w.includes("sort")),
        warnings.join("; "),
      );
      resolve();
    }),
  );
});

test("sessions are cached per input signature and bounded", () => {
  const f = onnxJit((x: JaxArray) => [x.mul(2)], { maxSessions: 2 });
  for (const n of [1, 2, 3, 2, 3]) for (const out of f(np.zeros([n]))) out.dispose();
  assert.deepEqual(
    f.programs().map((p) => p.signature.split("J")[0].trim()),
    ["float32[2]", "float32[3]"],
  );
  f.dispose();
});

test("host-only arrays: a program reads their host data; one that would run on jax-js refuses them", () => {
  const data = Float32Array.of(3, 1, 2);
  const hostOnly = () => hostOnlyArray(np.zeros([3], { dtype: np.float32 }), data);
  const double = onnxJit((x: JaxArray) => [x.mul(2)], { name: "double" });
  assert.deepEqual(Array.from(double(hostOnly())[0].dataSync() as Float32Array), [6, 2, 4]);
  double.dispose();
  const onWarning = () => {};
  process.on("warning", onWarning);
  const sorter = onnxJit((x: JaxArray) => [np.sort(x)], { name: "sorter" });
  try {
    assert.throws(() => sorter(hostOnly()), /sorter cannot run on ONNX Runtime .*host-only arrays/);
    // The same program on an ordinary array still runs on jax-js.
    assert.deepEqual(Array.from(sorter(np.array(data))[0].dataSync() as Float32Array), [1, 2, 3]);
  } finally {
    sorter.dispose();
    setImmediate(() => process.off("warning", onWarning));
  }
});
