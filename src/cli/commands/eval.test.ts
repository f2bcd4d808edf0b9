import assert from "node:assert/strict";
import { existsSync, mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, test } from "node:test";
import { runCli } from "../testing.ts";
import { register as registerBoundary } from "./boundary.ts";
import { register as registerEval } from "./eval.ts";

async function run(args: string[]): Promise<{ out: string[]; err: string[] }> {
  return runCli([registerEval, registerBoundary], args);
}

const root = mkdtempSync(join(tmpdir(), "agentrl-eval-cli-"));
after(() => rmSync(root, { recursive: true, force: true }));
const common = ["--tasks", "10", "--n", "4", "--runs", root];

test("agentrl eval --json: pass@k of the expert, files in the run directory", async () => {
  const { out } = await run(["eval", "--policy", "expert", ...common, "--run-id", "expert", "--json"]);
  const result = JSON.parse(out.join("\n"));
  assert.equal(result.directory, join(root, "expert"));
  assert.equal(result.metrics["eval/pass@1"], 1);
  assert.equal(result.metrics["eval/pass@4"], 1);
  assert.equal(result.metrics["eval/pass^4"], 1, "the expert is right every time");
  assert.equal(result.curves.overall[2].passHatK, 1);
  assert.deepEqual(result.curves.ks, [1, 2, 4]);
  assert.equal(result.config.temperature, 0.6);
  assert.equal(result.config.topP, 0.95);
  assert.equal(result.counts.length, 10);
  for (const file of Object.values(result.files) as string[]) assert.ok(existsSync(file), file);
});

test("agentrl eval prints the curve table; --resume reuses the stored config", async () => {
  const out = (await run(["eval", "--policy", "vague", ...common, "--run-id", "vague"])).out
    .join("\n")
    .split("\n");
  assert.match(out[0], /^policy vague \(vague\); 10 tasks x n = 4; 40 episodes sampled, 0 found stored$/);
  assert.match(out[1], /^\s+k\s+all\s+/);
  assert.equal(out.filter((line) => /^\s+[124]\s+0\.\d{3}/.test(line)).length, 3);
  assert.ok(out.includes(`run: ${join(root, "vague")}`));

  const resumed = await run(["eval", "--resume", join(root, "vague"), "--n", "99"]);
  assert.match(resumed.err.join("\n"), /uses the run's stored config; ignoring n/);
  const resumedLines = resumed.out.join("\n").split("\n");
  assert.match(resumedLines[0], /10 tasks x n = 4; 0 episodes sampled, 40 found stored/);
  assert.deepEqual(resumedLines.slice(1, 5), out.slice(1, 5));
});

test("agentrl eval validates its options", async () => {
  await assert.rejects(run(["eval", ...common]), /--policy is required/);
  await assert.rejects(run(["eval", "--policy", "expert", "--n", "0"]), /--n must be an integer >= 1/);
  await assert.rejects(run(["eval", "--policy", "expert", "--family", "poetry"]), /--family must be one of/);
  await assert.rejects(run(["eval", "--policy", "nobody"]), /unknown policy "nobody"/);
});

test("agentrl boundary compares two eval runs and writes its files", async () => {
  const out = join(root, "cmp");
  const { out: lines } = await run(["boundary", join(root, "expert"), join(root, "vague"), "--out", out]);
  const text = lines.join("\n");
  assert.match(text, /10 shared tasks/);
  assert.match(text, /expert vs vague\n {2}ahead at k = 1: expert; crossover: none up to k = 4/);
  assert.match(text, /vague ⊆ expert: true/);
  assert.match(text, /pass\^4 \(all 4 samples correct\): expert 100\.0%, vague /);
  assert.match(text, /^pass\^k\s+expert\s+vague$/m);
  assert.match(text, /expert: no scoring model/);
  for (const file of ["boundary.html", "boundary.json", "boundary-passk.svg"])
    assert.ok(existsSync(join(out, file)));

  const { out: json } = await run([
    "boundary",
    join(root, "expert"),
    join(root, "vague"),
    "--out",
    out,
    "--json",
  ]);
  const parsed = JSON.parse(json.join("\n"));
  assert.equal(parsed.pairs[0].a, "expert");
  assert.equal(parsed.tasks.length, 10);
  await assert.rejects(run(["boundary", join(root, "expert")]), /at least two eval run directories/);
});
