/**
 * `agentrl train rl` on a Hugging Face checkpoint as a user runs it: the example's config and task
 * file (examples/hf/), with full fine-tuning, the gae critic and a bf16 model folder asked for by
 * flags. What it prints and writes, not only what the library returns.
 */
import assert from "node:assert/strict";
import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { test } from "node:test";
import { readSafetensorsFile } from "../../engine/safetensors.ts";
import { CHAT_FOLDER } from "../../policy/hf/testing-chat-task.ts";
import { VALUE_HEAD_FILE } from "../../policy/hf/value-head.ts";
import { RL_ADAPTER } from "../../rl/checkpoints.ts";
import { runCli } from "../testing.ts";
import { register as registerTrain } from "./train.ts";

const EXAMPLE = join(import.meta.dirname, "../../../examples/hf");

test("train rl --full-finetune --estimator gae --save-dtype bfloat16 on an hf: folder: a bf16 model folder, no adapter, and says so", async (t) => {
  const root = mkdtempSync(join(tmpdir(), "agentrl-cli-hf-"));
  t.after(() => rmSync(root, { recursive: true, force: true }));
  // The example's config without its LoRA settings (a LoRA flag or setting with --full-finetune is refused).
  const { lora: _lora, ...example } = JSON.parse(readFileSync(join(EXAMPLE, "rl.json"), "utf8"));
  const configFile = join(root, "rl.json");
  writeFileSync(configFile, JSON.stringify({ ...example, steps: 2 }));
  const { out } = await runCli(registerTrain, [
    "train",
    "rl",
    "--policy",
    `hf:${CHAT_FOLDER}`,
    "--full-finetune",
    "--estimator",
    "gae",
    "--save-dtype",
    "bfloat16",
    "--config",
    configFile,
    "--task-file",
    join(EXAMPLE, "tasks.txt"),
    "--runs",
    root,
    "--run-id",
    "full",
  ]);
  const run = join(root, "full");
  const modelDir = join(run, "model");
  assert.ok(out.includes(`trained model written to ${modelDir} (run ${run})`), out.join("\n"));
  assert.ok(!out.some((line) => line.includes("LoRA adapter")), "no adapter is announced");
  assert.ok(!existsSync(join(run, RL_ADAPTER)), "no adapter is written");
  assert.equal(JSON.parse(readFileSync(join(modelDir, "config.json"), "utf8")).dtype, "bfloat16");
  assert.ok(!existsSync(join(modelDir, VALUE_HEAD_FILE)), "the critic stays out of the model folder");
  const header = JSON.parse(
    (() => {
      const bytes = readFileSync(join(modelDir, "model.safetensors"));
      return bytes.subarray(8, 8 + Number(bytes.readBigUInt64LE(0))).toString("utf8");
    })(),
  );
  const dtypes = new Set(
    Object.entries(header).flatMap(([name, info]) =>
      name === "__metadata__" ? [] : [(info as { dtype: string }).dtype],
    ),
  );
  assert.deepEqual([...dtypes], ["BF16"]);
  // The folder loads (widened to float32) and the checkpoints hold the trained head.
  assert.ok(Object.keys(readSafetensorsFile(join(modelDir, "model.safetensors")).tensors).length > 0);
  assert.ok(existsSync(join(run, "checkpoints", "step-000002", VALUE_HEAD_FILE)));
});
