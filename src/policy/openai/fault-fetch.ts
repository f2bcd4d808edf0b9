/**
 * `AGENTRL_FAULTS` at the OpenAI client's transport: a `fetch` that, for a request the fault plan
 * picks, answers what a broken model server would (a 503, a reply that never comes, a body cut
 * short, a body that is not JSON) instead of sending it. The policy's real retry and
 * classification code then handles it, so the tests check that code, not a shortcut. The
 * decision's key (episode id, turn, attempt) travels in a header this fetch removes.
 */
import { injectFault, UPSTREAM_FAULTS } from "../../core/faults.ts";

export const FAULT_KEY_HEADER = "x-agentrl-fault-key";

export function faultInjectingFetch(inner: typeof fetch = fetch): typeof fetch {
  return async (input, init) => {
    const headers = new Headers(init?.headers);
    const key = headers.get(FAULT_KEY_HEADER);
    headers.delete(FAULT_KEY_HEADER);
    const fault = key === null ? null : injectFault(UPSTREAM_FAULTS, key);
    if (!fault) return inner(input, { ...init, headers });
    const json = { "content-type": "application/json" };
    switch (fault.faultClass) {
      case "upstream-5xx":
        return new Response(JSON.stringify({ error: { message: fault.message } }), {
          status: 503,
          headers: json,
        });
      case "malformed-json":
        return new Response('{"choices": [{"message": ', { status: 200, headers: json });
      case "truncated-stream": {
        const body = new ReadableStream<Uint8Array>({
          start(controller) {
            controller.enqueue(new TextEncoder().encode('{"id": "chatcmpl-cut", "choices": ['));
            controller.error(new TypeError(`terminated: ${fault.message}`));
          },
        });
        return new Response(body, { status: 200, headers: json });
      }
      default: {
        // upstream-timeout: no answer until the client's own timeout aborts the request.
        const signal = init?.signal;
        return new Promise<Response>((_, reject) => {
          if (!signal) return reject(new Error(`${fault.message}: no timeout signal`));
          const abort = () => reject(signal.reason ?? new DOMException("aborted", "AbortError"));
          if (signal.aborted) abort();
          else signal.addEventListener("abort", abort, { once: true });
        });
      }
    }
  };
}
