/**
 * Colours of the token view. `mask`: blue where the loss sees the token (the policy wrote it),
 * grey where it does not (prompt, tool output). `logprob`: the token's sampling probability
 * exp(log-prob) from red (0) through yellow to green (1). `advantage`: green for positive, red for
 * negative, the intensity |A| / max |A| over the episode. No value: no colour.
 */
export const COLOR_MODES = ["mask", "logprob", "advantage"] as const;
export type ColorMode = (typeof COLOR_MODES)[number];

export interface TokenValues {
  mask: 0 | 1;
  logprob: number | string | null;
  advantage: number | string | null;
}

const numeric = (value: number | string | null): number | null =>
  value === null ? null : typeof value === "number" ? value : Number(value);

export function tokenColor(token: TokenValues, mode: ColorMode, maxAdvantage: number): string {
  if (mode === "mask") return token.mask === 1 ? "hsl(210 80% 86%)" : "hsl(0 0% 92%)";
  if (mode === "logprob") {
    const logprob = numeric(token.logprob);
    if (logprob === null || Number.isNaN(logprob)) return "transparent";
    const probability = Math.exp(logprob); // -Infinity → 0
    return `hsl(${Math.round(120 * probability)} 75% 80%)`;
  }
  const advantage = numeric(token.advantage);
  if (advantage === null || !Number.isFinite(advantage) || maxAdvantage === 0) return "transparent";
  const strength = Math.min(1, Math.abs(advantage) / maxAdvantage);
  return `hsl(${advantage >= 0 ? 130 : 0} 70% ${Math.round(95 - 30 * strength)}%)`;
}
