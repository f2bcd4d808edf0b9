/**
 * The safetensors format (https://github.com/huggingface/safetensors), written and read here:
 *
 *   8 bytes   N, the header length (unsigned 64-bit little-endian)
 *   N bytes   JSON: { "<name>": { "dtype": "F32", "shape": [..], "data_offsets": [begin, end] },
 *                     "__metadata__": { "<key>": "<string value>" } }   (padded with spaces to 8)
 *   rest      the tensors' raw little-endian bytes, offsets relative to the end of the header
 *
 * Tensors are written in name order, contiguous, without gaps (as the reference writer does).
 * Reading validates everything a truncated or corrupted file can break and names the file. Reading
 * also takes the half-precision tensors Hugging Face checkpoints ship (F16, BF16) and widens them
 * to float32, which holds every value of both formats exactly. Writing can narrow float32 tensors
 * to either (`encodeSafetensors`'s `float32As`), rounding to nearest, ties to even, as PyTorch's
 * `.to(torch.bfloat16)` and `.half()` do.
 */
import { closeSync, fstatSync, openSync, readSync } from "node:fs";
import { open } from "node:fs/promises";
import type { HostData, HostDType, HostTensor } from "./tree.ts";

const DTYPE_CODES: Record<HostDType, string> = {
  float32: "F32",
  float64: "F64",
  int32: "I32",
  uint32: "U32",
};
const CODE_DTYPES: Record<string, HostDType> = {
  F32: "float32",
  F64: "float64",
  I32: "int32",
  U32: "uint32",
};
const BYTES: Record<HostDType, number> = { float32: 4, float64: 8, int32: 4, uint32: 4 };
/** Half-precision codes read (widened to float32), with their width in bytes. */
const HALF_CODES: Record<string, number> = { F16: 2, BF16: 2 };

/** float16 bits → float32 value (subnormals, infinities and NaN included). */
export function halfToFloat(bits: number): number {
  const sign = bits & 0x8000 ? -1 : 1;
  const exponent = (bits >> 10) & 0x1f;
  const fraction = bits & 0x3ff;
  if (exponent === 0) return sign * fraction * 2 ** -24;
  if (exponent === 0x1f) return fraction ? Number.NaN : sign * Number.POSITIVE_INFINITY;
  return sign * (1 + fraction / 1024) * 2 ** (exponent - 15);
}

/**
 * float32 value → bfloat16 bits: the top 16 bits after rounding to nearest, ties to even (a value
 * past bfloat16's largest rounds to ±Inf; NaN stays a quiet NaN of the same sign).
 */
export function floatToBf16Bits(value: number): number {
  F32[0] = value;
  const bits = U32[0];
  if ((bits & 0x7fffffff) > 0x7f800000) return ((bits >>> 16) | 0x40) & 0xffff;
  return ((bits + 0x7fff + ((bits >>> 16) & 1)) >>> 16) & 0xffff;
}

/**
 * float32 value → float16 bits, rounded to nearest, ties to even: subnormals below 2^-14, ±Inf
 * past 65504 (from 65520 on, as IEEE rounding gives), NaN a quiet NaN of the same sign.
 */
export function floatToHalfBits(value: number): number {
  F32[0] = value;
  const bits = U32[0];
  const sign = (bits >>> 16) & 0x8000;
  const exponent = (bits >>> 23) & 0xff;
  const mantissa = bits & 0x7fffff;
  if (exponent === 0xff) return sign | 0x7c00 | (mantissa ? 0x200 | (mantissa >>> 13) : 0);
  const e = exponent - 112; // the float16 biased exponent
  if (e >= 0x1f) return sign | 0x7c00;
  if (e <= 0) {
    // A float16 subnormal (or zero): m · 2^(e - 14) units of 2^-24, with the implicit bit.
    if (e < -10) return sign;
    const m = mantissa | 0x800000;
    const shift = 14 - e;
    let half = m >>> shift;
    const rest = m & ((1 << shift) - 1);
    const tie = 1 << (shift - 1);
    if (rest > tie || (rest === tie && half & 1)) half++;
    return sign | half;
  }
  let half = (e << 10) | (mantissa >>> 13);
  const rest = mantissa & 0x1fff;
  if (rest > 0x1000 || (rest === 0x1000 && half & 1)) half++; // a carry may reach the exponent, or Inf
  return sign | half;
}
const F32 = new Float32Array(1);
const U32 = new Uint32Array(F32.buffer);

/** Little-endian F16 or BF16 bytes widened to float32. */
function widenHalf(raw: Uint8Array, code: string): Float32Array<ArrayBuffer> {
  const halves = new Uint16Array(raw.buffer, raw.byteOffset, raw.byteLength / 2);
  const out = new Float32Array(halves.length);
  if (code === "BF16") {
    // bfloat16 is the top half of a float32: shift the bits into place.
    const bits = new Uint32Array(out.buffer);
    for (let i = 0; i < halves.length; i++) bits[i] = halves[i] << 16;
  } else {
    for (let i = 0; i < halves.length; i++) out[i] = halfToFloat(halves[i]);
  }
  return out;
}
/** Larger headers are refused (the reference implementation's limit is 100 MB). */
const MAX_HEADER_BYTES = 100_000_000;

