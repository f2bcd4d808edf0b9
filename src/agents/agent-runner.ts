/**
 * Running a user's agent on many episodes through one in-process recording gateway: the upstream
 * (`--policy`: a checkpoint or scripted policy served in process, or `openai:<url>#<model>`), the
 * gateway with a fresh token, the run's records (every call under `gateway/calls/<episode>/<seq>`,
 * the tools the agent offered, the in-process model's tokenizer), and `concurrency` slots
 * (agent-source.ts: worker threads for `--agent`, a process per episode for `--agent-cmd`), each
 * episode under its timeout and rerun up to `retries` times with the same seed when an upstream
 * call (not the agent) failed. An episode whose upstream still failed after the retries carries an
 * `infra` failure (`upstream-failed`): counted, never scored as the agent's or the policy's.
 * `evaluateAgent` (eval --agent) and `collectAgentDataset` (data collect --agent) both run their
 * episodes with it.
 */
import { randomBytes } from "node:crypto";
import { EVAL_TOKENIZER_STATE_KEY } from "../eval/eval-run.ts";
import { tokenizerFingerprint } from "../eval/tokenizer-fingerprint.ts";
import { type ResolveUpstreamOptions, resolveUpstream } from "../gateway/resolve-upstream.ts";
import { type Gateway, startGateway } from "../gateway/server.ts";
import type { GatewayInfo } from "../gateway/trajectory.ts";
import { toolSpecsFromRequest } from "../serve/context.ts";
import type { ChatTool } from "../serve/request.ts";
import type { Store } from "../store/index.ts";
import { infraFailure } from "../types/failure.ts";
import type { Task } from "../types/task.ts";
import type { Trajectory } from "../types/trajectory.ts";
import { type AgentSource, openSlot } from "./agent-source.ts";
import { type AgentEpisode, runAgentEpisode } from "./run-episode.ts";
import type { AgentSlot } from "./slot.ts";
import { startToolsServer, type ToolsServer } from "./tools-server.ts";

export interface AgentRunnerOptions {
  agent: AgentSource;
  /** The model behind the gateway: checkpoint, scripted name or `openai:<url>#<model>`. */
  policy: string;
  /** Policy id written into the trajectories. */
  policyId: string;
  temperature?: number;
  topP?: number;
  /** Tokens per call when the agent sends no max_tokens (in-process upstream). */
  maxTurnTokens: number;
  upstream?: Omit<ResolveUpstreamOptions, "temperature" | "topP" | "maxTokens">;
  verify: (task: Task, answer: string | null) => boolean | Promise<boolean>;
  timeoutMs: number;
  /** Reruns of an episode that failed because an upstream call did. */
  retries: number;
  concurrency: number;
  /** Where the calls, tools and tokenizer are recorded. */
  record: { store: Store; runId: string };
  signal?: AbortSignal;
}

export interface AgentEpisodeItem {
  task: Task;
  /** Stored trajectory id. */
  key: string;
  seed: number;
}

export interface AgentRunner {
  readonly gateway: Gateway;
  /**
   * Runs the items, at most `concurrency` at once; each finished episode goes to `onEpisode` (in
   * the order they end). Stops taking items when the signal aborts; an episode cut by the stop is
   * not handed over (it is run again on resume).
   */
  run(
    items: readonly AgentEpisodeItem[],
    onEpisode: (item: AgentEpisodeItem, episode: AgentEpisode) => void | Promise<void>,
  ): Promise<void>;
  close(): Promise<void>;
}

/** A failed episode with a failed upstream call: the infrastructure's failure, worth a rerun. */
export function upstreamFailed(trajectory: Trajectory): boolean {
  const info = trajectory.info?.gateway as GatewayInfo | undefined;
  return (
    (trajectory.endReason === "policy-error" || trajectory.failure !== undefined) &&
    (info?.failedCalls ?? 0) > 0
  );
}

