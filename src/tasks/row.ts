/**
 * One row of a task file → a `Task`. Rows come from benchmark files people bring (AIME, MATH,
 * GSM8K, GPQA, MMLU, ARC, TriviaQA, HotpotQA exports, verl parquet), so the common field names are
 * accepted; the first present one wins:
 *
 * - question: `question`, `problem`, `prompt`, `input`, `query`, `Question`. A verl row's `prompt`
 *   (a list of chat messages) gives its last user message, and its system message the system prompt.
 * - answer: `answer`, `gold`, `target`, `final_answer`, `ground_truth`, `reward_model.ground_truth`
 *   (verl), `Answer`, `answers`, else `solution` (its last `\boxed{…}`). A list gives the answer and
 *   its aliases; an object `{ value, aliases }` (TriviaQA) too; a GSM8K answer `… #### 72` gives 72.
 * - aliases: `aliases` (merged with the above).
 * - choices: `choices` or `options`: a list of texts, an object `{ A: …, B: … }`, or ARC's
 *   `{ text: [...], label: [...] }` (at most 10). The answer then becomes a letter: a letter stays,
 *   a label maps to its position, a whole number is a 0-based index (MMLU), a choice's text maps to
 *   its letter. The choices are appended to the question as `(A) …` lines and kept in
 *   `metadata.choices` (the `choice` verifier reads them there).
 * - id: `id`, `uid`, `unique_id`, `question_id`, `task_id`, `problem_id`, else `<file-stem>/<n>`
 *   (n: the 1-based line of a JSONL file, the 1-based row of a parquet or JSON file).
 * - family: `family`, `subject`, `category`, `type` (MATH), `data_source` (verl), else the file stem.
 * - system prompt: `systemPrompt`, `system_prompt`, `system`.
 * - `template`, `hops`, `worldSeed`/`world_seed`, `split`, `gold`, `evidence`: carried as they are
 *   (world tasks written to a file read back the same).
 * - metadata: the row's `metadata` object plus every other non-null field.
 *
 * A malformed row is an error naming the file and the line or row, never a silently skipped task.
 */
import type { GoldStep, Task } from "../types/task.ts";
import { CHOICE_LETTERS } from "../verify/choice.ts";
import { boxedContents } from "../verify/extract.ts";

/** A problem with one row of a task file, located by `where` (`file.jsonl:7` or `file.parquet row 7`). */
export class TaskFileError extends Error {
  readonly where: string;
  constructor(where: string, problem: string) {
    super(`${where}: ${problem}`);
    this.name = "TaskFileError";
    this.where = where;
  }
}

export interface RowContext {
  /** File stem, for default ids and family. */
  stem: string;
  /** 1-based line (JSONL) or row (parquet, JSON) number. */
  position: number;
  /** For error messages. */
  where: string;
}

const QUESTION_FIELDS = ["question", "problem", "prompt", "question_content", "input", "query", "Question"];
/** Fields of code-generation rows (LiveCodeBench, APPS/TACO): their tests stand in for an answer. */
const CODE_TEST_FIELDS = ["public_test_cases", "private_test_cases", "input_output", "tests", "public_tests"];
const ANSWER_FIELDS = ["answer", "gold", "target", "final_answer", "ground_truth", "Answer", "answers"];
const ID_FIELDS = ["id", "uid", "unique_id", "question_id", "task_id", "problem_id"];
const FAMILY_FIELDS = ["family", "subject", "category", "type", "data_source"];
const SYSTEM_FIELDS = ["systemPrompt", "system_prompt", "system"];
const CHOICE_FIELDS = ["choices", "options"];
const CARRIED_FIELDS = ["template", "hops", "worldSeed", "world_seed", "split", "gold", "evidence"];

type Row = Record<string, unknown>;

function first(row: Row, fields: readonly string[]): { field: string; value: unknown } | null {
  for (const field of fields) {
    if (row[field] !== undefined && row[field] !== null) return { field, value: row[field] };
  }
  return null;
}

