import assert from "node:assert/strict";
import { test } from "node:test";
import {
  decides,
  FAULT_CLASSES,
  InjectedFault,
  injectedFaultCounts,
  injectFault,
  parseFaultSpec,
  withFaults,
} from "./faults.ts";

test("fault spec: seed and rates parsed; off by default", () => {
  assert.equal(parseFaultSpec(""), null);
  assert.equal(parseFaultSpec("off"), null);
  const plan = parseFaultSpec("seed=7, upstream-5xx=0.1,sandbox-kill=1");
  assert.equal(plan?.seed, 7);
  assert.equal(plan?.rates["upstream-5xx"], 0.1);
  assert.equal(plan?.rates["sandbox-kill"], 1);
  assert.equal(plan?.rates["verifier-timeout"], 0);
});

test("fault spec: an unknown class names itself and lists the valid ones; rates outside [0, 1] fail", () => {
  assert.throws(
    () => parseFaultSpec("seed=1,upstream-500=0.1"),
    (error: Error) =>
      error.message.includes('"upstream-500"') && FAULT_CLASSES.every((name) => error.message.includes(name)),
  );
  assert.throws(
    () => parseFaultSpec("seed=1,verifier-error=1.5"),
    /verifier-error must be in \[0, 1\], got "1.5"/,
  );
  assert.throws(() => parseFaultSpec("seed=1,verifier-error=-0.1"), /verifier-error/);
  assert.throws(() => parseFaultSpec("seed=1,verifier-error"), /not <name>=<value>/);
  assert.throws(() => parseFaultSpec("verifier-error=0.1"), /needs a seed/);
  assert.throws(() => parseFaultSpec("seed=x,verifier-error=0.1"), /seed must be/);
});

test("fault decisions: a pure function of seed, class and key, at about the asked rate", () => {
  const plan = parseFaultSpec("seed=3,upstream-timeout=0.2")!;
  const keys = Array.from({ length: 2000 }, (_, i) => `episode-${i}:0`);
  const first = keys.map((key) => decides(plan, "upstream-timeout", key));
  assert.deepEqual(
    keys.map((key) => decides(plan, "upstream-timeout", key)),
    first,
  );
  const rate = first.filter(Boolean).length / keys.length;
  assert.ok(rate > 0.16 && rate < 0.24, `rate ${rate}`);
  assert.equal(
    keys.some((key) => decides(plan, "upstream-5xx", key)),
    false,
  );
  const other = parseFaultSpec("seed=4,upstream-timeout=0.2")!;
  assert.notDeepEqual(
    keys.map((key) => decides(other, "upstream-timeout", key)),
    first,
  );
});

test("injectFault: off without AGENTRL_FAULTS; under it an injected infra failure, counted per class", async () => {
  await withFaults(undefined, async () => {
    assert.equal(injectFault("verifier-error", "a"), null);
  });
  await withFaults("seed=1,verifier-error=1", async () => {
    const fault = injectFault(["verifier-timeout", "verifier-error"], "a");
    assert.ok(fault instanceof InjectedFault);
    assert.deepEqual(fault.failure, {
      class: "infra",
      code: "verifier-error",
      message: fault.failure.message,
      injected: true,
    });
    injectFault("verifier-error", "b");
    assert.equal(injectedFaultCounts()["verifier-error"], 2);
  });
  await withFaults("seed=1,nonsense=1", async () => {
    assert.throws(() => injectFault("verifier-error", "a"), /unknown fault class "nonsense"/);
  });
});
