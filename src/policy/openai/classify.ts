/**
 * The failure class of an endpoint request that still failed after its retries. Everything the
 * model server did wrong is `infra` (never scored as the policy's failure): unreachable, timed
 * out, 5xx, overloaded (408/409/429), a body that is not JSON, a reply with no choice or a body
 * cut short. A request the server rejected as bad (400, 401, 404, 422) gets no class: it stays a
 * plain `policy-error` (a context past the model's window is the policy's length).
 */
import { APIConnectionTimeoutError, APIError } from "openai";
import { type Failure, httpStatusFailure, infraFailure } from "../../types/failure.ts";

export function classifyEndpointError(error: unknown, message: string): Failure | undefined {
  if (error instanceof APIConnectionTimeoutError) return infraFailure("upstream-timeout", message);
  if (error instanceof APIError) {
    const status = error.status;
    if (status === undefined) return infraFailure("upstream-unreachable", message);
    return httpStatusFailure(status, message);
  }
  if (error instanceof SyntaxError) return infraFailure("upstream-malformed", message);
  // A transport error outside the SDK's classes: a body cut short, a reset socket.
  return infraFailure("upstream-broken", message);
}
