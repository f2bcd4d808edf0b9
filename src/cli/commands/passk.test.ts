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
    passHatK: 0,
  });
  // pass^k: n = 5, c = 3, k = 2 → C(3,2)/C(5,2) = 3/10.
  assert.deepEqual(await run(["--n", "5", "--c", "3", "--k", "2", "--hat"]), ["0.3"]);
  assert.equal(JSON.parse((await run(["--n", "5", "--c", "3", "--k", "2", "--json"]))[0]).passHatK, 0.3);
});

test("agentrl passk without --k prints the grid", async () => {
  // n = 10, c = 1: pass@k = k/10; pass^k = 0 beyond k = 1 (one correct sample cannot fill k > 1).
  assert.deepEqual(await run(["--n", "10", "--c", "1"]), [
    "pass@1\t0.1\tpass^1\t0.1",
    "pass@2\t0.2\tpass^2\t0",
    "pass@4\t0.4\tpass^4\t0",
    "pass@8\t0.8\tpass^8\t0",
    "pass@10\t1\tpass^10\t0",
  ]);
  // n = 4, c = 3: pass^2 = C(3,2)/C(4,2) = 1/2, pass^4 = 0.
  assert.deepEqual(await run(["--n", "4", "--c", "3"]), [
    "pass@1\t0.75\tpass^1\t0.75",
    "pass@2\t1\tpass^2\t0.5",
    "pass@4\t1\tpass^4\t0",
  ]);
});

test("agentrl passk rejects k > n", async () => {
  await assert.rejects(run(["--n", "5", "--c", "2", "--k", "6"]), /k = 6 exceeds/);
});
