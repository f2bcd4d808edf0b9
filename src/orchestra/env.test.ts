import assert from "node:assert/strict";
import { test } from "node:test";
import { runEpisodes } from "../env/run-episodes.ts";
import { createWordTokenizer } from "../policy/embedded/tokenizer.ts";
import { createMockPolicy } from "../policy/mock.ts";
import { callTool } from "../tools/index.ts";
import type { Task } from "../types/task.ts";
import { checkAnswer } from "../world/index.ts";
import { orchestraCorpusEpisodes, orchestraVocabulary } from "./corpus.ts";
import {
  countCalls,
  executionErrors,
  ORCHESTRA_BUDGETS,
  ORCHESTRA_MESSAGES,
  orchestraToolsFor,
  resolveAnswer,
  withOrchestraReward,
} from "./env.ts";
import { generateOrchestraTasks, orchestraMetadata } from "./generate.ts";
import { renderLookup } from "./question.ts";
import { createStrategyPolicy, FIXED_STRATEGIES } from "./strategies.ts";
import { createSubAgents, type SubAgentName } from "./sub-agents.ts";

const breadthTask = generateOrchestraTasks({
  axis: "breadth",
  value: 3,
  count: 1,
  seed: 2,
  split: "test",
})[0];

/** The one-hop questions of a breadth task's lookups, and their true values. */
function lookups(task: Task): { question: string; value: string }[] {
  return orchestraMetadata(task)!
    .graph.nodes.flatMap((node) => (node.kind === "lookup" ? [node] : []))
    .map((node) => ({
      question: renderLookup(node.attribute, node.entity!),
      value: node.value,
    }));
}

async function run(
  task: Task,
  degree: "low" | "high",
  script: (turn: number) => string,
  delayMs?: (agent: SubAgentName, q: string) => number,
) {
  const executed: string[] = [];
  const [trajectory] = await runEpisodes({
    policy: createMockPolicy((context) => script(context.turns.length)),
    episodes: [{ task, seed: 1 }],
    tools: orchestraToolsFor({
      degree,
      errorRate: 0,
      delayMs: (agent, question) => {
        executed.push(`${agent} : ${question}`);
        return delayMs?.(agent, question) ?? 0;
      },
    }),
    verify: checkAnswer,
    budgets: ORCHESTRA_BUDGETS,
  });
  return { trajectory, executed };
}

test("low degree: only the first sub-agent call runs; later ones are rejected and recorded", async () => {
  const [a, b] = lookups(breadthTask);
  const { trajectory, executed } = await run(
    breadthTask,
    "low",
    (turn) =>
      [
        ` <searcher> ${a.question} </searcher>`,
        ` <verifier> ${b.question} </verifier>`,
        ` <searcher> ${b.question} </searcher>`,
        " <answer> 1 </answer>",
      ][turn],
  );
  assert.deepEqual(executed, [`searcher : ${a.question}`]);
  assert.equal(trajectory.turns[0].toolResult?.content, a.value);
  assert.equal(trajectory.turns[1].toolResult?.content, ORCHESTRA_MESSAGES.oneCallOnly);
  assert.equal(trajectory.turns[2].toolResult?.status, "error");
  assert.deepEqual(countCalls(trajectory), { calls: 1, parallel: 0 });
  assert.equal(executionErrors(trajectory), 2);
  assert.equal(withOrchestraReward(trajectory, breadthTask).outcomeReward, 0);
  // No `parallel` tool in low degree: the tag is a format error.
  const low = orchestraToolsFor({ degree: "low", errorRate: 0 })(breadthTask, 1);
  assert.deepEqual(
    low.map((tool) => tool.name),
    ["searcher", "verifier", "calculator", "solver"],
  );
});

test("low-degree plans never call more than one sub-agent, whatever the strategy tries", async () => {
  const tasks = ["depth", "breadth", "robustness"].flatMap((axis) =>
    generateOrchestraTasks({ axis: axis as "depth", value: 3, count: 10, seed: 4, split: "test" }),
  );
  for (const strategy of [FIXED_STRATEGIES["call-every"], FIXED_STRATEGIES["delegate-one"]]) {
    let executed = 0;
    const trajectories = await runEpisodes({
      policy: createStrategyPolicy(strategy),
      episodes: tasks.map((task, i) => ({ task, seed: i, id: `e${i}` })),
      tools: (task, seed) => {
        let mine = 0;
        const tools = orchestraToolsFor({
          degree: "low",
          errorRate: 0.3,
          delayMs: () => {
            mine++;
            executed++;
            assert.ok(mine <= 1);
            return 0;
          },
        })(task, seed);
        return tools;
      },
      verify: checkAnswer,
      budgets: ORCHESTRA_BUDGETS,
    });
    for (const trajectory of trajectories) assert.ok(countCalls(trajectory).calls <= 1);
    assert.ok(executed <= tasks.length && executed > 0);
  }
});

