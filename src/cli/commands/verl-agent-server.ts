/**
 * `agentrl agent-server`: one agentrl episode per HTTP request, for verl's `agentrl_agent` loop
 * (src/verl/python/agentrl_agent_loop.py; the contract is src/verl/agent-server.md).
 *
 *   agentrl agent-server --port 8300 --reward turn-credit                      # world tasks, sent whole
 *   agentrl agent-server --tasks aime.jsonl --verifier math --python --token $T --host 0.0.0.0
 *   agentrl agent-server --agent examples/agents/openai.ts --store runs/verl-episodes
 *
 * Requests name their rollout server (verl's vLLM/SGLang replicas); `--upstream` gives one for
 * requests that name none (a checkpoint served in process, or openai:<url>#<model>). With
 * `--store <dir>` every episode is kept as it ends (a run directory, created if missing).
 */
import { existsSync } from "node:fs";
import type { Command } from "commander";
import { loadAgent } from "../../agents/load-agent.ts";
import { readJsonFile } from "../../core/config-file.ts";
import { DEFAULT_BUDGETS, type EpisodeBudgets } from "../../env/run-episodes.ts";
import { resolveEvalTasks } from "../../eval/eval-tasks.ts";
import { openToolSetup } from "../../eval/eval-tools.ts";
import { LONG_FORM_BUDGETS } from "../../eval/run-eval.ts";
import { resolveUpstream } from "../../gateway/resolve-upstream.ts";
import type { Upstream } from "../../gateway/upstream.ts";
import { parseUpstreamKind, UPSTREAM_KIND_HELP } from "../../policy/openai/server-kind.ts";
import { parseOpenAiSpec } from "../../policy/openai/spec.ts";
import { REWARD_PRESETS, type RewardSpec, resolveRewardSpec } from "../../reward/spec.ts";
import { openOrCreateRunDirectory } from "../../store/index.ts";
import { readTaskFile } from "../../tasks/index.ts";
import { TASK_FAMILIES, type Task, type TaskFamily } from "../../types/task.ts";
import { VERIFIER_NAMES, type VerifierName } from "../../verify/index.ts";
import { startAgentServer } from "../../verl/agent-server.ts";
import { addServerOptions, collect, parseChoice, parseNumber, serverOptions } from "./options.ts";

function rewardOf(raw: string): RewardSpec | string {
  if (raw in REWARD_PRESETS) return raw;
  if (!existsSync(raw))
    throw new Error(
      `--reward: "${raw}" is neither a preset (${Object.keys(REWARD_PRESETS).join(", ")}) nor a JSON spec file`,
    );
  const spec = readJsonFile(raw, "--reward");
  if (typeof spec !== "object" || spec === null || !Array.isArray((spec as RewardSpec).outcome))
    throw new Error(`--reward ${raw}: a spec is {"outcome": [{"name": …, "weight"?: …}], "turn"?: […]}`);
  return resolveRewardSpec(spec as RewardSpec);
}

