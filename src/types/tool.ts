/**
 * The tool contract. A tool failure is data (a result with a status), never an exception that
 * escapes an episode: the MCP convention (`isError`) generalised to the failure modes the seed
 * cares about, so credit assignment can tell a tool's failure from the policy's mistake.
 */
import type { z } from "zod";
import type { Failure } from "./failure.ts";

/**
 * `ok`: the tool did what was asked. `error`: it failed with a message. `empty`: it ran and
 * returned nothing. `timeout`: it did not answer in time. `corrupted`: it returned a wrong or
 * irrelevant result (only the noise wrapper knows this; to the policy it looks like `ok`).
 */
export const TOOL_STATUSES = ["ok", "error", "empty", "timeout", "corrupted"] as const;
export type ToolStatus = (typeof TOOL_STATUSES)[number];

export interface ToolResult {
  status: ToolStatus;
  /** What the policy observes. */
  content: string;
  /** True when the noise wrapper injected this failure (the tool itself did not fail). */
  injected: boolean;
  /**
   * Set on a failed call that was not injected: `tool` for a real tool error the policy must cope
   * with, `infra` when the tool's machinery broke (a sandbox process died, the tool threw).
   */
  failure?: Failure;
  /** Ids of the documents or entities the result refers to (search), for turn-level rewards. */
  refs?: string[];
  /** Numeric value of a successful calc, for turn-level rewards. */
  value?: number;
  latencyMs?: number;
}

export interface ToolCallOptions {
  signal?: AbortSignal;
  /** Milliseconds before the call is abandoned with status `timeout`. */
  timeoutMs?: number;
  /** Stable name of the call (episode id and turn index): the key fault injection decides on. */
  key?: string;
}

/** A tool a user can implement: name, description, zod argument schema and an async call. */
export interface Tool<Args = Record<string, unknown>> {
  name: string;
  description: string;
  schema: z.ZodType<Args>;
  /** Which argument carries the tagged-protocol payload (`<search> … </search>` → `{query}`). */
  textArgument: string;
  call(args: Args, options?: ToolCallOptions): Promise<ToolResult>;
}

// biome-ignore lint/suspicious/noExplicitAny: a tool set holds tools of different argument types
export type AnyTool = Tool<any>;