/** A safetensors file or its contents could not be read. */
export class SafetensorsError extends Error {
  constructor(source: string, message: string) {
    super(`${source}: invalid safetensors file: ${message}`);
    this.name = "SafetensorsError";
  }
}

function isLittleEndian(): boolean {
  return new Uint8Array(new Uint16Array([1]).buffer)[0] === 1;
}

/** A half-precision format float32 tensors can be written in. */
export type HalfCode = "BF16" | "F16";

export interface EncodeOptions {
  /** Write every float32 tensor in this format instead (rounded to nearest, ties to even). */
  float32As?: HalfCode;
}

/** The header bytes (length prefix included) and the tensors' names in file order. */
function encodeHeader(
  tensors: Record<string, HostTensor>,
  metadata: Record<string, string> | undefined,
  options: EncodeOptions,
): { header: Uint8Array; names: string[]; dataBytes: number } {
  const narrow = options.float32As;
  if (narrow !== undefined && !(narrow in HALF_CODES))
    throw new Error(`encodeSafetensors: float32As must be BF16 or F16, got ${JSON.stringify(narrow)}`);
  if (!isLittleEndian()) throw new Error("encodeSafetensors: big-endian hosts are not supported");
  const names = Object.keys(tensors).sort();
  const header: Record<string, unknown> = {};
  if (metadata && Object.keys(metadata).length > 0) header.__metadata__ = metadata;
  let offset = 0;
  for (const name of names) {
    if (name === "__metadata__") throw new Error('encodeSafetensors: "__metadata__" is reserved');
    const { dtype, shape, data } = tensors[name];
    const count = shape.reduce((a, b) => a * b, 1);
    if (data.length !== count)
      throw new Error(`encodeSafetensors: "${name}" has ${data.length} values for shape [${shape}]`);
    const half = narrow !== undefined && dtype === "float32";
    const bytes = count * (half ? HALF_CODES[narrow] : BYTES[dtype]);
    const code = half ? narrow : DTYPE_CODES[dtype];
    header[name] = { dtype: code, shape, data_offsets: [offset, offset + bytes] };
    offset += bytes;
  }
  let json = JSON.stringify(header);
  json += " ".repeat((8 - ((8 + Buffer.byteLength(json)) % 8)) % 8);
  const jsonBytes = new TextEncoder().encode(json);
  const out = new Uint8Array(8 + jsonBytes.length);
  new DataView(out.buffer).setBigUint64(0, BigInt(jsonBytes.length), true);
  out.set(jsonBytes, 8);
  return { header: out, names, dataBytes: offset };
}

/** A tensor's bytes as the file stores them (float32 narrowed to `float32As` when asked). */
function tensorBytes({ dtype, data }: HostTensor, options: EncodeOptions): Uint8Array {
  const narrow = options.float32As;
  if (narrow === undefined || dtype !== "float32")
    return new Uint8Array(data.buffer, data.byteOffset, data.byteLength);
  const halves = new Uint16Array(data.length);
  const convert = narrow === "BF16" ? floatToBf16Bits : floatToHalfBits;
  for (let i = 0; i < data.length; i++) halves[i] = convert(data[i]);
  return new Uint8Array(halves.buffer);
}

/** Serialises tensors (and string metadata) into safetensors bytes. */
export function encodeSafetensors(
  tensors: Record<string, HostTensor>,
  metadata?: Record<string, string>,
  options: EncodeOptions = {},
): Uint8Array {
  const { header, names, dataBytes } = encodeHeader(tensors, metadata, options);
  const out = new Uint8Array(header.length + dataBytes);
  out.set(header, 0);
  let position = header.length;
  for (const name of names) {
    const bytes = tensorBytes(tensors[name], options);
    out.set(bytes, position);
    position += bytes.byteLength;
  }
  return out;
}

/**
 * Writes the same bytes as `encodeSafetensors` to `path`, one tensor at a time: a real model's
 * file is never held whole in memory (Qwen3-0.6B's bf16 file is 1.2 GB beside its 2.4 GB of
 * float32 weights).
 */
export async function writeSafetensorsFile(
  path: string,
  tensors: Record<string, HostTensor>,
  metadata?: Record<string, string>,
  options: EncodeOptions = {},
): Promise<void> {
  const { header, names } = encodeHeader(tensors, metadata, options);
  const file = await open(path, "w");
  try {
    await file.write(header);
    for (const name of names) await file.write(tensorBytes(tensors[name], options));
  } finally {
    await file.close();
  }
}

export interface SafetensorsContent {
  tensors: Record<string, HostTensor>;
  metadata: Record<string, string>;
}

/** Parses safetensors bytes; `source` (a file name) is named in every error. */
export function decodeSafetensors(bytes: Uint8Array, source = "<bytes>"): SafetensorsContent {
  // A copy of each tensor's bytes (a Buffer's `slice` would be a view of its whole pool).
  return decode(
    source,
    bytes.length,
    (offset, length) => new Uint8Array(bytes.subarray(offset, offset + length)),
  );
}

