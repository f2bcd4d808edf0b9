import assert from "node:assert/strict";
import { test } from "node:test";
import { canonicalText } from "../env/protocol.ts";
import { argumentMessage, FORMAT_ERRORS, TOOL_MESSAGE_WORDS, TOOL_MESSAGES } from "./messages.ts";

const ALL = [
  ...Object.values(TOOL_MESSAGES),
  ...Object.values(FORMAT_ERRORS),
  argumentMessage("invalid", "query"),
  argumentMessage("missing", "expression"),
  argumentMessage("invalid", ""),
];

test("every message is canonical text built from TOOL_MESSAGE_WORDS", () => {
  const words = new Set(TOOL_MESSAGE_WORDS);
  for (const message of ALL) {
    assert.equal(canonicalText(message), message, `not canonical: ${message}`);
    for (const token of message.split(" ")) assert.ok(words.has(token), `"${token}" of "${message}" missing`);
  }
});

test("TOOL_MESSAGE_WORDS: canonical single words, no duplicates, no digits", () => {
  assert.equal(new Set(TOOL_MESSAGE_WORDS).size, TOOL_MESSAGE_WORDS.length);
  for (const word of TOOL_MESSAGE_WORDS) {
    assert.equal(canonicalText(word), word);
    assert.doesNotMatch(word, /\s|\d/);
  }
  for (const word of ["error", ":", "no", "results", "timed", "out", "invalid", "query", "expression"]) {
    assert.ok(TOOL_MESSAGE_WORDS.includes(word), word);
  }
});
