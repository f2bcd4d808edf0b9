/**
 * `runDoctor`: the pre-flight of an RL run. Given the tasks (world families or a task file with its
 * verifier and tools), the reward, the group size G and the policy the user will train, it runs the
 * checks and returns the report with its verdict:
 *
 *   verifier         every gold accepted, degenerate answers rejected     (./verifier-check.ts)
 *   reward-hacking   the adversarial panel vs the expert, turn rewards in  (./reward-hacking.ts)
 *   coverage         G samples per task from the policy: signal at G       (./coverage.ts)
 *   determinism      the same seed twice gives the same environment        (./determinism.ts)
 *   token-exactness  prefix breaks and stop tokens behind the gateway      (./token-exactness.ts)
 *
 * The first two need nothing from the policy (`verl init` runs them alone). Coverage samples
 * the policy through the same episode loop as `agentrl eval` (same episode seeds, budgets and
 * tools), or, with `agent`, the user's agent module through the recording gateway, whose episodes
 * then also feed token-exactness. Samples that failed for infrastructure reasons are left out of
 * the counts and reported.
 */
import { DEFAULT_BUDGETS, type EpisodeBudgets, runEpisodes } from "../env/run-episodes.ts";
import { worldToolsFor } from "../env/task-set.ts";
import { type EvalTaskSource, resolveEvalTasks } from "../eval/eval-tasks.ts";
import { type EvalToolSetup, openToolSetup } from "../eval/eval-tools.ts";
import { defaultEvalBudgets, evalEpisodeSeed } from "../eval/run-eval.ts";
import { countByTask } from "../eval/task-counts.ts";
import { describeServer, kindProfile, type ServerInfo } from "../policy/openai/server-kind.ts";
import { createExpertPolicy } from "../policy/scripted/index.ts";
import type { RewardSpec } from "../reward/spec.ts";
import { resolveRewardSpec } from "../reward/spec.ts";
import { uniformNoise } from "../tools/index.ts";
import { isInfraFailure } from "../types/failure.ts";
import type { Policy } from "../types/policy.ts";
import type { Task } from "../types/task.ts";
import type { AnyTool } from "../types/tool.ts";
import type { Trajectory } from "../types/trajectory.ts";
import { taskCodeTests } from "../verify/code-tests.ts";
import { getVerifier, type VerifierName } from "../verify/index.ts";
import { checkAnswer } from "../world/index.ts";
import { checkCoverage } from "./coverage.ts";
import { checkDeterminism } from "./determinism.ts";
import { goldPolicy, panelPolicy } from "./panel.ts";
import { checkRewardHacking } from "./reward-hacking.ts";
import {
  checkTemplateExactness,
  checkTokenExactness,
  type GatewayEpisode,
  skippedTokenExactness,
} from "./token-exactness.ts";
import { CHECK_IDS, type CheckId, type DoctorCheck, type DoctorReport } from "./types.ts";
import { verdictOf } from "./verdict.ts";
import { checkVerifier, goldForms, referenceSolution, type Verify } from "./verifier-check.ts";

/** A user's agent module run through the recording gateway in front of `policySpec`. */
export interface DoctorAgent {
  /** The module's path or the command (for the report). */
  path: string;
  /** Where the agent comes from: a module in worker slots, a command per episode, or a function. */
  source: import("../agents/agent-source.ts").AgentSource;
  /** Episodes at once (default 8) and the time one may take (default 120 s). */
  concurrency?: number;
  timeoutMs?: number;
}

