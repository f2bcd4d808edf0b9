/**
 * The world generator. A world seed picks which names from the fixed pools exist and redraws every
 * relation and number, so the vocabulary is shared by all worlds while the facts are not. Only
 * integer draws from the seeded `Rng` (no transcendental maths), so a seed gives the same world on
 * every machine.
 *
 * Relations: every country has at least one city, a capital among its cities and a leader (a
 * distinct person); every person was born in a city; every company has a founder and a
 * headquarters city. Numbers: country population 5 digits, city population 3-4 digits, employees
 * 2-4 digits, years 4 digits (a company is founded 20-54 years after its founder's birth).
 * Namesakes differ in birth year and birth city; twin cities differ in population, twin companies
 * in employees, so a vague query gives a wrong answer.
 */
import { createRng, hashString, mixSeeds, type Rng } from "../core/random.ts";
import { renderDocument } from "./documents.ts";
import { namePools, POOL_SIZES } from "./names.ts";
import { areNearDuplicates } from "./near-duplicates.ts";
import { assertSeed, splitOfWorld } from "./split.ts";
import {
  type City,
  type Company,
  type Country,
  DEFAULT_WORLD_CONFIG,
  type Entity,
  type EntityType,
  type Person,
  type World,
  type WorldConfig,
} from "./types.ts";
import { firstName } from "./world-index.ts";

export const LATEST_YEAR = 2024;

export function entityId(type: EntityType, name: string): string {
  return `${type}:${name.replaceAll(" ", "-")}`;
}

/** Fills defaults and throws, naming the field, on a config the pools or the relations cannot satisfy. */
export function resolveWorldConfig(config: Partial<WorldConfig> = {}): WorldConfig {
  const keys = Object.keys(DEFAULT_WORLD_CONFIG);
  for (const key of Object.keys(config)) {
    if (!keys.includes(key))
      throw new Error(`world config: unknown field "${key}" (valid: ${keys.join(", ")})`);
  }
  const full: WorldConfig = { ...DEFAULT_WORLD_CONFIG, ...config };
  for (const key of keys as (keyof WorldConfig)[]) {
    const value = full[key];
    const min = ["namesakePairs", "cityTwins", "companyTwins"].includes(key) ? 0 : 1;
    if (!Number.isInteger(value) || value < min) {
      throw new Error(`world config: ${key} must be an integer >= ${min}, got ${String(value)}`);
    }
  }
  const check = (ok: boolean, message: string) => {
    if (!ok) throw new Error(`world config: ${message}`);
  };
  check(full.countries <= POOL_SIZES.countries, `countries must be <= ${POOL_SIZES.countries}`);
  check(full.cities >= full.countries, "cities must be >= countries (every country has a city)");
  check(full.people >= full.countries, "people must be >= countries (every country has its own leader)");
  check(full.cityTwins <= POOL_SIZES.cityPairs, `cityTwins must be <= ${POOL_SIZES.cityPairs}`);
  check(
    full.cities >= 2 * full.cityTwins && full.cities - 2 * full.cityTwins <= POOL_SIZES.citySingles,
    `cities must be in [2 * cityTwins, 2 * cityTwins + ${POOL_SIZES.citySingles}]`,
  );
  check(full.companyTwins <= POOL_SIZES.companyPairs, `companyTwins must be <= ${POOL_SIZES.companyPairs}`);
  check(
    full.companies >= 2 * full.companyTwins &&
      full.companies - 2 * full.companyTwins <= POOL_SIZES.companySingles,
    `companies must be in [2 * companyTwins, 2 * companyTwins + ${POOL_SIZES.companySingles}]`,
  );
  check(
    full.people <= POOL_SIZES.lastNames,
    `people must be <= ${POOL_SIZES.lastNames} (last names are unique)`,
  );
  check(
    2 * full.namesakePairs <= full.people && full.people - full.namesakePairs <= POOL_SIZES.firstNames,
    `namesakePairs must be in [people - ${POOL_SIZES.firstNames}, people / 2]`,
  );
  return full;
}

/** Picks `singles` names and `pairs` near-duplicate pairs, in a random order. */
function pickNames(
  rng: Rng,
  singles: readonly string[],
  pairs: readonly (readonly [string, string])[],
  total: number,
  pairCount: number,
): string[] {
  const twins = rng.shuffle(pairs).slice(0, pairCount).flat();
  return rng.shuffle([...twins, ...rng.shuffle(singles).slice(0, total - twins.length)]);
}

