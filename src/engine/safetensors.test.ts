import assert from "node:assert/strict";
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { test } from "node:test";
import {
  decodeSafetensors,
  encodeSafetensors,
  readSafetensorsFile,
  SafetensorsError,
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
