/**
 * A runtime check that an untrusted value (a line of an imported file) has the shape of a
 * `Trajectory`. Unknown extra keys are allowed, so records written by a newer agentrl still load;
 * numbers may be NaN or infinite (log-probs, rewards), as the lossless codec keeps them.
 */
import { z } from "zod";
import { TOOL_STATUSES } from "../types/tool.ts";
import { END_REASONS, type Trajectory } from "../types/trajectory.ts";

const anyNumber = z.custom<number>((value) => typeof value === "number", "expected a number");
const integer = z.custom<number>((value) => Number.isSafeInteger(value), "expected an integer");
const tokens = z.array(integer);

const action = z.discriminatedUnion("type", [
  z.looseObject({
    type: z.literal("tool-call"),
    tool: z.string(),
    arguments: z.record(z.string(), z.unknown()),
    callId: z.string().optional(),
  }),
  z.looseObject({ type: z.literal("answer"), answer: z.string() }),
  z.looseObject({ type: z.literal("format-error"), error: z.string() }),
]);

const toolResult = z.looseObject({
  status: z.enum(TOOL_STATUSES),
  content: z.string(),
  injected: z.boolean(),
  refs: z.array(z.string()).optional(),
  value: anyNumber.optional(),
  latencyMs: anyNumber.optional(),
});

const turn = z.looseObject({
  index: integer,
  text: z.string(),
  tokenIds: tokens,
  logprobs: z.array(anyNumber).nullable(),
  action,
  toolResult: toolResult.optional(),
  observation: z.looseObject({ text: z.string(), tokenIds: tokens }).optional(),
  rewards: z.record(z.string(), anyNumber.nullable()),
});

const trajectory = z.looseObject({
  id: z.string(),
  taskId: z.string(),
  family: z.string(),
  policyId: z.string(),
  seed: integer,
  group: integer.optional(),
  prompt: z.looseObject({ text: z.string(), tokenIds: tokens }),
  turns: z.array(turn),
  finalAnswer: z.string().nullable(),
  correct: z.boolean(),
  outcomeReward: anyNumber.nullable(),
  endReason: z.enum(END_REASONS),
  info: z.record(z.string(), z.unknown()).optional(),
});

/**
 * Returns `value` itself (not a parsed copy, so nothing is stripped or reordered) when it is a
 * trajectory; otherwise throws an error listing what is wrong, with paths.
 */
export function assertTrajectory(value: unknown, what = "trajectory"): Trajectory {
  const result = trajectory.safeParse(value);
  if (!result.success) throw new Error(`invalid ${what}:\n${z.prettifyError(result.error)}`);
  return value as Trajectory;
}
