/**
 * The tagged text protocol the embedded policy speaks (DESIGN.md):
 *
 *   <q> what is the population of zenda ? </q> <search> zenda </search> <obs> zenda : city … </obs>
 *   <answer> 4213 </answer>
 *
 * Text is canonical: lower case, every token separated by one space, punctuation as its own token,
 * numbers written plainly (the embedded tokenizer splits them into digits). Chat models never see
 * these tags: they get the question as a user message and tools as OpenAI functions.
 */

export const QUESTION_OPEN = "<q>";
export const QUESTION_CLOSE = "</q>";
export const OBS_OPEN = "<obs>";
export const OBS_CLOSE = "</obs>";
export const ANSWER_TAG = "answer";

/** Tags of the tools of the embedded world, plus the answer tag. */
export const ACTION_TAGS = ["search", "calc", ANSWER_TAG] as const;

/** Every tag token of the protocol, in a fixed order (tokenizers put them in their vocabulary). */
export const PROTOCOL_TOKENS: readonly string[] = [
  QUESTION_OPEN,
  QUESTION_CLOSE,
  OBS_OPEN,
  OBS_CLOSE,
  ...ACTION_TAGS.flatMap((tag) => [`<${tag}>`, `</${tag}>`]),
];

/** Closing tags after which a text policy stops generating its turn. */
export const STOP_TOKENS: readonly string[] = ACTION_TAGS.map((tag) => `</${tag}>`);

export function renderPrompt(question: string): string {
  return `${QUESTION_OPEN} ${question} ${QUESTION_CLOSE}`;
}

export function renderObservation(content: string): string {
  return ` ${OBS_OPEN} ${content} ${OBS_CLOSE}`;
}

export function renderToolCall(tool: string, payload: string): string {
  return ` <${tool}> ${payload} </${tool}>`;
}

export function renderAnswer(answer: string): string {
  return ` <${ANSWER_TAG}> ${answer} </${ANSWER_TAG}>`;
}

/** Canonical spacing: one space between tokens, punctuation split off, lower case. */
export function canonicalText(text: string): string {
  return text
    .toLowerCase()
    .replace(/([.,:;?!()])/g, " $1 ")
    .split(/\s+/)
    .filter(Boolean)
    .join(" ");
}
