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

export const SUB_AGENTS = ["searcher", "verifier", "calculator", "solver"] as const;
export type SubAgentName = (typeof SUB_AGENTS)[number];

/** What the sub-agents can say besides values (all in the orchestrator's vocabulary). */
export const SUB_AGENT_MESSAGES = {
  failed: "error : sub agent failed",
  notALookup: "error : not a lookup",
  notASum: "error : not a sum",
  notFound: "error : not found",
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

/** The sub-agent tools of one episode of `task` (errors drawn from `seed`). */
export function createSubAgents(task: Task, seed: number, options: SubAgentOptions): Tool<QuestionArgs>[] {
  const worker = new Worker(task, options.errorRate);
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
  return [
    make("searcher", async (question, rng) => {
      const terms = parseTerms(question);
      if (!terms || terms.length !== 1 || !isLookup(terms[0]))
        return resultOf({ ok: false, content: SUB_AGENT_MESSAGES.notALookup });
      return resultOf(await worker.lookup(terms[0], rng, false));
    }),
    make("verifier", async (question, rng) => {
      const terms = parseTerms(question);
      const term = terms?.[0];
      if (!terms || terms.length !== 1 || !term || !isLookup(term) || term.attributes.length !== 1) {
        return resultOf({ ok: false, content: SUB_AGENT_MESSAGES.notALookup });
      }
      return resultOf(await worker.lookup(term, rng, true));
    }),
    make("calculator", async (question, rng) => {
      const terms = parseTerms(question);
      if (!terms || terms.length < 2 || !terms.every((term) => "number" in term)) {
        return resultOf({ ok: false, content: SUB_AGENT_MESSAGES.notASum });
      }
      return resultOf(
        await worker.sum(
          terms.map((term) => (term as { number: string }).number),
          rng,
        ),
      );
    }),
    make("solver", (question, rng) => solveQuestion(worker, question, rng)),
  ];
}

/** The single-agent baseline: the solver worker on the whole question, no orchestrator. */
export async function singleAgentAnswer(task: Task, seed: number, errorRate: number): Promise<ToolResult> {
  const solver = createSubAgents(task, seed, { errorRate }).find((agent) => agent.name === "solver")!;
  return callTool(solver, { question: task.question });
}
