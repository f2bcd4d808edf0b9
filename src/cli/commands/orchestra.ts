/**
 * `agentrl orchestra`: learnable orchestration (MAS-Orchestra / MASBench, src/orchestra/).
 *
 *   agentrl orchestra tasks --axis depth --values 2,4,6          → sample tasks with their graphs
 *   agentrl orchestra pretrain --config configs/orchestra/orchestrator-base.json
 *   agentrl orchestra train --config configs/orchestra/grpo.json  → GRPO through the RL trainer
 *   agentrl orchestra report --policy models/orchestrator-grpo    → HTML section + JSON per axis
 */
import type { Command } from "commander";
import { parseConfigFrom, readConfigFile } from "../../core/config-file.ts";
import { runOrchestraExperiment, writeOrchestraReport } from "../../orchestra/experiment.ts";
import { generateOrchestraTasks, orchestraMetadata, validateAxisValue } from "../../orchestra/generate.ts";
import { AXES } from "../../orchestra/graph.ts";
import {
  evaluateBaseForCard,
  pretrainOrchestrator,
  writeOrchestratorCard,
} from "../../orchestra/pretrain.ts";
import { COMPETENCE_LEVELS, type CompetenceLevel } from "../../orchestra/sub-agents.ts";
import {
  type OrchestraTrainConfig,
  parseOrchestraTrainConfig,
  trainOrchestrator,
  writeTrainedOrchestratorCard,
} from "../../orchestra/train.ts";
import { openTrainingRun, runTraining } from "../training-run.ts";
import { parseChoice, parseNumber } from "./options.ts";
import { openPretrainRun } from "./pretrain.ts";

function parseValues(raw: string): number[] {
  return raw.split(",").map((part) => parseNumber("--values", part.trim(), { integer: true, min: 1 }));
}

