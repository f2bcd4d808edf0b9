/**
 * The package's public entry (`import { worldTools } from "agentrl"`), for agents measured or
 * trained with `--agent` that run the embedded world's tools as their own local functions:
 *
 *   import { worldTools } from "agentrl";
 *   export default async function agent(task, { baseURL, apiKey, model, signal }) {
 *     const tools = worldTools(task);                 // task.worldSeed names the world
 *     // tools.openai: OpenAI function-tool specs of search and calc
 *     // await tools.call("search", { query: "zenda" }) → the text the episode loop would show
 *   }
 *
 * Published as built JavaScript with declarations (`npm run build`: tsconfig.build.json → dist/),
 * because Node does not strip TypeScript types under node_modules.
 */
export type { AgentContext, AgentFunction, AgentTask } from "./types.ts";
export { type AgentWorldTools, agentWorldTools, agentWorldTools as worldTools } from "./world-tools.ts";
