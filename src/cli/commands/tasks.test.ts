import assert from "node:assert/strict";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, test } from "node:test";
import { readTaskFile } from "../../tasks/index.ts";
import { runCli } from "../testing.ts";
import { register } from "./tasks.ts";

const folder = mkdtempSync(join(tmpdir(), "agentrl-tasks-cli-"));
after(() => rmSync(folder, { recursive: true, force: true }));

async function run(args: string[]): Promise<string> {
  return (await runCli(register, ["tasks", ...args])).out.join("\n");
}

test("tasks show prints a summary; --json gives the tasks", async () => {
  const text = await run(["show", "examples/tasks/trivia-sample.jsonl", "--limit", "1"]);
  assert.match(text, /trivia-sample\.jsonl: 6 tasks/);
  assert.match(
    text,
    /\[trivia-sample\/1\] astronomy\n {2}Q: Which planet is known as the Red Planet\?\n {2}A: Mars \(also: planet Mars\)/,
  );
  const json = JSON.parse(
    await run(["show", "examples/tasks/choice-sample.jsonl", "--limit", "0", "--json"]),
  );
  assert.equal(json.count, 5);
  assert.equal(json.withChoices, 5);
  assert.equal(json.tasks.length, 5);
  assert.deepEqual(json.families, { physics: 2, chemistry: 2, biology: 1 });
  await assert.rejects(
    run(["show", "examples/tasks/trivia-sample.jsonl", "--limit", "-1"]),
    /--limit must be an integer >= 0/,
  );
});

test("tasks convert writes the same tasks in another format", async () => {
  const out = join(folder, "math.parquet");
  assert.match(await run(["convert", "examples/tasks/math-sample.jsonl", out]), /wrote 8 tasks/);
  assert.deepEqual(await readTaskFile(out), await readTaskFile("examples/tasks/math-sample.jsonl"));
});

test("tasks check runs a verifier on one answer", async () => {
  assert.equal(
    await run(["check", "--verifier", "math", "--gold", "\\frac12", "--answer", "so \\boxed{0.5}"]),
    "true",
  );
  assert.equal(await run(["check", "--verifier", "math", "--gold", "1/3", "--answer", "0.33"]), "false");
  const choice = [
    "check",
    "--verifier",
    "choice",
    "--gold",
    "B",
    "--answer",
    "photon",
    "--choices",
    "gluon",
    "photon",
  ];
  assert.equal(await run(choice), "true");
  assert.equal(
    await run([
      "check",
      "--verifier",
      "em",
      "--gold",
      "Mars",
      "--alias",
      "Red Planet",
      "--answer",
      "the red planet",
    ]),
    "true",
  );
  await assert.rejects(
    run(["check", "--verifier", "regex", "--gold", "a", "--answer", "a"]),
    /unknown verifier "regex"/,
  );
});
