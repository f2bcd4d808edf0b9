import assert from "node:assert/strict";
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { test } from "node:test";
import { parseRlConfig } from "../../rl/config.ts";
import { parseSftConfig } from "../../sft/config.ts";
import { loraField, loraFlagsFrom } from "./lora-options.ts";
import { rlConfigFrom } from "./train-rl.ts";

const HF = { policy: "hf:models/qwen" };

test("LoRA flags become the config's base and lora settings", () => {
  assert.deepEqual(
    loraFlagsFrom({
      ...HF,
      loraRank: "16",
      loraAlpha: "32",
      loraTargets: "q_proj, v_proj",
      loraDropout: "0.05",
    }),
    { base: "hf:models/qwen", lora: { rank: 16, alpha: 32, targets: ["q_proj", "v_proj"], dropout: 0.05 } },
  );
  assert.deepEqual(loraFlagsFrom({}), {});
  // A config file's hf: base takes the flags too.
  assert.deepEqual(loraFlagsFrom({ loraRank: "4" }, "hf:models/qwen"), { lora: { rank: 4 } });
});

test("bad LoRA flags are refused naming the flag and the valid values", () => {
  const cases: [Parameters<typeof loraFlagsFrom>[0], RegExp][] = [
    [
      { ...HF, loraRank: "0" },
      /--lora-rank must be an integer >= 1, got "0"; for full fine-tuning of the hf: checkpoint give --full-finetune/,
    ],
    [{ ...HF, loraRank: "2.5" }, /--lora-rank must be an integer >= 1, got "2.5"/],
    [{ ...HF, loraAlpha: "0" }, /--lora-alpha must be a number > 0/],
    [{ ...HF, loraAlpha: "x" }, /--lora-alpha must be a number >= 0, got "x"/],
    [{ ...HF, loraDropout: "1" }, /--lora-dropout must be in \[0, 1\)/],
    [
      { ...HF, loraTargets: "q_proj,lm_head" },
      /--lora-targets: "lm_head" is not a module LoRA can adapt; valid: q_proj, k_proj, v_proj, o_proj, gate_proj, up_proj, down_proj \(Qwen3, Llama\) or c_attn, c_proj, c_fc \(GPT-2\)/,
    ],
    [{ loraRank: "8" }, /--lora-rank needs a Hugging Face checkpoint: --policy hf:<folder>/],
    [{ loraTargets: "q_proj", base: "models/base-strong" }, /--lora-targets needs a Hugging Face checkpoint/],
    [{ policy: "models/base-strong" }, /--policy must be hf:<folder>/],
    [{ ...HF, base: "models/base-strong" }, /either --policy hf:<folder> or --base/],
    [
      { ...HF, fullFinetune: true, loraRank: "8" },
      /--full-finetune trains every weight, with no adapter: drop --lora-rank/,
    ],
    [{ fullFinetune: true }, /--full-finetune needs a Hugging Face checkpoint: --policy hf:<folder>/],
    [{ fullFinetune: true, base: "models/base-strong" }, /--full-finetune needs a Hugging Face checkpoint/],
  ];
  for (const [flags, message] of cases) assert.throws(() => loraFlagsFrom(flags), message);
});

test("--full-finetune sets lora: false, over a config file's LoRA settings; a LoRA flag over lora: false is refused", () => {
  assert.deepEqual(loraFlagsFrom({ ...HF, fullFinetune: true }), { base: "hf:models/qwen", lora: false });
  assert.deepEqual(loraFlagsFrom({ fullFinetune: true }, "hf:models/qwen"), { lora: false });
  assert.equal(loraField({ rank: 4 }, false), false);
  assert.equal(loraField(false, undefined), false);
  assert.deepEqual(loraField({ rank: 4, alpha: 8 }, { rank: 16 }), { rank: 16, alpha: 8 });
  assert.throws(
    () => loraField(false, { rank: 16 }),
    /--lora-rank: the config file sets lora: false \(full fine-tuning, no adapter\)/,
  );
});

