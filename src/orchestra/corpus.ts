/**
 * The orchestrator's vocabulary and its pretraining corpus. The embedded tokenizer is fixed per
 * checkpoint, so an orchestrator needs its own base whose vocabulary holds the sub-agent tags and
 * the words of orchestration questions and messages; it is the world's vocabulary plus those.
 *
 * The corpus is scripted orchestration episodes of mixed quality through the real orchestra env,
 * on train worlds, over every axis at small values, with weak and strong sub-agents: careful
 * decomposition (with and without parallel plans, retries and cross-checks), whole chains sent to
 * the searcher, delegation of the whole question, answering before the sum and guessing. Every episode is
 * kept, right or wrong, as for the world bases.
 */
import { createRng, mixSeeds } from "../core/random.ts";
import { OBS_CLOSE, OBS_OPEN } from "../env/protocol.ts";
import { runEpisodes } from "../env/run-episodes.ts";
import { embeddedVocabulary } from "../pretrain/corpus.ts";
import { FORMAT_ERRORS } from "../tools/index.ts";
import type { Trajectory } from "../types/trajectory.ts";
import { checkAnswer } from "../world/index.ts";
import {
  type Degree,
  ORCHESTRA_BUDGETS,
  ORCHESTRA_MESSAGES,
  orchestraToolsFor,
  withOrchestraReward,
} from "./env.ts";
import { AXIS_RANGE, generateOrchestraTasks } from "./generate.ts";
import { AXES } from "./graph.ts";
import { ATTRIBUTE_WORDS } from "./question.ts";
import { createStrategyPolicy, type StrategyOptions } from "./strategies.ts";
import { COMPETENCE_LEVELS, SUB_AGENT_MESSAGES, SUB_AGENTS } from "./sub-agents.ts";

/** Tool names the orchestrator can call: the sub-agents and `parallel`. */
export const ORCHESTRA_TOOLS = [...SUB_AGENTS, "parallel"] as const;

let cachedVocabulary: string[] | undefined;

/** The world vocabulary plus the orchestration words not already in it, in a fixed order. */
export function orchestraVocabulary(): string[] {
  if (cachedVocabulary) return [...cachedVocabulary];
  const base = embeddedVocabulary();
  const known = new Set(base);
  const extra: string[] = [];
  const add = (text: string) => {
    for (const word of text.split(" ")) {
      if (word && !/^\d+$/.test(word) && !known.has(word) && word !== OBS_OPEN && word !== OBS_CLOSE) {
        known.add(word);
        extra.push(word);
      }
    }
  };
  for (const tool of ORCHESTRA_TOOLS) add(`<${tool}> </${tool}>`);
  add(`what is of plus ? or : ; + part step question result ${SUB_AGENTS.join(" ")}`);
  for (const word of Object.values(ATTRIBUTE_WORDS)) add(word);
  for (const message of [
    ...Object.values(SUB_AGENT_MESSAGES),
    ...Object.values(ORCHESTRA_MESSAGES),
    ...Object.values(FORMAT_ERRORS),
  ])
    add(message);
  cachedVocabulary = [...base, ...extra];
  return [...cachedVocabulary];
}

/** The behaviours of the corpus and their shares (normalised). */
export const ORCHESTRA_CORPUS_MIX: { weight: number; strategy: StrategyOptions; degree: Degree }[] = [
  {
    weight: 0.2,
    degree: "high",
    strategy: { id: "careful", mode: "decompose", verify: "conflicts", retries: 1 },
  },
  {
    weight: 0.15,
    degree: "high",
    strategy: { id: "careful-parallel", mode: "decompose", verify: "conflicts", retries: 1, parallel: true },
  },
  {
    weight: 0.1,
    degree: "high",
    strategy: { id: "check-all", mode: "decompose", verify: "all", retries: 1, parallel: true },
  },
  { weight: 0.15, degree: "high", strategy: { id: "trusting", mode: "decompose", verify: "none" } },
  {
    weight: 0.1,
    degree: "high",
    strategy: { id: "chains", mode: "decompose", chains: true, verify: "none" },
  },
  { weight: 0.1, degree: "low", strategy: { id: "delegate", mode: "delegate" } },
  {
    weight: 0.1,
    degree: "high",
    strategy: { id: "sloppy", mode: "decompose", verify: "none", skipSum: true, parallel: true },
  },
  { weight: 0.1, degree: "high", strategy: { id: "guesser", mode: "guess" } },
];

/** Largest axis value in the corpus: longer tasks do not fit a small model's context. */
export const CORPUS_MAX_VALUE = 4;

/** Batch `index` of the corpus: `count` episodes, deterministic in (seed, index). */
export async function orchestraCorpusEpisodes(
  seed: number,
  index: number,
  count: number,
): Promise<Trajectory[]> {
  const rng = createRng(mixSeeds(mixSeeds(seed, index), 0x0c0));
  const total = ORCHESTRA_CORPUS_MIX.reduce((sum, part) => sum + part.weight, 0);
  const out: Trajectory[] = [];
  for (const [p, part] of ORCHESTRA_CORPUS_MIX.entries()) {
    const share = Math.max(1, Math.round((count * part.weight) / total));
    for (const level of Object.keys(COMPETENCE_LEVELS) as (keyof typeof COMPETENCE_LEVELS)[]) {
      const n = Math.ceil(share / 2);
      const tasks = Array.from({ length: n }, (_, i) => {
        const axis = rng.pick(AXES);
        const value = rng.range(AXIS_RANGE[axis].min, CORPUS_MAX_VALUE);
        return generateOrchestraTasks({
          axis,
          value,
          count: 1,
          seed: mixSeeds(mixSeeds(seed, index), p * 1000 + i),
        })[0];
      });
      const episodes = await runEpisodes({
        policy: createStrategyPolicy(part.strategy),
        episodes: tasks.map((task, i) => ({ task, seed: mixSeeds(mixSeeds(seed, index), p * 7919 + i) })),
        tools: orchestraToolsFor({ degree: part.degree, errorRate: COMPETENCE_LEVELS[level] }),
        verify: checkAnswer,
        budgets: ORCHESTRA_BUDGETS,
      });
      // `result` answers resolved, so the corpus statistics count them right.
      out.push(...episodes.map((trajectory, i) => withOrchestraReward(trajectory, tasks[i])));
    }
  }
  return rng.shuffle(out).slice(0, count);
}
