import assert from "node:assert/strict";
import { spawnSync } from "node:child_process";
import { test } from "node:test";

const MAIN = new URL("./main.ts", import.meta.url).pathname;

function bench(...args: string[]) {
  return spawnSync(process.execPath, [MAIN, ...args], { encoding: "utf8", timeout: 30_000 });
}

test("bench --help prints the options and suites and exits 0, without running a suite", () => {
  const result = bench("--help");
  assert.equal(result.status, 0, result.stderr);
  for (const flag of ["--json", "--only", "--rounds"]) assert.match(result.stdout, new RegExp(flag));
  for (const suite of ["env", "engine", "soak", "agent-eval"]) assert.match(result.stdout, new RegExp(suite));
  assert.doesNotMatch(result.stderr, /bench: env…/);
});

test("an unknown option or a bad value is one clear line and exit 2, no stack trace", () => {
  for (const args of [["--bogus"], ["--rounds", "0"], ["--only", "nope"]]) {
    const result = bench(...args);
    assert.equal(result.status, 2, `${args.join(" ")}: ${result.stderr}`);
    assert.doesNotMatch(result.stderr, /^\s+at /m, `${args.join(" ")} printed a stack`);
    assert.match(result.stderr, /bench: /);
  }
});
