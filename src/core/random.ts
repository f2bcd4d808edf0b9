/**
 * Seeded randomness. Every random choice in agentrl (world generation, task sampling, tool noise,
 * scripted policies) comes from an `Rng` derived from an explicit seed, so a seed reproduces a run
 * on every machine. `fork(label)` derives an independent stream, the way JAX splits keys: a
 * consumer that draws more numbers never shifts another consumer's stream.
 */

export interface Rng {
  /** Uniform in [0, 1). */
  next(): number;
  /** Uniform integer in [0, n). */
  int(n: number): number;
  /** Uniform integer in [lo, hi] (inclusive). */
  range(lo: number, hi: number): number;
  pick<T>(items: readonly T[]): T;
  shuffle<T>(items: readonly T[]): T[];
  /** True with probability p. */
  chance(p: number): boolean;
  /** An independent stream named by `label`. */
  fork(label: string | number): Rng;
  readonly seed: number;
}

/** 32-bit FNV-1a of a string, for deriving seeds from labels. */
export function hashString(text: string): number {
  let h = 0x811c9dc5;
  for (let i = 0; i < text.length; i++) {
    h ^= text.charCodeAt(i);
    h = Math.imul(h, 0x01000193);
  }
  return h >>> 0;
}

/** Mixes two 32-bit values into one (splitmix-style finaliser). */
export function mixSeeds(a: number, b: number): number {
  let z = (Math.imul(a >>> 0, 0x9e3779b1) ^ (b >>> 0)) >>> 0;
  z = Math.imul(z ^ (z >>> 16), 0x85ebca6b);
  z = Math.imul(z ^ (z >>> 13), 0xc2b2ae35);
  return (z ^ (z >>> 16)) >>> 0;
}

export function createRng(seed: number): Rng {
  // mulberry32: small, fast, and good enough for simulation (not for cryptography).
  let state = seed >>> 0;
  const next = () => {
    state = (state + 0x6d2b79f5) >>> 0;
    let t = state;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
  const int = (n: number) => Math.floor(next() * n);
  return {
    seed,
    next,
    int,
    range: (lo, hi) => lo + int(hi - lo + 1),
    pick: (items) => {
      if (items.length === 0) throw new Error("Rng.pick: empty list");
      return items[int(items.length)];
    },
    shuffle: (items) => {
      const out = [...items];
      for (let i = out.length - 1; i > 0; i--) {
        const j = int(i + 1);
        [out[i], out[j]] = [out[j], out[i]];
      }
      return out;
    },
    chance: (p) => next() < p,
    fork: (label) => createRng(mixSeeds(seed, typeof label === "number" ? label : hashString(label))),
  };
}
