/**
 * fast-check generators of arbitrary trajectories for property tests: every action type and tool
 * status, any strings (lone surrogates included), numbers that plain JSON loses (NaN, ±Infinity,
 * -0), null log-probs and rewards, optional fields present or absent.
 */
import fc from "fast-check";
import { TOOL_STATUSES } from "../types/tool.ts";
import { END_REASONS, type Trajectory, type Turn } from "../types/trajectory.ts";

export const arbitraryText = fc.string({ unit: "binary", maxLength: 12 });
const number = fc.double(); // includes NaN, ±Infinity and -0
const ids = fc.array(fc.nat({ max: 50_000 }), { maxLength: 6 });
const record = <T>(value: fc.Arbitrary<T>) =>
  fc.dictionary(arbitraryText, value, { maxKeys: 3, noNullPrototype: true });
const observation = fc.record({ text: arbitraryText, tokenIds: ids }, { noNullPrototype: true });
const toolResult = fc.record(
  {
    status: fc.constantFrom(...TOOL_STATUSES),
    content: arbitraryText,
    injected: fc.boolean(),
    refs: fc.array(arbitraryText, { maxLength: 2 }),
    value: number,
    latencyMs: number,
  },
  { requiredKeys: ["status", "content", "injected"], noNullPrototype: true },
);
const action = fc.oneof(
  fc.record(
    {
      type: fc.constant("tool-call" as const),
      tool: fc.constantFrom("search", "calc", "a.b(c)"),
      arguments: record(fc.oneof(arbitraryText, fc.integer())),
      callId: arbitraryText,
    },
    { requiredKeys: ["type", "tool", "arguments"], noNullPrototype: true },
  ),
  fc.record({ type: fc.constant("answer" as const), answer: arbitraryText }, { noNullPrototype: true }),
  fc.record({ type: fc.constant("format-error" as const), error: arbitraryText }, { noNullPrototype: true }),
);
const turn = fc.record(
  {
    index: fc.nat({ max: 20 }),
    text: arbitraryText,
    tokenIds: ids,
    logprobs: fc.option(fc.array(number, { maxLength: 6 }), { nil: null }),
    action,
    toolResult,
    observation,
    rewards: record(fc.option(number, { nil: null })),
  },
  { requiredKeys: ["index", "text", "tokenIds", "logprobs", "action", "rewards"], noNullPrototype: true },
) as fc.Arbitrary<Turn>;
export const arbitraryTrajectory = fc.record(
  {
    id: arbitraryText,
    taskId: arbitraryText,
    family: arbitraryText,
    policyId: arbitraryText,
    seed: fc.integer(),
    group: fc.nat({ max: 64 }),
    prompt: fc.record(
      { text: arbitraryText.map((question) => `<q> ${question} </q>`), tokenIds: ids },
      { noNullPrototype: true },
    ),
    turns: fc.array(turn, { maxLength: 5 }),
    finalAnswer: fc.option(arbitraryText, { nil: null }),
    correct: fc.boolean(),
    outcomeReward: fc.option(number, { nil: null }),
    endReason: fc.constantFrom(...END_REASONS),
    info: record(fc.oneof(arbitraryText, number, fc.boolean())),
  },
  {
    requiredKeys: [
      "id",
      "taskId",
      "family",
      "policyId",
      "seed",
      "prompt",
      "turns",
      "finalAnswer",
      "correct",
      "outcomeReward",
      "endReason",
    ],
    noNullPrototype: true,
  },
) as fc.Arbitrary<Trajectory>;
