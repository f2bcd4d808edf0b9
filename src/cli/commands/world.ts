/**
 * `agentrl world`: look inside a generated world: its size, some documents, and sample tasks with
 * their gold solutions.
 *
 *   agentrl world --seed 17 --show 5                 summary and 5 tasks of mixed families
 *   agentrl world --split test --family chain        the first test world, 5 chain tasks
 *   agentrl world --seed 3 --docs 10 --show 0        10 documents, no tasks
 *   agentrl world --seed 3 --template sum3 --json    machine-readable
 */
import type { Command } from "commander";
import { TASK_FAMILIES, type Task, type TaskFamily } from "../../types/task.ts";
import {
  generateTasks,
  generateWorld,
  indexWorld,
  splitOfWorld,
  TASK_TEMPLATES,
  type World,
  type WorldDocument,
  type WorldSplit,
  worldSeeds,
  worldVocabulary,
} from "../../world/index.ts";
import { parseChoice, parseNumber } from "./options.ts";

const SPLITS = ["train", "test"] as const;

export interface WorldCommandOptions {
  /** World seed; default: the first seed of `split`. */
  seed?: number;
  /** Split the world must belong to (default: the seed's own split, or train without a seed). */
  split?: WorldSplit;
  /** Sample tasks to show. */
  show: number;
  family?: TaskFamily;
  template?: string;
  /** Documents to print (the first N). */
  docs: number;
  /** Seed of the task sample. */
  taskSeed: number;
}

export interface WorldReport {
  world: {
    seed: number;
    split: WorldSplit;
    counts: Record<"countries" | "cities" | "people" | "companies" | "documents", number>;
    nearDuplicates: Record<"namesakePairs" | "cityPairs" | "companyPairs", number>;
    vocabulary: number;
  };
  documents: WorldDocument[];
  tasks: Task[];
}

/** Resolves the world and samples; throws (naming the option) on a seed of the wrong split. */
export function worldReport(options: WorldCommandOptions): WorldReport {
  const seed = options.seed ?? worldSeeds(options.split ?? "train", 1)[0];
  const split = splitOfWorld(seed);
  if (options.split !== undefined && options.split !== split) {
    throw new Error(
      `--seed ${seed} is a ${split} world, not ${options.split}; ${options.split} world seeds include ` +
        worldSeeds(options.split, 8).join(", "),
    );
  }
  const world = generateWorld(seed);
  const index = indexWorld(world);
  const pairs = (entities: readonly { id: string }[]) =>
    entities.filter((e) => index.twins.has(e.id)).length / 2;
  const tasks =
    options.show > 0
      ? generateTasks(world, {
          count: options.show,
          family: options.family,
          template: options.template,
          seed: options.taskSeed,
        })
      : [];
  return {
    world: {
      seed,
      split,
      counts: {
        countries: index.countries.length,
        cities: index.cities.length,
        people: index.people.length,
        companies: index.companies.length,
        documents: world.documents.length,
      },
      nearDuplicates: {
        namesakePairs: pairs(index.people),
        cityPairs: pairs(index.cities),
        companyPairs: pairs(index.companies),
      },
      vocabulary: worldVocabulary().length,
    },
    documents: world.documents.slice(0, options.docs),
    tasks,
  };
}

function formatTask(task: Task, world: World): string[] {
  const lines = [
    `  ${task.id}  (${task.family}, ${task.template}, ${task.hops} hops)`,
    `    q: ${task.question}`,
  ];
  const width = Math.max(
    ...(task.gold ?? []).map((step) => (step.type === "search" ? step.query.length : 0)),
    0,
  );
  (task.gold ?? []).forEach((step, i) => {
    const n = `    ${i + 1}.`;
    if (step.type === "search") {
      const text = world.documents.find((d) => d.id === step.entity)?.text ?? `(no document ${step.entity})`;
      lines.push(`${n} search  ${step.query.padEnd(width)}  → ${text}`);
    } else if (step.type === "calc") lines.push(`${n} calc    ${step.expression} = ${step.result}`);
    else lines.push(`${n} answer  ${step.answer}`);
  });
  return lines;
}

export function formatWorldReport(report: WorldReport): string {
  const { world: summary } = report;
  const world = generateWorld(summary.seed);
  const c = summary.counts;
  const d = summary.nearDuplicates;
  const lines = [
    `world ${summary.seed} (${summary.split} split)`,
    `  ${c.countries} countries, ${c.cities} cities, ${c.people} people, ${c.companies} companies; ${c.documents} documents`,
    `  near-duplicates: ${d.namesakePairs} namesake pairs, ${d.cityPairs} city pairs, ${d.companyPairs} company pairs`,
    `  vocabulary: ${summary.vocabulary} words; ${TASK_TEMPLATES.length} task templates`,
  ];
  if (report.documents.length > 0) {
    lines.push(
      "",
      `documents (first ${report.documents.length}):`,
      ...report.documents.map((doc) => `  ${doc.text}`),
    );
  }
  if (report.tasks.length > 0) {
    lines.push("", `tasks (${report.tasks.length}):`);
    for (const task of report.tasks) lines.push(...formatTask(task, world), "");
  }
  return lines.join("\n").trimEnd();
}

interface RawOptions {
  seed?: string;
  split?: string;
  show: string;
  family?: string;
  template?: string;
  docs: string;
  taskSeed: string;
  json?: boolean;
}

export function parseWorldOptions(raw: RawOptions): WorldCommandOptions {
  return {
    seed:
      raw.seed === undefined
        ? undefined
        : parseNumber("--seed", raw.seed, { integer: true, min: 0, max: 0xffffffff }),
    split: raw.split === undefined ? undefined : parseChoice("--split", raw.split, SPLITS),
    show: parseNumber("--show", raw.show, { integer: true, min: 0 }),
    family: raw.family === undefined ? undefined : parseChoice("--family", raw.family, TASK_FAMILIES),
    template:
      raw.template === undefined
        ? undefined
        : parseChoice(
            "--template",
            raw.template,
            TASK_TEMPLATES.map((t) => t.template),
          ),
    docs: parseNumber("--docs", raw.docs, { integer: true, min: 0 }),
    taskSeed: parseNumber("--task-seed", raw.taskSeed, { integer: true, min: 0 }),
  };
}

export function register(program: Command): void {
  program
    .command("world")
    .description("show a generated world: its size, documents and sample tasks with their gold solutions")
    .option("--seed <n>", "world seed (default: the first seed of --split)")
    .option(
      "--split <split>",
      `split the world must belong to: ${SPLITS.join(" or ")} (test worlds are held out)`,
    )
    .option("--show <n>", "number of sample tasks", "5")
    .option("--family <family>", `only tasks of this family: ${TASK_FAMILIES.join(", ")}`)
    .option("--template <name>", "only tasks of this template (e.g. sum3, capital-pop)")
    .option("--docs <n>", "number of documents to print", "0")
    .option("--task-seed <n>", "seed of the task sample", "0")
    .option("--json", "print the report as JSON")
    .action((raw: RawOptions) => {
      const report = worldReport(parseWorldOptions(raw));
      console.log(raw.json ? JSON.stringify(report, null, 2) : formatWorldReport(report));
    });
}
