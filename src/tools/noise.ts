/**
 * The noise wrapper: a tool that sometimes fails on purpose, with a seeded rate per failure mode.
 * The article's claim that a policy must learn to cope with unreliable tools is measured with it, and
 * credit assignment must tell the tool's failure from the policy's mistake, so every injected
 * result is labelled: `injected: true` and the status of its mode (`corrupted` keeps that status
 * although the policy sees plausible content).
 *
 * Randomness: one uniform draw per call from `rng.fork("mode")` picks the mode, so call k's fate
 * depends only on the seed and k; corruption draws from `rng.fork("corrupt")`, so corrupting one
 * call never shifts which later calls fail.
 */
import type { Rng } from "../core/random.ts";
import type { Tool, ToolCallOptions, ToolResult } from "../types/tool.ts";
import { TOOL_MESSAGES } from "./messages.ts";

/** Probability of each failure mode per call; each in [0, 1], sum at most 1; absent means 0. */
export interface NoiseConfig {
  /** An error message (`error : service unavailable`). */
  error?: number;
  /** Nothing found (`no results`). */
  empty?: number;
  /** No answer in time (`error : timed out`), returned at once: an injected timeout never sleeps. */
  timeout?: number;
  /** A wrong or irrelevant result that looks plausible (another document, an off-by-some number). */
  corrupted?: number;
}

export const NOISE_MODES = ["error", "empty", "timeout", "corrupted"] as const;
export type NoiseMode = (typeof NOISE_MODES)[number];

/**
 * Makes a wrong version of a real result: `real` is what the tool returned for `args`. Returns the
 * corrupted content (status and `injected` are stamped by the wrapper), or null when this call
 * cannot be corrupted (the real call failed, or no other result exists); the real result is then
 * returned unchanged.
 */
export type Corrupt<Args> = (
  args: Args,
  real: ToolResult,
  rng: Rng,
) => Omit<ToolResult, "status" | "injected"> | null;

/** A tool that knows how to produce a plausible wrong result (search and calc do). */
export interface CorruptibleTool<Args = Record<string, unknown>> extends Tool<Args> {
  corrupt: Corrupt<Args>;
}

/** Throws (naming the field) unless every rate is a number in [0, 1] and they sum to at most 1. */
export function validateNoise(config: NoiseConfig): Required<NoiseConfig> {
  const rates = {} as Required<NoiseConfig>;
  for (const key of Object.keys(config)) {
    if (!(NOISE_MODES as readonly string[]).includes(key)) {
      throw new Error(`noise: unknown failure mode "${key}" (valid: ${NOISE_MODES.join(", ")})`);
    }
  }
  let total = 0;
  for (const mode of NOISE_MODES) {
    const rate = config[mode] ?? 0;
    if (typeof rate !== "number" || !Number.isFinite(rate) || rate < 0 || rate > 1) {
      throw new Error(`noise: rate "${mode}" must be a number in [0, 1], got ${String(rate)}`);
    }
    rates[mode] = rate;
    total += rate;
  }
  // A small slack so that uniformNoise(1) (four quarters) and decimal sums like 0.1 * 10 pass.
  if (total > 1 + 1e-9) {
    throw new Error(`noise: rates must sum to at most 1, got ${total} (${JSON.stringify(rates)})`);
  }
  return rates;
}

/** Spreads a total failure rate evenly over the four modes: `uniformNoise(0.2)` → 0.05 each. */
export function uniformNoise(total: number): NoiseConfig {
  if (typeof total !== "number" || !Number.isFinite(total) || total < 0 || total > 1) {
    throw new Error(`noise: total rate must be a number in [0, 1], got ${String(total)}`);
  }
  const rate = total / NOISE_MODES.length;
  return { error: rate, empty: rate, timeout: rate, corrupted: rate };
}

/** Sum of the rates of a config. */
export function totalNoise(config: NoiseConfig): number {
  return NOISE_MODES.reduce((sum, mode) => sum + (config[mode] ?? 0), 0);
}

/**
 * Wraps `tool` so that each call fails with the configured probabilities. Calls whose arguments the
 * schema rejects are passed through untouched (the policy's malformed call must show up as the
 * policy's error, not be masked by an injected outage); they still consume their draw.
 *
 * Corruption uses `options.corrupt`, else the tool's own `corrupt` method; a config with a positive
 * `corrupted` rate for a tool that has neither throws here, at wrap time.
 */
export function withNoise<Args>(
  tool: Tool<Args> | CorruptibleTool<Args>,
  config: NoiseConfig,
  rng: Rng,
  options: { corrupt?: Corrupt<Args> } = {},
): Tool<Args> {
  const rates = validateNoise(config);
  const corrupt = options.corrupt ?? ("corrupt" in tool ? tool.corrupt : undefined);
  if (rates.corrupted > 0 && !corrupt) {
    throw new Error(`noise: tool "${tool.name}" has no way to corrupt a result; pass options.corrupt`);
  }
  const modeRng = rng.fork("mode");
  const corruptRng = rng.fork("corrupt");

  const pickMode = (): NoiseMode | null => {
    const u = modeRng.next();
    let edge = 0;
    for (const mode of NOISE_MODES) {
      edge += rates[mode];
      if (u < edge) return mode;
    }
    return null;
  };

  return {
    name: tool.name,
    description: tool.description,
    schema: tool.schema,
    textArgument: tool.textArgument,
    async call(args: Args, callOptions?: ToolCallOptions): Promise<ToolResult> {
      const mode = pickMode();
      if (mode === null || !tool.schema.safeParse(args).success) return tool.call(args, callOptions);
      switch (mode) {
        case "error":
          return { status: "error", content: TOOL_MESSAGES.serviceUnavailable, injected: true };
        case "empty":
          return { status: "empty", content: TOOL_MESSAGES.noResults, injected: true };
        case "timeout":
          return { status: "timeout", content: TOOL_MESSAGES.timedOut, injected: true };
        case "corrupted": {
          const real = await tool.call(args, callOptions);
          const wrong = corrupt!(args, real, corruptRng);
          return wrong ? { ...wrong, status: "corrupted", injected: true } : real;
        }
      }
    },
  };
}
