import assert from "node:assert/strict";
import { test } from "node:test";
import {
  type ExperimentRow,
  gainOverSingleAgent,
  orchestraMarkdown,
  runOrchestraExperiment,
  SINGLE_AGENT,
} from "./experiment.ts";

const row = (contender: string, value: number, accuracy: number): ExperimentRow => ({
  axis: "depth",
  value,
  competence: "weak",
  errorRate: 0.3,
  contender,
  degree: "high",
  tasks: 10,
  accuracy,
  reward: 0,
  callsPerTask: 0,
  parallelCallsPerTask: 0,
  executionErrorRate: 0,
});

test("gain over the single agent: per value, then averaged", () => {
  // value 2: 0.6 − 0.5 = 0.1; value 3: 0.2 − 0.4 = −0.2; mean −0.05.
  const rows = [row(SINGLE_AGENT, 2, 0.5), row(SINGLE_AGENT, 3, 0.4), row("x", 2, 0.6), row("x", 3, 0.2)];
  assert.ok(Math.abs(gainOverSingleAgent(rows, "x", "depth", "weak") - -0.05) < 1e-12);
  assert.ok(Number.isNaN(gainOverSingleAgent(rows, "y", "depth", "weak")));
});

test("the experiment measures every contender on the same tasks, per axis, value and competence", async () => {
  const result = await runOrchestraExperiment({
    orchestrators: [],
    axes: ["robustness", "depth"],
    values: [2],
    tasks: 20,
    competences: ["strong"],
  });
  const { rows } = result.json;
  assert.equal(rows.length, 2 * 3);
  for (const r of rows) assert.equal(r.tasks, 20);
  const robust = (name: string) => rows.find((r) => r.axis === "robustness" && r.contender === name)!;
  // With decoys on every lookup, cross-checking is what pays: call-every beats the single agent.
  assert.ok(robust("call-every").accuracy > robust(SINGLE_AGENT).accuracy + 0.3);
  assert.equal(robust("delegate-one").callsPerTask, 1);
  assert.ok(robust("call-every").parallelCallsPerTask >= 2);
  assert.equal(result.sections.length, 4);
  const markdown = orchestraMarkdown(result.json);
  assert.match(markdown, /\| robustness \| \d+\.\d% \(0\.0, 0\.0\) \| \d+\.\d% \(1\.0, 0\.0\) \|/);
  await assert.rejects(
    runOrchestraExperiment({ orchestrators: [], axes: ["breadth"], values: [1] }),
    /breadth must be an integer in \[2, 12\]/,
  );
});
