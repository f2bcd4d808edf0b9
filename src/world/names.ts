/**
 * The fixed name pools of the embedded world. Every world draws its entities' names from these
 * pools, so the vocabulary is the same for every world seed while the facts are not (a model must
 * use its tools instead of memorising). The pools are generated once from a fixed seed by syllable
 * combination, each category with its own shape so a reader can tell a country from a company:
 *
 *   country  kelovia, tramundor   city  zenda, brosil   company  velcorix   person  arin vold
 *
 * All names are single lower-case tokens, distinct across every pool and from every template word.
 * Cities and companies also come as designated near-duplicate pairs (`zenda` / `zendar`), and no
 * two other names are near-duplicates of each other, so a world has exactly the near-duplicates it
 * asks for. Changing this file changes the vocabulary, and with it every shipped checkpoint.
 */
import { createRng, hashString, type Rng } from "../core/random.ts";
import { nearDuplicateOf } from "./near-duplicates.ts";
import { TEMPLATE_WORDS } from "./template-words.ts";

/**
 * Pool sizes, small on purpose (~170 name tokens): a name must recur often enough in the corpus
 * for a 1M-parameter model to learn to copy it. With ~600 names, each one rare, a d=128 model
 * pretrained for 250 steps (2M tokens) still put p ≈ 0.01 on copying the question's name into its
 * query (measured: `agentrl` session of 2026-11-30); the feasibility study copied with ~150.
 */
export const POOL_SIZES = {
  countries: 24,
  citySingles: 44,
  cityPairs: 6,
  companySingles: 22,
  companyPairs: 4,
  firstNames: 36,
  lastNames: 42,
} as const;

export interface NamePools {
  countries: readonly string[];
  /** City names with no near-duplicate in any pool. */
  citySingles: readonly string[];
  /** Near-duplicate city names: `[base, base + "r" | "a"]`. */
  cityPairs: readonly (readonly [string, string])[];
  companySingles: readonly string[];
  companyPairs: readonly (readonly [string, string])[];
  firstNames: readonly string[];
  lastNames: readonly string[];
}

const ONSETS = [
  "b",
  "d",
  "f",
  "g",
  "k",
  "l",
  "m",
  "n",
  "p",
  "r",
  "s",
  "t",
  "v",
  "z",
  "br",
  "dr",
  "kr",
  "tr",
  "st",
  "sh",
];
const VOWELS = ["a", "e", "i", "o", "u"];
const CODAS = ["n", "r", "l", "s"];

type Shape = (rng: Rng) => string;

const syllable = (rng: Rng) => rng.pick(ONSETS) + rng.pick(VOWELS);
const maybe = (rng: Rng, p: number, text: () => string) => (rng.chance(p) ? text() : "");

const SHAPES: Record<"country" | "city" | "company" | "first" | "last", Shape> = {
  country: (rng) =>
    syllable(rng) + syllable(rng) + rng.pick(["via", "nia", "ria", "dor", "land", "stan", "mark"]),
  city: (rng) =>
    syllable(rng) +
    maybe(rng, 0.5, () => rng.pick(CODAS)) +
    syllable(rng) +
    maybe(rng, 0.3, () => rng.pick(CODAS)),
  company: (rng) =>
    syllable(rng) +
    rng.pick(["l", "n", "r", "x", "k"]) +
    rng.pick(["co", "tek", "ex", "ix", "ora", "ium", "on"]),
  first: (rng) =>
    maybe(rng, 0.3, () => rng.pick(VOWELS)) +
    syllable(rng) +
    maybe(rng, 0.4, () => rng.pick(VOWELS) + rng.pick(CODAS)),
  last: (rng) =>
    rng.pick(ONSETS) +
    rng.pick(VOWELS) +
    rng.pick(["ld", "sh", "rn", "nd", "rk", "st", "ck", "ll", "sk"]) +
    maybe(rng, 0.4, () => rng.pick(["en", "er", "ing"])),
};

class PoolBuilder {
  readonly used = new Set<string>();
  private readonly reserved: ReadonlySet<string>;
  constructor(reserved: readonly string[]) {
    this.reserved = new Set(reserved);
  }

  /** A name nobody holds and that is no near-duplicate of a held name. */
  acceptable(name: string): boolean {
    if (name.length < 3 || name.length > 10 || this.used.has(name) || this.reserved.has(name)) return false;
    if (this.used.has(name.slice(0, -1))) return false;
    for (let c = 97; c <= 122; c++) if (this.used.has(name + String.fromCharCode(c))) return false;
    return true;
  }

  take(rng: Rng, shape: Shape, count: number): string[] {
    const out: string[] = [];
    for (let attempts = 0; out.length < count; attempts++) {
      if (attempts > count * 1000) throw new Error("name pools: syllable space exhausted");
      const name = shape(rng);
      if (!this.acceptable(name)) continue;
      this.used.add(name);
      out.push(name);
    }
    return out;
  }

  takePairs(rng: Rng, shape: Shape, count: number): [string, string][] {
    const out: [string, string][] = [];
    for (let attempts = 0; out.length < count; attempts++) {
      if (attempts > count * 1000) throw new Error("name pools: syllable space exhausted");
      const base = shape(rng);
      const twin = nearDuplicateOf(base);
      if (!this.acceptable(base) || !this.acceptable(twin) || twin.length > 10) continue;
      this.used.add(base);
      this.used.add(twin);
      out.push([base, twin]);
    }
    return out;
  }
}

let cached: NamePools | undefined;

/** The pools, generated on first use (template words never become names). */
export function namePools(): NamePools {
  if (cached) return cached;
  const rng = createRng(hashString("agentrl/world/names/v1"));
  const builder = new PoolBuilder(TEMPLATE_WORDS);
  // Pairs first: their members must not be rejected as near-duplicates of earlier singles.
  const cityPairs = builder.takePairs(rng.fork("city-pairs"), SHAPES.city, POOL_SIZES.cityPairs);
  const companyPairs = builder.takePairs(rng.fork("company-pairs"), SHAPES.company, POOL_SIZES.companyPairs);
  cached = {
    cityPairs,
    companyPairs,
    countries: builder.take(rng.fork("countries"), SHAPES.country, POOL_SIZES.countries),
    citySingles: builder.take(rng.fork("cities"), SHAPES.city, POOL_SIZES.citySingles),
    companySingles: builder.take(rng.fork("companies"), SHAPES.company, POOL_SIZES.companySingles),
    firstNames: builder.take(rng.fork("first"), SHAPES.first, POOL_SIZES.firstNames),
    lastNames: builder.take(rng.fork("last"), SHAPES.last, POOL_SIZES.lastNames),
  };
  return cached;
}
