/**
 * Sub-agents as callable functions. The orchestrator sees each only as a tool (name, description,
 * argument schema); behind it is a scripted worker over the task's world that uses the world's own
 * tools (BM25 `search`, the `calc` parser) and has a configurable competence: every step it takes
 * (one hop of a lookup, one sum) goes wrong with probability `errorRate`, half the time visibly
 * (`error : sub agent failed`, status `error`) and half the time silently (a wrong value that
 * looks fine, status `corrupted`). Failures are data: a call never throws.
 *
 * - `searcher`: answers a lookup (`population of capital of ruritania`), hop by hop. A hop on an
 *   entity carrying adversarial content returns both values (`4213 or 4381`, order random) when it
 *   is the last hop, and silently takes the first one when it is an inner hop.
 * - `verifier`: answers a one-hop lookup by cross-checking the sources, so a decoy never fools it.
 * - `calculator`: adds numbers (`4213 + 118`) with the calc tool.
 * - `solver`: a single agent doing everything: the whole question, every lookup and the sum, with
 *   no cross-checking (picks the first of conflicting values). Low-degree delegation hands it the
 *   question; the single-agent baseline is this worker on its own.
 *
 * A call's question is either a reference (`part 2 step 1`, `part 1 + part 2`, `question`;
 * references.ts), resolved against the episode's blackboard, or free text in the question grammar
 * (`population of zenda`, `4213 + 118`). References let a small model orchestrate without copying
 * names and numbers; free text is what a large model would write.
 */
import { z } from "zod";
import { createRng, hashString, mixSeeds, type Rng } from "../core/random.ts";
import { cachedWorld } from "../env/task-set.ts";
import { callTool, worldTools } from "../tools/index.ts";
import type { Task } from "../types/task.ts";
import type { AnyTool, Tool, ToolResult } from "../types/tool.ts";
import { type Attribute, indexWorld, parseDocuments, type WorldIndex } from "../world/index.ts";
import { orchestraMetadata } from "./generate.ts";
import { parseTerms, type Term } from "./question.ts";
import { parseReference, partsOf, type Reference } from "./references.ts";

export const SUB_AGENTS = ["searcher", "verifier", "calculator", "solver"] as const;
export type SubAgentName = (typeof SUB_AGENTS)[number];

/** What the sub-agents can say besides values (all in the orchestrator's vocabulary). */
export const SUB_AGENT_MESSAGES = {
  failed: "error : sub agent failed",
  notALookup: "error : not a lookup",
  notASum: "error : not a sum",
  notFound: "error : not found",
  missingInput: "error : missing input",
} as const;

export const SUB_AGENT_DESCRIPTIONS: Record<SubAgentName, string> = {
  searcher:
    "answers a lookup question (an attribute of an entity, possibly through several hops) with the search tool",
  verifier: "answers a one-hop lookup question by cross-checking sources; not fooled by conflicting content",
  calculator: "adds numbers written as `a + b + c` with the calculator tool",
  solver: "a general agent that answers a whole question on its own with search and calc",
};

/** Named competence levels: the per-step error rate of a sub-agent. */
export const COMPETENCE_LEVELS = { strong: 0.05, weak: 0.3 } as const;
export type CompetenceLevel = keyof typeof COMPETENCE_LEVELS;

export interface SubAgentOptions {
  /** Probability that one step of a sub-agent goes wrong (half visibly, half silently). */
  errorRate: number;
  /** Delay of a call in milliseconds (tests of concurrency; default none). */
  delayMs?: (agent: SubAgentName, question: string) => number;
}

const questionSchema = z.object({ question: z.string().min(1) });
type QuestionArgs = z.infer<typeof questionSchema>;

type StepResult =
  | { ok: true; value: string; silent: boolean; conflict?: [string, string] }
  | { ok: false; content: string };

/** The shared machinery of the workers: the task's world, its decoys, the seeded error draws. */
class Worker {
  readonly index: WorldIndex;
  readonly search: AnyTool;
  readonly calc: AnyTool;
  readonly decoys = new Map<string, string>();
  readonly errorRate: number;

  constructor(task: Task, errorRate: number) {
    this.errorRate = errorRate;
    if (task.worldSeed === undefined)
      throw new Error(`task ${task.id} has no worldSeed: not an orchestra task`);
    const world = cachedWorld(task.worldSeed);
    this.index = indexWorld(world);
    [this.search, this.calc] = worldTools(world);
    for (const node of orchestraMetadata(task)?.graph.nodes ?? []) {
      if (node.kind === "lookup" && node.decoy !== undefined && node.entity !== undefined) {
        this.decoys.set(`${node.entity}|${node.attribute}`, node.decoy);
      }
    }
  }

