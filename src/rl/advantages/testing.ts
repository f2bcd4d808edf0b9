/**
 * Hand-built and seeded-random estimator inputs for the advantage tests. Not used at run time.
 */
import { createRng } from "../../core/random.ts";
import type { AdvantageBatch, AdvantageEpisode } from "./types.ts";

export interface EpisodeSketch {
  group: string | number;
  outcome: number | null;
  /** Turn rewards, one per turn (default all 0 for `turnTokens.length` turns). */
  turns?: (number | null)[];
  /** Policy tokens per turn (default 2 each). */
  turnTokens?: number[];
  /** Prompt tokens (default 2) and observation tokens after every turn but the last (default 1). */
  promptTokens?: number;
  observationTokens?: number;
  anchors?: string[];
  /** Value of each token (default none). */
  values?: number[];
}

/** Layout: prompt, then per turn its policy tokens and (except after the last turn) an observation. */
export function sketchEpisode(sketch: EpisodeSketch): AdvantageEpisode {
  const turnRewards = sketch.turns ?? (sketch.turnTokens ?? [2]).map(() => 0);
  const turnTokens = sketch.turnTokens ?? turnRewards.map(() => 2);
  const turnIndex: number[] = [];
  const lossMask: number[] = [];
  for (let i = 0; i < (sketch.promptTokens ?? 2); i++) {
    turnIndex.push(-1);
    lossMask.push(0);
  }
  turnTokens.forEach((count, turn) => {
    for (let i = 0; i < count; i++) {
      turnIndex.push(turn);
      lossMask.push(1);
    }
    if (turn < turnTokens.length - 1) {
      for (let i = 0; i < (sketch.observationTokens ?? 1); i++) {
        turnIndex.push(turn);
        lossMask.push(0);
      }
    }
  });
  const episode: AdvantageEpisode = {
    group: sketch.group,
    outcomeReward: sketch.outcome,
    turnRewards,
    turnIndex,
    lossMask,
  };
  if (sketch.anchors) episode.anchorKeys = sketch.anchors;
  if (sketch.values) episode.values = sketch.values;
  return episode;
}

export function sketchBatch(sketches: EpisodeSketch[]): AdvantageBatch {
  return { episodes: sketches.map(sketchEpisode) };
}

/** Advantage of each turn (read on the turn's first policy token) of each episode. */
export function perTurn(episode: AdvantageEpisode, advantages: Float32Array): number[] {
  const out: number[] = [];
  for (let i = 0; i < advantages.length; i++) {
    const turn = episode.turnIndex[i];
    if (episode.lossMask[i] && out[turn] === undefined) out[turn] = advantages[i];
  }
  return out;
}

/** A seeded random batch: groups of 1-5 episodes with 1-4 turns, some null rewards, anchors, values. */
export function randomBatch(seed: number): AdvantageBatch {
  const rng = createRng(seed);
  const sketches: EpisodeSketch[] = [];
  const groups = rng.range(1, 4);
  for (let g = 0; g < groups; g++) {
    const size = rng.range(1, 5);
    for (let e = 0; e < size; e++) {
      const turns = rng.range(1, 4);
      const turnTokens = Array.from({ length: turns }, () => rng.range(1, 3));
      const sketch: EpisodeSketch = {
        group: `g${g}`,
        outcome: rng.chance(0.1) ? null : rng.pick([0, 0, 1, 0.5]),
        turns: Array.from({ length: turns }, () => (rng.chance(0.1) ? null : rng.pick([0, 0.5, 1]))),
        turnTokens,
        promptTokens: rng.range(0, 2),
        observationTokens: rng.range(0, 2),
        anchors: Array.from({ length: turns }, (_, t) => (t === 0 ? "start" : rng.pick(["a", "b", "c"]))),
      };
      const length = sketchEpisode(sketch).lossMask.length;
      sketch.values = Array.from({ length }, () => rng.next());
      sketches.push(sketch);
    }
  }
  return sketchBatch(sketches);
}

/** Element-wise |actual - expected| <= tolerance, with the position in the message. */
export function assertNear(actual: ArrayLike<number>, expected: readonly number[], tolerance = 1e-5): void {
  if (actual.length !== expected.length) {
    throw new Error(
      `length ${actual.length} != ${expected.length}: [${Array.from(actual)}] vs [${expected}]`,
    );
  }
  for (let i = 0; i < expected.length; i++) {
    if (!(Math.abs(actual[i] - expected[i]) <= tolerance)) {
      throw new Error(`[${i}] ${actual[i]} != ${expected[i]} in [${Array.from(actual)}]`);
    }
  }
}
