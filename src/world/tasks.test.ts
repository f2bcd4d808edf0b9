import assert from "node:assert/strict";
import { test } from "node:test";
import { canonicalText } from "../env/protocol.ts";
import { TASK_FAMILIES, type Task } from "../types/task.ts";
import {
  buildTask,
  checkAnswer,
  firstName,
  generateTasks,
  generateWorld,
  splitOfWorld,
  TASK_TEMPLATES,
  taskFromId,
  taskPlan,
  type World,
  worldSeeds,
} from "./index.ts";

const TRAIN = worldSeeds("train", 8);

/**
 * Replays the gold steps as an agent that only knows the question and what it has read: every
 * search query must be made of words it has seen and must bring back the named entity's document,
 * every calc operand must be a number it has read, and the answer must be the calc result or a
 * number it has read. Returns the problems found.
 */
function replayGold(task: Task, world: World): string[] {
  const problems: string[] = [];
  const known = new Set(task.question.split(" "));
  const gold = task.gold ?? [];
  let lastCalc: string | undefined;
  for (const step of gold) {
    if (step.type === "search") {
      if (!step.query.split(" ").every((word) => known.has(word)))
        problems.push(`query "${step.query}" not yet known`);
      const document = world.documents.find((d) => d.id === step.entity);
      if (!document) problems.push(`no document ${step.entity}`);
      else {
        if (document.title !== step.query)
          problems.push(`query "${step.query}" is not the title of ${step.entity}`);
        for (const word of document.text.split(" ")) known.add(word);
      }
    } else if (step.type === "calc") {
      const tokens = step.expression.split(" ");
      for (let i = 0; i < tokens.length; i += 2)
        if (!known.has(tokens[i])) problems.push(`operand ${tokens[i]} never read`);
      let value = Number(tokens[0]);
      for (let i = 1; i < tokens.length; i += 2)
        value += (tokens[i] === "+" ? 1 : -1) * Number(tokens[i + 1]);
      if (String(value) !== step.result)
        problems.push(`calc ${step.expression} = ${value}, not ${step.result}`);
      lastCalc = step.result;
    } else if (step.answer !== task.answer)
      problems.push(`gold answer ${step.answer} != task answer ${task.answer}`);
    else if (lastCalc === undefined ? !known.has(step.answer) : step.answer !== lastCalc) {
      problems.push(`answer ${step.answer} not read or computed`);
    }
  }
  if (gold[gold.length - 1]?.type !== "answer") problems.push("gold does not end with an answer");
  return problems;
}

function allTasks(world: World): Task[] {
  return TASK_FAMILIES.flatMap((family) => generateTasks(world, { family, count: 400, seed: 1 }));
}

test("every task is solvable by replaying its gold steps against the world's documents", () => {
  let checked = 0;
  for (const seed of TRAIN) {
    const world = generateWorld(seed);
    for (const task of allTasks(world)) {
      assert.deepEqual(replayGold(task, world), [], task.id);
      assert.ok(checkAnswer(task, task.answer));
      checked++;
    }
  }
  assert.ok(checked > 2000, `${checked} tasks checked`);
});

test("hops count distinct searches, evidence names them, questions are canonical", () => {
  for (const seed of TRAIN.slice(0, 3)) {
    for (const task of allTasks(generateWorld(seed))) {
      const searches = (task.gold ?? []).flatMap((step) => (step.type === "search" ? [step.entity] : []));
      assert.equal(searches.length, task.hops, task.id);
      assert.equal(new Set(searches).size, searches.length, `${task.id}: an entity searched twice`);
      assert.deepEqual(task.evidence, searches);
      assert.equal(task.question, canonicalText(task.question));
      assert.ok(task.question.endsWith(" ?"));
      assert.match(task.answer, /^\d+$/, `${task.id}: non-negative integer answer`);
      assert.equal(task.worldSeed, seed);
      assert.equal(task.split, "train");
      assert.ok(taskPlan(task), `${task.id} has a plan`);
    }
  }
});

