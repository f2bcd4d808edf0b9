/**
 * The lab's base exported by `agentrl export hf` and run as `--policy hf:<folder>` (chat protocol,
 * GPT-2 on the hf engine, the exported agentrl-text template and tool-call format) against the
 * lab's embedded policy on the same checkpoint (text protocol), in the episode loop on world
 * tasks: per turn the same ids fed to the model, the same sampled ids and log-probs, the same
 * actions and answers. Both policies draw turn k of an episode from the same RNG stream
 * (mix(mix(seed, episode seed), k)), so sampled episodes (temperature 1) are compared too.
 * One difference is by design: a turn the lab rejects is recorded by the chat loop with its own
 * reason (an unknown `malformed_tool_call`); the model is shown the lab's reason either way.
 */
import assert from "node:assert/strict";
import { mkdtemp } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { test } from "node:test";
import { runEpisodes } from "../../env/run-episodes.ts";
import { rolloutTasks, worldToolsFor } from "../../env/task-set.ts";
import type { Policy, PolicyContext } from "../../types/policy.ts";
import type { TaskFamily } from "../../types/task.ts";
import type { Trajectory } from "../../types/trajectory.ts";
import { checkAnswer } from "../../world/index.ts";
import { loadModelCheckpoint } from "../embedded/checkpoint.ts";
import { EmbeddedPolicy } from "../embedded/embedded-policy.ts";
import { exportHfCheckpoint } from "./export-hf.ts";
import { loadHfPolicy } from "./load.ts";
import { maxAbsDiff } from "./testing-fixtures.ts";

const MODEL = new URL("../../../models/base-strong", import.meta.url).pathname;
const out = join(await mkdtemp(join(tmpdir(), "agentrl-exported-")), "base-strong-hf");
await exportHfCheckpoint(MODEL, out);
const lab = await loadModelCheckpoint(MODEL);

/** The ids each act() fed, per episode and turn: the policy's own rendering, else the context's ids. */
function recording(policy: Policy): { policy: Policy; fed: Map<string, number[][]> } {
  const fed = new Map<string, number[][]>();
  const idsOf = (c: PolicyContext) =>
    policy.promptIds?.(c) ?? [
      ...c.prompt.tokenIds,
      ...c.turns.flatMap((turn) => [...turn.tokenIds, ...(turn.observation?.tokenIds ?? [])]),
    ];
  const wrapped: Policy = {
    id: policy.id,
    protocol: policy.protocol,
    tokenizer: policy.tokenizer,
    act: (contexts, options) => {
      for (const c of contexts) fed.set(c.episodeId, [...(fed.get(c.episodeId) ?? []), idsOf(c)]);
      return policy.act(contexts, options);
    },
    release: (ids) => policy.release?.(ids),
    close: () => policy.close?.() ?? Promise.resolve(),
  };
  return { policy: wrapped, fed };
}

/** An action as compared: the call id and a format error's wording (the loops word them apart) left out. */
function actionKey(trajectory: Trajectory): string[] {
  return trajectory.turns.map((turn) => {
    const action = turn.action;
    if (action.type === "format-error") return "format-error";
    if (action.type === "tool-call") return JSON.stringify([action.tool, action.arguments]);
    return JSON.stringify(action);
  });
}

async function compare(family: TaskFamily, temperature: number, count: number, formatErrors: boolean) {
  const tasks = rolloutTasks({ split: "test", count, seed: 3, family });
  const episodes = tasks.map((task, i) => ({ task, seed: 100 + i }));
  const tools = worldToolsFor();
  const embedded = recording(new EmbeddedPolicy(lab, { temperature, capacity: 8 }));
  const hfPolicy = await loadHfPolicy(out, { temperature, capacity: 8 });
  assert.equal(hfPolicy.protocol, "chat");
  const hf = recording(hfPolicy);
  try {
    const expected = await runEpisodes({ policy: embedded.policy, episodes, tools, verify: checkAnswer });
    const actual = await runEpisodes({ policy: hf.policy, episodes, tools, verify: checkAnswer });
    let turns = 0;
    expected.forEach((want, i) => {
      const got = actual[i]!;
      const where = `${family} T=${temperature} ${want.id}`;
      assert.deepEqual(hf.fed.get(got.id), embedded.fed.get(want.id), `${where}: ids fed per turn`);
      assert.deepEqual(actionKey(got), actionKey(want), `${where}: actions`);
      assert.deepEqual(
        got.turns.map((t) => t.tokenIds),
        want.turns.map((t) => t.tokenIds),
        `${where}: sampled ids`,
      );
      const logprobDiff = maxAbsDiff(
        got.turns.flatMap((t) => t.logprobs!),
        want.turns.flatMap((t) => t.logprobs!),
      );
      assert.ok(logprobDiff < 1e-4, `${where}: log-probs differ by ${logprobDiff}`);
      assert.equal(got.finalAnswer, want.finalAnswer, where);
      assert.equal(got.correct, want.correct, where);
      assert.equal(got.endReason, want.endReason, where);
      turns += got.turns.length;
    });
    // Sampled episodes include turns the lab rejects: the model is shown the lab's reason for them.
    const rejected = actual.flatMap((t) => t.turns).filter((t) => t.action.type === "format-error");
    assert.equal(rejected.length > 0, formatErrors, `${rejected.length} rejected turns`);
    // The template re-renders each turn as sampled: the slot is extended, never rebuilt.
    assert.equal(hfPolicy.prefixBreaks, 0);
    assert.ok(
      hfPolicy.continuedTurns > 0 && turns > episodes.length,
      `${hfPolicy.continuedTurns} continued turns`,
    );
  } finally {
    await hf.policy.close?.();
    await embedded.policy.close?.();
  }
}

const CASES: [TaskFamily, number, number, boolean][] = [
  ["chain", 0, 6, false],
  ["chain", 1, 6, true],
  ["arithmetic", 0, 6, false],
  ["arithmetic", 1, 16, true],
];
for (const [family, temperature, count, formatErrors] of CASES)
  test(`${family}, temperature ${temperature}: hf:<exported base> plays the lab policy's episodes`, () =>
    compare(family, temperature, count, formatErrors));
