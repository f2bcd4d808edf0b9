/**
 * Lossless JSON for stored records. Plain `JSON.stringify` turns `NaN` and `±Infinity` into `null`
 * and `-0` into `0`; all of them occur in practice (a penalty `-λ·0` is `-0`, a diverged loss is
 * `NaN`, a vLLM log-prob can be `-Infinity`), and `assert.deepStrictEqual` tells `-0` from `0`. So
 * those four numbers are written as `{"$number": "NaN" | "Infinity" | "-Infinity" | "-0"}` and read
 * back as numbers. An object of exactly that shape in user data would read back as a number: the
 * price of keeping the text plain JSON that any reader can parse.
 *
 * Properties whose value is `undefined` are dropped, as JSON does: they read back absent, which is
 * what an optional property means.
 */

const NUMBER_TAG = "$number";
const SPECIAL_NUMBERS: Record<string, number> = {
  NaN: Number.NaN,
  Infinity: Number.POSITIVE_INFINITY,
  "-Infinity": Number.NEGATIVE_INFINITY,
  "-0": -0,
};

function tagNumber(value: number): unknown {
  if (Number.isFinite(value)) return Object.is(value, -0) ? { [NUMBER_TAG]: "-0" } : value;
  return { [NUMBER_TAG]: String(value) };
}

function replacer(_key: string, value: unknown): unknown {
  return typeof value === "number" ? tagNumber(value) : value;
}

/** The number a tag stands for, or undefined when `value` is not a tag. */
function taggedNumber(value: object): number | undefined {
  const tag = (value as Record<string, unknown>)[NUMBER_TAG];
  if (typeof tag !== "string" || !(tag in SPECIAL_NUMBERS) || Object.keys(value).length !== 1)
    return undefined;
  return SPECIAL_NUMBERS[tag];
}

/**
 * Replaces tags by their numbers, in place, in a freshly parsed value. A walk in JS is ~10x faster
 * than a `JSON.parse` reviver, which calls back for every value.
 */
function revive(value: unknown): unknown {
  if (value === null || typeof value !== "object") return value;
  if (Array.isArray(value)) {
    for (let i = 0; i < value.length; i++) {
      const item = value[i];
      if (item !== null && typeof item === "object") {
        const revived = revive(item);
        if (revived !== item) value[i] = revived;
      }
    }
    return value;
  }
  const number = taggedNumber(value);
  if (number !== undefined) return number;
  const record = value as Record<string, unknown>;
  for (const key in record) {
    const item = record[key];
    if (item !== null && typeof item === "object") {
      const revived = revive(item);
      if (revived !== item) record[key] = revived; // only tags are replaced: never reassign `__proto__`
    }
  }
  return value;
}

/** `JSON.stringify` that keeps `NaN`, `±Infinity` and `-0`. */
export function encodeJson(value: unknown): string {
  return JSON.stringify(value, replacer);
}

/** Inverse of `encodeJson`; also parses plain JSON. Throws `SyntaxError` on malformed text. */
export function decodeJson(text: string): unknown {
  const value: unknown = JSON.parse(text);
  return text.includes(`"${NUMBER_TAG}"`) ? revive(value) : value;
}
