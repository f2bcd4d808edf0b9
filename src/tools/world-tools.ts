/**
 * The tools of the embedded world: `search` over its documents and `calc`, optionally wrapped in
 * the noise model. Built per episode (the search index is cached per document array), with noise
 * seeded per tool from `options.seed`, so an episode seed reproduces every injected failure.
 */
import { createRng } from "../core/random.ts";
import type { AnyTool } from "../types/tool.ts";
import { createCalcTool } from "./calc.ts";
import { type NoiseConfig, totalNoise, validateNoise, withNoise } from "./noise.ts";
import { createSearchTool, type WorldDocument } from "./search.ts";

export interface WorldToolsOptions {
  /** Failure rates applied to every tool (default: none). */
  noise?: NoiseConfig;
  /** Seed of the noise draws (default 0); each tool draws from its own fork of it. */
  seed?: number;
  /** Documents per search result (default 1). */
  topK?: number;
  /** Calc returns absolute values (default false). */
  unsignedCalc?: boolean;
}

/** `world` is typed structurally: anything with the world's documents. */
export function worldTools(
  world: { readonly documents: readonly WorldDocument[] },
  options: WorldToolsOptions = {},
): AnyTool[] {
  const tools: AnyTool[] = [
    createSearchTool(world.documents, { topK: options.topK }),
    createCalcTool({ unsigned: options.unsignedCalc }),
  ];
  const noise = options.noise;
  if (!noise) return tools;
  validateNoise(noise);
  if (totalNoise(noise) === 0) return tools;
  const rng = createRng(options.seed ?? 0);
  return tools.map((tool) => withNoise(tool, noise, rng.fork(`noise/${tool.name}`)));
}
