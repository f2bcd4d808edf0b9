/**
 * The real-LLM path end to end on this machine: the OpenAI policy (official `openai` client) talks
 * to `agentrl serve` (a real HTTP server on an ephemeral loopback port) in front of a scripted text
 * policy, through the episode loop. Served this way a policy must make exactly the decisions it
 * makes in process: the same actions, answers and end reasons, episode by episode.
 */
import assert from "node:assert/strict";
import { test } from "node:test";
import { runEpisodes } from "../env/run-episodes.ts";
import { rolloutTasks, worldToolsFor } from "../env/task-set.ts";
import { createOpenAiPolicy } from "../policy/openai/index.ts";
import { scriptedPolicy } from "../policy/scripted/index.ts";
import { uniformNoise } from "../tools/index.ts";
import type { Action, Trajectory } from "../types/trajectory.ts";
import { checkAnswer } from "../world/index.ts";
import { startChatServer } from "./server.ts";
import { worldTaskResolver } from "./world-tasks.ts";

/** What must agree: per turn the action (call ids aside), per episode the answer and the ending. */
function decisions(trajectory: Trajectory) {
  const action = (a: Action) =>
    a.type === "tool-call" ? { type: a.type, tool: a.tool, arguments: a.arguments } : a;
  return {
    taskId: trajectory.taskId,
    actions: trajectory.turns.map((turn) => action(turn.action)),
    observations: trajectory.turns.map((turn) => turn.toolResult?.content ?? null),
    finalAnswer: trajectory.finalAnswer,
    correct: trajectory.correct,
    endReason: trajectory.endReason,
  };
}

const cases = [
  { name: "expert", noise: 0 },
  { name: "expert", noise: 0.2 },
  { name: "mixed", noise: 0.2 },
] as const;

for (const { name, noise } of cases) {
  test(`${name} (tool noise ${noise}) served through agentrl serve makes the same decisions as in process`, async () => {
    const tasks = rolloutTasks({ split: "test", count: 30, seed: 7 });
    const episodes = tasks.map((task, i) => ({ task, seed: 1000 + i }));
    const tools = worldToolsFor(noise > 0 ? { noise: uniformNoise(noise) } : {});
    const local = await runEpisodes({ policy: scriptedPolicy(name), episodes, tools, verify: checkAnswer });

    const server = await startChatServer({
      loadPolicy: () => scriptedPolicy(name),
      model: name,
      port: 0,
      resolveTask: worldTaskResolver(),
      log: () => {},
    });
    try {
      const remote = createOpenAiPolicy({
        baseURL: server.url,
        model: name,
        concurrency: 8,
      });
      const served = await runEpisodes({ policy: remote, episodes, tools, verify: checkAnswer });
      assert.deepEqual(served.map(decisions), local.map(decisions));
      if (name === "expert" && noise === 0)
        assert.ok(
          served.every((t) => t.correct),
          "the served expert solves every task",
        );
      if (name === "mixed")
        assert.ok(
          served.some((t) => !t.correct),
          "mixed makes mistakes: not trivially all-correct",
        );
      if (noise > 0)
        assert.ok(
          served.some((t) => t.turns.some((turn) => turn.toolResult?.injected)),
          "noise exercised",
        );
      assert.ok(
        served.some((t) => t.turns.length > 2),
        "multi-turn episodes were exercised",
      );
      assert.ok(served.every((t) => t.policyId === `openai:${server.url}#${name}`));
    } finally {
      await server.close();
    }
  });
}
