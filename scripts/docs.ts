/**
 * `npm run docs [-- cli|results|bench ...]`: regenerates the CLI reference (docs/cli.md) and the
 * blocks of figures on the pages (src/docs/pages.ts says which). With no argument, all of them.
 * `npm run docs:bench -- --record <file>` first stores a `npm run bench -- --json` output as the
 * committed bench record, with today's date, the commit and the machine; `--record-hf <file>` the
 * same for `npm run bench -- --only hf --json` (docs/real-checkpoints.md's figures), `--record-trl
 * <file>` for `npm run bench -- --only trl --json` (its "Training against TRL" figures).
 */
import { execFileSync } from "node:child_process";
import { readFileSync, writeFileSync } from "node:fs";
import { cpus } from "node:os";
import { parseArgs } from "node:util";
import { BENCH_RECORD, type BenchRecord } from "../src/docs/bench-table.ts";
import { HF_BENCH_RECORD } from "../src/docs/hf-bench-table.ts";
import { expectedPage, type GeneratedKind, generatedTexts } from "../src/docs/pages.ts";
import { TRL_BENCH_RECORD } from "../src/docs/trl-bench-table.ts";

const KINDS: readonly GeneratedKind[] = ["cli", "results", "bench"];
const { values, positionals } = parseArgs({
  options: { record: { type: "string" }, "record-hf": { type: "string" }, "record-trl": { type: "string" } },
  allowPositionals: true,
});
for (const kind of positionals) {
  if (!KINDS.includes(kind as GeneratedKind)) {
    console.error(`docs: unknown part "${kind}"; valid: ${KINDS.join(", ")}`);
    process.exit(2);
  }
}
/** Stores a bench output (its last line) as a record with today's date, the commit and the machine. */
function record(output: string, path: string): void {
  const figures = JSON.parse(readFileSync(output, "utf8").trim().split("\n").pop() ?? "{}");
  const entry: BenchRecord = {
    measured: new Date().toISOString().slice(0, 10),
    commit: execFileSync("git", ["rev-parse", "HEAD"], { encoding: "utf8" }).trim(),
    machine: `${cpus().length} × ${cpus()[0]?.model.trim() ?? "unknown CPU"}, Node ${process.versions.node}`,
    figures,
  };
  writeFileSync(path, `${JSON.stringify(entry, null, 2)}\n`);
  console.log(`docs: wrote ${path}`);
}
if (values.record) record(values.record, BENCH_RECORD);
if (values["record-hf"]) record(values["record-hf"], HF_BENCH_RECORD);
if (values["record-trl"]) record(values["record-trl"], TRL_BENCH_RECORD);
const kinds = positionals.length > 0 ? (positionals as GeneratedKind[]) : KINDS;
for (const generated of generatedTexts(".", kinds)) {
  writeFileSync(generated.page, expectedPage(".", generated));
  console.log(`docs: ${generated.page}${generated.block ? ` (${generated.block})` : ""}`);
}
