/**
 * A policy behind any OpenAI-compatible chat-completions endpoint (vLLM, SGLang, llama.cpp,
 * Ollama, OpenAI, `agentrl serve`), on the official `openai` client. `protocol: "chat"`: the
 * world's tools are offered as OpenAI function tools and the episode loop parses the returned
 * `tool_calls` (messages.ts shows how an episode becomes a request).
 *
 * - One request per context per turn, at most `concurrency` in flight across every `act` call of
 *   this policy (a shared semaphore), each with a `timeoutMs` limit and retried with exponential
 *   backoff and full jitter on network errors, timeouts, 408/409/429 and 5xx (retry.ts).
 * - A request that still fails becomes a step with `finishReason: "error"`, `error` set and its
 *   `failure` class (classify.ts: infra for anything the server did wrong); the loop records the
 *   episode as `policy-error` with that failure. `act` never throws for an endpoint failure.
 * - Under `AGENTRL_FAULTS` the client's fetch injects upstream faults (fault-fetch.ts).
 * - Samples: one completion per request (`n` is not sent). Multi-turn episodes diverge after their
 *   first turn, so a server's `n` cannot be shared across turns: the caller samples n episodes per
 *   task as separate episodes with their own seeds.
 * - `seed`: the episode seed is sent with every request of the episode (servers that honour it,
 *   vLLM and `agentrl serve`, then sample reproducibly); `sendSeed: false` leaves it out.
 * - Log-probs (`logprobs: true`) and token ids (`tokenIds: true` asks for vLLM's
 *   `return_token_ids`) are kept when the server returns them; ids are never re-tokenised from the
 *   text (response.ts). Without them `tokenIds` is `[]`.
 * - The raw tool calls of each turn are remembered per episode (dropped on `release`) so later
 *   requests replay the model's exact calls, including ones the loop rejected.
 * - The task id travels in the `x-agentrl-task-id` header (`sendTaskId: false` leaves it out):
 *   other servers ignore it, `agentrl serve` hands scripted policies the task they follow.
 */
import OpenAI, { APIConnectionTimeoutError, APIError } from "openai";
import type {
  ChatCompletion,
  ChatCompletionCreateParamsNonStreaming,
} from "openai/resources/chat/completions";
import { activeFaultPlan } from "../../core/faults.ts";
import { createRng, mixSeeds } from "../../core/random.ts";
import type { Policy, PolicyContext, PolicyStep } from "../../types/policy.ts";
import { classifyEndpointError } from "./classify.ts";
import { FAULT_KEY_HEADER, faultInjectingFetch } from "./fault-fetch.ts";
import { buildChatMessages, chatTools, type RecordedTurn } from "./messages.ts";
import { errorStep, stepFromCompletion } from "./response.ts";
import { withRetries } from "./retry.ts";
import { createSemaphore } from "./semaphore.ts";
import { TASK_ID_HEADER } from "./spec.ts";

export interface OpenAiPolicyOptions {
  /** Base URL of the API, e.g. `http://127.0.0.1:8000/v1`. */
  baseURL: string;
  /** Model name the server knows. */
  model: string;
  /** Bearer key; default `OPENAI_API_KEY`, else `AGENTRL_API_KEY`, else none (`EMPTY` is sent). */
  apiKey?: string;
  /** Policy id recorded in trajectories (default `openai:<baseURL>#<model>`). */
  id?: string;
  /** Sampling temperature (default 1). */
  temperature?: number;
  /** Nucleus sampling mass (default 1). */
  topP?: number;
  /** Most requests in flight at once (default 16). */
  concurrency?: number;
  /** Retries of a failed request after the first attempt (default 4). */
  maxRetries?: number;
  /** Limit of one request, in ms (default 60 000). */
  timeoutMs?: number;
  /** Base of the retry backoff, in ms (default 500). */
  retryBaseDelayMs?: number;
  /** Cap of one retry delay, in ms (default 30 000). */
  retryMaxDelayMs?: number;
  /** Ask for the log-prob of each sampled token (default false). */
  logprobs?: boolean;
  /** Ask for the sampled token ids (vLLM `return_token_ids`; default false). */
  tokenIds?: boolean;
  /** Send the episode seed as `seed` (default true). */
  sendSeed?: boolean;
  /**
   * Send the task id in the `x-agentrl-task-id` header (default true). Other servers ignore the
   * header; `agentrl serve` uses it to give scripted policies (the expert) the task they follow.
   */
  sendTaskId?: boolean;
  /** System prompt for tasks without their own (default DEFAULT_SYSTEM_PROMPT). */
  systemPrompt?: string;
  /** Extra body fields merged into every request (server extensions: `top_k`, `chat_template_kwargs`…). */
  extraBody?: Record<string, unknown>;
  /** Called before each retry. */
  onRetry?: (info: { episodeId: string; attempt: number; delayMs: number; error: string }) => void;
}

