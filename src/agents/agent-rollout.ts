/**
 * RL through the gateway: a `rollout` for `trainRl` (src/rl/train.ts) that runs each episode of a
 * step as a user's agent, calling the live policy through `agentrl serve`'s server and the
 * recording gateway, in process. The gateway samples with the current parameters (the trainer
 * updates them between steps), so the trajectories carry exactly the ids and log-probs the update
 * needs; episode seeds, groups and ids are the trainer's. Sampling settings an agent sends are
 * ignored: the trainer's policy decides them (as agent-lightning's gateway forces its temperature).
 */
import type { RunEpisodesOptions } from "../env/run-episodes.ts";
import { startGateway } from "../gateway/server.ts";
import { httpUpstream } from "../gateway/upstream.ts";
import { startChatServer } from "../serve/server.ts";
import type { Policy } from "../types/policy.ts";
import type { Trajectory } from "../types/trajectory.ts";
import { runAgentEpisode } from "./run-episode.ts";
import type { AgentFunction } from "./types.ts";

export interface AgentRolloutOptions {
  agent: AgentFunction;
  /** Milliseconds an episode may run (default 120 000). */
  timeoutMs?: number;
  /** Episodes running at once (default: the trainer's batch size). */
  concurrency?: number;
  /** Prefix breaks seen so far (the trajectories themselves record theirs). */
  onPrefixBreaks?: (count: number) => void;
}

export function agentRollout(
  agentOptions: AgentRolloutOptions,
): (options: RunEpisodesOptions) => Promise<Trajectory[]> {
  return async (options) => {
    // The server must not close the trainer's policy: the trainer owns it.
    const policy = options.policy;
    const live: Policy = {
      id: policy.id,
      protocol: policy.protocol,
      ...(policy.tokenizer ? { tokenizer: policy.tokenizer } : {}),
      act: (contexts, actOptions) => policy.act(contexts, actOptions),
      release: (ids) => policy.release?.(ids),
      close: async () => {},
    };
    const batch = Math.max(1, options.batchSize ?? 64);
    const server = await startChatServer({
      loadPolicy: () => live,
      // The trainer scores what it sampled at its own temperature: an agent's sampling fields are ignored.
      requestSampling: false,
      model: "live",
      port: 0,
      maxBatch: batch,
      defaults: { maxTokens: options.budgets?.maxTurnTokens ?? 32 },
      log: () => {},
    });
    const token = "agentrl-rollout";
    const gateway = await startGateway({
      upstream: httpUpstream({ baseURL: server.url, model: "live" }),
      token,
      policyId: options.policy.id,
      log: () => {},
    });
    try {
      const out: Trajectory[] = new Array(options.episodes.length);
      let next = 0;
      let breaks = 0;
      const worker = async () => {
        while (next < options.episodes.length) {
          const index = next++;
          const spec = options.episodes[index];
          const { trajectory, prefixBreaks } = await runAgentEpisode({
            gateway,
            agent: agentOptions.agent,
            task: spec.task,
            key: spec.id ?? `${spec.task.id}/${index}`,
            seed: spec.seed,
            verify: options.verify,
            apiKey: token,
            timeoutMs: agentOptions.timeoutMs ?? 120_000,
            ...(options.signal ? { signal: options.signal } : {}),
          });
          breaks += prefixBreaks;
          out[index] = { ...trajectory, ...(spec.group !== undefined ? { group: spec.group } : {}) };
          await options.onEpisode?.(out[index]);
        }
      };
      const workers = Math.min(agentOptions.concurrency ?? batch, options.episodes.length);
      await Promise.all(Array.from({ length: workers }, worker));
      agentOptions.onPrefixBreaks?.(breaks);
      return out;
    } finally {
      await gateway.close();
      await server.close();
    }
  };
}
