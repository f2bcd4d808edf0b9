import assert from "node:assert/strict";
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { test } from "node:test";
import {
  decodeSafetensors,
  encodeSafetensors,
  floatToBf16Bits,
  floatToHalfBits,
  readSafetensorsFile,
  SafetensorsError,
  writeSafetensorsFile,
} from "./safetensors.ts";
import type { HostTensor } from "./tree.ts";

const tensors: Record<string, HostTensor> = {
  "blocks.0.w": { dtype: "float32", shape: [2, 3], data: new Float32Array([1, -2, 3.5, Math.PI, -0, 1e-30]) },
  bias: { dtype: "float64", shape: [2], data: new Float64Array([Math.E, -1 / 3]) },
  step: { dtype: "int32", shape: [], data: new Int32Array([-7]) },
  key: { dtype: "uint32", shape: [2], data: new Uint32Array([0xffffffff, 12345]) },
};

test("layout: u64 LE header length, JSON header padded to 8, raw LE data in name order", () => {
  const bytes = encodeSafetensors(
    { a: { dtype: "float32", shape: [1], data: new Float32Array([1]) } },
    { who: "me" },
  );
  const n = Number(new DataView(bytes.buffer).getBigUint64(0, true));
  assert.equal((8 + n) % 8, 0);
  const header = JSON.parse(new TextDecoder().decode(bytes.subarray(8, 8 + n)));
  assert.deepEqual(header, {
    __metadata__: { who: "me" },
    a: { dtype: "F32", shape: [1], data_offsets: [0, 4] },
  });
  assert.deepEqual([...bytes.subarray(8 + n)], [0x00, 0x00, 0x80, 0x3f]); // 1.0f little-endian
});

test("round trip is bit-exact for every dtype", () => {
  const decoded = decodeSafetensors(encodeSafetensors(tensors, { format: "pt" }));
  assert.deepEqual(decoded.metadata, { format: "pt" });
  for (const [name, tensor] of Object.entries(tensors)) {
    const back = decoded.tensors[name];
    assert.equal(back.dtype, tensor.dtype);
    assert.deepEqual(back.shape, tensor.shape);
    assert.deepEqual(new Uint8Array(back.data.buffer), new Uint8Array(tensor.data.buffer), name);
  }
  assert.ok(Object.is(decoded.tensors["blocks.0.w"].data[4], -0));
});

test("truncated and corrupted files are rejected with the source named", () => {
  const bytes = encodeSafetensors(tensors);
  assert.throws(
    () => decodeSafetensors(bytes.subarray(0, bytes.length - 3), "m.safetensors"),
    (error: Error) => {
      return (
        error instanceof SafetensorsError &&
        /m\.safetensors/.test(error.message) &&
        /truncated|cover/.test(error.message)
      );
    },
  );
  assert.throws(() => decodeSafetensors(bytes.subarray(0, 5), "m.safetensors"), /shorter/);
  const badHeader = bytes.slice();
  badHeader[9] = "!".charCodeAt(0);
  assert.throws(() => decodeSafetensors(badHeader, "m.safetensors"), /not valid JSON/);
  const hugeLength = bytes.slice();
  new DataView(hugeLength.buffer).setBigUint64(0, 1n << 40n, true);
  assert.throws(() => decodeSafetensors(hugeLength, "m.safetensors"), /header length/);
});