  /** One hop: `attribute` of the entity named `entity`, with the step's error draw. */
  async hop(attribute: Attribute, entity: string, rng: Rng, crossCheck: boolean): Promise<StepResult> {
    const result = await callTool(this.search, { query: entity });
    const document = parseDocuments(result.content).find((doc) => doc.title === entity);
    const value = document?.facts[attribute];
    if (result.status !== "ok" || value === undefined)
      return { ok: false, content: SUB_AGENT_MESSAGES.notFound };
    const slip = this.slip(rng, value);
    if (slip) return slip;
    const decoy = this.decoys.get(`${entity}|${attribute}`);
    if (decoy !== undefined && !crossCheck) {
      return { ok: true, value, silent: false, conflict: rng.chance(0.5) ? [value, decoy] : [decoy, value] };
    }
    return { ok: true, value, silent: false };
  }

  /** A chain of hops (outermost attribute first); inner conflicts resolve to the first value. */
  async lookup(term: Extract<Term, { entity: string }>, rng: Rng, crossCheck: boolean): Promise<StepResult> {
    let entity = term.entity;
    let silent = false;
    for (let i = term.attributes.length - 1; i >= 0; i--) {
      const step = await this.hop(term.attributes[i], entity, rng, crossCheck);
      if (!step.ok) return step;
      silent ||= step.silent;
      if (i === 0) return { ...step, silent };
      entity = step.conflict ? step.conflict[0] : step.value;
    }
    return { ok: false, content: SUB_AGENT_MESSAGES.notALookup };
  }

  async sum(numbers: string[], rng: Rng): Promise<StepResult> {
    const result = await callTool(this.calc, { expression: numbers.join(" + ") });
    if (result.status !== "ok") return { ok: false, content: result.content };
    return this.slip(rng, result.content) ?? { ok: true, value: result.content, silent: false };
  }

  /** The step's error draw: null (no error), a visible failure, or a silently wrong value. */
  slip(rng: Rng, value: string): StepResult | null {
    if (!rng.chance(this.errorRate)) return null;
    if (rng.chance(0.5)) return { ok: false, content: SUB_AGENT_MESSAGES.failed };
    return { ok: true, value: this.wrongValue(value, rng), silent: true };
  }

  wrongValue(value: string, rng: Rng): string {
    if (/^\d+$/.test(value)) {
      const n = Number(value);
      return String(
        n + (rng.chance(0.5) || n < 10 ? 1 : -1) * rng.range(1, Math.max(1, Math.round(n * 0.1))),
      );
    }
    const entity = this.index.byName.get(value);
    const others = this.index.world.entities.filter((e) => e.type === entity?.type && e.name !== value);
    return others.length > 0 ? rng.pick(others).name : value;
  }
}

function resultOf(step: StepResult): ToolResult {
  if (!step.ok) return { status: "error", content: step.content, injected: false };
  const content = step.conflict ? `${step.conflict[0]} or ${step.conflict[1]}` : step.value;
  return { status: step.silent ? "corrupted" : "ok", content, injected: false };
}

const isLookup = (term: Term): term is Extract<Term, { entity: string }> =>
  "entity" in term && term.attributes.length > 0;

/** Solves a parsed question end to end as one worker (the single agent). */
export async function solveQuestion(worker: Worker, question: string, rng: Rng): Promise<ToolResult> {
  const terms = parseTerms(question);
  if (!terms) return resultOf({ ok: false, content: SUB_AGENT_MESSAGES.notALookup });
  const values: string[] = [];
  let silent = false;
  for (const term of terms) {
    if (!isLookup(term)) {
      if (!("number" in term)) return resultOf({ ok: false, content: SUB_AGENT_MESSAGES.notALookup });
      values.push(term.number);
      continue;
    }
    const step = await worker.lookup(term, rng, false);
    if (!step.ok) return resultOf(step);
    silent ||= step.silent;
    values.push(step.conflict ? step.conflict[0] : step.value);
  }
  if (values.length === 1) return resultOf({ ok: true, value: values[0], silent });
  const total = await worker.sum(values, rng);
  return resultOf(total.ok ? { ...total, silent: silent || total.silent } : total);
}

/** What the sub-agents of one episode found, by part and by step (references.ts). */
interface Blackboard {
  parts: Map<number, string>;
  steps: Map<string, string>;
}

/**
 * A lookup by reference: the whole chain of a part, or one step whose entity is the question's
 * (step 1) or the blackboard's value of the step before. Writes what it finds to the blackboard.
 */
