/**
 * Behaviour policies: a careful agent with controllable flaws, for the pretraining corpus and for
 * measuring what the metrics see. The agent follows the task's plan (`metadata.plan`: which entity
 * to search first and which attribute to read from each document), reading every fact from the
 * observations, so a flaw propagates the way it would for a real agent.
 *
 * Every option is a per-episode probability, drawn once from the episode seed:
 * - `guess`: answer at once, without any call, a number of the answer's magnitude.
 * - `vague`: one search of the episode (chosen uniformly) is vague: a person's first name only, or
 *   another entity of the same type (a near-duplicate name when the world has one). The agent then
 *   reads the first returned document of that type stating the attribute it wants, and continues
 *   from what it read, so it answers wrong unless the vague query happened to find the right one.
 * - `slip`: one digit slips: in a calc operand, or in the copied answer when no calc is used.
 * - `quit`: give up at the first failed call (error, no results, timeout, wrong document or
 *   number) with a guess, instead of retrying.
 * - `skipCalc`: arithmetic in the head instead of calc, right with probability MENTAL_MATH_ACCURACY
 *   (otherwise one digit off).
 * - `reorder`: look the operands of an arithmetic task up in a random order (the calc expression
 *   keeps question order): a different but correct strategy.
 * - `recheck`: after a successful search, repeat it once (per search, this probability): a
 *   redundant but harmless call.
 * With every option 0 the agent is flawless and reproduces the gold steps exactly.
 */
import type { Rng } from "../../core/random.ts";
import type { Policy } from "../../types/policy.ts";
import type { Task } from "../../types/task.ts";
import {
  ATTRIBUTES,
  type Attribute,
  areNearDuplicates,
  type EntityType,
  firstName,
  generateWorld,
  namePools,
  parseDocuments,
  type TaskPlan,
  taskPlan,
  taskWorldConfig,
  type World,
} from "../../world/index.ts";
import { type Agent, type AgentAction, type AgentContext, createScriptedPolicy } from "./agent.ts";
import { DEFAULT_MAX_RETRIES, expertAgent } from "./expert.ts";
import { findDocument, guessNumber, observationHasNumber, slipDigit } from "./skills.ts";

export interface BehaviourOptions {
  id?: string;
  guess?: number;
  vague?: number;
  slip?: number;
  quit?: number;
  skipCalc?: number;
  reorder?: number;
  recheck?: number;
  /** Repeats of a failed call before giving up (default 4). */
  maxRetries?: number;
}

type Flaw = "guess" | "vague" | "slip" | "quit" | "skipCalc" | "reorder" | "recheck";
const FLAWS: readonly Flaw[] = ["guess", "vague", "slip", "quit", "skipCalc", "reorder", "recheck"];

/** Chance that arithmetic done in the head (`skipCalc`) is right. */
export const MENTAL_MATH_ACCURACY = 0.25;

/** The presets behind the registry names. */
export const BEHAVIOUR_PRESETS = {
  guesser: { id: "guesser", guess: 1 },
  vague: { id: "vague", vague: 1 },
  sloppy: { id: "sloppy", slip: 0.5, skipCalc: 0.5 },
  quitter: { id: "quitter", quit: 1 },
} as const satisfies Record<string, BehaviourOptions>;

interface Resolved {
  rates: Record<Flaw, number>;
  maxRetries: number;
}

function resolve(options: BehaviourOptions): Resolved {
  const valid = [...FLAWS, "id", "maxRetries"];
  for (const key of Object.keys(options)) {
    if (!valid.includes(key))
      throw new Error(`behaviour policy: unknown option "${key}" (valid: ${valid.join(", ")})`);
  }
  const rates = {} as Record<Flaw, number>;
  for (const flaw of FLAWS) {
    const rate = options[flaw] ?? 0;
    if (typeof rate !== "number" || !(rate >= 0 && rate <= 1)) {
      throw new Error(`behaviour policy: ${flaw} must be a probability in [0, 1], got ${String(rate)}`);
    }
    rates[flaw] = rate;
  }
  const maxRetries = options.maxRetries ?? DEFAULT_MAX_RETRIES;
  if (!Number.isInteger(maxRetries) || maxRetries < 0) {
    throw new Error(`behaviour policy: maxRetries must be an integer >= 0, got ${maxRetries}`);
  }
  return { rates, maxRetries };
}

export function createBehaviourPolicy(options: BehaviourOptions = {}): Policy {
  const resolved = resolve(options);
  const id =
    options.id ??
    `behaviour(${FLAWS.filter((f) => resolved.rates[f] > 0)
      .map((f) => `${f}=${resolved.rates[f]}`)
      .join(",")})`;
  return createScriptedPolicy(id, (context) => behaviourAgent(context, resolved));
}

/** The flaws of one episode, drawn in a fixed order from the episode seed. */
function drawEpisode(rng: Rng, rates: Record<Flaw, number>): Record<Flaw, boolean> {
  const episode = rng.fork("episode");
  const drawn = {} as Record<Flaw, boolean>;
  for (const flaw of FLAWS) drawn[flaw] = episode.chance(rates[flaw]);
  return drawn;
}

