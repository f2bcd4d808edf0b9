/**
 * `agentrl tasks`: look at and convert task files (JSONL, JSON, parquet), and try a verifier.
 *
 *   agentrl tasks show examples/tasks/math-sample.jsonl            → count, families, first tasks
 *   agentrl tasks show data/gpqa.parquet --limit 0 --json          → every task as JSON
 *   agentrl tasks convert data/aime.jsonl data/aime.parquet        → the same tasks in another format
 *   agentrl tasks check --verifier math --gold '\frac12' --answer 'so \boxed{0.5}'   → true
 */
import type { Command } from "commander";
import { readTaskFile, writeTaskFile } from "../../tasks/index.ts";
import type { Task } from "../../types/task.ts";
import { getVerifier, VERIFIER_NAMES } from "../../verify/index.ts";
import { parseNumber } from "./options.ts";

function summary(tasks: readonly Task[]) {
  const families: Record<string, number> = {};
  for (const task of tasks) families[task.family] = (families[task.family] ?? 0) + 1;
  return {
    count: tasks.length,
    families,
    withAliases: tasks.filter((task) => (task.aliases?.length ?? 0) > 0).length,
    withChoices: tasks.filter((task) => Array.isArray(task.metadata?.choices)).length,
    withSystemPrompt: tasks.filter((task) => task.systemPrompt !== undefined).length,
  };
}

function clip(text: string, length: number): string {
  const line = text.replace(/\s+/g, " ").trim();
  return line.length > length ? `${line.slice(0, length - 1)}…` : line;
}

export function register(program: Command): void {
  const tasks = program.command("tasks").description("look at, convert and verify task files");

  tasks
    .command("show")
    .description("print a task file's size, families and first tasks")
    .argument("<file>", "task file (.jsonl, .json or .parquet)")
    .option("--limit <n>", "tasks to print (0: all)", "5")
    .option("--json", "print the summary and the tasks as JSON")
    .action(async (file: string, options: { limit: string; json?: boolean }) => {
      const limit = parseNumber("--limit", options.limit, { integer: true, min: 0 });
      const all = await readTaskFile(file);
      const shown = limit === 0 ? all : all.slice(0, limit);
      if (options.json) {
        console.log(JSON.stringify({ file, ...summary(all), tasks: shown }, null, 2));
        return;
      }
      const { count, families, withAliases, withChoices, withSystemPrompt } = summary(all);
      console.log(`${file}: ${count} tasks`);
      console.log(
        `families: ${Object.entries(families)
          .map(([family, n]) => `${family} ${n}`)
          .join(", ")}`,
      );
      console.log(
        `with aliases ${withAliases}, with choices ${withChoices}, with a system prompt ${withSystemPrompt}`,
      );
      for (const task of shown) {
        const aliases = task.aliases?.length ? ` (also: ${task.aliases.join(" | ")})` : "";
        console.log(
          `\n[${task.id}] ${task.family}\n  Q: ${clip(task.question, 160)}\n  A: ${task.answer}${aliases}`,
        );
      }
    });

  tasks
    .command("convert")
    .description("read a task file and write the same tasks in the format of <out>'s extension")
    .argument("<in>", "task file to read (.jsonl, .json or .parquet)")
    .argument("<out>", "task file to write (.jsonl, .json or .parquet)")
    .option("--json", "print the result as JSON")
    .action(async (input: string, output: string, options: { json?: boolean }) => {
      const all = await readTaskFile(input);
      writeTaskFile(output, all);
      if (options.json) console.log(JSON.stringify({ input, output, count: all.length }));
      else console.log(`wrote ${all.length} tasks from ${input} to ${output}`);
    });

  tasks
    .command("check")
    .description("run a verifier on one answer against one gold (prints true or false)")
    .requiredOption("--verifier <name>", `verifier (${VERIFIER_NAMES.join(", ")})`)
    .requiredOption("--gold <answer>", "gold answer (a letter for choice)")
    .requiredOption("--answer <text>", "the response to check")
    .option("--alias <answer...>", "other accepted gold answers")
    .option("--choices <text...>", "choice texts, in order (choice verifier)")
    .option("--json", "print the result as JSON")
    .action(
      async (options: {
        verifier: string;
        gold: string;
        answer: string;
        alias?: string[];
        choices?: string[];
        json?: boolean;
      }) => {
        const verify = getVerifier(options.verifier);
        const task: Task = {
          id: "check",
          question: "",
          answer: options.gold,
          family: "check",
          ...(options.alias ? { aliases: options.alias } : {}),
          ...(options.choices ? { metadata: { choices: options.choices } } : {}),
        };
        const correct = await verify(task, options.answer);
        console.log(options.json ? JSON.stringify({ verifier: options.verifier, correct }) : String(correct));
      },
    );
}
