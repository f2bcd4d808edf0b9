import assert from "node:assert/strict";
import { test } from "node:test";
import type { Task } from "../types/task.ts";
import { boxedContents } from "./extract.ts";
import { extractMathAnswers, mathEqual, normalizeMathAnswer, verifyMath } from "./math.ts";

const task = (answer: string, aliases?: string[]): Task => ({
  id: "t",
  question: "q",
  answer,
  family: "math",
  ...(aliases ? { aliases } : {}),
});

test("equal by value: fractions, decimals, radicals, LaTeX variants", () => {
  const equal: [string, string][] = [
    ["\\frac{1}{2}", "0.5"],
    ["\\frac{1}{2}", "1/2"],
    ["\\frac12", "\\dfrac{1}{2}"],
    ["\\tfrac{3}{4}", "0.75"],
    ["\\left(\\frac{1}{2}\\right)", "1/2"],
    ["2\\sqrt{2}", "\\sqrt{8}"],
    ["\\frac{1}{\\sqrt{2}}", "\\frac{\\sqrt{2}}{2}"],
    ["\\frac{\\sqrt{3}}{2}", "\\sin(\\pi/3)"],
    ["-\\frac{3}{2}", "-1.5"],
    ["3.5", "3\\frac{1}{2}"], // a mixed number
    ["120", "5!"],
    ["2i", "\\sqrt{-4}"],
    ["23", "023"], // AIME answers are often written with leading zeros
    ["1000", "1,000"],
    ["1000", "1{,}000"],
    ["1000000", "1\\,000\\,000"],
    ["1000000", "1 000 000"],
    ["30", "30^\\circ"],
    ["30", "30^{\\circ}"],
    ["50", "50\\%"], // percentages compare as the number written
    ["12", "12 \\text{ cm}"],
    ["12", "12 inches"],
    ["5", "x = 5"],
    ["5", "\\$5"],
    ["(1,2)", "(1, 2)"],
    ["\\{1,2\\}", "\\{2,1\\}"], // sets in any order
    ["(x+1)^2", "x^2+2x+1"], // symbolic: equal at every sample point
    ["y = 2x+1", "y=1+2x"],
    ["\\infty", "\\infty"],
  ];
  for (const [gold, answer] of equal) {
    assert.equal(mathEqual(gold, answer), true, `${gold} = ${answer}`);
    assert.equal(mathEqual(answer, gold), true, `${answer} = ${gold}`);
  }
});

test("rejects: wrong values, rounded decimals, order, prose, empty", () => {
  const different: [string, string][] = [
    ["3", "4"],
    ["1/3", "0.33"], // tolerance is 1e-9 relative: a rounded decimal is another answer
    ["1/3", "0.333333"],
    ["\\pi", "3.14159"],
    ["\\sqrt{2}", "1.414"],
    ["(1,2)", "(2,1)"], // tuples are ordered
    ["(1,2)", "1"],
    ["x+1", "x+2"],
    ["2x", "2"], // a single letter is a variable, not a unit
    ["x", "y"],
    ["50", "0.5"],
    ["0", "7^{823543}-7^{823543}"], // overflows to -inf numerically: never equal to a finite gold
    ["\\infty", "2^{100000}"],
    ["10", "\\sum_{n=1}^{4} n"], // sums are outside the whitelist
    ["5", ""],
    ["", "5"],
    ["5", "\\text{five}"],
  ];
  for (const [gold, answer] of different) assert.equal(mathEqual(gold, answer), false, `${gold} ≠ ${answer}`);
});

test("normalisation is conservative", () => {
  assert.equal(normalizeMathAnswer("  $\\dfrac{1}{2}$. "), "\\frac{1}{2}");
  assert.equal(normalizeMathAnswer("\\left[ 1, 2 \\right]"), "[ 1, 2 ]");
  assert.equal(normalizeMathAnswer("1,000,000"), "1000000");
  assert.equal(normalizeMathAnswer("1,00"), "1,00"); // not a thousands pattern: left alone
  assert.equal(normalizeMathAnswer("2,3"), "2,3");
  assert.equal(normalizeMathAnswer("2pi"), "2pi");
  assert.equal(normalizeMathAnswer("x"), "x");
  assert.equal(normalizeMathAnswer(""), null);
  assert.equal(normalizeMathAnswer("1".repeat(301)), null);
});

test("extraction: boxed (nested braces), answer phrases, whole math, inline math, last number", () => {
  assert.deepEqual(boxedContents("a \\boxed{\\frac{1}{\\sqrt{2}}} b \\fbox{3} \\boxed{x"), [
    "\\frac{1}{\\sqrt{2}}",
    "3",
  ]);
  assert.deepEqual(extractMathAnswers("so the area is \\boxed{\\frac{\\sqrt{3}}{4}}."), {
    answers: ["\\frac{\\sqrt{3}}{4}"],
    source: "boxed",
  });
  assert.deepEqual(extractMathAnswers("Final Answer: The final answer is $12$. I hope it is correct."), {
    answers: ["12"],
    source: "answer-phrase",
  });
  assert.deepEqual(extractMathAnswers("The answer is 3.5.\n"), { answers: ["3.5"], source: "answer-phrase" });
  assert.deepEqual(extractMathAnswers(" \\frac{1}{2} "), { answers: ["\\frac{1}{2}"], source: "whole" });
  assert.deepEqual(extractMathAnswers("Therefore, $x = \\frac{1}{2}$"), {
    answers: ["x = \\frac{1}{2}"],
    source: "inline-math",
  });
  assert.deepEqual(extractMathAnswers("we count 1,000 people in total"), {
    answers: ["1,000"],
    source: "last-number",
  });
  assert.equal(extractMathAnswers("no idea"), null);
  // A reasoning block is ignored: only what follows the last </think> is read.
  assert.deepEqual(extractMathAnswers("<think>maybe \\boxed{4}</think> \\boxed{5}")?.answers, ["5"]);
});

