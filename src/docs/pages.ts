/**
 * What `npm run docs` generates, in one list: the CLI reference page, and the blocks on
 * hand-written pages whose figures come from committed files. The script writes them; the test
 * compares each with the page as committed.
 */
import { existsSync, readFileSync } from "node:fs";
import { join } from "node:path";
import type { RecipeReport } from "../recipe/report.ts";
import { BENCH_RECORD, type BenchRecord, benchTable } from "./bench-table.ts";
import { cliReference } from "./cli-reference.ts";
import { formatMarkdown } from "./format.ts";
import { writeBlock } from "./generated-block.ts";
import { HF_BENCH_RECORD, hfBenchTable } from "./hf-bench-table.ts";
import { armsTable, RESULTS_REPORT, resultsDetail, resultsTable } from "./results-table.ts";
import { TRL_BENCH_RECORD, trlBenchTable } from "./trl-bench-table.ts";

export interface GeneratedText {
  /** Page path from the repository root. */
  page: string;
  /** The generated block's name, or null when the script owns the whole page. */
  block: string | null;
  content: string;
}

function readJson<T>(root: string, path: string): T | null {
  const file = join(root, path);
  return existsSync(file) ? (JSON.parse(readFileSync(file, "utf8")) as T) : null;
}

/** The results table and each claim in words with its evidence, or what to do while no report is committed. */
export function resultsContent(root: string): string {
  const report = readJson<RecipeReport>(root, RESULTS_REPORT);
  return report
    ? `${resultsTable(report)}\n\n${resultsDetail(report)}`
    : `No report is committed yet. Run \`npm start\`, copy \`runs/recipe-default/report.json\` to \`${RESULTS_REPORT}\` and run \`npm run docs:results\`.`;
}

/** The bench table, or what to do while no record is committed. */
export function benchContent(root: string): string {
  const record = readJson<BenchRecord>(root, BENCH_RECORD);
  return record
    ? benchTable(record)
    : `No bench record is committed yet. Run \`npm run bench -- --json > bench-out.json\`, then \`npm run docs:bench -- --record bench-out.json\`.`;
}

/** The Hugging Face checkpoints' bench table, or what to do while no record is committed. */
export function hfBenchContent(root: string): string {
  const record = readJson<BenchRecord>(root, HF_BENCH_RECORD);
  return record
    ? hfBenchTable(record)
    : `No record is committed yet. Run \`npm run bench -- --only hf --json > hf-out.json\`, then \`npm run docs:bench -- --record-hf hf-out.json\`.`;
}

/** The TRL bench table, or what to do while no record is committed. */
export function trlBenchContent(root: string): string {
  const record = readJson<BenchRecord>(root, TRL_BENCH_RECORD);
  return record
    ? trlBenchTable(record)
    : `No record is committed yet. Run \`npm run bench -- --only trl --json > trl-out.json\`, then \`npm run docs:bench -- --record-trl trl-out.json\`.`;
}

export type GeneratedKind = "cli" | "results" | "bench";

export function generatedTexts(root: string, kinds: readonly GeneratedKind[]): GeneratedText[] {
  const out: GeneratedText[] = [];
  if (kinds.includes("cli")) out.push({ page: "docs/cli.md", block: null, content: cliReference() });
  if (kinds.includes("results")) {
    out.push({ page: "docs/results.md", block: "recipe-results", content: resultsContent(root) });
    const report = readJson<RecipeReport>(root, RESULTS_REPORT);
    if (report) out.push({ page: "docs/results.md", block: "recipe-arms", content: armsTable(report) });
  }
  if (kinds.includes("bench")) {
    out.push({ page: "docs/performance.md", block: "bench", content: benchContent(root) });
    out.push({ page: "docs/real-checkpoints.md", block: "hf-bench", content: hfBenchContent(root) });
    out.push({ page: "docs/real-checkpoints.md", block: "trl-bench", content: trlBenchContent(root) });
  }
  return out;
}

/** The whole page as `npm run docs` writes it: the block (or page) replaced, then formatted. */
export function expectedPage(root: string, generated: GeneratedText): string {
  const { page, block, content } = generated;
  const text =
    block === null
      ? `${content.trimEnd()}\n`
      : writeBlock(readFileSync(join(root, page), "utf8"), block, content, page);
  return formatMarkdown(text, page, root);
}
