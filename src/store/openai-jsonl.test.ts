import assert from "node:assert/strict";
import { existsSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, test } from "node:test";
import { JsonlError, readJsonl, writeJsonl } from "./jsonl.ts";
import { trajectoryToChat } from "./openai-chat.ts";
import { deriveToolSpecs, exportOpenAiJsonl, importOpenAiJsonl } from "./openai-jsonl.ts";
import { openStore } from "./store.ts";
import {
  chatTrajectory,
  formatErrorTrajectory,
  numberedTrajectory,
  richTrajectory,
  TEST_TOOL_SPECS,
} from "./test-trajectories.ts";

const root = mkdtempSync(join(tmpdir(), "agentrl-jsonl-"));
after(() => rmSync(root, { recursive: true, force: true }));

async function readAll(path: string) {
  const rows = [];
  for await (const row of readJsonl(path)) rows.push(row);
  return rows;
}

test("writeJsonl then readJsonl: values, line numbers, blank lines, CRLF and a BOM", async () => {
  const path = join(root, "a", "rows.jsonl");
  assert.equal(await writeJsonl(path, [{ a: 1 }, [Number.NaN, -0], "text"]), 3);
  assert.deepStrictEqual(await readAll(path), [
    { line: 1, value: { a: 1 } },
    { line: 2, value: [Number.NaN, -0] },
    { line: 3, value: "text" },
  ]);
  writeFileSync(path, '\uFEFF{"x":1}\r\n\r\n  \n{"x":2}\r\n');
  assert.deepStrictEqual(await readAll(path), [
    { line: 1, value: { x: 1 } },
    { line: 4, value: { x: 2 } },
  ]);
});

test("a malformed line is an error naming the file and line", async () => {
  const path = join(root, "bad.jsonl");
  writeFileSync(path, '{"ok":1}\n\n{"ok":2\n{"ok":3}\n');
  const seen: unknown[] = [];
  await assert.rejects(
    async () => {
      for await (const row of readJsonl(path)) seen.push(row.value);
    },
    (error: unknown) =>
      error instanceof JsonlError && error.line === 3 && error.message.startsWith(`${path}:3: invalid JSON`),
  );
  assert.deepStrictEqual(seen, [{ ok: 1 }]);
});

test("writeJsonl leaves no file behind when the rows throw", async () => {
  const folder = join(root, "partial");
  const path = join(folder, "out.jsonl");
  function* rows() {
    yield { a: 1 };
    throw new Error("source failed");
  }
  await assert.rejects(writeJsonl(path, rows()), /source failed/);
  assert.equal(existsSync(path), false);
  assert.deepStrictEqual(readdirSync(folder), []);
});

test("writeJsonl streams an async source with backpressure", async () => {
  const path = join(root, "big.jsonl");
  async function* rows() {
    for (let i = 0; i < 3000; i++) yield { i, pad: "x".repeat(100) };
  }
  assert.equal(await writeJsonl(path, rows()), 3000);
  const read = await readAll(path);
  assert.equal(read.length, 3000);
  assert.deepStrictEqual(read[2999], { line: 3000, value: { i: 2999, pad: "x".repeat(100) } });
});

function storeWithRun(name: string) {
  const store = openStore(join(root, name, "store.sqlite"));
  const run = store.createRun({ id: name, kind: "rollout" });
  return { store, runId: run.id };
}

test("export then import into another run reproduces every trajectory and the tool specs", async () => {
  const source = storeWithRun("source");
  const written = [richTrajectory(1), formatErrorTrajectory(2), chatTrajectory(3), numberedTrajectory(4)];
  source.store.addTrajectories(source.runId, written);
  source.store.setToolSpecs(source.runId, TEST_TOOL_SPECS);
  const path = join(root, "export.jsonl");
  const summary = await exportOpenAiJsonl(source.store, source.runId, path);
  assert.equal(summary.written, 4);
  assert.equal(summary.toolsFrom, "run");
  assert.equal(readFileSync(path, "utf8").trimEnd().split("\n").length, 4);

  const target = storeWithRun("target");
  const imported = await importOpenAiJsonl(target.store, target.runId, path);
  assert.deepStrictEqual(imported, { lines: 4, imported: 4, duplicates: 0, lossless: 4, tools: 2 });
  assert.deepStrictEqual(target.store.trajectories(target.runId), written);
  assert.deepStrictEqual(target.store.toolSpecs(target.runId), TEST_TOOL_SPECS);

  // Importing the same file again adds nothing.
  const again = await importOpenAiJsonl(target.store, target.runId, path);
  assert.deepStrictEqual(again, { lines: 4, imported: 0, duplicates: 4, lossless: 4, tools: 2 });
  source.store.close();
  target.store.close();
});

test("--correct-only, --no-lossless and tool specs derived from the calls when the run has none", async () => {
  const { store, runId } = storeWithRun("derive");
  store.addTrajectories(runId, [richTrajectory(1), formatErrorTrajectory(2)]);
  const path = join(root, "correct.jsonl");
  const summary = await exportOpenAiJsonl(store, runId, path, { correctOnly: true, lossless: false });
  assert.equal(summary.written, 1);
  assert.equal(summary.toolsFrom, "derived");
  assert.deepStrictEqual(summary.tools, [
    {
      name: "search",
      description: "",
      parameters: { type: "object", properties: { query: { type: "string" } } },
      textArgument: "query",
    },
    {
      name: "calc",
      description: "",
      parameters: { type: "object", properties: { expression: { type: "string" } } },
      textArgument: "expression",
    },
  ]);
  const [row] = await readAll(path);
  assert.deepStrictEqual(row.value, trajectoryToChat(richTrajectory(1), summary.tools, { lossless: false }));
  assert.deepStrictEqual(deriveToolSpecs([formatErrorTrajectory()]), []);
  store.close();
});

test("a bad third line stops the import with its line number and nothing is imported", async () => {
  const { store, runId } = storeWithRun("bad-import");
  const good = JSON.stringify(trajectoryToChat(chatTrajectory(), TEST_TOOL_SPECS, { lossless: false }));
  const path = join(root, "bad-import.jsonl");
  writeFileSync(path, `${good}\n\n{"messages": [{"role": "robot"}]}\n${good}\n`);
  await assert.rejects(
    importOpenAiJsonl(store, runId, path),
    (error: unknown) =>
      error instanceof JsonlError && error.line === 3 && /not an OpenAI chat record/.test(error.message),
  );
  assert.equal(store.countTrajectories(runId), 0, "the good first line is not kept");
  assert.equal(store.toolSpecs(runId), undefined, "nor its tool specs");
  await assert.rejects(importOpenAiJsonl(store, "ghost", path), /no run "ghost"/);
  store.close();
});
