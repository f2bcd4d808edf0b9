import assert from "node:assert/strict";
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, test } from "node:test";
import { zstdCompressSync } from "node:zlib";
import { parquetWriteBuffer } from "hyparquet-writer";
import type { Task } from "../types/task.ts";
import { VERIFIERS } from "../verify/index.ts";
import { generateTasks, generateWorld } from "../world/index.ts";
import { readTaskFile, TaskFileError, writeTaskFile } from "./index.ts";

const folder = mkdtempSync(join(tmpdir(), "agentrl-tasks-"));
after(() => rmSync(folder, { recursive: true, force: true }));

function jsonl(name: string, rows: unknown[]): string {
  const path = join(folder, name);
  writeFileSync(path, rows.map((row) => (typeof row === "string" ? row : JSON.stringify(row))).join("\n"));
  return path;
}

test("common field names map onto Task; ids default to <stem>/<line>", async () => {
  const path = jsonl("mixed.jsonl", [
    {
      problem: "What is $1+1$?",
      solution: "Adding, we get $\\boxed{2}$.",
      type: "Algebra",
      level: "Level 1",
    },
    "",
    { question: "Capital of France?", answers: ["Paris", "City of Light"], id: 17 },
    { prompt: "Janet has 3 apples…", answer: "She has 3 + 4 = 7.\n#### 7", system: "Be brief." },
    {
      prompt: [
        { role: "system", content: "Think step by step." },
        { role: "user", content: "What is 6*7?" },
      ],
      reward_model: { ground_truth: "42", style: "rule" },
      data_source: "gsm8k",
      extra_info: { index: 3 },
    },
    { question: "Who wrote Hamlet?", answer: { value: "Shakespeare", aliases: ["William Shakespeare"] } },
  ]);
  const tasks = await readTaskFile(path);
  assert.deepEqual(tasks[0], {
    id: "mixed/1",
    question: "What is $1+1$?",
    answer: "2",
    family: "Algebra",
    metadata: { solution: "Adding, we get $\\boxed{2}$.", level: "Level 1" },
  });
  assert.deepEqual(tasks[1], {
    id: "17",
    question: "Capital of France?",
    answer: "Paris",
    aliases: ["City of Light"],
    family: "mixed",
  });
  assert.equal(tasks[2].id, "mixed/4");
  assert.equal(tasks[2].answer, "7");
  assert.equal(tasks[2].systemPrompt, "Be brief.");
  assert.deepEqual(tasks[3], {
    id: "mixed/5",
    question: "What is 6*7?",
    answer: "42",
    family: "gsm8k",
    systemPrompt: "Think step by step.",
    metadata: { extra_info: { index: 3 } },
  });
  assert.deepEqual(tasks[4].aliases, ["William Shakespeare"]);
});

test("choices: letters, 0-based indexes, labels and texts become the gold letter", async () => {
  const path = jsonl("mc.jsonl", [
    { question: "2+2?", choices: ["3", "4", "5"], answer: "B" },
    { question: "3+3?", choices: ["5", "6"], answer: 1 },
    { question: "Largest?", choices: { text: ["ant", "whale"], label: ["1", "2"] }, answer: "2" },
    { question: "Red planet?", options: { A: "Venus", B: "Mars" }, answer: "Mars" },
  ]);
  const tasks = await readTaskFile(path);
  assert.deepEqual(
    tasks.map((task) => task.answer),
    ["B", "B", "B", "B"],
  );
  assert.equal(tasks[0].question, "2+2?\n\n(A) 3\n(B) 4\n(C) 5");
  assert.deepEqual(tasks[0].metadata, { choices: ["3", "4", "5"] });
  assert.equal(await VERIFIERS.choice(tasks[0], "The answer is (B) 4"), true);
  assert.equal(await VERIFIERS.choice(tasks[3], "Mars"), true);
});

