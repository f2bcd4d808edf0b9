/**
 * Throughput of the python tool and the code verifier (README, "The paper's own setting"):
 *
 *   node src/tools/python-bench.ts [calls=24] [programs=12]
 *
 * - cold: the first interpreter (the pool's memory snapshot, then one load from it);
 * - calls/s: tool calls of a small program, one at a time and all at once, each in a fresh process
 *   taken warm from the pool (the pool refills behind them);
 * - tests/s: the code verifier on the sample file (correct programs, every test run), many programs
 *   at once; and one program against 200 tests in one process (the per-test cost alone).
 * Prints one JSON object; figures depend on the machine's free cores, so state them with it.
 */
import { availableParallelism, cpus, loadavg } from "node:os";
import { readTaskFile } from "../tasks/index.ts";
import type { Task } from "../types/task.ts";
import { createCodeVerifier } from "../verify/code.ts";
import { createPythonTool } from "./python.ts";
import { PythonSandboxPool } from "./python-sandbox.ts";

const calls = Number(process.argv[2] ?? 24);
const programs = Number(process.argv[3] ?? 12);
const cores = availableParallelism();
const pool = new PythonSandboxPool({ poolSize: Math.max(2, cores) });
const python = createPythonTool({ pool, timeoutMs: 10_000 });
const seconds = (since: number) => (performance.now() - since) / 1000;

let started = performance.now();
await pool.warm();
const cold = seconds(started);

started = performance.now();
for (let i = 0; i < calls; i++) {
  const result = await python.call({ code: `sum(i * i for i in range(${1000 + i}))` });
  if (result.status !== "ok") throw new Error(`call failed: ${result.content}`);
}
const sequential = calls / seconds(started);
await pool.warm();
started = performance.now();
const results = await Promise.all(
  Array.from({ length: calls }, (_, i) => python.call({ code: `sum(range(${i}))` })),
);
if (results.some((result) => result.status !== "ok")) throw new Error("a concurrent call failed");
const concurrent = calls / seconds(started);

const tasks = await readTaskFile("examples/tasks/code-sample.jsonl");
const solutions: Record<string, string> = {
  "lcb/sum-pairs": "a, b = map(int, input().split())\nprint(a + b)",
  "lcb/max-subarray":
    "class Solution:\n    def maxSubArray(self, nums):\n        best = cur = nums[0]\n        for x in nums[1:]:\n            cur = max(x, cur + x)\n            best = max(best, cur)\n        return best",
  "apps/sum-list": "import sys\nd = sys.stdin.read().split()\nprint(sum(map(int, d[1:])))",
  "apps/palindrome": "def is_palindrome(s):\n    return s == s[::-1]",
  "plain/fibonacci": "n = int(input())\na, b = 1, 1\nfor _ in range(n - 1):\n    a, b = b, a + b\nprint(a)",
};
const verifier = createCodeVerifier({ pool, concurrency: cores });
await pool.warm();
started = performance.now();
let tests = 0;
const verdicts = await Promise.all(
  Array.from({ length: programs }, (_, i) => {
    const task = tasks[i % tasks.length];
    return verifier.judge(task, `\`\`\`python\n${solutions[task.id]}\n\`\`\``).then((verdict) => {
      tests += verdict.passed;
      return verdict.correct;
    });
  }),
);
if (!verdicts.every(Boolean)) throw new Error("a correct program failed");
const testsPerSecond = tests / seconds(started);

const many: Task = {
  id: "bench/many",
  question: "double",
  answer: "",
  family: "bench",
  metadata: {
    tests: Array.from({ length: 200 }, (_, i) => ({ input: `${i}\n`, output: `${2 * i}\n` })),
  },
};
await pool.warm();
started = performance.now();
const one = await verifier.judge(many, "```python\nprint(2 * int(input()))\n```");
if (!one.correct) throw new Error(`200-test program failed: ${one.reason}`);
const inProcess = 200 / seconds(started);
pool.close();

console.log(
  JSON.stringify({
    machine: { cores, cpu: cpus()[0]?.model, loadavg: loadavg().map((x) => Number(x.toFixed(1))) },
    coldStartSeconds: Number(cold.toFixed(2)),
    callsPerSecondSequential: Number(sequential.toFixed(2)),
    callsPerSecondConcurrent: Number(concurrent.toFixed(2)),
    verifierTestsPerSecond: Number(testsPerSecond.toFixed(2)),
    testsPerSecondInOneProcess: Number(inProcess.toFixed(1)),
  }),
);