function personNames(rng: Rng, config: WorldConfig): string[] {
  const pools = namePools();
  const firsts = rng.shuffle(pools.firstNames);
  const shared = firsts.slice(0, config.namesakePairs);
  const unique = firsts.slice(config.namesakePairs, config.people - config.namesakePairs);
  const lasts = rng.shuffle(pools.lastNames);
  return rng.shuffle([...shared, ...shared, ...unique].map((first, i) => `${first} ${lasts[i]}`));
}

const cityPopulation = (rng: Rng) => (rng.chance(0.3) ? rng.range(300, 999) : rng.range(1000, 9999));
const employeeCount = (rng: Rng) =>
  [() => rng.range(10, 99), () => rng.range(100, 999), () => rng.range(1000, 9999)][rng.int(3)]();

export function generateWorld(seed: number, config: Partial<WorldConfig> = {}): World {
  assertSeed(seed);
  const full = resolveWorldConfig(config);
  const rng = createRng(mixSeeds(hashString("agentrl/world/v1"), seed));
  const pools = namePools();

  const nameRng = rng.fork("names");
  const countryNames = nameRng.shuffle(pools.countries).slice(0, full.countries);
  const cityNames = pickNames(nameRng, pools.citySingles, pools.cityPairs, full.cities, full.cityTwins);
  const companyNames = pickNames(
    nameRng,
    pools.companySingles,
    pools.companyPairs,
    full.companies,
    full.companyTwins,
  );
  const peopleNames = personNames(nameRng, full);

  const facts = rng.fork("facts");
  const cities: City[] = cityNames.map((name, i) => ({
    type: "city",
    id: entityId("city", name),
    name,
    country: entityId("country", countryNames[i < full.countries ? i : facts.int(full.countries)]),
    population: cityPopulation(facts),
    founded: facts.range(1000, 1950),
  }));
  const people: Person[] = peopleNames.map((name) => ({
    type: "person",
    id: entityId("person", name),
    name,
    bornIn: facts.pick(cities).id,
    born: facts.range(1920, 1995),
  }));
  const cityRng = facts.fork("city-twins");
  separateTwins(
    cities,
    (city) => city.population,
    (city) => {
      city.population = cityPopulation(cityRng);
    },
  );
  separateNamesakes(facts.fork("namesakes"), people, cities);
  const leaders = facts.shuffle(people).slice(0, full.countries);
  const countries: Country[] = countryNames.map((name, i) => {
    const id = entityId("country", name);
    return {
      type: "country",
      id,
      name,
      capital: facts.pick(cities.filter((city) => city.country === id)).id,
      leader: leaders[i].id,
      population: facts.range(10000, 99999),
      founded: facts.range(1100, 1899),
    };
  });
  const companies: Company[] = companyNames.map((name) => {
    const founder = facts.pick(people);
    return {
      type: "company",
      id: entityId("company", name),
      name,
      founder: founder.id,
      headquarters: facts.pick(cities).id,
      founded: Math.min(LATEST_YEAR, founder.born + facts.range(20, 54)),
      employees: employeeCount(facts),
    };
  });
  const companyRng = facts.fork("company-twins");
  separateTwins(
    companies,
    (company) => company.employees,
    (company) => {
      company.employees = employeeCount(companyRng);
    },
  );

  const entities: Entity[] = [...countries, ...cities, ...people, ...companies];
  const names = new Map(entities.map((entity) => [entity.id, entity.name]));
  const nameOf = (id: string) => names.get(id) ?? id;
  return {
    seed,
    split: splitOfWorld(seed),
    config: full,
    entities,
    documents: entities.map((entity) => ({
      id: entity.id,
      title: entity.name,
      text: renderDocument(entity, nameOf),
    })),
  };
}

// Near-duplicates never share the fact a distractor task asks about, so a vague query answers wrong.

function separateNamesakes(rng: Rng, people: Person[], cities: readonly City[]) {
  for (let i = 0; i < people.length; i++) {
    for (let j = 0; j < i; j++) {
      if (firstName(people[i].name) !== firstName(people[j].name)) continue;
      while (people[i].born === people[j].born) people[i].born = rng.range(1920, 1995);
      while (cities.length > 1 && people[i].bornIn === people[j].bornIn)
        people[i].bornIn = rng.pick(cities).id;
    }
  }
}

function separateTwins<T extends { name: string }>(
  items: T[],
  fact: (item: T) => number,
  redraw: (item: T) => void,
) {
  for (const a of items) {
    for (const b of items) {
      while (a !== b && areNearDuplicates(a.name, b.name) && fact(a) === fact(b)) redraw(a);
    }
  }
}
