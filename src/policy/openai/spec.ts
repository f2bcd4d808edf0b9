/** The `openai:<base-url>#<model>` policy spec of `--policy`. */

export const OPENAI_SPEC_PREFIX = "openai:";

/** Header carrying the task id of a request (read by `agentrl serve`, ignored by other servers). */
export const TASK_ID_HEADER = "x-agentrl-task-id";
/**
 * The episode a chat call belongs to (the gateway sends its episode id upstream): `agentrl serve`
 * then keeps the episode's KV cache between its calls instead of prefilling the whole conversation
 * again each call.
 */
export const EPISODE_ID_HEADER = "x-agentrl-episode-id";

/** `{ baseURL, model }` of a spec, or null when `spec` does not start with `openai:`; throws when malformed. */
export function parseOpenAiSpec(spec: string): { baseURL: string; model: string } | null {
  if (!spec.startsWith(OPENAI_SPEC_PREFIX)) return null;
  const rest = spec.slice(OPENAI_SPEC_PREFIX.length);
  const hash = rest.indexOf("#"); // a base URL has no fragment; a model name may hold "#"
  const baseURL = hash < 0 ? rest : rest.slice(0, hash);
  const model = hash < 0 ? "" : rest.slice(hash + 1);
  if (!model) {
    throw new Error(
      `policy "${spec}": expected openai:<base-url>#<model>, e.g. openai:http://127.0.0.1:8000/v1#my-model`,
    );
  }
  let url: URL;
  try {
    url = new URL(baseURL);
  } catch {
    throw new Error(`policy "${spec}": "${baseURL}" is not a URL (expected openai:<base-url>#<model>)`);
  }
  if (url.protocol !== "http:" && url.protocol !== "https:") {
    throw new Error(`policy "${spec}": the base URL must be http or https, got "${url.protocol}"`);
  }
  return { baseURL: baseURL.replace(/\/+$/, ""), model };
}
