/**
 * The GGUF container (version 3, little-endian), as llama.cpp reads it and gguf-py's GGUFWriter
 * writes it: the magic `GGUF`, the version, the tensor count and the key/value count (u64); the
 * key/values (a key is a u64 length and UTF-8 bytes, then the value's type id (u32) and value;
 * an array is its item type (u32), its length (u64) and the items); the tensor infos (name, the
 * number of dimensions (u32), the dimensions (u64 each, innermost first: ggml's order, the reverse
 * of the row-major shape), the ggml type (u32) and the data offset (u64, from the start of the
 * data section)); zero padding to the alignment (32 bytes); then each tensor's data, padded to 32.
 *
 * The file is written tensor by tensor (each encoded as it is written, so a model is never held
 * twice in memory), to `<path>.partial`, renamed onto `path` once complete.
 */
import { closeSync, openSync, renameSync, rmSync, writeSync } from "node:fs";
import { encodeTensor, GGML_TYPES, type GgmlType, ggmlByteSize } from "./gguf-quants.ts";

export const GGUF_VERSION = 3;
export const GGUF_ALIGNMENT = 32;

/** gguf-py's GGUFValueType ids. */
const VALUE_TYPES = {
  uint8: 0,
  int8: 1,
  uint16: 2,
  int16: 3,
  uint32: 4,
  int32: 5,
  float32: 6,
  bool: 7,
  string: 8,
  array: 9,
  uint64: 10,
  int64: 11,
  float64: 12,
} as const;

type ScalarType = "uint32" | "int32" | "float32" | "bool" | "string";

/** A metadata value: a scalar of the types llama.cpp's keys use, or an array of them. */
export type GgufValue =
  | { type: "uint32" | "int32" | "float32"; value: number }
  | { type: "bool"; value: boolean }
  | { type: "string"; value: string }
  | { type: "array"; itemType: "uint32" | "int32" | "float32"; value: readonly number[] }
  | { type: "array"; itemType: "string"; value: readonly string[] };

export const gguf = {
  u32: (value: number): GgufValue => ({ type: "uint32", value }),
  i32: (value: number): GgufValue => ({ type: "int32", value }),
  f32: (value: number): GgufValue => ({ type: "float32", value }),
  bool: (value: boolean): GgufValue => ({ type: "bool", value }),
  str: (value: string): GgufValue => ({ type: "string", value }),
  i32s: (value: readonly number[]): GgufValue => ({ type: "array", itemType: "int32", value }),
  f32s: (value: readonly number[]): GgufValue => ({ type: "array", itemType: "float32", value }),
  strs: (value: readonly string[]): GgufValue => ({ type: "array", itemType: "string", value }),
};

/** A tensor to write: its row-major shape (outermost first, as PyTorch and numpy give it). */
export interface GgufTensor {
  name: string;
  shape: readonly number[];
  type: GgmlType;
  /** The float32 values, row-major; asked for once, when the tensor is written. */
  values: () => Float32Array;
}

/** A growing little-endian byte buffer. */
class Bytes {
  #buffer = new Uint8Array(1 << 16);
  #view = new DataView(this.#buffer.buffer);
  length = 0;

