/**
 * DAPO's overlong reward shaping (arXiv:2503.14476, used by GRPO-TCR in arXiv:2510.11701): with a
 * maximum length `Lmax` and a soft window `Lcache`,
 *
 *   r_len = 0                                  if len <= Lmax - Lcache
 *         = -(len - (Lmax - Lcache)) / Lcache  inside the window (a linear ramp from 0 to -1)
 *         = -1                                 if len >= Lmax
 *
 * `len` counts the tokens the policy wrote (loss mask 1: prompt and observations excluded), the
 * tokens the policy is responsible for. A policy without token ids (a scripted one) has length 0.
 */
import type { Task } from "../types/task.ts";
import type { Trajectory } from "../types/trajectory.ts";

export interface OverlongOptions {
  /** Lmax: length at and past which the penalty is -1. */
  maxLength: number;
  /** Lcache: width of the linear window before Lmax. */
  cacheLength: number;
}

export function overlongPenalty(length: number, maxLength: number, cacheLength: number): number {
  if (!(cacheLength > 0 && cacheLength <= maxLength)) {
    throw new Error(
      `overlong: need 0 < cacheLength <= maxLength, got cacheLength ${cacheLength}, maxLength ${maxLength}`,
    );
  }
  if (length >= maxLength) return -1;
  const over = length - (maxLength - cacheLength);
  return over <= 0 ? 0 : -over / cacheLength;
}

/** Tokens the policy wrote in the episode. */
export function policyTokenCount(trajectory: Trajectory): number {
  return trajectory.turns.reduce((sum, turn) => sum + turn.tokenIds.length, 0);
}

export function overlongReward(trajectory: Trajectory, _task: Task, options?: OverlongOptions): number {
  if (!options) throw new Error("overlong reward needs options { maxLength, cacheLength }");
  return overlongPenalty(policyTokenCount(trajectory), options.maxLength, options.cacheLength);
}
