/**
 * Types of the embedded world: a small fictional knowledge graph of countries, cities, people and
 * companies. Plain JSON data: entities refer to each other by id.
 */

export const ENTITY_TYPES = ["country", "city", "person", "company"] as const;
export type EntityType = (typeof ENTITY_TYPES)[number];

export interface Country {
  type: "country";
  id: string;
  name: string;
  /** City id. */
  capital: string;
  /** Person id. */
  leader: string;
  population: number;
  founded: number;
}

export interface City {
  type: "city";
  id: string;
  name: string;
  /** Country id. */
  country: string;
  population: number;
  founded: number;
}

export interface Person {
  type: "person";
  id: string;
  /** `first last`. */
  name: string;
  /** City id. */
  bornIn: string;
  born: number;
}

export interface Company {
  type: "company";
  id: string;
  name: string;
  /** Person id. */
  founder: string;
  /** City id. */
  headquarters: string;
  founded: number;
  employees: number;
}

export type Entity = Country | City | Person | Company;

/**
 * Attributes a document states and a task can ask for. A link names another entity (of type
 * `target`); a number is a fact. Keys equal the entity field names.
 */
export const ATTRIBUTES = {
  capital: { kind: "link", on: ["country"], target: "city" },
  leader: { kind: "link", on: ["country"], target: "person" },
  country: { kind: "link", on: ["city"], target: "country" },
  bornIn: { kind: "link", on: ["person"], target: "city" },
  founder: { kind: "link", on: ["company"], target: "person" },
  headquarters: { kind: "link", on: ["company"], target: "city" },
  population: { kind: "number", on: ["country", "city"] },
  founded: { kind: "number", on: ["country", "city", "company"] },
  born: { kind: "number", on: ["person"] },
  employees: { kind: "number", on: ["company"] },
} as const satisfies Record<
  string,
  | { kind: "link"; on: readonly EntityType[]; target: EntityType }
  | { kind: "number"; on: readonly EntityType[] }
>;
export type Attribute = keyof typeof ATTRIBUTES;
export type LinkAttribute = {
  [K in Attribute]: (typeof ATTRIBUTES)[K]["kind"] extends "link" ? K : never;
}[Attribute];
export type NumberAttribute = Exclude<Attribute, LinkAttribute>;

export function isLinkAttribute(attribute: Attribute): attribute is LinkAttribute {
  return ATTRIBUTES[attribute].kind === "link";
}

export interface WorldConfig {
  countries: number;
  cities: number;
  people: number;
  companies: number;
  /** Pairs of people who share a first name (distractor tasks). */
  namesakePairs: number;
  /** Pairs of cities with near-duplicate names (`zenda` / `zendar`). */
  cityTwins: number;
  /** Pairs of companies with near-duplicate names. */
  companyTwins: number;
}

export const DEFAULT_WORLD_CONFIG: Readonly<WorldConfig> = Object.freeze({
  countries: 20,
  cities: 40,
  people: 40,
  companies: 20,
  namesakePairs: 5,
  cityTwins: 3,
  companyTwins: 2,
});

/** One short document per entity, in canonical protocol text. */
export interface WorldDocument {
  /** The entity id. */
  id: string;
  /** The entity's name. */
  title: string;
  text: string;
}

export type WorldSplit = "train" | "test";

export interface World {
  seed: number;
  /** Split of this world seed (`splitOfWorld`): test worlds never yield train tasks. */
  split: WorldSplit;
  config: WorldConfig;
  /** Countries, then cities, people and companies. */
  entities: Entity[];
  /** One per entity, in the order of `entities`. */
  documents: WorldDocument[];
}
