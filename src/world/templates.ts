/**
 * The task templates of the embedded world, by family. A template maps an index in its index space
 * (start entities, or pairs and triples of them) to one task, or to null when that index makes no
 * valid task (a start entity with a near-duplicate outside the distractor family, a chain that
 * visits an entity twice, two equal numbers). Indices are stable, so task ids are too.
 *
 * Every task also carries its plan (`TaskPlan`): which entity to look up first and which attribute
 * to read from each document. The gold steps follow the plan in the real world; a scripted agent
 * can follow it against whatever documents its searches return. The templates themselves are in
 * catalogue.ts.
 */
import { canonicalText } from "../env/protocol.ts";
import type { GoldStep, TaskFamily } from "../types/task.ts";
import {
  type Attribute,
  type Entity,
  type EntityType,
  isLinkAttribute,
  type NumberAttribute,
} from "./types.ts";
import { entitiesOfType, entityById, type WorldIndex } from "./world-index.ts";

/** One lookup chain: search `start`, read `reads[0]`, search what it names, read `reads[1]`, … */
export interface PlanChain {
  start: string;
  type: EntityType;
  reads: Attribute[];
}

/** How a task is solved: chains in question order, their final numbers combined. */
export interface TaskPlan {
  chains: PlanChain[];
  /** `none`: one chain, its number is the answer; `diff`: first minus second; `sum`: all added. */
  combine: "none" | "diff" | "sum";
}

export interface TemplateDraft {
  question: string;
  answer: number;
  gold: GoldStep[];
  evidence: string[];
  plan: TaskPlan;
}

export interface TaskTemplate {
  family: TaskFamily;
  name: string;
  hops: number;
  /** Number of indices; `build` returns null for indices that make no valid task. */
  size(index: WorldIndex): number;
  build(index: WorldIndex, i: number): TemplateDraft | null;
  /** The question with each entity name replaced by `@` (for the vocabulary). */
  pattern: string;
}

export function readAttribute(entity: Entity, attribute: Attribute): string | number | undefined {
  const value = (entity as unknown as Record<string, unknown>)[attribute];
  return typeof value === "string" || typeof value === "number" ? value : undefined;
}

const PLACEHOLDER = "@";

// ---------------------------------------------------------------------------------------------
// Path templates: start entity → link → link → … → number.

export interface PathSpec {
  family: TaskFamily;
  name: string;
  start: EntityType;
  reads: Attribute[];
  question: (name: string) => string;
}

export function pathTemplate(spec: PathSpec): TaskTemplate {
  const last = spec.reads[spec.reads.length - 1];
  if (isLinkAttribute(last) || spec.reads.slice(0, -1).some((read) => !isLinkAttribute(read))) {
    throw new Error(`template ${spec.name}: reads must be links ending in a number`);
  }
  const distractor = spec.family === "distractor";
  return {
    family: spec.family,
    name: spec.name,
    hops: spec.reads.length,
    pattern: canonicalText(spec.question(PLACEHOLDER)),
    size: (index) => entitiesOfType(index, spec.start).length,
    build(index, i) {
      const start = entitiesOfType(index, spec.start)[i];
      if (!start || index.twins.has(start.id) !== distractor) return null;
      const path = [start];
      for (const read of spec.reads.slice(0, -1)) {
        const next = entityById(index, String(readAttribute(path[path.length - 1], read)));
        if (path.some((entity) => entity.id === next.id)) return null; // a shorter solution exists
        path.push(next);
      }
      const answer = Number(readAttribute(path[path.length - 1], last));
      return {
        question: canonicalText(spec.question(start.name)),
        answer,
        gold: [
          ...path.map((entity): GoldStep => ({ type: "search", query: entity.name, entity: entity.id })),
          { type: "answer", answer: String(answer) },
        ],
        evidence: path.map((entity) => entity.id),
        plan: { chains: [{ start: start.name, type: spec.start, reads: spec.reads }], combine: "none" },
      };
    },
  };
}

// ---------------------------------------------------------------------------------------------
// Arithmetic templates: two or three lookups of the same attribute, combined with calc.

export interface ArithmeticVariant {
  type: EntityType;
  attribute: NumberAttribute;
  question: (names: string[]) => string;
}

/** The k-th combination (lexicographic) of `size` out of n indices. */
export function unrankCombination(n: number, size: number, k: number): number[] {
  const out: number[] = [];
  let next = 0;
  for (let remaining = size; remaining > 0; remaining--) {
    for (;;) {
      const count = binomial(n - next - 1, remaining - 1);
      if (k < count) break;
      k -= count;
      next++;
    }
    out.push(next++);
  }
  return out;
}

export function binomial(n: number, k: number): number {
  if (k < 0 || k > n) return 0;
  let result = 1;
  for (let i = 1; i <= k; i++) result = (result * (n - k + i)) / i;
  return Math.round(result);
}

export function arithmeticTemplate(
  name: "diff2" | "sum3",
  operands: number,
  variants: ArithmeticVariant[],
): TaskTemplate {
  const spaces = (index: WorldIndex) =>
    variants.map((v) => binomial(entitiesOfType(index, v.type).length, operands));
  return {
    family: "arithmetic",
    name,
    hops: operands,
    pattern: variants.map((v) => canonicalText(v.question(new Array(operands).fill(PLACEHOLDER)))).join(" "),
    size: (index) => spaces(index).reduce((a, b) => a + b, 0),
    build(index, i) {
      let k = i;
      const sizes = spaces(index);
      let v = 0;
      while (v < variants.length && k >= sizes[v]) k -= sizes[v++];
      if (v === variants.length || k < 0) return null;
      const variant = variants[v];
      const pool = entitiesOfType(index, variant.type);
      let chosen = unrankCombination(pool.length, operands, k).map((j) => pool[j]);
      if (chosen.some((entity) => index.twins.has(entity.id))) return null;
      const value = (entity: Entity) => Number(readAttribute(entity, variant.attribute));
      if (name === "diff2") {
        if (value(chosen[0]) === value(chosen[1])) return null;
        // Larger value first, so the answer (first minus second, in question order) is positive.
        chosen = [...chosen].sort((a, b) => value(b) - value(a));
      }
      const values = chosen.map(value);
      const answer = name === "diff2" ? values[0] - values[1] : values.reduce((a, b) => a + b, 0);
      const expression = values.join(name === "diff2" ? " - " : " + ");
      return {
        question: canonicalText(variant.question(chosen.map((entity) => entity.name))),
        answer,
        gold: [
          ...chosen.map((entity): GoldStep => ({ type: "search", query: entity.name, entity: entity.id })),
          { type: "calc", expression, result: String(answer) },
          { type: "answer", answer: String(answer) },
        ],
        evidence: chosen.map((entity) => entity.id),
        plan: {
          chains: chosen.map((entity) => ({
            start: entity.name,
            type: variant.type,
            reads: [variant.attribute],
          })),
          combine: name === "diff2" ? "diff" : "sum",
        },
      };
    },
  };
}
