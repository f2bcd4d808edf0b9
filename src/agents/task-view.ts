/** What an agent may see of a task: never its answer, aliases, gold plan or evidence. */
import type { Task } from "../types/task.ts";
import type { AgentTask } from "./types.ts";

export function agentTask(task: Task): AgentTask {
  return {
    id: task.id,
    question: task.question,
    family: task.family,
    ...(task.template !== undefined ? { template: task.template } : {}),
    ...(task.worldSeed !== undefined ? { worldSeed: task.worldSeed } : {}),
    ...(task.systemPrompt !== undefined ? { systemPrompt: task.systemPrompt } : {}),
    ...(task.metadata !== undefined ? { metadata: structuredClone(task.metadata) } : {}),
  };
}
