import assert from "node:assert/strict";
import { test } from "node:test";
import type { PolicyContext } from "../../types/policy.ts";
import { generateTasks, generateWorld, worldSeeds } from "../../world/index.ts";
import {
  createBehaviourPolicy,
  createExpertPolicy,
  createMixturePolicy,
  MIXED_COMPONENTS,
  SCRIPTED_POLICY_NAMES,
  scriptedPolicy,
} from "./index.ts";

const world = generateWorld(worldSeeds("train", 1)[0]);
const tasks = generateTasks(world, { count: 40, seed: 2 });
const contexts = (count: number): PolicyContext[] =>
  Array.from({ length: count }, (_, i) => ({
    episodeId: `e${i}`,
    task: tasks[i % tasks.length],
    prompt: { text: "", tokenIds: [] },
    turns: [],
    tools: [],
    seed: i,
    maxTokens: 32,
  }));

test("every registered name gives a token-less text policy; an unknown name lists the valid ones", async () => {
  for (const name of SCRIPTED_POLICY_NAMES) {
    const policy = scriptedPolicy(name);
    assert.equal(policy.id, name);
    assert.equal(policy.protocol, "text");
    assert.equal(policy.tokenizer, undefined);
    const steps = await policy.act(contexts(8));
    assert.equal(steps.length, 8);
    for (const step of steps) {
      assert.match(step.text, /^ <(search|calc|answer)> \S.* <\/(search|calc|answer)>$/);
      assert.deepEqual([step.tokenIds, step.logprobs, step.finishReason], [[], null, "stop"]);
    }
  }
  assert.throws(
    () => scriptedPolicy("oracle"),
    /unknown scripted policy "oracle" \(valid: expert, expert-adapt, guesser, vague, sloppy, quitter, mixed\)/,
  );
  assert.ok(Math.abs(MIXED_COMPONENTS.reduce((sum, c) => sum + c.weight, 0) - 1) < 1e-9);
});

test("a mixture hands each episode to one component by weight and keeps the batch order", async () => {
  // Expert and guesser differ on the first turn: a search versus an answer.
  const mixture = createMixturePolicy("m", [
    { weight: 0.7, policy: createExpertPolicy() },
    { weight: 0.3, policy: createBehaviourPolicy({ guess: 1 }) },
  ]);
  const batch = contexts(2000);
  const steps = await mixture.act(batch);
  const expert = await createExpertPolicy().act(batch);
  let searched = 0;
  steps.forEach((step, i) => {
    if (step.text.startsWith(" <search>")) {
      searched++;
      assert.equal(step.text, expert[i].text, "the expert's step for this very context");
    }
  });
  assert.ok(Math.abs(searched / batch.length - 0.7) < 0.04, `expert share ${searched / batch.length}`);
  // The same seed always picks the same component.
  assert.deepEqual(await mixture.act(batch.slice(0, 50)), steps.slice(0, 50));
  assert.throws(() => createMixturePolicy("m", []), /no components/);
  assert.throws(() => createMixturePolicy("m", [{ weight: -1, policy: createExpertPolicy() }]), /weight/);
});
