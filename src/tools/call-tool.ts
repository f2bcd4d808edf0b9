/**
 * `callTool`: the one safe way to call a tool. Arguments are validated with the tool's zod schema,
 * the call is cut off by `timeoutMs` and by the abort signal, and anything the tool throws becomes
 * an `error` result: a tool failure is data in the trajectory, never an exception escaping a
 * rollout (the MCP `isError` convention).
 */
import type { z } from "zod";
import { canonicalText } from "../env/protocol.ts";
import { ClassifiedError, type Failure } from "../types/failure.ts";
import { type AnyTool, TOOL_STATUSES, type ToolCallOptions, type ToolResult } from "../types/tool.ts";
import { argumentMessage, TOOL_MESSAGES } from "./messages.ts";

/** An error or timeout result made by the caller (not injected by the noise wrapper). */
export function failure(status: "error" | "timeout" | "empty", content: string): ToolResult {
  return { status, content, injected: false };
}

/**
 * Canonical message naming the first problem of a failed validation of `args`, e.g.
 * `error : missing argument query` or `error : invalid argument query`. Argument names pass through
 * `canonicalText`; zod's own English text is not used because observations must stay in the
 * tokenizer's vocabulary.
 */
export function describeArgumentError(error: z.ZodError, args: unknown): string {
  const issue = error.issues[0];
  if (!issue || issue.path.length === 0) return argumentMessage("invalid", "");
  const name = canonicalText(issue.path.map(String).join(" "));
  return argumentMessage(valueAt(args, issue.path) === undefined ? "missing" : "invalid", name);
}

function valueAt(value: unknown, path: readonly PropertyKey[]): unknown {
  let current = value;
  for (const key of path) {
    if (typeof current !== "object" || current === null) return undefined;
    current = (current as Record<PropertyKey, unknown>)[key];
  }
  return current;
}

/**
 * Calls `tool` with untrusted `args`. Never throws and never rejects. The result carries
 * `latencyMs` (wall time of the whole call, validation included).
 *
 * - invalid arguments → `error` with `error : invalid argument <name>` (the tool is not called);
 * - no answer within `options.timeoutMs` → `timeout` with `error : timed out`;
 * - `options.signal` aborted (before or during the call) → `error` with `error : cancelled`;
 * - the tool throws or returns something that is not a result → `error` with `error : tool failed`,
 *   labelled `failure`: the class a `ClassifiedError` names (`infra` when a sandbox died), else
 *   `tool` (`tool-threw`, `tool-bad-result`). It is never labelled `injected`: that is the noise
 *   wrapper's label alone.
 *
 * The tool receives a signal that fires on timeout or abort, so a well-behaved tool can stop work;
 * one that ignores it is abandoned (its late answer is dropped).
 */
export async function callTool(
  tool: AnyTool,
  args: unknown,
  options: ToolCallOptions = {},
): Promise<ToolResult> {
  const start = performance.now();
  const result = await callUntimed(tool, args, options);
  return { ...result, latencyMs: performance.now() - start };
}

async function callUntimed(tool: AnyTool, args: unknown, options: ToolCallOptions): Promise<ToolResult> {
  if (options.signal?.aborted) return failure("error", TOOL_MESSAGES.cancelled);
  let parsed: z.ZodSafeParseResult<unknown>;
  try {
    parsed = tool.schema.safeParse(args);
  } catch {
    return failure("error", TOOL_MESSAGES.toolFailed);
  }
  if (!parsed.success) {
    try {
      return failure("error", describeArgumentError(parsed.error, args));
    } catch {
      return failure("error", argumentMessage("invalid", "")); // args with a throwing getter
    }
  }

  const controller = new AbortController();
  const cleanups: (() => void)[] = [];
  // Settles with the failure that cut the call short; never rejects.
  const cutOff = new Promise<ToolResult>((resolve) => {
    const stop = (result: ToolResult) => {
      controller.abort();
      resolve(result);
    };
    if (options.timeoutMs !== undefined && Number.isFinite(options.timeoutMs)) {
      const timer = setTimeout(
        () => stop(failure("timeout", TOOL_MESSAGES.timedOut)),
        Math.max(0, options.timeoutMs),
      );
      cleanups.push(() => clearTimeout(timer));
    }
    const signal = options.signal;
    if (signal) {
      const onAbort = () => stop(failure("error", TOOL_MESSAGES.cancelled));
      signal.addEventListener("abort", onAbort, { once: true });
      cleanups.push(() => signal.removeEventListener("abort", onAbort));
    }
  });
  const run = (async (): Promise<ToolResult> => {
    try {
      const result = await tool.call(parsed.data, { ...options, signal: controller.signal });
      // A user tool may forget `injected`; only the noise wrapper sets it to true.
      return isToolResult(result)
        ? { ...result, injected: result.injected === true }
        : {
            ...failure("error", TOOL_MESSAGES.toolFailed),
            failure: {
              class: "tool",
              code: "tool-bad-result",
              message: `${tool.name} returned no tool result`,
            },
          };
    } catch (error) {
      return { ...failure("error", TOOL_MESSAGES.toolFailed), failure: thrownFailure(tool.name, error) };
    }
  })();
  try {
    return await Promise.race([run, cutOff]);
  } finally {
    for (const cleanup of cleanups) cleanup();
  }
}

/** The failure a tool's exception stands for: its own class when it names one, else a tool error. */
function thrownFailure(toolName: string, error: unknown): Failure {
  if (error instanceof ClassifiedError) return error.failure;
  const message = error instanceof Error ? `${error.name}: ${error.message}` : String(error);
  return { class: "tool", code: "tool-threw", message: `${toolName} threw ${message}` };
}

const STATUSES: ReadonlySet<string> = new Set(TOOL_STATUSES);

function isToolResult(value: unknown): value is ToolResult {
  if (typeof value !== "object" || value === null) return false;
  const result = value as Partial<ToolResult>;
  return (
    typeof result.content === "string" && typeof result.status === "string" && STATUSES.has(result.status)
  );
}