test("a malformed call or plan is a recorded failure, never a crash, and costs the execution reward", async () => {
  const [a] = lookups(breadthTask);
  const { trajectory, executed } = await run(
    breadthTask,
    "high",
    (turn) =>
      [
        " <helper> population of x </helper>",
        ` <parallel> searcher ${a.question} </parallel>`,
        ` <parallel> searcher : ${a.question} ; oracle : what </parallel>`,
        ` <answer> ${breadthTask.answer} </answer>`,
      ][turn],
  );
  assert.equal(trajectory.turns[0].action.type, "format-error");
  assert.equal(trajectory.turns[1].toolResult?.content, ORCHESTRA_MESSAGES.invalidPlan);
  assert.equal(trajectory.turns[2].toolResult?.content, ORCHESTRA_MESSAGES.invalidPlan);
  assert.deepEqual(executed, [], "nothing of a malformed plan runs");
  assert.equal(trajectory.endReason, "answer");
  assert.ok(trajectory.correct);
  assert.equal(executionErrors(trajectory), 3);
  assert.equal(withOrchestraReward(trajectory, breadthTask).outcomeReward, 0.9);
  // A question the searcher cannot parse is the orchestrator's fault too.
  const bad = await run(
    breadthTask,
    "high",
    (turn) => [" <searcher> 4 + 5 </searcher>", " <answer> 9 </answer>"][turn],
  );
  assert.equal(executionErrors(bad.trajectory), 1);
});

test("parallel calls run concurrently and come back in plan order", async () => {
  const [a, b, c] = lookups(breadthTask);
  const delays = new Map([
    [a.question, 300],
    [b.question, 20],
    [c.question, 150],
  ]);
  const plan = [a, b, c].map((call) => `searcher : ${call.question}`).join(" ; ");
  const started = performance.now();
  const { trajectory, executed } = await run(
    breadthTask,
    "high",
    (turn) => [` <parallel> ${plan} </parallel>`, ` <answer> ${breadthTask.answer} </answer>`][turn],
    (_, question) => delays.get(question) ?? 0,
  );
  const elapsed = performance.now() - started;
  assert.equal(executed.length, 3);
  assert.ok(elapsed < 300 + 20 + 150 - 60, `took ${elapsed.toFixed(0)} ms: not concurrent`);
  // b finished first, then c, then a: the observation still lists a, b, c.
  assert.equal(trajectory.turns[0].toolResult?.content, `1 : ${a.value} ; 2 : ${b.value} ; 3 : ${c.value}`);
  assert.deepEqual(countCalls(trajectory), { calls: 3, parallel: 3 });
  assert.equal(withOrchestraReward(trajectory, breadthTask).outcomeReward, 1);
});

test("sub-agents: competence sets the failures; a decoy shows up as a conflict the verifier resolves", async () => {
  const robust = generateOrchestraTasks({
    axis: "robustness",
    value: 2,
    count: 1,
    seed: 6,
    split: "test",
  })[0];
  const node = orchestraMetadata(robust)!.graph.nodes[0];
  assert.ok(node.kind === "lookup" && node.entity !== undefined && node.decoy !== undefined);
  const question = renderLookup(node.attribute, node.entity);
  const agents = (errorRate: number, seed: number) => createSubAgents(robust, seed, { errorRate });
  const [searcher, verifier] = agents(0, 1);
  const conflicted = await callTool(searcher, { question });
  assert.equal(conflicted.status, "ok");
  assert.deepEqual(conflicted.content.split(" or ").sort(), [node.value, node.decoy!].sort());
  assert.equal((await callTool(verifier, { question })).content, node.value);
  // errorRate 1: every call fails, visibly (error) or silently (corrupted: a wrong value).
  const statuses = new Set<string>();
  for (let seed = 0; seed < 20; seed++) {
    const result = await callTool(agents(1, seed)[1], { question });
    statuses.add(result.status);
    if (result.status === "corrupted") assert.notEqual(result.content, node.value);
  }
  assert.deepEqual([...statuses].sort(), ["corrupted", "error"]);
  const [, , calculator] = agents(0, 1);
  assert.equal((await callTool(calculator, { question: "12 + 30 + 1" })).content, "43");
  assert.equal((await callTool(calculator, { question: "population of x" })).status, "error");
});

