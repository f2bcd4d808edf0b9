/**
 * A minimal episode driver for testing scripted policies against a world without the real tools
 * and episode loop (src/tools, src/env): BM25 search over the world's documents (minisearch, title
 * boosted, exact terms, top-k texts joined by a space, like the real search tool), a `+`/`-`
 * calculator, seeded noise per call, and the tagged protocol. It is a test stand-in, not the
 * environment: trajectories come from src/env.
 */
import MiniSearch from "minisearch";
import { createRng, mixSeeds, type Rng } from "../../core/random.ts";
import { renderObservation, renderPrompt } from "../../env/protocol.ts";
import type { Policy, PolicyContext } from "../../types/policy.ts";
import type { Task } from "../../types/task.ts";
import type { Action, Turn } from "../../types/trajectory.ts";
import { checkAnswer, type World } from "../../world/index.ts";

export interface MiniNoise {
  error?: number;
  empty?: number;
  timeout?: number;
  /** Another document, or a calc result off by some. */
  corrupted?: number;
}

export interface MiniEpisodeOptions {
  seed: number;
  noise?: MiniNoise;
  topK?: number;
  maxTurns?: number;
}

export interface MiniEpisode {
  turns: Turn[];
  answer: string | null;
  correct: boolean;
  /** Statuses of the tool calls, in order (what the tools did, hidden from the policy). */
  statuses: string[];
}

const indexes = new WeakMap<World, MiniSearch>();

function searchIndex(world: World): MiniSearch {
  let index = indexes.get(world);
  if (!index) {
    index = new MiniSearch({ idField: "position", fields: ["title", "text"] });
    index.addAll(
      world.documents.map((document, position) => ({ position, title: document.title, text: document.text })),
    );
    indexes.set(world, index);
  }
  return index;
}

/** Positions of the top-k documents for `query`, best first (ties by document order). */
export function searchWorld(world: World, query: string, topK = 1): number[] {
  return searchIndex(world)
    .search(query, { boost: { title: 2 }, fuzzy: false, prefix: false })
    .sort((a, b) => b.score - a.score || a.id - b.id)
    .slice(0, topK)
    .map((hit) => hit.id as number);
}

function parseAction(text: string): Action {
  const match = /<(search|calc|answer)> (.*) <\/\1>/.exec(text);
  if (!match) return { type: "format-error", error: "no action tag" };
  const [, tag, payload] = match;
  if (tag === "answer") return { type: "answer", answer: payload };
  return {
    type: "tool-call",
    tool: tag,
    arguments: tag === "search" ? { query: payload } : { expression: payload },
  };
}

function calc(expression: string): number | null {
  if (!/^\d+( [+-] \d+)*$/.test(expression)) return null;
  const tokens = expression.split(" ");
  let value = Number(tokens[0]);
  for (let i = 1; i < tokens.length; i += 2) value += (tokens[i] === "+" ? 1 : -1) * Number(tokens[i + 1]);
  return value;
}

const FAILURES: [keyof MiniNoise, string][] = [
  ["error", "error : service unavailable"],
  ["empty", "no results"],
  ["timeout", "error : timed out"],
];

/** One tool call with noise: the mode is one uniform draw per call against the cumulative rates. */
function callTool(
  world: World,
  action: Extract<Action, { type: "tool-call" }>,
  rng: Rng,
  noise: MiniNoise,
  topK: number,
): { status: string; content: string } {
  const draw = rng.next();
  let cumulative = 0;
  for (const [mode, message] of FAILURES) {
    cumulative += noise[mode] ?? 0;
    if (draw < cumulative) return { status: mode, content: message };
  }
  const corrupt = draw < cumulative + (noise.corrupted ?? 0);
  if (action.tool === "search") {
    let hits = searchWorld(world, String(action.arguments.query), topK);
    if (corrupt) {
      const others = world.documents.map((_, i) => i).filter((i) => !hits.includes(i));
      hits = rng.shuffle(others).slice(0, Math.max(1, hits.length));
    }
    if (hits.length === 0) return { status: "empty", content: "no results" };
    return {
      status: corrupt ? "corrupted" : "ok",
      content: hits.map((i) => world.documents[i].text).join(" "),
    };
  }
  const value = calc(String(action.arguments.expression));
  if (value === null) return { status: "error", content: "error : invalid expression" };
  return corrupt
    ? { status: "corrupted", content: String(value + rng.range(1, 9)) }
    : { status: "ok", content: String(value) };
}

export async function runMiniEpisode(
  policy: Policy,
  world: World,
  task: Task,
  options: MiniEpisodeOptions,
): Promise<MiniEpisode> {
  const topK = options.topK ?? 1;
  const noise = options.noise ?? {};
  const turns: Turn[] = [];
  const statuses: string[] = [];
  const prompt = renderPrompt(task.question);
  for (let index = 0; index < (options.maxTurns ?? 12); index++) {
    const context: PolicyContext = {
      episodeId: `${task.id}#${options.seed}`,
      task,
      prompt: { text: prompt, tokenIds: [] },
      turns,
      tools: [],
      seed: options.seed,
      maxTokens: 32,
    };
    const [step] = await policy.act([context]);
    const action = parseAction(step.text);
    const turn: Turn = { index, text: step.text, tokenIds: [], logprobs: null, action, rewards: {} };
    turns.push(turn);
    if (action.type === "answer") {
      return { turns, answer: action.answer, correct: checkAnswer(task, action.answer), statuses };
    }
    if (action.type === "format-error") break;
    const { status, content } = callTool(
      world,
      action,
      createRng(mixSeeds(options.seed, index)),
      noise,
      topK,
    );
    statuses.push(status);
    turn.observation = { text: renderObservation(content), tokenIds: [] };
  }
  return { turns, answer: null, correct: false, statuses };
}
