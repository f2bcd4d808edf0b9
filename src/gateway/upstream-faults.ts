/**
 * The gateway's side of the failure taxonomy: the class of a failed upstream call, and
 * `AGENTRL_FAULTS` at the upstream adapter. Everything the model server did wrong is `infra`
 * (unreachable, timed out, 5xx or overloaded, a body that is not JSON, a stream cut short, a
 * completion that does not parse); the HTTP status rule is `httpStatusFailure` (types/failure.ts):
 * a 4xx other than 408/409/429 rejected the agent's own request and gets no class.
 */
import { injectFault, UPSTREAM_FAULTS } from "../core/faults.ts";
import { type Failure, infraFailure } from "../types/failure.ts";
import type { EpisodeLog } from "./episodes.ts";
import type { Upstream } from "./upstream.ts";

/**
 * The fault-injection key of an episode's call number `seq`: its task and seed when the episode
 * names them (stable across runs: `eval --agent` episodes get a random gateway id), else its id.
 */
export function faultKey(episode: Pick<EpisodeLog, "id" | "meta">, seq: number): string {
  const { taskId, seed } = episode.meta;
  return `${taskId !== undefined && seed !== undefined ? `${taskId}@${seed}` : episode.id}:${seq}`;
}

/** The class of an upstream that could not be reached (a timeout when the error says so). */
export function unreachableFailure(message: string): Failure {
  return /timeout|timed out|aborted due to timeout/i.test(message)
    ? infraFailure("upstream-timeout", message)
    : infraFailure("upstream-unreachable", message);
}

/**
 * `upstream.post` unless the fault plan picks this call (`key`: episode id and call number): then
 * what a broken model server would answer (a 503, no answer until the timeout, a stream or body
 * cut short, a body that is not JSON), for the gateway's own code to classify. `injected` says
 * whether it did, so the call is labelled; an injected timeout is thrown as the `InjectedFault`.
 */
export async function postWithFaults(
  upstream: Upstream,
  key: string,
  body: Record<string, unknown>,
  signal: AbortSignal,
  headers: Record<string, string> | undefined,
): Promise<{ response: Response; injected: boolean }> {
  const fault = injectFault(UPSTREAM_FAULTS, key);
  if (!fault) return { response: await upstream.post(body, signal, headers), injected: false };
  const json = { "content-type": "application/json" };
  switch (fault.faultClass) {
    case "upstream-5xx":
      return {
        response: new Response(JSON.stringify({ error: { message: fault.message } }), {
          status: 503,
          headers: json,
        }),
        injected: true,
      };
    case "malformed-json":
      return { response: new Response('{"choices": [', { status: 200, headers: json }), injected: true };
    case "truncated-stream":
      return body.stream === true
        ? {
            response: new Response(
              'data: {"id":"cut","choices":[{"index":0,"delta":{"content":"par"}}]}\n\n',
              {
                status: 200,
                headers: { "content-type": "text/event-stream" },
              },
            ),
            injected: true,
          }
        : { response: new Response('{"id": "cut", "choi', { status: 200, headers: json }), injected: true };
    default:
      // upstream-timeout: the transport gives up; the caller tells an injected one by its class.
      throw fault;
  }
}
