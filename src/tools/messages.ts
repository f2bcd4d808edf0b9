/**
 * Every message the tools and the text action parser can put into an observation, in canonical
 * protocol text (lower case, one space between tokens). The embedded tokenizer has a word-level
 * vocabulary, so a message may only use the words of `TOOL_MESSAGE_WORDS`, digits, `.`, `-` and
 * world words (document texts, argument names); `messages.test.ts` checks that every message here
 * is built from them.
 */

/** Messages of the tools (`content` of a non-ok `ToolResult`). */
export const TOOL_MESSAGES = {
  noResults: "no results",
  serviceUnavailable: "error : service unavailable",
  timedOut: "error : timed out",
  cancelled: "error : cancelled",
  toolFailed: "error : tool failed",
  emptyQuery: "error : empty query",
  queryTooLong: "error : query too long",
  emptyExpression: "error : empty expression",
  expressionTooLong: "error : expression too long",
  invalidExpression: "error : invalid expression",
  unknownName: "error : unknown name",
  functionsNotSupported: "error : functions not supported",
  unsupportedExpression: "error : unsupported expression",
  unsupportedOperator: "error : unsupported operator",
  divisionByZero: "error : division by zero",
  ambiguousPower: "error : ambiguous power",
  numberTooLarge: "error : number too large",
  notANumber: "error : not a number",
} as const;

/**
 * Reasons of a text-protocol `format-error` action. The episode loop shows them to the policy as
 * `error : <reason>`, so they follow the same vocabulary rule as tool messages.
 */
export const FORMAT_ERRORS = {
  missingAction: "no action tag",
  unclosedTag: "unclosed tag",
  mismatchedTag: "mismatched tag",
  unknownTag: "unknown tag",
  nestedTag: "nested tag",
  emptyAction: "empty action",
  actionTooLong: "action too long",
  /** Defensive: the parser itself failed (it never should). */
  invalidAction: "invalid action",
} as const;

/** `error : invalid argument <name>` / `error : missing argument <name>` for a bad tool argument. */
export function argumentMessage(kind: "invalid" | "missing", name: string): string {
  return name ? `error : ${kind} argument ${name}` : `error : ${kind} arguments`;
}

/** Argument names of the built-in tools (they appear in argument messages). */
const ARGUMENT_NAMES = ["query", "expression"];

function wordsOf(texts: readonly string[]): string[] {
  const words = new Set<string>();
  for (const text of texts) {
    for (const token of text.split(" ")) if (!/^[\d.-]+$/.test(token)) words.add(token);
  }
  return [...words];
}

/**
 * Every word (non-digit token) a tool message or a text format-error reason can contain, besides
 * world words; fixed and in a stable order, so a tokenizer can append them to its vocabulary.
 */
export const TOOL_MESSAGE_WORDS: readonly string[] = wordsOf([
  ...Object.values(TOOL_MESSAGES),
  ...Object.values(FORMAT_ERRORS),
  argumentMessage("invalid", ""),
  argumentMessage("missing", ""),
  "argument",
  ...ARGUMENT_NAMES,
]);
