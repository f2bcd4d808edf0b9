/**
 * The standalone gateway on world tasks (`agentrl gateway --reward <preset>`): an agent that names
 * its task in `x-agentrl-task-id` (or at `POST /episodes/<id>/end {taskId}`) gets its episode
 * checked against the world and scored with the preset, as an in-process episode is; an episode
 * whose task is not a world task is left as recorded.
 */
import assert from "node:assert/strict";
import { test } from "node:test";
import OpenAI from "openai";
import { resolveEvalTasks } from "../eval/eval-tasks.ts";
import type { BuiltEpisode } from "../gateway/index.ts";
import { resolveUpstream } from "../gateway/resolve-upstream.ts";
import { startGateway } from "../gateway/server.ts";
import { TURN_REWARD_TOTAL } from "../reward/index.ts";
import { worldTools } from "./public.ts";
import { scoreWorldEpisode } from "./score-episode.ts";

const [task] = resolveEvalTasks({ type: "world", split: "test", count: 1, seed: 5, family: "bridge" });

test("an episode naming its world task is checked and scored with the preset; others are left", async () => {
  const ended: BuiltEpisode[] = [];
  const gateway = await startGateway({
    upstream: await resolveUpstream("expert"),
    policyId: "expert",
    log: () => {},
    onEpisode: (built) => void ended.push(built),
  });
  try {
    // A plain chat loop whose client names the task, as agentrl's own OpenAI policy does.
    const client = new OpenAI({
      baseURL: gateway.episodeURL("named"),
      apiKey: "none",
      maxRetries: 0,
      defaultHeaders: { "x-agentrl-task-id": task.id },
    });
    const tools = worldTools(task);
    const messages: OpenAI.ChatCompletionMessageParam[] = [{ role: "user", content: task.question }];
    let answer: string | null = null;
    for (let step = 0; step < 8 && answer === null; step++) {
      const { message } = (
        await client.chat.completions.create({ model: "m", messages, tools: tools.openai })
      ).choices[0];
      const calls = message.tool_calls ?? [];
      if (calls.length === 0) answer = message.content;
      messages.push({ role: "assistant", content: message.content, tool_calls: calls });
      for (const call of calls) {
        if (call.type !== "function") continue;
        const content = await tools.call(call.function.name, JSON.parse(call.function.arguments));
        messages.push({ role: "tool", tool_call_id: call.id, content });
      }
    }
    const end = (id: string, body: unknown) =>
      fetch(`${gateway.url}/episodes/${id}/end`, {
        method: "POST",
        headers: { "content-type": "application/json" },
        body: JSON.stringify(body),
      });
    assert.equal((await end("named", { answer })).status, 200);
    const { trajectory, task: found } = await scoreWorldEpisode(ended[0].trajectory, "turn-credit");
    assert.equal(found?.id, task.id);
    assert.equal(trajectory.taskId, task.id);
    assert.equal(trajectory.family, "bridge");
    assert.ok(trajectory.correct, `answer ${answer}`);
    assert.equal(trajectory.outcomeReward, 1);
    const turnTotal = trajectory.turns.reduce((sum, turn) => sum + (turn.rewards[TURN_REWARD_TOTAL] ?? 0), 0);
    assert.ok(turnTotal > 0, "evidence credit from the checked search results");

    // The task named at the end instead; a wrong answer scores 0.
    assert.equal((await end("late", { answer: "12", taskId: task.id })).status, 200);
    const late = await scoreWorldEpisode(ended[1].trajectory, "exact-match");
    assert.equal(late.trajectory.taskId, task.id);
    assert.equal(late.trajectory.correct, false);
    assert.equal(late.trajectory.outcomeReward, 0);
    assert.equal((await end("bad", { answer: "1", taskId: 7 })).status, 400);

    // Not a world task id: left as recorded.
    assert.equal((await end("other", { answer: "1", taskId: "my-task-1" })).status, 200);
    const other = await scoreWorldEpisode(ended[2].trajectory, "exact-match");
    assert.equal(other.task, null);
    assert.equal(other.trajectory, ended[2].trajectory);
  } finally {
    await gateway.close();
  }
});
