"""A random Qwen3 checkpoint at SmolLM2-135M's size (30 layers, d 576, 9 heads / 3 KV heads, FFN
1536, vocabulary 49152, tied embeddings; 134.5M parameters, float32) with the qwen3-chat
fixture's tokenizer, chat template and generation config, for measuring `train rl --policy hf:`'s
memory (scripts/hf-train-memory.sh). Random weights: the numbers it gives are memory and time,
never quality.

    /work/pyvenv/bin/python scripts/hf-train-memory-checkpoint.py <out folder>
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
cfg.update(hidden_size=576, intermediate_size=1536, num_hidden_layers=30, num_attention_heads=9,
           num_key_value_heads=3, head_dim=64, vocab_size=49152, tie_word_embeddings=True,
           max_position_embeddings=2048)
cfg.pop("layer_types", None)
config = Qwen3Config(**{k: v for k, v in cfg.items() if k not in ("architectures", "transformers_version")})
torch.manual_seed(0)
model = Qwen3ForCausalLM(config).to(torch.float32)
print(sum(p.numel() for p in model.parameters()) / 1e6, "M params")
model.save_pretrained(OUT, safe_serialization=True)
for f in ["chat_template.jinja", "tokenizer.json", "tokenizer_config.json", "generation_config.json"]:
    shutil.copy(f"{src}/{f}", f"{OUT}/{f}")
