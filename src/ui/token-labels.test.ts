import assert from "node:assert/strict";
import { test } from "node:test";
import { tokenLabels, wordPieces } from "./token-labels.ts";

test("word pieces split numbers digit by digit, like the embedded word tokenizer", () => {
  assert.deepEqual(wordPieces(" <calc> 1910 - 1850 </calc>"), [
    "<calc>",
    "1",
    "9",
    "1",
    "0",
    "-",
    "1",
    "8",
    "5",
    "0",
    "</calc>",
  ]);
});

test("labels only when the pieces line up one to one with the ids; never guessed", () => {
  assert.deepEqual(tokenLabels("<answer> 60 </answer>", 4), ["<answer>", "6", "0", "</answer>"]);
  assert.equal(tokenLabels("<answer> 60 </answer>", 3), null);
  assert.equal(tokenLabels("Let me look that up.", 7), null);
  assert.deepEqual(tokenLabels("", 0), []);
});
