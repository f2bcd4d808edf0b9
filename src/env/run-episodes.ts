/**
 * The episode loop: the multi-turn MDP every policy runs through.
 *
 *   prompt → policy acts → parse the action → call the tool → append the observation → … → answer
 *
 * Episodes advance in lock-step: each iteration asks the policy for one turn of every live episode
 * in a single batched `act` call (the embedded model decodes them together with one KV cache; an
 * endpoint policy sends the requests concurrently), runs the tool calls concurrently, and admits
 * new episodes as others finish, so the batch stays full.
 *
 * Rules (documented here, tested in run-episodes.test.ts):
 * - A malformed action (no tag, unknown tool, bad arguments, unparseable JSON) is a `format-error`
 *   turn: the policy gets an error observation and the episode continues; after `maxFormatErrors`
 *   format errors it ends with `endReason = "format-error"`. Nothing the model writes can throw.
 * - A policy failure (an endpoint that still fails after its retries) ends the episode with
 *   `endReason = "policy-error"` and the step's `failure` (infra for an upstream 5xx, timeout or
 *   malformed reply: types/failure.ts). It stays in the results; an infra one leaves pass@k
 *   denominators, RL groups and SFT data, and is counted.
 * - Infra failures end the episode too, as `policy-error` with `failure` infra: a tool result whose
 *   machinery broke (`toolResult.failure.class === "infra"`: a sandbox died), or a verifier that
 *   threw or gave no verdict within `verifierTimeoutMs` (the answer stays, `correct` false,
 *   `outcomeReward` null: never scored as wrong). A verifier's `ClassifiedError` keeps its own class.
 * - Budgets: at most `maxTurns` turns and `maxTokens` generated tokens per episode; a turn cut by
 *   the token budget without a complete action ends the episode with `max-tokens`.
 * - Tool failures are data: the tool result (with its status and `injected` label) goes into the
 *   turn and the observation; they never end the episode by themselves, except an infra one
 *   (above). A tool's real error (`failure.class === "tool"`) is the policy's to cope with.
 */
import { activeFaultPlan } from "../core/faults.ts";
import { callTool, toolSpec } from "../tools/index.ts";
import type { Failure } from "../types/failure.ts";
import type { Policy, PolicyContext, PolicyStep, ToolSpec } from "../types/policy.ts";
import type { Task } from "../types/task.ts";
import type { AnyTool, ToolResult } from "../types/tool.ts";
import type { Action, EndReason, Trajectory, Turn } from "../types/trajectory.ts";
import { DEFAULT_VERIFIER_TIMEOUT_MS, judgeAnswer, type VerifyContext } from "./judge-answer.ts";
import { parseChatAction, parseTextAction } from "./parse-action.ts";
import { renderObservation, renderPrompt } from "./protocol.ts";

export interface EpisodeSpec {
  task: Task;
  /** Seed of the episode: policy sampling and tool noise derive from it. */
  seed: number;
  /** Group id (GRPO groups: episodes of one task rolled out together). */
  group?: number;
  /** Stable id of the episode; defaults to `<task.id>#<seed>`. */
  id?: string;
}

export interface EpisodeBudgets {
  maxTurns: number;
  /** Most policy tokens per episode (text length in words for token-less policies). */
  maxTokens: number;
  /** Most policy tokens in one turn. */
  maxTurnTokens: number;
  maxFormatErrors: number;
  toolTimeoutMs: number;
  /** Milliseconds a verifier may take to judge a final answer; past it the episode is infra (judge-answer.ts). */
  verifierTimeoutMs: number;
}

export const DEFAULT_BUDGETS: EpisodeBudgets = {
  maxTurns: 14,
  maxTokens: 160,
  maxTurnTokens: 32,
  maxFormatErrors: 2,
  toolTimeoutMs: 10_000,
  verifierTimeoutMs: DEFAULT_VERIFIER_TIMEOUT_MS,
};

