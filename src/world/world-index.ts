/**
 * Lookups over a world (by id, by name, by type, near-duplicates), built once per world object and
 * cached. The world itself stays plain JSON.
 */
import { areNearDuplicates } from "./near-duplicates.ts";
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

function findTwins(entities: readonly Entity[]): Map<string, string[]> {
  const twins = new Map<string, string[]>();
  const link = (a: Entity, b: Entity) => {
    twins.set(a.id, [...(twins.get(a.id) ?? []), b.id]);
    twins.set(b.id, [...(twins.get(b.id) ?? []), a.id]);
  };
  for (let i = 0; i < entities.length; i++) {
    for (let j = i + 1; j < entities.length; j++) {
      const a = entities[i];
      const b = entities[j];
      if (a.type !== b.type) continue;
      const twin =
        a.type === "person" ? firstName(a.name) === firstName(b.name) : areNearDuplicates(a.name, b.name);
      if (twin) link(a, b);
    }
  }
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
