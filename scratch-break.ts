import { runEpisodes } from "./src/env/run-episodes.ts";
import { loadHfPolicy } from "./src/policy/hf/load.ts";
import { comparePrefix } from "./src/policy/hf/prefix-break.ts";
const policy = await loadHfPolicy("src/policy/hf/fixtures/qwen3-chat", { temperature: 1, topP: 1, seed: 3 });
const orig = policy.promptIds.bind(policy);
let last: number[] | null = null;
(policy as any).promptIds = (ctx: any) => { const ids = orig(ctx); if (ctx.turns.length > 0) { const t = policy.model; } return ids; };
console.log(Object.getOwnPropertyNames(Object.getPrototypeOf(policy)));
