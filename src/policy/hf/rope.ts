/**
 * Rotary position embedding frequencies, computed as transformers computes them (float32 at each
 * step: `inv_freq = 1 / theta^(2i/d)`, then the rope type's rescaling), so the angles
 * `position · inv_freq` the engine takes the cosine and sine of round as PyTorch's do.
 */
import type { HfModelConfig } from "./config.ts";

const f32 = Math.fround;

/** The `headDim / 2` inverse frequencies of a config's RoPE, as float32. */
export function ropeInverseFrequencies(
  config: Pick<HfModelConfig, "headDim" | "ropeTheta" | "rope">,
): Float32Array<ArrayBuffer> {
  const { headDim, ropeTheta, rope } = config;
  const half = headDim / 2;
  const inv = new Float32Array(half);
  for (let i = 0; i < half; i++) inv[i] = f32(1 / f32(ropeTheta ** f32((2 * i) / headDim)));
  if (rope.type === "linear") for (let i = 0; i < half; i++) inv[i] = f32(inv[i] / rope.factor);
  if (rope.type === "llama3") {
    // Llama 3.1's rule: wavelengths longer than original/low_freq_factor are slowed by `factor`,
    // shorter than original/high_freq_factor kept, and those between blended linearly.
    const { factor, lowFreqFactor, highFreqFactor, originalMaxPositions } = rope;
    const lowWavelength = originalMaxPositions / lowFreqFactor;
    const highWavelength = originalMaxPositions / highFreqFactor;
    for (let i = 0; i < half; i++) {
      const wavelength = f32(f32(2 * Math.PI) / inv[i]);
      const scaled = wavelength > lowWavelength ? f32(inv[i] / factor) : inv[i];
      if (wavelength < highWavelength || wavelength > lowWavelength) {
        inv[i] = scaled;
        continue;
      }
      const smooth = f32(
        f32(f32(originalMaxPositions / wavelength) - lowFreqFactor) / (highFreqFactor - lowFreqFactor),
      );
      // PyTorch's order of operations: (1 − s)·f / factor + s·f.
      inv[i] = f32(f32(f32(f32(1 - smooth) * scaled) / factor) + f32(smooth * scaled));
    }
  }
  return inv;
}
