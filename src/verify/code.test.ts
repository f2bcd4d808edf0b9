import assert from "node:assert/strict";
import { after, test } from "node:test";
import { deflateSync } from "node:zlib";
import { runEpisodes } from "../env/run-episodes.ts";
import { createMockPolicy } from "../policy/mock.ts";
import { readTaskFile } from "../tasks/index.ts";
import { createPythonTool } from "../tools/python.ts";
import { PythonSandboxPool } from "../tools/python-sandbox.ts";
import type { Task } from "../types/task.ts";
import { createCodeVerifier } from "./code.ts";
import { extractProgram, returnMatches, stdoutMatches, taskCodeTests, unpickleString } from "./code-tests.ts";

const tasks = await readTaskFile("examples/tasks/code-sample.jsonl");
const byId = (id: string) => tasks.find((task) => task.id === id) as Task;
const fenced = (program: string) => `Here is my solution.\n\n\`\`\`python\n${program}\n\`\`\`\n`;

const pool = new PythonSandboxPool({ poolSize: 2, memoryBytes: 128 * 1024 * 1024 });
const verifier = createCodeVerifier({ pool, testTimeoutMs: 3000, concurrency: 2 });
after(() => pool.close());

test("tests are read as LiveCodeBench, APPS and plain rows ship them", () => {
  const sum = taskCodeTests(byId("lcb/sum-pairs"))!;
  // Public tests as JSON text; private ones compressed (base64 of zlib of a pickled JSON string).
  assert.equal(sum.mode, "stdio");
  assert.deepEqual(
    sum.tests.map((t) => [t.input, t.output, t.hidden]),
    [
      ["1 2\n", "3\n", false],
      ["10 20\n", "30\n", true],
      ["-5 5\n", "0\n", true],
    ],
  );
  const lcbCall = taskCodeTests(byId("lcb/max-subarray"))!;
  assert.equal(lcbCall.mode, "call");
  assert.equal(lcbCall.fnName, "maxSubArray"); // from the row's metadata, shipped as JSON text
  assert.equal(lcbCall.tests[0].input, "[[1,-2,3,4]]"); // one JSON value per line → argument list
  const apps = taskCodeTests(byId("apps/palindrome"))!;
  assert.deepEqual(
    [apps.mode, apps.fnName, apps.tests[0].input, apps.tests[0].output],
    ["call", "is_palindrome", '["abba"]', "[true]"],
  );
  const plain = taskCodeTests(byId("plain/fibonacci"))!;
  assert.deepEqual(
    plain.tests.map((t) => t.hidden),
    [false, false, true, true],
  );
  assert.equal(byId("lcb/sum-pairs").question.startsWith("Read two integers"), true); // question_content
  assert.equal(taskCodeTests({ id: "x", question: "q", answer: "1", family: "f" }), null);
  // Only a pickle of exactly one string is decoded: protocol 4, FRAME, SHORT_BINUNICODE "hi", MEMOIZE, STOP.
  const pickled = Uint8Array.from([0x80, 4, 0x95, 7, 0, 0, 0, 0, 0, 0, 0, 0x8c, 2, 0x68, 0x69, 0x94, 0x2e]);
  assert.equal(unpickleString(pickled), "hi");
  assert.equal(unpickleString(Uint8Array.from([0x80, 4, 0x63, 0x6f, 0x73, 0x2e])), null); // GLOBAL: refused
  assert.ok(deflateSync); // (the sample file's compressed tests were written by Python's pickle + zlib)
});

test("the program is the last fenced python block; outputs compare by lines, tokens and values", () => {
  const answer = "```python\nprint(1)\n```\nbetter:\n```py\nprint(2)\n```\n```text\nnot code\n```";
  assert.equal(extractProgram(answer), "print(2)\n");
  assert.equal(extractProgram("<think>```python\nx\n```</think> no code"), null);
  assert.equal(extractProgram("```\nprint(3)\n```"), "print(3)\n");
  assert.equal(extractProgram("```python\nunclosed"), null);
  assert.ok(stdoutMatches("3  \n\n", "3"));
  assert.ok(stdoutMatches("0.50 1\n", "0.5 1"));
  assert.ok(!stdoutMatches("3\n4", "3"));
  assert.ok(!stdoutMatches("0.51", "0.5"));
  assert.ok(returnMatches("[1, 2]", "[1,2]"));
  assert.ok(returnMatches("true", "[true]")); // APPS wraps return values in a one-element list
  assert.ok(!returnMatches("false", "[true]"));
  assert.ok(returnMatches("0.30000000000000004", "0.3"));
});