export interface DoctorOptions {
  /** How the policy was named (`--policy`): a checkpoint, a scripted name or `openai:<url>#<model>`. */
  policySpec: string;
  /**
   * The server behind an `openai:` policy (detected, or `--upstream-kind`): reported, and a server
   * that returns no token ids fails token-exactness (training on it is not possible).
   */
  server?: ServerInfo;
  /** The policy itself (sampled in the episode loop); not needed with `agent` or for the cheap checks. */
  policy?: Policy;
  agent?: DoctorAgent;
  tasks: EvalTaskSource;
  /** A task file's verifier by name; world tasks use the world's answer check. */
  verifier?: VerifierName;
  /** A custom answer check (tests); excludes `verifier`. */
  verify?: Verify;
  /** Tools of a task file by description (code, python, MCP), as `agentrl eval` takes them. */
  toolSetup?: EvalToolSetup;
  mcpToken?: string;
  /** Custom tools of an episode (tests); excludes `toolSetup`. */
  tools?: (task: Task, seed: number) => readonly AnyTool[];
  /** A preset name or a spec (default `exact-match`, the RL trainer's default). */
  reward?: RewardSpec | string;
  /** GRPO group size G: samples per task for coverage (default 8). */
  groupSize?: number;
  /** Total injected tool failure rate (default 0). */
  noise?: number;
  seed?: number;
  temperature?: number;
  topP?: number;
  budgets?: Partial<EpisodeBudgets>;
  /** Target share of groups with signal (default 0.3). */
  target?: number;
  /** Largest acceptable prefix-break rate (default 0.01). */
  maxBreakRate?: number;
  /** The checks to run (default all). */
  checks?: readonly CheckId[];
  /** Tasks the panel and the determinism check run on (default 16 and 8, spread over the set). */
  panelTasks?: number;
  determinismTasks?: number;
  /** Episodes advanced together when sampling the policy (default 64). */
  batchSize?: number;
  onCheck?: (check: DoctorCheck, seconds: number) => void;
  signal?: AbortSignal;
}

/** `count` tasks spread evenly over the list (every family of a mixed set is represented). */
export function spreadTasks(tasks: readonly Task[], count: number): Task[] {
  if (tasks.length <= count) return [...tasks];
  return Array.from({ length: count }, (_, i) => tasks[Math.floor((i * tasks.length) / count)]);
}

function describeTasks(source: EvalTaskSource, tasks: readonly Task[]): string {
  if (source.type === "given") return `${source.name ?? "given tasks"} (${tasks.length})`;
  return `${source.count} world tasks (${source.split}${source.family ? `, ${source.family}` : ""}, task seed ${source.seed})`;
}

/** Samples G episodes per task with the policy in the episode loop (as `agentrl eval` does). */
async function samplePolicy(
  options: DoctorOptions,
  tasks: readonly Task[],
  tools: (task: Task, seed: number) => readonly AnyTool[],
  verify: Verify,
  budgets: EpisodeBudgets,
  groupSize: number,
): Promise<Trajectory[]> {
  if (!options.policy) throw new Error("doctor: coverage needs a policy (--policy) or an agent (--agent)");
  const seed = options.seed ?? 1;
  const episodes = [];
  for (let sample = 0; sample < groupSize; sample++)
    for (const task of tasks) episodes.push({ task, seed: evalEpisodeSeed(seed, task.id, sample) });
  return runEpisodes({
    policy: options.policy,
    episodes,
    tools,
    verify,
    budgets,
    batchSize: options.batchSize ?? 64,
    ...(options.signal ? { signal: options.signal } : {}),
  });
}