test("families have their documented depths and every template occurs", () => {
  const hops = new Map<string, Set<number>>();
  const seen = new Set<string>();
  for (const seed of TRAIN.slice(0, 4)) {
    for (const task of allTasks(generateWorld(seed))) {
      seen.add(task.template!);
      hops.set(task.family, (hops.get(task.family) ?? new Set()).add(task.hops!));
    }
  }
  assert.deepEqual(seen, new Set(TASK_TEMPLATES.map((t) => t.template)));
  const sorted = (family: string) => [...(hops.get(family) ?? [])].sort();
  assert.deepEqual(sorted("lookup"), [1]);
  assert.deepEqual(sorted("bridge"), [2, 3]);
  assert.deepEqual(sorted("arithmetic"), [2, 3]);
  assert.deepEqual(sorted("chain"), [4, 5, 6]);
  assert.deepEqual(sorted("distractor"), [1, 2]);
  const templates = (family: string) =>
    TASK_TEMPLATES.filter((t) => t.family === family).map((t) => t.template);
  assert.deepEqual(templates("arithmetic"), ["diff2", "sum3"]);
});

test("arithmetic: calc lists operands in question order and the result is non-negative", () => {
  const world = generateWorld(TRAIN[0]);
  for (const task of generateTasks(world, { family: "arithmetic", count: 300, seed: 2 })) {
    const gold = task.gold ?? [];
    const names = gold.flatMap((step) => (step.type === "search" ? [step.query] : []));
    const positions = names.map((name) => task.question.indexOf(` ${name} `));
    assert.deepEqual(
      positions,
      [...positions].sort((a, b) => a - b),
      `${task.id}: searches in question order`,
    );
    const calc = gold.find((step) => step.type === "calc");
    assert.ok(calc && calc.type === "calc");
    assert.equal(calc.expression.split(" ").length, task.template === "sum3" ? 5 : 3);
    assert.ok(calc.expression.includes(task.template === "sum3" ? " + " : " - "));
    assert.ok(Number(calc.result) > 0);
    const operands = calc.expression.split(/ [+-] /);
    // Each operand comes from the document of the entity named at the same position.
    gold
      .filter((step) => step.type === "search")
      .forEach((step, i) => {
        const document = world.documents.find((d) => d.id === (step as { entity: string }).entity)!;
        assert.ok(document.text.split(" ").includes(operands[i]), `${task.id}: operand ${i}`);
      });
  }
});

test("distractor tasks start at an entity with a near-duplicate; other families never do", () => {
  // Near-duplicates recomputed from names: people sharing a first name, names one letter apart.
  const hasTwin = (world: World, name: string) =>
    world.entities.some(
      (e) =>
        e.name !== name &&
        (name.includes(" ")
          ? e.type === "person" && firstName(e.name) === firstName(name)
          : [`${name}r`, `${name}a`].includes(e.name) || [`${e.name}r`, `${e.name}a`].includes(name)),
    );
  for (const seed of TRAIN.slice(0, 3)) {
    const world = generateWorld(seed);
    for (const task of allTasks(world)) {
      const searched = (task.gold ?? []).flatMap((step) => (step.type === "search" ? [step.query] : []));
      // The start of every lookup chain: the first search, or every operand of an arithmetic task.
      const starts = task.family === "arithmetic" ? searched : searched.slice(0, 1);
      for (const name of starts)
        assert.equal(hasTwin(world, name), task.family === "distractor", `${task.id}: ${name}`);
    }
  }
});

test("a first-name query ranks the namesake's document first about half the time (BM25)", async () => {
  const { searchWorld } = await import("../policy/scripted/testing-mini-env.ts");
  let wrong = 0;
  let total = 0;
  for (const seed of worldSeeds("train", 20)) {
    const world = generateWorld(seed);
    for (const task of generateTasks(world, { template: "namesake-born", count: 100 })) {
      const step = task.gold![0];
      assert.ok(step.type === "search");
      const [top] = searchWorld(world, firstName(step.query));
      total++;
      if (world.documents[top].id !== step.entity) wrong++;
      // The full name always finds the right document.
      assert.equal(world.documents[searchWorld(world, step.query)[0]].id, step.entity);
    }
  }
  assert.ok(total >= 100);
  assert.ok(wrong / total > 0.3 && wrong / total < 0.7, `wrong first ${wrong}/${total}`);
});

