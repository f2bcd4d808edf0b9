/**
 * A task: a question with an exactly verifiable answer. World tasks carry their family, hop
 * count and the gold plan an optimal agent follows; tasks loaded from files carry only what the
 * file gives. Everything here is plain JSON so tasks travel through the store and exports.
 */

/** Task families of the embedded world, in increasing depth. */
export const TASK_FAMILIES = ["lookup", "bridge", "arithmetic", "chain", "distractor"] as const;
export type TaskFamily = (typeof TASK_FAMILIES)[number];

/** One step of a gold solution: what an optimal agent does next. */
export type GoldStep =
  | { type: "search"; query: string /** id of the entity whose document must come back */; entity: string }
  | { type: "calc"; expression: string; result: string }
  | { type: "answer"; answer: string };

export interface Task {
  /** Stable id, unique across worlds and splits, e.g. `w17/bridge/capital-pop/3`. */
  id: string;
  question: string;
  /** Gold answer, normalised (numbers as plain digits). */
  answer: string;
  /** Other accepted answers (file tasks with aliases). */
  aliases?: string[];
  /** Family in the embedded world, or a free label for file tasks. */
  family: TaskFamily | string;
  /** Finer template name within the family, e.g. `sum3`. */
  template?: string;
  hops?: number;
  /** World seed the task was generated in (the tools must be built over the same world). */
  worldSeed?: number;
  split?: "train" | "test";
  /** The optimal solution: searches, calcs and the answer, in order. */
  gold?: GoldStep[];
  /** Entity ids whose documents hold facts the task needs (gold evidence for turn rewards). */
  evidence?: string[];
  systemPrompt?: string;
  metadata?: Record<string, unknown>;
}