function scalarText(value: unknown): string | null {
  if (typeof value === "string") return value.trim();
  if (typeof value === "number" && Number.isFinite(value)) return String(value);
  if (typeof value === "bigint") return String(value);
  if (typeof value === "boolean") return value ? "yes" : "no";
  return null;
}

function isObject(value: unknown): value is Row {
  return typeof value === "object" && value !== null && !Array.isArray(value);
}

/** Question and system prompt; a verl `prompt` is a list of `{ role, content }` messages. */
function readQuestion(row: Row, fail: (problem: string) => never): { question: string; system?: string } {
  const found = first(row, QUESTION_FIELDS);
  if (!found) fail(`no question (expected one of ${QUESTION_FIELDS.join(", ")})`);
  if (Array.isArray(found.value)) {
    const messages = found.value.filter(isObject);
    const user = messages.filter((message) => message.role === "user").at(-1);
    const system = messages.find((message) => message.role === "system");
    if (!user || typeof user.content !== "string" || !user.content.trim()) {
      fail(`"${found.field}" is a message list without a user message`);
    }
    return {
      question: user.content.trim(),
      ...(system && typeof system.content === "string" ? { system: system.content } : {}),
    };
  }
  const question = typeof found.value === "string" ? found.value.trim() : "";
  if (!question) fail(`"${found.field}" must be a non-empty string`);
  return { question };
}

/** The gold answer(s): the first is the answer, the rest are aliases. */
function readAnswers(row: Row, fail: (problem: string) => never): { answers: string[]; consumed: string[] } {
  let found = first(row, ANSWER_FIELDS);
  const consumed: string[] = [];
  const reward = row.reward_model;
  if (!found && isObject(reward) && reward.ground_truth !== undefined && reward.ground_truth !== null) {
    found = { field: "reward_model", value: reward.ground_truth };
  }
  if (!found && CODE_TEST_FIELDS.some((field) => row[field] !== undefined && row[field] !== null)) {
    return { answers: [""], consumed: [] }; // the tests stay in metadata, for the code verifier
  }
  if (!found) {
    const solution = row.solution;
    if (typeof solution !== "string") {
      fail(`no answer (expected one of ${ANSWER_FIELDS.join(", ")}, reward_model.ground_truth or solution)`);
    }
    const boxed = boxedContents(solution);
    if (boxed.length === 0 || !boxed[boxed.length - 1].trim()) fail(`"solution" has no \\boxed{} answer`);
    return { answers: [boxed[boxed.length - 1].trim()], consumed: [] }; // the solution stays in metadata
  }
  consumed.push(found.field);
  const { value } = found;
  let answers: (string | null)[];
  if (Array.isArray(value)) answers = value.map(scalarText);
  else if (isObject(value) && value.value !== undefined) {
    const aliases = Array.isArray(value.aliases) ? value.aliases : [];
    answers = [scalarText(value.value), ...aliases.map(scalarText)];
  } else answers = [scalarText(value)];
  if (answers.some((answer) => answer === null))
    fail(`"${found.field}" must be text, a number or a list of them`);
  let texts = answers as string[];
  // GSM8K: the worked solution, then `#### <answer>`.
  const marker = texts[0]?.lastIndexOf("####") ?? -1;
  if (texts.length === 1 && marker >= 0 && texts[0].includes("\n")) {
    texts = [
      texts[0]
        .slice(marker + 4)
        .trim()
        .replace(/,/g, ""),
    ];
  }
  if (texts.length === 0 || !texts[0]) fail(`"${found.field}" is empty`);
  return { answers: texts, consumed };
}