test("sampling is reproducible, without duplicates, and honours the filters", () => {
  const world = generateWorld(TRAIN[1]);
  const a = generateTasks(world, { count: 50, seed: 9 });
  assert.deepEqual(a, generateTasks(world, { count: 50, seed: 9 }));
  assert.notDeepEqual(
    a.map((t) => t.id),
    generateTasks(world, { count: 50, seed: 10 }).map((t) => t.id),
  );
  assert.equal(a.length, 50);
  assert.equal(new Set(a.map((t) => t.id)).size, 50);
  assert.equal(new Set(a.map((t) => t.family)).size, TASK_FAMILIES.length, "a mix of families");
  assert.ok(generateTasks(world, { family: "chain", count: 20 }).every((t) => t.family === "chain"));
  assert.ok(generateTasks(world, { template: "sum3", count: 5 }).every((t) => t.template === "sum3"));
  const withheld = generateTasks(world, { family: "arithmetic", excludeTemplates: ["sum3"], count: 100 });
  assert.ok(withheld.length === 100 && withheld.every((t) => t.template === "diff2"));
  // A template runs out: one capital-pop task per country.
  const capitals = generateTasks(world, { template: "capital-pop", count: 1000 });
  assert.equal(capitals.length, world.config.countries);
  assert.throws(
    () => generateTasks(world, { count: 1, family: "poetry" as never }),
    /unknown family "poetry".*valid: lookup/,
  );
  assert.throws(
    () => generateTasks(world, { count: 1, template: "nope" }),
    /unknown task template "nope".*valid: city-pop/,
  );
  assert.throws(
    () => generateTasks(world, { count: 1, family: "lookup", template: "sum3" }),
    /family arithmetic/,
  );
  assert.throws(() => generateTasks(world, { count: -1 }), /count/);
});

test("ids are stable: an id rebuilds the same task", () => {
  const world = generateWorld(TRAIN[2]);
  for (const task of generateTasks(world, { count: 40, seed: 4 })) {
    assert.match(task.id, new RegExp(`^w${world.seed}/${task.family}/${task.template}/\\d+$`));
    assert.deepEqual(taskFromId(task.id), task);
    const index = Number(task.id.split("/").pop());
    assert.deepEqual(buildTask(world, task.template!, index), task);
  }
  assert.throws(() => taskFromId("w1/lookup/sum3/0"), /family arithmetic/);
  assert.throws(() => taskFromId("nonsense"), /not of the form/);
});

test("splits: test worlds are a hash-chosen fifth of seeds; train and test never share a task", () => {
  const splits = Array.from({ length: 1000 }, (_, seed) => splitOfWorld(seed));
  const testShare = splits.filter((s) => s === "test").length / splits.length;
  assert.ok(testShare > 0.15 && testShare < 0.25, `test share ${testShare}`);
  const train = worldSeeds("train", 10);
  const testSeeds = worldSeeds("test", 10);
  assert.equal(train.filter((s) => testSeeds.includes(s)).length, 0);
  assert.ok(
    testSeeds.every((s) => splitOfWorld(s) === "test") && train.every((s) => splitOfWorld(s) === "train"),
  );

  const ids = (seeds: number[]) =>
    seeds.flatMap((seed) => generateTasks(generateWorld(seed), { count: 30 }).map((t) => t.id));
  const testIds = new Set(ids(testSeeds));
  assert.ok(ids(train).every((id) => !testIds.has(id)));
  const testWorld = generateWorld(testSeeds[0]);
  assert.ok(generateTasks(testWorld, { count: 5, split: "test" }).every((t) => t.split === "test"));
  assert.throws(
    () => generateTasks(testWorld, { count: 5, split: "train" }),
    /is a test world, so it has no train tasks/,
  );
  assert.throws(
    () => generateTasks(generateWorld(train[0]), { count: 5, split: "test" }),
    /is a train world/,
  );
});
