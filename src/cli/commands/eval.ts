/**
 * `agentrl eval`: pass@k of a policy on world tasks. Samples n episodes per task, stores every
 * trajectory in an eval run directory, and prints the pass@k table (overall and per family) and the
 * paths of `passk.json`, `passk.svg` and `passk.html`. A killed eval resumes with `--resume <dir>`
 * (or by rerunning with the same `--run-id`): stored episodes are kept, the rest are sampled.
 *
 *   agentrl eval --policy models/base-strong --n 64 --tasks 100
 *   agentrl eval --resume runs/eval-20250101-120000
 */
import type { Command } from "commander";
import { formatCurveTable } from "../../eval/curves.ts";
import { evalJson } from "../../eval/eval-files.ts";
import { readEvalRunConfig } from "../../eval/eval-run-data.ts";
import { type EvalResult, type EvalTaskSource, type EvaluateOptions, evaluate } from "../../eval/run-eval.ts";
import { resolvePolicy } from "../../policy/resolve.ts";
import { TASK_FAMILIES, type TaskFamily } from "../../types/task.ts";
import { createProgress, type Progress } from "../progress.ts";
import { parseChoice, parseNumber } from "./options.ts";

interface EvalCommandOptions {
  policy?: string;
  split: string;
  tasks: string;
  n: string;
  family?: string;
  seed: string;
  taskSeed: string;
  temperature: string;
  topP: string;
  noise: string;
  maxTurns?: string;
  batch: string;
  runs: string;
  runId?: string;
  resume?: string;
  json?: boolean;
}

/** Options that decide the episodes: taken from the stored config on resume, so giving them then is ignored. */
const FIXED_ON_RESUME = [
  "policy",
  "split",
  "tasks",
  "n",
  "family",
  "seed",
  "taskSeed",
  "temperature",
  "topP",
  "noise",
  "maxTurns",
] as const;

