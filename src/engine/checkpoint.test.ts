import assert from "node:assert/strict";
import { mkdtemp, readdir, readFile, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, test } from "node:test";
import { CheckpointError, loadCheckpoint, saveCheckpoint } from "./checkpoint.ts";

const root = await mkdtemp(join(tmpdir(), "agentrl-engine-ckpt-"));
after(() => rm(root, { recursive: true, force: true }));

const tensors = {
  model: { w: { dtype: "float32" as const, shape: [2], data: new Float32Array([1.5, -2]) } },
  optimizer: { count: { dtype: "float32" as const, shape: [], data: new Float32Array([3]) } },
};

test("manifest and tensor groups round-trip; SHA256SUMS covers every file in sha256sum format", async () => {
  const dir = join(root, "a");
  await saveCheckpoint(dir, { manifest: { step: 3, nested: { list: [1, "x", null] } }, tensors });
  const loaded = await loadCheckpoint(dir);
  assert.deepEqual(loaded.manifest, { step: 3, nested: { list: [1, "x", null] } });
  assert.deepEqual([...loaded.tensors.model.w.data], [1.5, -2]);
  assert.deepEqual([...loaded.tensors.optimizer.count.data], [3]);
  const sums = await readFile(join(dir, "SHA256SUMS"), "utf8");
  assert.deepEqual(
    sums
      .trim()
      .split("\n")
      .map((line) => line.split("  ")[1])
      .sort(),
    ["checkpoint.json", "model.safetensors", "optimizer.safetensors"],
  );
});

test("saving over a checkpoint replaces it whole and leaves no temporary directories", async () => {
  const dir = join(root, "b");
  await saveCheckpoint(dir, { manifest: { version_of: "first" }, tensors });
  await writeFile(join(dir, "stray.txt"), "left from before");
  await saveCheckpoint(dir, { manifest: { version_of: "second" }, tensors: { model: tensors.model } });
  assert.deepEqual((await readdir(dir)).sort(), ["SHA256SUMS", "checkpoint.json", "model.safetensors"]);
  assert.equal((await loadCheckpoint(dir)).manifest.version_of, "second");
  assert.deepEqual(
    (await readdir(root)).filter((name) => name.startsWith(".")),
    [],
  );
});

test("reserved manifest keys and foreign directories are refused", async () => {
  await assert.rejects(saveCheckpoint(join(root, "c"), { manifest: { format: "x" }, tensors }), /reserved/);
  await assert.rejects(
    loadCheckpoint(join(root, "does-not-exist")),
    (error: Error) => error instanceof CheckpointError,
  );
});
