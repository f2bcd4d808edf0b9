/**
 * The `verifier` check: does each task's own verifier accept its gold answer, and reject answers
 * that carry no solution?
 *
 * - Gold: the answer and every alias must be accepted, in each form a model would write it
 *   (`goldForms`: for the math verifier also inside `\boxed{}`, where a malformed `\frac{3}{`
 *   cannot be read back; a bare gold always equals itself as a string). A code task's gold is its reference
 *   solution (`metadata.solutions` as APPS ships it, or `solution` / `canonical_solution` /
 *   `reference_solution`), run against the task's own tests; a code task without one is listed as
 *   unchecked, not broken. A task whose gold is rejected (a malformed `\frac{3}{`, a reference that
 *   fails its own tests) is broken: RL on it rewards wrong answers or none.
 * - Degenerate answers must be rejected: empty, the question copied, the gold with one digit or
 *   word changed, and a spray of many candidate answers with the gold among them (a verifier that
 *   looks for the gold anywhere in the text pays the spray). Code tasks get the first two only.
 * A verifier that throws on an answer is reported as such (its message kept), never as a pass.
 */
import type { Task } from "../types/task.ts";
import { taskCodeTests } from "../verify/code-tests.ts";
import type { Change, DoctorCheck } from "./types.ts";

export type Verify = (task: Task, answer: string | null) => boolean | Promise<boolean>;

export const DEGENERATE_KINDS = ["empty", "question", "altered", "spray"] as const;
export type DegenerateKind = (typeof DEGENERATE_KINDS)[number];

const DEGENERATE_WORDS: Record<DegenerateKind, string> = {
  empty: "an empty answer",
  question: "the question copied as the answer",
  altered: "the gold with one digit or word changed",
  spray: "a spray of candidate answers holding the gold",
};

/** Candidates in a spray (the gold sits in the middle). */
const SPRAY_SIZE = 24;

export interface BrokenTask {
  taskId: string;
  /** The gold (or alias, or reference solution) the verifier rejected, clipped. */
  gold: string;
  reason: string;
}

export interface AcceptedDegenerate {
  taskId: string;
  kind: DegenerateKind;
  answer: string;
}

function clip(text: string, length = 80): string {
  return text.length > length ? `${text.slice(0, length - 1)}…` : text;
}

/** A code task's reference solution as a fenced program, or null when the row ships none. */
export function referenceSolution(task: Task): string | null {
  const metadata = task.metadata ?? {};
  for (const field of ["solutions", "solution", "canonical_solution", "reference_solution"]) {
    let value = metadata[field];
    if (typeof value === "string" && value.trim().startsWith("[")) {
      try {
        value = JSON.parse(value);
      } catch {
        // a program that happens to start with "[" stays a program
      }
    }
    const program = Array.isArray(value) ? value.find((item) => typeof item === "string") : value;
    if (typeof program === "string" && program.trim()) {
      return program.includes("```") ? program : `\`\`\`python\n${program}\n\`\`\``;
    }
  }
  return null;
}

/** The gold with one digit changed (the last, so no leading zero appears), else one word, else null. */
export function alterGold(gold: string): string | null {
  const digits = [...gold.matchAll(/\d/g)];
  if (digits.length > 0) {
    const last = digits[digits.length - 1];
    const index = last.index ?? 0;
    return `${gold.slice(0, index)}${(Number(last[0]) + 1) % 10}${gold.slice(index + 1)}`;
  }
  if (/^[A-Ja-j]$/.test(gold.trim())) {
    const letter = gold.trim().toUpperCase();
    return String.fromCharCode(((letter.charCodeAt(0) - 65 + 1) % 10) + 65);
  }
  const words = gold.split(/(\s+)/);
  const target = words.reduce(
    (best, word, i) => (/\w{2,}/.test(word) && word.length > (words[best]?.length ?? 0) ? i : best),
    -1,
  );
  if (target < 0) return null;
  const reversed = [...words[target]].reverse().join("");
  words[target] = reversed.toLowerCase() !== words[target].toLowerCase() ? reversed : "xylophone";
  return words.join("");
}

/** Many candidate answers with the gold among them: what a "contains the gold" check would pay. */
export function sprayAnswer(gold: string, task: Task): string {
  const candidates: string[] = [];
  const number = Number(gold);
  if (gold.trim() !== "" && Number.isFinite(number)) {
    for (let i = 1; candidates.length < SPRAY_SIZE - 1; i++) {
      candidates.push(String(number + i), String(number - i));
    }
  } else {
    const words = task.question.split(/\W+/).filter((word) => word.length > 2);
    for (let i = 0; candidates.length < SPRAY_SIZE - 1; i++) {
      candidates.push(words.length > 0 ? `${words[i % words.length]} ${i}` : `candidate ${i}`);
    }
  }
  candidates.length = SPRAY_SIZE - 1;
  candidates.splice(Math.floor(SPRAY_SIZE / 2), 0, gold);
  return candidates.join(", ");
}

