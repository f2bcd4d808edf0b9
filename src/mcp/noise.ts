/**
 * Client-side noise for tools that cannot corrupt their own results (MCP tools, the code tool):
 * the `withNoise` wrapper of src/tools, with a generic corruption — a stale result: the content of
 * an earlier successful call of the same tool with other arguments (the classic wrong-but-plausible
 * answer of a caching proxy). With no such earlier result the call is not corrupted (the real
 * result comes back, as `withNoise` does when a corruption is impossible).
 *
 * Every injected failure is labelled `injected: true` in the trajectory, whatever the tool.
 */
import { createRng } from "../core/random.ts";
import { type NoiseConfig, validateNoise, withNoise } from "../tools/index.ts";
import type { AnyTool, Tool, ToolResult } from "../types/tool.ts";

/** Successful results remembered per tool for stale corruptions. */
const HISTORY = 16;

/** `tool` with the noise of `config`, seeded by `seed` (a fork per tool name). */
export function withStaleNoise<Args>(tool: Tool<Args>, config: NoiseConfig, seed: number): Tool<Args> {
  validateNoise(config);
  const history: { key: string; result: ToolResult }[] = [];
  const recording: Tool<Args> = {
    ...tool,
    async call(args, options) {
      const result = await tool.call(args, options);
      if (result.status === "ok") {
        history.push({ key: JSON.stringify(args), result });
        if (history.length > HISTORY) history.shift();
      }
      return result;
    },
  };
  return withNoise(recording, config, createRng(seed).fork(`noise/${tool.name}`), {
    corrupt: (args, real, rng) => {
      const key = JSON.stringify(args);
      // The real result of this call was just recorded: it is never a candidate.
      const others = history.filter((entry) => entry.result !== real && entry.key !== key);
      if (others.length === 0) return null;
      const { content, refs, value } = rng.pick(others).result;
      return { content, ...(refs ? { refs } : {}), ...(value !== undefined ? { value } : {}) };
    },
  });
}

/** Every tool of a set with stale-result noise; no wrapping at all for a zero config. */
export function withToolNoise(tools: readonly AnyTool[], config: NoiseConfig, seed: number): AnyTool[] {
  const rates = validateNoise(config);
  if (Object.values(rates).every((rate) => rate === 0)) return [...tools];
  return tools.map((tool) => withStaleNoise(tool, config, seed));
}
