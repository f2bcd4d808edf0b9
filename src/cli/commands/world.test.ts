import assert from "node:assert/strict";
import { test } from "node:test";
import { generateWorld, splitOfWorld, worldSeeds } from "../../world/index.ts";
import { runCli } from "../testing.ts";
import { register } from "./world.ts";

async function run(args: string[]): Promise<string> {
  return (await runCli(register, [...args])).out.join("\n");
}

const TRAIN_SEED = worldSeeds("train", 1)[0];

test("agentrl world prints a summary, documents and tasks with their gold steps", async () => {
  const out = await run([
    "world",
    "--seed",
    String(TRAIN_SEED),
    "--show",
    "3",
    "--family",
    "arithmetic",
    "--docs",
    "2",
  ]);
  const world = generateWorld(TRAIN_SEED);
  assert.match(out, new RegExp(`^world ${TRAIN_SEED} \\(train split\\)`));
  assert.match(out, /20 countries, 40 cities, 40 people, 20 companies; 120 documents/);
  assert.ok(out.includes(world.documents[0].text) && out.includes(world.documents[1].text));
  assert.equal(out.match(/^ {2}w\d+\/arithmetic\//gm)?.length, 3);
  assert.match(out, /\d+\. calc {4}\d+ [-+] \d+.* = \d+/);
  assert.match(out, /\d+\. search {2}\S+.*→ \S+ : (city|country|company|person)/);
});

test("agentrl world --json gives the report as data", async () => {
  const report = JSON.parse(
    await run(["world", "--seed", String(TRAIN_SEED), "--show", "4", "--template", "sum3", "--json"]),
  );
  assert.equal(report.world.seed, TRAIN_SEED);
  assert.deepEqual(report.world.nearDuplicates, { namesakePairs: 5, cityPairs: 3, companyPairs: 2 });
  assert.equal(report.tasks.length, 4);
  assert.ok(report.tasks.every((t: { template: string }) => t.template === "sum3"));
  assert.deepEqual(report.documents, []);
});

test("--split picks a world of that split and rejects a seed of the other", async () => {
  const report = JSON.parse(await run(["world", "--split", "test", "--show", "1", "--json"]));
  assert.equal(report.world.split, "test");
  assert.equal(splitOfWorld(report.world.seed), "test");
  await assert.rejects(
    run(["world", "--seed", String(TRAIN_SEED), "--split", "test"]),
    /is a train world, not test; test world seeds include/,
  );
  await assert.rejects(run(["world", "--family", "poetry"]), /--family must be one of lookup, bridge/);
  await assert.rejects(run(["world", "--show", "-1"]), /--show must be an integer >= 0/);
  await assert.rejects(run(["world", "--template", "nope"]), /--template must be one of city-pop/);
});
