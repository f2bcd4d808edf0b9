import assert from "node:assert/strict";
import { test } from "node:test";
import { describeInfraFailures, infraFailuresByStage } from "./infra-failures.ts";

const count = (infraFailures?: number) => ({
  taskId: "t",
  family: "f",
  n: 2,
  c: 1,
  policyErrors: 0,
  infraFailures,
});

test("infra failures per eval stage: summed over tasks, described with the stages that had any", () => {
  const byStage = infraFailuresByStage({
    base: { counts: [count(1), count(2)] },
    "rl-base": { counts: [count(0), count()] },
  });
  assert.deepEqual(byStage, { base: 3, "rl-base": 0 });
  assert.equal(
    describeInfraFailures(byStage),
    "Infra failures (upstream, sandbox or verifier broke; left out of pass@k): 3 in all, base 3.",
  );
  assert.match(describeInfraFailures({ base: 0 }), /none in any eval stage/);
});
