import assert from "node:assert/strict";
import { test } from "node:test";
import type { Policy } from "../../types/policy.ts";
import { TASK_FAMILIES, type Task } from "../../types/task.ts";
import {
  areNearDuplicates,
  firstName,
  generateTasks,
  generateWorld,
  parseDocuments,
  type World,
  worldSeeds,
} from "../../world/index.ts";
import { createBehaviourPolicy, createExpertPolicy, MENTAL_MATH_ACCURACY, scriptedPolicy } from "./index.ts";
import { type MiniEpisode, type MiniNoise, runMiniEpisode } from "./testing-mini-env.ts";

const NOISE: MiniNoise = { error: 0.1, empty: 0.05, timeout: 0.05, corrupted: 0.1 };

interface Case {
  world: World;
  task: Task;
}

function suite(worlds: number, perFamily: number, family?: (typeof TASK_FAMILIES)[number]): Case[] {
  return worldSeeds("train", worlds).flatMap((seed) => {
    const world = generateWorld(seed);
    return (family ? [family] : TASK_FAMILIES).flatMap((f) =>
      generateTasks(world, { family: f, count: perFamily, seed }).map((task) => ({ world, task })),
    );
  });
}

const CASES = suite(4, 20);

async function rollout(policy: Policy, cases: Case[], noise?: MiniNoise): Promise<(MiniEpisode & Case)[]> {
  const out: (MiniEpisode & Case)[] = [];
  for (const [i, c] of cases.entries()) {
    out.push({
      ...c,
      ...(await runMiniEpisode(policy, c.world, c.task, { seed: 7000 + i, noise, maxTurns: 40 })),
    });
  }
  return out;
}

const successRate = (episodes: MiniEpisode[]) => episodes.filter((e) => e.correct).length / episodes.length;
const searches = (episode: MiniEpisode) =>
  episode.turns.flatMap((turn) =>
    turn.action.type === "tool-call" && turn.action.tool === "search"
      ? [String(turn.action.arguments.query)]
      : [],
  );
const calcs = (episode: MiniEpisode) =>
  episode.turns.flatMap((turn) =>
    turn.action.type === "tool-call" && turn.action.tool === "calc"
      ? [String(turn.action.arguments.expression)]
      : [],
  );

test("with no flaw the behaviour agent reads its way to exactly the gold calls", async () => {
  const careful = createBehaviourPolicy();
  const expert = createExpertPolicy();
  for (const [i, c] of CASES.entries()) {
    const a = await runMiniEpisode(careful, c.world, c.task, { seed: i });
    const b = await runMiniEpisode(expert, c.world, c.task, { seed: i });
    assert.ok(a.correct, c.task.id);
    assert.deepEqual(
      a.turns.map((t) => t.text),
      b.turns.map((t) => t.text),
    );
  }
});

test("success rates order as the flaws predict", async () => {
  const rate = async (name: string, noise?: MiniNoise) =>
    successRate(await rollout(scriptedPolicy(name), CASES, noise));
  const expert = await rate("expert");
  const guesser = await rate("guesser");
  const vague = await rate("vague");
  const sloppy = await rate("sloppy");
  const quitter = await rate("quitter");
  const mixed = await rate("mixed");
  assert.equal(expert, 1);
  assert.equal(quitter, 1, "without tool failures the quitter never quits");
  assert.ok(guesser < 0.03, `guesser ${guesser}`);
  assert.ok(vague > 0.03 && vague < 0.35, `vague ${vague}`);
  assert.ok(sloppy > 0.3 && sloppy < 0.6, `sloppy ${sloppy}`);
  assert.ok(mixed > vague && mixed < expert, `mixed ${mixed}`);
  const noisyExpert = await rate("expert", NOISE);
  const noisyQuitter = await rate("quitter", NOISE);
  assert.ok(noisyExpert >= 0.95, `noisy expert ${noisyExpert}`);
  assert.ok(noisyQuitter < noisyExpert - 0.25, `noisy quitter ${noisyQuitter}`);
});

test("the guesser answers at once with a number of the answer's magnitude", async () => {
  for (const episode of await rollout(scriptedPolicy("guesser"), CASES.slice(0, 40))) {
    assert.equal(episode.turns.length, 1);
    assert.match(episode.answer ?? "", /^\d+$/);
    assert.equal(episode.answer?.length, episode.task.answer.length);
  }
});