async function accepts(verify: Verify, task: Task, answer: string): Promise<{ ok: boolean; error?: string }> {
  try {
    return { ok: Boolean(await verify(task, answer)) };
  } catch (error) {
    return { ok: false, error: error instanceof Error ? error.message : String(error) };
  }
}

function listIds(ids: readonly string[], limit = 8): string {
  const shown = ids.slice(0, limit).join(", ");
  return ids.length > limit ? `${shown} and ${ids.length - limit} more` : shown;
}

/** The forms of a gold answer a verifier must accept: the bare answer, and boxed for `math`. */
export function goldForms(verifier: string | undefined): (gold: string) => string[] {
  return verifier === "math" ? (gold) => [gold, `\\boxed{${gold}}`] : (gold) => [gold];
}

export async function checkVerifier(options: {
  tasks: readonly Task[];
  verify: Verify;
  /** The forms each gold is tried in (default: as it is). */
  forms?: (gold: string) => string[];
}): Promise<DoctorCheck> {
  const { tasks, verify } = options;
  const forms = options.forms ?? ((gold: string) => [gold]);
  const broken: BrokenTask[] = [];
  const unchecked: string[] = [];
  const accepted: AcceptedDegenerate[] = [];
  const verifierErrors: string[] = [];
  const tried: Record<DegenerateKind, number> = { empty: 0, question: 0, altered: 0, spray: 0 };
  for (const task of tasks) {
    const code = taskCodeTests(task) !== null;
    const reference = code ? referenceSolution(task) : null;
    if (code && reference === null) unchecked.push(task.id);
    const golds = code
      ? reference === null
        ? []
        : [reference]
      : [task.answer, ...(task.aliases ?? [])].flatMap(forms);
    for (const gold of golds) {
      const verdict = await accepts(verify, task, gold);
      if (verdict.ok) continue;
      broken.push({
        taskId: task.id,
        gold: clip(gold),
        reason: verdict.error
          ? `the verifier threw: ${verdict.error}`
          : code
            ? "the reference solution fails the task's own tests"
            : `its verifier rejects the gold answer "${clip(gold, 40)}"`,
      });
      break;
    }
    const degenerate: [DegenerateKind, string | null][] = [
      ["empty", ""],
      ["question", task.question],
      ...(code
        ? []
        : ([
            ["altered", alterGold(task.answer)],
            ["spray", sprayAnswer(task.answer, task)],
          ] as [DegenerateKind, string | null][])),
    ];
    const golds2 = new Set([task.answer, ...(task.aliases ?? [])].map((gold) => gold.trim().toLowerCase()));
    for (const [kind, answer] of degenerate) {
      if (answer === null || (kind === "altered" && golds2.has(answer.trim().toLowerCase()))) continue;
      tried[kind]++;
      const verdict = await accepts(verify, task, answer);
      if (verdict.error && verifierErrors.length < 3) verifierErrors.push(`${task.id}: ${verdict.error}`);
      if (verdict.ok) accepted.push({ taskId: task.id, kind, answer: clip(answer) });
    }
  }

  const problems: string[] = [];
  const changes: Change[] = [];
  if (broken.length > 0) {
    const ids = broken.map((entry) => entry.taskId);
    problems.push(
      `${broken.length} of ${tasks.length} tasks are broken (${broken[0].reason}${broken.length > 1 ? ", …" : ""}): ${listIds(ids)}`,
    );
    changes.push({
      kind: "fix-tasks",
      text: `fix or drop the broken tasks (their gold answer fails their own verifier): ${listIds(ids)}`,
    });
  }
  const kindsAccepted = DEGENERATE_KINDS.filter((kind) => accepted.some((entry) => entry.kind === kind));
  for (const kind of kindsAccepted) {
    const hits = accepted.filter((entry) => entry.kind === kind);
    problems.push(
      `the verifier accepts ${DEGENERATE_WORDS[kind]} on ${hits.length} of ${tried[kind]} tasks (e.g. ${hits[0].taskId}: "${clip(hits[0].answer, 40)}")`,
    );
  }
  if (kindsAccepted.length > 0) {
    changes.push({
      kind: "fix-tasks",
      text: `fix the verifier: it pays ${kindsAccepted.map((kind) => DEGENERATE_WORDS[kind]).join(", ")}, which RL will learn to write`,
    });
  }
  const ok = problems.length === 0;
  const uncheckedNote =
    unchecked.length > 0
      ? ` ${unchecked.length} code tasks ship no reference solution, so their gold was not checked (${listIds(unchecked, 4)}).`
      : "";
  const detail =
    (ok
      ? `${tasks.length - unchecked.length} of ${tasks.length} tasks checked: every gold answer (and alias) is accepted by its verifier, and empty, copied-question, one-change and spray answers are all rejected.`
      : `${problems.join("; ")}.`) + uncheckedNote;
  return {
    id: "verifier",
    ok,
    detail,
    changes,
    data: {
      tasks: tasks.length,
      broken,
      brokenIds: broken.map((entry) => entry.taskId),
      unchecked,
      degenerateTried: tried,
      degenerateAccepted: accepted,
      ...(verifierErrors.length > 0 ? { verifierErrors } : {}),
    },
  };
}
