"""Loads the folder scripts/hf-save-dtype-check.ts wrote with transformers: with dtype="auto" (it must
come up in bfloat16, as its config.json and safetensors say) and in float32, whose logits on the same
fixed ids must equal the engine's (engine.json in the working folder; the engine widens bf16 weights
to float32 too).

    python scripts/hf-save-dtype-check.py <folder>
"""
import json, sys, torch
from transformers import AutoModelForCausalLM
folder = sys.argv[1]
auto = AutoModelForCausalLM.from_pretrained(folder, dtype="auto")
print("dtype='auto' loads as", next(auto.parameters()).dtype)
model = AutoModelForCausalLM.from_pretrained(folder, dtype=torch.float32).eval()
vocab = model.config.vocab_size
ids = torch.tensor([[(i * 37) % vocab for i in range(48)]])
with torch.no_grad():
    torch_logits = model(ids).logits[0].flatten().tolist()
engine = json.load(open("engine.json"))["logits"]
print("largest |logit|", max(abs(x) for x in torch_logits))
print("engine vs transformers (float32 from the bf16 file), max |diff|", max(abs(a - b) for a, b in zip(engine, torch_logits)))