test("correct programs pass every test; one right only on the public tests fails on a hidden one", async () => {
  const cases: [string, string, boolean, RegExp?][] = [
    ["lcb/sum-pairs", "a, b = map(int, input().split())\nprint(a + b)", true],
    [
      "lcb/max-subarray",
      "class Solution:\n    def maxSubArray(self, nums):\n        best = cur = nums[0]\n        for x in nums[1:]:\n            cur = max(x, cur + x)\n            best = max(best, cur)\n        return best",
      true,
    ],
    // Kadane's without the all-negative case: right on the public test, wrong on the first hidden one.
    [
      "lcb/max-subarray",
      "class Solution:\n    def maxSubArray(self, nums):\n        best = cur = 0\n        for x in nums:\n            cur = max(0, cur + x)\n            best = max(best, cur)\n        return best",
      false,
      /hidden test 2: wrong output/,
    ],
    ["apps/sum-list", "import sys\ndata = sys.stdin.read().split()\nprint(sum(map(int, data[1:])))", true],
    // Other ways of reading stdin, and output without a final newline (flushed after each test).
    [
      "apps/sum-list",
      "import sys\nd = sys.stdin.buffer.read().split()\nsys.stdout.write(str(sum(map(int, d[1:]))))",
      true,
    ],
    ["lcb/sum-pairs", "a, b = map(int, open(0).read().split())\nprint(a + b, end='')", true],
    ["apps/palindrome", "def is_palindrome(s):\n    return s == s[::-1]", true],
    [
      "plain/fibonacci",
      "n = int(input())\na, b = 1, 1\nfor _ in range(n - 1):\n    a, b = b, a + b\nprint(a)",
      true,
    ],
    // Right on both public tests (n = 1, 2), wrong on the hidden ones.
    ["plain/fibonacci", "input()\nprint(1)", false, /hidden test 3: wrong output/],
    [
      "plain/fibonacci",
      "n = int(input())\nraise ValueError('boom')",
      false,
      /public test 1: ValueError: boom \(line 2\)/,
    ],
    ["apps/sum-list", "while True: pass", false, /timed out after 3000 ms/],
  ];
  const verdicts = await Promise.all(cases.map(([id, program]) => verifier.judge(byId(id), fenced(program))));
  cases.forEach(([id, , correct, reason], i) => {
    assert.equal(verdicts[i].correct, correct, `${id} #${i}: ${JSON.stringify(verdicts[i])}`);
    if (reason) assert.match(verdicts[i].reason ?? "", reason, `${id} #${i}`);
  });
  assert.deepEqual(verdicts[cases.findIndex(([, program]) => program === "input()\nprint(1)")], {
    correct: false,
    passed: 2,
    total: 4,
    reason: "hidden test 3: wrong output",
  });
  // No program, or no answer: incorrect without running anything.
  assert.equal(
    (await verifier.judge(byId("apps/sum-list"), "print(6)")).reason,
    "no fenced python program in the answer",
  );
  assert.equal(await verifier(byId("apps/sum-list"), null), false);
});

test("episodes: a chat policy tries code in the python tool, then answers; the code verifier scores them", async () => {
  const python = createPythonTool({ pool, timeoutMs: 5000 });
  const answers: Record<string, string> = {
    "lcb/sum-pairs": "a, b = map(int, input().split())\nprint(a + b)",
    "apps/palindrome": "def is_palindrome(s):\n    return s == s[::-1]",
    "plain/fibonacci": "input()\nprint(1)",
  };
  const policy = createMockPolicy(
    (context) => {
      if (context.turns.length === 0) {
        return {
          text: "",
          toolCalls: [
            { id: "call-1", name: "python", arguments: JSON.stringify({ code: "sum(range(10))" }) },
          ],
        };
      }
      return fenced(answers[context.task.id] ?? "print('?')");
    },
    { protocol: "chat" },
  );
  const stored: string[] = [];
  const trajectories = await runEpisodes({
    policy,
    episodes: Object.keys(answers).map((id, i) => ({ task: byId(id), seed: i })),
    tools: () => [python],
    verify: verifier,
    // Generous: on a loaded machine a call may wait for a fresh interpreter while the verifier runs.
    budgets: { toolTimeoutMs: 60_000 },
    onEpisode: (trajectory) => {
      stored.push(trajectory.id);
    },
  });
  assert.deepEqual(
    trajectories.map((t) => [
      t.taskId,
      t.correct,
      t.turns[0].toolResult?.status,
      t.turns[0].observation?.text,
    ]),
    [
      ["lcb/sum-pairs", true, "ok", "=> 45"],
      ["apps/palindrome", true, "ok", "=> 45"],
      ["plain/fibonacci", false, "ok", "=> 45"],
    ],
  );
  assert.equal(stored.length, 3);
});
