/**
 * Kill anywhere, lose nothing: `agentrl import` and `agentrl verl import` SIGKILLed at seeded random
 * points (kill-harness.ts), then run again with the same command, end with exactly the stores an
 * uninterrupted import writes: the same trajectories, none twice, `PRAGMA integrity_check` ok.
 */
import assert from "node:assert/strict";
import { existsSync, mkdirSync, mkdtempSync, readdirSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, test } from "node:test";
import { openRunDirectory, runStorePath, trajectoryToChat } from "../store/index.ts";
import { chatTrajectory, TEST_TOOL_SPECS } from "../store/test-trajectories.ts";
import { register as registerImport } from "./commands/export.ts";
import { register as registerVerl } from "./commands/verl.ts";
import { integrityCheck, killAndResume } from "./kill-harness.ts";
import { runCli } from "./testing.ts";

const root = mkdtempSync(join(tmpdir(), "agentrl-kill-import-"));
after(() => rmSync(root, { recursive: true, force: true }));

/** Every run of a run directory: its status, and its trajectories by key (sorted). */
function storedRuns(directory: string) {
  const store = openRunDirectory(directory);
  try {
    return store.listRuns().map((run) => ({
      id: run.id,
      status: run.status,
      trajectories: [...store.iterateTrajectories(run.id)]
        .map((stored) => [stored.key, stored.trajectory] as const)
        .sort(([a], [b]) => a.localeCompare(b)),
    }));
  } finally {
    store.close();
  }
}

test("agentrl import killed anywhere, then run again, imports every line exactly once", async (t) => {
  const lines = 4000;
  const file = join(root, "chat.jsonl");
  writeFileSync(
    file,
    Array.from({ length: lines }, (_, i) =>
      JSON.stringify(trajectoryToChat(chatTrajectory(i), TEST_TOOL_SPECS, { lossless: true })),
    ).join("\n"),
  );
  const started = performance.now();
  await runCli(registerImport, ["import", file, "--run", join(root, "straight")]);
  const importMs = performance.now() - started;
  const target = join(root, "killed");
  // Progress: 1 once the import is under way (its staging folder exists), 2 when it is in place.
  const report = await killAndResume({
    args: ["import", file, "--run", target],
    kills: 4,
    seed: 25,
    progress: () =>
      existsSync(target) ? 2 : readdirSync(root).some((name) => name.startsWith(".killed.staging-")) ? 1 : 0,
    total: 2,
    delayMs: [0, importMs],
    afterKill: () => {
      if (existsSync(target)) {
        assert.equal(integrityCheck(runStorePath(target)), "ok");
        assert.equal(storedRuns(target)[0].trajectories.length, lines, "a run appears only whole");
      }
    },
  });
  const expected = storedRuns(join(root, "straight"));
  const got = storedRuns(target);
  assert.equal(integrityCheck(runStorePath(target)), "ok");
  assert.equal(got[0].trajectories.length, lines, "no line lost, none twice");
  assert.deepEqual(
    got.map((run) => ({ ...run, id: "" })),
    expected.map((run) => ({ ...run, id: "" })),
  );
  t.diagnostic(
    `import: ${report.tried} kill points tried, ${report.landed} landed, ${lines - got[0].trajectories.length} lines lost`,
  );
});

test("agentrl verl import killed anywhere, then run again, imports every step exactly once", async (t) => {
  const dump = join(root, "dump");
  mkdirSync(dump);
  const steps = [0, 5, 10, 15];
  for (const step of steps) {
    const lines = Array.from({ length: 300 }, (_, i) =>
      JSON.stringify({
        input: `question ${i % 100}`,
        output: `answer ${i}`,
        gts: "x",
        score: (i * 7 + step) % 3 === 0 ? 1 : 0,
        step,
      }),
    );
    writeFileSync(join(dump, `${step}.jsonl`), `${lines.join("\n")}\n`);
  }
  const started = performance.now();
  await runCli(registerVerl, ["verl", "import", dump, "--out", join(root, "verl-straight")]);
  const stepMs = (performance.now() - started) / steps.length;
  const out = join(root, "verl-killed");
  // Progress: two units per step, one once its staging folder exists, one when it is in place.
  const progress = () => {
    if (!existsSync(out)) return 0;
    const names = readdirSync(out);
    return (
      2 * names.filter((name) => !name.startsWith(".")).length +
      (names.some((name) => name.startsWith(".")) ? 1 : 0)
    );
  };
  const report = await killAndResume({
    args: ["verl", "import", dump, "--out", out, "--json"],
    kills: 4,
    seed: 26,
    progress,
    total: 2 * steps.length,
    delayMs: [0, stepMs],
    afterKill: () => {
      for (const name of readdirSync(out).filter((entry) => !entry.startsWith("."))) {
        assert.equal(integrityCheck(runStorePath(join(out, name))), "ok");
        assert.equal(storedRuns(join(out, name))[0].status, "completed", "a step's run appears only whole");
      }
    },
  });
  const rows = JSON.parse(report.stdout) as { step: number; metrics: Record<string, number> }[];
  assert.deepEqual(
    rows.map((row) => row.step),
    steps,
  );
  let lost = 0;
  for (const step of steps) {
    const expected = storedRuns(join(root, "verl-straight", `verl-dump-step${step}`));
    const got = storedRuns(join(out, `verl-dump-step${step}`));
    assert.equal(integrityCheck(runStorePath(join(out, `verl-dump-step${step}`))), "ok");
    lost += expected[0].trajectories.length - got[0].trajectories.length;
    assert.deepEqual(got, expected, `step ${step}`);
  }
  assert.deepEqual(
    readdirSync(out).sort(),
    steps.map((step) => `verl-dump-step${step}`).sort(),
    "no staging folder left",
  );
  t.diagnostic(
    `verl import: ${report.tried} kill points tried, ${report.landed} landed, ${lost} episodes lost`,
  );
});
