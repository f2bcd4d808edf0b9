/** Imports a `--agent` module (TypeScript or JavaScript) and checks its default export is a function. */
import { resolve } from "node:path";
import { pathToFileURL } from "node:url";
import type { AgentFunction } from "./types.ts";

export async function loadAgent(path: string): Promise<AgentFunction> {
  let module: { default?: unknown };
  try {
    module = await import(pathToFileURL(resolve(path)).href);
  } catch (error) {
    throw new Error(`--agent ${path}: cannot import it: ${(error as Error).message}`);
  }
  if (typeof module.default !== "function") {
    throw new Error(
      `--agent ${path}: its default export must be a function async (task, { baseURL, apiKey, model, signal }) => answer`,
    );
  }
  return module.default as AgentFunction;
}
