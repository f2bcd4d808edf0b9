/**
 * Explicit PRNG keys and parameter initialisers. Keys are jax-js threefry keys (uint32 [2]);
 * every random draw consumes a key, so a seed plus the order of splits reproduces a model.
 */
import { type JaxArray, np, random, dtype as toDType } from "./jax.ts";

/** A PRNG key from a 32-bit seed. */
export function keyFromSeed(seed: number): JaxArray {
  return random.key(seed >>> 0);
}

/** Splits `key` into `n` independent keys. Consumes `key`. */
export function splitKey(key: JaxArray, n: number): JaxArray[] {
  return [...random.split(key, n)];
}

/** The two uint32 words of a key, for storing in JSON. Consumes `key`. */
export async function keyToWords(key: JaxArray): Promise<[number, number]> {
  const words = (await key.data()) as Uint32Array;
  return [words[0], words[1]];
}

/** A key from the two words `keyToWords` returned. */
export function keyFromWords(words: readonly [number, number]): JaxArray {
  return np.array(new Uint32Array(words), { dtype: np.uint32 });
}

/** N(0, std²) samples of `shape`. Consumes `key`. */
export function normalInit(
  key: JaxArray,
  shape: number[],
  std: number,
  dtype: "float32" | "float64" = "float32",
): JaxArray {
  const sample = random.normal(key, shape);
  return (dtype === "float32" ? sample : sample.astype(toDType(dtype))).mul(std);
}
