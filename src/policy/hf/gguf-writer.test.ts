/**
 * The GGUF container: a small file's header bytes by hand, then the whole file read back by an
 * independent reader (node-llama-cpp's `readGgufFileInfo`, JavaScript, not llama.cpp's C): keys,
 * values, tensor infos, offsets aligned to 32 and the data at them.
 */
import assert from "node:assert/strict";
import { existsSync, readFileSync } from "node:fs";
import { mkdtemp } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { test } from "node:test";
import { readGgufFileInfo } from "node-llama-cpp";
import { type GgufTensor, type GgufValue, gguf, writeGguf } from "./gguf-writer.ts";

const dir = await mkdtemp(join(tmpdir(), "agentrl-gguf-writer-"));

const metadata = new Map<string, GgufValue>([
  ["general.architecture", gguf.str("llama")],
  ["test.count", gguf.u32(7)],
  ["test.offset", gguf.i32(-3)],
  ["test.eps", gguf.f32(0.5)],
  ["test.flag", gguf.bool(true)],
  ["test.words", gguf.strs(["x", "yz"])],
  ["test.types", gguf.i32s([1, -2])],
]);
// t1: [2, 3] F32, 24 bytes, padded to 32; t2: [1, 2] F16 at offset 32, 4 bytes.
const tensors: GgufTensor[] = [
  { name: "t1", shape: [2, 3], type: "F32", values: () => Float32Array.of(0, 1, 2, 3, 4, 5) },
  { name: "t2", shape: [1, 2], type: "F16", values: () => Float32Array.of(1, -2) },
];

test("the header: magic, version 3, tensor and key counts as u64, then each key and its typed value", () => {
  const path = join(dir, "header.gguf");
  writeGguf(path, metadata, tensors);
  const bytes = readFileSync(path);
  assert.equal(bytes.subarray(0, 4).toString("latin1"), "GGUF");
  assert.equal(bytes.readUInt32LE(4), 3);
  assert.equal(bytes.readBigUInt64LE(8), 2n);
  assert.equal(bytes.readBigUInt64LE(16), 7n);
  // First key: length 20 (u64), "general.architecture", type 8 (string), length 5, "llama".
  assert.equal(bytes.readBigUInt64LE(24), 20n);
  assert.equal(bytes.subarray(32, 52).toString(), "general.architecture");
  assert.equal(bytes.readUInt32LE(52), 8);
  assert.equal(bytes.readBigUInt64LE(56), 5n);
  assert.equal(bytes.subarray(64, 69).toString(), "llama");
  // Second: "test.count", type 4 (u32), 7.
  assert.equal(bytes.readBigUInt64LE(69), 10n);
  assert.equal(bytes.subarray(77, 87).toString(), "test.count");
  assert.equal(bytes.readUInt32LE(87), 4);
  assert.equal(bytes.readUInt32LE(91), 7);
});

test("an independent reader gets back every key, tensor info and tensor's bytes", async () => {
  const path = join(dir, "read.gguf");
  const size = writeGguf(path, metadata, tensors);
  const bytes = readFileSync(path);
  assert.equal(size, bytes.length);
  const info = await readGgufFileInfo(path, { readTensorInfo: true });
  assert.equal(info.version, 3);
  const test = (info.metadata as unknown as { test: Record<string, unknown> }).test;
  assert.deepEqual(
    { ...test, words: [...(test.words as string[])], types: [...(test.types as number[])] },
    { count: 7, offset: -3, eps: 0.5, flag: true, words: ["x", "yz"], types: [1, -2] },
  );
  const [t1, t2] = info.tensorInfo!;
  // Dimensions innermost first (ggml's order); types F32 = 0, F16 = 1; offsets from the data start.
  assert.deepEqual([t1!.name, t1!.dimensions, t1!.ggmlType, t1!.offset], ["t1", [3, 2], 0, 0]);
  assert.deepEqual([t2!.name, t2!.dimensions, t2!.ggmlType, t2!.offset], ["t2", [2, 1], 1, 32]);
  const dataStart = Number(t1!.fileOffset);
  assert.equal(dataStart % 32, 0);
  const t1Bytes = bytes.subarray(dataStart, dataStart + 24);
  assert.deepEqual(
    [...new Float32Array(t1Bytes.buffer.slice(t1Bytes.byteOffset, t1Bytes.byteOffset + 24))],
    [0, 1, 2, 3, 4, 5],
  );
  assert.deepEqual([...bytes.subarray(dataStart + 24, dataStart + 32)], new Array(8).fill(0));
  // 1 and −2 in float16: 0x3c00, 0xc000; the last tensor padded to 32 too.
  assert.equal(bytes.readUInt16LE(dataStart + 32), 0x3c00);
  assert.equal(bytes.readUInt16LE(dataStart + 34), 0xc000);
  assert.equal(bytes.length, dataStart + 64);
});

test("bad input is refused by name, and no partial file is left", () => {
  const path = join(dir, "bad.gguf");
  const one =
    (entries: [string, GgufValue][], list: GgufTensor[] = []) =>
    () =>
      writeGguf(path, new Map(entries), list);
  assert.throws(one([["a", gguf.strs([])]]), /a is an empty array/);
  assert.throws(one([["a", gguf.u32(-1)]]), /a must be a uint32, got -1/);
  assert.throws(one([["a", gguf.i32(2 ** 31)]]), /a must be a int32/);
  assert.throws(one([], [tensors[0]!, tensors[0]!]), /t1 is written twice/);
  assert.throws(
    one([], [{ name: "q", shape: [2, 16], type: "Q8_0", values: () => new Float32Array(32) }]),
    /Q8_0 rows must be a multiple of 32, got 16/,
  );
  assert.throws(
    one([], [{ name: "short", shape: [2, 3], type: "F32", values: () => new Float32Array(5) }]),
    /short has 5 values, shape \[2,3\] holds 6/,
  );
  assert.equal(existsSync(path), false);
  assert.equal(existsSync(`${path}.partial`), false);
});
