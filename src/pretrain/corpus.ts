/**
 * The pretraining corpus: what a "pretrained LLM" has seen, generated on the fly. Episodes of the
 * scripted behaviour policies in a controlled mix (careful tool use with varied strategies,
 * guessing without tools, vague queries, arithmetic slips, giving up after a tool error) run
 * through the real episode loop with noisy tools, on training worlds only. Some templates are
 * never demonstrated (`withheld`, by default `sum3`: arithmetic over three facts), so the base
 * model cannot sample them and the article's claim "RL cannot create what the base never samples" is
 * measurable. Every episode is kept, right or wrong: the corpus is broad, not curated.
 *
 * The mix is part of the model card written next to each checkpoint.
 */
import { mixSeeds } from "../core/random.ts";
import { runEpisodes } from "../env/run-episodes.ts";
import { cachedWorld, worldToolsFor } from "../env/task-set.ts";
import {
  type BehaviourOptions,
  createBehaviourPolicy,
  createMixturePolicy,
} from "../policy/scripted/index.ts";
import { TOOL_MESSAGE_WORDS, uniformNoise } from "../tools/index.ts";
import type { Tokenizer } from "../types/policy.ts";
import type { Task } from "../types/task.ts";
import type { Trajectory } from "../types/trajectory.ts";
import { checkAnswer, generateTasks, worldSeeds, worldVocabulary } from "../world/index.ts";

export interface CorpusMix {
  /** Behaviours and their share of episodes (normalised). */
  components: { weight: number; behaviour: BehaviourOptions }[];
  /** Templates never demonstrated. */
  withheldTemplates: string[];
  /** Total tool failure rate during corpus episodes (so the corpus holds retries and give-ups). */
  noise: number;
}

/**
 * The two shipped mixes. `strong`: a third of episodes are careful tool use. `weak`: careful use is
 * rare (12%), most episodes guess or search vaguely: a base that samples correct paths only rarely,
 * where RL has little to sharpen.
 */
export const CORPUS_MIXES: Record<"strong" | "weak", CorpusMix> = {
  strong: {
    components: [
      { weight: 0.35, behaviour: { id: "careful", reorder: 0.5, recheck: 0.1 } },
      { weight: 0.2, behaviour: { id: "vague", vague: 1 } },
      { weight: 0.15, behaviour: { id: "guesser", guess: 1 } },
      { weight: 0.15, behaviour: { id: "sloppy", slip: 0.5, skipCalc: 0.5 } },
      { weight: 0.15, behaviour: { id: "quitter", quit: 1 } },
    ],
    withheldTemplates: ["sum3"],
    noise: 0.1,
  },
  weak: {
    components: [
      { weight: 0.12, behaviour: { id: "careful", reorder: 0.5, recheck: 0.1 } },
      { weight: 0.3, behaviour: { id: "vague", vague: 1 } },
      { weight: 0.28, behaviour: { id: "guesser", guess: 1 } },
      { weight: 0.15, behaviour: { id: "sloppy", slip: 0.5, skipCalc: 0.5 } },
      { weight: 0.15, behaviour: { id: "quitter", quit: 1 } },
    ],
    withheldTemplates: ["sum3"],
    noise: 0.1,
  },
};

/** Words of the embedded tokenizer beyond its fixed prefix: the world's and the tools' messages. */
export function embeddedVocabulary(): string[] {
  return [...worldVocabulary(), ...TOOL_MESSAGE_WORDS];
}

/** Training tasks for corpus batch `index`: `count` tasks from a few train worlds, withheld templates excluded. */
export function corpusTasks(
  mix: CorpusMix,
  seed: number,
  index: number,
  count: number,
  perWorld = 8,
): Task[] {
  const tasks: Task[] = [];
  const start = mixSeeds(seed, index) % 10_000_000;
  for (const worldSeed of worldSeeds("train", Math.ceil(count / perWorld), start)) {
    tasks.push(
      ...generateTasks(cachedWorld(worldSeed), {
        count: Math.min(perWorld, count - tasks.length),
        split: "train",
        seed: mixSeeds(worldSeed, index),
        excludeTemplates: mix.withheldTemplates,
      }),
    );
  }
  return tasks;
}

/** Runs one batch of corpus episodes (deterministic in `seed` and `index`). */
export async function corpusEpisodes(
  mix: CorpusMix,
  seed: number,
  index: number,
  count: number,
): Promise<Trajectory[]> {
  const policy = createMixturePolicy(
    "corpus",
    mix.components.map(({ weight, behaviour }) => ({ weight, policy: createBehaviourPolicy(behaviour) })),
  );
  const tasks = corpusTasks(mix, seed, index, count);
  return runEpisodes({
    policy,
    episodes: tasks.map((task, i) => ({ task, seed: mixSeeds(mixSeeds(seed, index), i) })),
    tools: worldToolsFor(mix.noise > 0 ? { noise: uniformNoise(mix.noise) } : {}),
    verify: checkAnswer,
    batchSize: 256,
  });
}

export interface EncodedEpisode {
  ids: number[];
  /** 1 on tokens the policy wrote (the loss), 0 on the prompt and observations. */
  mask: number[];
}

/**
 * Token ids of an episode exactly as the embedded policy sees it at sampling time: the prompt,
 * then each turn's text and its observation, every piece encoded separately (never the joined
 * text, so ids match what the episode loop feeds the model). Null when longer than `maxLen`.
 */
export function encodeEpisode(
  trajectory: Trajectory,
  tokenizer: Tokenizer,
  maxLen: number,
): EncodedEpisode | null {
  const ids: number[] = [];
  const mask: number[] = [];
  const push = (piece: number[], m: number) => {
    for (const id of piece) {
      ids.push(id);
      mask.push(m);
    }
  };
  push(tokenizer.encode(trajectory.prompt.text), 0);
  for (const turn of trajectory.turns) {
    push(tokenizer.encode(turn.text), 1);
    if (turn.observation) push(tokenizer.encode(turn.observation.text), 0);
  }
  return ids.length <= maxLen ? { ids, mask } : null;
}
