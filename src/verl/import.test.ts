/**
 * `verl import` is all or nothing and can be run again: a bad line in any step's dump imports no
 * step, and a second import of the same dumps keeps the completed runs (same results) instead of
 * failing on their folders.
 */
import assert from "node:assert/strict";
import { existsSync, mkdirSync, mkdtempSync, readdirSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, test } from "node:test";
import { openRunDirectory } from "../store/index.ts";
import { importVerlDumps } from "./import.ts";

const root = mkdtempSync(join(tmpdir(), "agentrl-verl-import-"));
after(() => rmSync(root, { recursive: true, force: true }));

/** Two prompts × two samples; sample 0 of prompt a is correct. */
function dumpLines(step: number): string[] {
  return ["a", "a", "b", "b"].map((prompt, index) =>
    JSON.stringify({
      input: `question ${prompt}`,
      output: `answer ${index}`,
      gts: "x",
      score: index === 0 ? 1 : 0,
      step,
    }),
  );
}

test("a bad third line in the second step's dump imports no step at all", async () => {
  const dump = join(root, "bad-dump");
  mkdirSync(dump);
  writeFileSync(join(dump, "0.jsonl"), `${dumpLines(0).join("\n")}\n`);
  const [first, second, , fourth] = dumpLines(10);
  writeFileSync(join(dump, "10.jsonl"), `${first}\n${second}\n{"input": "q", "output": 3}\n${fourth}\n`);
  const out = join(root, "bad-out");
  await assert.rejects(
    importVerlDumps({ path: dump, runsRoot: out }),
    /10\.jsonl:3: "output" must be a string/,
  );
  assert.deepEqual(existsSync(out) ? readdirSync(out) : [], [], "not even step 0 was written");
});

test("importing the same dumps again keeps the completed runs and their results", async () => {
  const dump = join(root, "good-dump");
  mkdirSync(dump);
  writeFileSync(join(dump, "0.jsonl"), `${dumpLines(0).join("\n")}\n`);
  writeFileSync(join(dump, "10.jsonl"), `${dumpLines(10).join("\n")}\n`);
  const out = join(root, "good-out");
  const first = await importVerlDumps({ path: dump, runsRoot: out });
  assert.deepEqual(
    first.map((run) => [run.step, run.alreadyImported, run.result.metrics["eval/pass@1"]]),
    [
      [0, false, 0.25],
      [10, false, 0.25],
    ],
  );
  assert.ok(
    existsSync(first[0].result.files?.json ?? ""),
    "the result names the files in their final folder",
  );
  const again = await importVerlDumps({ path: dump, runsRoot: out });
  assert.deepEqual(
    again.map((run) => run.alreadyImported),
    [true, true],
  );
  assert.deepEqual(
    again.map((run) => [run.result.counts, run.result.curves, run.result.metrics]),
    first.map((run) => [run.result.counts, run.result.curves, run.result.metrics]),
  );
  const store = openRunDirectory(first[1].directory);
  assert.equal(store.countTrajectories(first[1].runId), 4, "no episode stored twice");
  store.close();
  assert.deepEqual(readdirSync(out).sort(), ["verl-good-dump-step0", "verl-good-dump-step10"]);
});
