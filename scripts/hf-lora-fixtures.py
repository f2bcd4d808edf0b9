"""Reference fixtures for LoRA on Hugging Face checkpoints (src/policy/hf/lora*.ts), made by PEFT.

For the tiny Qwen3 (tied), Llama 3 and GPT-2 checkpoints of src/policy/hf/fixtures/
(scripts/hf-fixtures.py), read in float32, this wraps the model with PEFT's LoraConfig (r=4,
alpha=8, every projection: the seven of Llama-style layers, GPT-2's c_attn, c_proj and c_fc, which
PEFT runs with fan_in_fan_out; dropout 0), sets every lora_B to small random values (PEFT starts B at 0, which would leave every
lora_A gradient exactly 0 and the parity test half blind), and records, on a fixed batch:

- `sft`: the masked token mean of −log p (the loss of supervised fine-tuning on response tokens),
- `ppo`: PPO-clip (ε_low 0.2, ε_high 0.28, verl's) over the same tokens with per-token advantages
  and "old" log-probs offset from the current ones so that some ratios are clipped and some not,

each with every LoRA gradient (A and B per target per layer, PEFT's names). It also saves the
adapter with PEFT's own save_pretrained (`peft-adapter/`) and records PeftModel's logits and its
32-token greedy continuation of a prompt (through the KV cache).

Then it runs the TypeScript writer (src/policy/hf/testing-lora-write.ts) on the same adapter weights,
loads what it wrote with PeftModel.from_pretrained (the adapter) and AutoModelForCausalLM.from_pretrained
(the merged folder), and records their logits and the sha256 of every file they loaded
(`written.json`): the test writes the files again and checks both.

    /work/pyvenv/bin/python scripts/hf-lora-fixtures.py        # rewrites src/policy/hf/fixtures/lora/
    /work/pyvenv/bin/python scripts/hf-lora-fixtures.py gpt2   # only the named ones

(torch 2.x, transformers 5.x, peft 0.21; seeded: a rerun with the same versions writes the same
numbers; PEFT writes target_modules in Python's set order, which may differ from run to run).
"""

import base64
import hashlib
import json
import os
import shutil
import subprocess
import sys
import tempfile

import torch
from peft import LoraConfig, PeftModel, get_peft_model
from transformers import AutoModelForCausalLM

ROOT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..")
BASES = os.path.join(ROOT, "src", "policy", "hf", "fixtures")
OUT = os.path.join(BASES, "lora")
TARGETS = ["q_proj", "k_proj", "v_proj", "o_proj", "gate_proj", "up_proj", "down_proj"]
GPT2_TARGETS = ["c_attn", "c_proj", "c_fc"]
IDS = [[5, 17, 200, 3, 99, 41, 7, 250, 12, 64, 1, 33], [9, 9, 140, 2, 77, 180, 31, 8, 255, 100, 4, 60]]
# mask[b][t] = 1: token t (t >= 1) is trained on (a response token); column 0 has no prediction.
MASK = [[0, 0, 0, 0, 1, 1, 1, 1, 1, 1, 1, 1], [0, 0, 1, 1, 1, 1, 1, 0, 0, 1, 1, 1]]
ADVANTAGES = [1.5, -0.75]
# old = logp + offset: ratios exp(-offset) of 1.65, 1.11, 0.95 and 0.67, each far from the clip
# edges (0.8, 1.28), so float differences cannot move a token across one.
OFFSETS = [-0.5, -0.1, 0.05, 0.4]
CLIP_LOW, CLIP_HIGH = 0.2, 0.28
PROMPT = [11, 52, 7, 199, 23, 140, 5, 88]
NEW_TOKENS = 32


def b64(tensor):
    return base64.b64encode(tensor.detach().to(torch.float32).contiguous().numpy().tobytes()).decode()


def sha256(path):
    with open(path, "rb") as f:
        return hashlib.sha256(f.read()).hexdigest()


def lora_tensors(model):
    """PEFT's saved name (adapter name dropped) -> parameter, for every lora_A / lora_B."""
    return {
        name.replace(".default", ""): param for name, param in model.named_parameters() if "lora_" in name
    }


def token_logprobs(model, ids):
    """log p(ids[t] | ids[<t]) aligned with ids: [B, T], column 0 zero."""
    logp = torch.log_softmax(model(ids).logits.float(), -1)[:, :-1]
    picked = logp.gather(-1, ids[:, 1:, None])[..., 0]
    return torch.nn.functional.pad(picked, (1, 0))


def losses(model, ids, mask, advantages, old):
    logp = token_logprobs(model, ids)
    count = mask.sum()
    sft = -(logp * mask).sum() / count
    ratio = torch.exp(torch.clamp(logp - old, -20, 20))
    pg = -torch.minimum(ratio * advantages, torch.clamp(ratio, 1 - CLIP_LOW, 1 + CLIP_HIGH) * advantages)
    ppo = (pg * mask).sum() / count
    return {"sft": sft, "ppo": ppo}


