/**
 * Kill anywhere, lose nothing: `agentrl train rl`, `train sft` and `pretrain` on tiny configs,
 * SIGKILLed at seeded random points (kill-harness.ts: when a drawn number of episodes or steps is
 * stored, plus a random delay), then resumed with `--resume` (or the same command when the kill
 * came before the run existed), end like an uninterrupted run: every step's episodes stored once
 * and the same ones, one metric per step, the same losses, `PRAGMA integrity_check` ok.
 */
import assert from "node:assert/strict";
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, test } from "node:test";
import { collectDataset } from "../data/collect.ts";
import { saveTinyBase, TINY_MODEL, tinyRlConfig } from "../rl/testing.ts";
import { isRunDirectory, listRunDirectories, openRunDirectory, runStorePath } from "../store/index.ts";
import { register as registerPretrain } from "./commands/pretrain.ts";
import { register as registerTrain } from "./commands/train.ts";
import { countRows, integrityCheck, killAndResume, startAgentrl } from "./kill-harness.ts";
import { runCli } from "./testing.ts";

const root = mkdtempSync(join(tmpdir(), "agentrl-kill-train-"));
after(() => rmSync(root, { recursive: true, force: true }));
const base = await saveTinyBase(5, root);

/** A JSON config file in the test folder. */
function configFile(name: string, config: object): string {
  const path = join(root, `${name}.json`);
  writeFileSync(path, JSON.stringify(config));
  return path;
}

/** `--resume <dir>` once the run exists; before that, the first command again. */
function resumeOr(directory: string, args: readonly string[], resume: readonly string[]) {
  return () => {
    if (!isRunDirectory(directory)) return args;
    const store = openRunDirectory(directory, { readOnly: true });
    try {
      return store.listRuns().length > 0 ? resume : args;
    } finally {
      store.close();
    }
  };
}

/** Run directories under `root` whose store holds a run (a kill may leave one without). */
function runDirectoriesWithRun(root: string): string[] {
  return listRunDirectories(root).filter((directory) => {
    try {
      const store = openRunDirectory(directory, { readOnly: true });
      try {
        return store.listRuns().length > 0;
      } finally {
        store.close();
      }
    } catch (error) {
      if (
        /no such table|unable to open|not a database|not an agentrl store|schema version/i.test(String(error))
      )
        return false;
      throw error;
    }
  });
}

/** Metrics by key and step of a run directory's run: exactly one value per key and step. */
function storedMetrics(directory: string, keys: readonly string[]) {
  const store = openRunDirectory(directory, { readOnly: true });
  try {
    const [run] = store.listRuns();
    return Object.fromEntries(keys.map((key) => [key, store.metrics(run.id, key)]));
  } finally {
    store.close();
  }
}

function assertClose(
  got: { step: number; value: number }[],
  expected: { step: number; value: number }[],
  what: string,
) {
  assert.deepEqual(
    got.map((point) => point.step),
    expected.map((point) => point.step),
    `${what}: one value per step`,
  );
  for (const [index, point] of got.entries())
    assert.ok(
      Math.abs(point.value - expected[index].value) <= 1e-4 * Math.max(1, Math.abs(expected[index].value)),
      `${what} at step ${point.step}: ${point.value} vs ${expected[index].value}`,
    );
}

