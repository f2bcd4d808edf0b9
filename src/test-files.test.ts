/**
 * `npm test` runs with `--test-force-exit`, so a test file whose tests have all finished cannot
 * hang the run on a handle it leaked. The runner then exits the file once the tests it knows of are
 * done: a test registered after a top-level `await` that follows an earlier test is not known yet
 * when that test finishes, and would silently never run. This keeps every test file clear of that.
 */
import assert from "node:assert/strict";
import { readdirSync, readFileSync } from "node:fs";
import { join, relative } from "node:path";
import { test } from "node:test";

const ROOT = join(import.meta.dirname, "..");

function testFiles(dir: string): string[] {
  return readdirSync(dir, { withFileTypes: true }).flatMap((entry) => {
    const path = join(dir, entry.name);
    if (entry.isDirectory()) return entry.name === "node_modules" ? [] : testFiles(path);
    return entry.name.endsWith(".test.ts") ? [path] : [];
  });
}

/** The 1-based line of the first top-level await after the file's first top-level test, or null. */
export function awaitAfterFirstTest(source: string): number | null {
  const lines = source.split("\n");
  const firstTest = lines.findIndex((line) => /^(test|describe|suite|it)\(/.test(line));
  if (firstTest < 0) return null;
  const topLevelAwait = /^(?:(?:export\s+)?(?:const|let|var)\s[^=]*=\s*)?(?:\(\s*)*await\b|^for await\b/;
  const found = lines.findIndex((line, i) => i > firstTest && topLevelAwait.test(line));
  return found < 0 ? null : found + 1;
}

test("the check finds a top-level await after a test, and only there", () => {
  assert.equal(awaitAfterFirstTest('const a = await f();\ntest("x", () => {});\n'), null);
  assert.equal(awaitAfterFirstTest('test("x", async () => {\n  const a = await f();\n});\n'), null);
  assert.equal(awaitAfterFirstTest('test("x", () => {});\nconst tools = (await f()).tools;\n'), 2);
  assert.equal(awaitAfterFirstTest('test("x", () => {});\n\nawait setup();\n'), 3);
  assert.equal(awaitAfterFirstTest('suite("x", () => {});\nfor await (const x of y) {}\n'), 2);
});

test("no test file registers tests after a top-level await that follows an earlier test", () => {
  const files = [...testFiles(join(ROOT, "src")), ...testFiles(join(ROOT, "bench"))];
  assert.ok(files.length > 50, `found only ${files.length} test files`);
  const offenders = files.flatMap((file) => {
    const line = awaitAfterFirstTest(readFileSync(file, "utf8"));
    return line === null ? [] : [`${relative(ROOT, file)}:${line}`];
  });
  assert.deepEqual(offenders, [], "load what these need lazily, inside the tests or a before() hook");
});