test("the configs' lora: false is full fine-tuning of an hf: base; anything else is refused naming the field", () => {
  assert.equal(rlConfigFrom({ runs: "runs", policy: "hf:models/qwen", fullFinetune: true }).lora, false);
  assert.equal(parseSftConfig({ base: "hf:models/qwen", data: ["d"], lora: false }).lora, false);
  assert.throws(
    () => parseRlConfig({ base: "models/base-strong", lora: false }),
    /lora: false \(full fine-tuning\) is for an hf:<folder> base/,
  );
  assert.throws(
    () => parseSftConfig({ base: "models/base-strong", data: ["d"], lora: false }),
    /lora: false \(full fine-tuning\) is for an hf:<folder> base/,
  );
  for (const parse of [
    () => parseRlConfig({ base: "hf:models/qwen", lora: true }),
    () => parseSftConfig({ base: "hf:models/qwen", data: ["d"], lora: "full" }),
  ])
    assert.throws(parse, /lora: must be LoRA settings \{ rank, alpha, targets, dropout, rslora \} or false/);
});

test("train rl takes --estimator gae with an hf: base, with LoRA or in full; a bad estimator or a critic without a value loss is refused naming the field", (t) => {
  assert.equal(rlConfigFrom({ runs: "runs", ...HF, estimator: "gae", loraRank: "4" }).estimator, "gae");
  assert.equal(rlConfigFrom({ runs: "runs", ...HF, estimator: "gae", fullFinetune: true }).lora, false);
  assert.throws(
    () => rlConfigFrom({ runs: "runs", ...HF, estimator: "ppo" }),
    /estimator: unknown estimator "ppo"; valid: "grpo", "dr-grpo", "rloo", "reinforce-pp", "mt-grpo", "gigpo", "gae"/,
  );
  const root = mkdtempSync(join(tmpdir(), "agentrl-gae-config-"));
  t.after(() => rmSync(root, { recursive: true, force: true }));
  const file = join(root, "rl.json");
  writeFileSync(file, JSON.stringify({ base: "hf:models/qwen", estimator: "gae", valueCoef: 0 }));
  assert.throws(
    () => rlConfigFrom({ runs: "runs", config: file }),
    /valueCoef: estimator "gae" trains a critic: valueCoef must be > 0, got 0/,
  );
});

test("--save-dtype and the configs' saveDtype: one of float32, bfloat16, float16, for an hf: base", () => {
  assert.deepEqual(loraFlagsFrom({ ...HF, saveDtype: "bfloat16" }), {
    base: "hf:models/qwen",
    saveDtype: "bfloat16",
  });
  assert.deepEqual(loraFlagsFrom({ ...HF, fullFinetune: true, saveDtype: "float16" }), {
    base: "hf:models/qwen",
    lora: false,
    saveDtype: "float16",
  });
  assert.throws(
    () => loraFlagsFrom({ ...HF, saveDtype: "bf16" }),
    /--save-dtype must be one of float32, bfloat16, float16, got "bf16"/,
  );
  assert.throws(
    () => loraFlagsFrom({ saveDtype: "float16" }),
    /--save-dtype needs a Hugging Face checkpoint/,
  );
  const rl = rlConfigFrom({ ...HF, name: "m", saveDtype: "bfloat16" } as Parameters<typeof rlConfigFrom>[0]);
  assert.equal(rl.saveDtype, "bfloat16");
  assert.throws(
    () => parseRlConfig({ name: "m", base: "hf:x", saveDtype: "half" }),
    /saveDtype: must be one of "float32", "bfloat16", "float16"/,
  );
  assert.throws(
    () => parseRlConfig({ name: "m", base: "models/lab", saveDtype: "float16" }),
    /saveDtype: is for an hf:<folder> base/,
  );
  assert.equal(
    parseSftConfig({ name: "m", base: "hf:x", data: ["d"], saveDtype: "float16" }).saveDtype,
    "float16",
  );
  assert.throws(
    () => parseSftConfig({ name: "m", base: "hf:x", data: ["d"], saveDtype: "half" }),
    /saveDtype: must be one of "float32", "bfloat16", "float16"/,
  );
  assert.throws(
    () => parseSftConfig({ name: "m", base: "models/lab", data: ["d"], saveDtype: "float16" }),
    /saveDtype: is for an hf:<folder> base/,
  );
});