function* behaviourAgent(context: AgentContext, { rates, maxRetries }: Resolved): Agent {
  const { task, rng } = context;
  const flaws = drawEpisode(rng, rates);
  const giveUp = (): Agent => once({ kind: "answer", answer: guessNumber(task, rng.fork("guess")) });
  if (flaws.guess) return yield* giveUp();
  const plan = taskPlan(task);
  if (!plan) return yield* expertAgent(context, maxRetries);

  const searches = plan.chains.reduce((n, chain) => n + chain.reads.length, 0);
  const vagueSearch = flaws.vague ? rng.fork("vague").int(searches) : -1;
  const order = plan.chains.map((_, i) => i);
  const chainOrder = flaws.reorder ? rng.fork("reorder").shuffle(order) : order;
  let searchIndex = 0;
  const values: string[] = new Array(plan.chains.length);

  for (const c of chainOrder) {
    const chain = plan.chains[c];
    let name = chain.start;
    let type: EntityType = chain.type;
    for (const attribute of chain.reads) {
      const lookupRng = rng.fork(`lookup/${searchIndex}`);
      const vague = searchIndex++ === vagueSearch;
      const query = vague ? vagueQuery(name, type, task, lookupRng) : name;
      let fact: string | undefined;
      for (let attempt = 0; attempt <= maxRetries && fact === undefined; attempt++) {
        const observation = yield { kind: "search", query };
        fact = vague
          ? readFirst(observation, type, attribute)
          : findDocument(observation, name)?.facts[attribute];
        if (fact === undefined && flaws.quit) break;
      }
      if (fact === undefined) return yield* giveUp();
      if (lookupRng.chance(rates.recheck)) yield { kind: "search", query };
      const link = ATTRIBUTES[attribute];
      if (link.kind === "link") {
        name = fact;
        type = link.target;
      } else {
        values[c] = fact;
      }
    }
  }
  if (plan.combine === "none") {
    const answer = flaws.slip ? slipDigit(values[0], rng.fork("slip")) : values[0];
    yield { kind: "answer", answer };
    return;
  }
  const exact = combine(plan, values.map(Number));
  if (flaws.skipCalc) {
    const mental = rng.fork("mental").chance(MENTAL_MATH_ACCURACY)
      ? String(exact)
      : slipDigit(String(exact), rng.fork("mental-slip"));
    yield { kind: "answer", answer: flaws.slip ? slipDigit(mental, rng.fork("slip")) : mental };
    return;
  }
  const operands = [...values];
  if (flaws.slip) {
    const slipRng = rng.fork("slip");
    const which = slipRng.int(operands.length);
    operands[which] = slipDigit(operands[which], slipRng);
  }
  const expected = combine(plan, operands.map(Number));
  const expression = operands.join(plan.combine === "diff" ? " - " : " + ");
  for (let attempt = 0; attempt <= maxRetries; attempt++) {
    const observation = yield { kind: "calc", expression };
    // A calculator may return differences unsigned.
    const result = [String(expected), String(Math.abs(expected))].find((v) =>
      observationHasNumber(observation, v),
    );
    if (result !== undefined) {
      yield { kind: "answer", answer: result };
      return;
    }
    if (flaws.quit) break;
  }
  return yield* giveUp();
}

function* once(action: AgentAction): Agent {
  yield action;
}

function combine(plan: TaskPlan, values: number[]): number {
  return plan.combine === "diff" ? values[0] - values[1] : values.reduce((a, b) => a + b, 0);
}

/** The first document of `type` in the observation that states `attribute` (what a careless reader takes). */
function readFirst(observation: string, type: EntityType, attribute: Attribute): string | undefined {
  return parseDocuments(observation).find(
    (document) => document.type === type && document.facts[attribute] !== undefined,
  )?.facts[attribute];
}

/** A first name for a person; otherwise another name of the same type, a near-duplicate if there is one. */
function vagueQuery(name: string, type: EntityType, task: Task, rng: Rng): string {
  if (type === "person") return firstName(name);
  const world = worldOf(task);
  const names = world
    ? world.entities.filter((entity) => entity.type === type).map((entity) => entity.name)
    : poolNames(type);
  const others = names.filter((other) => other !== name);
  if (others.length === 0) return name;
  const near = others.filter((other) => areNearDuplicates(other, name));
  return rng.pick(near.length > 0 ? near : others);
}

function poolNames(type: Exclude<EntityType, "person">): string[] {
  const pools = namePools();
  if (type === "country") return [...pools.countries];
  if (type === "city") return [...pools.citySingles, ...pools.cityPairs.flat()];
  return [...pools.companySingles, ...pools.companyPairs.flat()];
}

// The vague agent picks wrong entities that exist in the task's world: regenerate it (cheap) and
// keep the last few.
const worlds = new Map<string, World>();
const WORLD_CACHE_SIZE = 8;

function worldOf(task: Task): World | undefined {
  if (task.worldSeed === undefined) return undefined;
  const config = taskWorldConfig(task) ?? {};
  const key = `${task.worldSeed}|${JSON.stringify(config)}`;
  let world = worlds.get(key);
  if (!world) {
    try {
      world = generateWorld(task.worldSeed, config);
    } catch {
      return undefined;
    }
    if (worlds.size >= WORLD_CACHE_SIZE) worlds.delete(worlds.keys().next().value!);
    worlds.set(key, world);
  }
  return world;
}
