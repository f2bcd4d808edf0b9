/**
 * The tensor encodings against hand-computed bytes: F16's rounding (nearest, ties to even) and
 * Q8_0's blocks (scale max|x|/127 as float16, int8 rounded half away from zero), and the rule
 * choosing each tensor's type. gguf-export.test.ts has the same bytes read by llama.cpp.
 */
import assert from "node:assert/strict";
import { test } from "node:test";
import { encodeF16, encodeQ8_0, ggmlByteSize } from "./gguf-quants.ts";
import { ggufTensorType, permuteRope } from "./gguf-tensors.ts";

const u16s = (bytes: Uint8Array) =>
  Array.from({ length: bytes.length / 2 }, (_, i) => bytes[2 * i]! | (bytes[2 * i + 1]! << 8));

test("F16: nearest float16, ties to even, little-endian", () => {
  const values = Float32Array.of(
    1, // 0x3c00
    -2, // sign, exponent 16: 0xc000
    1 + 2 ** -11, // halfway between 1 and 1 + 2^-10: the even one, 1
    1 + 3 * 2 ** -11, // halfway between 1 + 2^-10 (odd 0x3c01) and 1 + 2^-9: 0x3c02
    65504, // the largest float16: 0x7bff
    65520, // halfway to the next power: rounds to even, which overflows to +Inf
    2 ** -24, // the smallest subnormal: 0x0001
    2 ** -25, // halfway between 0 and 2^-24: the even one, 0
  );
  assert.deepEqual(u16s(encodeF16(values)), [0x3c00, 0xc000, 0x3c00, 0x3c02, 0x7bff, 0x7c00, 0x0001, 0x0000]);
  assert.deepEqual([...encodeF16(Float32Array.of(1))], [0x00, 0x3c]);
});

test("Q8_0: d = max|x|/127 as float16, then 32 int8 round(x/d), halves away from zero", () => {
  // Block 1: max |x| = 15.875 = 127/8, so d = 1/8 exactly (float16 0x3000) and q = 8x:
  // 15.875 → 127, −15.875 → −127, 1 → 8, 0.0625 → 0.5 → 1, −0.0625 → −1,
  // 0.1875 → 1.5 → 2, 0.3125 → 2.5 → 3 (half away from zero, not to even), the rest 0.
  const block1 = new Float32Array(32);
  block1.set([15.875, -15.875, 1, 0.0625, -0.0625, 0.1875, 0.3125]);
  // Block 2: max |x| = 1, d = float32(1/127) = 0.0078740157, stored as float16
  // 2^-7 · (1 + 8/1024) = 0.00787353515625 (0x2008); q uses the float32 d: 1 → 127, 0.25 → 31.75 → 32,
  // −0.5 → −63.5 → −64 (in float32, 0.5 · (1/d) = 63.5 exactly: 1/d rounds to 127).
  const block2 = new Float32Array(32);
  block2.set([1, 0.25, -0.5]);
  // Block 3: all zero: d = 0, every q 0.
  const bytes = encodeQ8_0(Float32Array.from([...block1, ...block2, ...new Float32Array(32)]));
  assert.equal(bytes.length, 3 * 34);
  const view = new DataView(bytes.buffer);
  const block = (i: number) => ({
    d: view.getUint16(34 * i, true),
    q: Array.from({ length: 32 }, (_, j) => view.getInt8(34 * i + 2 + j)),
  });
  assert.deepEqual(block(0), { d: 0x3000, q: [127, -127, 8, 1, -1, 2, 3, ...new Array(25).fill(0)] });
  assert.deepEqual(block(1), { d: 0x2008, q: [127, 32, -64, ...new Array(29).fill(0)] });
  assert.deepEqual(block(2), { d: 0, q: new Array(32).fill(0) });
  assert.throws(() => encodeQ8_0(new Float32Array(33)), /33 values are not whole blocks of 32/);
  assert.equal(ggmlByteSize("Q8_0", 64), 68);
  assert.equal(ggmlByteSize("F16", 3), 6);
});

test("tensor types follow convert_hf_to_gguf.py: norms, biases, vectors and positions stay F32", () => {
  const cases: [string, number[], string, string, string][] = [
    // name, shape, f32, f16, q8_0
    ["blk.0.attn_q.weight", [64, 32], "F32", "F16", "Q8_0"],
    ["token_embd.weight", [256, 64], "F32", "F16", "Q8_0"],
    ["blk.0.ffn_down.weight", [32, 96], "F32", "F16", "Q8_0"],
    ["blk.0.attn_q.weight", [16, 48], "F32", "F16", "F16"], // rows of 48: not whole Q8_0 blocks
    ["blk.0.attn_norm.weight", [64], "F32", "F32", "F32"],
    ["blk.0.attn_qkv.bias", [96], "F32", "F32", "F32"],
    ["position_embd.weight", [128, 32], "F32", "F32", "F32"],
    ["rope_freqs.weight", [8], "F32", "F32", "F32"],
  ];
  for (const [name, shape, ...types] of cases)
    assert.deepEqual(
      (["f32", "f16", "q8_0"] as const).map((type) => ggufTensorType(name, shape, type)),
      types,
      name,
    );
});

test("Llama's q rows are reordered per head from rotate-half to interleaved pairs", () => {
  // 2 heads of 4 rows, 1 column: head rows [a0 a1 b0 b1] (rotate-half: pair i is (a_i, b_i)) become
  // [a0 b0 a1 b1]: row 2i+j of a head is row j·2+i of the file's.
  const rows = Float32Array.of(0, 1, 2, 3, 10, 11, 12, 13);
  assert.deepEqual([...permuteRope(rows, [8, 1], 2)], [0, 2, 1, 3, 10, 12, 11, 13]);
  const wide = Float32Array.of(0, 0.5, 1, 1.5, 2, 2.5, 3, 3.5);
  assert.deepEqual([...permuteRope(wide, [4, 2], 1)], [0, 0.5, 2, 2.5, 1, 1.5, 3, 3.5]);
});
