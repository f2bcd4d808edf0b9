/**
 * The fixed words of the world's texts (everything but names and numbers), derived from the
 * question templates and the document renderer themselves so that the list cannot drift from
 * them. Calc operators are included because gold calc expressions use them.
 */

import { TEMPLATES } from "./catalogue.ts";
import { renderDocument } from "./documents.ts";
import type { Entity } from "./types.ts";

const PLACEHOLDER = "@";

const SAMPLE_ENTITIES: Entity[] = [
  { type: "country", id: "", name: PLACEHOLDER, capital: "", leader: "", population: 0, founded: 0 },
  { type: "city", id: "", name: PLACEHOLDER, country: "", population: 0, founded: 0 },
  { type: "person", id: "", name: PLACEHOLDER, bornIn: "", born: 0 },
  { type: "company", id: "", name: PLACEHOLDER, founder: "", headquarters: "", founded: 0, employees: 0 },
];

function collect(texts: readonly string[]): string[] {
  const words = new Set<string>();
  for (const text of texts) {
    for (const token of text.split(" "))
      if (token && token !== PLACEHOLDER && !/^\d+$/.test(token)) words.add(token);
  }
  return [...words];
}

/** Document words first, then question words, then the calc operators; stable order. */
export const TEMPLATE_WORDS: readonly string[] = Object.freeze(
  collect([
    ...SAMPLE_ENTITIES.map((entity) => renderDocument(entity, () => PLACEHOLDER)),
    ...TEMPLATES.map((template) => template.pattern),
    "+ -",
  ]),
);
