import assert from "node:assert/strict";
import { test } from "node:test";
import type { Tokenizer } from "../types/policy.ts";
import type { Trajectory, Turn } from "../types/trajectory.ts";
import { perplexityUnder, policyNll, scoringSequence, type TokenScorer } from "./perplexity.ts";
import { tokenizerFingerprint } from "./tokenizer-fingerprint.ts";

/** Words → ids by a fixed list (unknown words → 0). */
function listTokenizer(words: string[]): Tokenizer {
  return {
    vocabSize: words.length,
    encode: (text) =>
      text
        .split(/\s+/)
        .filter(Boolean)
        .map((word) => Math.max(0, words.indexOf(word))),
    decode: (ids) => ids.map((id) => words[id]).join(" "),
  };
}

const words = ["<unk>", "q", "what", "a", "b", "c", "d", "e", "f", "g", "h"];
const tokenizer = listTokenizer(words);

function turn(index: number, text: string, observation?: string, withIds = true): Turn {
  return {
    index,
    text,
    tokenIds: withIds ? tokenizer.encode(text) : [],
    logprobs: null,
    action: { type: "answer", answer: text },
    ...(observation !== undefined
      ? { observation: { text: observation, tokenIds: withIds ? tokenizer.encode(observation) : [] } }
      : {}),
    rewards: {},
  };
}

function trajectory(prompt: string, turns: Turn[], withIds = true): Trajectory {
  return {
    id: prompt,
    taskId: prompt,
    family: "lookup",
    policyId: "test",
    seed: 0,
    prompt: { text: prompt, tokenIds: withIds ? tokenizer.encode(prompt) : [] },
    turns,
    finalAnswer: "a",
    correct: true,
    outcomeReward: 1,
    endReason: "answer",
  };
}

/** log p = −0.1 · position: lets a test see exactly which positions were counted. */
const positional: TokenScorer = {
  id: "positional",
  tokenizer,
  async score(sequences) {
    return sequences.map((ids) => ids.map((_, t) => -0.1 * t));
  },
};

test("policyNll counts policy positions only, never position 0", () => {
  // mask picks positions 1 and 3: NLL = 1 + 3 = 4 over 2 tokens.
  assert.deepEqual(policyNll([0, -1, -2, -3], [0, 1, 0, 1]), { nll: 4, tokens: 2 });
  assert.deepEqual(policyNll([-5, -1], [1, 1]), { nll: 1, tokens: 1 });
  assert.throws(() => policyNll([0, -1], [0, 1, 1]), /2 log-probs for 3 tokens/);
  assert.throws(() => policyNll([0, 0.5], [0, 1]), /not a finite value <= 0/);
});

test("stored ids are used when the tokenizer matches and every turn has them; otherwise texts are re-encoded", () => {
  const stored = trajectory("q a", [turn(0, "b c", "d"), turn(1, "e")]);
  const fromIds = scoringSequence(stored, tokenizer, true);
  assert.equal(fromIds.source, "stored");
  assert.deepEqual(fromIds.ids, [1, 3, 4, 5, 6, 7]);
  assert.deepEqual(fromIds.mask, [0, 0, 1, 1, 0, 1]);

  const other = listTokenizer(["<unk>", "e", "d", "c", "b", "a", "q"]);
  const reEncoded = scoringSequence(stored, other, false);
  assert.equal(reEncoded.source, "re-encoded");
  assert.deepEqual(reEncoded.ids, [6, 5, 4, 3, 2, 1]);
  assert.deepEqual(reEncoded.mask, [0, 0, 1, 1, 0, 1]);

  // A token-less (scripted) trajectory is re-encoded even when the tokenizer "matches".
  const textOnly = trajectory("q a", [turn(0, "b c", "d", false), turn(1, "e", undefined, false)], false);
  assert.equal(scoringSequence(textOnly, tokenizer, true).source, "re-encoded");
  assert.deepEqual(scoringSequence(textOnly, tokenizer, true).ids, fromIds.ids);
});

test("perplexity: worked example with two trajectories (pooled and median)", async () => {
  // First: positions 0-1 prompt, 2-3 turn, 4 observation, 5 turn → NLL 0.2 + 0.3 + 0.5 = 1.0 over 3 tokens.
  const first = trajectory("q a", [turn(0, "b c", "d"), turn(1, "e")]);
  // Second: position 0 prompt, 1 turn → NLL 0.1 over 1 token.
  const second = trajectory("q", [turn(0, "b")]);
  const result = await perplexityUnder([first, second], positional, {
    storedTokenizer: tokenizerFingerprint(tokenizer),
    batchSize: 1,
  });
  assert.equal(result.scored, 2);
  assert.equal(result.tokens, 4);
  assert.deepEqual(result.tokenSource, { stored: 2, reEncoded: 0 });
  assert.ok(Math.abs(result.perTrajectory[0] - Math.exp(1 / 3)) < 1e-12);
  assert.ok(Math.abs(result.perTrajectory[1] - Math.exp(0.1)) < 1e-12);
  assert.ok(Math.abs(result.pooled! - Math.exp(1.1 / 4)) < 1e-12);
  assert.ok(Math.abs(result.median! - (Math.exp(1 / 3) + Math.exp(0.1)) / 2) < 1e-12);

  // Another tokenizer recorded by the run: the texts are re-encoded (same words here, same ids).
  const other = listTokenizer(["x", ...words.slice(1)]);
  const reEncoded = await perplexityUnder([first], positional, {
    storedTokenizer: tokenizerFingerprint(other),
  });
  assert.deepEqual(reEncoded.tokenSource, { stored: 0, reEncoded: 1 });
});

test("a uniform scorer gives perplexity = vocabulary size; too-long and empty trajectories are skipped", async () => {
  const uniform: TokenScorer = {
    id: "uniform",
    tokenizer,
    maxLength: 5,
    async score(sequences) {
      return sequences.map((ids) => ids.map(() => -Math.log(words.length)));
    },
  };
  const long = trajectory("q a", [turn(0, "b c", "d"), turn(1, "e")]); // 6 tokens
  const short = trajectory("q", [turn(0, "b c")]);
  const empty = trajectory("q a", []);
  const result = await perplexityUnder([long, short, empty], uniform);
  assert.equal(result.skippedTooLong, 1);
  assert.equal(result.skippedEmpty, 1);
  assert.equal(result.scored, 1);
  assert.ok(Math.abs(result.pooled! - words.length) < 1e-9);

  const none = await perplexityUnder([empty], uniform);
  assert.equal(none.pooled, null);
  assert.equal(none.median, null);
});

test("tokenizer fingerprints tell tokenizers apart", () => {
  assert.equal(
    tokenizerFingerprint(tokenizer).fingerprint,
    tokenizerFingerprint(listTokenizer([...words])).fingerprint,
  );
  assert.notEqual(
    tokenizerFingerprint(tokenizer).fingerprint,
    tokenizerFingerprint(listTokenizer([...words.slice(0, -1), "z"])).fingerprint,
  );
  assert.match(tokenizerFingerprint(tokenizer).fingerprint, /^[0-9a-f]{16}$/);
});
