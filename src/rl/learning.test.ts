/**
 * The learning test: RL from the shipped base raises pass@1 on a family the base can already
 * sample. A random tiny model cannot show it (RL needs sampled successes first), so this uses
 * `models/base-strong`, which is committed with the repository: a missing base FAILS here, loudly.
 */
import assert from "node:assert/strict";
import { existsSync, mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { test } from "node:test";
import { createRunDirectory } from "../store/index.ts";
import { parseRlConfig } from "./config.ts";
import { trainRl } from "./train.ts";

const BASE = "models/base-strong";
/** The stated budget: this many RL steps of 8 lookup tasks × groups of 8. */
const STEPS = 8;

test(`RL from ${BASE} raises held-out pass@1 on lookup tasks within ${STEPS} steps`, async (t) => {
  assert.ok(
    existsSync(join(BASE, "checkpoint.json")),
    `${BASE} is missing; it ships with the repository (rebuild: agentrl pretrain --config configs/pretrain/base-strong.json)`,
  );
  const root = mkdtempSync(join(tmpdir(), "agentrl-rl-learning-"));
  t.after(() => rmSync(root, { recursive: true, force: true }));
  const config = parseRlConfig({
    name: "learning-test",
    base: BASE,
    steps: STEPS,
    seed: 1,
    families: ["lookup"],
    tasksPerStep: 8,
    groupSize: 8,
    dynamicSampling: true,
    maxExtraRollouts: 0,
    evalEvery: STEPS,
    evalFamilies: ["lookup"],
    evalTasks: 24,
    evalSamples: 8,
    evalTemperature: 1,
    evalTopP: 1,
    checkpointEvery: STEPS,
  });
  const { directory, store, run } = createRunDirectory({ kind: "rl", root, config, id: "learning" });
  const result = await trainRl({ config, runDir: directory, store, runId: run.id });
  const [before, after] = [result.boundary[0], result.boundary.at(-1)!];
  assert.deepEqual(
    result.boundary.map((point) => point.step),
    [0, STEPS],
  );
  t.diagnostic(
    `held-out pass@1 ${before.passAt1.toFixed(3)} → ${after.passAt1.toFixed(3)}, pass@${after.k} ${before.passAtK.toFixed(3)} → ${after.passAtK.toFixed(3)}, ${result.seconds.toFixed(0)} s`,
  );
  const losses = store.metrics(run.id, "loss/total").map((point) => point.value);
  assert.ok(losses.length > 0 && losses.every(Number.isFinite), `losses ${losses}`);
  assert.ok(
    after.passAt1 >= before.passAt1 + 0.1,
    `held-out pass@1 ${before.passAt1.toFixed(3)} → ${after.passAt1.toFixed(3)} after ${STEPS} steps`,
  );
  store.close();
});