test("verifyMath: worked examples it must accept and reject", () => {
  const half = task("\\frac{1}{2}");
  assert.equal(verifyMath(half, "The probability is $\\boxed{\\dfrac{1}{2}}$."), true);
  assert.equal(verifyMath(half, "so the answer is 0.5"), true);
  assert.equal(verifyMath(half, "1/2"), true);
  assert.equal(verifyMath(half, "\\boxed{\\frac{1}{2}} which is \\boxed{0.5}"), true); // same value twice
  assert.equal(verifyMath(half, "\\boxed{\\frac{1}{3}}"), false);
  assert.equal(verifyMath(half, "\\boxed{0.5} or maybe \\boxed{0.6}"), false); // two different boxed values
  assert.equal(verifyMath(half, ""), false);
  assert.equal(verifyMath(half, null), false);
  assert.equal(verifyMath(half, "\\boxed{}"), false);
  // Gold written as a full solution: its last boxed value is the gold.
  assert.equal(verifyMath(task("We find $x=3$, so \\boxed{9}."), "9"), true);
  // Aliases are other accepted golds.
  assert.equal(verifyMath(task("2", ["-2"]), "\\boxed{-2}"), true);
  // Too many boxes is hedging, even if all were equal to the gold.
  assert.equal(verifyMath(task("1"), Array.from({ length: 9 }, (_, i) => `\\boxed{${i}}`).join(" ")), false);
});

test("bounded: hostile or huge answers are rejected quickly", () => {
  const started = performance.now();
  const gold = task("10");
  assert.equal(verifyMath(gold, "\\boxed{100000!}"), false);
  assert.equal(verifyMath(gold, "\\boxed{\\sum_{n=1}^{10000000} n}"), false);
  assert.equal(verifyMath(gold, `\\boxed{${"(".repeat(150)}1${")".repeat(150)}}`), false);
  assert.equal(verifyMath(gold, `\\boxed{${"1+".repeat(140)}1}`), false); // too many nodes
  assert.equal(verifyMath(gold, `\\boxed{${"\\frac{".repeat(60)}1${"}{2}".repeat(60)}}`), false);
  assert.equal(verifyMath(gold, `${"x".repeat(1_000_000)} \\boxed{10}`), true); // only the tail is read
  assert.equal(verifyMath(gold, "{".repeat(100_000)), false);
  assert.equal(verifyMath(gold, "\\boxed{".repeat(20_000)), false);
  assert.ok(performance.now() - started < 3000, `took ${performance.now() - started} ms`);
});

test("a final value is required: the question's own expression, or arithmetic left undone, is not an answer", () => {
  const sum: Task = { id: "s", question: "What is $2 + 3$?", answer: "5", family: "math" };
  assert.equal(verifyMath(sum, "5"), true);
  assert.equal(verifyMath(sum, "\\boxed{5}"), true);
  for (const copied of ["2+3", "\\boxed{2 + 3}", "the answer is 2+3", "3+2", "10-5", "(2+3)"]) {
    assert.equal(verifyMath(sum, copied), false, copied);
  }
  const simplify: Task = {
    id: "f",
    question: "Simplify $\\frac{6}{4}$.",
    answer: "\\frac{3}{2}",
    family: "math",
  };
  assert.equal(verifyMath(simplify, "\\frac{3}{2}"), true);
  assert.equal(verifyMath(simplify, "1.5"), true);
  assert.equal(verifyMath(simplify, "\\frac{6}{4}"), false); // equal in value, but the question's own
  const expand: Task = { id: "e", question: "Expand $(x+1)^2$.", answer: "x^2+2x+1", family: "math" };
  assert.equal(verifyMath(expand, "x^2 + 2x + 1"), true);
  assert.equal(verifyMath(expand, "(x+1)^2"), false);
  const root: Task = { id: "r", question: "Simplify $\\sqrt{8}$.", answer: "2\\sqrt{2}", family: "math" };
  assert.equal(verifyMath(root, "2\\sqrt2"), true);
  assert.equal(verifyMath(root, "\\sqrt{8}"), false);
  // Final forms stay final wherever they appear: a number, a sign, a fraction in lowest terms, a
  // power of ten; and a gold written as an expression is matched as written.
  const inQuestion: Task = {
    id: "q",
    question: "Is the slope $-\\frac{3}{4}$ or 2?",
    answer: "-\\frac34",
    family: "math",
  };
  assert.equal(verifyMath(inQuestion, "-\\frac{3}{4}"), true);
  assert.equal(verifyMath({ ...sum, answer: "1500" }, "1.5\\times10^{3}"), true);
  assert.equal(verifyMath({ ...sum, answer: "1000000" }, "10^{6}"), true);
  assert.equal(verifyMath({ ...sum, answer: "\\frac{5}{2}" }, "2\\frac12"), true); // a mixed number
  assert.equal(verifyMath({ ...sum, answer: "-0.75" }, "\\frac{-3}{4}"), true);
  assert.equal(verifyMath({ ...sum, answer: "2^{10}" }, "2^{10}"), true);
  assert.equal(verifyMath({ ...sum, answer: "2^{10}" }, "1024"), true);
  assert.equal(verifyMath({ ...sum, answer: "1024" }, "2^{10}"), false);
});
