/**
 * The `token-exactness` check, for policies behind the recording gateway (an `--agent` run): does
 * each call's prompt extend the previous prompt and completion token for token, and do the sampled
 * ids hold the token that ends each turn?
 *
 * - Prefix breaks: the gateway counts a break when call i+1's prompt ids do not start with call i's
 *   prompt + completion ids (a chat template that drops earlier `<think>` blocks, an agent that
 *   edits its history). Each break splits the episode into segments: RL then trains on contexts the
 *   model never saw. The rate is breaks per turn transition; above `maxBreakRate` the check fails.
 * - Stop tokens: a turn that ended by stopping should end in one of a few stop ids (end-of-turn,
 *   a closing tag). When the last sampled ids of stopped turns are spread over many values, the
 *   server dropped the stop token from the completion ids: it is then masked out of the loss (it
 *   lands in the next prompt as template text) and the model is never trained to end its turn.
 *   Judged when at least `MIN_STOPPED_TURNS` stopped turns carry ids: the `STOP_ID_KINDS` most
 *   common last ids must cover `STOP_COVERAGE` of them.
 * Calls without token ids cannot be checked for exactness at all: that fails too.
 */
import type { GatewayInfo } from "../gateway/trajectory.ts";
import type { Trajectory } from "../types/trajectory.ts";
import type { DoctorCheck } from "./types.ts";

export const DEFAULT_MAX_BREAK_RATE = 0.01;
const MIN_STOPPED_TURNS = 8;
const STOP_ID_KINDS = 4;
const STOP_COVERAGE = 0.9;

export interface GatewayEpisode {
  trajectory: Trajectory;
  prefixBreaks: number;
}

function percent(value: number): string {
  return `${Math.round(value * 1000) / 10}%`;
}

/** Last sampled id of each turn that ended with a complete action (a tool call or an answer). */
function stoppedTurnEnds(trajectory: Trajectory): number[] {
  return trajectory.turns
    .filter((turn) => turn.tokenIds.length > 0 && turn.action.type !== "format-error")
    .map((turn) => turn.tokenIds[turn.tokenIds.length - 1]);
}

/**
 * Where the breaks were and what they cost, when the gateway recorded it (episodes recorded
 * before it was counted have no sites): the tokens from each break on are prefilled again and
 * trained as a context the model never saw.
 */
function breakCost(sites: { prompt: number; sampled: number; short: number }, lostTokens: number): string {
  const counted = sites.prompt + sites.sampled + sites.short;
  if (counted === 0) return "";
  const parts = [
    sites.prompt > 0
      ? `${sites.prompt} in earlier turns re-rendered (a template dropping <think> or reformatting tool calls)`
      : "",
    sites.sampled > 0 ? `${sites.sampled} in the sampled ids (the turn came back as other ids)` : "",
    sites.short > 0 ? `${sites.short} prompts cut short` : "",
  ].filter(Boolean);
  return ` (${parts.join(", ")}; ${lostTokens} tokens of context from the breaks on, prefilled again and trained as a context the model never saw)`;
}

