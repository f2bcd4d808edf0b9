"""Loads a `train rl --policy hf:` run's adapter with PEFT (onto the base its config names) and its merged
folder with transformers, and writes their logits on fixed ids to torch.json in the working folder,
for scripts/hf-lora-load-check.ts to compare with the engine's.

    python scripts/hf-lora-load-check.py <run directory>
"""
import json, sys, torch
from transformers import AutoModelForCausalLM
from peft import PeftModel
run = sys.argv[1]
ids = torch.tensor([[ (i * 37) % 400 for i in range(48) ]])
adapter_cfg = json.load(open(f"{run}/adapter/adapter_config.json"))
base = AutoModelForCausalLM.from_pretrained(adapter_cfg["base_model_name_or_path"], dtype=torch.float32)
peft = PeftModel.from_pretrained(base, f"{run}/adapter").eval()
merged = AutoModelForCausalLM.from_pretrained(f"{run}/model", dtype=torch.float32).eval()
with torch.no_grad():
    a = peft(ids).logits[0].flatten().tolist()
    b = merged(ids).logits[0].flatten().tolist()
json.dump({"peft": a, "merged": b}, open("torch.json", "w"))
print("peft vs merged (torch)", max(abs(x - y) for x, y in zip(a, b)))
