import assert from "node:assert/strict";
import { mkdtempSync, rmSync, symlinkSync } from "node:fs";
import { tmpdir } from "node:os";
import { join, relative } from "node:path";
import { test } from "node:test";
import { createRunDirectory, runStorePath } from "../store/index.ts";
import { RunCatalog, runKey } from "./run-catalog.ts";

test("one SQLite handle per real file, however the key spells its path", () => {
  const root = mkdtempSync(join(tmpdir(), "agentrl-catalog-"));
  try {
    const { directory, store, run } = createRunDirectory({ kind: "eval", root, id: "r1", config: {} });
    store.close();
    symlinkSync(directory, join(root, "alias"));
    const file = relative(root, runStorePath(directory));
    const spellings = [
      file,
      `./${file}`,
      file.replace("/", "//"),
      `r1/../${file}`,
      `alias/${file.split("/").pop()}`,
    ];
    const catalog = new RunCatalog(root);
    try {
      for (const spelling of spellings) {
        const resolved = catalog.resolve(runKey(spelling, run.id));
        assert.equal(resolved?.run.id, run.id, `${spelling} names the run`);
      }
      assert.equal(catalog.openCount, 1, `${spellings.length} spellings, one handle`);
      catalog.scan();
      assert.equal(catalog.openCount, 1, "the scan reuses it");
    } finally {
      catalog.close();
    }
    assert.equal(catalog.openCount, 0);
  } finally {
    rmSync(root, { recursive: true, force: true });
  }
});