/** Choice texts and, when the file labels them (ARC), their labels. */
function readChoices(
  row: Row,
  fail: (problem: string) => never,
): { texts: string[]; labels?: string[] } | null {
  const found = first(row, CHOICE_FIELDS);
  if (!found) return null;
  const { value } = found;
  let texts: unknown[];
  let labels: string[] | undefined;
  if (Array.isArray(value)) texts = value;
  else if (isObject(value) && Array.isArray(value.text)) {
    texts = value.text;
    if (Array.isArray(value.label)) labels = value.label.map((label) => String(label).trim());
  } else if (isObject(value)) {
    const keys = Object.keys(value);
    if (!keys.every((key, i) => key.toUpperCase() === CHOICE_LETTERS[i])) {
      fail(`"${found.field}" as an object must have keys A, B, C, … in order`);
    }
    texts = keys.map((key) => value[key]);
  } else return fail(`"${found.field}" must be a list of texts or an object of them`);
  const strings = texts.map(scalarText);
  if (strings.some((text) => !text)) fail(`"${found.field}" holds an empty or non-text choice`);
  if (strings.length < 2 || strings.length > CHOICE_LETTERS.length) {
    fail(`"${found.field}" must hold 2 to ${CHOICE_LETTERS.length} choices, got ${strings.length}`);
  }
  return { texts: strings as string[], ...(labels ? { labels } : {}) };
}

/** The gold letter of a choice question (rules in the file comment). */
function choiceLetter(
  answer: string,
  choices: { texts: string[]; labels?: string[] },
  rawAnswer: unknown,
  fail: (problem: string) => never,
): string {
  const count = choices.texts.length;
  const labelIndex = choices.labels?.indexOf(answer) ?? -1;
  if (labelIndex >= 0) return CHOICE_LETTERS[labelIndex];
  const letter = /^\(?([A-Ja-j])\)?$/.exec(answer);
  if (letter && CHOICE_LETTERS.indexOf(letter[1].toUpperCase()) < count) return letter[1].toUpperCase();
  if ((typeof rawAnswer === "number" || typeof rawAnswer === "bigint") && /^\d+$/.test(answer)) {
    const index = Number(answer);
    if (index < count) return CHOICE_LETTERS[index];
  }
  const byText = choices.texts.indexOf(answer);
  if (byText >= 0) return CHOICE_LETTERS[byText];
  return fail(`answer "${answer}" is not a letter, index or text of one of the ${count} choices`);
}

function readCarried(row: Row, fail: (problem: string) => never): Partial<Task> {
  const carried: Partial<Task> = {};
  if (row.template !== undefined && row.template !== null) {
    if (typeof row.template !== "string") fail(`"template" must be a string`);
    carried.template = row.template;
  }
  if (row.hops !== undefined && row.hops !== null) {
    const hops = Number(row.hops);
    if (!Number.isInteger(hops) || hops < 0) fail(`"hops" must be a whole number`);
    carried.hops = hops;
  }
  const worldSeed = row.worldSeed ?? row.world_seed;
  if (worldSeed !== undefined && worldSeed !== null) {
    const seed = Number(worldSeed);
    if (!Number.isInteger(seed)) fail(`"worldSeed" must be an integer`);
    carried.worldSeed = seed;
  }
  if (row.split !== undefined && row.split !== null) {
    if (row.split !== "train" && row.split !== "test") fail(`"split" must be "train" or "test"`);
    carried.split = row.split;
  }
  if (row.gold !== undefined && row.gold !== null && Array.isArray(row.gold)) {
    if (!row.gold.every((step) => isObject(step) && typeof step.type === "string")) {
      fail(`"gold" must be a list of steps with a "type"`);
    }
    carried.gold = row.gold as GoldStep[];
  }
  if (row.evidence !== undefined && row.evidence !== null) {
    if (!Array.isArray(row.evidence) || !row.evidence.every((id) => typeof id === "string")) {
      fail(`"evidence" must be a list of strings`);
    }
    carried.evidence = row.evidence as string[];
  }
  return carried;
}

