/** Defaults of `AdvantageOptions`, in one place. */
import type { AdvantageOptions } from "./types.ts";

export const ADVANTAGE_DEFAULTS = {
  epsilon: 1e-6,
  normalization: "std",
  turnWeight: 1,
  turnDiscount: 1,
  stepWeight: 1,
  /** GiGPO's γ (arXiv:2505.10978). */
  stepGamma: 0.95,
  /** verl's default `algorithm.gamma` for GAE. */
  gaeGamma: 1,
  lambda: 1,
  whiten: true,
} as const;

/** verl's `masked_whiten` adds this to the variance. */
export const WHITEN_EPSILON = 1e-8;

export function checkOptions(options: AdvantageOptions): void {
  const probabilities = ["turnDiscount", "gamma", "lambda"] as const;
  for (const name of probabilities) {
    const value = options[name];
    if (value !== undefined && !(value >= 0 && value <= 1)) {
      throw new Error(`advantages: ${name} must lie in [0, 1], got ${value}`);
    }
  }
  if (options.epsilon !== undefined && !(options.epsilon >= 0)) {
    throw new Error(`advantages: epsilon must be non-negative, got ${options.epsilon}`);
  }
  if (
    options.normalization !== undefined &&
    options.normalization !== "std" &&
    options.normalization !== "none"
  ) {
    throw new Error(`advantages: normalization must be "std" or "none", got "${options.normalization}"`);
  }
}
