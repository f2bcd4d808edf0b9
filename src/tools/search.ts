/**
 * `search(query)`: BM25 over the world's documents (minisearch), title and text indexed, the title
 * boosted. Exact terms only by default: no fuzzy and no prefix matching, so a vague or misspelled
 * query does not magically find the right entity (the distractor family depends on that).
 *
 * The result is canonical text: the top document's text (top-k texts joined by a space), their ids
 * in `refs`; no hit is an `empty` result `no results`.
 */
import MiniSearch from "minisearch";
import { z } from "zod";
import type { Rng } from "../core/random.ts";
import type { ToolResult } from "../types/tool.ts";
import { TOOL_MESSAGES } from "./messages.ts";
import type { CorruptibleTool } from "./noise.ts";

/** The shape of a world document the search tool needs (the world module's `WorldDocument`). */
export interface WorldDocument {
  id: string;
  title: string;
  text: string;
}

export interface SearchOptions {
  /** Documents returned per query (default 1: the embedded model's context is short). */
  topK?: number;
  /** Minisearch fuzziness (edit distance, or a fraction of the term length); default off. */
  fuzzy?: number;
  /** Score multiplier of title matches (default 2). */
  titleBoost?: number;
  /** Longest query accepted, in characters (default 500). */
  maxQueryLength?: number;
}

export const searchArguments = z.object({
  query: z.string().describe("What to look for, for example the name of an entity."),
});
export type SearchArguments = z.infer<typeof searchArguments>;

// Episodes build their tools per episode over the same world; the index is built once per document
// array (documents are treated as immutable once indexed).
const indexCache = new WeakMap<readonly WorldDocument[], MiniSearch>();

function indexOf(documents: readonly WorldDocument[]): MiniSearch {
  let index = indexCache.get(documents);
  if (!index) {
    // Positions, not document ids, are the index keys: a duplicate id must not break indexing.
    index = new MiniSearch({ idField: "position", fields: ["title", "text"] });
    index.addAll(
      documents.map((document, position) => ({ position, title: document.title, text: document.text })),
    );
    indexCache.set(documents, index);
  }
  return index;
}

export function createSearchTool(
  documents: readonly WorldDocument[],
  options: SearchOptions = {},
): CorruptibleTool<SearchArguments> {
  const topK = options.topK ?? 1;
  if (!Number.isInteger(topK) || topK < 1)
    throw new Error(`search: topK must be an integer >= 1, got ${topK}`);
  const fuzzy = options.fuzzy ?? 0;
  if (!(fuzzy >= 0)) throw new Error(`search: fuzzy must be >= 0, got ${fuzzy}`);
  const titleBoost = options.titleBoost ?? 2;
  const maxQueryLength = options.maxQueryLength ?? 500;
  const index = indexOf(documents);

  const result = (positions: number[]): ToolResult => ({
    status: "ok",
    content: positions.map((position) => documents[position].text).join(" "),
    injected: false,
    refs: positions.map((position) => documents[position].id),
  });

  const search = (query: string): ToolResult => {
    const trimmed = query.trim();
    if (!trimmed) return { status: "error", content: TOOL_MESSAGES.emptyQuery, injected: false };
    if (trimmed.length > maxQueryLength) {
      return { status: "error", content: TOOL_MESSAGES.queryTooLong, injected: false };
    }
    const hits = index
      .search(trimmed, { boost: { title: titleBoost }, fuzzy: fuzzy > 0 ? fuzzy : false, prefix: false })
      .sort((a, b) => b.score - a.score || a.id - b.id)
      .slice(0, topK);
    if (hits.length === 0) return { status: "empty", content: TOOL_MESSAGES.noResults, injected: false };
    return result(hits.map((hit) => hit.id as number));
  };

  return {
    name: "search",
    description:
      topK === 1
        ? "Search the encyclopedia of this world; returns the best matching document."
        : `Search the encyclopedia of this world; returns the ${topK} best matching documents.`,
    schema: searchArguments,
    textArgument: "query",
    async call(args) {
      return search(args.query);
    },
    /** Returns as many documents as the real result (at least one), none of them a real hit. */
    corrupt(_args, real, rng: Rng) {
      if (real.status !== "ok" && real.status !== "empty") return null;
      const exclude = new Set(real.refs ?? []);
      const candidates = documents.flatMap((document, position) =>
        exclude.has(document.id) ? [] : [position],
      );
      if (candidates.length === 0) return null;
      const count = Math.min(Math.max(1, real.refs?.length ?? 0), candidates.length);
      const { content, refs } = result(rng.shuffle(candidates).slice(0, count));
      return { content, refs };
    },
  };
}
