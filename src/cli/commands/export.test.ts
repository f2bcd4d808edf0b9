import assert from "node:assert/strict";
import { existsSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, test } from "node:test";
import { createRunDirectory, openRunDirectory } from "../../store/index.ts";
import {
  chatTrajectory,
  formatErrorTrajectory,
  richTrajectory,
  TEST_TOOL_SPECS,
} from "../../store/test-trajectories.ts";
import { runCli } from "../testing.ts";
import { register } from "./export.ts";

const root = mkdtempSync(join(tmpdir(), "agentrl-export-cli-"));
after(() => rmSync(root, { recursive: true, force: true }));

async function run(args: string[]): Promise<string> {
  return (await runCli(register, [...args])).out.join("\n");
}

const written = [richTrajectory(1), formatErrorTrajectory(2), chatTrajectory(3)];
const source = createRunDirectory({ root, id: "source", kind: "rollout" });
source.store.addTrajectories(source.run.id, written);
source.store.setToolSpecs(source.run.id, TEST_TOOL_SPECS);
source.store.close();

test("agentrl export then agentrl import into a new run directory round-trips the run", async () => {
  const out = join(root, "all.jsonl");
  const summary = JSON.parse(await run(["export", source.directory, "--out", out, "--json"]));
  assert.deepStrictEqual(summary, {
    run: "source",
    out,
    format: "openai-jsonl",
    written: 3,
    lossless: true,
    correctOnly: false,
    tools: ["search", "calc"],
    toolsFrom: "run",
  });
  const target = join(root, "imported");
  const counts = JSON.parse(await run(["import", out, "--run", target, "--json"]));
  assert.deepStrictEqual(counts, {
    file: out,
    run: "imported",
    created: true,
    lines: 3,
    imported: 3,
    duplicates: 0,
    lossless: 3,
    tools: 2,
  });
  const store = openRunDirectory(target);
  assert.deepStrictEqual(store.trajectories("imported"), written);
  assert.equal(store.requireRun("imported").kind, "dataset");
  assert.equal(store.requireRun("imported").status, "completed");
  store.close();
  const again = JSON.parse(await run(["import", out, "--run", target, "--json"]));
  assert.deepStrictEqual([again.created, again.imported, again.duplicates], [false, 0, 3]);
});

test("agentrl import of a file whose third line is bad imports nothing, into a new or an existing run", async () => {
  const out = join(root, "for-bad.jsonl");
  await run(["export", source.directory, "--out", out]);
  const [first, second] = readFileSync(out, "utf8").split("\n");
  const bad = join(root, "bad-third.jsonl");
  writeFileSync(bad, `${first}\n${second}\n{"messages": [{"role": "robot"}]}\n`);
  const fresh = join(root, "bad-new");
  await assert.rejects(run(["import", bad, "--run", fresh]), /bad-third\.jsonl:3/);
  assert.equal(existsSync(fresh), false, "no run directory is left behind");
  assert.deepStrictEqual(
    readdirSync(root).filter((name) => name.includes("bad-new")),
    [],
    "nor a staging folder",
  );

  const target = createRunDirectory({ root, id: "bad-existing", kind: "dataset" });
  target.store.close();
  await assert.rejects(run(["import", bad, "--run", target.directory]), /bad-third\.jsonl:3/);
  const store = openRunDirectory(target.directory);
  assert.equal(store.countTrajectories("bad-existing"), 0, "the two good lines are not kept");
  store.close();
});

test("--correct-only --no-lossless writes plain OpenAI lines of the correct episodes", async () => {
  const out = join(root, "correct.jsonl");
  const text = await run(["export", source.directory, "--out", out, "--correct-only", "--no-lossless"]);
  assert.match(text, /wrote 2 trajectories of run source/);
  const lines = readFileSync(out, "utf8")
    .trimEnd()
    .split("\n")
    .map((line) => JSON.parse(line));
  assert.equal(lines.length, 2);
  assert.ok(lines.every((line) => line.agentrl === undefined && Array.isArray(line.messages)));
});

test("bad values are refused with the option named", async () => {
  await assert.rejects(
    run(["export", source.directory, "--out", "x", "--format", "csv"]),
    /--format must be one of openai-jsonl/,
  );
  await assert.rejects(
    run(["export", source.directory, "--out", "x", "--step", "-1"]),
    /--step must be an integer/,
  );
  await assert.rejects(run(["export", join(root, "nowhere"), "--out", "x"]), /not a run directory/);
  await assert.rejects(run(["export", source.directory, "--out", "x", "--run", "ghost"]), /no run "ghost"/);
});
