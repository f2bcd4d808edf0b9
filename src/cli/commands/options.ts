/**
 * Validation of command-line values: a bad value fails fast with the option named and the valid
 * values listed, before any work starts.
 */

export function parseNumber(
  name: string,
  raw: string | number,
  limits: { integer?: boolean; min?: number; max?: number } = {},
): number {
  const value = typeof raw === "number" ? raw : Number(raw);
  const kind = limits.integer ? "an integer" : "a number";
  const range =
    limits.min !== undefined && limits.max !== undefined
      ? ` in [${limits.min}, ${limits.max}]`
      : limits.min !== undefined
        ? ` >= ${limits.min}`
        : limits.max !== undefined
          ? ` <= ${limits.max}`
          : "";
  const ok =
    raw !== "" &&
    Number.isFinite(value) &&
    (!limits.integer || Number.isInteger(value)) &&
    (limits.min === undefined || value >= limits.min) &&
    (limits.max === undefined || value <= limits.max);
  if (!ok) throw new Error(`${name} must be ${kind}${range}, got "${raw}"`);
  return value;
}

export function parseChoice<T extends string>(name: string, raw: string, choices: readonly T[]): T {
  if (!(choices as readonly string[]).includes(raw)) {
    throw new Error(`${name} must be one of ${choices.join(", ")}; got "${raw}"`);
  }
  return raw as T;
}