export function checkTokenExactness(options: {
  episodes: readonly GatewayEpisode[];
  maxBreakRate?: number;
}): DoctorCheck {
  const maxBreakRate = options.maxBreakRate ?? DEFAULT_MAX_BREAK_RATE;
  let calls = 0;
  let transitions = 0;
  let breaks = 0;
  let missing = 0;
  let brokenEpisodes = 0;
  const sites = { prompt: 0, sampled: 0, short: 0 };
  let lostTokens = 0;
  const ends = new Map<number, number>();
  for (const episode of options.episodes) {
    const info = episode.trajectory.info?.gateway as GatewayInfo | undefined;
    const episodeCalls = (info?.calls ?? 0) - (info?.failedCalls ?? 0);
    calls += episodeCalls;
    transitions += Math.max(0, episodeCalls - 1);
    breaks += episode.prefixBreaks;
    missing += info?.missingTokenIds ?? 0;
    if (episode.prefixBreaks > 0) brokenEpisodes++;
    for (const site of ["prompt", "sampled", "short"] as const)
      sites[site] += info?.prefixBreakSites?.[site] ?? 0;
    lostTokens += info?.prefixLostTokens ?? 0;
    for (const id of stoppedTurnEnds(episode.trajectory)) ends.set(id, (ends.get(id) ?? 0) + 1);
  }
  const breakRate = transitions === 0 ? 0 : breaks / transitions;
  const stopped = [...ends.values()].reduce((a, b) => a + b, 0);
  const topCovered = [...ends.values()]
    .sort((a, b) => b - a)
    .slice(0, STOP_ID_KINDS)
    .reduce((a, b) => a + b, 0);
  const stopJudged = stopped >= MIN_STOPPED_TURNS;
  const stopCoverage = stopped === 0 ? 0 : topCovered / stopped;
  const stopMasked = stopJudged && stopCoverage < STOP_COVERAGE;
  const problems: string[] = [];
  if (calls > 0 && missing === calls) {
    problems.push(
      `none of the ${calls} calls returned token ids, so nothing can be checked (serve with vLLM's return_token_ids or agentrl serve)`,
    );
  }
  if (breakRate > maxBreakRate) {
    problems.push(
      `${breaks} prefix breaks in ${transitions} turn transitions (${percent(breakRate)}, ${brokenEpisodes} of ${options.episodes.length} episodes; threshold ${percent(maxBreakRate)}): later prompts do not extend the earlier prompt and completion token for token` +
        breakCost(sites, lostTokens),
    );
  }
  if (stopMasked) {
    problems.push(
      `stopped turns end in ${ends.size} different ids (the ${STOP_ID_KINDS} most common cover ${percent(stopCoverage)}): the stop token is missing from the sampled ids, so the loss never trains the model to end a turn`,
    );
  }
  const ok = problems.length === 0;
  const detail = ok
    ? `${options.episodes.length} episodes, ${calls} calls: ${breaks} prefix breaks in ${transitions} turn transitions (${percent(breakRate)}, threshold ${percent(maxBreakRate)})` +
      (stopJudged
        ? `; stopped turns end in ${ends.size} distinct ids (stop tokens are sampled, so the loss mask covers them)`
        : `; too few stopped turns with ids (${stopped}) to judge stop tokens`) +
      (missing > 0 ? `; ${missing} calls came back without token ids` : "") +
      "."
    : `${problems.join("; ")}.`;
  return {
    id: "token-exactness",
    ok,
    detail,
    changes: ok
      ? []
      : [
          {
            kind: "fix-template",
            text: "make every call's prompt the exact continuation of the previous prompt and completion: a chat template that keeps earlier <think> blocks (or an agent that does not rewrite its history), and completion ids that include the stop token",
          },
        ],
    data: {
      episodes: options.episodes.length,
      calls,
      transitions,
      prefixBreaks: breaks,
      prefixBreakSites: sites,
      prefixLostTokens: lostTokens,
      breakRate,
      maxBreakRate,
      missingTokenIds: missing,
      stoppedTurns: stopped,
      distinctStopIds: ends.size,
      stopCoverage,
      stopTokensMasked: stopMasked,
    },
  };
}

/**
 * token-exactness for a policy that renders each turn with its own chat template in the episode
 * loop (`hf:<folder>`): the policy counts the turns whose rendering no longer extended the ids its
 * slot held (the template re-rendered an earlier turn, or re-encoded a sampled one) over the turns
 * that continued an episode. Each such turn was prefilled again from the rendering, so the model
 * conditioned on ids it did not sample; trained on, that is a context it never saw.
 */
export function checkTemplateExactness(options: {
  prefixBreaks: number;
  continuedTurns: number;
  maxBreakRate?: number;
}): DoctorCheck {
  const { prefixBreaks: breaks, continuedTurns: continued } = options;
  const maxBreakRate = options.maxBreakRate ?? DEFAULT_MAX_BREAK_RATE;
  const breakRate = continued === 0 ? 0 : breaks / continued;
  const ok = breakRate <= maxBreakRate;
  const counted = `${breaks} of ${continued} continued turns re-rendered by the chat template did not extend the ids the model was fed and sampled before (${percent(breakRate)}, threshold ${percent(maxBreakRate)})`;
  return {
    id: "token-exactness",
    ok,
    detail: ok
      ? `${counted}.`
      : `${counted}: each was prefilled again from the rendering, so training on it trains a context the model never saw.`,
    changes: ok
      ? []
      : [
          {
            kind: "fix-template",
            text: "use a chat template that renders earlier turns as they were sampled (Qwen3's drops earlier <think> blocks: keep them, e.g. a template revision that preserves reasoning, or enable_thinking as sampled), or train on each turn's own prompt",
          },
        ],
    data: { continuedTurns: continued, prefixBreaks: breaks, breakRate, maxBreakRate },
  };
}

/** The check when the policy does not run behind the gateway. */
export function skippedTokenExactness(reason: string): DoctorCheck {
  return {
    id: "token-exactness",
    ok: true,
    skipped: true,
    detail: `not applicable: ${reason}.`,
    changes: [],
  };
}
