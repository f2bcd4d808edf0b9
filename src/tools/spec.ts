/**
 * `toolSpec`: how a tool is described to a policy: name, description, the JSON schema of its
 * arguments (zod 4's `z.toJSONSchema`, the OpenAI function `parameters`) and its text argument.
 */
import { z } from "zod";
import type { ToolSpec } from "../types/policy.ts";
import type { AnyTool } from "../types/tool.ts";

export function toolSpec(tool: AnyTool): ToolSpec {
  // `unrepresentable: "any"`: a user schema with a transform or a date must not make the spec throw.
  const { $schema: _dialect, ...parameters } = z.toJSONSchema(tool.schema, {
    unrepresentable: "any",
  }) as Record<string, unknown>;
  return { name: tool.name, description: tool.description, parameters, textArgument: tool.textArgument };
}
