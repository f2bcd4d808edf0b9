import assert from "node:assert/strict";
import { test } from "node:test";
import { checkpointParents, checkpointPath, type LineageRun } from "./run-lineage.ts";

const run = (
  key: string,
  kind: string,
  config: Record<string, unknown>,
  parentKey: string | null = null,
): LineageRun => ({
  key,
  kind,
  config,
  parentKey,
});

test("a checkpoint path is normalised; policy names and URLs are not paths", () => {
  assert.equal(checkpointPath("embedded:runs/x/./model/"), "runs/x/model");
  assert.equal(checkpointPath("C:\\runs\\x\\model"), "C:/runs/x/model");
  assert.equal(checkpointPath("expert"), null);
  assert.equal(checkpointPath("http://127.0.0.1:8000/v1"), null);
  assert.equal(checkpointPath(undefined), null);
});

test("an eval's parent is the trainer whose out is its policy; an RL run's, the SFT run it started from", () => {
  const runs = [
    run("a::run", "rl", { out: "/o/stages/credit-grpo/model", base: "models/base-strong" }),
    run("b::run", "eval", { policy: "/o/stages/credit-grpo/model" }),
    run("c::run", "eval", { policy: "models/base-strong" }),
    run("d::run", "sft", { out: "runs/r/stages/sft-real/model" }),
    // written relative by one, absolute by the other: matched at a folder boundary
    run("e::run", "rl", {
      base: "/home/u/runs/r/stages/sft-real/model",
      out: "runs/r/stages/rl-sft-real/model",
    }),
    run("f::run", "eval", { policy: "embedded:runs/r/stages/rl-sft-real/model/" }),
    // a run with a parent of its own keeps it
    run("g::x", "eval", { policy: "/o/stages/credit-grpo/model" }, "g::run"),
  ];
  assert.deepEqual(
    [...checkpointParents(runs)],
    [
      ["b::run", "a::run"],
      ["e::run", "d::run"],
      ["f::run", "e::run"],
    ],
  );
});

test("two trainers writing the same folder, or two folders both ending like the path, give no parent", () => {
  const twice = [
    run("a", "rl", { out: "x/model" }),
    run("b", "rl", { out: "x/model" }),
    run("c", "eval", { policy: "x/model" }),
  ];
  assert.equal(checkpointParents(twice).size, 0);
  const ambiguous = [
    run("a", "rl", { out: "/one/x/model" }),
    run("b", "rl", { out: "/two/x/model" }),
    run("c", "eval", { policy: "x/model" }),
  ];
  assert.equal(checkpointParents(ambiguous).size, 0);
});

test("a checkpoint saved inside a trainer's run folder is that trainer's", () => {
  const runs = [
    { ...run("a", "rl", { out: "/o/final" }), directory: "/o/runs/rl-1" },
    { ...run("b", "rl", { out: "/o/other" }), directory: "/o/runs/rl-10" },
    run("c", "eval", { policy: "/o/runs/rl-1/checkpoints/step-4" }),
    run("d", "eval", { policy: "/o/runs/rl-2/checkpoints/step-4" }),
  ];
  assert.deepEqual([...checkpointParents(runs)], [["c", "a"]]);
});
