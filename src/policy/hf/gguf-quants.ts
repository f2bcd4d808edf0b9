/**
 * The tensor encodings `agentrl export gguf` writes, each bit for bit as llama.cpp's own converter
 * (gguf-py's quants.py, which matches ggml's reference C code) writes it:
 *
 * - F32: the float32 values, little-endian.
 * - F16: each value rounded to the nearest float16, ties to even (numpy's `astype(float16)`).
 * - Q8_0: blocks of 32 values along a row, each 34 bytes: the scale d = max|x|/127 as float16,
 *   then 32 int8 q = round(x·(1/d)), rounded half away from zero (C's `roundf`). The arithmetic is
 *   float32's (d, 1/d and x·(1/d) each rounded to float32), so the bytes equal ggml's; d = 0 (an
 *   all-zero block) gives q = 0. Decoding is x ≈ q·d with d read back as float16.
 */
import { floatToHalfBits } from "../../engine/safetensors.ts";

/** The GGML tensor types written, with their ids in the file (ggml.h's `ggml_type`). */
export const GGML_TYPES = { F32: 0, F16: 1, Q8_0: 8 } as const;
export type GgmlType = keyof typeof GGML_TYPES;

/** Values per Q8_0 block, and the bytes a block takes (a float16 scale and 32 int8). */
export const Q8_0_BLOCK = 32;
export const Q8_0_BLOCK_BYTES = 2 + Q8_0_BLOCK;

/** Bytes a tensor of `count` values takes in `type` (Q8_0: `count` a multiple of 32). */
export function ggmlByteSize(type: GgmlType, count: number): number {
  if (type === "F32") return count * 4;
  if (type === "F16") return count * 2;
  if (count % Q8_0_BLOCK !== 0) throw new Error(`Q8_0: ${count} values are not whole blocks of 32`);
  return (count / Q8_0_BLOCK) * Q8_0_BLOCK_BYTES;
}

/** float32 values as little-endian F16 bytes. */
export function encodeF16(values: Float32Array): Uint8Array {
  const out = new Uint8Array(values.length * 2);
  const view = new DataView(out.buffer);
  for (let i = 0; i < values.length; i++) view.setUint16(2 * i, floatToHalfBits(values[i]!), true);
  return out;
}

/** float32 values (a multiple of 32, blocks taken in order) as Q8_0 blocks. */
export function encodeQ8_0(values: Float32Array): Uint8Array {
  const out = new Uint8Array(ggmlByteSize("Q8_0", values.length));
  const view = new DataView(out.buffer);
  for (let block = 0; block * Q8_0_BLOCK < values.length; block++) {
    const first = block * Q8_0_BLOCK;
    let amax = 0;
    for (let j = 0; j < Q8_0_BLOCK; j++) amax = Math.max(amax, Math.abs(values[first + j]!));
    const d = Math.fround(amax / 127);
    const id = d === 0 ? 0 : Math.fround(1 / d);
    const at = block * Q8_0_BLOCK_BYTES;
    view.setUint16(at, floatToHalfBits(d), true);
    for (let j = 0; j < Q8_0_BLOCK; j++) {
      const x = Math.fround(values[first + j]! * id);
      view.setInt8(at + 2 + j, Math.sign(x) * Math.floor(Math.abs(x) + 0.5));
    }
  }
  return out;
}

/** The bytes of float32 values in `type`. */
export function encodeTensor(type: GgmlType, values: Float32Array): Uint8Array {
  if (type === "F16") return encodeF16(values);
  if (type === "Q8_0") return encodeQ8_0(values);
  return new Uint8Array(values.buffer, values.byteOffset, values.byteLength);
}
