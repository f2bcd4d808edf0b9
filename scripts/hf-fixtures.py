"""Reference fixtures for the Hugging Face checkpoint loader (src/policy/hf/), made by transformers itself.

Builds tiny random checkpoints with transformers (save_pretrained, safetensors) and writes, beside
each, what transformers computes on them: the logits of a fixed batch and a 64-token greedy
continuation. The TypeScript tests read only these committed files, so CI needs no Python.

    /work/pyvenv/bin/python scripts/hf-fixtures.py            # rewrites src/policy/hf/fixtures/
    /work/pyvenv/bin/python scripts/hf-fixtures.py gpt2       # rewrites only the named ones

(any Python with torch 2.x and transformers 5.x works; the weights are seeded, so a rerun with the
same versions writes the same files). Each folder holds config.json, generation_config.json, the
weights (model.safetensors, or shards with model.safetensors.index.json) and reference.json:
{ "ids": [[..]], "logits": base64 float32 [B,T,V], "prompt": [..], "greedy": [64 ids],
  "inv_freq": base64 float32 (the rotary inverse frequencies; empty for GPT-2, which has none),
  "bf16_logits": base64 (bf16 checkpoints only: transformers computing in bfloat16) }.
"""

import base64
import json
import os
import shutil
import sys

import torch
from transformers import (
    GenerationConfig,
    GPT2Config,
    GPT2LMHeadModel,
    LlamaConfig,
    LlamaForCausalLM,
    Qwen2Config,
    Qwen2ForCausalLM,
    Qwen3Config,
    Qwen3ForCausalLM,
)

OUT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "src", "policy", "hf", "fixtures")
IDS = [[5, 17, 200, 3, 99, 41, 7, 250, 12, 64, 1, 33], [9, 9, 140, 2, 77, 180, 31, 8, 255, 100, 4, 60]]
PROMPT = [11, 52, 7, 199, 23, 140, 5, 88]
NEW_TOKENS = 64


def b64(tensor):
    return base64.b64encode(tensor.detach().to(torch.float32).contiguous().numpy().tobytes()).decode()


def small(cls, **kw):
    base = dict(
        vocab_size=256,
        hidden_size=32,
        num_hidden_layers=2,
        num_attention_heads=4,
        num_key_value_heads=2,
        intermediate_size=64,
        max_position_embeddings=256,
        bos_token_id=1,
        eos_token_id=2,
        pad_token_id=0,
    )
    base.update(kw)
    return cls(**base)


def fixtures():
    return {
        # Qwen3: q/k norm, head_dim (16) wider than hidden/heads (8), tied embeddings.
        "qwen3-tied": (Qwen3ForCausalLM, small(Qwen3Config, head_dim=16, tie_word_embeddings=True), {}),
        # Untied, saved in two shards (model.safetensors.index.json).
        "qwen3-untied-sharded": (
            Qwen3ForCausalLM,
            small(Qwen3Config, head_dim=16, tie_word_embeddings=False, rope_theta=1000000.0),
            {"max_shard_size": "40KB"},
        ),
        # Llama 3 with llama3 rope scaling (original context 64: some frequencies are scaled,
        # some smoothed, some kept), saved in bfloat16.
        "llama3-bf16": (
            LlamaForCausalLM,
            small(
                LlamaConfig,
                hidden_size=64,
                num_attention_heads=4,
                num_key_value_heads=1,
                intermediate_size=96,
                rope_theta=500000.0,
                rope_scaling={
                    "rope_type": "llama3",
                    "factor": 8.0,
                    "low_freq_factor": 1.0,
                    "high_freq_factor": 4.0,
                    "original_max_position_embeddings": 64,
                },
                tie_word_embeddings=False,
            ),
            {"dtype": torch.bfloat16},
        ),
        # SmolLM2's shape: Llama, 3 heads over 1 key/value head, tied, rope_theta 100000.
        "smollm2": (
            LlamaForCausalLM,
            small(
                LlamaConfig,
                hidden_size=48,
                num_attention_heads=3,
                num_key_value_heads=1,
                intermediate_size=128,
                rope_theta=100000.0,
                tie_word_embeddings=True,
            ),
            {},
        ),
        # Qwen2.5's shape: Qwen2 (biases on q, k, v), tied, no sliding window.
        "qwen2.5": (
            Qwen2ForCausalLM,
            small(Qwen2Config, rope_theta=1000000.0, tie_word_embeddings=True, use_sliding_window=False),
            {},
        ),
        # GPT-2: learned positions, LayerNorm with biases, fused Conv1D c_attn, gelu_new, tied.
        "gpt2": (
            GPT2LMHeadModel,
            GPT2Config(
                vocab_size=256,
                n_embd=32,
                n_layer=2,
                n_head=4,
                n_positions=128,
                n_inner=None,
                activation_function="gelu_new",
                # No dropout (the lab trains without it): the LoRA fixtures compute gradients in train mode.
                resid_pdrop=0.0,
                embd_pdrop=0.0,
                attn_pdrop=0.0,
                bos_token_id=1,
                eos_token_id=2,
                pad_token_id=0,
            ),
            {},
        ),
    }