test("every corpus episode is written in the orchestrator's vocabulary (no unknown tokens)", async () => {
  const tokenizer = createWordTokenizer(orchestraVocabulary());
  const episodes = await orchestraCorpusEpisodes(1, 0, 64);
  assert.ok(episodes.length >= 60);
  for (const episode of episodes) {
    const texts = [
      episode.prompt.text,
      ...episode.turns.flatMap((turn) => [turn.text, turn.observation?.text ?? ""]),
    ];
    for (const text of texts) assert.ok(!tokenizer.encode(text).includes(tokenizer.unkId), text);
  }
});

test("references pass results between sub-agents along the blackboard; a missing input is the orchestrator's error", async () => {
  const depthTask = generateOrchestraTasks({ axis: "depth", value: 2, count: 1, seed: 3, split: "test" })[0];
  const { trajectory } = await run(
    depthTask,
    "high",
    (turn) =>
      [
        " <searcher> part 1 step 2 </searcher>",
        " <searcher> part 1 step 1 </searcher>",
        " <verifier> part 1 step 2 </verifier>",
        ` <answer> ${depthTask.answer} </answer>`,
      ][turn],
  );
  const [inner, outer] = orchestraMetadata(depthTask)!.graph.nodes;
  assert.equal(trajectory.turns[0].toolResult?.content, "error : missing input");
  assert.equal(trajectory.turns[1].toolResult?.content, inner.value);
  assert.equal(trajectory.turns[2].toolResult?.content, outer.value);
  assert.equal(executionErrors(trajectory), 1);
  assert.ok(trajectory.correct);

  const [a, b, c] = lookups(breadthTask);
  const sum = await run(
    breadthTask,
    "high",
    (turn) =>
      [
        " <calculator> part 1 + part 2 + part 3 </calculator>",
        " <parallel> searcher : part 1 ; searcher : part 2 ; verifier : part 3 </parallel>",
        " <calculator> part 1 + part 2 + part 3 </calculator>",
        " <solver> question </solver>",
      ][turn] ?? " <answer> 0 </answer>",
  );
  assert.equal(sum.trajectory.turns[0].toolResult?.content, "error : missing input");
  assert.equal(
    sum.trajectory.turns[1].toolResult?.content,
    `1 : ${a.value} ; 2 : ${b.value} ; 3 : ${c.value}`,
  );
  assert.equal(sum.trajectory.turns[2].toolResult?.content, breadthTask.answer);
  assert.equal(sum.trajectory.turns[3].toolResult?.content, breadthTask.answer);
  assert.deepEqual(countCalls(sum.trajectory), { calls: 6, parallel: 3 });
});

test("`result` answers with the last call's output: the system's output, as in MAS-Orchestra", async () => {
  const { trajectory } = await run(
    breadthTask,
    "high",
    (turn) =>
      [
        " <parallel> searcher : part 1 ; searcher : part 2 ; searcher : part 3 </parallel>",
        " <calculator> part 1 + part 2 + part 3 </calculator>",
        " <answer> result </answer>",
      ][turn],
  );
  assert.equal(trajectory.correct, false, "the loop itself checks the literal answer");
  const rewarded = withOrchestraReward(trajectory, breadthTask);
  assert.equal(rewarded.finalAnswer, breadthTask.answer);
  assert.ok(rewarded.correct);
  assert.equal(rewarded.outcomeReward, 1);
  // After a parallel plan, `result` is its last item; after a failed call there is none.
  const [, , c] = lookups(breadthTask);
  const early = await run(
    breadthTask,
    "high",
    (turn) =>
      [" <parallel> searcher : part 1 ; searcher : part 3 </parallel>", " <answer> result </answer>"][turn],
  );
  assert.equal(resolveAnswer(early.trajectory), c.value);
  const failed = await run(
    breadthTask,
    "high",
    (turn) => [" <calculator> part 1 + part 2 </calculator>", " <answer> result </answer>"][turn],
  );
  assert.equal(resolveAnswer(failed.trajectory), null);
  assert.equal(withOrchestraReward(failed.trajectory, breadthTask).outcomeReward, 0);
});
