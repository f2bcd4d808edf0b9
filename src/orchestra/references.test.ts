import assert from "node:assert/strict";
import { test } from "node:test";
import { generateOrchestraTasks, orchestraMetadata } from "./generate.ts";
import { parseReference, partsOf, referenceOf } from "./references.ts";

test("references parse strictly; anything else is free text (null)", () => {
  assert.deepEqual(parseReference("part 2"), { kind: "part", part: 2 });
  assert.deepEqual(parseReference(" part 3 step 1 "), { kind: "part", part: 3, step: 1 });
  assert.deepEqual(parseReference("question"), { kind: "question" });
  for (const text of [
    "part 0",
    "part",
    "part two",
    "part 1 step",
    "part 1 step 0",
    "part 1 hop 2",
    "part 1 step 2 x",
    "population of x",
  ]) {
    assert.equal(parseReference(text), null, text);
  }
});

test("parts are the summands' chains, innermost first; every lookup and the sum have a reference", () => {
  const [task] = generateOrchestraTasks({ axis: "horizon", value: 5, count: 1, seed: 1 });
  const { graph } = orchestraMetadata(task)!;
  const parts = partsOf(graph);
  assert.deepEqual(
    parts.map((chain) => chain.length),
    [3, 2],
  );
  assert.equal(referenceOf(graph, parts[0][0], true), "part 1 step 1");
  assert.equal(referenceOf(graph, parts[0][2], true), "part 1 step 3");
  assert.equal(referenceOf(graph, parts[0][2], false), "part 1");
  assert.equal(referenceOf(graph, parts[1][1], false), "part 2");
  assert.equal(referenceOf(graph, graph.nodes.length - 1, true), "part 1 + part 2");
});
