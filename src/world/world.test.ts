import assert from "node:assert/strict";
import { test } from "node:test";
import { hashString } from "../core/random.ts";
import { canonicalText } from "../env/protocol.ts";
import {
  type City,
  type Company,
  type Country,
  DEFAULT_WORLD_CONFIG,
  entityById,
  firstName,
  generateWorld,
  indexWorld,
  type Person,
  parseDocuments,
  readAttribute,
  resolveWorldConfig,
  splitOfWorld,
} from "./index.ts";
import { areNearDuplicates } from "./near-duplicates.ts";
import { findTwins } from "./world-index.ts";

const SEEDS = Array.from({ length: 30 }, (_, i) => i * 7 + 1);
const digits = (n: number) => String(n).length;
/** Tokens when every digit counts as one token (the embedded tokenizer's view). */
const tokenCount = (text: string) =>
  text.split(" ").reduce((n, t) => n + (/^\d+$/.test(t) ? t.length : 1), 0);

test("a seed gives the same world every time, another seed another world", () => {
  assert.deepEqual(generateWorld(17), generateWorld(17));
  assert.notDeepEqual(generateWorld(17).documents, generateWorld(18).documents);
});

test("the generator is pinned: world 1 has this fingerprint on every machine", () => {
  // Update deliberately when changing the generator: datasets and checkpoints depend on it.
  const world = generateWorld(1);
  assert.equal(hashString(JSON.stringify(world.documents)), 2245669480);
  assert.equal(world.documents[0].text, world.documents[0].text.trim());
});

test("default config gives the documented counts and one document per entity", () => {
  const world = generateWorld(5);
  const count = (type: string) => world.entities.filter((e) => e.type === type).length;
  assert.deepEqual(
    [count("country"), count("city"), count("person"), count("company")],
    [
      DEFAULT_WORLD_CONFIG.countries,
      DEFAULT_WORLD_CONFIG.cities,
      DEFAULT_WORLD_CONFIG.people,
      DEFAULT_WORLD_CONFIG.companies,
    ],
  );
  assert.equal(world.documents.length, world.entities.length);
  assert.deepEqual(
    world.documents.map((d) => [d.id, d.title]),
    world.entities.map((e) => [e.id, e.name]),
  );
  assert.equal(world.split, splitOfWorld(5));
});

test("config sizes are honoured and bad configs are rejected by name", () => {
  const world = generateWorld(3, {
    countries: 5,
    cities: 9,
    people: 12,
    companies: 6,
    namesakePairs: 2,
    cityTwins: 1,
    companyTwins: 0,
  });
  assert.equal(world.entities.length, 5 + 9 + 12 + 6);
  const index = indexWorld(world);
  assert.equal(index.people.filter((p) => index.twins.has(p.id)).length, 4);
  assert.equal(index.cities.filter((c) => index.twins.has(c.id)).length, 2);
  assert.equal(index.companies.filter((c) => index.twins.has(c.id)).length, 0);
  assert.throws(() => generateWorld(1, { cities: 3, countries: 5 }), /cities must be >= countries/);
  assert.throws(() => generateWorld(1, { people: 3, countries: 5 }), /people must be >= countries/);
  assert.throws(() => generateWorld(1, { countries: 0 }), /countries must be an integer >= 1/);
  assert.throws(
    () => generateWorld(1, { countries: 1000, cities: 1000, people: 1000 }),
    /countries must be <= 24/,
  );
  assert.throws(
    () => resolveWorldConfig({ planets: 3 } as never),
    /unknown field "planets".*valid: countries/,
  );
  assert.throws(() => generateWorld(-1), /world seed/);
  assert.throws(() => generateWorld(1.5), /world seed/);
});

