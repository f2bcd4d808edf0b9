"""The engine bench's PyTorch reference: the same model and the same three workloads as
bench/engine.ts, in eager PyTorch on the CPU, so the bench can report our throughput as a ratio.

Model (REFERENCE_CONFIG in src/policy/embedded/config.ts): vocabulary 256, width 128, 4 pre-LN
blocks of 4 heads, feed-forward 512 with the tanh GELU, learned positions, untied output head.
Workloads, each timed as the median over repeats after warm-up:
  train   one Adam step on next-token cross-entropy, B=32, T=64, sequences x' = 5x + 3 mod 256
  score   per-token log-probs of B=64 sequences of T=64 (no gradient)
  sample  B=64 rows: prefill a 16-token prompt, then 48 tokens one at a time from a KV cache,
          temperature 0.8
Prints one JSON line: train_tok_per_s, logprobs_B64_T64_ms, sample_kvcache_tok_per_s (the keys
bench/engine.ts reads) and a few more for the record.

Needs PyTorch 1.13 or later (torch_compat.py: older versions are refused, and without
`scaled_dot_product_attention`, before 2.0, attention is computed explicitly): `apt-get install python3-torch libopenblas0-pthread` (Debian) or
`pip install torch --index-url https://download.pytorch.org/whl/cpu`. The bench runs it as
`OPENBLAS_NUM_THREADS=2 python3 bench/torch/engine_reference.py --threads 1`: on two cores one
intra-op thread with a two-thread BLAS was PyTorch's fastest setting.
"""

import argparse
import json
import math
import statistics
import time

import torch
import torch.nn.functional as F
from torch import nn

from torch_compat import attention, require_torch

require_torch()

VOCAB, WIDTH, LAYERS, HEADS, HIDDEN = 256, 128, 4, 4, 512
HEAD_WIDTH = WIDTH // HEADS


class Block(nn.Module):
    """Pre-LN attention and feed-forward; `cache` (keys, values, position) switches to decoding."""

    def __init__(self):
        super().__init__()
        self.norm_attention = nn.LayerNorm(WIDTH)
        self.qkv = nn.Linear(WIDTH, 3 * WIDTH, bias=False)
        self.out = nn.Linear(WIDTH, WIDTH, bias=False)
        self.norm_mlp = nn.LayerNorm(WIDTH)
        self.up = nn.Linear(WIDTH, HIDDEN)
        self.down = nn.Linear(HIDDEN, WIDTH)

    def attention(self, x, cache):
        batch, time_steps, _ = x.shape
        # B=batch, T=time, H=heads, K=head width
        q, k, v = (
            part.view(batch, time_steps, HEADS, HEAD_WIDTH).transpose(1, 2)
            for part in self.qkv(x).split(WIDTH, dim=-1)
        )
        if cache is None:
            y = attention(q, k, v, is_causal=True)
        else:
            keys, values, position = cache
            keys[:, :, position : position + time_steps] = k
            values[:, :, position : position + time_steps] = v
            end = position + time_steps
            # a prefill attends causally within the prompt; one decoded token attends to all
            y = attention(
                q, keys[:, :, :end], values[:, :, :end], is_causal=time_steps > 1
            )
        return self.out(y.transpose(1, 2).reshape(batch, time_steps, WIDTH))

    def forward(self, x, cache=None):
        x = x + self.attention(self.norm_attention(x), cache)
        return x + self.down(F.gelu(self.up(self.norm_mlp(x)), approximate="tanh"))


class Model(nn.Module):
    def __init__(self, context):
        super().__init__()
        self.tokens = nn.Embedding(VOCAB, WIDTH)
        self.positions = nn.Embedding(context, WIDTH)
        self.blocks = nn.ModuleList(Block() for _ in range(LAYERS))
        self.norm = nn.LayerNorm(WIDTH)
        self.head = nn.Linear(WIDTH, VOCAB, bias=False)

    def forward(self, ids, caches=None, position=0):
        steps = torch.arange(position, position + ids.shape[1])
        x = self.tokens(ids) + self.positions(steps)
        for layer, block in enumerate(self.blocks):
            x = block(x, None if caches is None else (*caches[layer], position))
        return self.head(self.norm(x))


