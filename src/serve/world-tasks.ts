/**
 * Finding the world task behind a request, for served policies that need more than the question
 * (the scripted expert follows the task's gold plan). The client names the task in the
 * `x-agentrl-task-id` header (the OpenAI policy does by default) or `metadata.task_id`; a world task id rebuilds its task
 * (`taskFromId`, default world config), which is used only if its question is the request's
 * question. Questions alone are ambiguous: the same question text occurs in several worlds.
 */
import { canonicalText } from "../env/protocol.ts";
import type { Task } from "../types/task.ts";
import { taskFromId } from "../world/index.ts";
import type { TaskRequest } from "./server.ts";

export function worldTaskResolver(
  options: { cacheSize?: number } = {},
): (request: TaskRequest) => Task | undefined {
  const cacheSize = options.cacheSize ?? 4096;
  const cache = new Map<string, Task | null>();
  return (request) => {
    const id = request.taskId;
    if (!id) return undefined;
    let task = cache.get(id);
    if (task === undefined) {
      try {
        task = taskFromId(id);
      } catch {
        task = null;
      }
      if (cache.size >= cacheSize) cache.delete(cache.keys().next().value!);
      cache.set(id, task);
    }
    if (!task || canonicalText(task.question) !== request.question) return undefined;
    return request.systemPrompt ? { ...task, systemPrompt: request.systemPrompt } : task;
  };
}