export function register(program: Command): void {
  program
    .command("eval")
    .description("sample n episodes per task, store them, and write pass@k curves overall and per family")
    .option("--policy <policy>", "scripted policy name, checkpoint directory, or openai:<base-url>#<model>")
    .option("--split <split>", "train or test worlds", "test")
    .option("--tasks <count>", "number of tasks", "100")
    .option("--n <n>", "samples per task (the largest k)", "64")
    .option("--family <family>", `only one family (${TASK_FAMILIES.join(", ")})`)
    .option(
      "--seed <seed>",
      "sampling seed (episode seeds derive from it, the task id and the sample index)",
      "1",
    )
    .option(
      "--task-seed <seed>",
      "seed of the task selection (keep it equal across models to compare them)",
      "1",
    )
    .option("--temperature <t>", "sampling temperature (the paper's curves: 0.6)", "0.6")
    .option("--top-p <p>", "nucleus sampling mass (the paper's curves: 0.95)", "0.95")
    .option("--noise <rate>", "total tool failure rate, split evenly over error/empty/timeout/corrupted", "0")
    .option("--max-turns <n>", "turn budget per episode (default: the episode loop's)")
    .option(
      "--batch <n>",
      "episodes advanced together (embedded: decode batch; endpoints: concurrency)",
      "64",
    )
    .option("--runs <dir>", "root folder of run directories", "runs")
    .option("--run-id <id>", "name of the run directory; an existing one is resumed")
    .option("--resume <dir>", "resume an eval run directory with its stored config")
    .option("--json", "print the result (config, totals, curves, per-task counts, paths) as JSON")
    .action(async (raw: EvalCommandOptions, command: Command) => {
      const batchSize = parseNumber("--batch", raw.batch, { integer: true, min: 1 });
      let options: Omit<EvaluateOptions, "policy"> & { policySpec: string };
      if (raw.resume) {
        const ignored = FIXED_ON_RESUME.filter((name) => command.getOptionValueSource(name) === "cli");
        if (ignored.length > 0 && !raw.json) {
          console.error(
            `agentrl eval: --resume uses the run's stored config; ignoring ${ignored.join(", ")}`,
          );
        }
        const { config, tasks } = readEvalRunConfig(raw.resume);
        const source: EvalTaskSource =
          config.tasks.type === "world"
            ? {
                type: "world",
                split: config.tasks.split,
                count: config.tasks.count,
                seed: config.tasks.seed,
                ...(config.tasks.family ? { family: config.tasks.family } : {}),
              }
            : { type: "given", tasks, ...(config.tasks.name !== null ? { name: config.tasks.name } : {}) };
        options = {
          policySpec: config.policy,
          tasks: source,
          n: config.n,
          seed: config.seed,
          ...(config.temperature !== null ? { temperature: config.temperature } : {}),
          ...(config.topP !== null ? { topP: config.topP } : {}),
          ...(config.noise !== null ? { noise: config.noise } : {}),
          budgets: config.budgets,
          resume: raw.resume,
        };
      } else {
        if (!raw.policy) throw new Error("--policy is required (or --resume <dir>)");
        const family = raw.family
          ? parseChoice<TaskFamily>("--family", raw.family, TASK_FAMILIES)
          : undefined;
        options = {
          policySpec: raw.policy,
          tasks: {
            type: "world",
            split: parseChoice("--split", raw.split, ["train", "test"] as const),
            count: parseNumber("--tasks", raw.tasks, { integer: true, min: 1 }),
            seed: parseNumber("--task-seed", raw.taskSeed, { integer: true, min: 0 }),
            ...(family ? { family } : {}),
          },
          n: parseNumber("--n", raw.n, { integer: true, min: 1 }),
          seed: parseNumber("--seed", raw.seed, { integer: true, min: 0 }),
          temperature: parseNumber("--temperature", raw.temperature, { min: 0 }),
          topP: parseNumber("--top-p", raw.topP, { min: 0, max: 1 }),
          noise: parseNumber("--noise", raw.noise, { min: 0, max: 1 }),
          ...(raw.maxTurns
            ? { budgets: { maxTurns: parseNumber("--max-turns", raw.maxTurns, { integer: true, min: 1 }) } }
            : {}),
          runsRoot: raw.runs,
          ...(raw.runId ? { runId: raw.runId } : {}),
        };
      }
      const policy = await resolvePolicy(options.policySpec, {
        ...(options.temperature !== undefined ? { temperature: options.temperature } : {}),
        ...(options.topP !== undefined ? { topP: options.topP } : {}),
      });
      const abort = new AbortController();
      const onSignal = () => abort.abort();
      process.once("SIGINT", onSignal);
      let progress: Progress | undefined;
      let runDirectory: string | null = raw.resume ?? null;
      try {
        const result = await evaluate({
          ...options,
          policy,
          batchSize,
          signal: abort.signal,
          onStart: ({ directory, total }) => {
            runDirectory = directory;
            progress = createProgress("eval", total, { quiet: Boolean(raw.json) });
          },
          onProgress: ({ done, correct, policyErrors }) =>
            progress?.update(done, {
              correct: done > 0 ? correct / done : 0,
              ...(policyErrors > 0 ? { policy_errors: policyErrors } : {}),
            }),
        });
        progress?.stop();
        if (raw.json) {
          console.log(
            JSON.stringify(
              {
                directory: result.directory,
                files: result.files,
                metrics: result.metrics,
                ...evalJson(result),
              },
              null,
              2,
            ),
          );
        } else {
          printResult(result);
        }
      } catch (error) {
        progress?.stop();
        if (abort.signal.aborted && runDirectory) {
          throw new Error(
            `interrupted; stored episodes are kept: resume with agentrl eval --resume ${runDirectory}`,
          );
        }
        throw error;
      } finally {
        process.removeListener("SIGINT", onSignal);
        await policy.close?.();
      }
    });
}

function printResult(result: EvalResult): void {
  const { totals, config } = result;
  console.log(
    `policy ${config.policy} (${result.policyId}); ${totals.tasks} tasks x n = ${config.n}; ` +
      `${result.episodes.sampled} episodes sampled, ${result.episodes.resumed} found stored`,
  );
  console.log(formatCurveTable(result.curves));
  console.log(
    `solved at k = n: ${totals.solved}/${totals.tasks}; correct samples ${totals.correct}/${totals.samples}; ` +
      `policy errors ${totals.policyErrors} (counted as failures)`,
  );
  console.log(`run: ${result.directory}`);
  if (result.files) console.log(`files: ${result.files.json}, ${result.files.svg}, ${result.files.html}`);
}
