import assert from "node:assert/strict";
import { mkdtemp, readdir } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { test } from "node:test";
import { EXPORTED_FILES } from "../../policy/hf/export-hf.ts";
import { runCli } from "../testing.ts";
import { register } from "./export.ts";

const MODEL = new URL("../../../models/base-strong", import.meta.url).pathname;

test("agentrl export hf writes the checkpoint folder; plain `export <runDir>` still reaches the run export", async () => {
  const out = join(await mkdtemp(join(tmpdir(), "agentrl-export-hf-cli-")), "hf");
  const { out: lines } = await runCli(register, ["export", "hf", MODEL, "--out", out, "--json"]);
  const summary = JSON.parse(lines.join("\n"));
  assert.equal(summary.architecture, "GPT2LMHeadModel");
  assert.equal(summary.vocabSize, 298);
  assert.deepEqual((await readdir(out)).sort(), [...EXPORTED_FILES].sort());
  await assert.rejects(runCli(register, ["export", "hf", MODEL]), /--out/);
  await assert.rejects(
    runCli(register, ["export", join(out, "not-a-run"), "--out", join(out, "x.jsonl")]),
    /not-a-run/,
  );
});