test("agentrl train rl killed anywhere, then --resume: every step's episodes once, the straight run's", async (t) => {
  const config = configFile("rl", tinyRlConfig(base, { steps: 4 }));
  await runCli(registerTrain, [
    "train",
    "rl",
    "--config",
    config,
    "--runs",
    root,
    "--run-id",
    "rl-straight",
    "--json",
  ]);
  const directory = join(root, "rl-killed");
  const args = ["train", "rl", "--config", config, "--runs", root, "--run-id", "rl-killed", "--json"];
  const total = 4 * 8;
  const report = await killAndResume({
    args,
    resumeArgs: resumeOr(directory, args, ["train", "rl", "--resume", directory, "--json"]),
    kills: 3,
    seed: 4,
    progress: () => countRows(runStorePath(directory), "trajectories"),
    total,
    delayMs: [0, 300],
    afterKill: () => {
      if (isRunDirectory(directory)) assert.equal(integrityCheck(runStorePath(directory)), "ok");
    },
  });
  assert.equal(integrityCheck(runStorePath(directory)), "ok");
  const episodes = (dir: string) => {
    const store = openRunDirectory(dir, { readOnly: true });
    try {
      const [run] = store.listRuns();
      return [...store.iterateTrajectories(run.id)]
        .map(
          (stored) =>
            [stored.step, stored.key, stored.trajectory.turns.flatMap((turn) => turn.tokenIds)] as const,
        )
        .sort(([stepA, keyA], [stepB, keyB]) => stepA! - stepB! || keyA.localeCompare(keyB));
    } finally {
      store.close();
    }
  };
  const got = episodes(directory);
  assert.equal(got.length, total, "every step's episodes stored once");
  assert.deepEqual(got, episodes(join(root, "rl-straight")), "the same episodes, token for token");
  const keys = ["reward/mean", "loss/policy"];
  const gotMetrics = storedMetrics(directory, keys);
  const expectedMetrics = storedMetrics(join(root, "rl-straight"), keys);
  for (const key of keys) assertClose(gotMetrics[key], expectedMetrics[key], key);
  assert.equal(JSON.parse(report.stdout).steps ?? 4, 4);
  t.diagnostic(
    `train rl: ${report.tried} kill points tried, ${report.landed} landed (at ${report.progressAtKill.join(", ")} episodes), ${total - got.length} episodes lost`,
  );
});

test("agentrl train sft killed anywhere, then --resume: the straight run's losses, one per step", async (t) => {
  const data = join(root, "sft-data");
  await collectDataset({ tasks: { count: 20, seed: 1, family: "lookup" }, seed: 1, noise: 0.3, out: data });
  const steps = 6;
  const config = configFile("sft", {
    name: "tiny-sft",
    base,
    data: [data],
    steps,
    tokensPerStep: 1024,
    microBatchTokens: 512,
    buckets: [64, 128],
    learningRate: 3e-3,
    warmupSteps: 2,
    heldoutEvery: 3,
    checkpointEvery: 1,
    seed: 1,
  });
  const straight = await runCli(registerTrain, [
    "train",
    "sft",
    "--config",
    config,
    "--runs",
    root,
    "--run-id",
    "sft-straight",
    "--json",
  ]);
  const directory = join(root, "sft-killed");
  const args = ["train", "sft", "--config", config, "--runs", root, "--run-id", "sft-killed", "--json"];
  const report = await killAndResume({
    args,
    resumeArgs: resumeOr(directory, args, ["train", "sft", "--resume", directory, "--json"]),
    kills: 3,
    seed: 5,
    progress: () => countRows(runStorePath(directory), "metrics", "WHERE key = 'loss/train'"),
    total: steps,
    delayMs: [0, 200],
    afterKill: () => {
      if (isRunDirectory(directory)) assert.equal(integrityCheck(runStorePath(directory)), "ok");
    },
  });
  assert.equal(integrityCheck(runStorePath(directory)), "ok");
  const result = JSON.parse(report.stdout);
  const straightResult = JSON.parse(straight.out.join("\n"));
  for (const key of ["finalLoss", "initialHeldoutLoss", "finalHeldoutLoss"])
    assert.ok(
      Math.abs(result[key] - straightResult[key]) <= 1e-4,
      `${key}: ${result[key]} vs ${straightResult[key]}`,
    );
  const keys = ["loss/train", "loss/heldout"];
  const got = storedMetrics(directory, keys);
  const expected = storedMetrics(join(root, "sft-straight"), keys);
  for (const key of keys) assertClose(got[key], expected[key], key);
  t.diagnostic(
    `train sft: ${report.tried} kill points tried, ${report.landed} landed (at ${report.progressAtKill.join(", ")} steps), ${steps - got["loss/train"].length} steps lost`,
  );
});