/** Runs G episodes per task of the user's agent through the recording gateway. */
async function sampleAgent(
  options: DoctorOptions,
  agent: DoctorAgent,
  tasks: readonly Task[],
  verify: Verify,
  groupSize: number,
): Promise<GatewayEpisode[]> {
  const { openAgentRunner } = await import("../agents/agent-runner.ts");
  const { AGENT_EVAL_DEFAULTS } = await import("../agents/evaluate-agent.ts");
  const { openStore } = await import("../store/index.ts");
  const store = openStore(":memory:");
  const run = store.createRun({ id: "doctor", kind: "eval", config: { policy: options.policySpec } });
  const runner = await openAgentRunner({
    agent: agent.source,
    policy: options.policySpec,
    policyId: `agent:${agent.path}@${options.policySpec}`,
    ...(options.server ? { upstream: { upstreamKind: options.server.kind } } : {}),
    ...(options.temperature !== undefined ? { temperature: options.temperature } : {}),
    ...(options.topP !== undefined ? { topP: options.topP } : {}),
    maxTurnTokens: options.budgets?.maxTurnTokens ?? AGENT_EVAL_DEFAULTS.maxTurnTokens,
    verify,
    timeoutMs: agent.timeoutMs ?? AGENT_EVAL_DEFAULTS.timeoutMs,
    retries: AGENT_EVAL_DEFAULTS.retries,
    concurrency: agent.concurrency ?? AGENT_EVAL_DEFAULTS.concurrency,
    record: { store, runId: run.id },
    ...(options.signal ? { signal: options.signal } : {}),
  });
  const episodes: GatewayEpisode[] = [];
  try {
    const seed = options.seed ?? 1;
    const items = [];
    for (let sample = 0; sample < groupSize; sample++)
      for (const task of tasks)
        items.push({ task, key: `${task.id}#${sample}`, seed: evalEpisodeSeed(seed, task.id, sample) });
    await runner.run(items, (_item, episode) => {
      episodes.push(episode);
    });
  } finally {
    await runner.close();
    store.close();
  }
  return episodes;
}

