/**
 * One agent-server episode: agentrl's episode loop (or a user's `--agent`) against a rollout server,
 * through the recording gateway, turned into verl's `AgentLoopOutput` fields (agent-server.md).
 *
 * Exact ids. The loop's chat policy talks to the episode's gateway URL; the gateway asks the
 * upstream for vLLM's `return_token_ids`/`logprobs` and records every call. The loop makes exactly
 * one call per turn (no retries: a failed call is the episode's failure), so turn j is call j:
 * its sampled ids and log-probs are call j's, and the observation after it is what call j+1's
 * prompt ids add after call j's prompt and completion. The first call whose prompt does not extend
 * that exactly (a prefix break) ends the exact part: later turns keep their text only, so
 * `flattenTrajectory` is always an exact context and the response verl trains on is exactly what
 * the rollout server saw and sampled. A user's agent is recorded the same way by the gateway
 * (src/agents/run-episode.ts).
 *
 * Rewards: the loop's trajectory is scored by the reward spec (`withRewards`: outcome, and turn
 * terms per turn); an agent's outcome is its posted reward, else the verifier's 1/0, and its turn
 * scores are its posted turn rewards. A policy error (upstream failure, timeout) scores 0.
 */
import { randomBytes, randomInt } from "node:crypto";
import { runAgentEpisode } from "../agents/run-episode.ts";
import type { AgentFunction } from "../agents/types.ts";
import { type EpisodeBudgets, runEpisodes } from "../env/run-episodes.ts";
import type { Gateway } from "../gateway/server.ts";
import { textOnlyRefusal } from "../gateway/text-only.ts";
import type { GatewayInfo } from "../gateway/trajectory.ts";
import type { GatewayCall } from "../gateway/types.ts";
import { createOpenAiPolicy } from "../policy/openai/policy.ts";
import { type RewardSpec, scoreTrajectory, TURN_REWARD_TOTAL, withRewards } from "../reward/spec.ts";
import { type Failure, infraFailure } from "../types/failure.ts";
import type { Task } from "../types/task.ts";
import type { AnyTool } from "../types/tool.ts";
import { flattenTrajectory, type Trajectory, type Turn } from "../types/trajectory.ts";
import { callFailure } from "./episode-failure.ts";

/** Sampling settings of an episode (verl's `sampling_params`). */
export interface EpisodeSampling {
  temperature: number;
  topP: number;
  /** Top-k (sent to the upstream only when > 0). */
  topK: number | null;
}

/** The gateway an episode runs through, with the calls it records per episode. */
export interface EpisodeGateway {
  gateway: Gateway;
  /** Key the episode's client sends (the gateway's token). */
  apiKey: string;
  /** Takes the recorded calls of an episode out of the gateway's log. */
  takeCalls(episodeId: string): GatewayCall[];
}

export interface EpisodeSetup {
  /** The tools of a task's episode (noise seeded from the episode seed). */
  tools: (task: Task, seed: number) => readonly AnyTool[];
  verify: (task: Task, answer: string | null) => boolean | Promise<boolean>;
  budgets: EpisodeBudgets;
  reward: RewardSpec | string;
  /** A user's agent instead of agentrl's episode loop. */
  agent?: AgentFunction;
  timeoutMs: number;
}

export interface EpisodeInput {
  task: Task;
  sampling: EpisodeSampling;
  seed?: number;
  /** verl's `rollout.response_length`. */
  responseLength?: number;
  /** Stored key (default the episode id). */
  key?: string;
  /** verl's row data, recorded. */
  verl?: Record<string, unknown>;
  signal?: AbortSignal;
}

/** The response of `POST /v1/episodes` (agent-server.md). */
export interface VerlEpisode {
  episode_id: string;
  prompt_ids: number[];
  response_ids: number[];
  response_mask: number[];
  response_logprobs: number[] | null;
  reward_score: number;
  turn_scores: number[];
  turn_spans: [number, number][];
  num_turns: number;
  correct: boolean;
  end_reason: string;
  error: string | null;
  /** Why the episode failed when it is not simply a wrong answer (episode-failure.ts); null otherwise. */
  failure: Failure | null;
  truncated: boolean;
  metrics: {
    generate_sequences: number;
    tool_calls: number;
    total: number;
    prefix_breaks: number;
  };
  extra_fields: { outcome_terms?: Record<string, number | null>; turn_terms?: Record<string, unknown> };
}