def build(name, seed, targets=TARGETS):
    folder = os.path.join(OUT, name)
    shutil.rmtree(folder, ignore_errors=True)
    os.makedirs(folder)
    torch.manual_seed(seed)
    base = AutoModelForCausalLM.from_pretrained(os.path.join(BASES, name), dtype=torch.float32)
    config = LoraConfig(r=4, lora_alpha=8, target_modules=targets, lora_dropout=0.0, task_type="CAUSAL_LM")
    model = get_peft_model(base, config)
    with torch.no_grad():
        for pname, param in lora_tensors(model).items():
            if "lora_B" in pname:
                param.normal_(0, 0.1)
    model.train()  # dropout 0: identical to eval, and the gradients flow as in training

    ids = torch.tensor(IDS)
    mask = torch.tensor(MASK, dtype=torch.float32)
    advantages = torch.tensor(ADVANTAGES)[:, None].expand_as(mask).contiguous()
    with torch.no_grad():
        current = token_logprobs(model, ids)
    offsets = torch.tensor(OFFSETS)[torch.arange(mask.numel()) % len(OFFSETS)].reshape(mask.shape)
    old = current + offsets * mask

    reference = {
        "base": name,
        "r": 4,
        "lora_alpha": 8,
        "targets": targets,
        "ids": IDS,
        "mask": MASK,
        "advantages": b64(advantages),
        "old_logprobs": b64(old),
        "clip": [CLIP_LOW, CLIP_HIGH],
        "adapter": {pname: {"shape": list(p.shape), "data": b64(p)} for pname, p in lora_tensors(model).items()},
        "losses": {},
    }
    for loss_name in ["sft", "ppo"]:
        model.zero_grad()
        loss = losses(model, ids, mask, advantages, old)[loss_name]
        loss.backward()
        grads = {pname: b64(p.grad) for pname, p in lora_tensors(model).items()}
        reference["losses"][loss_name] = {"value": loss.item(), "grads": grads}
    model.eval()
    with torch.no_grad():
        reference["peft_logits"] = b64(model(ids).logits)
        out = model.generate(
            input_ids=torch.tensor([PROMPT]),
            max_new_tokens=NEW_TOKENS,
            min_new_tokens=NEW_TOKENS,
            do_sample=False,
            eos_token_id=None,
            pad_token_id=0,
        )
    reference["prompt"] = PROMPT
    reference["peft_greedy"] = out[0, len(PROMPT) :].tolist()
    with open(os.path.join(folder, "reference.json"), "w") as f:
        json.dump(reference, f)

    # PEFT's own save: the reader must take it as the ecosystem writes it.
    # (base_model_name_or_path: the fixture's name, not this machine's path; the model card dropped.)
    model.peft_config["default"].base_model_name_or_path = name
    model.save_pretrained(os.path.join(folder, "peft-adapter"))
    os.remove(os.path.join(folder, "peft-adapter", "README.md"))

    # Our writer, from the same adapter weights; then the libraries load what it wrote.
    with tempfile.TemporaryDirectory() as tmp:
        subprocess.run(
            [
                os.path.join(ROOT, "node_modules", ".bin", "node"),
                os.path.join(ROOT, "src", "policy", "hf", "testing-lora-write.ts"),
                name,
                tmp,
            ],
            check=True,
            cwd=ROOT,
        )
        adapter_dir, merged_dir = os.path.join(tmp, "adapter"), os.path.join(tmp, "merged")
        fresh = AutoModelForCausalLM.from_pretrained(os.path.join(BASES, name), dtype=torch.float32)
        loaded = PeftModel.from_pretrained(fresh, adapter_dir).eval()
        # The merged folder as transformers loads it by default (no dtype given): its config's.
        merged = AutoModelForCausalLM.from_pretrained(merged_dir).eval()
        with torch.no_grad():
            adapter_logits = loaded(ids).logits
            merged_logits = merged(ids).logits
        written = {
            "adapter_sha256": {f: sha256(os.path.join(adapter_dir, f)) for f in sorted(os.listdir(adapter_dir))},
            "merged_sha256": {f: sha256(os.path.join(merged_dir, f)) for f in sorted(os.listdir(merged_dir))},
            "merged_dtype": str(next(merged.parameters()).dtype),
            "adapter_logits": b64(adapter_logits),
            "merged_logits": b64(merged_logits),
        }
    with open(os.path.join(folder, "written.json"), "w") as f:
        json.dump(written, f, indent=1)
    print(
        name,
        {k: round(v["value"], 6) for k, v in reference["losses"].items()},
        "max |adapter - merged logits|",
        (adapter_logits - merged_logits).abs().max().item(),
    )


def main():
    os.makedirs(OUT, exist_ok=True)
    only = sys.argv[1:]
    for name, seed, targets in [("qwen3-tied", 1, TARGETS), ("llama3-bf16", 2, TARGETS), ("gpt2", 3, GPT2_TARGETS)]:
        if not only or name in only:
            build(name, seed, targets)


if __name__ == "__main__":
    sys.exit(main())
