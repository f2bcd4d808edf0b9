/**
 * A small answer normaliser for exact match on tasks loaded from files (world tasks are checked by
 * the world's own `checkAnswer`, whose verdict the episode loop stores in `trajectory.correct`).
 * SQuAD-style: lower case, punctuation and articles dropped, whitespace collapsed; numbers lose
 * thousands separators, leading zeros and trailing decimal zeros ("4,213.0" → "4213").
 */

function canonicalNumber(token: string): string {
  let [whole, fraction = ""] = token.split(".");
  whole = whole.replace(/^0+(?=\d)/, "");
  fraction = fraction.replace(/0+$/, "");
  return fraction ? `${whole}.${fraction}` : whole;
}

export function normalizeAnswerText(text: string): string {
  return text
    .toLowerCase()
    .replace(/(\d),(?=\d{3}(?!\d))/g, "$1")
    .replace(/[^\p{L}\p{N}\s.]/gu, " ")
    .replace(/(?<!\d)\.|\.(?!\d)/g, " ")
    .split(/\s+/)
    .filter((token) => token && token !== "a" && token !== "an" && token !== "the")
    .map((token) => (/^\d+(\.\d+)?$/.test(token) ? canonicalNumber(token) : token))
    .join(" ");
}