test("relations and numbers hold their invariants in every world", () => {
  for (const seed of SEEDS) {
    const world = generateWorld(seed);
    const index = indexWorld(world);
    const names = world.entities.map((e) => e.name);
    assert.equal(new Set(names).size, names.length, `world ${seed}: names unique`);
    const leaders = index.countries.map((c) => c.leader);
    assert.equal(new Set(leaders).size, leaders.length, "leaders distinct");
    for (const country of index.countries) {
      const capital = entityById(index, country.capital) as City;
      assert.equal(capital.type, "city");
      assert.equal(capital.country, country.id, "capital lies in its country");
      assert.equal(entityById(index, country.leader).type, "person");
      assert.equal(digits(country.population), 5);
      assert.equal(digits(country.founded), 4);
    }
    for (const city of index.cities) {
      assert.equal(entityById(index, city.country).type, "country");
      assert.ok([3, 4].includes(digits(city.population)));
      assert.ok(city.founded >= 1000 && city.founded <= 1950);
    }
    for (const person of index.people) {
      assert.equal(person.name.split(" ").length, 2);
      assert.equal(entityById(index, person.bornIn).type, "city");
      assert.equal(digits(person.born), 4);
    }
    for (const company of index.companies) {
      const founder = entityById(index, company.founder) as Person;
      assert.equal(entityById(index, company.headquarters).type, "city");
      assert.ok(
        company.founded - founder.born >= 20 || company.founded === 2024,
        "founded after the founder grew up",
      );
      assert.ok(company.founded <= 2024);
      assert.ok([2, 3, 4].includes(digits(company.employees)));
    }
    for (const [id, twins] of index.twins) {
      const entity = entityById(index, id);
      assert.equal(twins.length, 1, `world ${seed}: ${entity.name} has exactly one near-duplicate`);
      const twin = entityById(index, twins[0]);
      if (entity.type === "person") {
        const other = twin as Person;
        assert.equal(firstName(entity.name), firstName(other.name));
        assert.notEqual(entity.born, other.born);
        assert.notEqual(entity.bornIn, other.bornIn);
      } else if (entity.type === "city") assert.notEqual(entity.population, (twin as City).population);
      else if (entity.type === "company") assert.notEqual(entity.employees, (twin as Company).employees);
      else assert.fail(`countries have no near-duplicates (${entity.name})`);
    }
    const twinCount = (type: string) =>
      index.world.entities.filter((e) => e.type === type && index.twins.has(e.id)).length;
    assert.equal(twinCount("person"), 2 * DEFAULT_WORLD_CONFIG.namesakePairs);
    assert.equal(twinCount("city"), 2 * DEFAULT_WORLD_CONFIG.cityTwins);
    assert.equal(twinCount("company"), 2 * DEFAULT_WORLD_CONFIG.companyTwins);
  }
});

test("documents are short canonical text and parse back into the entity's facts", () => {
  for (const seed of SEEDS.slice(0, 10)) {
    const world = generateWorld(seed);
    const index = indexWorld(world);
    world.documents.forEach((document, i) => {
      const entity = world.entities[i];
      assert.equal(document.text, canonicalText(document.text));
      const length = tokenCount(document.text);
      assert.ok(length >= 12 && length <= 25, `${document.text}: ${length} tokens`);
      const [parsed] = parseDocuments(document.text);
      assert.equal(parsed.title, entity.name);
      assert.equal(parsed.type, entity.type);
      const expected: Record<string, string> = {};
      for (const [key, value] of Object.entries(entity)) {
        if (["id", "name", "type"].includes(key)) continue;
        const raw = readAttribute(entity, key as never);
        expected[key] = typeof raw === "number" ? String(raw) : entityById(index, String(value)).name;
      }
      assert.deepEqual(parsed.facts, expected);
    });
  }
});

test("the example documents read as the brief shows", () => {
  const world = generateWorld(2);
  const index = indexWorld(world);
  const city = index.cities[0];
  const country = entityById(index, city.country) as Country;
  assert.equal(
    world.documents.find((d) => d.id === city.id)?.text,
    `${city.name} : city in ${country.name} . population ${city.population} . founded ${city.founded} .`,
  );
  const person = index.people[0];
  assert.equal(
    world.documents.find((d) => d.id === person.id)?.text,
    `${person.name} : person . born in ${entityById(index, person.bornIn).name} . born ${person.born} .`,
  );
});

test("twins found through name keys are exactly the pairwise definition's (shared first name; names one trailing character apart)", () => {
  for (const seed of [1, 7, 42]) {
    const { entities } = generateWorld(seed);
    const want = new Map<string, string[]>();
    entities.forEach((a, i) => {
      const mine = entities.filter(
        (b, j) =>
          j !== i &&
          a.type === b.type &&
          (a.type === "person" ? firstName(a.name) === firstName(b.name) : areNearDuplicates(a.name, b.name)),
      );
      if (mine.length > 0)
        want.set(
          a.id,
          mine.map((b) => b.id),
        );
    });
    const got = findTwins(entities);
    assert.deepEqual(new Map([...got].sort()), new Map([...want].sort()), `world ${seed}`);
    assert.ok(got.size > 0, `world ${seed} has twins`);
  }
  // near-duplicates of a name that is itself a near-duplicate: every pair linked, nothing else
  const city = (id: string, name: string) => ({ id, name, type: "city" }) as never;
  const chain = findTwins([city("a", "Oslo"), city("b", "Oslox"), city("c", "Osloxy"), city("d", "Osl")]);
  assert.deepEqual(Object.fromEntries(chain), { a: ["b", "d"], b: ["a", "c"], c: ["b"], d: ["a"] });
});