export function register(program: Command): void {
  const command = program
    .command("agent-server")
    .description(
      "run agentrl episodes over HTTP for verl's agentrl_agent loop: one episode per POST /v1/episodes " +
        "against the request's rollout server, through the recording gateway (exact ids, mask, log-probs, rewards)",
    );
  addServerOptions(command, { port: 8300, tokenEnv: "AGENTRL_AGENT_SERVER_TOKEN" })
    .option(
      "--upstream <policy>",
      "rollout server for requests that name none: checkpoint directory, scripted policy, or openai:<base-url>#<model>",
    )
    .option("--upstream-kind <kind>", UPSTREAM_KIND_HELP)
    .option(
      "--upstream-allow <url-prefix>",
      "rollout servers requests may name in upstream.base_url: this URL and below it (repeatable; default: only --upstream)",
      collect,
    )
    .option(
      "--upstream-allow-local",
      "also allow any port of every address of this host's network interfaces (where verl's rollout servers listen: Ray's node IP)",
    )
    .option("--max-gateways <n>", "idle per-(rollout server, sampling) recording gateways kept open", "16")
    .option(
      "--tasks <file|count>",
      "tasks requests may name by task_id: a task file (.jsonl, .json, .parquet; needs --verifier) or a number of world tasks",
    )
    .option("--split <split>", "world tasks of --tasks <count>: train or test", "train")
    .option("--task-seed <n>", "world tasks of --tasks <count>: selection seed", "1")
    .option(
      "--family <family>",
      `world tasks of --tasks <count>: only this family (${TASK_FAMILIES.join(", ")})`,
    )
    .option("--verifier <name>", `answer check of tasks without a world (${VERIFIER_NAMES.join(", ")})`)
    .option("--code", "tasks without a world get the sandboxed JavaScript code tool")
    .option("--python", "tasks without a world get the sandboxed Python tool")
    .option("--noise <rate>", "total injected tool failure rate in [0, 1]", "0")
    .option(
      "--reward <preset|file>",
      `reward spec: a preset (${Object.keys(REWARD_PRESETS).join(", ")}) or a JSON spec file`,
      "exact-match",
    )
    .option("--max-turns <n>", `turns per episode (default ${DEFAULT_BUDGETS.maxTurns})`)
    .option(
      "--max-tokens <n>",
      `generated tokens per episode, further capped by the request's response_length (default ${LONG_FORM_BUDGETS.maxTokens}; ${DEFAULT_BUDGETS.maxTokens} for a checkpoint --upstream)`,
    )
    .option(
      "--max-turn-tokens <n>",
      `tokens per model call (default ${LONG_FORM_BUDGETS.maxTurnTokens}; ${DEFAULT_BUDGETS.maxTurnTokens} for a checkpoint --upstream)`,
    )
    .option(
      "--agent <module>",
      "run this agent module (default export (task, {baseURL, apiKey, model, signal}))",
    )
    .option("--concurrency <n>", "episodes running at once", "64")
    .option("--max-queue <n>", "requests waiting for a slot before new ones get 503", "4096")
    .option("--episode-timeout <s>", "seconds one episode may run", "600")
    .option("--store <dir>", "run directory to store every episode in (created if missing)")
    .action(async (options) => {
      const listen = serverOptions(options, "AGENTRL_AGENT_SERVER_TOKEN");
      const noise = parseNumber("--noise", options.noise, { min: 0, max: 1 });
      const verifier = options.verifier
        ? parseChoice<VerifierName>("--verifier", options.verifier, VERIFIER_NAMES)
        : undefined;
      const reward = rewardOf(options.reward);
      const embedded = options.upstream !== undefined && !parseOpenAiSpec(options.upstream);
      const defaults = embedded ? DEFAULT_BUDGETS : { ...DEFAULT_BUDGETS, ...LONG_FORM_BUDGETS };
      const budgets: EpisodeBudgets = {
        ...defaults,
        ...(options.maxTurns
          ? { maxTurns: parseNumber("--max-turns", options.maxTurns, { integer: true, min: 1 }) }
          : {}),
        ...(options.maxTokens
          ? { maxTokens: parseNumber("--max-tokens", options.maxTokens, { integer: true, min: 1 }) }
          : {}),
        ...(options.maxTurnTokens
          ? {
              maxTurnTokens: parseNumber("--max-turn-tokens", options.maxTurnTokens, {
                integer: true,
                min: 1,
              }),
            }
          : {}),
      };

      let tasks: Task[] = [];
      if (options.tasks !== undefined) {
        if (/^\d+$/.test(options.tasks)) {
          const family = options.family
            ? parseChoice<TaskFamily>("--family", options.family, TASK_FAMILIES)
            : undefined;
          tasks = resolveEvalTasks({
            type: "world",
            split: parseChoice("--split", options.split, ["train", "test"] as const),
            count: parseNumber("--tasks", options.tasks, { integer: true, min: 1 }),
            seed: parseNumber("--task-seed", options.taskSeed, { integer: true, min: 0 }),
            ...(family ? { family } : {}),
          });
        } else {
          if (!existsSync(options.tasks))
            throw new Error(
              `--tasks: no such file "${options.tasks}" (give a number of world tasks or a task file)`,
            );
          if (!verifier)
            throw new Error(`a task file needs --verifier <name> (one of ${VERIFIER_NAMES.join(", ")})`);
          tasks = resolveEvalTasks({
            type: "given",
            tasks: await readTaskFile(options.tasks),
            name: options.tasks,
          });
        }
      }
      const fileTools =
        options.code || options.python
          ? await openToolSetup(
              { code: Boolean(options.code), python: Boolean(options.python), mcp: null },
              { noise },
            )
          : null;
      const agent = options.agent ? await loadAgent(options.agent) : undefined;
      let upstream: Upstream | undefined;
      if (options.upstream) {
        upstream = await resolveUpstream(options.upstream, {
          maxTokens: budgets.maxTurnTokens,
          tokenIds: true,
          ...(options.upstreamKind !== undefined
            ? { upstreamKind: parseUpstreamKind(options.upstreamKind) }
            : {}),
        });
      }

      const recording = options.store
        ? openOrCreateRunDirectory(options.store, {
            kind: "rollout",
            config: {
              agentServer: {
                reward,
                budgets,
                noise,
                verifier: verifier ?? null,
                agent: options.agent ?? null,
              },
            },
          })
        : null;

      let done = 0;
      let lastReport = Date.now();
      const server = await startAgentServer({
        ...listen,
        upstreamAllow: options.upstreamAllow ?? [],
        ...(options.upstreamAllowLocal ? { upstreamAllowLocal: true } : {}),
        maxGateways: parseNumber("--max-gateways", options.maxGateways, { integer: true, min: 1 }),
        tasks,
        ...(verifier ? { verifier } : {}),
        ...(fileTools ? { fileTools: fileTools.tools } : {}),
        noise,
        budgets,
        reward,
        ...(agent ? { agent } : {}),
        ...(upstream ? { upstream } : {}),
        concurrency: parseNumber("--concurrency", options.concurrency, { integer: true, min: 1 }),
        maxQueue: parseNumber("--max-queue", options.maxQueue, { integer: true, min: 0 }),
        episodeTimeoutMs: parseNumber("--episode-timeout", options.episodeTimeout, { min: 1 }) * 1000,
        onEpisode: ({ trajectory }) => {
          recording?.store.addTrajectory(recording.run.id, trajectory, { key: trajectory.id });
          done++;
          // Progress: at most one line every 10 s.
          if (Date.now() - lastReport > 10_000) {
            lastReport = Date.now();
            const { running, waiting, failed } = server.stats;
            console.error(`${done} episodes (${failed} failed); ${running} running, ${waiting} waiting`);
          }
        },
      });
      console.error(
        `agent-server at ${server.url}/v1/episodes${listen.token ? " (bearer token required)" : ""}` +
          `${tasks.length ? `; ${tasks.length} tasks by id` : ""}${agent ? `; agent ${options.agent}` : ""}` +
          `${recording ? `; storing in ${options.store}` : ""}`,
      );
      console.error("Ctrl-C to stop");
      await new Promise<void>((finished) => {
        const stop = () => {
          process.off("SIGINT", stop);
          process.off("SIGTERM", stop);
          void (async () => {
            await server.close();
            await fileTools?.close();
            await upstream?.close?.();
            if (recording) {
              recording.store.finishRun(recording.run.id, "completed", { ...server.stats });
              recording.store.close();
            }
            finished();
          })();
        };
        process.on("SIGINT", stop);
        process.on("SIGTERM", stop);
      });
    });
}
