/**
 * Environment throughput: expert rollouts through the real episode loop with the real tools
 * (BM25 search, calc) and 20% tool noise. The figure later issues must not regress.
 */

import { runEpisodes } from "../src/env/run-episodes.ts";
import { rolloutTasks, worldToolsFor } from "../src/env/task-set.ts";
import { scriptedPolicy } from "../src/policy/scripted/index.ts";
import { uniformNoise } from "../src/tools/index.ts";
import { checkAnswer } from "../src/world/index.ts";

export async function benchEnv(): Promise<Record<string, number>> {
  const tasks = rolloutTasks({ split: "train", count: 400, seed: 7 });
  const tools = worldToolsFor({ noise: uniformNoise(0.2) });
  const run = async () => {
    const started = performance.now();
    const trajectories = await runEpisodes({
      policy: scriptedPolicy("expert"),
      episodes: tasks.map((task, i) => ({ task, seed: i })),
      tools,
      verify: checkAnswer,
      batchSize: 64,
    });
    const seconds = (performance.now() - started) / 1000;
    const calls = trajectories.reduce((sum, t) => sum + t.turns.filter((turn) => turn.toolResult).length, 0);
    return { seconds, episodes: trajectories.length, calls };
  };
  await run(); // warm-up: world generation and index building are cached after the first pass
  const { seconds, episodes, calls } = await run();
  return {
    env_episodes_per_s: episodes / seconds,
    env_tool_calls_per_s: calls / seconds,
  };
}
