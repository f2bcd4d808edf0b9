import assert from "node:assert/strict";
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, test } from "node:test";
import { rolloutTasks } from "../env/task-set.ts";
import { readTaskFile } from "../tasks/index.ts";
import type { Task } from "../types/task.ts";
import { getVerifier } from "../verify/index.ts";
import { checkAnswer } from "../world/index.ts";
import { alterGold, checkVerifier, goldForms, referenceSolution, sprayAnswer } from "./verifier-check.ts";

const folder = mkdtempSync(join(tmpdir(), "doctor-verifier-"));
after(() => rmSync(folder, { recursive: true, force: true }));

async function taskFile(rows: object[]): Promise<Task[]> {
  const path = join(folder, `tasks-${Math.random().toString(36).slice(2)}.jsonl`);
  writeFileSync(path, rows.map((row) => JSON.stringify(row)).join("\n"));
  return readTaskFile(path);
}

test("a task file with one gold its verifier rejects: that task is listed as broken, the rest pass", async () => {
  const tasks = await taskFile([
    { id: "half", question: "Write one half as a fraction.", answer: "\\frac{1}{2}" },
    { id: "malformed", question: "What is three quarters?", answer: "\\frac{3}{" },
    { id: "sum", question: "What is twenty plus twenty-two?", answer: "42", aliases: ["42.0"] },
  ]);
  const check = await checkVerifier({ tasks, verify: getVerifier("math"), forms: goldForms("math") });
  assert.equal(check.ok, false);
  assert.deepEqual(check.data?.brokenIds, ["malformed"]);
  assert.match(check.detail, /1 of 3 tasks are broken.*malformed/);
  assert.equal(check.changes[0].kind, "fix-tasks");

  const sound = await checkVerifier({
    tasks: tasks.filter((task) => task.id !== "malformed"),
    verify: getVerifier("math"),
    forms: goldForms("math"),
  });
  assert.equal(sound.ok, true, sound.detail);
  assert.deepEqual(sound.data?.brokenIds, []);
});

test("a verifier that accepts an empty answer fails the check, which names it; the world's check passes", async () => {
  const tasks = rolloutTasks({ split: "test", count: 6, seed: 3 });
  const lenient = (task: Task, answer: string | null) => answer === "" || checkAnswer(task, answer);
  const check = await checkVerifier({ tasks, verify: lenient });
  assert.equal(check.ok, false);
  assert.match(check.detail, /accepts an empty answer on 6 of 6 tasks/);
  assert.deepEqual(check.data?.brokenIds, []);

  // A "contains the gold" verifier pays the spray.
  const contains = (task: Task, answer: string | null) => (answer ?? "").includes(task.answer);
  const sprayed = await checkVerifier({ tasks, verify: contains });
  assert.equal(sprayed.ok, false);
  assert.match(sprayed.detail, /spray of candidate answers/);

  const world = await checkVerifier({ tasks, verify: checkAnswer });
  assert.equal(world.ok, true, world.detail);
});

test("degenerate answers: one digit or word changed, a spray holding the gold, reference solutions", () => {
  assert.equal(alterGold("4213"), "4214");
  assert.equal(alterGold("1999"), "1990");
  assert.equal(alterGold("B"), "C");
  assert.equal(alterGold("Paris"), "siraP");
  const task: Task = { id: "t", question: "q", answer: "17", family: "f" };
  const spray = sprayAnswer("17", task).split(", ");
  assert.equal(spray.length, 24);
  assert.ok(spray.includes("17"));
  assert.equal(
    referenceSolution({ ...task, metadata: { solutions: '["print(1)"]' } }),
    "```python\nprint(1)\n```",
  );
  assert.equal(referenceSolution(task), null);
});

test("a code task whose reference solution fails its own tests is broken; one without a reference is unchecked", async () => {
  // A stand-in for the sandboxed code verifier (src/verify/code.ts, slow to start): it runs the
  // fenced program's one test by reading what it prints for "3\n1 2 3" (the sum program prints 6).
  const io = JSON.stringify({ inputs: ["3\n1 2 3\n"], outputs: ["6\n"] });
  const tasks = await taskFile([
    { problem_id: "sum", question: "Print the sum.", input_output: io, solutions: ["print(sum([1, 2, 3]))"] },
    { problem_id: "wrong-reference", question: "Print the sum.", input_output: io, solutions: ["print(0)"] },
    { problem_id: "no-reference", question: "Print the sum.", input_output: io },
  ]);
  const programs: string[] = [];
  const verify = async (_task: Task, answer: string | null) => {
    const program = /```python\n([\s\S]*?)\n```/.exec(answer ?? "")?.[1];
    if (program === undefined) return false;
    programs.push(program);
    return program === "print(sum([1, 2, 3]))";
  };
  const check = await checkVerifier({ tasks, verify });
  assert.deepEqual(programs, ["print(sum([1, 2, 3]))", "print(0)"], "each reference solution is run, fenced");
  assert.equal(check.ok, false);
  assert.deepEqual(check.data?.brokenIds, ["wrong-reference"]);
  assert.deepEqual(check.data?.unchecked, ["no-reference"]);
  assert.match(check.detail, /reference solution fails the task's own tests.*no reference solution/);
});