export interface RunEpisodesOptions {
  policy: Policy;
  episodes: readonly EpisodeSpec[];
  /** The tools of an episode (built over the task's world; noise seeded from the episode seed). */
  tools: (task: Task, seed: number) => readonly AnyTool[];
  /** Decides correctness of a final answer (within `budgets.verifierTimeoutMs`; `context.signal` aborts then). */
  verify: (task: Task, answer: string | null, context?: VerifyContext) => boolean | Promise<boolean>;
  budgets?: Partial<EpisodeBudgets>;
  /** Most episodes live at once (the batch size of `policy.act`). */
  batchSize?: number;
  /** Called as each episode ends (the store writes it here, so a crash loses only live episodes). */
  onEpisode?: (trajectory: Trajectory) => void | Promise<void>;
  signal?: AbortSignal;
}

interface LiveEpisode {
  spec: EpisodeSpec;
  id: string;
  tools: readonly AnyTool[];
  specs: ToolSpec[];
  context: PolicyContext;
  turns: Turn[];
  tokensUsed: number;
  formatErrors: number;
}

/** Runs every episode to its end and returns the trajectories in the order of `episodes`. */
export async function runEpisodes(options: RunEpisodesOptions): Promise<Trajectory[]> {
  // A malformed AGENTRL_FAULTS fails here, before any episode, not inside an adapter's error path.
  activeFaultPlan();
  const budgets = { ...DEFAULT_BUDGETS, ...options.budgets };
  const { policy } = options;
  const batchSize = Math.max(1, options.batchSize ?? 64);
  const results: Trajectory[] = new Array(options.episodes.length);
  const queue = options.episodes.map((spec, index) => ({ spec, index }));
  const live = new Map<number, LiveEpisode>();
  let next = 0;

  const admit = () => {
    while (live.size < batchSize && next < queue.length) {
      const { spec, index } = queue[next++];
      live.set(index, startEpisode(spec, policy, options.tools(spec.task, spec.seed), budgets));
    }
  };

  admit();
  while (live.size > 0) {
    // Scripted policies and tools can answer in microtasks only: without a turn of the event loop
    // per step, a whole run would pass before a signal handler (Ctrl-C, SIGTERM) or a timer runs.
    await new Promise((resolve) => setImmediate(resolve));
    if (options.signal?.aborted) throw new Error("runEpisodes: aborted");
    const entries = [...live.entries()];
    for (const [, episode] of entries) {
      episode.context.maxTokens = Math.min(budgets.maxTurnTokens, budgets.maxTokens - episode.tokensUsed);
    }
    let steps: PolicyStep[];
    try {
      steps = await policy.act(
        entries.map(([, episode]) => episode.context),
        { signal: options.signal },
      );
      if (steps.length !== entries.length) {
        throw new Error(`policy ${policy.id} returned ${steps.length} steps for ${entries.length} contexts`);
      }
    } catch (error) {
      // A policy that throws is a bug in the policy, not in the model's output: record it on every
      // live episode (nothing is lost from the denominator) and stop those episodes.
      const message = error instanceof Error ? error.message : String(error);
      steps = entries.map(() => ({
        text: "",
        tokenIds: [],
        logprobs: null,
        finishReason: "error",
        error: message,
      }));
    }
    const ended = await Promise.all(
      entries.map(([, episode], i) => advance(episode, steps[i], policy, budgets, options)),
    );
    const finished: string[] = [];
    for (let i = 0; i < entries.length; i++) {
      const trajectory = ended[i];
      if (!trajectory) continue;
      const [index, episode] = entries[i];
      live.delete(index);
      finished.push(episode.id);
      results[index] = trajectory;
      await options.onEpisode?.(trajectory);
    }
    if (finished.length > 0) policy.release?.(finished);
    admit();
  }
  return results;
}

function startEpisode(
  spec: EpisodeSpec,
  policy: Policy,
  tools: readonly AnyTool[],
  budgets: EpisodeBudgets,
): LiveEpisode {
  const text = renderPrompt(spec.task.question);
  const id = spec.id ?? `${spec.task.id}#${spec.seed}`;
  const turns: Turn[] = [];
  const specs = tools.map(toolSpec);
  return {
    spec,
    id,
    tools,
    specs,
    turns,
    tokensUsed: 0,
    formatErrors: 0,
    context: {
      episodeId: id,
      task: spec.task,
      prompt: { text, tokenIds: policy.tokenizer?.encode(text) ?? [] },
      turns,
      tools: specs,
      seed: spec.seed,
      maxTokens: budgets.maxTurnTokens,
    },
  };
}

