/**
 * The world vocabulary: every word (non-digit token) a world question, document or gold calc
 * expression can contain, for every world seed. Template words (derived from the templates and
 * the document renderer), then every pool name: countries, cities, companies, first and last
 * names. Fixed order, so a word-level tokenizer built from it is stable.
 */
import { namePools } from "./names.ts";
import { TEMPLATE_WORDS } from "./template-words.ts";

let cached: readonly string[] | undefined;

export function worldVocabulary(): string[] {
  if (!cached) {
    const pools = namePools();
    cached = [
      ...TEMPLATE_WORDS,
      ...pools.countries,
      ...pools.cityPairs.flat(),
      ...pools.citySingles,
      ...pools.companyPairs.flat(),
      ...pools.companySingles,
      ...pools.firstNames,
      ...pools.lastNames,
    ];
  }
  return [...cached];
}