test("a vague agent makes one vague search, then continues from what it read", async () => {
  const episodes = await rollout(scriptedPolicy("vague"), CASES);
  let firstNames = 0;
  let wrongEntities = 0;
  for (const episode of episodes) {
    const gold = (episode.task.gold ?? []).flatMap((s) => (s.type === "search" ? [s.query] : []));
    const asked = searches(episode);
    assert.equal(asked.length, gold.length, episode.task.id);
    const k = asked.findIndex((query, i) => query !== gold[i]);
    if (k < 0) {
      // The vague query was a unique first name: the same document came back, the same path follows.
      assert.ok(episode.correct, episode.task.id);
      continue;
    }
    const intended = gold[k];
    if (intended.includes(" ")) {
      assert.equal(asked[k], firstName(intended));
      firstNames++;
    } else {
      const intendedEntity = episode.world.entities.find((e) => e.name === intended)!;
      const chosen = episode.world.entities.find((e) => e.name === asked[k]);
      assert.equal(chosen?.type, intendedEntity.type, `${asked[k]} has the type of ${intended}`);
      const twin = episode.world.entities.some(
        (e) => e.name !== intended && areNearDuplicates(e.name, intended),
      );
      if (twin) assert.ok(areNearDuplicates(asked[k], intended), "a near-duplicate is preferred");
      wrongEntities++;
    }
    // Consistency: the next query is a name stated by the document it read.
    if (k + 1 < asked.length && !episode.task.template?.match(/diff2|sum3/)) {
      const observation = episode.turns[k].observation?.text ?? "";
      const stated = parseDocuments(observation).flatMap((d) => Object.values(d.facts));
      assert.ok(
        stated.includes(asked[k + 1]),
        `${episode.task.id}: ${asked[k + 1]} read from ${observation}`,
      );
    }
  }
  assert.ok(
    firstNames > 10 && wrongEntities > 50,
    `${firstNames} first names, ${wrongEntities} wrong entities`,
  );
});

test("slips change one digit of one calc operand; the answer is what calc returned", async () => {
  const cases = suite(3, 30, "arithmetic");
  for (const episode of await rollout(createBehaviourPolicy({ slip: 1 }), cases)) {
    const gold = episode.task.gold!.find((s) => s.type === "calc")!;
    assert.ok(gold.type === "calc");
    const [expression] = calcs(episode);
    const a = expression.split(" ");
    const b = gold.expression.split(" ");
    assert.equal(a.length, b.length);
    const changed = a.filter((token, i) => token !== b[i]);
    assert.equal(changed.length, 1, `${expression} vs ${gold.expression}`);
    const i = a.indexOf(changed[0]);
    assert.equal(a[i].length, b[i].length);
    assert.equal([...a[i]].filter((d, j) => d !== b[i][j]).length, 1);
    assert.equal(episode.answer, episode.turns[episode.turns.length - 2].observation?.text.split(" ")[2]);
    assert.equal(episode.correct, false);
  }
  // Without calc, the slip is in the copied answer.
  for (const episode of await rollout(createBehaviourPolicy({ slip: 1 }), suite(1, 20, "lookup"))) {
    assert.equal(episode.correct, false);
    assert.equal(episode.answer?.length, episode.task.answer.length);
  }
});

test("skipping calc answers from mental arithmetic, right about MENTAL_MATH_ACCURACY of the time", async () => {
  const episodes = await rollout(createBehaviourPolicy({ skipCalc: 1 }), suite(6, 50, "arithmetic"));
  assert.ok(episodes.every((e) => calcs(e).length === 0));
  const rate = successRate(episodes);
  assert.ok(
    Math.abs(rate - MENTAL_MATH_ACCURACY) < 0.08,
    `mental success ${rate} (${episodes.length} episodes)`,
  );
});

test("a quitter answers a guess at the first failed call", async () => {
  for (const episode of await rollout(scriptedPolicy("quitter"), CASES.slice(0, 30), { error: 1 })) {
    assert.equal(episode.turns.length, 2);
    assert.match(episode.answer ?? "", /^\d+$/);
  }
});

test("reorder and recheck vary the strategy but stay correct", async () => {
  const cases = suite(2, 30, "arithmetic");
  const reordered = await rollout(createBehaviourPolicy({ reorder: 1 }), cases);
  assert.equal(successRate(reordered), 1);
  const permuted = reordered.filter((e) => {
    const gold = e.task.gold!.flatMap((s) => (s.type === "search" ? [s.query] : []));
    return searches(e).join() !== gold.join();
  });
  assert.ok(permuted.length > cases.length / 3, `${permuted.length} of ${cases.length} reordered`);
  for (const e of reordered) {
    const gold = e.task.gold!.find((s) => s.type === "calc");
    assert.equal(calcs(e)[0], gold?.type === "calc" ? gold.expression : "", "calc keeps question order");
  }
  const rechecked = await rollout(createBehaviourPolicy({ recheck: 1 }), CASES.slice(0, 40));
  assert.equal(successRate(rechecked), 1);
  for (const e of rechecked) {
    const asked = searches(e);
    assert.equal(asked.length, 2 * e.task.hops!);
    for (let i = 0; i < asked.length; i += 2) assert.equal(asked[i], asked[i + 1]);
  }
});

test("episodes are reproducible from their seed and options are validated", async () => {
  const policy = scriptedPolicy("mixed");
  const [a, b] = [
    await rollout(policy, CASES.slice(0, 30), NOISE),
    await rollout(policy, CASES.slice(0, 30), NOISE),
  ];
  assert.deepEqual(
    a.map((e) => e.turns.map((t) => t.text)),
    b.map((e) => e.turns.map((t) => t.text)),
  );
  assert.throws(() => createBehaviourPolicy({ guess: 2 }), /guess must be a probability in \[0, 1\], got 2/);
  assert.throws(() => createBehaviourPolicy({ vague: Number.NaN }), /vague must be a probability/);
  assert.throws(() => createBehaviourPolicy({ sloppy: 1 } as never), /unknown option "sloppy".*valid: guess/);
  assert.equal(createBehaviourPolicy({ guess: 0.5, slip: 0.1 }).id, "behaviour(guess=0.5,slip=0.1)");
});