test("a file read tensor by tensor equals the bytes decoded at once; a truncated file is named", () => {
  const dir = mkdtempSync(join(tmpdir(), "agentrl-safetensors-"));
  try {
    const bytes = encodeSafetensors(tensors, { format: "pt" });
    const whole = join(dir, "model.safetensors");
    writeFileSync(whole, bytes);
    assert.deepEqual(readSafetensorsFile(whole), decodeSafetensors(bytes));
    const cut = join(dir, "cut.safetensors");
    writeFileSync(cut, bytes.subarray(0, bytes.length - 3));
    assert.throws(
      () => readSafetensorsFile(cut),
      (error: Error) =>
        error instanceof SafetensorsError && error.message.includes(cut) && /truncated/.test(error.message),
    );
    writeFileSync(cut, bytes.subarray(0, 5));
    assert.throws(() => readSafetensorsFile(cut), /shorter/);
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});

/** A safetensors file of one tensor written by hand (the half-precision codes are read-only here). */
function halfFile(code: string, halves: number[]): Uint8Array {
  const json = JSON.stringify({
    t: { dtype: code, shape: [halves.length], data_offsets: [0, 2 * halves.length] },
  });
  const header = new TextEncoder().encode(json);
  const out = new Uint8Array(8 + header.length + 2 * halves.length);
  const view = new DataView(out.buffer);
  view.setBigUint64(0, BigInt(header.length), true);
  out.set(header, 8);
  halves.forEach((h, i) => {
    view.setUint16(8 + header.length + 2 * i, h, true);
  });
  return out;
}

test("F16 and BF16 tensors are widened to float32 exactly", () => {
  // float16: 1, -2, the largest finite (65504), the smallest subnormal (2^-24), +inf.
  const f16 = decodeSafetensors(halfFile("F16", [0x3c00, 0xc000, 0x7bff, 0x0001, 0x7c00])).tensors.t;
  assert.equal(f16.dtype, "float32");
  assert.deepEqual([...f16.data], [1, -2, 65504, 2 ** -24, Number.POSITIVE_INFINITY]);
  // bfloat16: the top 16 bits of a float32: 1, -2.5, 3.140625 (π rounded to 8 bits of mantissa).
  const bf16 = decodeSafetensors(halfFile("BF16", [0x3f80, 0xc020, 0x4049])).tensors.t;
  assert.deepEqual([...bf16.data], [1, -2.5, 3.140625]);
  assert.throws(() => decodeSafetensors(halfFile("F8_E4M3", [0])), /unsupported dtype "F8_E4M3"/);
});

/** Checks `convert` on each [value, bits] case, and that NaN stays a NaN (all exponent bits, a mantissa bit). */
function checkNarrowing(
  convert: (value: number) => number,
  cases: [number, number][],
  masks: { exponent: number; mantissa: number },
): void {
  for (const [value, bits] of cases)
    assert.equal(convert(value), bits, `${value}: ${convert(value).toString(16)}`);
  const nan = convert(Number.NaN);
  assert.equal(nan & masks.exponent, masks.exponent);
  assert.notEqual(nan & masks.mantissa, 0, "NaN keeps a mantissa bit");
}

test("float32 narrows to BF16 bits, rounded to nearest with ties to even", () => {
  const cases: [number, number][] = [
    [1, 0x3f80],
    [-0, 0x8000],
    [Math.PI, 0x4049], // 0x40490fdb: the low half is below the tie
    [1 + 2 ** -8, 0x3f80], // a tie between 0x3f80 and 0x3f81: to the even one
    [1 + 3 * 2 ** -8, 0x3f82], // a tie between 0x3f81 and 0x3f82: to the even one
    [1 + 2 ** -8 + 2 ** -20, 0x3f81], // just past the tie
    [-(1 + 2 ** -7 + 2 ** -9), 0xbf81],
    [3.4028234663852886e38, 0x7f80], // float32's largest rounds past bfloat16's: Inf
    [Number.POSITIVE_INFINITY, 0x7f80],
    [Number.NEGATIVE_INFINITY, 0xff80],
    [1e-40, 0x0001], // a float32 subnormal (0x000116c2)
  ];
  checkNarrowing(floatToBf16Bits, cases, { exponent: 0x7f80, mantissa: 0x7f });
});

test("float32 narrows to F16 bits, rounded to nearest with ties to even, subnormals and overflow included", () => {
  const cases: [number, number][] = [
    [1, 0x3c00],
    [-2, 0xc000],
    [-0, 0x8000],
    [1 + 2 ** -11, 0x3c00], // a tie: to the even mantissa
    [1 + 3 * 2 ** -11, 0x3c02],
    [1 + 2 ** -11 + 2 ** -20, 0x3c01],
    [65504, 0x7bff], // the largest finite
    [65519, 0x7bff], // below the tie with 65536
    [65520, 0x7c00], // the tie: to the even pattern, Inf
    [1e6, 0x7c00],
    [-1e6, 0xfc00],
    [Number.NEGATIVE_INFINITY, 0xfc00],
    [2 ** -14, 0x0400], // the smallest normal
    [2 ** -14 - 2 ** -25, 0x0400], // 1023.5 units of 2^-24: to 1024, the smallest normal
    [2 ** -24, 0x0001], // the smallest subnormal
    [-(2 ** -24), 0x8001],
    [2 ** -25, 0x0000], // a tie between 0 and 2^-24: to 0
    [3 * 2 ** -25, 0x0002], // a tie between 1 and 2 units: to 2
    [2 ** -25 + 2 ** -40, 0x0001],
    [2 ** -26, 0x0000],
    [5 * 2 ** -24 + 2 ** -26, 0x0005],
  ];
  checkNarrowing(floatToHalfBits, cases, { exponent: 0x7c00, mantissa: 0x3ff });
});

test("float32 tensors written as BF16 or F16 read back exactly when representable; other dtypes are untouched", () => {
  const values = [0, -0, 1, -2.5, 0.15625, 1024, 2 ** -14, Number.POSITIVE_INFINITY, Number.NaN];
  const source: Record<string, HostTensor> = {
    w: { dtype: "float32", shape: [values.length], data: new Float32Array(values) },
    bias: tensors.bias,
    step: tensors.step,
  };
  for (const code of ["BF16", "F16"] as const) {
    const bytes = encodeSafetensors(source, { format: "pt" }, { float32As: code });
    const header = JSON.parse(
      new TextDecoder().decode(
        bytes.subarray(8, 8 + Number(new DataView(bytes.buffer).getBigUint64(0, true))),
      ),
    );
    assert.deepEqual([header.w.dtype, header.bias.dtype, header.step.dtype], [code, "F64", "I32"]);
    assert.equal(header.w.data_offsets[1] - header.w.data_offsets[0], values.length * 2);
    const read = decodeSafetensors(bytes).tensors;
    assert.deepEqual(read.w.dtype, "float32");
    assert.deepEqual([...read.w.data], values, code);
    assert.ok(Object.is(read.w.data[1], -0));
    assert.deepEqual(read.bias, tensors.bias);
    assert.deepEqual(read.step, tensors.step);
    const dir = mkdtempSync(join(tmpdir(), "safetensors-half-"));
    try {
      writeFileSync(join(dir, "w.safetensors"), bytes);
      assert.deepEqual(readSafetensorsFile(join(dir, "w.safetensors")).tensors.w.data, read.w.data);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  }
  assert.throws(
    () => encodeSafetensors(source, undefined, { float32As: "F8" as "F16" }),
    /float32As must be BF16 or F16, got "F8"/,
  );
});

test("writeSafetensorsFile writes encodeSafetensors' bytes, float32 narrowed or not", async () => {
  const dir = mkdtempSync(join(tmpdir(), "st-write-"));
  try {
    const tensors: Record<string, HostTensor> = {
      "b.weight": {
        dtype: "float32",
        shape: [2, 3],
        data: Float32Array.of(1, -2.5, 3.25, 1e-8, 65504, -0),
      },
      "a.ids": { dtype: "int32", shape: [3], data: Int32Array.of(7, -1, 2 ** 30) },
      "c.bias": { dtype: "float32", shape: [1], data: Float32Array.of(0.1) },
    };
    for (const options of [{}, { float32As: "BF16" as const }, { float32As: "F16" as const }]) {
      const path = join(dir, `${options.float32As ?? "f32"}.safetensors`);
      await writeSafetensorsFile(path, tensors, { format: "pt" }, options);
      assert.deepEqual(
        new Uint8Array(readFileSync(path)),
        encodeSafetensors(tensors, { format: "pt" }, options),
      );
    }
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});
