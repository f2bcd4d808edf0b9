#!/usr/bin/env node
// The `agentrl` command. It needs Node >= 24 (jax-js needs >= 22; node:sqlite and .ts type
// stripping need 24). `npm install` brings Node 24 as a devDependency, so `npx agentrl` and every
// npm script run on it; a plain shell `node` may still be older, hence this guard.
const [major] = process.versions.node.split(".").map(Number);
if (major < 24) {
  console.error(
    `agentrl needs Node >= 24 but this is Node ${process.versions.node}.\n` +
      "Run it through npm, which uses the Node 24 installed with the project: `npx agentrl ...` or `npm run agentrl -- ...`.\n" +
      "(If `npm ci --ignore-scripts` was used, Node 24 was not installed: run `npm rebuild node`.)",
  );
  process.exit(1);
}
// Node's compile cache keeps the type-stripped, compiled modules on disk: a recipe starts a child
// process per stage, and each one loading the CLI's modules took 1.25 s, 0.65 s with the cache.
// The variable passes it on to those children.
const { enableCompileCache } = await import("node:module");
const cache = enableCompileCache?.();
if (cache?.directory && !process.env.NODE_COMPILE_CACHE) process.env.NODE_COMPILE_CACHE = cache.directory;
const { main } = await import("../src/cli/main.ts");
await main();