test("agentrl pretrain killed anywhere, then --resume: the straight run's losses, one per step", async (t) => {
  const steps = 8;
  const config = (out: string) =>
    configFile(`pretrain-${out}`, {
      name: "tiny-pretrain",
      mix: "strong",
      model: TINY_MODEL,
      steps,
      tokensPerStep: 512,
      learningRate: 2e-3,
      warmupSteps: 2,
      checkpointEvery: 1,
      cardEpisodes: 0,
      seed: 1,
      out: join(root, out),
    });
  const straight = await runCli(registerPretrain, [
    "pretrain",
    "--config",
    config("models-straight"),
    "--runs",
    root,
    "--json",
  ]);
  const killedConfig = config("models-killed");
  const runs = join(root, "pretrain-killed-runs");
  const directory = (): string | undefined => runDirectoriesWithRun(runs)[0];
  const args = ["pretrain", "--config", killedConfig, "--runs", runs, "--json"];
  const report = await killAndResume({
    args,
    resumeArgs: () => {
      const dir = directory();
      return dir ? resumeOr(dir, args, ["pretrain", "--resume", dir, "--json"])() : args;
    },
    kills: 3,
    seed: 6,
    progress: () => {
      const dir = directory();
      return dir ? countRows(runStorePath(dir), "metrics", "WHERE key = 'loss/train'") : 0;
    },
    total: steps,
    delayMs: [0, 200],
    afterKill: () => {
      const dir = directory();
      if (dir && isRunDirectory(dir)) assert.equal(integrityCheck(runStorePath(dir)), "ok");
    },
  });
  assert.equal(runDirectoriesWithRun(runs).length, 1, "one run, resumed");
  const finalLoss = JSON.parse(report.stdout).finalLoss;
  const straightLoss = JSON.parse(straight.out.join("\n")).finalLoss;
  assert.ok(Math.abs(finalLoss - straightLoss) <= 1e-4, `finalLoss: ${finalLoss} vs ${straightLoss}`);
  const keys = ["loss/train"];
  const got = storedMetrics(directory()!, keys);
  const [straightDirectory] = runDirectoriesWithRun(root).filter((dir) =>
    dir.includes("pretrain-tiny-pretrain"),
  );
  const expected = storedMetrics(straightDirectory, keys);
  for (const key of keys) assertClose(got[key], expected[key], key);
  t.diagnostic(
    `pretrain: ${report.tried} kill points tried, ${report.landed} landed (at ${report.progressAtKill.join(", ")} steps), ${steps - got["loss/train"].length} steps lost`,
  );
});

test("SIGTERM interrupts pretrain: a checkpoint at the step reached, the run marked interrupted", async () => {
  const runs = join(root, "pretrain-term-runs");
  const config = configFile("pretrain-term", {
    name: "tiny-term",
    mix: "strong",
    model: TINY_MODEL,
    steps: 200,
    tokensPerStep: 512,
    checkpointEvery: 1000,
    cardEpisodes: 0,
    out: join(root, "models-term"),
  });
  const child = startAgentrl(["pretrain", "--config", config, "--runs", runs]);
  const steps = () => {
    const [directory] = runDirectoriesWithRun(runs);
    return directory ? countRows(runStorePath(directory), "metrics", "WHERE key = 'loss/train'") : 0;
  };
  while (child.running() && steps() < 2) await new Promise((done) => setTimeout(done, 5));
  child.kill("SIGTERM");
  const exit = await child.exited(60_000);
  assert.notEqual(exit.code, 0);
  assert.match(child.stderr(), /pretrain: aborted at step \d+; the checkpoint in .* resumes it/);
  const [directory] = runDirectoriesWithRun(runs);
  const store = openRunDirectory(directory, { readOnly: true });
  try {
    const [run] = store.listRuns();
    assert.equal(run.status, "interrupted");
    const reached = store.metrics(run.id, "loss/train").length;
    assert.ok(reached < 200, "stopped early");
    assert.equal(store.latestArtifact(run.id, "checkpoint")?.step, reached, "checkpointed where it stopped");
  } finally {
    store.close();
  }
});
