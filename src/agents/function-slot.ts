/**
 * A slot that runs an agent function in this process (the library API: `evaluateAgent({ agent })`,
 * tests). It shares the process with every other slot, so a global default client or a
 * module-level client is shared too: such agents need `--agent <module>` (worker slots). An agent
 * that ignores its signal still ends its episode at the deadline (its promise is abandoned).
 */
import { type AgentSlot, agentFailure, type SlotEpisode, type SlotOutcome } from "./slot.ts";
import type { AgentFunction } from "./types.ts";

export function functionSlot(agent: AgentFunction): AgentSlot {
  return {
    async run(episode: SlotEpisode): Promise<SlotOutcome> {
      const controller = new AbortController();
      let timedOut = false;
      const timer = setTimeout(() => {
        timedOut = true;
        controller.abort(new Error(`the agent ran past ${episode.timeoutMs} ms`));
      }, episode.timeoutMs);
      const signal = episode.signal
        ? AbortSignal.any([controller.signal, episode.signal])
        : controller.signal;
      try {
        const aborted = new Promise<never>((_, reject) => {
          if (signal.aborted) reject(signal.reason);
          signal.addEventListener("abort", () => reject(signal.reason), { once: true });
        });
        const returned = (async () =>
          agent(episode.task, {
            baseURL: episode.baseURL,
            apiKey: episode.apiKey,
            model: episode.model,
            signal,
          }))();
        return { answer: await Promise.race([returned, aborted]) };
      } catch (caught) {
        if (timedOut)
          return {
            failure: agentFailure("agent-timeout", `timeout: the agent ran past ${episode.timeoutMs} ms`),
          };
        return {
          failure: agentFailure(
            "agent-threw",
            `the agent threw: ${caught instanceof Error ? caught.message : String(caught)}`,
          ),
        };
      } finally {
        clearTimeout(timer);
      }
    },
    close: async () => {},
  };
}
