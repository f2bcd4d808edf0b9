import assert from "node:assert/strict";
import { test } from "node:test";
import type { Task } from "../types/task.ts";
import { extractChoice, verifyChoice } from "./choice.ts";

const gpqa: Task = {
  id: "g1",
  question:
    "Which particle mediates the electromagnetic force?\n(A) gluon\n(B) photon\n(C) W boson\n(D) graviton",
  answer: "B",
  family: "physics",
  metadata: { choices: ["gluon", "photon", "W boson", "graviton"] },
};

test("accepts the gold letter in the usual forms", () => {
  const accepted = [
    "B",
    "b",
    "(B)",
    "(b)",
    "B)",
    "B.",
    "[B]",
    "**B**",
    "\\boxed{B}",
    "\\boxed{\\text{B}}",
    "$\\boxed{(B)}$",
    "Answer: B",
    "The answer is (B).",
    "After eliminating the others, the correct option is B) photon.",
    "**Answer:** (B) photon",
    "(B) photon",
    "photon", // the text of the choice itself
    "The Photon.",
    "<think>could be (A)</think>\nAnswer: B",
  ];
  for (const answer of accepted) assert.equal(verifyChoice(gpqa, answer), true, answer);
});

test("rejects other letters, several letters, stray letters in prose and out-of-range letters", () => {
  const rejected = [
    "A",
    "(C)",
    "\\boxed{D}",
    "Answer: A",
    "A or B",
    "A, B",
    "(A) and (B)",
    "B/C",
    "gluon",
    "I am not sure. Both look plausible.",
    "A photon is the carrier", // prose starting with the article "A"
    "E", // only four choices
    "",
    "Answer:",
  ];
  for (const answer of rejected) assert.equal(verifyChoice(gpqa, answer), false, answer);
  assert.equal(verifyChoice(gpqa, null), false);
});

test("without known choices: letters A-J only, no matching by text", () => {
  const bare: Task = { id: "m", question: "q", answer: "J", family: "x" };
  assert.equal(verifyChoice(bare, "(J)"), true);
  assert.equal(extractChoice("photon"), null);
  assert.equal(extractChoice("K"), null);
  assert.equal(verifyChoice({ ...bare, answer: "not a letter" }, "A"), false);
});

test("the last boxed letter or answer phrase decides", () => {
  assert.equal(extractChoice("At first I thought \\boxed{A}, but it is \\boxed{C}"), "C");
  assert.equal(extractChoice("Answer: A. Wait, no. Final answer: D"), "D");
});