export interface RunEpisodeResult {
  output: VerlEpisode;
  /** The stored trajectory (exact ids, rewards, `info.verl`, `info.gateway`). */
  trajectory: Trajectory;
}

function startsWith(ids: readonly number[], prefix: readonly number[]): boolean {
  if (prefix.length > ids.length) return false;
  for (let i = 0; i < prefix.length; i++) if (ids[i] !== prefix[i]) return false;
  return true;
}

function textOnly(turn: Turn): Turn {
  return {
    ...turn,
    tokenIds: [],
    logprobs: null,
    ...(turn.observation ? { observation: { text: turn.observation.text, tokenIds: [] } } : {}),
  };
}

/**
 * The loop's trajectory with the exact ids of its calls (module comment): turn j ↔ successful call
 * j. Returns the number of prefix breaks (0 or 1: the exact part ends at the first).
 */
export function withCallIds(
  loop: Trajectory,
  calls: readonly GatewayCall[],
): { trajectory: Trajectory; prefixBreaks: number; aligned: boolean } {
  const ok = calls.filter((call) => !call.error && call.choices.length > 0).sort((a, b) => a.seq - b.seq);
  const aligned = ok.length === loop.turns.length;
  const first = ok[0]?.promptTokenIds ?? null;
  const turns: Turn[] = [];
  let context: number[] | null = first ? [...first] : null;
  let prefixBreaks = 0;
  for (let j = 0; j < loop.turns.length; j++) {
    const turn = loop.turns[j];
    const call = ok[j];
    const choice = call?.choices[0];
    const exact =
      aligned &&
      context !== null &&
      call?.promptTokenIds != null &&
      choice?.tokenIds != null &&
      startsWith(call.promptTokenIds, context);
    if (!exact) {
      if (aligned && context !== null && call?.promptTokenIds && choice?.tokenIds) prefixBreaks++;
      // The exact part ended (the previous turn's observation ids, set only from an extending
      // next call, stay empty).
      context = null;
      turns.push(textOnly(turn));
      continue;
    }
    const promptIds = call!.promptTokenIds!;
    const sampled = choice!.tokenIds!;
    if (j > 0) {
      const previous = turns[j - 1];
      turns[j - 1] = {
        ...previous,
        observation: {
          text: previous.observation?.text ?? "",
          tokenIds: promptIds.slice(context!.length),
        },
      };
    }
    turns.push({
      ...turn,
      tokenIds: [...sampled],
      logprobs: choice!.logprobs ? [...choice!.logprobs] : null,
      // Its observation's ids come from the next call (none when the episode ends here).
      ...(turn.observation ? { observation: { text: turn.observation.text, tokenIds: [] } } : {}),
    });
    context = [...promptIds, ...sampled];
  }
  return {
    trajectory: { ...loop, prompt: { text: loop.prompt.text, tokenIds: first ? [...first] : [] }, turns },
    prefixBreaks,
    aligned,
  };
}

/** verl's sequence fields of a trajectory with exact ids: prompt, response, mask, log-probs, turn spans. */
export function verlSequence(trajectory: Trajectory) {
  const flat = flattenTrajectory(trajectory);
  const start = trajectory.prompt.tokenIds.length;
  const spans: [number, number][] = [];
  let offset = 0;
  for (const turn of trajectory.turns) {
    spans.push([offset, offset + turn.tokenIds.length]);
    offset += turn.tokenIds.length + (turn.observation?.tokenIds.length ?? 0);
  }
  const missingLogprobs = trajectory.turns.some((turn) => turn.tokenIds.length > 0 && !turn.logprobs);
  return {
    promptIds: flat.tokenIds.slice(0, start),
    responseIds: flat.tokenIds.slice(start),
    mask: flat.lossMask.slice(start),
    logprobs: missingLogprobs ? null : flat.logprobs.slice(start),
    spans,
  };
}