/** Plain JSON: parquet INT64 values arrive as bigint, dates as Date, byte arrays as Uint8Array. */
export function plainValue(value: unknown): unknown {
  if (typeof value === "bigint") return Number.isSafeInteger(Number(value)) ? Number(value) : String(value);
  if (value instanceof Date) return value.toISOString();
  if (value instanceof Uint8Array) return Buffer.from(value).toString("base64");
  if (Array.isArray(value)) return value.map(plainValue);
  if (isObject(value))
    return Object.fromEntries(Object.entries(value).map(([key, item]) => [key, plainValue(item)]));
  return value;
}

/** Maps one row onto a `Task`; throws `TaskFileError` naming the row for anything malformed. */
export function rowToTask(raw: unknown, context: RowContext): Task {
  const fail = (problem: string): never => {
    throw new TaskFileError(context.where, problem);
  };
  if (!isObject(raw)) fail("a row must be a JSON object");
  const row = plainValue(raw) as Row;
  const { question: baseQuestion, system } = readQuestion(row, fail);
  const { answers, consumed } = readAnswers(row, fail);
  const choices = readChoices(row, fail);
  const rawAnswer = consumed.length > 0 ? row[consumed[0]] : undefined;

  let answer = answers[0];
  let question = baseQuestion;
  const aliasField = row.aliases;
  if (aliasField !== undefined && aliasField !== null && !Array.isArray(aliasField)) {
    fail(`"aliases" must be a list`);
  }
  const aliasTexts = [...answers.slice(1), ...((aliasField as unknown[] | undefined) ?? []).map(scalarText)];
  if (aliasTexts.some((alias) => alias === null)) fail(`"aliases" must hold text or numbers`);
  if (choices) {
    answer = choiceLetter(answer, choices, rawAnswer, fail);
    question = `${baseQuestion}\n\n${choices.texts.map((text, i) => `(${CHOICE_LETTERS[i]}) ${text}`).join("\n")}`;
  }
  const aliases = [...new Set(aliasTexts as string[])].filter((alias) => alias && alias !== answer);

  const idField = first(row, ID_FIELDS);
  const id = idField ? scalarText(idField.value) : `${context.stem}/${context.position}`;
  if (!id) fail(`"${idField?.field}" must be a non-empty string or number`);
  const familyField = first(row, FAMILY_FIELDS);
  const family = familyField ? scalarText(familyField.value) || context.stem : context.stem;
  const systemField = first(row, SYSTEM_FIELDS);
  const systemPrompt = systemField ? systemField.value : system;
  if (systemPrompt !== undefined && typeof systemPrompt !== "string")
    fail(`"${systemField?.field}" must be text`);

  const used = new Set([
    ...QUESTION_FIELDS,
    ...consumed,
    ...ID_FIELDS,
    ...FAMILY_FIELDS,
    ...SYSTEM_FIELDS,
    ...CHOICE_FIELDS,
    ...CARRIED_FIELDS,
    "aliases",
    "metadata",
  ]);
  // LiveCodeBench ships `metadata` as JSON text (`{"func_name": …}`).
  if (typeof row.metadata === "string" && /^\s*\{/.test(row.metadata)) {
    try {
      row.metadata = JSON.parse(row.metadata);
    } catch (error) {
      // Not JSON after all: the object check below rejects it with the field's name.
      if (!(error instanceof SyntaxError)) throw error;
    }
  }
  if (row.metadata !== undefined && row.metadata !== null && !isObject(row.metadata)) {
    fail(`"metadata" must be an object`);
  }
  const metadata: Record<string, unknown> = { ...((row.metadata as Row | undefined) ?? {}) };
  for (const [key, value] of Object.entries(row)) {
    if (!used.has(key) && value !== null && value !== undefined) metadata[key] = value;
  }
  if (choices) metadata.choices = choices.texts;

  return {
    id: id as string,
    question,
    answer,
    ...(aliases.length > 0 ? { aliases } : {}),
    family,
    ...readCarried(row, fail),
    ...(systemPrompt ? { systemPrompt: systemPrompt as string } : {}),
    ...(Object.keys(metadata).length > 0 ? { metadata } : {}),
  };
}
