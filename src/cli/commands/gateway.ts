/**
 * `agentrl gateway`: a recording OpenAI-compatible gateway in front of a checkpoint (served in
 * process) or any OpenAI-compatible upstream. Agents point their base URL at
 * `<url>/episodes/<episode-id>/v1` (or send `x-agentrl-episode-id`), post rewards to
 * `/episodes/<id>/reward` and end episodes with `/episodes/<id>/end`. With `--store <dir>` every
 * call is kept in that run directory as it completes and every ended episode as a trajectory; an
 * episode of a world task (its id in a call's `x-agentrl-task-id` header or the end's `taskId`) is checked
 * against the world and, with `--reward <preset>`, scored like an in-process episode.
 */
import type { Command } from "commander";
import { scoreWorldEpisode } from "../../agents/score-episode.ts";
import { EPISODE_LIMITS } from "../../gateway/episodes.ts";
import { resolveUpstream } from "../../gateway/resolve-upstream.ts";
import { startGateway } from "../../gateway/server.ts";
import { describeServer, parseUpstreamKind, UPSTREAM_KIND_HELP } from "../../policy/openai/server-kind.ts";
import { REWARD_PRESETS, resolveRewardSpec } from "../../reward/index.ts";
import { openOrCreateRunDirectory } from "../../store/index.ts";
import { addServerOptions, parseNumber, serverOptions } from "./options.ts";

export function register(program: Command): void {
  const command = program
    .command("gateway")
    .description(
      "record an agent's OpenAI calls (exact token ids, log-probs) as trajectories: an OpenAI-compatible " +
        "gateway with per-episode base URLs /episodes/<id>/v1 in front of a checkpoint or openai:<url>#<model>",
    );
  addServerOptions(command, { port: 8100, tokenEnv: "AGENTRL_GATEWAY_TOKEN" })
    .requiredOption(
      "--upstream <policy>",
      "checkpoint directory, hf:<folder>, scripted policy, or openai:<base-url>#<model>",
    )
    .option("--store <dir>", "run directory to record calls and trajectories in (created if missing)")
    .option("--no-token-ids", "do not ask an openai: upstream for token ids (the server's own way)")
    .option("--upstream-kind <kind>", UPSTREAM_KIND_HELP)
    .option("--temperature <t>", "checkpoint upstream: temperature when a request omits it", "1")
    .option("--top-p <p>", "checkpoint upstream: top_p when a request omits it", "1")
    .option("--max-tokens <n>", "checkpoint upstream: max_tokens when a request omits it", "32")
    .option(
      "--episode-ttl <s>",
      "end (and record as failed) an episode idle this many seconds without /end",
      String(EPISODE_LIMITS.ttlMs / 1000),
    )
    .option("--max-episode-calls <n>", "calls one episode may make", String(EPISODE_LIMITS.maxCalls))
    .option(
      "--max-episode-bytes <n>",
      "bytes of requests and responses one episode may hold",
      String(EPISODE_LIMITS.maxBytes),
    )
    .option(
      "--reward <preset>",
      `score episodes of world tasks with a reward preset (${Object.keys(REWARD_PRESETS).join(", ")}), as train rl does`,
    )
    .action(async (options) => {
      const listen = serverOptions(options, "AGENTRL_GATEWAY_TOKEN");
      const reward: string | undefined = options.reward;
      if (reward !== undefined) resolveRewardSpec(reward);
      const upstream = await resolveUpstream(options.upstream, {
        temperature: parseNumber("--temperature", options.temperature, { min: 0, max: 2 }),
        topP: parseNumber("--top-p", options.topP, { min: 0, max: 1 }),
        maxTokens: parseNumber("--max-tokens", options.maxTokens, { integer: true, min: 1 }),
        tokenIds: options.tokenIds !== false,
        ...(options.upstreamKind !== undefined
          ? { upstreamKind: parseUpstreamKind(options.upstreamKind) }
          : {}),
      });
      if (upstream.server.detectedBy !== "in-process")
        console.error(`agentrl gateway: upstream ${describeServer(upstream.server)}`);
      const recording = options.store
        ? openOrCreateRunDirectory(options.store, {
            kind: "rollout",
            config: { gateway: { upstream: options.upstream } },
          })
        : null;
      const storing = new Set<Promise<void>>();
      const gateway = await startGateway({
        upstream,
        ...listen,
        episodeTtlMs: parseNumber("--episode-ttl", options.episodeTtl, { min: 0.001 }) * 1000,
        maxEpisodeCalls: parseNumber("--max-episode-calls", options.maxEpisodeCalls, {
          integer: true,
          min: 1,
        }),
        maxEpisodeBytes: parseNumber("--max-episode-bytes", options.maxEpisodeBytes, {
          integer: true,
          min: 1,
        }),
        onCall: (call) =>
          recording?.store.setState(
            recording.run.id,
            `gateway/calls/${call.episodeId}/${String(call.seq).padStart(4, "0")}`,
            call,
          ),
        onEpisode: ({ trajectory, prefixBreaks }) => {
          // World tasks are checked and scored (tool results against the world's tools, the preset).
          const stored = scoreWorldEpisode(trajectory, reward)
            .then((scored) => {
              if (reward !== undefined && !scored.task)
                console.error(
                  `episode ${trajectory.id}: task "${trajectory.taskId}" is not a world task: not scored`,
                );
              recording?.store.addTrajectory(recording.run.id, scored.trajectory, { key: trajectory.id });
            })
            .catch((error) =>
              console.error(`episode ${trajectory.id}: not stored: ${(error as Error).message}`),
            )
            .finally(() => storing.delete(stored));
          storing.add(stored);
          if (prefixBreaks > 0)
            console.error(
              `episode ${trajectory.id}: ${prefixBreaks} prefix break(s) (gateway/prefix_breaks)`,
            );
        },
      });
      console.error(
        `gateway for ${options.upstream} at ${gateway.url}/episodes/<episode-id>/v1` +
          `${listen.token ? " (bearer token required)" : ""}${recording ? `; recording in ${options.store}` : ""}`,
      );
      console.error("Ctrl-C to stop");
      await new Promise<void>((done) => {
        const stop = () => {
          process.off("SIGINT", stop);
          process.off("SIGTERM", stop);
          void gateway.close().then(async () => {
            await Promise.all(storing);
            if (recording) {
              recording.store.addMetrics(recording.run.id, 0, {
                "gateway/calls": gateway.stats.calls,
                "gateway/failed_calls": gateway.stats.failedCalls,
                "gateway/prefix_breaks": gateway.stats.prefixBreaks,
              });
              recording.store.finishRun(recording.run.id, "completed", { ...gateway.stats });
              recording.store.close();
            }
            done();
          });
        };
        process.on("SIGINT", stop);
        process.on("SIGTERM", stop);
      });
    });
}
