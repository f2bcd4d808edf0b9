/**
 * The failure class of an agent-server episode (src/types/failure.ts), from what its gateway
 * recorded. verl trains on whatever the agent loop returns, so the Python loop acts on this: it
 * raises on the infrastructure failures that no retry fixes (every later sample would fail the same
 * way: the rollout server rejects the request, names no such model, or returns no token ids) and
 * masks out the sample of a transient one (5xx, unreachable, timeout), which the job's advantage
 * estimator also leaves out of its group baseline.
 *
 * Codes: `upstream-4xx`, `model-not-found`, `no-token-ids` (fatal); `upstream-5xx`,
 * `upstream-overloaded` (408, 409, 429), `upstream-unreachable`, `upstream-malformed`, `episode-timeout` (transient); a 400 that says the
 * context is too long is the policy's own (`context-length`: its conversation outgrew the model).
 */
import type { GatewayCall } from "../gateway/types.ts";
import { type Failure, httpStatusFailure, infraFailure } from "../types/failure.ts";

/** Infrastructure codes the agent loop raises on (a configuration error: every sample would fail). */
export const FATAL_INFRA_CODES = ["upstream-4xx", "model-not-found", "no-token-ids"] as const;

/** vLLM's 404 for an unknown model: "The model `x` does not exist." */
const MODEL_NOT_FOUND = /model .*does not exist|model .*not found|no such model/i;
/** A 400 for a context past the window: vLLM (max_model_len), SGLang, llama.cpp ("exceeds the available context size"). */
const CONTEXT_LENGTH = /maximum context length|context length|context size|too long|max_model_len/i;

function upstreamMessage(call: GatewayCall): string {
  const error = (call.response as { error?: { message?: unknown } | string } | null)?.error;
  const detail = typeof error === "string" ? error : typeof error?.message === "string" ? error.message : "";
  return detail ? `${call.error}: ${detail}` : (call.error ?? "");
}

/**
 * The failure of an upstream status with its message: the shared rule first (5xx and 408/409/429
 * are the server's transient trouble: masked, not fatal), then what verl makes of a rejected
 * request (a configuration error, fatal; or the policy's own overlong context).
 */
export function statusFailure(status: number, message: string): Failure {
  const transient = httpStatusFailure(status, message);
  if (transient) return transient;
  if (status === 404 && MODEL_NOT_FOUND.test(message)) return infraFailure("model-not-found", message);
  if (status === 400 && CONTEXT_LENGTH.test(message))
    return { class: "policy", code: "context-length", message };
  if (status >= 400 && status < 500) return infraFailure("upstream-4xx", message);
  return infraFailure("upstream-5xx", message);
}

/** The failure of the first failed call, or null when every call was answered. */
export function callFailure(calls: readonly GatewayCall[]): Failure | null {
  const failed = [...calls].sort((a, b) => a.seq - b.seq).find((call) => call.error);
  if (!failed) return null;
  // The gateway's own classification, made where the call failed, comes first.
  if (failed.failure) return failed.failure;
  const message = upstreamMessage(failed);
  const status = /answered (\d{3})/.exec(failed.error ?? "");
  if (status) return statusFailure(Number(status[1]), message);
  if (/could not be reached/.test(failed.error ?? "")) return infraFailure("upstream-unreachable", message);
  return infraFailure("upstream-malformed", message);
}
