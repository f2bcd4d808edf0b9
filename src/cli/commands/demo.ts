/**
 * `agentrl demo`: the embedded lab in one
 * screen. Every scripted policy and every shipped base model runs the same test tasks through
 * the episode loop with 20% tool noise; the table shows how each one's flaws show up in success,
 * tool use and retries. Trajectories are stored under `runs/`.
 */
import { existsSync, readdirSync } from "node:fs";
import { join } from "node:path";
import type { Command } from "commander";
import { runEpisodes } from "../../env/run-episodes.ts";
import { rolloutTasks, worldToolsFor } from "../../env/task-set.ts";
import { rolloutStats } from "../../eval/rollout-stats.ts";
import { resolvePolicy } from "../../policy/resolve.ts";
import { SCRIPTED_POLICY_NAMES } from "../../policy/scripted/index.ts";
import { createRunDirectory } from "../../store/index.ts";
import { uniformNoise } from "../../tools/index.ts";
import { checkAnswer } from "../../world/index.ts";
import { createProgress } from "../progress.ts";
import { parseNumber } from "./options.ts";

export function register(program: Command): void {
  program
    .command("demo")
    .description("run every scripted policy and shipped base on the same noisy test tasks and compare them")
    .option("--tasks <n>", "tasks per policy", "200")
    .option("--noise <rate>", "total tool failure rate", "0.2")
    .option("--models <dir>", "folder of shipped base models", "models")
    .option("--runs <dir>", "root folder of run directories", "runs")
    .action(async (options) => {
      const count = parseNumber("--tasks", options.tasks, { integer: true, min: 1 });
      const noise = parseNumber("--noise", options.noise, { min: 0, max: 1 });
      const bases = existsSync(options.models)
        ? readdirSync(options.models)
            .map((name) => join(options.models, name))
            .filter((dir) => existsSync(join(dir, "checkpoint.json")))
        : [];
      const specs = [...SCRIPTED_POLICY_NAMES, ...bases];
      const tasks = rolloutTasks({ split: "test", count, seed: 1 });
      const { directory, store, run } = createRunDirectory({
        kind: "rollout",
        root: options.runs,
        config: { tasks: count, noise, policies: specs },
      });
      const rows: string[] = [];
      const pct = (x: number) => `${(100 * x).toFixed(1)}%`.padStart(7);
      try {
        for (const spec of specs) {
          const policy = await resolvePolicy(spec, { temperature: 1 });
          const progress = createProgress(spec, tasks.length);
          let done = 0;
          const trajectories = await runEpisodes({
            policy,
            episodes: tasks.map((task, i) => ({ task, seed: i, id: `${spec}/${task.id}` })),
            tools: worldToolsFor({ noise: uniformNoise(noise) }),
            verify: checkAnswer,
            batchSize: 128,
            onEpisode: (trajectory) => {
              store.addTrajectory(run.id, trajectory);
              progress.update(++done);
            },
          });
          progress.stop();
          await policy.close?.();
          const s = rolloutStats(trajectories);
          rows.push(
            `${spec.padEnd(20)} ${pct(s.success_rate)} ${s.mean_tool_calls.toFixed(2).padStart(6)} ${pct(s.tool_failure_rate)} ${s.retry_after_failure_rate === null ? "    n/a" : pct(s.retry_after_failure_rate)} ${s.format_errors_per_episode.toFixed(2).padStart(6)}`,
          );
        }
        store.finishRun(run.id, "completed");
      } finally {
        store.close();
      }
      console.log(
        `\n${tasks.length} test tasks per policy, tool noise ${noise}; trajectories in ${directory}\n`,
      );
      console.log(
        `${"policy".padEnd(20)} ${"success".padStart(7)} ${"calls".padStart(6)} ${"toolerr".padStart(7)} ${"retry".padStart(7)} ${"fmt".padStart(6)}`,
      );
      for (const row of rows) console.log(row);
      console.log(
        "\nNext: `npx agentrl rollout --help`, `npx agentrl world --show 5`, `npx agentrl eval --help`.",
      );
    });
}
