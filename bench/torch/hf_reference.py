"""transformers' side of `npm run bench -- --only hf` (bench/hf.ts).

    python bench/torch/hf_reference.py make --out DIR
        writes the two random checkpoints (save_pretrained, float32) the engine loads too:
        DIR/qwen3-30m (Qwen3, ~28M parameters) and DIR/smollm2-135m (SmolLM2-135M's Llama shape)
    python bench/torch/hf_reference.py time --out DIR --rows B --prompt P --new N --score-rows R --score-len T
        prints one JSON line per checkpoint: greedy sampling tokens/s (B rows, P-token prompts,
        N new tokens each, generate() with its KV cache) and scoring tokens/s (log-probs of R rows
        of T tokens), the best of 3 timed runs after a warm-up, at PyTorch's faster of 1 and 2
        threads (--threads: on a busy 2-core machine 2 threads were several times slower at
        decoding than 1); PyTorch CPU, SDPA attention, float32.
"""

import argparse
import json
import os
import time

import torch
from transformers import LlamaConfig, LlamaForCausalLM, Qwen3Config, Qwen3ForCausalLM

CONFIGS = {
    "qwen3-30m": (
        Qwen3ForCausalLM,
        dict(
            vocab_size=32000,
            hidden_size=384,
            num_hidden_layers=10,
            num_attention_heads=6,
            num_key_value_heads=2,
            head_dim=64,
            intermediate_size=1024,
            max_position_embeddings=4096,
            tie_word_embeddings=True,
        ),
        Qwen3Config,
    ),
    "smollm2-135m": (
        LlamaForCausalLM,
        dict(
            vocab_size=49152,
            hidden_size=576,
            num_hidden_layers=30,
            num_attention_heads=9,
            num_key_value_heads=3,
            intermediate_size=1536,
            max_position_embeddings=8192,
            rope_theta=100000.0,
            tie_word_embeddings=True,
        ),
        LlamaConfig,
    ),
}


def make(out):
    for name, (cls, kw, config_cls) in CONFIGS.items():
        torch.manual_seed(0)
        model = cls(config_cls(bos_token_id=1, eos_token_id=2, **kw))
        model.save_pretrained(os.path.join(out, name))
        print(json.dumps({"name": name, "params": sum(p.numel() for p in model.parameters())}))


def best_time(fn, runs=3):
    fn()
    times = []
    for _ in range(runs):
        start = time.perf_counter()
        fn()
        times.append(time.perf_counter() - start)
    return min(times)


def timings(out, args):
    threads = [int(t) for t in args.threads.split(",")]
    for name, (cls, _, _) in CONFIGS.items():
        model = cls.from_pretrained(os.path.join(out, name), dtype=torch.float32, attn_implementation="sdpa").eval()
        vocab = model.config.vocab_size
        g = torch.Generator().manual_seed(1)
        prompts = torch.randint(3, vocab, (args.rows, args.prompt), generator=g)
        scored = torch.randint(3, vocab, (args.score_rows, args.score_len), generator=g)

        def sample():
            with torch.no_grad():
                model.generate(
                    prompts,
                    attention_mask=torch.ones_like(prompts),
                    max_new_tokens=args.new,
                    min_new_tokens=args.new,
                    do_sample=False,
                    pad_token_id=0,
                )

        def score():
            with torch.no_grad():
                logits = model(scored).logits[:, :-1]
                logp = torch.log_softmax(logits, -1).gather(-1, scored[:, 1:, None])
                return logp.sum().item()

        best = {}
        for n in threads:
            torch.set_num_threads(n)
            for kind, fn in (("sample", sample), ("score", score)):
                seconds = best_time(fn)
                if kind not in best or seconds < best[kind][0]:
                    best[kind] = (seconds, n)
        print(
            json.dumps(
                {
                    "name": name,
                    "sample_tokens_per_s": args.rows * args.new / best["sample"][0],
                    "sample_threads": best["sample"][1],
                    "score_tokens_per_s": args.score_rows * args.score_len / best["score"][0],
                    "score_threads": best["score"][1],
                }
            ),
            flush=True,
        )


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("command", choices=["make", "time"])
    parser.add_argument("--out", required=True)
    parser.add_argument("--rows", type=int, default=8)
    parser.add_argument("--prompt", type=int, default=32)
    parser.add_argument("--new", type=int, default=64)
    parser.add_argument("--score-rows", type=int, default=4)
    parser.add_argument("--score-len", type=int, default=128)
    parser.add_argument("--threads", default="1,2")
    args = parser.parse_args()
    if args.command == "make":
        make(args.out)
    else:
        timings(args.out, args)


if __name__ == "__main__":
    main()
