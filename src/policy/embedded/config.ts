/** The embedded transformer's shape: a decoder-only GPT (pre-LN, learned positions, tied embeddings). */
export interface GptConfig {
  /** Tokens in the vocabulary (the tokenizer's `vocabSize`). */
  vocabSize: number;
  /** Width of the residual stream. */
  dModel: number;
  nLayers: number;
  /** Attention heads; `dModel` must be divisible by it. */
  nHeads: number;
  /** Width of the feed-forward hidden layer (usually 4 x dModel). */
  dFF: number;
  /** Longest sequence (context window): the position table and the KV cache have this length. */
  maxLen: number;
}

/** The configuration of the engine benchmark (and the PyTorch anchor). */
export const REFERENCE_CONFIG: GptConfig = {
  vocabSize: 256,
  dModel: 128,
  nLayers: 4,
  nHeads: 4,
  dFF: 512,
  maxLen: 64,
};

/** Throws with the offending field when a config is not a valid GPT shape. */
export function validateGptConfig(config: GptConfig): GptConfig {
  const fields: (keyof GptConfig)[] = ["vocabSize", "dModel", "nLayers", "nHeads", "dFF", "maxLen"];
  for (const field of fields) {
    const value = config[field];
    if (!Number.isInteger(value) || value < 1) {
      throw new Error(`GptConfig.${field} must be a positive integer, got ${String(value)}`);
    }
  }
  if (config.dModel % config.nHeads !== 0) {
    throw new Error(`GptConfig.dModel (${config.dModel}) must be divisible by nHeads (${config.nHeads})`);
  }
  return { ...config };
}

/** Number of parameters of a config (matches `countParams(initGpt(config, key))`). */
export function gptParamCount(config: GptConfig): number {
  const { vocabSize: V, dModel: D, nLayers: L, dFF: F, maxLen: T } = config;
  const block = 2 * D + (D * 3 * D + 3 * D) + (D * D + D) + 2 * D + (D * F + F) + (F * D + D);
  return V * D + T * D + L * block + 2 * D;
}

/** Shape of every parameter by path (`blocks.0.wqkv` → [D, 3D]), without allocating anything. */
export function gptParamShapes(config: GptConfig): Record<string, number[]> {
  const { vocabSize: V, dModel: D, nLayers: L, dFF: F, maxLen } = config;
  const shapes: Record<string, number[]> = { wte: [V, D], wpe: [maxLen, D] };
  for (let i = 0; i < L; i++) {
    const p = `blocks.${i}`;
    Object.assign(shapes, {
      [`${p}.ln1.scale`]: [D],
      [`${p}.ln1.bias`]: [D],
      [`${p}.wqkv`]: [D, 3 * D],
      [`${p}.bqkv`]: [3 * D],
      [`${p}.wo`]: [D, D],
      [`${p}.bo`]: [D],
      [`${p}.ln2.scale`]: [D],
      [`${p}.ln2.bias`]: [D],
      [`${p}.w1`]: [D, F],
      [`${p}.b1`]: [F],
      [`${p}.w2`]: [F, D],
      [`${p}.b2`]: [D],
    });
  }
  shapes["lnf.scale"] = [D];
  shapes["lnf.bias"] = [D];
  return shapes;
}
