"""A random Qwen3 checkpoint at SmolLM2-135M's size (30 layers, d 576, 9 heads / 3 KV heads, FFN
1536, vocabulary 49152, tied embeddings; 134.5M parameters, float32), or with `0.6b` at
Qwen3-0.6B's (28 layers, d 1024, 16 heads / 8 KV heads of 128, FFN 3072, vocabulary 151936, tied;
596M parameters), with the qwen3-chat fixture's tokenizer, chat template and generation config,
for measuring `train rl --policy hf:`'s memory (scripts/hf-train-memory.sh) and the LoRA update's
(scripts/hf-train-memory-update.ts). Random weights: the numbers it gives are memory and time,
never quality.

    /work/pyvenv/bin/python scripts/hf-train-memory-checkpoint.py <out folder> [135m|0.6b]
"""
import sys
import json
import os
import shutil

import torch
from transformers import Qwen3Config, Qwen3ForCausalLM
OUT = sys.argv[1]
src = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "src", "policy", "hf", "fixtures", "qwen3-chat")
cfg = json.load(open(f"{src}/config.json"))
SIZES = {
    "135m": dict(hidden_size=576, intermediate_size=1536, num_hidden_layers=30, num_attention_heads=9,
                 num_key_value_heads=3, head_dim=64, vocab_size=49152),
    "0.6b": dict(hidden_size=1024, intermediate_size=3072, num_hidden_layers=28, num_attention_heads=16,
                 num_key_value_heads=8, head_dim=128, vocab_size=151936),
}
cfg.update(SIZES[sys.argv[2] if len(sys.argv) > 2 else "135m"], tie_word_embeddings=True,
           max_position_embeddings=2048)
cfg.pop("layer_types", None)
config = Qwen3Config(**{k: v for k, v in cfg.items() if k not in ("architectures", "transformers_version")})
torch.manual_seed(0)
model = Qwen3ForCausalLM(config).to(torch.float32)
print(sum(p.numel() for p in model.parameters()) / 1e6, "M params")
model.save_pretrained(OUT, safe_serialization=True)
for f in ["chat_template.jinja", "tokenizer.json", "tokenizer_config.json", "generation_config.json"]:
    shutil.copy(f"{src}/{f}", f"{OUT}/{f}")
