/**
 * Stitched trajectories: the baseline arXiv:2510.11701 compares real trajectories against,
 * synthetic agentic data assembled from single-step templates the way it is commonly made. Each
 * gold step of a task is rendered on its own and the steps are concatenated:
 *
 * - a search step is `<search> {gold query} </search>` followed by the CLEAN GOLD DOCUMENT of the
 *   entity the step needs, whatever the search tool would have returned (no other document, no
 *   near-duplicate, no ranking); a calc step is `<calc> {gold expression} </calc>` followed by
 *   the gold result; the last step is `<answer> {gold answer} </answer>`;
 * - each step's query is templated from the gold plan (the entity's name in the knowledge graph),
 *   not read from the previous observation: the steps are single-hop examples stitched together,
 *   no step depends on what an earlier step observed;
 * - no tool ever fails (status `ok`, never injected), so there is no retry, no correction, no
 *   give-up and no format error; every trajectory is correct and has exactly one turn per gold
 *   step.
 *
 * Real trajectories (collect.ts) differ exactly there: under tool noise they hold failed calls
 * (error, empty, timeout, wrong document or number) and the agent's repeated calls after them, so
 * they are longer and their observations are what the tools returned. Without noise, the expert's
 * real trajectories equal the stitched ones wherever the search tool's top hit is the gold
 * document (tested in stitch.test.ts), so the two datasets differ only in what real interaction
 * adds. Same `Trajectory` type: the SFT trainer reads both.
 */
import { renderAnswer, renderObservation, renderPrompt, renderToolCall } from "../env/protocol.ts";
import { cachedWorld, worldToolsFor } from "../env/task-set.ts";
import { finishRunAfterError } from "../store/run-failure.ts";
import { toolSpec } from "../tools/index.ts";
import type { Task } from "../types/task.ts";
import type { Trajectory, Turn } from "../types/trajectory.ts";
import { checkAnswer, type World } from "../world/index.ts";
import { createDatasetDirectory } from "./dataset.ts";
import { type DatasetTaskOptions, datasetTasks } from "./tasks.ts";

export const STITCHED_POLICY_ID = "stitched";

const documentIndex = new WeakMap<World, Map<string, string>>();

function documentText(world: World, entity: string): string {
  let index = documentIndex.get(world);
  if (!index) {
    index = new Map(world.documents.map((document) => [document.id, document.text]));
    documentIndex.set(world, index);
  }
  const text = index.get(entity);
  if (text === undefined) throw new Error(`stitch: world ${world.seed} has no document for entity ${entity}`);
  return text;
}

/** The stitched trajectory of a world task (see the file comment). */
export function stitchTrajectory(task: Task, options: { seed?: number } = {}): Trajectory {
  if (!task.gold || task.gold.length === 0) throw new Error(`stitch: task ${task.id} has no gold steps`);
  if (task.worldSeed === undefined) throw new Error(`stitch: task ${task.id} has no worldSeed`);
  const world = cachedWorld(task.worldSeed);
  const turns: Turn[] = [];
  let answer: string | null = null;
  for (const step of task.gold) {
    const index = turns.length;
    if (step.type === "answer") {
      answer = step.answer;
      turns.push({
        index,
        text: renderAnswer(step.answer),
        tokenIds: [],
        logprobs: null,
        action: { type: "answer", answer: step.answer },
        rewards: {},
      });
      break;
    }
    const search = step.type === "search";
    const tool = search ? "search" : "calc";
    const payload = search ? step.query : step.expression;
    const content = search ? documentText(world, step.entity) : step.result;
    turns.push({
      index,
      text: renderToolCall(tool, payload),
      tokenIds: [],
      logprobs: null,
      action: { type: "tool-call", tool, arguments: search ? { query: payload } : { expression: payload } },
      toolResult: {
        status: "ok",
        content,
        injected: false,
        ...(search ? { refs: [step.entity] } : { value: Number(step.result) }),
      },
      observation: { text: renderObservation(content), tokenIds: [] },
      rewards: {},
    });
  }
  if (answer === null) throw new Error(`stitch: the gold steps of task ${task.id} end without an answer`);
  const correct = checkAnswer(task, answer);
  return {
    id: `${task.id}#stitched`,
    taskId: task.id,
    family: task.family,
    policyId: STITCHED_POLICY_ID,
    seed: options.seed ?? 0,
    prompt: { text: renderPrompt(task.question), tokenIds: [] },
    turns,
    finalAnswer: answer,
    correct,
    outcomeReward: correct ? 1 : 0,
    endReason: "answer",
    info: { source: "stitch" },
  };
}

export interface StitchDatasetOptions {
  tasks: DatasetTaskOptions;
  /** Dataset directory to create (`runs/<id>`); default `<runsRoot>/dataset-<date>`. */
  out?: string;
  runsRoot?: string;
  parentId?: string;
}

export interface StitchDatasetResult {
  directory: string;
  runId: string;
  tasks: number;
  trajectories: number;
  provenance: Record<string, unknown>;
}

/** Writes one stitched trajectory per task into a new dataset directory. */
export function stitchDataset(options: StitchDatasetOptions): StitchDatasetResult {
  const tasks = datasetTasks(options.tasks);
  const provenance = {
    tasks: { split: "train", ...options.tasks },
    observations: "gold-document",
    failures: 0,
  };
  const { directory, store, run } = createDatasetDirectory({
    source: "stitch",
    out: options.out,
    runsRoot: options.runsRoot,
    config: provenance,
    parentId: options.parentId,
  });
  try {
    store.setToolSpecs(run.id, worldToolsFor()(tasks[0], 0).map(toolSpec));
    const trajectories = tasks.map((task) => stitchTrajectory(task, { seed: options.tasks.seed }));
    const added = store.addTrajectories(run.id, trajectories);
    const summary = { tasks: tasks.length, trajectories: added };
    store.finishRun(run.id, "completed", summary);
    return { directory, runId: run.id, ...summary, provenance: { source: "stitch", ...provenance } };
  } catch (error) {
    finishRunAfterError(store, run.id, error);
    throw error;
  } finally {
    store.close();
  }
}