export function register(program: Command): void {
  const orchestra = program
    .command("orchestra")
    .description(
      "learnable orchestration: MASBench-style tasks, sub-agents as tools, an RL-trained orchestrator",
    );

  orchestra
    .command("tasks")
    .description("sample orchestration tasks of one axis at the given values, with their dependency graphs")
    .requiredOption("--axis <axis>", `axis: ${AXES.join(", ")}`)
    .option("--values <list>", "comma-separated axis values", "2,4,6")
    .option("--count <n>", "tasks per value", "2")
    .option("--seed <n>", "seed", "1")
    .option("--split <split>", "train or test worlds", "test")
    .option("--json", "print the tasks as JSON")
    .action(
      (options: {
        axis: string;
        values: string;
        count: string;
        seed: string;
        split: string;
        json?: boolean;
      }) => {
        const axis = parseChoice("--axis", options.axis, AXES);
        const values = parseValues(options.values);
        for (const value of values) validateAxisValue(axis, value);
        const count = parseNumber("--count", options.count, { integer: true, min: 1 });
        const seed = parseNumber("--seed", options.seed, { integer: true, min: 0 });
        const split = parseChoice("--split", options.split, ["train", "test"] as const);
        const tasks = values.flatMap((value) => generateOrchestraTasks({ axis, value, count, seed, split }));
        if (options.json) {
          console.log(JSON.stringify(tasks, null, 2));
          return;
        }
        for (const task of tasks) {
          const meta = orchestraMetadata(task)!;
          const axes = Object.entries(meta.axes)
            .map(([name, v]) => `${name} ${v}`)
            .join(", ");
          console.log(`${task.id}  [${axes}]`);
          console.log(`  ${task.question}  →  ${task.answer}`);
          for (const node of meta.graph.nodes) {
            const deps = node.deps.length > 0 ? ` ← ${node.deps.join(", ")}` : "";
            const what =
              node.kind === "calc"
                ? "sum"
                : `${node.attribute}${node.entity ? ` of ${node.entity}` : ""}${node.decoy ? ` (decoy ${node.decoy})` : ""}`;
            console.log(`    ${node.id}: ${what} = ${node.value}${deps}`);
          }
        }
      },
    );

  orchestra
    .command("pretrain")
    .description(
      "pretrain an orchestrator base on scripted orchestration episodes and write it with its card",
    )
    .option(
      "--config <file>",
      "JSON config (fields of src/pretrain/config.ts)",
      "configs/orchestra/orchestrator-base.json",
    )
    .option("--steps <n>", "optimizer steps (overrides the config)")
    .option("--out <dir>", "folder for the finished base (overrides the config)")
    .option("--card-tasks <n>", "card: tasks per axis (value 2, weak sub-agents, high degree)", "40")
    .option("--resume <runDir>", "continue a pretraining run from its last checkpoint")
    .option("--runs <dir>", "root folder of run directories", "runs")
    .option("--json", "print the result as JSON")
    .action(
      async (options: {
        config: string;
        steps?: string;
        out?: string;
        cardTasks: string;
        resume?: string;
        runs: string;
        json?: boolean;
      }) => {
        const fromFile = readConfigFile(options.config, "orchestra pretrain config");
        const overrides: Record<string, unknown> = {};
        if (options.steps) overrides.steps = parseNumber("--steps", options.steps, { integer: true, min: 1 });
        if (options.out) overrides.out = options.out;
        const cardTasks = parseNumber("--card-tasks", options.cardTasks, { integer: true, min: 0 });
        const run = openPretrainRun(options, { ...fromFile, ...overrides });
        const { config, directory } = run;
        const label = `pretrain ${config.name}`;
        const summary = await runTraining(
          run,
          { label, steps: config.steps, quiet: Boolean(options.json) },
          async ({ progress, signal }) => {
            const result = await pretrainOrchestrator({
              ...run,
              runDir: directory,
              signal,
              onProgress: (p) =>
                progress.update(p.step, { loss: p.loss, "tok/s": Math.round(p.tokensPerSecond) }),
            });
            progress.stop();
            const evaluation =
              cardTasks > 0 ? await evaluateBaseForCard(result.checkpointDir, cardTasks) : null;
            writeOrchestratorCard(result.checkpointDir, config, result, evaluation);
            return { ...result, evaluation };
          },
        );
        if (options.json) console.log(JSON.stringify({ run: directory, ...summary }, null, 2));
        else {
          console.log(`orchestrator base written to ${summary.checkpointDir} (run ${directory})`);
          console.log(
            `${summary.steps} steps, final loss ${summary.finalLoss.toFixed(4)}, ${(summary.seconds / 60).toFixed(1)} min`,
          );
          if (summary.evaluation) console.log(`accuracy: ${JSON.stringify(summary.evaluation.accuracy)}`);
        }
      },
    );

  orchestra
    .command("train")
    .description(
      "GRPO of an embedded orchestrator (reward 0.9·correct + 0.1·no execution error) through the RL trainer",
    )
    .option(
      "--config <file>",
      "JSON: RL config fields (src/rl/config.ts) plus an `orchestra` block (src/orchestra/train.ts)",
    )
    .option("--base <dir>", "orchestrator base (default models/orchestrator-base)")
    .option("--steps <n>", "RL steps")
    .option("--seed <n>", "seed")
    .option("--out <dir>", "where the trained checkpoint goes (default <run>/model)")
    .option("--resume <runDir>", "continue a run from its last checkpoint")
    .option("--runs <dir>", "root folder of run directories", "runs")
    .option("--json", "print the result as JSON")
    .action(
      async (options: {
        config?: string;
        base?: string;
        steps?: string;
        seed?: string;
        out?: string;
        resume?: string;
        runs: string;
        json?: boolean;
      }) => {
        const fresh = (): OrchestraTrainConfig => {
          const raw = options.config ? readConfigFile(options.config, "orchestra train config") : {};
          if (options.base) raw.base = options.base;
          if (options.out) raw.out = options.out;
          if (options.steps) raw.steps = parseNumber("--steps", options.steps, { integer: true, min: 1 });
          if (options.seed) raw.seed = parseNumber("--seed", options.seed, { integer: true, min: 0 });
          return parseConfigFrom(options.config, "orchestra train config", () =>
            parseOrchestraTrainConfig(raw),
          );
        };
        const run = openTrainingRun({
          kind: "rl",
          resume: options.resume,
          runs: options.runs,
          parse: (raw) => {
            const stored = raw as OrchestraTrainConfig;
            return parseOrchestraTrainConfig({ ...stored.rl, orchestra: stored.orchestra });
          },
          fresh,
          defaultId: (c) => `rl-${c.rl.name}-${Date.now()}`,
        });
        const { config, directory } = run;
        const summary = await runTraining(
          run,
          { label: `orchestra rl ${config.rl.name}`, steps: config.rl.steps, quiet: Boolean(options.json) },
          async ({ progress, signal }) => {
            const result = await trainOrchestrator(config, {
              runDir: directory,
              store: run.store,
              runId: run.runId,
              signal,
              onProgress: ({ step, metrics }) => {
                if (step === 0) return;
                progress.update(step, {
                  reward: Number((metrics["reward/mean"] ?? Number.NaN).toFixed(3)),
                  "pass@1": Number((metrics["rollout/pass@1"] ?? Number.NaN).toFixed(3)),
                  kept: metrics["rollout/kept_groups"] ?? 0,
                });
              },
            });
            writeTrainedOrchestratorCard(config, result, {
              reward: run.store.metrics(run.runId, "reward/mean"),
              accuracy: run.store.metrics(run.runId, "rollout/pass@1"),
            });
            return result;
          },
        );
        if (options.json) console.log(JSON.stringify({ run: directory, ...summary }, null, 2));
        else {
          console.log(`trained orchestrator written to ${summary.modelDir} (run ${directory})`);
          console.log(
            `${summary.steps} steps, ${summary.episodes} episodes, ${(summary.seconds / 60).toFixed(1)} min`,
          );
        }
      },
    );

  orchestra
    .command("report")
    .description(
      "evaluate orchestrators against the single agent and fixed strategies per axis; write HTML + JSON",
    )
    .option(
      "--policy <list>",
      "embedded orchestrators as name=dir, comma-separated (e.g. base=models/orchestrator-base,grpo=models/orchestrator-grpo)",
      "",
    )
    .option("--axes <list>", `comma-separated axes (${AXES.join(", ")})`, AXES.join(","))
    .option("--values <list>", "comma-separated axis values", "2,3,4")
    .option("--tasks <n>", "test tasks per axis and value", "40")
    .option(
      "--competence <list>",
      `sub-agent competences (${Object.keys(COMPETENCE_LEVELS).join(", ")})`,
      "weak,strong",
    )
    .option("--temperature <t>", "sampling temperature of the embedded orchestrators (0: greedy)", "0")
    .option("--seed <n>", "seed of the test tasks and episodes", "1")
    .option("--out <dir>", "folder for orchestra.html and orchestra.json", "runs/orchestra-report")
    .option("--json", "print the measurements as JSON")
    .action(
      async (options: {
        policy: string;
        axes: string;
        values: string;
        tasks: string;
        competence: string;
        temperature: string;
        seed: string;
        out: string;
        json?: boolean;
      }) => {
        const orchestrators = options.policy
          .split(",")
          .map((part) => part.trim())
          .filter(Boolean)
          .map((part) => {
            const eq = part.indexOf("=");
            if (eq <= 0) throw new Error(`--policy: "${part}" must be name=dir`);
            return { name: part.slice(0, eq), dir: part.slice(eq + 1) };
          });
        const axes = options.axes.split(",").map((axis) => parseChoice("--axes", axis.trim(), AXES));
        const competences = options.competence
          .split(",")
          .map((c) =>
            parseChoice("--competence", c.trim(), Object.keys(COMPETENCE_LEVELS) as CompetenceLevel[]),
          );
        const result = await runOrchestraExperiment({
          orchestrators,
          axes,
          values: parseValues(options.values),
          tasks: parseNumber("--tasks", options.tasks, { integer: true, min: 1 }),
          competences,
          temperature: parseNumber("--temperature", options.temperature, { min: 0 }),
          seed: parseNumber("--seed", options.seed, { integer: true, min: 0 }),
          onProgress: options.json ? undefined : (message) => process.stderr.write(`  ${message}\n`),
        });
        const paths = writeOrchestraReport(options.out, result);
        if (options.json) console.log(JSON.stringify(result.json, null, 2));
        else console.log(`report written to ${paths.html} and ${paths.json}`);
      },
    );
}
