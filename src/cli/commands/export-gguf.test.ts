import assert from "node:assert/strict";
import { existsSync, statSync } from "node:fs";
import { mkdtemp } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { test } from "node:test";
import { runCli } from "../testing.ts";
import { register } from "./export.ts";

const MODEL = new URL("../../../models/base-strong", import.meta.url).pathname;

test("agentrl export gguf writes the file and says what llama.cpp does differently; --type is checked", async () => {
  const dir = await mkdtemp(join(tmpdir(), "agentrl-export-gguf-cli-"));
  const out = join(dir, "base-strong.gguf");
  const { out: lines } = await runCli(register, ["export", "gguf", MODEL, "--out", out, "--type", "q8_0"]);
  assert.match(lines[0]!, /^wrote gpt2 q8_0 \(864256 parameters, 52 tensors, [\d.]+ MiB\) to /);
  assert.equal(lines[1], "tokenizer gpt2/whitespace, vocabulary 298, chat template included");
  assert.match(lines.join("\n"), /note: tokenizer: .*where the lab gives <unk>/);
  assert.match(lines.join("\n"), /note: stops: .*<\/search> <\/calc> <\/answer>/);
  const json = join(dir, "default.gguf");
  const { out: jsonLines } = await runCli(register, ["export", "gguf", MODEL, "--out", json, "--json"]);
  const summary = JSON.parse(jsonLines.join("\n"));
  assert.equal(summary.type, "f16"); // the default
  assert.equal(summary.bytes, statSync(json).size);
  await assert.rejects(
    runCli(register, ["export", "gguf", MODEL, "--out", join(dir, "x.gguf"), "--type", "q4_0"]),
    /--type must be one of f32, f16, q8_0; got "q4_0"/,
  );
  await assert.rejects(runCli(register, ["export", "gguf", MODEL]), /--out <file>/);
  assert.equal(existsSync(join(dir, "x.gguf")), false);
});