/**
 * Reads a safetensors file tensor by tensor: one file may be larger than the 2 GiB Node reads into
 * one buffer (a 0.6B model saved in float32 is 2.4 GB; transformers shards at 5 GB), and the whole
 * file is never held beside its tensors.
 */
export function readSafetensorsFile(path: string): SafetensorsContent {
  const fd = openSync(path, "r");
  try {
    const read = (offset: number, length: number) => {
      const out = new Uint8Array(length);
      for (let done = 0; done < length; ) {
        const n = readSync(fd, out, done, Math.min(length - done, 1 << 30), offset + done);
        if (n === 0) throw new SafetensorsError(path, `the file ends before byte ${offset + length}`);
        done += n;
      }
      return out;
    };
    return decode(path, fstatSync(fd).size, read);
  } finally {
    closeSync(fd);
  }
}

/** The parser over a source of `size` bytes that `read(offset, length)` returns fresh copies of. */
function decode(
  source: string,
  size: number,
  read: (offset: number, length: number) => Uint8Array<ArrayBuffer>,
): SafetensorsContent {
  if (size < 8) throw new SafetensorsError(source, `${size} bytes, shorter than the 8-byte header length`);
  const start = read(0, 8);
  const headerLength = Number(new DataView(start.buffer).getBigUint64(0, true));
  if (headerLength > MAX_HEADER_BYTES || 8 + headerLength > size) {
    throw new SafetensorsError(source, `header length ${headerLength} exceeds the file (${size} bytes)`);
  }
  let header: Record<string, unknown>;
  try {
    header = JSON.parse(new TextDecoder("utf-8", { fatal: true }).decode(read(8, headerLength)));
  } catch (error) {
    throw new SafetensorsError(source, `header is not valid JSON (${(error as Error).message})`);
  }
  if (!header || typeof header !== "object" || Array.isArray(header))
    throw new SafetensorsError(source, "header is not an object");
  const dataStart = 8 + headerLength;
  const dataLength = size - dataStart;
  const tensors: Record<string, HostTensor> = {};
  let metadata: Record<string, string> = {};
  const spans: [number, number, string][] = [];
  for (const [name, entry] of Object.entries(header)) {
    if (name === "__metadata__") {
      metadata = entry as Record<string, string>;
      if (
        !metadata ||
        typeof metadata !== "object" ||
        Object.values(metadata).some((v) => typeof v !== "string")
      ) {
        throw new SafetensorsError(source, "__metadata__ must map strings to strings");
      }
      continue;
    }
    const info = entry as { dtype?: unknown; shape?: unknown; data_offsets?: unknown };
    const code = typeof info?.dtype === "string" ? info.dtype : "";
    const half = HALF_CODES[code];
    const dtype = half ? "float32" : CODE_DTYPES[code];
    if (!dtype)
      throw new SafetensorsError(
        source,
        `tensor "${name}" has unsupported dtype ${JSON.stringify(info?.dtype)}`,
      );
    const shape = info.shape;
    if (!Array.isArray(shape) || !shape.every((d) => Number.isInteger(d) && d >= 0)) {
      throw new SafetensorsError(source, `tensor "${name}" has an invalid shape`);
    }
    const offsets = info.data_offsets;
    if (
      !Array.isArray(offsets) ||
      offsets.length !== 2 ||
      !offsets.every((o) => Number.isInteger(o) && o >= 0)
    ) {
      throw new SafetensorsError(source, `tensor "${name}" has invalid data_offsets`);
    }
    const [begin, end] = offsets as [number, number];
    const count = (shape as number[]).reduce((a, b) => a * b, 1);
    const width = half ?? BYTES[dtype];
    if (end - begin !== count * width) {
      throw new SafetensorsError(
        source,
        `tensor "${name}" spans ${end - begin} bytes, expected ${count * width}`,
      );
    }
    if (end > dataLength) {
      throw new SafetensorsError(
        source,
        `tensor "${name}" ends at byte ${end} but the data has ${dataLength} (truncated?)`,
      );
    }
    spans.push([begin, end, name]);
    // A buffer of its own, so aligned for the typed array.
    const raw = read(dataStart + begin, end - begin);
    let data: HostData;
    if (half) data = widenHalf(raw, code);
    else if (dtype === "float32") data = new Float32Array(raw.buffer);
    else if (dtype === "float64") data = new Float64Array(raw.buffer);
    else if (dtype === "int32") data = new Int32Array(raw.buffer);
    else data = new Uint32Array(raw.buffer);
    tensors[name] = { dtype, shape: shape as number[], data };
  }
  spans.sort((a, b) => a[0] - b[0]);
  let expected = 0;
  for (const [begin, end, name] of spans) {
    if (begin !== expected)
      throw new SafetensorsError(
        source,
        `tensor "${name}" starts at ${begin}, expected ${expected} (overlap or gap)`,
      );
    expected = end;
  }
  if (expected !== dataLength) {
    throw new SafetensorsError(source, `data has ${dataLength} bytes but the tensors cover ${expected}`);
  }
  return { tensors, metadata };
}
