import assert from "node:assert/strict";
import { test } from "node:test";
import { runCli } from "../testing.ts";
import { register } from "./passk.ts";

async function run(args: string[]): Promise<string[]> {
  return (await runCli(register, ["passk", ...args])).out;
}

test("agentrl passk prints the worked value and its JSON", async () => {
  assert.deepEqual(await run(["--n", "5", "--c", "2", "--k", "3"]), ["0.9"]);
  assert.deepEqual(JSON.parse((await run(["--n", "5", "--c", "2", "--k", "3", "--json"]))[0]), {
    n: 5,
    c: 2,
    k: 3,
    passAtK: 0.9,
  });
});

test("agentrl passk without --k prints the grid", async () => {
  // n = 10, c = 1: pass@k = k/10
  assert.deepEqual(await run(["--n", "10", "--c", "1"]), [
    "pass@1\t0.1",
    "pass@2\t0.2",
    "pass@4\t0.4",
    "pass@8\t0.8",
    "pass@10\t1",
  ]);
});

test("agentrl passk rejects k > n", async () => {
  await assert.rejects(run(["--n", "5", "--c", "2", "--k", "6"]), /k = 6 exceeds/);
});
