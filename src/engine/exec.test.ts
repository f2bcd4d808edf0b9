import assert from "node:assert/strict";
import { execFileSync } from "node:child_process";
import { test } from "node:test";
import { fileURLToPath } from "node:url";
import { ExecutionSite } from "./exec.ts";
import { workerPoolEnabled } from "./jax.ts";

// The sites adapt only where jax-js runs its worker pool (the jax engine, decided at start-up):
// on the ONNX engine this file runs itself again in a child process on the jax engine.
const adaptive = workerPoolEnabled && !process.env.AGENTRL_EXEC;

test("on the ONNX engine, the adaptive-site test runs in a child process on jax-js", {
  skip: adaptive,
}, () => {
  // NODE_TEST_CONTEXT would make the child report to this runner instead of printing.
  const { NODE_TEST_CONTEXT: _context, ...env } = process.env;
  const output = execFileSync(
    process.execPath,
    ["--test", "--test-reporter=tap", fileURLToPath(import.meta.url)],
    {
      env: { ...env, AGENTRL_ENGINE: "jax", AGENTRL_THREADS: "", AGENTRL_EXEC: "" },
      encoding: "utf8",
    },
  );
  assert.match(output, /# pass 1\b/);
  assert.match(output, /# skipped 1\b/); // this test itself, in the child
});

test("an execution site times both modes, keeps the faster, and switches when a probe wins", {
  skip: !adaptive,
}, () => {
  const site = new ExecutionSite("test", 10);
  const call = (pool: number, main: number) => {
    const mode = site.begin();
    site.end(mode === "pool" ? pool : main);
    return mode;
  };
  // Call 0 compiles (untimed); calls 1-4 alternate pool, main, pool, main.
  assert.deepEqual(
    [0, 1, 2, 3, 4].map(() => call(10, 5)),
    ["main", "pool", "main", "pool", "main"],
  );
  assert.equal(site.preferred, "main");
  // Calls 5-9 stay on main; call 10 probes pool, which is now much faster, so the site switches.
  assert.deepEqual(
    [5, 6, 7, 8, 9].map(() => call(2, 5)),
    ["main", "main", "main", "main", "main"],
  );
  assert.equal(call(2, 5), "pool");
  assert.equal(site.preferred, "pool");
  // A probe that is not clearly faster (within 15%) does not switch back.
  for (let i = 11; i < 20; i++) call(2, 1.9);
  assert.equal(call(2, 1.9), "main");
  assert.equal(site.preferred, "pool");
});
