/**
 * OpenAI chat JSONL files to and from a run's store: export streams a run's trajectories (optionally
 * only the correct ones) through `trajectoryToChat`; import reads a file line by line into a run.
 *
 * Tool specs: a run records the specs its policy saw with `store.setToolSpecs`. When a run has
 * none, the export derives them from the tool calls in its trajectories: one function per tool
 * name, empty description, an object schema with the argument names seen (typed by the first value
 * seen), `textArgument` the first of them. Import merges the file's tools into the run's specs.
 */
import type { ToolSpec } from "../types/policy.ts";
import type { Trajectory } from "../types/trajectory.ts";
import { JsonlError, readJsonl, writeJsonl } from "./jsonl.ts";
import { chatLineTools, chatToTrajectory, trajectoryToChat } from "./openai-chat.ts";
import type { Store } from "./store.ts";
import type { TrajectoryFilter } from "./types.ts";

/** Specs for the tools called in `trajectories`, for runs that recorded none (see the file comment). */
export function deriveToolSpecs(trajectories: Iterable<Trajectory>): ToolSpec[] {
  const argumentsOf = new Map<string, Map<string, string>>();
  for (const trajectory of trajectories) {
    for (const turn of trajectory.turns) {
      if (turn.action.type !== "tool-call") continue;
      const seen = argumentsOf.get(turn.action.tool) ?? new Map<string, string>();
      argumentsOf.set(turn.action.tool, seen);
      for (const [name, value] of Object.entries(turn.action.arguments)) {
        if (!seen.has(name)) seen.set(name, jsonSchemaType(value));
      }
    }
  }
  return [...argumentsOf].map(([name, seen]) => ({
    name,
    description: "",
    parameters: {
      type: "object",
      properties: Object.fromEntries([...seen].map(([argument, type]) => [argument, { type }])),
    },
    textArgument: [...seen.keys()][0] ?? "input",
  }));
}

function jsonSchemaType(value: unknown): string {
  if (value === null) return "null";
  if (Array.isArray(value)) return "array";
  if (typeof value === "number") return Number.isInteger(value) ? "integer" : "number";
  return typeof value === "object" ? "object" : typeof value;
}

export interface ExportOptions {
  /** Only trajectories with `correct: true`. */
  correctOnly?: boolean;
  /** Carry the full trajectory under `agentrl` (default true); false for OpenAI's fine-tuning API. */
  lossless?: boolean;
  /** Further filters (family, step, ...). */
  filter?: TrajectoryFilter;
  /** System message for every record. */
  systemPrompt?: string;
  /** Overrides the run's recorded tool specs. */
  tools?: readonly ToolSpec[];
}

export interface ExportSummary {
  /** Lines written. */
  written: number;
  tools: ToolSpec[];
  /** Where the tool specs came from. */
  toolsFrom: "option" | "run" | "derived";
}

export async function exportOpenAiJsonl(
  store: Store,
  runId: string,
  path: string,
  options: ExportOptions = {},
): Promise<ExportSummary> {
  store.requireRun(runId);
  const filter: TrajectoryFilter = { ...options.filter, ...(options.correctOnly ? { correct: true } : {}) };
  const stored = options.tools ?? store.toolSpecs(runId);
  const tools = stored
    ? [...stored]
    : deriveToolSpecs(Array.from(store.iterateTrajectories(runId, filter), (item) => item.trajectory));
  const toolsFrom = options.tools ? "option" : stored ? "run" : "derived";
  function* lines() {
    for (const item of store.iterateTrajectories(runId, filter)) {
      yield trajectoryToChat(item.trajectory, tools, {
        systemPrompt: options.systemPrompt,
        lossless: options.lossless,
      });
    }
  }
  const written = await writeJsonl(path, lines());
  return { written, tools, toolsFrom };
}

export interface ImportSummary {
  /** Non-blank lines read. */
  lines: number;
  /** Trajectories added to the run. */
  imported: number;
  /** Lines whose trajectory id the run already held (skipped). */
  duplicates: number;
  /** Lines carrying a lossless `agentrl` record (imported exactly). */
  lossless: number;
  /** Tool specs of the run after the import. */
  tools: number;
}

/**
 * Adds every line of `path` to the run (key: the trajectory id, so re-importing a file is a no-op),
 * all or nothing: every line is read and checked first, then the trajectories and tool specs are
 * written in one transaction. A malformed line throws a `JsonlError` naming the line, with nothing
 * written; a kill during the write leaves the run as it was.
 */
export async function importOpenAiJsonl(store: Store, runId: string, path: string): Promise<ImportSummary> {
  store.requireRun(runId);
  const summary: ImportSummary = { lines: 0, imported: 0, duplicates: 0, lossless: 0, tools: 0 };
  const tools = new Map((store.toolSpecs(runId) ?? []).map((tool) => [tool.name, tool]));
  const trajectories: Trajectory[] = [];
  for await (const row of readJsonl(path)) {
    summary.lines++;
    try {
      trajectories.push(chatToTrajectory(row.value));
      for (const tool of chatLineTools(row.value)) if (!tools.has(tool.name)) tools.set(tool.name, tool);
    } catch (error) {
      throw new JsonlError(path, row.line, (error as Error).message);
    }
    if ((row.value as { agentrl?: unknown }).agentrl !== undefined) summary.lossless++;
  }
  store.transaction(() => {
    summary.imported = store.addTrajectories(runId, trajectories);
    if (tools.size > 0) store.setToolSpecs(runId, [...tools.values()]);
  });
  summary.duplicates = trajectories.length - summary.imported;
  summary.tools = tools.size;
  return summary;
}
