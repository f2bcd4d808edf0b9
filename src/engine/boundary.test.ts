import assert from "node:assert/strict";
import { readdirSync, readFileSync } from "node:fs";
import { join, relative } from "node:path";
import { test } from "node:test";
import { fileURLToPath } from "node:url";
import { jax, np, workerPoolEnabled } from "./jax.ts";
import { wasmMemoryShared } from "./preload.ts";

const root = fileURLToPath(new URL("../..", import.meta.url));

function sourceFiles(dir: string): string[] {
  return readdirSync(dir, { withFileTypes: true }).flatMap((entry) => {
    const path = join(dir, entry.name);
    if (entry.isDirectory()) return sourceFiles(path);
    return entry.name.endsWith(".ts") ? [path] : [];
  });
}

test("only src/engine/jax.ts imports @jax-js/jax (the worker shim must load first; one place to swap backends)", () => {
  const offenders = [...sourceFiles(join(root, "src")), ...sourceFiles(join(root, "bench"))]
    .filter((file) =>
      /from\s+["']@jax-js\/jax["']|import\(\s*["']@jax-js\/jax["']\s*\)/.test(readFileSync(file, "utf8")),
    )
    .map((file) => relative(root, file))
    .filter((file) => file !== join("src", "engine", "jax.ts"));
  assert.deepEqual(offenders, []);
});

test("the worker shim is installed before jax-js builds its backend (shared heap iff pool), and kernels run", async () => {
  assert.equal(wasmMemoryShared(), workerPoolEnabled);
  const double = jax.jit((x: ReturnType<typeof np.array>) => x.mul(2));
  assert.deepEqual([...(await double(np.array([1, 2, 3])).data())], [2, 4, 6]);
  assert.deepEqual([...double(np.array([4])).dataSync()], [8]);
  double.dispose();
});