test("malformed rows are errors naming the file and line", async () => {
  const cases: [unknown[], RegExp][] = [
    [[{ question: "q", answer: "a" }, "{not json"], /bad\.jsonl:2: invalid JSON/],
    [[{ answer: "a" }], /bad\.jsonl:1: no question \(expected one of question, problem/],
    [[{ question: "q" }], /bad\.jsonl:1: no answer/],
    [[{ question: "  ", answer: "a" }], /"question" must be a non-empty string/],
    [[{ question: "q", answer: "" }], /"answer" is empty/],
    [[{ question: "q", answer: { nested: true } }], /"answer" must be text, a number or a list/],
    [[{ question: "q", solution: "no box here" }], /"solution" has no \\boxed\{\} answer/],
    [[{ question: "q", answer: "E", choices: ["a", "b"] }], /answer "E" is not a letter, index or text/],
    [[{ question: "q", answer: "A", choices: ["only one"] }], /must hold 2 to 10 choices/],
    [[{ question: "q", answer: "a", aliases: "b" }], /"aliases" must be a list/],
    [[{ question: "q", answer: "a", split: "dev" }], /"split" must be "train" or "test"/],
    [
      [
        { id: "x", question: "q", answer: "a" },
        { id: "x", question: "q", answer: "b" },
      ],
      /bad\.jsonl:2: duplicate id "x" \(also at .*bad\.jsonl:1\)/,
    ],
    [[[1, 2]], /bad\.jsonl:1: a row must be a JSON object/],
  ];
  for (const [rows, pattern] of cases) {
    const path = jsonl("bad.jsonl", rows);
    await assert.rejects(readTaskFile(path), (error: unknown) => {
      assert.ok(error instanceof TaskFileError, String(error));
      assert.match((error as Error).message, pattern);
      return true;
    });
  }
  await assert.rejects(readTaskFile(join(folder, "tasks.csv")), /unknown task file type "\.csv"/);
});

const sample: Task[] = [
  {
    id: "m1",
    question: "Compute $\\frac{1}{2}+\\frac{1}{4}$.",
    answer: "\\frac{3}{4}",
    family: "algebra",
    systemPrompt: "Box the answer.",
    metadata: { level: 2, source: "written for the test", tags: ["fractions"] },
  },
  { id: "t1", question: "Largest ocean?", answer: "Pacific Ocean", aliases: ["Pacific"], family: "trivia" },
  {
    id: "c1",
    question: "Pick B.\n\n(A) no\n(B) yes",
    answer: "B",
    family: "choice",
    metadata: { choices: ["no", "yes"] },
  },
];

test("JSONL, JSON and parquet round-trip tasks, world tasks included", async () => {
  const world = generateWorld(5);
  const worldTasks = generateTasks(world, { count: 4, split: "train", seed: 2 });
  assert.ok(worldTasks.some((task) => task.gold && task.evidence && task.worldSeed === 5));
  for (const extension of ["jsonl", "json", "parquet"]) {
    for (const tasks of [sample, worldTasks]) {
      const path = join(folder, `round-trip-${tasks.length}.${extension}`);
      writeTaskFile(path, tasks);
      assert.deepEqual(await readTaskFile(path), tasks, extension);
    }
  }
  const empty = join(folder, "empty.parquet");
  writeTaskFile(empty, []);
  assert.deepEqual(await readTaskFile(empty), []);
});

test("parquet written by other tools: ZSTD pages, INT64 ids, list columns", async () => {
  const path = join(folder, "foreign.parquet");
  const bytes = parquetWriteBuffer({
    codec: "ZSTD",
    compressors: { ZSTD: (input: Uint8Array) => new Uint8Array(zstdCompressSync(input)) },
    columnData: [
      { name: "question_id", data: [10n, 11n], type: "INT64" },
      { name: "question", data: ["2+3?", "Ocean?"], type: "STRING" },
      { name: "answer", data: ["5", "Pacific"], type: "STRING" },
      { name: "year", data: [2024, 2025], type: "INT32" },
    ],
  });
  writeFileSync(path, new Uint8Array(bytes));
  const tasks = await readTaskFile(path);
  assert.deepEqual(tasks[0], {
    id: "10",
    question: "2+3?",
    answer: "5",
    family: "foreign",
    metadata: { year: 2024 },
  });
  writeFileSync(join(folder, "broken.parquet"), "not parquet at all");
  await assert.rejects(readTaskFile(join(folder, "broken.parquet")), /broken\.parquet: cannot read parquet/);
});

test("the shipped sample files load and each gold passes its verifier", async () => {
  const math = await readTaskFile("examples/tasks/math-sample.jsonl");
  const choice = await readTaskFile("examples/tasks/choice-sample.jsonl");
  const trivia = await readTaskFile("examples/tasks/trivia-sample.jsonl");
  assert.ok(math.length >= 6 && choice.length >= 4 && trivia.length >= 5);
  for (const task of math) assert.equal(await VERIFIERS.math(task, `\\boxed{${task.answer}}`), true, task.id);
  assert.deepEqual(
    choice.map((task) => task.answer),
    ["B", "A", "C", "D", "B"],
  );
  for (const task of choice)
    assert.equal(await VERIFIERS.choice(task, `Answer: ${task.answer}`), true, task.id);
  for (const task of trivia) {
    assert.equal(await VERIFIERS.em(task, task.answer), true, task.id);
    for (const alias of task.aliases ?? []) assert.equal(await VERIFIERS.em(task, alias), true, alias);
  }
  assert.equal(trivia[0].id, "trivia-sample/1");
  assert.equal(trivia[0].family, "astronomy");
  assert.equal(math[0].family, "number-theory");
  assert.equal(math.at(-1)?.systemPrompt, "Solve the problem. Put the final answer in \\boxed{}.");
});