type DefaultedOption =
  | "temperature"
  | "topP"
  | "concurrency"
  | "maxRetries"
  | "timeoutMs"
  | "retryBaseDelayMs"
  | "retryMaxDelayMs";
type Settings = OpenAiPolicyOptions & Required<Pick<OpenAiPolicyOptions, DefaultedOption>>;

export const OPENAI_POLICY_DEFAULTS: Readonly<Required<Pick<OpenAiPolicyOptions, DefaultedOption>>> = {
  temperature: 1,
  topP: 1,
  concurrency: 16,
  maxRetries: 4,
  timeoutMs: 60_000,
  retryBaseDelayMs: 500,
  retryMaxDelayMs: 30_000,
};

export function createOpenAiPolicy(options: OpenAiPolicyOptions): Policy {
  const settings: Settings = { ...OPENAI_POLICY_DEFAULTS, ...definedOnly(options) };
  validate(settings);
  const faults = activeFaultPlan() !== null;
  const client = new OpenAI({
    baseURL: settings.baseURL,
    apiKey: settings.apiKey ?? process.env.OPENAI_API_KEY ?? process.env.AGENTRL_API_KEY ?? "EMPTY",
    maxRetries: 0,
    timeout: settings.timeoutMs,
    ...(faults ? { fetch: faultInjectingFetch() } : {}),
  });
  const semaphore = createSemaphore(settings.concurrency);
  const recorded = new Map<string, RecordedTurn[]>();

  const request = async (context: PolicyContext, signal?: AbortSignal): Promise<PolicyStep> => {
    const body = requestBody(context, settings, recorded.get(context.episodeId));
    let attempts = 0;
    try {
      const completion = await withRetries(
        () => {
          attempts++;
          return client.chat.completions.create(body, {
            signal,
            timeout: settings.timeoutMs,
            maxRetries: 0,
            headers: {
              ...(settings.sendTaskId !== false ? taskHeader(context.task.id) : {}),
              ...(faults
                ? { [FAULT_KEY_HEADER]: `${context.episodeId}:${context.turns.length}:${attempts}` }
                : {}),
            },
          });
        },
        {
          maxRetries: settings.maxRetries,
          baseDelayMs: settings.retryBaseDelayMs,
          maxDelayMs: settings.retryMaxDelayMs,
          rng: createRng(mixSeeds(context.seed, context.turns.length)).fork("retry"),
          signal,
          onRetry: ({ attempt, delayMs, error }) =>
            settings.onRetry?.({
              episodeId: context.episodeId,
              attempt,
              delayMs,
              error: describeError(error, settings),
            }),
        },
      );
      return stepFromCompletion(completion as ChatCompletion);
    } catch (error) {
      if (signal?.aborted) return errorStep(`aborted after ${attempts} attempt(s)`);
      const tries = attempts === 1 ? "1 attempt" : `${attempts} attempts`;
      const message = `${describeError(error, settings)} (${tries})`;
      return errorStep(message, classifyEndpointError(error, message));
    }
  };

  return {
    id: settings.id ?? `openai:${settings.baseURL}#${settings.model}`,
    protocol: "chat",
    async act(contexts, actOptions = {}) {
      return Promise.all(
        contexts.map(async (context) => {
          const step = await semaphore.run(() => request(context, actOptions.signal));
          if (step.finishReason !== "error") {
            const turns = recorded.get(context.episodeId) ?? [];
            turns[context.turns.length] = { text: step.text, toolCalls: step.toolCalls ?? [] };
            recorded.set(context.episodeId, turns);
          }
          return step;
        }),
      );
    },
    release(episodeIds) {
      for (const id of episodeIds) recorded.delete(id);
    },
  };
}

