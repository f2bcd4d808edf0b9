/**
 * RL through the gateway: a `rollout` for `trainRl` (src/rl/train.ts) that runs each episode of a
 * step as a user's agent, calling the live policy through `agentrl serve`'s server and the
 * recording gateway, in process. The gateway samples with the current parameters (the trainer
 * updates them between steps), so the trajectories carry exactly the ids and log-probs the update
 * needs; episode seeds, groups and ids are the trainer's. Sampling settings an agent sends are
 * ignored: the trainer's policy decides them (as agent-lightning's gateway forces its temperature).
 * The agent runs in slots (agent-source.ts: worker threads for a module, a process per episode for
 * a command), opened for each step's gateway and closed with it. An episode whose upstream call
 * failed carries an `infra` failure; an agent's own failure an `agent` one.
 */
import type { RunEpisodesOptions } from "../env/run-episodes.ts";
import { startGateway } from "../gateway/server.ts";
import { httpUpstream } from "../gateway/upstream.ts";
import { startChatServer } from "../serve/server.ts";
import { infraFailure } from "../types/failure.ts";
import type { Policy } from "../types/policy.ts";
import type { Trajectory } from "../types/trajectory.ts";
import { upstreamFailed } from "./agent-runner.ts";
import { type AgentSource, openSlot } from "./agent-source.ts";
import { runAgentEpisode } from "./run-episode.ts";
import type { AgentSlot } from "./slot.ts";
import { startToolsServer } from "./tools-server.ts";
import type { AgentFunction } from "./types.ts";

export interface AgentRolloutOptions {
  /** An agent function (run in process) or where the agent comes from. */
  agent: AgentFunction | AgentSource;
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
    const source: AgentSource =
      typeof agentOptions.agent === "function"
        ? { kind: "function", agent: agentOptions.agent }
        : agentOptions.agent;
    const tools = source.kind === "command" ? await startToolsServer(token) : null;
    const slots: AgentSlot[] = [];
    try {
      const out: Trajectory[] = new Array(options.episodes.length);
      let next = 0;
      let breaks = 0;
      const worker = async (slotIndex: number) => {
        const slotId = `s${slotIndex}`;
        const slot = openSlot(source, slotId, gateway, token);
        slots.push(slot);
        while (next < options.episodes.length) {
          const index = next++;
          const spec = options.episodes[index];
          const { trajectory, prefixBreaks } = await runAgentEpisode({
            gateway,
            slot,
            slotId,
            toolsURL: (task) =>
              tools && task.worldSeed !== undefined ? tools.worldURL(task.worldSeed) : undefined,
            task: spec.task,
            key: spec.id ?? `${spec.task.id}/${index}`,
            seed: spec.seed,
            verify: options.verify,
            apiKey: token,
            timeoutMs: agentOptions.timeoutMs ?? 120_000,
            ...(options.signal ? { signal: options.signal } : {}),
          });
          breaks += prefixBreaks;
          if (upstreamFailed(trajectory))
            trajectory.failure = infraFailure("upstream-failed", "an upstream call of the episode failed");
          out[index] = { ...trajectory, ...(spec.group !== undefined ? { group: spec.group } : {}) };
          await options.onEpisode?.(out[index]);
        }
      };
      // Slots of a module or command hold a thread or process each: at most 16 unless asked.
      const concurrency =
        agentOptions.concurrency ?? (source.kind === "function" ? batch : Math.min(batch, 16));
      const workers = Math.min(concurrency, options.episodes.length);
      await Promise.all(Array.from({ length: workers }, (_, slotIndex) => worker(slotIndex)));
      agentOptions.onPrefixBreaks?.(breaks);
      return out;
    } finally {
      await Promise.all(slots.map((slot) => slot.close()));
      await tools?.close();
      await gateway.close();
      await server.close();
    }
  };
}
