import assert from "node:assert/strict";
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { test } from "node:test";
import { renderAnswer } from "../env/protocol.ts";
import { runEpisodes } from "../env/run-episodes.ts";
import { evaluate } from "../eval/run-eval.ts";
import { createMockPolicy } from "../policy/mock.ts";
import { readTaskFile } from "../tasks/index.ts";
import { ClassifiedError } from "../types/failure.ts";
import { checkTasksForVerifier, codeTestsProblem } from "./index.ts";
import { casVerdict, verifyMath } from "./math.ts";

test("a CAS that throws is a math-checker-error (infra), not a wrong answer; its verdicts pass through", async () => {
  assert.equal(
    casVerdict("1", "1", () => true),
    true,
  );
  assert.equal(
    casVerdict("1", "2", () => false),
    false,
  );
  assert.throws(
    () =>
      casVerdict("x", "\\foo", () => {
        throw new RangeError("stack blown");
      }),
    (error: unknown) =>
      error instanceof ClassifiedError &&
      error.failure.class === "infra" &&
      error.failure.code === "math-checker-error" &&
      /"x" with "\\foo": RangeError: stack blown/.test(error.failure.message),
  );
  // Through the episode loop such an error leaves the episode unscored instead of wrong.
  const task = { id: "m", question: "1 + 1 ?", answer: "2", family: "math" };
  const [episode] = await runEpisodes({
    policy: createMockPolicy(() => renderAnswer("\\boxed{2}")),
    episodes: [{ task, seed: 0 }],
    tools: () => [],
    verify: () =>
      casVerdict("2", "2", () => {
        throw new Error("CAS bug");
      }),
  });
  assert.deepEqual(
    [episode.correct, episode.outcomeReward, episode.failure?.code],
    [false, null, "math-checker-error"],
  );
  assert.equal(verifyMath(task, "\\boxed{2}"), true, "the real checker still judges");
});

test("a malformed code task names its problem; an eval on it refuses to start, naming the file and the task", async () => {
  const root = mkdtempSync(join(tmpdir(), "agentrl-code-tasks-"));
  try {
    const file = join(root, "broken.jsonl");
    writeFileSync(
      file,
      [
        JSON.stringify({ id: "good", question: "echo", tests: [{ input: "1", output: "1" }] }),
        JSON.stringify({ id: "bad", question: "echo", tests: "not a list" }),
        JSON.stringify({ id: "none", question: "echo", answer: "1" }),
      ].join("\n"),
    );
    const tasks = await readTaskFile(file);
    assert.equal(codeTestsProblem(tasks[0]), null);
    assert.equal(codeTestsProblem(tasks[1]), "metadata.tests is not a list of {input, output} test cases");
    assert.match(codeTestsProblem(tasks[2])!, /^no tests: expected metadata.input_output/);
    assert.throws(
      () => checkTasksForVerifier("code", tasks, file),
      new RegExp(`${file}: task bad cannot be judged`),
    );
    checkTasksForVerifier("math", tasks, file); // only the code verifier reads tests
    let acted = 0;
    await assert.rejects(
      evaluate({
        policy: createMockPolicy(() => {
          acted++;
          return renderAnswer("x");
        }),
        tasks: { type: "given", tasks, name: file },
        verifier: "code",
        n: 1,
        persist: false,
      }),
      /broken\.jsonl: task bad cannot be judged by the code verifier: metadata\.tests is not a list/,
    );
    assert.equal(acted, 0, "no episode ran");
  } finally {
    rmSync(root, { recursive: true, force: true });
  }
});
