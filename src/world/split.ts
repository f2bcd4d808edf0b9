/**
 * Train/test split of world seeds. The rule: a world seed is a test world when
 * `hashString("agentrl/split/<seed>") % 5 === 0` (about one seed in five), otherwise a train world.
 * Tasks are generated inside one world and their ids start with `w<seed>/`, so train and test
 * tasks never share a world, a fact pattern or an id. A hash rather than a seed range, so that any
 * run of consecutive seeds (0..99) holds both kinds in the same proportion.
 */
import { hashString } from "../core/random.ts";
import type { WorldSplit } from "./types.ts";

export const TEST_WORLD_MODULUS = 5;

export function splitOfWorld(seed: number): WorldSplit {
  assertSeed(seed);
  return hashString(`agentrl/split/${seed}`) % TEST_WORLD_MODULUS === 0 ? "test" : "train";
}

/** The first `count` world seeds of a split, from `start` upwards. */
export function worldSeeds(split: WorldSplit, count: number, start = 0): number[] {
  assertSeed(start);
  if (!Number.isInteger(count) || count < 0)
    throw new Error(`worldSeeds: count must be an integer >= 0, got ${count}`);
  const seeds: number[] = [];
  for (let seed = start; seeds.length < count; seed++) if (splitOfWorld(seed) === split) seeds.push(seed);
  return seeds;
}

export function assertSeed(seed: number): void {
  // Seeds are mixed as 32-bit values: larger ones would alias smaller ones.
  if (!Number.isInteger(seed) || seed < 0 || seed > 0xffffffff) {
    throw new Error(`world seed must be an integer in [0, 4294967295], got ${seed}`);
  }
}
