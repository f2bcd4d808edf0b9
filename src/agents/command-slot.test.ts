/**
 * What a `--agent-cmd` command answered: the last non-empty line of its stdout, unwrapped when that
 * line is a JSON object with `answer`; nothing printed is no answer.
 */
import assert from "node:assert/strict";
import { test } from "node:test";
import { commandAnswer } from "./command-slot.ts";

test("the answer is the last non-empty stdout line, or its `answer` when it is such a JSON object", () => {
  assert.deepEqual(commandAnswer("thinking…\nParis\n\n  \n"), { answer: "Paris" });
  assert.deepEqual(commandAnswer('log line\n{"answer": 42}\n'), { answer: 42 });
  assert.deepEqual(commandAnswer('{"answer": null}'), { answer: null });
  assert.deepEqual(
    commandAnswer('{"result": "x"}'),
    { answer: '{"result": "x"}' },
    "no `answer` key: the line",
  );
  assert.deepEqual(commandAnswer("{not json"), { answer: "{not json" });
  assert.deepEqual(commandAnswer("a\r\nb\r\n"), { answer: "b" });
  assert.equal(commandAnswer(""), null);
  assert.equal(commandAnswer("\n \n"), null);
});
