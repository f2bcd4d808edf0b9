import assert from "node:assert/strict";
import { test } from "node:test";
import type { Task } from "../types/task.ts";
import { checkAnswer, normalizeAnswer } from "./index.ts";

test("numbers normalise to one canonical form", () => {
  for (const text of [
    "4213",
    " 4213 ",
    "4,213",
    "4 , 213",
    "4 2 1 3",
    "04213",
    "4213.0",
    "4213 .",
    "4213.",
    "+4213",
  ]) {
    assert.equal(normalizeAnswer(text), "4213", JSON.stringify(text));
  }
  assert.equal(normalizeAnswer("1,234,567"), "1234567");
  assert.equal(normalizeAnswer("-141"), "-141");
  assert.equal(normalizeAnswer("- 141"), "-141");
  assert.equal(normalizeAnswer("3 . 5"), "3.5");
  assert.equal(normalizeAnswer("0"), "0");
  assert.equal(normalizeAnswer("-0"), "0");
});

test("non-numbers compare as trimmed lower-case text", () => {
  assert.equal(normalizeAnswer("  Zenda  City. "), "zenda city");
  // Not a thousands pattern: left as text, so it cannot match 4213 by accident.
  assert.equal(normalizeAnswer("42,13"), "42,13");
  assert.equal(normalizeAnswer("12 15"), "12 15");
});

test("checkAnswer compares numerically and accepts aliases", () => {
  const task: Task = { id: "t", question: "q ?", answer: "4213", family: "lookup", aliases: ["about 4200"] };
  assert.equal(checkAnswer(task, "4,213"), true);
  assert.equal(checkAnswer(task, "4213.0"), true);
  assert.equal(checkAnswer(task, "About 4200"), true);
  assert.equal(checkAnswer(task, "4212"), false);
  assert.equal(checkAnswer(task, "42130"), false);
  assert.equal(checkAnswer(task, ""), false);
  assert.equal(checkAnswer(task, null), false);
});
