/**
 * `agentrl rollout`: runs episodes of a policy through the episode loop on world tasks, stores every
 * trajectory in a run directory as it ends, and prints success, turns, tool calls, tool statuses,
 * format failures and retries, overall and per family.
 */
import type { Command } from "commander";
import { runEpisodes } from "../../env/run-episodes.ts";
import { rolloutTasks, worldToolsFor } from "../../env/task-set.ts";
import { type RolloutStats, rolloutStatsByFamily } from "../../eval/rollout-stats.ts";
import { resolvePolicy } from "../../policy/resolve.ts";
import { createRunDirectory, TOOL_SPECS_STATE_KEY } from "../../store/index.ts";
import { finishRunAfterError } from "../../store/run-failure.ts";
import { toolSpec, uniformNoise } from "../../tools/index.ts";
import { TASK_FAMILIES, type TaskFamily } from "../../types/task.ts";
import { checkAnswer } from "../../world/index.ts";
import { createProgress } from "../progress.ts";
import { parseChoice, parseNumber } from "./options.ts";

export function register(program: Command): void {
  program
    .command("rollout")
    .description("run a policy on world tasks, store the trajectories, print success and tool statistics")
    .option("--policy <policy>", "scripted policy name or checkpoint directory", "expert")
    .option("--tasks <n>", "number of tasks (episodes)", "200")
    .option("--family <family>", `only one family (${TASK_FAMILIES.join(", ")})`)
    .option("--split <split>", "train or test worlds", "test")
    .option("--noise <rate>", "total tool failure rate, split evenly over error/empty/timeout/corrupted", "0")
    .option("--seed <seed>", "seed of task selection, sampling and noise", "1")
    .option("--temperature <t>", "sampling temperature (embedded policies)", "1")
    .option("--max-turns <n>", "turn budget per episode", "14")
    .option("--batch <n>", "episodes advanced together", "64")
    .option("--runs <dir>", "root folder of run directories", "runs")
    .option("--run-id <id>", "name of the run directory (default: rollout-<date>)")
    .option("--json", "print the statistics as JSON")
    .action(async (options) => {
      const count = parseNumber("--tasks", options.tasks, { integer: true, min: 1 });
      const seed = parseNumber("--seed", options.seed, { integer: true, min: 0 });
      const noise = parseNumber("--noise", options.noise, { min: 0, max: 1 });
      const split = parseChoice("--split", options.split, ["train", "test"] as const);
      const family = options.family
        ? parseChoice<TaskFamily>("--family", options.family, TASK_FAMILIES)
        : undefined;
      const policy = await resolvePolicy(options.policy, {
        temperature: parseNumber("--temperature", options.temperature, { min: 0 }),
      });
      const tasks = rolloutTasks({ split, count, seed, ...(family ? { family } : {}) });
      const tools = worldToolsFor(noise > 0 ? { noise: uniformNoise(noise) } : {});
      const config = { policy: options.policy, tasks: count, family, split, noise, seed };
      const { directory, store, run } = createRunDirectory({
        kind: "rollout",
        root: options.runs,
        config,
        ...(options.runId ? { id: options.runId } : {}),
      });
      store.setState(run.id, TOOL_SPECS_STATE_KEY, tools(tasks[0], seed).map(toolSpec));
      const progress = createProgress("rollout", tasks.length, { quiet: Boolean(options.json) });
      let done = 0;
      let correct = 0;
      try {
        const trajectories = await runEpisodes({
          policy,
          episodes: tasks.map((task, i) => ({ task, seed: seed * 1_000_003 + i })),
          tools,
          verify: checkAnswer,
          budgets: { maxTurns: parseNumber("--max-turns", options.maxTurns, { integer: true, min: 1 }) },
          batchSize: parseNumber("--batch", options.batch, { integer: true, min: 1 }),
          onEpisode: (trajectory) => {
            store.addTrajectory(run.id, trajectory, { key: trajectory.id });
            done++;
            if (trajectory.correct) correct++;
            progress.update(done, { success: correct / done });
          },
        });
        progress.stop();
        const stats = rolloutStatsByFamily(trajectories);
        store.finishRun(run.id, "completed", stats);
        if (options.json) {
          console.log(JSON.stringify({ run: directory, ...config, policyId: policy.id, ...stats }, null, 2));
        } else {
          printStats(directory, policy.id, stats);
        }
      } catch (error) {
        finishRunAfterError(store, run.id, error);
        throw error;
      } finally {
        store.close();
        await policy.close?.();
      }
    });
}

function printStats(
  directory: string,
  policyId: string,
  stats: { overall: RolloutStats; families: Record<string, RolloutStats> },
) {
  const pct = (x: number) => `${(100 * x).toFixed(1)}%`;
  const row = (name: string, s: RolloutStats) =>
    `${name.padEnd(12)} ${String(s.episodes).padStart(6)} ${pct(s.success_rate).padStart(8)} ${s.mean_turns.toFixed(2).padStart(6)} ${s.mean_tool_calls.toFixed(2).padStart(6)} ${pct(s.tool_failure_rate).padStart(8)} ${s.format_errors_per_episode.toFixed(2).padStart(7)}`;
  console.log(`policy ${policyId}; trajectories stored in ${directory}`);
  console.log(
    `${"family".padEnd(12)} ${"eps".padStart(6)} ${"success".padStart(8)} ${"turns".padStart(6)} ${"calls".padStart(6)} ${"toolfail".padStart(8)} ${"fmt/ep".padStart(7)}`,
  );
  for (const [family, s] of Object.entries(stats.families)) console.log(row(family, s));
  console.log(row("all", stats.overall));
  const o = stats.overall;
  const statuses = Object.entries(o.tool_status_rate)
    .map(([status, rate]) => `${status} ${pct(rate)}`)
    .join(", ");
  console.log(`tool calls by status: ${statuses}; injected ${pct(o.tool_injected_rate)}`);
  if (o.retry_after_failure_rate !== null)
    console.log(`retries after a tool failure: ${pct(o.retry_after_failure_rate)}`);
  console.log(`end reasons: ${JSON.stringify(o.end_reasons)}`);
}
