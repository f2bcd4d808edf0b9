/**
 * The contract suite (testing-contract.ts) against every server double, through the gateway: each
 * double's row of outcomes is measured here, no outcome is `wrong`, no id or log-prob reaches an
 * agent that did not ask, and the table in docs/real-llms.md is the one measured.
 */
import assert from "node:assert/strict";
import { readFileSync } from "node:fs";
import { test } from "node:test";
import { resolveUpstream } from "../resolve-upstream.ts";
import { type ContractResult, contractTable, runContract } from "./testing-contract.ts";
import { DOUBLE_KINDS } from "./testing-kinds.ts";

test("every server double meets the contract, and docs/real-llms.md shows the measured table", async () => {
  const inner = await resolveUpstream("models/base-strong");
  const results: ContractResult[] = [];
  try {
    for (const kind of DOUBLE_KINDS) {
      // 0.10.2's gap is gpt-oss's: its double serves a model of that name.
      results.push(await runContract(kind, inner, kind === "vllm-0.10.2" ? { model: "gpt-oss-20b" } : {}));
    }
  } finally {
    await inner.close?.();
  }
  const table = contractTable(results);
  for (const result of results) {
    for (const [name, outcome] of Object.entries(result.outcomes))
      assert.doesNotMatch(outcome, /^wrong/, `${result.kind}: ${name}: ${outcome}\n${table}`);
    assert.deepEqual(result.leaks, [], `${result.kind}: ids reached an agent that did not ask`);
  }
  const doc = readFileSync(new URL("../../../docs/real-llms.md", import.meta.url), "utf8");
  assert.ok(
    normalized(doc).includes(normalized(table)),
    `docs/real-llms.md does not hold the measured table:\n${table}`,
  );
});

/** A markdown table's cells without the padding a formatter adds (`---` rules of any width). */
function normalized(markdown: string): string {
  return markdown
    .split("\n")
    .map((line) =>
      line.startsWith("|")
        ? line
            .split("|")
            .map((cell) => cell.trim().replace(/^-{3,}$/, "---"))
            .join("|")
        : line,
    )
    .join("\n");
}
