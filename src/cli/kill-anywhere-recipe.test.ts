/**
 * Kill anywhere, lose nothing: `agentrl recipe` on a tiny config, limited to three chained stages
 * (`--stages eval-sft-stitched`: stitched data, SFT on it, the SFT model's evaluation; the whole
 * plan is minutes even tiny), SIGKILLed at seeded random points and run again with the same
 * command, ends with the uninterrupted run's stage results and the evaluation's episodes.
 */
import assert from "node:assert/strict";
import { existsSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, test } from "node:test";
import { saveTinyBase } from "../rl/testing.ts";
import { listRunDirectories, openRunDirectory, runStorePath } from "../store/index.ts";
import { integrityCheck, killAndResume, runAgentrl } from "./kill-harness.ts";

const root = mkdtempSync(join(tmpdir(), "agentrl-kill-recipe-"));
after(() => rmSync(root, { recursive: true, force: true }));

/** Stages of a recipe folder whose stage.json says completed. */
function completedStages(out: string): number {
  const stages = join(out, "stages");
  if (!existsSync(stages)) return 0;
  return readdirSync(stages).filter((name) => {
    const file = join(stages, name, "stage.json");
    return existsSync(file) && JSON.parse(readFileSync(file, "utf8")).status === "completed";
  }).length;
}

/** Every store under the recipe folder: its episodes by key, checked sound. */
function storedEpisodes(out: string) {
  const stores: Record<string, [string, unknown][]> = {};
  const walk = (directory: string) => {
    for (const entry of readdirSync(directory, { withFileTypes: true })) {
      if (!entry.isDirectory()) continue;
      const path = join(directory, entry.name);
      for (const runDirectory of listRunDirectories(path)) {
        assert.equal(integrityCheck(runStorePath(runDirectory)), "ok", runDirectory);
        const store = openRunDirectory(runDirectory, { readOnly: true });
        try {
          for (const run of store.listRuns()) {
            stores[`${runDirectory.slice(out.length)}:${run.id}`] = [...store.iterateTrajectories(run.id)]
              .map((stored): [string, unknown] => [
                stored.key,
                stored.trajectory.turns.map((turn) => turn.text),
              ])
              .sort(([a], [b]) => a.localeCompare(b));
          }
        } finally {
          store.close();
        }
      }
      walk(path);
    }
  };
  walk(out);
  return stores;
}

test("agentrl recipe --stages killed anywhere, then run again, ends with the straight run's stages", async (t) => {
  const base = await saveTinyBase(7, root);
  const config = join(root, "tiny.json");
  writeFileSync(
    config,
    JSON.stringify({
      bases: { strong: base, weak: base },
      eval: { tasks: 4, withheldTasks: 2, n: 2 },
      data: { tasks: 24, modelSamples: 0 },
      sft: { steps: 4, tokensPerStep: 1024 },
    }),
  );
  const command = (out: string) => [
    "recipe",
    "--quick",
    "--config",
    config,
    "--out",
    out,
    "--stages",
    "eval-sft-stitched",
    "--json",
  ];
  const straightOut = join(root, "straight");
  const started = performance.now();
  const straight = JSON.parse(await runAgentrl(command(straightOut)));
  const stageMs = (performance.now() - started) / 3;
  const out = join(root, "killed");
  const report = await killAndResume({
    args: command(out),
    kills: 3,
    seed: 7,
    progress: () => completedStages(out),
    total: 3,
    delayMs: [0, stageMs],
  });
  const resumed = JSON.parse(report.stdout);
  // Paths name each run's own folder; `seconds` is wall-clock time.
  const paths = (value: unknown, folder: string) =>
    JSON.parse(JSON.stringify(value).replaceAll(folder, "<out>"), (key, item) =>
      key === "seconds" ? undefined : item,
    );
  assert.deepEqual(
    paths(resumed.results, out),
    paths(straight.results, straightOut),
    "the same stage results",
  );
  const expected = storedEpisodes(straightOut);
  const got = storedEpisodes(out);
  assert.deepEqual(got, expected);
  const episodes = Object.values(got).reduce((sum, list) => sum + list.length, 0);
  const lost = Object.values(expected).reduce((sum, list) => sum + list.length, 0) - episodes;
  t.diagnostic(
    `recipe (3 stages): ${report.tried} kill points tried, ${report.landed} landed (at ${report.progressAtKill.join(", ")} stages done), ${lost} episodes lost`,
  );
});
