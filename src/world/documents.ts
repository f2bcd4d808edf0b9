/**
 * Documents: one short canonical text per entity, and the parser that reads documents back out of
 * an observation (what a scripted agent does with a search result).
 *
 *   ruritania : country . capital zenda . leader arin vold . population 52133 . founded 1204 .
 *   zenda : city in ruritania . population 4213 . founded 1850 .
 *   arin vold : person . born in zenda . born 1962 .
 *   kelto : company . founded by arin vold . headquarters zenda . founded 1991 . employees 340 .
 *
 * Each is 15 to 24 tokens when every digit counts as one token, so a 6-hop chain fits a 256-token
 * context with one document per search result.
 */
import { canonicalText } from "../env/protocol.ts";
import { type Attribute, ENTITY_TYPES, type Entity, type EntityType } from "./types.ts";

/** `name` of an entity id, through the caller's lookup. */
export type NameOf = (id: string) => string;

export function renderDocument(entity: Entity, nameOf: NameOf): string {
  switch (entity.type) {
    case "country":
      return canonicalText(
        `${entity.name} : country . capital ${nameOf(entity.capital)} . leader ${nameOf(entity.leader)} . ` +
          `population ${entity.population} . founded ${entity.founded} .`,
      );
    case "city":
      return canonicalText(
        `${entity.name} : city in ${nameOf(entity.country)} . population ${entity.population} . founded ${entity.founded} .`,
      );
    case "person":
      return canonicalText(
        `${entity.name} : person . born in ${nameOf(entity.bornIn)} . born ${entity.born} .`,
      );
    case "company":
      return canonicalText(
        `${entity.name} : company . founded by ${nameOf(entity.founder)} . headquarters ${nameOf(entity.headquarters)} . ` +
          `founded ${entity.founded} . employees ${entity.employees} .`,
      );
  }
}

/** A document read back from text: its title, type and the attributes it states (numbers as digit strings). */
export interface ParsedDocument {
  title: string;
  type: EntityType;
  facts: Partial<Record<Attribute, string>>;
}

const TYPES: ReadonlySet<string> = new Set(ENTITY_TYPES);
const isDigits = (token: string) => /^\d+$/.test(token);

/**
 * Finds every world document in `text` (an observation, whatever wraps or separates its documents)
 * by its header `<name> : <type>` (people have two-token names), and reads the sentences up to the
 * next header. Unknown sentences are skipped, so separators and tags do no harm.
 */
export function parseDocuments(text: string): ParsedDocument[] {
  const tokens = text.split(/\s+/).filter(Boolean);
  const headers: { start: number; body: number; title: string; type: EntityType }[] = [];
  for (let i = 0; i + 2 < tokens.length; i++) {
    if (tokens[i + 1] !== ":" || !TYPES.has(tokens[i + 2])) continue;
    const type = tokens[i + 2] as EntityType;
    if (type === "person") {
      if (i === 0) continue;
      headers.push({ start: i - 1, body: i + 2, title: `${tokens[i - 1]} ${tokens[i]}`, type });
    } else {
      headers.push({ start: i, body: i + 2, title: tokens[i], type });
    }
  }
  return headers.map((header, h) => {
    const end = h + 1 < headers.length ? headers[h + 1].start : tokens.length;
    return { title: header.title, type: header.type, facts: readFacts(tokens.slice(header.body, end)) };
  });
}

function readFacts(body: string[]): Partial<Record<Attribute, string>> {
  const facts: Partial<Record<Attribute, string>> = {};
  const sentences: string[][] = [[]];
  for (const token of body) {
    if (token === ".") sentences.push([]);
    else sentences[sentences.length - 1].push(token);
  }
  for (const words of sentences) {
    const [head, second] = words;
    const rest = (from: number) => words.slice(from).join(" ");
    // A number is one digit string; tolerate digits spaced out by a tokenizer's decoding.
    const number = (from: number) =>
      words.length > from && words.slice(from).every(isDigits) ? words.slice(from).join("") : undefined;
    let key: Attribute | undefined;
    let value: string | undefined;
    if (head === "city" && second === "in") [key, value] = ["country", rest(2)];
    else if (head === "capital") [key, value] = ["capital", rest(1)];
    else if (head === "leader") [key, value] = ["leader", rest(1)];
    else if (head === "headquarters") [key, value] = ["headquarters", rest(1)];
    else if (head === "founded" && second === "by") [key, value] = ["founder", rest(2)];
    else if (head === "born" && second === "in") [key, value] = ["bornIn", rest(2)];
    else if (head === "founded") [key, value] = ["founded", number(1)];
    else if (head === "born") [key, value] = ["born", number(1)];
    else if (head === "population") [key, value] = ["population", number(1)];
    else if (head === "employees") [key, value] = ["employees", number(1)];
    if (key && value && facts[key] === undefined) facts[key] = value;
  }
  return facts;
}