def build(name, cls, config, options):
    torch.manual_seed(sum(map(ord, name)))
    model = cls(config).eval()
    # Random init leaves the norms at 1; perturb them so a wrong norm (or a missing q/k norm) shows.
    with torch.no_grad():
        for pname, param in model.named_parameters():
            if "norm" in pname or ".ln_" in pname:
                param.add_(torch.randn_like(param) * 0.2)
            elif pname.endswith(".bias"):
                param.normal_(0, 0.1)
            elif "embed_tokens" in pname or "lm_head" in pname or ".wte." in pname or ".wpe." in pname:
                param.normal_(0, 0.4)
            else:
                param.normal_(0, 0.25)
    folder = os.path.join(OUT, name)
    shutil.rmtree(folder, ignore_errors=True)
    dtype = options.get("dtype", torch.float32)
    model.generation_config = GenerationConfig(
        bos_token_id=1, eos_token_id=[2, 3], pad_token_id=0, do_sample=True, temperature=0.7, top_p=0.8, top_k=20
    )
    model.to(dtype).save_pretrained(folder, max_shard_size=options.get("max_shard_size", "50GB"))
    # The reference is the checkpoint as transformers loads it, computing in float32 (the
    # engine's precision; bf16 weights are widened, the rotary frequencies computed afresh).
    model = cls.from_pretrained(folder, dtype=torch.float32).eval()
    ids = torch.tensor(IDS)
    with torch.no_grad():
        logits = model(ids).logits
        out = model.generate(
            torch.tensor([PROMPT]),
            max_new_tokens=NEW_TOKENS,
            min_new_tokens=NEW_TOKENS,
            do_sample=False,
            eos_token_id=None,
            pad_token_id=0,
        )
    greedy = out[0, len(PROMPT) :].tolist()
    reference = {
        "ids": IDS,
        "logits": b64(logits),
        "prompt": PROMPT,
        "greedy": greedy,
        "inv_freq": b64(model.model.rotary_emb.inv_freq) if hasattr(model, "model") else "",
    }
    if dtype != torch.float32:
        with torch.no_grad():
            reference["bf16_logits"] = b64(cls.from_pretrained(folder, dtype=dtype).eval()(ids).logits)
    with open(os.path.join(folder, "reference.json"), "w") as f:
        json.dump(reference, f)
    print(name, sorted(os.listdir(folder)), "distinct greedy ids:", len(set(greedy)))


def main():
    os.makedirs(OUT, exist_ok=True)
    only = sys.argv[1:]
    for name, (cls, config, options) in fixtures().items():
        if not only or name in only:
            build(name, cls, config, options)


if __name__ == "__main__":
    sys.exit(main())
