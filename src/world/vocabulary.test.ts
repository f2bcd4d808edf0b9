import assert from "node:assert/strict";
import { test } from "node:test";
import { hashString } from "../core/random.ts";
import { TASK_FAMILIES } from "../types/task.ts";
import {
  generateTasks,
  generateWorld,
  namePools,
  POOL_SIZES,
  TEMPLATE_WORDS,
  worldVocabulary,
} from "./index.ts";

const words = (text: string) => text.split(" ").filter((token) => !/^\d+$/.test(token));

test("every word of every question, document and gold step is in the vocabulary, for many seeds", () => {
  const vocabulary = new Set(worldVocabulary());
  for (let seed = 0; seed < 40; seed++) {
    const world = generateWorld(seed);
    for (const document of world.documents) {
      for (const word of words(document.text))
        assert.ok(vocabulary.has(word), `world ${seed}: "${word}" in ${document.text}`);
    }
    for (const family of TASK_FAMILIES) {
      for (const task of generateTasks(world, { family, count: 40, seed })) {
        const texts = [
          task.question,
          ...(task.gold ?? []).map((step) =>
            step.type === "search" ? step.query : step.type === "calc" ? step.expression : step.answer,
          ),
        ];
        for (const text of texts)
          for (const word of words(text)) assert.ok(vocabulary.has(word), `${task.id}: "${word}"`);
      }
    }
  }
});

test("the vocabulary is fixed, duplicate-free, and its names are single lower-case tokens", () => {
  const vocabulary = worldVocabulary();
  assert.deepEqual(vocabulary, worldVocabulary());
  assert.equal(new Set(vocabulary).size, vocabulary.length);
  // Pinned: the embedded tokenizer and every shipped checkpoint depend on it.
  assert.equal(vocabulary.length, 236);
  assert.equal(hashString(vocabulary.join(" ")), 1805218543);
  const pools = namePools();
  const names = [
    ...pools.countries,
    ...pools.citySingles,
    ...pools.cityPairs.flat(),
    ...pools.companySingles,
    ...pools.companyPairs.flat(),
    ...pools.firstNames,
    ...pools.lastNames,
  ];
  assert.equal(
    names.length,
    POOL_SIZES.countries +
      POOL_SIZES.citySingles +
      2 * POOL_SIZES.cityPairs +
      POOL_SIZES.companySingles +
      2 * POOL_SIZES.companyPairs +
      POOL_SIZES.firstNames +
      POOL_SIZES.lastNames,
  );
  for (const name of names) assert.match(name, /^[a-z]{3,10}$/);
  const templateWords = new Set(TEMPLATE_WORDS);
  assert.ok(
    names.every((name) => !templateWords.has(name)),
    "no name is a template word",
  );
});

test("near-duplicates exist only as the designated pairs", () => {
  const pools = namePools();
  const all = new Set([
    ...pools.countries,
    ...pools.citySingles,
    ...pools.cityPairs.flat(),
    ...pools.companySingles,
    ...pools.companyPairs.flat(),
    ...pools.firstNames,
    ...pools.lastNames,
  ]);
  const pairs = new Set([...pools.cityPairs, ...pools.companyPairs].map(([a, b]) => `${a}|${b}`));
  for (const name of all) {
    for (let c = 97; c <= 122; c++) {
      const longer = name + String.fromCharCode(c);
      if (all.has(longer)) assert.ok(pairs.has(`${name}|${longer}`), `${name} / ${longer}`);
    }
  }
  assert.equal(pairs.size, POOL_SIZES.cityPairs + POOL_SIZES.companyPairs);
});
