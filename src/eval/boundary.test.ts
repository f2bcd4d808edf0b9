import assert from "node:assert/strict";
import { mkdtempSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { test } from "node:test";
import { createMockPolicy } from "../policy/mock.ts";
import { scriptedPolicy } from "../policy/scripted/index.ts";
import type { Tokenizer } from "../types/policy.ts";
import { analyzeBoundary } from "./boundary.ts";
import type { WorldTaskSource } from "./eval-tasks.ts";
import { passAtK } from "./passk.ts";
import { runBoundary } from "./run-boundary.ts";
import { evaluate } from "./run-eval.ts";
import type { TaskCount } from "./task-counts.ts";

const close = (actual: number, expected: number, what: string) =>
  assert.ok(Math.abs(actual - expected) < 1e-12, `${what}: ${actual} ≠ ${expected}`);

function counts(family: Record<string, string>, cs: Record<string, number>, n = 4): TaskCount[] {
  return Object.entries(cs).map(([taskId, c]) => ({ taskId, family: family[taskId], n, c, policyErrors: 0 }));
}

const families = { t1: "x", t2: "x", t3: "y", t4: "y", t5: "y" };

test("boundary on hand-computed counts: crossover, gap, solvable sets, per family", () => {
  // n = 4. rl: c = 4, 4, 0, 2 (+ t5, which base lacks); base: c = 1, 1, 1, 0; narrow: c = 2, 0, 0, 0.
  const analysis = analyzeBoundary(
    [
      { label: "rl", counts: counts(families, { t1: 4, t2: 4, t3: 0, t4: 2, t5: 1 }) },
      { label: "base", counts: counts(families, { t1: 1, t2: 1, t3: 1, t4: 0 }) },
      { label: "narrow", counts: counts(families, { t1: 2, t2: 0, t3: 0, t4: 0 }) },
    ],
    { bootstrap: false },
  );
  assert.deepEqual(analysis.tasks, ["t1", "t2", "t3", "t4"]);
  assert.deepEqual(analysis.ks, [1, 2, 4]);
  assert.equal(analysis.warnings.length, 1);
  assert.match(analysis.warnings[0], /rl: 1 of its 5 tasks are not in every run/);

  // rl:   pass@1 = (1 + 1 + 0 + 2/4)/4 = 0.625; pass@2 = (1 + 1 + 0 + (1 − 1/6))/4 = 0.7083; pass@4 = 3/4.
  // base: pass@1 = (3 · 1/4)/4 = 0.1875;       pass@2 = (3 · 1/2)/4 = 0.375;             pass@4 = 3/4.
  const [rl, base] = analysis.runs;
  close(rl.curves.overall[0].passAtK, 0.625, "rl pass@1");
  close(rl.curves.overall[1].passAtK, (2 + 5 / 6) / 4, "rl pass@2");
  close(rl.curves.overall[2].passAtK, 0.75, "rl pass@4");
  close(base.curves.overall[0].passAtK, 0.1875, "base pass@1");
  close(base.curves.overall[1].passAtK, 0.375, "base pass@2");
  close(base.curves.overall[2].passAtK, 0.75, "base pass@4");
  assert.equal(rl.solvable, 3);
  assert.equal(base.solvable, 3);
  // pass^k = C(c,k)/C(n,k) beside it. rl: pass^2 = (1 + 1 + 0 + C(2,2)/C(4,2) = 1/6)/4, pass^4 = (1 + 1)/4;
  // base (c = 1 at most): pass^2 = pass^4 = 0.
  close(rl.curves.overall[0].passHatK!, 0.625, "rl pass^1 = pass@1");
  close(rl.curves.overall[1].passHatK!, (2 + 1 / 6) / 4, "rl pass^2");
  close(rl.curves.overall[2].passHatK!, 0.5, "rl pass^4");
  close(base.curves.overall[1].passHatK!, 0, "base pass^2");

  const [rlBase, rlNarrow, baseNarrow] = analysis.pairs;
  assert.equal(rlBase.a, "rl");
  assert.equal(rlBase.b, "base");
  assert.equal(rlBase.leaderAtK1, "a");
  assert.equal(rlBase.crossoverK, 4); // base reaches rl at k = 4 (0.75 = 0.75), not at k = 2
  assert.equal(rlBase.kMax, 4);
  close(rlBase.gap.aOverB, 0.75 - 0.1875, "pass@4(rl) − pass@1(base)");
  close(rlBase.gap.bOverA, 0.75 - 0.625, "pass@4(base) − pass@1(rl)");
  assert.deepEqual(rlBase.passHatKMax, { a: 0.5, b: 0 });
  assert.deepEqual(rlBase.solvable, {
    a: 3,
    b: 3,
    both: 2,
    neither: 0,
    onlyA: ["t4"],
    onlyB: ["t3"],
    aSubsetOfB: false,
    bSubsetOfA: false,
  });
  // Family y (t3, t4): rl pass@1 = (0 + 1/2)/2 = 0.25, base (1/4 + 0)/2 = 0.125; both 0.5 at k = 4.
  const y = rlBase.families.y;
  close(y.passAt1.a, 0.25, "y rl pass@1");
  close(y.passAt1.b, 0.125, "y base pass@1");
  assert.equal(y.crossoverK, 4);
  assert.deepEqual(y.passHatKMax, { a: 0, b: 0 }, "y: no task all-correct in either run");
  assert.deepEqual([y.solvable.onlyA, y.solvable.onlyB], [["t4"], ["t3"]]);
  assert.equal(rlBase.families.x.solvable.both, 2);

  // narrow solves only t1: inside both other sets.
  assert.equal(rlNarrow.solvable.bSubsetOfA, true);
  assert.equal(rlNarrow.solvable.aSubsetOfB, false);
  assert.deepEqual(rlNarrow.solvable.onlyA, ["t2", "t4"]);
  // base vs narrow: pass@1 0.1875 vs 0.125 → base leads; narrow at k = 4: 1/4 < 3/4: no crossover.
  assert.equal(baseNarrow.leaderAtK1, "a");
  assert.equal(baseNarrow.crossoverK, null);
  assert.equal(baseNarrow.solvable.bSubsetOfA, true);
});

test("boundary warns about unequal n and stops the grid at the smallest", () => {
  const analysis = analyzeBoundary(
    [
      { label: "a", counts: counts(families, { t1: 4, t2: 0 }, 8) },
      { label: "b", counts: counts(families, { t1: 1, t2: 1 }, 2) },
    ],
    { bootstrap: false },
  );
  assert.deepEqual(analysis.ks, [1, 2]);
  assert.match(analysis.warnings.join("\n"), /samples per task differ \(a: 8, b: 2\): curves stop at k = 2/);
  // a: pass@2 = (1 − C(4,2)/C(8,2) + 0)/2 = (1 − 6/28)/2; b: both tasks n − c = 1 < 2 → 1.
  close(analysis.runs[0].curves.overall[1].passAtK, (1 - 6 / 28) / 2, "a pass@2");
  close(analysis.runs[1].curves.overall[1].passAtK, 1, "b pass@2");
  // pass@1: a (1/2 + 0)/2 = 0.25 < b (1/2 + 1/2)/2 = 0.5; a at k = 2 is 0.39 < 1: no crossover.
  assert.equal(analysis.pairs[0].leaderAtK1, "b");
  assert.equal(analysis.pairs[0].crossoverK, null);
  assert.throws(() => analyzeBoundary([{ label: "a", counts: [] }]), /at least two runs/);
  assert.throws(
    () =>
      analyzeBoundary([
        { label: "a", counts: counts(families, { t1: 1 }) },
        { label: "b", counts: counts(families, { t2: 1 }) },
      ]),
    /share no task/,
  );
});

/** Whitespace words hashed into 50 ids: enough for a uniform scorer. */
const hashTokenizer: Tokenizer = {
  vocabSize: 50,
  encode: (text) =>
    text
      .split(/\s+/)
      .filter(Boolean)
      .map((word) => (word.length * 7 + word.charCodeAt(0)) % 50),
  decode: (ids) => ids.map((id) => `w${id}`).join(" "),
};

test("agentrl boundary end to end: expert vs vague eval runs, page escapes model text, perplexity wiring", async (t) => {
  const root = mkdtempSync(join(tmpdir(), "agentrl-boundary-"));
  t.after(() => rmSync(root, { recursive: true, force: true }));
  const tasks: WorldTaskSource = { type: "world", split: "test", count: 15, seed: 2 };
  const common = { tasks, n: 4, runsRoot: root, curves: { bootstrap: { resamples: 50 } } };
  const expert = await evaluate({
    ...common,
    policy: scriptedPolicy("expert"),
    policySpec: "expert",
    runId: "expert",
  });
  const vague = await evaluate({
    ...common,
    policy: scriptedPolicy("vague"),
    policySpec: "vague",
    runId: "vague",
  });
  // A "model" that answers right and then writes markup: the page must show it as text.
  const shouty = createMockPolicy(
    (context) => `<answer> ${context.task.answer} </answer> <script>alert("pwned")</script>`,
  );
  await evaluate({ ...common, policy: shouty, policySpec: "mock <b>", runId: "shouty" });

  const out = join(root, "compare");
  const result = await runBoundary({
    directories: [expert.directory!, vague.directory!, join(root, "shouty")],
    out,
    curves: { bootstrap: { resamples: 50 } },
    scorerFor: async (run) =>
      run.label === "expert"
        ? {
            id: "uniform",
            tokenizer: hashTokenizer,
            score: async (sequences) => sequences.map((ids) => ids.map(() => -Math.log(50))),
          }
        : null,
    perplexityTrajectories: 20,
  });

  // Hand computation from the two runs' own counts.
  const vagueC = new Map(vague.counts.map((count) => [count.taskId, count.c]));
  const vaguePass1 =
    vague.counts.reduce((sum, count) => sum + passAtK(4, count.c, 1), 0) / vague.counts.length;
  const [pair] = result.analysis.pairs;
  assert.equal(result.analysis.tasks.length, 15);
  assert.equal(pair.a, "expert");
  assert.equal(pair.b, "vague");
  assert.equal(pair.leaderAtK1, "a");
  close(pair.passAt1.a, 1, "expert pass@1");
  close(pair.passAt1.b, vaguePass1, "vague pass@1");
  close(pair.gap.aOverB, 1 - vaguePass1, "ΔSE pass@4(expert) − pass@1(vague)");
  const vagueUnsolved = vague.counts.filter((count) => count.c === 0).map((count) => count.taskId);
  assert.ok(vagueUnsolved.length > 0, "vague leaves some task unsolved at n = 4");
  assert.deepEqual(pair.solvable.onlyA, vagueUnsolved);
  assert.deepEqual(pair.solvable.onlyB, []);
  assert.equal(pair.solvable.bSubsetOfA, true);
  assert.equal(pair.solvable.aSubsetOfB, false);
  assert.equal(pair.crossoverK, null); // vague misses whole tasks, so it never reaches 1
  assert.equal(pair.solvable.both, [...vagueC.values()].filter((c) => c > 0).length);

  // Perplexity: every run's correct trajectories under the one scorable model; the others noted.
  assert.deepEqual(
    result.perplexity.map((entry) => `${entry.trajectoriesOf}|${entry.scoredBy}`),
    ["expert|expert", "vague|expert", "mock <b>|expert"],
  );
  for (const entry of result.perplexity) {
    assert.ok(entry.result.scored > 0 && entry.result.scored <= 20);
    close(entry.result.pooled!, 50, "uniform perplexity");
    assert.equal(entry.result.tokenSource.reEncoded, entry.result.scored);
  }
  assert.equal(result.perplexityNotes.length, 2);

  const html = readFileSync(result.files!.html, "utf8");
  assert.doesNotMatch(html, /<script/i);
  assert.match(html, /&lt;script&gt;alert\(&quot;pwned&quot;\)&lt;\/script&gt;/);
  assert.match(html, /mock &lt;b&gt;/);
  assert.doesNotMatch(html, /<b>/);
  assert.match(html, /<svg/);
  assert.match(html, /<h2[^>]*>pass\^k<\/h2>/, "a pass^k section beside pass@k");
  const json = JSON.parse(readFileSync(result.files!.json, "utf8"));
  // The expert is right every time: pass^4 = 1; vague's pass^4 from its own counts.
  const vaguePass4 =
    vague.counts.reduce((sum, count) => sum + (count.c === 4 ? 1 : 0), 0) / vague.counts.length;
  assert.equal(json.runs[0].curves.overall[2].passHatK, 1);
  close(json.runs[1].curves.overall[2].passHatK, vaguePass4, "vague pass^4");
  close(json.pairs[0].passHatKMax.b, vaguePass4, "pair pass^4 of vague");
  assert.equal(json.pairs[0].solvable.onlyA.length, vagueUnsolved.length);
  assert.equal(json.runs[1].label, "vague");
  assert.equal(json.perplexity[0].pooled, json.perplexity[0].pooled);
  assert.equal(json.perplexity[0].perTrajectory, undefined);
});
