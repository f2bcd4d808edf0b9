import assert from "node:assert/strict";
import { test } from "node:test";
import { decodeSafetensors, encodeSafetensors, SafetensorsError } from "./safetensors.ts";
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