/** Applies one policy step; returns the finished trajectory when the episode ends. */
async function advance(
  episode: LiveEpisode,
  step: PolicyStep,
  policy: Policy,
  budgets: EpisodeBudgets,
  options: RunEpisodesOptions,
): Promise<Trajectory | null> {
  const index = episode.turns.length;
  if (step.error !== undefined || step.finishReason === "error") {
    return finish(episode, policy, "policy-error", null, options, step.error ?? "policy error", step.failure);
  }
  episode.tokensUsed += step.tokenIds.length > 0 ? step.tokenIds.length : countWords(step.text);
  const action: Action =
    policy.protocol === "chat"
      ? parseChatAction(step, episode.tools)
      : parseTextAction(step.text, episode.tools);
  const turn: Turn = {
    index,
    text: step.text,
    tokenIds: step.tokenIds,
    logprobs: step.logprobs,
    action,
    rewards: {},
  };
  episode.turns.push(turn);

  if (action.type === "answer") return finish(episode, policy, "answer", action.answer, options);
  if (action.type === "format-error") {
    episode.formatErrors++;
    if (step.finishReason === "length" && episode.tokensUsed >= budgets.maxTokens) {
      return finish(episode, policy, "max-tokens", null, options);
    }
    if (episode.formatErrors >= budgets.maxFormatErrors) {
      return finish(episode, policy, "format-error", null, options);
    }
    observe(turn, policy, `error : ${action.error}`);
  } else {
    const tool = episode.tools.find((candidate) => candidate.name === action.tool)!;
    const result: ToolResult = await callTool(tool, action.arguments, {
      timeoutMs: budgets.toolTimeoutMs,
      signal: options.signal,
      key: `${episode.id}:${index}`,
    });
    turn.toolResult = result;
    observe(turn, policy, result.content);
    if (result.failure?.class === "infra") {
      return finish(episode, policy, "policy-error", null, options, result.failure.message, result.failure);
    }
  }
  if (episode.turns.length >= budgets.maxTurns) return finish(episode, policy, "max-turns", null, options);
  if (episode.tokensUsed >= budgets.maxTokens) return finish(episode, policy, "max-tokens", null, options);
  return null;
}

function observe(turn: Turn, policy: Policy, content: string) {
  const text = policy.protocol === "chat" ? content : renderObservation(content);
  turn.observation = { text, tokenIds: policy.tokenizer?.encode(text) ?? [] };
}

async function finish(
  episode: LiveEpisode,
  policy: Policy,
  endReason: EndReason,
  answer: string | null,
  options: RunEpisodesOptions,
  error?: string,
  failure?: Failure,
): Promise<Trajectory> {
  const verdict =
    answer === null
      ? { correct: false }
      : await judgeAnswer(
          options.verify,
          episode.spec.task,
          answer,
          episode.id,
          options.budgets?.verifierTimeoutMs ?? DEFAULT_BUDGETS.verifierTimeoutMs,
        );
  failure ??= verdict.failure;
  const unscored = failure?.class === "infra";
  return {
    id: episode.id,
    taskId: episode.spec.task.id,
    family: episode.spec.task.family,
    policyId: policy.id,
    seed: episode.spec.seed,
    ...(episode.spec.group !== undefined ? { group: episode.spec.group } : {}),
    prompt: episode.context.prompt,
    turns: episode.turns,
    finalAnswer: answer,
    correct: verdict.correct,
    outcomeReward: unscored ? null : verdict.correct ? 1 : 0,
    endReason,
    ...(failure ? { failure } : {}),
    ...(error !== undefined ? { info: { error } } : {}),
  };
}

function countWords(text: string): number {
  return text.split(/\s+/).filter(Boolean).length;
}
