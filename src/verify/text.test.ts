import assert from "node:assert/strict";
import { test } from "node:test";
import type { Task } from "../types/task.ts";
import { getVerifier, VERIFIER_NAMES, VERIFIERS } from "./index.ts";
import {
  createF1Verifier,
  f1Score,
  inGoldOrder,
  normalizeText,
  tokenF1,
  verifyExactMatch,
  verifyF1,
} from "./text.ts";

const trivia: Task = {
  id: "tq",
  question: "Who wrote the novel 'Nineteen Eighty-Four'?",
  answer: "George Orwell",
  aliases: ["Eric Arthur Blair", "Orwell"],
  family: "trivia",
};

test("SQuAD normalisation: case, punctuation, articles, whitespace", () => {
  assert.equal(normalizeText("  The  Eiffel-Tower! "), "eiffeltower");
  assert.equal(normalizeText("A Tale of Two Cities"), "tale of two cities");
  assert.equal(normalizeText("an apple, the pear"), "apple pear");
  assert.equal(normalizeText("théâtre"), "théâtre");
});

test("em: aliases and wrappers accepted; near misses rejected", () => {
  for (const answer of [
    "George Orwell",
    "george orwell.",
    "Orwell",
    "eric arthur blair",
    "\\boxed{Orwell}",
  ]) {
    assert.equal(verifyExactMatch(trivia, answer), true, answer);
  }
  assert.equal(verifyExactMatch(trivia, "The answer is George Orwell."), true);
  for (const answer of ["George", "Aldous Huxley", "George Orwell and Aldous Huxley", "", "the", "!!!"]) {
    assert.equal(verifyExactMatch(trivia, answer), false, answer);
  }
  assert.equal(verifyExactMatch(trivia, null), false);
  assert.equal(verifyExactMatch(trivia, `Orwell${" x".repeat(2000)}`), false); // oversized
});

test("token F1: worked examples", () => {
  // {president, barack, obama} vs {barack, obama}: precision 2/3, recall 1 → F1 0.8.
  assert.ok(Math.abs(tokenF1("Barack Obama", "President Barack Obama") - 0.8) < 1e-12);
  // {george} vs {george, orwell}: precision 1, recall 1/2 → F1 2/3.
  assert.ok(Math.abs(tokenF1("George Orwell", "George") - 2 / 3) < 1e-12);
  // Repeated tokens count once per occurrence: {the, cat, cat} → {cat, cat} vs {cat}: P 1/2, R 1 → 2/3.
  assert.ok(Math.abs(tokenF1("cat", "the cat cat") - 2 / 3) < 1e-12);
  assert.equal(tokenF1("yes", "yes"), 1);
  assert.equal(tokenF1("yes", "yes no"), 0); // yes/no answers must match exactly (HotpotQA rule)
  assert.equal(tokenF1("the", ""), 1); // both empty after normalisation
  assert.equal(tokenF1("Orwell", "Huxley"), 0);
  // Best over aliases and candidates: "Blair" vs "Eric Arthur Blair": P 1, R 1/3 → 0.5.
  assert.ok(Math.abs(f1Score(trivia, "Blair") - 0.5) < 1e-12);
  assert.equal(f1Score(trivia, null), 0);
});

test("f1 verifier: threshold", () => {
  const f1 = verifyF1;
  assert.equal(f1(trivia, "George"), true); // 2/3 >= 0.5
  assert.equal(f1(trivia, "Blair"), true); // exactly 0.5
  assert.equal(f1(trivia, "Aldous Huxley"), false);
  assert.equal(f1(trivia, "the famous author George Orwell wrote it in 1948 on an island"), false);
  assert.equal(createF1Verifier(0.9)(trivia, "George"), false);
  assert.throws(() => createF1Verifier(0), /threshold must be in \(0, 1\]/);
});

test("the verifier map is closed and typed", () => {
  assert.deepEqual(Object.keys(VERIFIERS).sort(), [...VERIFIER_NAMES].sort());
  assert.equal(getVerifier("em"), VERIFIERS.em);
  assert.throws(() => getVerifier("regex"), /unknown verifier "regex" \(valid: math, choice, em, f1, code\)/);
});

test("f1 verifier: the gold's words reversed are not its answer, though their token F1 is 1", () => {
  const obama: Task = {
    id: "o",
    question: "Who was president in 2010?",
    answer: "Barack Obama",
    family: "trivia",
  };
  assert.equal(f1Score(obama, "Obama Barack"), 1); // the SQuAD metric itself is a bag of words
  assert.equal(verifyF1(obama, "Obama Barack"), false);
  assert.equal(verifyF1(obama, "Obama, Barack"), false);
  const book: Task = { id: "b", question: "Which novel?", answer: "War and Peace", family: "trivia" };
  assert.equal(verifyF1(book, "Peace and War"), false);
  assert.equal(verifyF1(book, "Peace War"), false);
  // In order, partial answers and extra words keep their F1 verdict.
  assert.equal(verifyF1(obama, "President Barack Obama"), true);
  assert.equal(verifyF1(obama, "Obama"), true);
  assert.equal(verifyF1(book, "the novel War and Peace by Tolstoy"), true);
  assert.equal(verifyF1(trivia, "George"), true);
  // Worked examples of the order test: the overlap's longest common subsequence is all of it.
  assert.equal(inGoldOrder("War and Peace", "the War of Peace"), true); // {war, peace} in order
  assert.equal(inGoldOrder("War and Peace", "Peace, then War"), false); // LCS 1 of 2 shared
  assert.equal(inGoldOrder("cat", "cat cat"), true); // the gold's one "cat" is the whole overlap
  // An alias written in another order is another gold, matched in its own order.
  assert.equal(verifyF1({ ...obama, aliases: ["Obama Barack"] }, "Obama Barack"), true);
});

test("the named verifiers run on a worker thread and judge as the functions do", async () => {
  for (const answer of ["George Orwell", "Orwell George", "George", "Aldous Huxley"]) {
    assert.equal(await VERIFIERS.f1(trivia, answer), verifyF1(trivia, answer), answer);
    assert.equal(await VERIFIERS.em(trivia, answer), verifyExactMatch(trivia, answer), answer);
  }
});