  #reserve(n: number): void {
    if (this.length + n <= this.#buffer.length) return;
    let size = this.#buffer.length * 2;
    while (size < this.length + n) size *= 2;
    const next = new Uint8Array(size);
    next.set(this.#buffer.subarray(0, this.length));
    this.#buffer = next;
    this.#view = new DataView(next.buffer);
  }
  u32(value: number): void {
    this.#reserve(4);
    this.#view.setUint32(this.length, value, true);
    this.length += 4;
  }
  i32(value: number): void {
    this.#reserve(4);
    this.#view.setInt32(this.length, value, true);
    this.length += 4;
  }
  u64(value: number): void {
    this.#reserve(8);
    this.#view.setBigUint64(this.length, BigInt(value), true);
    this.length += 8;
  }
  f32(value: number): void {
    this.#reserve(4);
    this.#view.setFloat32(this.length, value, true);
    this.length += 4;
  }
  u8(value: number): void {
    this.#reserve(1);
    this.#view.setUint8(this.length, value);
    this.length += 1;
  }
  string(value: string): void {
    const bytes = Buffer.from(value, "utf8");
    this.u64(bytes.length);
    this.#reserve(bytes.length);
    this.#buffer.set(bytes, this.length);
    this.length += bytes.length;
  }
  zeros(n: number): void {
    this.#reserve(n);
    this.#buffer.fill(0, this.length, this.length + n);
    this.length += n;
  }
  get bytes(): Uint8Array {
    return this.#buffer.subarray(0, this.length);
  }
}

function checkNumber(key: string, type: string, value: number): void {
  const ok =
    type === "float32"
      ? Number.isFinite(value)
      : Number.isInteger(value) &&
        (type === "uint32" ? value >= 0 && value <= 0xffffffff : value >= -(2 ** 31) && value < 2 ** 31);
  if (!ok) throw new Error(`gguf: ${key} must be a ${type}, got ${value}`);
}

function writeScalar(out: Bytes, key: string, type: ScalarType, value: number | boolean | string): void {
  if (type === "string") out.string(value as string);
  else if (type === "bool") out.u8(value ? 1 : 0);
  else {
    checkNumber(key, type, value as number);
    if (type === "uint32") out.u32(value as number);
    else if (type === "int32") out.i32(value as number);
    else out.f32(value as number);
  }
}

function writeValue(out: Bytes, key: string, value: GgufValue): void {
  out.u32(VALUE_TYPES[value.type]);
  if (value.type !== "array") {
    writeScalar(out, key, value.type, value.value);
    return;
  }
  // llama.cpp refuses an empty array's type; gguf-py refuses to write one.
  if (value.value.length === 0) throw new Error(`gguf: ${key} is an empty array`);
  out.u32(VALUE_TYPES[value.itemType]);
  out.u64(value.value.length);
  for (const item of value.value) writeScalar(out, key, value.itemType, item);
}

const padding = (n: number) => (GGUF_ALIGNMENT - (n % GGUF_ALIGNMENT)) % GGUF_ALIGNMENT;

/**
 * Writes a GGUF file: `metadata` in its order (general.architecture first, as llama.cpp expects to
 * find it), then the tensors in theirs. Returns the file's size in bytes.
 */
export function writeGguf(
  path: string,
  metadata: ReadonlyMap<string, GgufValue>,
  tensors: readonly GgufTensor[],
): number {
  const header = new Bytes();
  header.u32(0x46554747); // "GGUF" read as a little-endian u32
  header.u32(GGUF_VERSION);
  header.u64(tensors.length);
  header.u64(metadata.size);
  for (const [key, value] of metadata) {
    header.string(key);
    writeValue(header, key, value);
  }
  const names = new Set<string>();
  let offset = 0;
  const sizes: number[] = [];
  for (const tensor of tensors) {
    if (names.has(tensor.name)) throw new Error(`gguf: tensor ${tensor.name} is written twice`);
    names.add(tensor.name);
    const count = tensor.shape.reduce((a, b) => a * b, 1);
    if (tensor.type === "Q8_0" && tensor.shape.at(-1)! % 32 !== 0)
      throw new Error(`gguf: ${tensor.name}: Q8_0 rows must be a multiple of 32, got ${tensor.shape.at(-1)}`);
    const size = ggmlByteSize(tensor.type, count);
    sizes.push(size);
    header.string(tensor.name);
    header.u32(tensor.shape.length);
    for (const dim of [...tensor.shape].reverse()) header.u64(dim);
    header.u32(GGML_TYPES[tensor.type]);
    header.u64(offset);
    offset += size + padding(size);
  }
  header.zeros(padding(header.length));
  const partial = `${path}.partial`;
  const fd = openSync(partial, "w");
  let written = 0;
  try {
    const write = (bytes: Uint8Array) => {
      for (let at = 0; at < bytes.length; ) at += writeSync(fd, bytes, at, bytes.length - at);
      written += bytes.length;
    };
    write(header.bytes);
    tensors.forEach((tensor, i) => {
      const values = tensor.values();
      const count = tensor.shape.reduce((a, b) => a * b, 1);
      if (values.length !== count)
        throw new Error(
          `gguf: ${tensor.name} has ${values.length} values, shape [${tensor.shape}] holds ${count}`,
        );
      const bytes = encodeTensor(tensor.type, values);
      if (bytes.length !== sizes[i])
        throw new Error(`gguf: ${tensor.name}: ${bytes.length} bytes, expected ${sizes[i]}`);
      write(bytes);
      write(new Uint8Array(padding(bytes.length)));
    });
  } catch (error) {
    closeSync(fd);
    rmSync(partial, { force: true });
    throw error;
  }
  closeSync(fd);
  renameSync(partial, path);
  return written;
}
