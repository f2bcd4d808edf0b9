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
const { main } = await import("../src/cli/main.ts");
await main();
