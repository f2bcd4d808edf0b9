/**
 * verl's multi-turn SFT parquet: one row per trajectory with a `messages` column (the chat
 * messages, OpenAI format: `role`, `content`, assistant `tool_calls: [{ id, type: "function",
 * function: { name, arguments } }]`, `tool` messages with `tool_call_id`) and a `tools` column
 * (OpenAI function tools: `{ type: "function", function: { name, description, parameters } }`), as
 * read by verl's `MultiTurnSFTDataset` (verl/utils/dataset/multiturn_sft_dataset.py, v0.7.1 to
 * 0.10: `pd.read_parquet(dtype_backend="pyarrow")`, `messages_key` default "messages",
 * `tools_key` default "tools", both passed to `apply_chat_template(messages, tools=...)` without
 * decoding). Assistant messages are what verl's loss covers, as our SFT does. Extra columns `id`,
 * `task_id`, `family` carry provenance; verl ignores them.
 *
 * `messages` is real nested parquet (LIST of STRUCT, src/verl/parquet.ts). Two things cannot be:
 * the `tools` list (the parameter structs of `search` and `calc` would merge, so each would show the
 * model the other's fields as nulls) and each call's `function.arguments` (the arguments of
 * different tools merge the same way). Both are stored as JSON text, each exactly as it was, and
 * `agentrl_sft_dataset.py` (src/verl/templates, written beside the parquet) is the
 * `MultiTurnSFTDataset` subclass that decodes them, so the chat template gets one schema per tool
 * and `arguments` as objects (`data.custom_cls.path=<it> data.custom_cls.name=AgentrlMultiTurnSFTDataset`).
 * Without it, stock verl hands the template the `tools` text where it expects a list of tool
 * dicts, so the class is required, not optional.
 */
import { copyFileSync, mkdirSync, writeFileSync } from "node:fs";
import { dirname, join } from "node:path";
import {
  deriveToolSpecs,
  directoryRun,
  openRunDirectory,
  toolSpecsToOpenAi,
  trajectoryMessages,
} from "../store/index.ts";
import type { ToolSpec } from "../types/policy.ts";
import type { Trajectory } from "../types/trajectory.ts";
import { jsonText, nestedParquetBuffer } from "../verl/parquet.ts";

/** The dataset class that decodes the JSON columns, and the name it is written under. */
export const SFT_DATASET_TEMPLATE = new URL("../verl/templates/agentrl_sft_dataset.py", import.meta.url);
export const SFT_DATASET_FILE = "agentrl_sft_dataset.py";

/** One verl row of a trajectory. */
export function verlRow(
  trajectory: Trajectory,
  tools: readonly ToolSpec[],
  systemPrompt?: string,
): Record<string, unknown> {
  return {
    id: trajectory.id,
    task_id: trajectory.taskId,
    family: trajectory.family,
    messages: trajectoryMessages(trajectory, systemPrompt),
    tools: jsonText(toolSpecsToOpenAi(tools)),
  };
}

/** The bytes of a verl multi-turn SFT parquet file holding `rows` (from `verlRow`). */
export function verlParquetBuffer(rows: readonly Record<string, unknown>[]): ArrayBuffer {
  return nestedParquetBuffer(rows);
}

export interface VerlExportOptions {
  correctOnly?: boolean;
  systemPrompt?: string;
  /** Overrides the run's recorded tool specs. */
  tools?: readonly ToolSpec[];
}

/**
 * Writes a dataset (run) directory as verl multi-turn SFT parquet, with `agentrl_sft_dataset.py`
 * beside it; returns the row count, the tools and where the dataset class went.
 */
export function exportVerlParquet(
  directory: string,
  path: string,
  options: VerlExportOptions = {},
): {
  written: number;
  tools: ToolSpec[];
  datasetClass: string;
} {
  const store = openRunDirectory(directory, { readOnly: true });
  try {
    const run = directoryRun(store, directory);
    const trajectories = store.trajectories(run.id, options.correctOnly ? { correct: true } : {});
    const tools = [...(options.tools ?? store.toolSpecs(run.id) ?? deriveToolSpecs(trajectories))];
    const rows = trajectories.map((trajectory) => verlRow(trajectory, tools, options.systemPrompt));
    mkdirSync(dirname(path), { recursive: true });
    writeFileSync(path, new Uint8Array(verlParquetBuffer(rows)));
    const datasetClass = join(dirname(path), SFT_DATASET_FILE);
    copyFileSync(SFT_DATASET_TEMPLATE, datasetClass);
    return { written: rows.length, tools, datasetClass };
  } finally {
    store.close();
  }
}
