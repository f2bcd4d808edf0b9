/**
 * The files of an eval run carry pass^k beside pass@k: `passk.json`'s curves (overall, per family,
 * per template) and `passk.html`'s pass^k section, on hand-worked counts.
 */
import assert from "node:assert/strict";
import { mkdtempSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { test } from "node:test";
import { DEFAULT_BUDGETS } from "../env/run-episodes.ts";
import { passAtKCurves } from "./curves.ts";
import { evalJson, writeEvalFiles } from "./eval-files.ts";
import type { EvalResult } from "./run-eval.ts";
import { countTotals, type TaskCount } from "./task-counts.ts";

test("passk.json and passk.html hold pass^k beside pass@k", async (t) => {
  const directory = mkdtempSync(join(tmpdir(), "agentrl-eval-files-"));
  t.after(() => rmSync(directory, { recursive: true, force: true }));
  // n = 4: t1 3 correct, t2 4 correct, t3 1 correct.
  const counts: TaskCount[] = [
    { taskId: "t1", family: "lookup", template: "city", n: 4, c: 3, policyErrors: 0 },
    { taskId: "t2", family: "lookup", template: "city", n: 4, c: 4, policyErrors: 0 },
    { taskId: "t3", family: "bridge", template: "capital", n: 4, c: 1, policyErrors: 0 },
  ];
  const result: Omit<EvalResult, "files"> = {
    directory,
    runId: "r",
    policyId: "p",
    config: {
      policy: "p",
      tasks: { type: "given", name: null, count: 3 },
      n: 4,
      seed: 0,
      temperature: null,
      topP: null,
      noise: null,
      budgets: DEFAULT_BUDGETS,
    },
    counts,
    curves: passAtKCurves(counts, { bootstrap: { resamples: 50 } }),
    totals: countTotals(counts),
    episodes: { resumed: 0, sampled: 12 },
    endReasons: { answer: 12 },
    metrics: {},
  };
  const files = await writeEvalFiles(directory, result);
  const json = JSON.parse(readFileSync(files.json, "utf8"));
  assert.deepEqual(json, JSON.parse(JSON.stringify(evalJson(result))));
  // pass^2: t1 C(3,2)/C(4,2) = 1/2, t2 1, t3 0 → 1/2 overall; lookup 3/4; bridge 0.
  // pass^4: t2 only → 1/3 overall; lookup 1/2.
  const close = (actual: number, expected: number) => assert.ok(Math.abs(actual - expected) < 1e-12);
  assert.deepEqual(json.curves.ks, [1, 2, 4]);
  close(json.curves.overall[0].passHatK, (3 / 4 + 1 + 1 / 4) / 3);
  close(json.curves.overall[1].passHatK, 1 / 2);
  close(json.curves.overall[2].passHatK, 1 / 3);
  close(json.curves.families.lookup[1].passHatK, 3 / 4);
  close(json.curves.families.lookup[2].passHatK, 1 / 2);
  assert.equal(json.curves.families.bridge[1].passHatK, 0);
  close(json.curves.templates.city[2].passHatK, 1 / 2);
  const point = json.curves.overall[1];
  assert.ok(point.passHatKLower <= point.passHatK && point.passHatK <= point.passHatKUpper);

  const html = readFileSync(files.html, "utf8");
  assert.match(html, /<h2>pass\^k<\/h2>/);
  assert.match(html, /pass\^k overall \(with interval\) and per family/);
  assert.match(html, /pass\^k per template/);
  // The pass^k table's k = 4 row: overall 0.333 [interval], bridge 0.000, lookup 0.500.
  assert.match(
    html,
    /<td[^>]*>4<\/td><td[^>]*>0\.333 \[[0-9.]+, [0-9.]+\]<\/td><td[^>]*>0\.000<\/td><td[^>]*>0\.500<\/td>/,
  );
});
