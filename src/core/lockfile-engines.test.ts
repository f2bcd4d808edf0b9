/**
 * The README's prerequisite is npm 10 or 11 under Node 20 (npm installs the pinned Node 24 itself).
 * npm prints `EBADENGINE` for every installed package whose `engines.node` excludes the Node that
 * runs it, so the lockfile must hold none: a dependency that moves to Node 22 (as `openai` 7 did,
 * pulled in by `@openai/agents` 0.15 and later) is caught here, without running npm.
 */
import assert from "node:assert/strict";
import { readFileSync } from "node:fs";
import { createRequire } from "node:module";
import { test } from "node:test";

// semver (devDependency) ships no types; the one function used is typed here.
const { satisfies } = createRequire(import.meta.url)("semver") as {
  satisfies(version: string, range: string): boolean;
};

/** The oldest Node 20 the README supports: the first 20.x that every locked package admits. */
const NODE_20 = "20.19.0";

interface LockedPackage {
  version?: string;
  engines?: { node?: string } | string[];
}

test("no locked package's engines.node excludes Node 20, so npm install prints no EBADENGINE", () => {
  const lock = JSON.parse(readFileSync(new URL("../../package-lock.json", import.meta.url), "utf8")) as {
    packages: Record<string, LockedPackage>;
  };
  const excluding = Object.entries(lock.packages)
    .filter(([, pkg]) => !Array.isArray(pkg.engines) && pkg.engines?.node !== undefined)
    .filter(([, pkg]) => !satisfies(NODE_20, (pkg.engines as { node: string }).node))
    .map(([path, pkg]) => `${path}@${pkg.version} (engines.node ${(pkg.engines as { node: string }).node})`);
  assert.ok(Object.keys(lock.packages).length > 100, "the lockfile lists the installed packages");
  assert.deepEqual(excluding, [], `packages that exclude Node ${NODE_20}`);
});