export async function runDoctor(options: DoctorOptions): Promise<DoctorReport> {
  const started = performance.now();
  if (options.verify && options.verifier) throw new Error("doctor: give verify or verifier, not both");
  if (options.tools && options.toolSetup) throw new Error("doctor: give tools or toolSetup, not both");
  const wanted = new Set(options.checks ?? CHECK_IDS);
  for (const id of wanted) {
    if (!(CHECK_IDS as readonly string[]).includes(id))
      throw new Error(`doctor: unknown check "${id}" (valid: ${CHECK_IDS.join(", ")})`);
  }
  const groupSize = options.groupSize ?? 8;
  if (!Number.isInteger(groupSize) || groupSize < 2)
    throw new Error(`doctor: the group size must be an integer >= 2, got ${groupSize}`);
  const reward = options.reward ?? "exact-match";
  resolveRewardSpec(reward);
  const noise = options.noise ?? 0;
  const seed = options.seed ?? 1;
  const tasks = resolveEvalTasks(options.tasks);
  // World tasks (drawn here, or given, e.g. a verl job's) use the world's tools, check and expert.
  const world =
    options.tasks.type === "world" ||
    (!options.verifier && !options.verify && tasks.every((task) => task.worldSeed !== undefined));
  const verify: Verify = options.verify ?? (options.verifier ? getVerifier(options.verifier) : checkAnswer);
  const chat = options.policy?.protocol === "chat" || options.policySpec.startsWith("openai:");
  const budgets: EpisodeBudgets = {
    ...DEFAULT_BUDGETS,
    ...defaultEvalBudgets({ chat, fileTasks: !world }),
    ...options.budgets,
  };
  const opened =
    !options.tools && options.toolSetup
      ? await openToolSetup(options.toolSetup, {
          noise,
          ...(options.mcpToken ? { mcpToken: options.mcpToken } : {}),
        })
      : null;
  const tools =
    options.tools ??
    opened?.tools ??
    (world ? worldToolsFor(noise > 0 ? { noise: uniformNoise(noise) } : {}) : () => []);
  // The panel speaks the protocol of the tasks' users: tagged text in the world, tool calls for files.
  const protocol = world ? "text" : "chat";
  const expert = world
    ? createExpertPolicy()
    : goldPolicy(protocol, (task) =>
        taskCodeTests(task) !== null ? (referenceSolution(task) ?? task.answer) : task.answer,
      );

  const checks: DoctorCheck[] = [];
  const seconds: Record<string, number> = {};
  const record = (check: DoctorCheck, since: number) => {
    const took = Math.round(performance.now() - since) / 1000;
    seconds[check.id] = took;
    checks.push(check);
    options.onCheck?.(check, took);
  };
  try {
    if (wanted.has("verifier")) {
      const since = performance.now();
      record(await checkVerifier({ tasks, verify, forms: goldForms(options.verifier) }), since);
    }
    if (wanted.has("reward-hacking")) {
      const since = performance.now();
      record(
        await checkRewardHacking({
          tasks: spreadTasks(tasks, options.panelTasks ?? 16),
          tools,
          verify,
          reward,
          expert,
          protocol,
          budgets,
          seed,
        }),
        since,
      );
    }
    let gatewayEpisodes: GatewayEpisode[] | null = null;
    if (wanted.has("coverage")) {
      const since = performance.now();
      let trajectories: Trajectory[];
      if (options.agent) {
        gatewayEpisodes = await sampleAgent(options, options.agent, tasks, verify, groupSize);
        trajectories = gatewayEpisodes.map((episode) => episode.trajectory);
      } else {
        trajectories = await samplePolicy(options, tasks, tools, verify, budgets, groupSize);
      }
      const usable = trajectories.filter((trajectory) => !isInfraFailure(trajectory));
      record(
        checkCoverage({
          counts: countByTask(usable, tasks),
          groupSize,
          ...(options.target !== undefined ? { target: options.target } : {}),
          infraExcluded: trajectories.length - usable.length,
          selectHint: world
            ? `agentrl data select --policy ${options.policySpec} --m ${groupSize} drops the rest`
            : "the ids are in the report's coverage data",
        }),
        since,
      );
    }
    if (wanted.has("determinism")) {
      const since = performance.now();
      record(
        await checkDeterminism({
          tasks: spreadTasks(tasks, options.determinismTasks ?? 8),
          tools,
          verify,
          reward,
          policy: world ? createExpertPolicy() : panelPolicy("tool-spam", protocol, budgets),
          budgets,
          seed,
        }),
        since,
      );
    }
    if (wanted.has("token-exactness")) {
      const since = performance.now();
      const textOnly = options.server && !kindProfile(options.server.kind).tokenIds ? options.server : null;
      // A policy rendering turns with its own template (hf:) counted its prefix breaks while coverage sampled it.
      const breaks = options.policy?.prefixBreaks;
      record(
        textOnly
          ? textOnlyServerCheck(textOnly)
          : gatewayEpisodes
            ? checkTokenExactness({
                episodes: gatewayEpisodes,
                ...(options.maxBreakRate !== undefined ? { maxBreakRate: options.maxBreakRate } : {}),
              })
            : breaks !== undefined && wanted.has("coverage")
              ? checkTemplateExactness({
                  prefixBreaks: breaks,
                  continuedTurns: options.policy?.continuedTurns ?? 0,
                  ...(options.maxBreakRate !== undefined ? { maxBreakRate: options.maxBreakRate } : {}),
                })
              : skippedTokenExactness(
                  options.agent
                    ? "it reads the coverage check's gateway episodes, and coverage was not run"
                    : "the policy runs in agentrl's episode loop, which keeps the sampled ids as they are (no chat template re-renders them); give --agent to check an agent behind the recording gateway",
                ),
        since,
      );
    }
  } finally {
    await opened?.close();
  }
  const verdict = verdictOf(checks);
  seconds.total = Math.round(performance.now() - started) / 1000;
  return {
    ready: verdict.ready,
    verdict,
    checks,
    setup: {
      policy: options.policySpec,
      ...(options.server ? { server: describeServer(options.server) } : {}),
      ...(options.agent ? { agent: options.agent.path } : {}),
      tasks: describeTasks(options.tasks, tasks),
      taskCount: tasks.length,
      verifier: options.verifier ?? (options.verify ? "custom" : "world"),
      reward: typeof reward === "string" ? reward : reward,
      groupSize,
      noise,
      seed,
      temperature: options.temperature ?? null,
      checks: [...wanted],
    },
    seconds,
  };
}

/** token-exactness on a server that returns no ids at all: nothing to check, and nothing to train on. */
function textOnlyServerCheck(server: ServerInfo): DoctorCheck {
  const profile = kindProfile(server.kind);
  return {
    id: "token-exactness",
    ok: false,
    detail: `${describeServer(server)}: RL needs the exact ids the model was fed and sampled`,
    changes: [{ kind: "fix-environment", text: profile.fix }],
    data: { server: server.kind, version: server.version, tokenIds: false },
  };
}
