import assert from "node:assert/strict";
import { test } from "node:test";
import { rolloutTasks, worldToolsFor } from "../env/task-set.ts";
import { createExpertPolicy } from "../policy/scripted/index.ts";
import { uniformNoise } from "../tools/index.ts";
import type { AnyTool } from "../types/tool.ts";
import { checkAnswer } from "../world/index.ts";
import { checkDeterminism } from "./determinism.ts";

const tasks = rolloutTasks({ split: "test", count: 6, seed: 2 });
const base = { tasks, verify: checkAnswer, reward: "turn-credit", policy: createExpertPolicy() };

test("the world's tools, noise included, repeat under the same seed; injected noise is reported apart", async () => {
  const check = await checkDeterminism({ ...base, tools: worldToolsFor({ noise: uniformNoise(0.3) }) });
  assert.equal(check.ok, true, check.detail);
  const stats = check.data?.tools as { tool: string; injectedRate: number; failureRate: number }[];
  const search = stats.find((entry) => entry.tool === "search")!;
  assert.ok(search.injectedRate > 0, "noise was injected and labelled");
  assert.equal(search.failureRate, 0, "the world's search never fails on its own");
});

test("an environment made non-deterministic on purpose fails, naming the episodes that differ", async () => {
  const world = worldToolsFor();
  // The search result carries a fresh random number on every call: not a function of the seed.
  const flaky = (task: (typeof tasks)[number], seed: number): readonly AnyTool[] =>
    world(task, seed).map((tool) =>
      tool.name !== "search"
        ? tool
        : {
            ...tool,
            async call(args: Record<string, unknown>, options?: Parameters<AnyTool["call"]>[1]) {
              const result = await tool.call(args, options);
              return { ...result, content: `${result.content} ( served by replica ${Math.random()} )` };
            },
          },
    );
  const check = await checkDeterminism({ ...base, tools: flaky });
  assert.equal(check.ok, false);
  assert.match(check.detail, /6 of 6 episodes differ between two runs with the same seed/);
  assert.equal(check.changes[0].kind, "fix-environment");
});