def timed(work, repeats, warmup):
    """Median seconds of `work()` over `repeats` calls after `warmup` untimed ones."""
    for _ in range(warmup):
        work()
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        work()
        times.append(time.perf_counter() - start)
    return statistics.median(times)


def affine_batch(generator, rows, length):
    """Sequences x_{t+1} = 5·x_t + 3 mod V from random starts (what bench/engine.ts trains on)."""
    column = torch.randint(0, VOCAB, (rows, 1), generator=generator)
    columns = [column]
    for _ in range(length):
        column = (column * 5 + 3) % VOCAB
        columns.append(column)
    sequence = torch.cat(columns, dim=1)
    return sequence[:, :-1], sequence[:, 1:]


def bench_train(model, generator):
    optimizer = torch.optim.Adam(model.parameters(), lr=3e-3)
    batches = [affine_batch(generator, 32, 64) for _ in range(4)]
    losses = []

    def step():
        inputs, targets = batches[len(losses) % len(batches)]
        loss = F.cross_entropy(model(inputs).reshape(-1, VOCAB), targets.reshape(-1))
        optimizer.zero_grad(set_to_none=True)
        loss.backward()
        optimizer.step()
        losses.append(loss.item())

    seconds = timed(step, repeats=30, warmup=3)
    return {"train_B32_T64_ms": seconds * 1000, "train_tok_per_s": 32 * 64 / seconds, "train_loss_last": losses[-1]}


@torch.inference_mode()
def bench_score(model, generator):
    ids = torch.randint(0, VOCAB, (64, 64), generator=generator)

    def score():
        log_probs = model(ids)[:, :-1].log_softmax(-1)
        return log_probs.gather(-1, ids[:, 1:, None])

    return {"logprobs_B64_T64_ms": timed(score, repeats=8, warmup=2) * 1000}


@torch.inference_mode()
def bench_sample(model, generator, rows=64, prompt_length=16, new_tokens=48, temperature=0.8):
    prompt = torch.randint(0, VOCAB, (rows, prompt_length), generator=generator)
    context = prompt_length + new_tokens

    def sample():
        caches = [
            (torch.zeros(rows, HEADS, context, HEAD_WIDTH), torch.zeros(rows, HEADS, context, HEAD_WIDTH))
            for _ in range(LAYERS)
        ]
        logits = model(prompt, caches, 0)[:, -1]
        out = []
        for position in range(prompt_length, context):
            token = torch.multinomial((logits / temperature).softmax(-1), 1, generator=generator)
            out.append(token)
            if position + 1 < context:
                logits = model(token, caches, position)[:, -1]
        return torch.cat(out, dim=1)

    seconds = timed(sample, repeats=3, warmup=1)
    return {"sample_kvcache_ms": seconds * 1000, "sample_kvcache_tok_per_s": rows * new_tokens / seconds}


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--threads", type=int, default=1, help="torch intra-op threads")
    args = parser.parse_args()
    torch.set_num_threads(args.threads)
    torch.manual_seed(0)
    generator = torch.Generator().manual_seed(1)
    model = Model(context=64)
    figures = {
        "torch": torch.__version__,
        "threads": torch.get_num_threads(),
        "params": sum(parameter.numel() for parameter in model.parameters()),
    }
    figures.update(bench_train(model, generator))
    model.eval()
    figures.update(bench_score(model, generator))
    figures.update(bench_sample(model, generator))
    print(json.dumps({key: round(value, 2) if isinstance(value, float) and math.isfinite(value) else value for key, value in figures.items()}))


if __name__ == "__main__":
    main()