async function lookupReference(
  worker: Worker,
  graph: ReturnType<typeof orchestraGraph>,
  board: Blackboard,
  ref: Extract<Reference, { kind: "part" }>,
  rng: Rng,
  options: { crossCheck: boolean; oneHop: boolean },
): Promise<ToolResult> {
  const chain = graph ? partsOf(graph)[ref.part - 1] : undefined;
  if (!graph || !chain || (ref.step !== undefined && ref.step > chain.length)) {
    return resultOf({ ok: false, content: SUB_AGENT_MESSAGES.notALookup });
  }
  const node = (id: number) => graph.nodes[id] as Extract<(typeof graph.nodes)[number], { kind: "lookup" }>;
  const first = ref.step ?? 1;
  const last = ref.step ?? chain.length;
  if (options.oneHop && first !== last)
    return resultOf({ ok: false, content: SUB_AGENT_MESSAGES.notALookup });
  const entity = first === 1 ? node(chain[0]).entity : board.steps.get(`${ref.part}.${first - 1}`);
  if (entity === undefined) return resultOf({ ok: false, content: SUB_AGENT_MESSAGES.missingInput });
  const term = {
    attributes: chain
      .slice(first - 1, last)
      .map((id) => node(id).attribute)
      .reverse(),
    entity,
  };
  const step = await worker.lookup(term, rng, options.crossCheck);
  if (step.ok) {
    const value = step.conflict ? step.conflict[0] : step.value;
    board.steps.set(`${ref.part}.${last}`, value);
    if (last === chain.length) board.parts.set(ref.part, value);
  }
  return resultOf(step);
}

function orchestraGraph(task: Task) {
  return orchestraMetadata(task)?.graph;
}

/**
 * The sub-agent tools of one episode of `task` (errors drawn from `seed`). A call's question is a
 * reference (references.ts) or free text in the question grammar.
 */
export function createSubAgents(task: Task, seed: number, options: SubAgentOptions): Tool<QuestionArgs>[] {
  const worker = new Worker(task, options.errorRate);
  const graph = orchestraGraph(task);
  const board: Blackboard = { parts: new Map(), steps: new Map() };
  const base = createRng(mixSeeds(seed, hashString(task.id)));
  const make = (
    name: SubAgentName,
    run: (question: string, rng: Rng) => Promise<ToolResult>,
  ): Tool<QuestionArgs> => {
    let calls = 0;
    return {
      name,
      description: SUB_AGENT_DESCRIPTIONS[name],
      schema: questionSchema,
      textArgument: "question",
      async call({ question }) {
        // Each call draws from its own stream: concurrent calls cannot shift each other's draws.
        const rng = base.fork(`${name}/${calls++}`);
        const delay = options.delayMs?.(name, question) ?? 0;
        if (delay > 0) await new Promise((resolve) => setTimeout(resolve, delay));
        return run(question, rng);
      },
    };
  };
  const notALookup = () => resultOf({ ok: false, content: SUB_AGENT_MESSAGES.notALookup });
  return [
    make("searcher", async (question, rng) => {
      const ref = parseReference(question);
      if (ref?.kind === "part")
        return lookupReference(worker, graph, board, ref, rng, { crossCheck: false, oneHop: false });
      const terms = ref ? null : parseTerms(question);
      const term = terms?.length === 1 ? terms[0] : undefined;
      if (!term || !isLookup(term)) return notALookup();
      return resultOf(await worker.lookup(term, rng, false));
    }),
    make("verifier", async (question, rng) => {
      const ref = parseReference(question);
      if (ref?.kind === "part")
        return lookupReference(worker, graph, board, ref, rng, { crossCheck: true, oneHop: true });
      const terms = ref ? null : parseTerms(question);
      const term = terms?.length === 1 ? terms[0] : undefined;
      if (!term || !isLookup(term) || term.attributes.length !== 1) return notALookup();
      return resultOf(await worker.lookup(term, rng, true));
    }),
    make("calculator", async (question, rng) => {
      const numbers: string[] = [];
      for (const part of question.split(/\+|\bplus\b/)) {
        const ref = parseReference(part);
        const text = part.trim();
        if (ref?.kind === "part" && ref.step === undefined) {
          const value = board.parts.get(ref.part);
          if (value === undefined) return resultOf({ ok: false, content: SUB_AGENT_MESSAGES.missingInput });
          numbers.push(value);
        } else if (/^\d+$/.test(text)) numbers.push(text);
        else return resultOf({ ok: false, content: SUB_AGENT_MESSAGES.notASum });
      }
      if (numbers.length < 2 || !numbers.every((n) => /^\d+$/.test(n))) {
        return resultOf({ ok: false, content: SUB_AGENT_MESSAGES.notASum });
      }
      return resultOf(await worker.sum(numbers, rng));
    }),
    make("solver", (question, rng) =>
      solveQuestion(worker, parseReference(question)?.kind === "question" ? task.question : question, rng),
    ),
  ];
}

/** The single-agent baseline: the solver worker on the whole question, no orchestrator. */
export async function singleAgentAnswer(task: Task, seed: number, errorRate: number): Promise<ToolResult> {
  const solver = createSubAgents(task, seed, { errorRate }).find((agent) => agent.name === "solver")!;
  return callTool(solver, { question: task.question });
}