export async function openAgentRunner(options: AgentRunnerOptions): Promise<AgentRunner> {
  const { store, runId } = options.record;
  const upstream = await resolveUpstream(options.policy, {
    ...options.upstream,
    ...(options.temperature !== undefined ? { temperature: options.temperature } : {}),
    ...(options.topP !== undefined ? { topP: options.topP } : {}),
    maxTokens: options.maxTurnTokens,
  });
  const token = randomBytes(24).toString("hex");
  let toolsRecorded = store.toolSpecs(runId) !== undefined;
  let tokenizerRecorded = store.getState(runId, EVAL_TOKENIZER_STATE_KEY) !== undefined;
  let gateway: Gateway;
  try {
    gateway = await startGateway({
      upstream,
      token,
      policyId: options.policyId,
      onCall: (call) => {
        // The tools the agent offered, once, for exports (`tools` of the OpenAI JSONL).
        if (!toolsRecorded && Array.isArray(call.request.tools) && call.request.tools.length > 0) {
          store.setToolSpecs(runId, toolSpecsFromRequest(call.request.tools as ChatTool[]));
          toolsRecorded = true;
        }
        store.setState(runId, `gateway/calls/${call.episodeId}/${String(call.seq).padStart(4, "0")}`, call);
        // An in-process model's tokenizer is known once a call has loaded it: perplexity and
        // exports then reuse the stored ids instead of re-encoding the texts.
        if (!tokenizerRecorded && upstream.tokenizer) {
          store.setState(runId, EVAL_TOKENIZER_STATE_KEY, tokenizerFingerprint(upstream.tokenizer));
          tokenizerRecorded = true;
        }
      },
    });
  } catch (error) {
    await upstream.close?.();
    throw error;
  }
  const { signal } = options;
  const slots: AgentSlot[] = [];
  let tools: ToolsServer | null = null;
  // Agents in other languages cannot import the world's tools: they get them over HTTP.
  if (options.agent.kind === "command") tools = await startToolsServer(token);
  const toolsURL = (task: Task) =>
    tools && task.worldSeed !== undefined ? tools.worldURL(task.worldSeed) : undefined;
  return {
    gateway,
    async run(items, onEpisode) {
      let next = 0;
      const worker = async (index: number) => {
        const slotId = `s${index}`;
        slots[index] ??= openSlot(options.agent, slotId, gateway, token);
        const slot = slots[index];
        while (next < items.length && !signal?.aborted) {
          const item = items[next++];
          const attempt = () =>
            runAgentEpisode({
              gateway,
              slot,
              slotId,
              toolsURL,
              task: item.task,
              key: item.key,
              seed: item.seed,
              verify: options.verify,
              apiKey: token,
              timeoutMs: options.timeoutMs,
              ...(signal ? { signal } : {}),
            });
          let episode = await attempt();
          // An episode that failed because the upstream did (not the agent) is run again, same seed.
          for (let n = 1; n <= options.retries && upstreamFailed(episode.trajectory); n++) {
            if (signal?.aborted) break;
            episode = await attempt();
            episode.trajectory.info = { ...episode.trajectory.info, attempts: n + 1 };
          }
          if (signal?.aborted) return;
          if (upstreamFailed(episode.trajectory)) {
            const info = episode.trajectory.info?.gateway as GatewayInfo | undefined;
            episode.trajectory.failure = infraFailure(
              "upstream-failed",
              `${info?.failedCalls ?? 0} upstream call(s) failed after ${options.retries} retr${options.retries === 1 ? "y" : "ies"}${episode.trajectory.failure ? ` (the agent then: ${episode.trajectory.failure.message})` : ""}`,
            );
          }
          await onEpisode(item, episode);
        }
      };
      const workers = Math.min(Math.max(1, options.concurrency), items.length);
      await Promise.all(Array.from({ length: workers }, (_, index) => worker(index)));
    },
    async close() {
      await Promise.all(slots.map((slot) => slot.close()));
      await tools?.close();
      await gateway.close();
    },
  };
}
