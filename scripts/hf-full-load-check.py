"""Loads the fully fine-tuned `model/` folders of scripts/hf-full-load-check.ts's runs (<dir>/rl,
<dir>/sft) with transformers' AutoModelForCausalLM.from_pretrained (the dtype its config.json
says) and writes their logits on fixed ids to <dir>/torch.json, for that script's `compare`.

    /work/pyvenv/bin/python scripts/hf-full-load-check.py <dir>
"""

import json
import os
import sys

import torch
from transformers import AutoModelForCausalLM

folder = sys.argv[1]
ids = torch.tensor([[(i * 37) % 400 for i in range(48)]])
out = {}
for run in ["rl", "sft"]:
    model = AutoModelForCausalLM.from_pretrained(os.path.join(folder, run, "model")).eval()
    with torch.no_grad():
        out[run] = model(ids).logits[0].flatten().tolist()
    print(run, "loaded:", type(model).__name__, next(model.parameters()).dtype)
with open(os.path.join(folder, "torch.json"), "w") as f:
    json.dump(out, f)