function requestBody(
  context: PolicyContext,
  settings: Settings,
  recorded: readonly RecordedTurn[] | undefined,
): ChatCompletionCreateParamsNonStreaming {
  const body: Record<string, unknown> = {
    model: settings.model,
    messages: buildChatMessages(context, { systemPrompt: settings.systemPrompt, recorded }),
    temperature: settings.temperature,
    top_p: settings.topP,
    max_tokens: Math.max(1, Math.floor(context.maxTokens)),
  };
  if (context.tools.length > 0) body.tools = chatTools(context.tools);
  if (settings.sendSeed !== false) body.seed = context.seed;
  if (settings.logprobs) body.logprobs = true;
  if (settings.tokenIds) body.return_token_ids = true;
  return { ...body, ...settings.extraBody } as unknown as ChatCompletionCreateParamsNonStreaming;
}

function taskHeader(taskId: string): Record<string, string> {
  // Header values must be printable ASCII: an id that is not is simply not sent.
  return /^[\x20-\x7e]{1,512}$/.test(taskId) ? { [TASK_ID_HEADER]: taskId } : {};
}

function describeError(error: unknown, settings: Settings): string {
  if (error instanceof APIConnectionTimeoutError) return `request timed out after ${settings.timeoutMs} ms`;
  if (error instanceof APIError) {
    if (error.status === undefined) {
      return `connection error: ${error.message}${rootCause(error)}`;
    }
    return `HTTP ${error.status}: ${error.message.replace(new RegExp(`^${error.status} `), "")}`;
  }
  return error instanceof Error ? `${error.name}: ${error.message}` : String(error);
}

/** ` (ECONNREFUSED)`: the code (or message) at the bottom of an error's cause chain, or "". */
function rootCause(error: unknown): string {
  let detail: unknown;
  for (let cause = (error as { cause?: unknown }).cause, depth = 0; cause && depth < 5; depth++) {
    const { code, message } = cause as { code?: unknown; message?: unknown };
    detail = code ?? message ?? detail;
    cause = (cause as { cause?: unknown }).cause;
  }
  return detail ? ` (${String(detail)})` : "";
}

function definedOnly<T extends object>(options: T): T {
  return Object.fromEntries(Object.entries(options).filter(([, value]) => value !== undefined)) as T;
}

function validate(settings: Settings) {
  const fail = (message: string) => {
    throw new Error(`openai policy: ${message}`);
  };
  if (!URL.canParse(settings.baseURL) || !/^https?:$/.test(new URL(settings.baseURL).protocol)) {
    fail(`baseURL must be an http(s) URL, got "${settings.baseURL}"`);
  }
  if (!settings.model) fail("model is empty");
  if (!(settings.temperature >= 0 && settings.temperature <= 2))
    fail(`temperature must be in [0, 2], got ${settings.temperature}`);
  if (!(settings.topP > 0 && settings.topP <= 1)) fail(`topP must be in (0, 1], got ${settings.topP}`);
  const integer = (name: string, value: number, min: number) => {
    if (!Number.isInteger(value) || value < min) fail(`${name} must be an integer >= ${min}, got ${value}`);
  };
  integer("concurrency", settings.concurrency, 1);
  integer("maxRetries", settings.maxRetries, 0);
  integer("timeoutMs", settings.timeoutMs, 1);
  integer("retryBaseDelayMs", settings.retryBaseDelayMs, 0);
  integer("retryMaxDelayMs", settings.retryMaxDelayMs, 0);
}
