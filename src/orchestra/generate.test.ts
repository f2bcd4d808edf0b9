import assert from "node:assert/strict";
import { test } from "node:test";
import { cachedWorld } from "../env/task-set.ts";
import { indexWorld, readAttribute, splitOfWorld } from "../world/index.ts";
import { AXIS_RANGE, generateOrchestraTasks, orchestraMetadata } from "./generate.ts";
import { AXES, type OrchestraGraph, validateGraph } from "./graph.ts";
import { parseTerms } from "./question.ts";

/** The axes measured naively, independently of graph.ts: recursion and flood fill. */
function naiveAxes(graph: OrchestraGraph) {
  const nodes = graph.nodes;
  const longest = (id: number): number => 1 + Math.max(0, ...nodes[id].deps.map(longest));
  const lookups = nodes.filter((node) => node.kind === "lookup").map((node) => node.id);
  const neighbours = (id: number) =>
    lookups.filter((other) => nodes[other].deps.includes(id) || nodes[id].deps.includes(other));
  const seen = new Set<number>();
  let components = 0;
  for (const start of lookups) {
    if (seen.has(start)) continue;
    components++;
    const stack = [start];
    while (stack.length > 0) {
      const id = stack.pop()!;
      if (seen.has(id)) continue;
      seen.add(id);
      stack.push(...neighbours(id));
    }
  }
  return {
    depth: Math.max(...nodes.map((node) => longest(node.id))),
    horizon: nodes.length - 1,
    breadth: Math.max(...nodes.map((node) => node.deps.length)),
    parallel: components,
    robustness: nodes.filter((node) => node.kind === "lookup" && node.decoy !== undefined).length,
  };
}

test("every axis hits each requested value exactly, measured on the task's graph", () => {
  for (const axis of AXES) {
    for (let value = AXIS_RANGE[axis].min; value <= 6; value++) {
      const tasks = generateOrchestraTasks({ axis, value, count: 6, seed: 3 });
      assert.equal(tasks.length, 6);
      for (const task of tasks) {
        const meta = orchestraMetadata(task)!;
        validateGraph(meta.graph);
        const measured = naiveAxes(meta.graph);
        assert.equal(measured[axis], value, `${task.id}: ${axis}`);
        assert.deepEqual(meta.axes, measured, `${task.id}: recorded axes`);
      }
    }
  }
});

test("graph values are the world's facts and the answer is the last node; questions parse back", () => {
  for (const axis of AXES) {
    for (const task of generateOrchestraTasks({ axis, value: 3, count: 8, seed: 5 })) {
      const { graph } = orchestraMetadata(task)!;
      const index = indexWorld(cachedWorld(task.worldSeed!));
      for (const node of graph.nodes) {
        if (node.kind === "calc") {
          assert.equal(
            Number(node.value),
            node.deps.map((d) => Number(graph.nodes[d].value)).reduce((a, b) => a + b),
          );
          continue;
        }
        const name = node.deps.length === 0 ? node.entity! : graph.nodes[node.deps[0]].value;
        const entity = index.byName.get(name)!;
        const raw = readAttribute(entity, node.attribute);
        const expected = typeof raw === "number" ? String(raw) : index.byId.get(String(raw))!.name;
        assert.equal(node.value, expected, `${task.id} node ${node.id}`);
        if (node.decoy !== undefined) assert.notEqual(node.decoy, node.value);
      }
      assert.equal(task.answer, graph.nodes.at(-1)!.value);
      const terms = parseTerms(task.question)!;
      const sum = graph.nodes.at(-1)!;
      assert.equal(terms.length, sum.kind === "calc" ? sum.deps.length : 1, task.question);
    }
  }
});

test("tasks are deterministic in their seed and come from their split's worlds", () => {
  const a = generateOrchestraTasks({ axis: "parallel", value: 2, count: 5, seed: 9, split: "test" });
  const b = generateOrchestraTasks({ axis: "parallel", value: 2, count: 5, seed: 9, split: "test" });
  assert.deepEqual(a, b);
  for (const task of a) assert.equal(splitOfWorld(task.worldSeed!), "test");
  assert.equal(new Set(a.map((task) => task.id)).size, a.length);
});

test("a bad axis or value is a clear error naming the valid ones", () => {
  assert.throws(
    () => generateOrchestraTasks({ axis: "width" as never, value: 2, count: 1, seed: 1 }),
    /unknown axis "width"; valid: depth, horizon, breadth, parallel, robustness/,
  );
  assert.throws(
    () => generateOrchestraTasks({ axis: "breadth", value: 1, count: 1, seed: 1 }),
    /breadth must be an integer in \[2, 12\], got 1/,
  );
});
