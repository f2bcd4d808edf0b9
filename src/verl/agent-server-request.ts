/**
 * The agent-server's episode request (agent-server.md), validated with zod: a bad request is a 400
 * naming the first bad field, never a crash or a silently ignored field.
 */
import { z } from "zod";
import { formatPath, RequestError } from "../serve/request.ts";
import type { Task } from "../types/task.ts";

const goldStep = z.union([
  z.object({ type: z.literal("search"), query: z.string(), entity: z.string() }),
  z.object({ type: z.literal("calc"), expression: z.string(), result: z.string() }),
  z.object({ type: z.literal("answer"), answer: z.string() }),
]);

/** A whole agentrl task (src/types/task.ts). */
export const taskSchema = z
  .object({
    id: z.string().min(1),
    question: z.string().min(1),
    answer: z.string(),
    aliases: z.array(z.string()).optional(),
    family: z.string().min(1).default("file"),
    template: z.string().optional(),
    hops: z.number().int().optional(),
    worldSeed: z.number().int().optional(),
    split: z.enum(["train", "test"]).optional(),
    gold: z.array(goldStep).optional(),
    evidence: z.array(z.string()).optional(),
    systemPrompt: z.string().optional(),
    metadata: z.record(z.string(), z.unknown()).optional(),
  })
  .strict();

export const episodeRequestSchema = z
  .object({
    task: taskSchema.optional(),
    task_id: z.string().min(1).optional(),
    upstream: z
      .object({
        base_url: z.string().regex(/^https?:\/\/\S+$/, "must be an http(s) URL"),
        model: z.string().min(1).optional(),
      })
      .strict()
      .optional(),
    sampling: z
      .object({
        temperature: z.number().min(0).max(2).optional(),
        top_p: z.number().gt(0).max(1).optional(),
        top_k: z.number().int().min(-1).nullable().optional(),
        logprobs: z.boolean().optional(),
      })
      .strict()
      .optional(),
    seed: z.number().int().min(0).max(0xffffffff).optional(),
    response_length: z.number().int().min(1).optional(),
    ground_truth: z.union([z.string(), z.number()]).optional(),
    request_id: z
      .string()
      .regex(/^[A-Za-z0-9._:@/-]{1,200}$/, "letters, digits and ._:@/- only, at most 200")
      .optional(),
    raw_prompt: z.unknown().optional(),
    index: z.union([z.number(), z.string(), z.null()]).optional(),
  })
  .strict();

export type EpisodeRequest = z.infer<typeof episodeRequestSchema>;

/** Parses a request body; throws a 400 `RequestError` naming the first bad field. */
export function parseEpisodeRequest(body: unknown): EpisodeRequest {
  const parsed = episodeRequestSchema.safeParse(body);
  if (!parsed.success) {
    const issue = parsed.error.issues[0];
    const path = formatPath(issue.path);
    const keys = issue.code === "unrecognized_keys" ? ` (${issue.keys.join(", ")})` : "";
    throw new RequestError(400, `${path || "request"}: ${issue.message}${keys}`, path || null);
  }
  const request = parsed.data;
  if (!request.task === !request.task_id)
    throw new RequestError(400, "give exactly one of task (a whole task) and task_id", "task");
  return request;
}

/** The request's task: given whole, or looked up in the server's task set. */
export function requestTask(request: EpisodeRequest, tasks: ReadonlyMap<string, Task>): Task {
  let task: Task;
  if (request.task) task = request.task as Task;
  else {
    const found = tasks.get(request.task_id!);
    if (!found) {
      throw new RequestError(
        400,
        tasks.size === 0
          ? `task_id ${request.task_id}: the server has no task set (start it with --tasks, or send the whole task)`
          : `task_id ${request.task_id}: not in the server's task set of ${tasks.size} tasks`,
        "task_id",
      );
    }
    task = found;
  }
  if (request.ground_truth !== undefined) {
    const truth = String(request.ground_truth);
    if (truth !== task.answer && !(task.aliases ?? []).includes(truth)) {
      throw new RequestError(
        400,
        `ground_truth ${JSON.stringify(truth)} is not task ${task.id}'s answer ${JSON.stringify(task.answer)}: the dataset and the task disagree`,
        "ground_truth",
      );
    }
  }
  return task;
}
