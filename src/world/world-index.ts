/**
 * Lookups over a world (by id, by name, by type, near-duplicates), built once per world object and
 * cached. The world itself stays plain JSON.
 */
import type { City, Company, Country, Entity, EntityType, Person, World } from "./types.ts";

export interface WorldIndex {
  world: World;
  byId: ReadonlyMap<string, Entity>;
  byName: ReadonlyMap<string, Entity>;
  countries: readonly Country[];
  cities: readonly City[];
  people: readonly Person[];
  companies: readonly Company[];
  /**
   * Entity id → ids of its near-duplicates: people sharing its first name, cities or companies
   * whose name is its name plus or minus one trailing letter.
   */
  twins: ReadonlyMap<string, readonly string[]>;
}

const cache = new WeakMap<World, WorldIndex>();

export function indexWorld(world: World): WorldIndex {
  const hit = cache.get(world);
  if (hit) return hit;
  const byId = new Map<string, Entity>();
  const byName = new Map<string, Entity>();
  for (const entity of world.entities) {
    byId.set(entity.id, entity);
    byName.set(entity.name, entity);
  }
  const of = <T extends Entity>(type: EntityType) =>
    world.entities.filter((entity) => entity.type === type) as T[];
  const index: WorldIndex = {
    world,
    byId,
    byName,
    countries: of<Country>("country"),
    cities: of<City>("city"),
    people: of<Person>("person"),
    companies: of<Company>("company"),
    twins: findTwins(world.entities),
  };
  cache.set(world, index);
  return index;
}

/**
 * Each entity's twins, in the entities' order: people who share a first name, and other entities
 * of the same type whose names are one trailing character apart. Found through name keys, not by
 * comparing every pair (a world has thousands of entities; the pairs took ~65 ms per process).
 */
export function findTwins(entities: readonly Entity[]): Map<string, string[]> {
  // Each entity's key: a person's first name, another entity's whole name. A near-duplicate's
  // key is the shorter name's, plus one character.
  const keys = entities.map((e) => `${e.type} ${e.type === "person" ? firstName(e.name) : e.name}`);
  const groups = new Map<string, number[]>();
  keys.forEach((key, at) => {
    const group = groups.get(key);
    if (group) group.push(at);
    else groups.set(key, [at]);
  });
  const found = new Map<number, Set<number>>();
  const add = (at: number, twin: number) => found.set(at, (found.get(at) ?? new Set<number>()).add(twin));
  entities.forEach((entity, at) => {
    const others =
      entity.type === "person" ? groups.get(keys[at])! : (groups.get(keys[at].slice(0, -1)) ?? []);
    for (const other of others) {
      if (other === at) continue;
      add(at, other);
      add(other, at);
    }
  });
  const twins = new Map<string, string[]>();
  for (const [at, others] of [...found].sort((a, b) => a[0] - b[0]))
    twins.set(
      entities[at].id,
      [...others].sort((a, b) => a - b).map((other) => entities[other].id),
    );
  return twins;
}

export function firstName(fullName: string): string {
  return fullName.split(" ")[0];
}

export function entityById(index: WorldIndex, id: string): Entity {
  const entity = index.byId.get(id);
  if (!entity) throw new Error(`world ${index.world.seed}: no entity ${id}`);
  return entity;
}

export function entitiesOfType(index: WorldIndex, type: EntityType): readonly Entity[] {
  switch (type) {
    case "country":
      return index.countries;
    case "city":
      return index.cities;
    case "person":
      return index.people;
    case "company":
      return index.companies;
  }
}
