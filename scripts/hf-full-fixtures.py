"""Reference fixtures for full fine-tuning of Hugging Face checkpoints (src/policy/hf/full-grad.test.ts).

For the tiny Qwen3 (untied head, q/k norms), Qwen2.5 (tied, q/k/v biases) and GPT-2 (tied, learned
positions, Conv1D) checkpoints of src/policy/hf/fixtures/ (scripts/hf-fixtures.py), read in
float32, this takes one loss each on the fixed batch of scripts/hf-lora-fixtures.py (the same ids,
mask, advantages and "old" log-probs offsets, and the same loss functions, imported from it):

- qwen3-untied-sharded: PPO-clip (ε_low 0.2, ε_high 0.28), masked token mean;
- qwen2.5: the masked token mean of −log p (supervised fine-tuning);
- gpt2: the masked token mean of −log p;

and records the loss and the gradient of every parameter of the model (transformers' names and
layouts: a tied embedding's gradient holds both its uses; GPT-2's Conv1D weights are [in, out],
its c_attn fused) in `grads.safetensors` (float32; the JSON keeps the batch and the loss).

    /work/pyvenv/bin/python scripts/hf-full-fixtures.py     # rewrites src/policy/hf/fixtures/full/

(torch 2.x, transformers 5.x; deterministic: no random numbers are drawn.)
"""

import importlib.util
import json
import os
import shutil
import sys

import torch
from safetensors.torch import save_file
from transformers import AutoModelForCausalLM

HERE = os.path.dirname(os.path.abspath(__file__))
spec = importlib.util.spec_from_file_location("hf_lora_fixtures", os.path.join(HERE, "hf-lora-fixtures.py"))
lora = importlib.util.module_from_spec(spec)
spec.loader.exec_module(lora)

OUT = os.path.join(lora.BASES, "full")
CASES = [("qwen3-untied-sharded", "ppo"), ("qwen2.5", "sft"), ("gpt2", "sft")]


def build(name, loss_name):
    folder = os.path.join(OUT, name)
    shutil.rmtree(folder, ignore_errors=True)
    os.makedirs(folder)
    model = AutoModelForCausalLM.from_pretrained(os.path.join(lora.BASES, name), dtype=torch.float32)
    model.eval()  # no dropout; gradients flow all the same
    ids = torch.tensor(lora.IDS)
    mask = torch.tensor(lora.MASK, dtype=torch.float32)
    advantages = torch.tensor(lora.ADVANTAGES)[:, None].expand_as(mask).contiguous()
    with torch.no_grad():
        current = lora.token_logprobs(model, ids)
    offsets = torch.tensor(lora.OFFSETS)[torch.arange(mask.numel()) % len(lora.OFFSETS)].reshape(mask.shape)
    old = current + offsets * mask
    model.zero_grad()
    loss = lora.losses(model, ids, mask, advantages, old)[loss_name]
    loss.backward()
    # named_parameters lists a tied head once (under the embedding's name), as the checkpoint does.
    grads = {pname: p.grad.detach().to(torch.float32).contiguous() for pname, p in model.named_parameters()}
    save_file(grads, os.path.join(folder, "grads.safetensors"), metadata={"format": "pt"})
    reference = {
        "base": name,
        "loss": loss_name,
        "value": loss.item(),
        "ids": lora.IDS,
        "mask": lora.MASK,
        "advantages": lora.b64(advantages),
        "old_logprobs": lora.b64(old),
        "clip": [lora.CLIP_LOW, lora.CLIP_HIGH],
    }
    with open(os.path.join(folder, "reference.json"), "w") as f:
        json.dump(reference, f, indent=1)
    largest = max(g.abs().max().item() for g in grads.values())
    print(name, loss_name, round(loss.item(), 6), len(grads), "tensors, largest |grad|", largest)


def main():
    for name, loss_name in CASES:
        build(name, loss_name)


if __name__ == "__main__":
    sys.exit(main())
