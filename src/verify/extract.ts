/**
 * Pulling the final answer out of a model's response. Model output is untrusted and may be long:
 * only the last `MAX_RESPONSE_CHARS` characters are read (the final answer is at the end), every
 * scan is linear (`indexOf` loops, regexes without nested quantifiers), and an extracted answer
 * longer than `MAX_ANSWER_CHARS` is refused.
 */

/** Characters of a response that are read: its tail. */
export const MAX_RESPONSE_CHARS = 100_000;
/** Longest extracted answer compared (longer ones are rejected, never parsed). */
export const MAX_ANSWER_CHARS = 300;
/** Most `\boxed{}` values read from one response; more is treated as hedging and rejected. */
export const MAX_BOXED = 8;

/** The visible part of a response: its tail, after the last `</think>`. */
export function visibleText(text: string): string {
  let visible = text.length > MAX_RESPONSE_CHARS ? text.slice(-MAX_RESPONSE_CHARS) : text;
  const thoughtEnd = visible.lastIndexOf("</think>");
  if (thoughtEnd >= 0) visible = visible.slice(thoughtEnd + "</think>".length);
  return visible;
}

/**
 * Contents of every `\boxed{…}` and `\fbox{…}` with balanced (nested) braces, in order of their
 * start. An unclosed box (the response was cut off) is skipped. One linear pass with a stack of
 * open boxes, so a response made of thousands of unclosed boxes costs no more than its length.
 */
export function boxedContents(text: string): string[] {
  const found: { start: number; content: string }[] = [];
  const open: { start: number; depth: number }[] = [];
  let depth = 0;
  for (let i = 0; i < text.length; i++) {
    const char = text[i];
    if (char === "\\") {
      const name = text.startsWith("boxed", i + 1) ? "boxed" : text.startsWith("fbox", i + 1) ? "fbox" : null;
      if (name) {
        let brace = i + 1 + name.length;
        while (text[brace] === " ") brace++;
        if (text[brace] === "{") {
          open.push({ start: brace + 1, depth });
          depth++;
          i = brace;
          continue;
        }
      }
      i++; // an escaped character (`\{`) opens or closes nothing
    } else if (char === "{") {
      depth++;
    } else if (char === "}") {
      depth = Math.max(0, depth - 1);
      const box = open.at(-1);
      if (box && box.depth === depth) {
        open.pop();
        found.push({ start: box.start, content: text.slice(box.start, i) });
      }
    }
  }
  return found.sort((a, b) => a.start - b.start).map((box) => box.content);
}

const ANSWER_PHRASE = /\banswer\b(?:\s+(?:is|would be|should be|will be))?\s*[:=]?/gi;

/**
 * What follows the last "answer is" / "answer:" phrase: the first `$…$` span if the rest starts
 * with one, else the rest of the sentence (up to a newline or a period followed by a space).
 */
export function answerPhrase(text: string): string | null {
  let end = -1;
  for (const match of text.matchAll(ANSWER_PHRASE)) end = match.index + match[0].length;
  if (end < 0) return null;
  let rest = text.slice(end, end + MAX_ANSWER_CHARS * 2).replace(/^[\s*:]+/, "");
  if (rest.startsWith("$")) {
    const delimiter = rest.startsWith("$$") ? "$$" : "$";
    const close = rest.indexOf(delimiter, delimiter.length);
    if (close > 0) return rest.slice(delimiter.length, close).trim() || null;
  }
  const newline = rest.indexOf("\n");
  if (newline >= 0) rest = rest.slice(0, newline);
  const sentence = /\.(\s|$)/.exec(rest);
  if (sentence) rest = rest.slice(0, sentence.index);
  rest = rest.replace(/\*+/g, "").trim();
  return rest || null;
}

/** Content of the last `$…$`, `\(…\)` or `\[…\]` span, or null. */
export function lastInlineMath(response: string): string | null {
  const text = response.replaceAll("$$", "$");
  const spans: [string, string][] = [
    ["\\(", "\\)"],
    ["\\[", "\\]"],
    ["$", "$"],
  ];
  let best: { at: number; content: string } | null = null;
  for (const [open, close] of spans) {
    const end = text.lastIndexOf(close);
    if (end < 0) continue;
    const start = text.lastIndexOf(open, end - 1);
    if (start < 0 || start + open.length > end) continue;
    const content = text.slice(start + open.length, end).trim();
    if (content && (!best || end > best.at)) best = { at: end, content };
  }
  return best?.content ?? null;
}

/** The last number written in the text (`-12`, `3.5`, `1,000`, `7/2`), or null. */
export function lastNumber(text: string): string | null {
  let last: string | null = null;
  for (const match of text.matchAll(/-?\d[\d,]*(?:\.\d+)?(?:\/\d+)?/g)) last = match[0];
  return last === null ? null : last.replace(/,+$/, "");
}

/** True when the text is math rather than prose: no run of two letters outside a LaTeX command. */
export function looksLikeMath(text: string): boolean {
  return !/[A-Za-z]{2,}/.test(text.replace(/\\[A-Za-z]+/g, " "));
}