function seconds(ms: number): number {
  return Math.round(ms) / 1000;
}

/** Runs one episode and answers verl's fields. Never throws for the episode's own failures. */
export async function runVerlEpisode(
  input: EpisodeInput,
  setup: EpisodeSetup,
  route: EpisodeGateway,
): Promise<RunEpisodeResult> {
  const { task } = input;
  const { gateway } = route;
  const seed = input.seed ?? randomInt(0, 0x7fffffff);
  const started = performance.now();
  const budgets = {
    ...setup.budgets,
    ...(input.responseLength !== undefined
      ? { maxTokens: Math.min(setup.budgets.maxTokens, input.responseLength) }
      : {}),
  };
  const signal = input.signal
    ? AbortSignal.any([input.signal, AbortSignal.timeout(setup.timeoutMs)])
    : AbortSignal.timeout(setup.timeoutMs);

  let trajectory: Trajectory;
  let prefixBreaks = 0;
  let gatewayInfo: GatewayInfo | undefined;
  let calls: GatewayCall[];
  let rewardScore: number;
  let turnScores: number[];
  let extra: VerlEpisode["extra_fields"] = {};
  let timedOut = false;
  if (setup.agent) {
    const key = input.key ?? `agent-${randomBytes(8).toString("hex")}`;
    const episode = await runAgentEpisode({
      gateway,
      agent: setup.agent,
      task,
      key,
      seed,
      verify: setup.verify,
      apiKey: route.apiKey,
      timeoutMs: setup.timeoutMs,
      ...(input.signal ? { signal: input.signal } : {}),
    });
    trajectory = episode.trajectory;
    prefixBreaks = episode.prefixBreaks;
    gatewayInfo = trajectory.info?.gateway as GatewayInfo | undefined;
    calls = route.takeCalls(gatewayInfo?.episodeId ?? "");
    rewardScore = trajectory.endReason === "policy-error" ? 0 : (trajectory.outcomeReward ?? 0);
    turnScores = trajectory.turns.map((turn) => turn.rewards.posted ?? 0);
  } else {
    const episodeId = `ep-${randomBytes(8).toString("hex")}`;
    gateway.openEpisode(episodeId, { taskId: task.id, family: task.family, seed });
    const policy = createOpenAiPolicy({
      baseURL: gateway.episodeURL(episodeId),
      model: gateway.model,
      apiKey: route.apiKey,
      temperature: input.sampling.temperature,
      topP: input.sampling.topP,
      concurrency: 1,
      maxRetries: 0,
      timeoutMs: setup.timeoutMs,
      ...(input.sampling.topK !== null && input.sampling.topK > 0
        ? { extraBody: { top_k: input.sampling.topK } }
        : {}),
    });
    let loop: Trajectory | null = null;
    let failure: string | undefined;
    const stopped = () =>
      input.signal?.aborted
        ? "the agent-server is shutting down"
        : `timeout: the episode ran past ${setup.timeoutMs} ms`;
    try {
      [loop] = await runEpisodes({
        policy,
        episodes: [{ task, seed, id: input.key ?? episodeId }],
        tools: setup.tools,
        verify: setup.verify,
        budgets,
        batchSize: 1,
        signal,
      });
    } catch (error) {
      failure = signal.aborted ? stopped() : `the episode failed: ${(error as Error).message}`;
    }
    timedOut = signal.aborted && !input.signal?.aborted;
    const loopError =
      loop?.endReason === "policy-error"
        ? `${signal.aborted ? `${stopped()}: ` : ""}${String(loop.info?.error ?? "policy error")}`
        : undefined;
    if (loop && loopError) loop = { ...loop, info: { ...loop.info, error: loopError } };
    const built = gateway.finishEpisode(episodeId, {
      finalAnswer: loop?.finalAnswer ?? null,
      ...(failure || loopError ? { error: failure ?? loopError } : {}),
    });
    calls = route.takeCalls(episodeId);
    gatewayInfo = built.trajectory.info?.gateway as GatewayInfo | undefined;
    if (loop) {
      const merged = withCallIds(loop, calls);
      prefixBreaks = merged.prefixBreaks;
      const scored = withRewards(merged.trajectory, task, setup.reward);
      trajectory = scored;
      rewardScore = scored.endReason === "policy-error" ? 0 : (scored.outcomeReward ?? 0);
      turnScores = scored.turns.map((turn) => turn.rewards[TURN_REWARD_TOTAL] ?? 0);
      const scores = scoreTrajectory(merged.trajectory, task, setup.reward);
      extra = { outcome_terms: scores.outcomeTerms, turn_terms: scores.turnTerms };
      if (!merged.aligned)
        trajectory = {
          ...trajectory,
          info: {
            ...trajectory.info,
            verlAlignment: `${loop.turns.length} turns but ${calls.filter((c) => !c.error).length} successful calls`,
          },
        };
    } else {
      trajectory = { ...built.trajectory, id: input.key ?? episodeId, endReason: "policy-error" };
      prefixBreaks = built.prefixBreaks;
      rewardScore = 0;
      turnScores = trajectory.turns.map(() => 0);
    }
  }

  const total = performance.now() - started;
  const generate = calls.reduce((sum, call) => sum + call.latencyMs, 0);
  const sequence = verlSequence(trajectory);
  const cut = input.responseLength ?? Number.POSITIVE_INFINITY;
  const truncated = sequence.responseIds.length > cut;
  const answered = calls.filter((call) => !call.error && call.choices.length > 0);
  const error =
    trajectory.endReason === "policy-error"
      ? String(trajectory.info?.error ?? (gatewayInfo ? "an upstream call failed" : "policy error"))
      : answered.length > 0 && !answered[0].promptTokenIds
        ? (textOnlyRefusal([trajectory], "verl agent loop") ??
          `the rollout server ${gateway.model} returned no token ids: the response is empty`)
        : null;
  const noIds = answered.length > 0 && !answered[0].promptTokenIds;
  // A failed upstream call is classified where it failed (the gateway's record of it); the episode
  // loop only saw the gateway's 502 for it.
  const failedCall = trajectory.endReason === "policy-error" ? callFailure(calls) : null;
  const failure: Failure | null =
    failedCall ??
    trajectory.failure ??
    (trajectory.endReason === "policy-error"
      ? infraFailure(timedOut ? "episode-timeout" : "episode-failed", error ?? "the episode failed")
      : noIds
        ? infraFailure("no-token-ids", error ?? "no token ids")
        : null);
  const output: VerlEpisode = {
    episode_id: gatewayInfo?.episodeId ?? trajectory.id,
    prompt_ids: sequence.promptIds,
    response_ids: truncated ? sequence.responseIds.slice(0, cut) : sequence.responseIds,
    response_mask: truncated ? sequence.mask.slice(0, cut) : sequence.mask,
    response_logprobs: sequence.logprobs && truncated ? sequence.logprobs.slice(0, cut) : sequence.logprobs,
    reward_score: rewardScore,
    turn_scores: turnScores.map((value) => value ?? 0),
    turn_spans: sequence.spans,
    num_turns: 1 + trajectory.turns.length + trajectory.turns.filter((turn) => turn.observation).length,
    correct: trajectory.correct,
    end_reason: trajectory.endReason,
    error,
    failure,
    truncated,
    metrics: {
      generate_sequences: seconds(generate),
      tool_calls: seconds(Math.max(0, total - generate)),
      total: seconds(total),
      prefix_breaks: prefixBreaks,
    },
    extra_fields: extra,
  };
  const stored: Trajectory = {
    ...trajectory,
    ...(failure ? { failure } : {}),
    id: input.key ?? trajectory.id,
    outcomeReward: rewardScore,
    info: {
      ...trajectory.info,
      ...(gatewayInfo ? { gateway: gatewayInfo } : {}),
      ...(error ? { error } : {}),
      verl: { ...input.verl, truncated, rewardScore, responseLength: input.responseLength ?? null },
    },
  };
  return { output, trajectory: stored };
}
