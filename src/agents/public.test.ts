/**
 * The package entry (`import { worldTools } from "agentrl"`): the module the build compiles gives
 * the world's tools to an agent, and package.json's `exports` name the JavaScript and declarations
 * that tsconfig.build.json emits for it. (The installed tarball itself is checked by
 * `npm run pack-check`, too slow for the suite.)
 */
import assert from "node:assert/strict";
import { readFileSync } from "node:fs";
import { test } from "node:test";
import * as entry from "./public.ts";

test("worldTools from the package entry runs the world's search and calc", async () => {
  assert.deepEqual(Object.keys(entry).sort(), ["agentWorldTools", "worldTools"]);
  const tools = entry.worldTools({ id: "t", worldSeed: 1001 });
  assert.deepEqual(tools.names, ["search", "calc"]);
  assert.deepEqual(
    tools.openai.map((spec) => spec.function.name),
    ["search", "calc"],
  );
  assert.equal(await tools.call("calc", { expression: "2 + 3 * 4" }), "14");
  assert.match(await tools.call("search", { query: "sakroland" }), /^sakroland : country/);
  assert.match(await tools.call("nope", {}), /unknown tool nope/);
  assert.throws(() => entry.worldTools({ id: "x" }), /no worldSeed/);
});

test("package.json exports the built entry that tsconfig.build.json emits", () => {
  const pkg = JSON.parse(readFileSync("package.json", "utf8"));
  const build = JSON.parse(readFileSync("tsconfig.build.json", "utf8"));
  assert.deepEqual(build.files, ["src/agents/public.ts"]);
  const { rootDir, outDir } = build.compilerOptions;
  const emitted = (ext: string) => `./${outDir}/agents/public${ext}`;
  assert.equal(rootDir, "src");
  assert.deepEqual(pkg.exports["."], { types: emitted(".d.ts"), default: emitted(".js") });
  assert.ok(pkg.files.includes(outDir), "the build output is published");
  assert.equal(pkg.scripts.prepack, "npm run build");
  assert.ok(!pkg.scripts.prepare, "npm install does not need the build");
  assert.match(readFileSync(".gitignore", "utf8"), new RegExp(`^${outDir}/$`, "m"));
});
