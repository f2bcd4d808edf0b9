"""What the bench's PyTorch references need from PyTorch, in one place: version 1.13 or later
(refused below with a clear message), and causal attention that runs on every such version.

`F.scaled_dot_product_attention` arrived in PyTorch 2.0; Debian 12's `python3-torch` is 1.13.
Where it is missing, `attention` computes the same maths explicitly: softmax(q·kᵀ/√K + mask)·v,
with SDPA's causal mask (top-left aligned: query i sees keys 0 … i). Setting
AGENTRL_BENCH_EXPLICIT_ATTENTION=1 forces the explicit path on any version (the unit test does,
to check both paths agree).
"""

import math
import os
import sys

import torch
import torch.nn.functional as F

MINIMUM = (1, 13)


def version_tuple(text):
    """'2.3.1+cpu' → (2, 3); '1.13.0a0+git' → (1, 13)."""
    parts = []
    for piece in text.split("+")[0].split(".")[:2]:
        digits = "".join(ch for ch in piece if ch.isdigit())
        parts.append(int(digits or 0))
    return tuple(parts)


def require_torch():
    """Exits with status 2 and a message naming the version when PyTorch is older than 1.13."""
    found = version_tuple(torch.__version__)
    if found < MINIMUM:
        sys.stderr.write(
            f"bench: PyTorch {torch.__version__} is too old for the references: they need "
            f"PyTorch >= {MINIMUM[0]}.{MINIMUM[1]} (Debian 12's python3-torch is 1.13; "
            "or `pip install torch --index-url https://download.pytorch.org/whl/cpu`)\n"
        )
        sys.exit(2)


def use_sdpa():
    forced = os.environ.get("AGENTRL_BENCH_EXPLICIT_ATTENTION", "") not in ("", "0")
    return hasattr(F, "scaled_dot_product_attention") and not forced


def explicit_attention(q, k, v, is_causal):
    """softmax(q kᵀ / √K, causal top-left mask) v: the maths of SDPA without it. q: B×H×L×K, k, v: B×H×S×K."""
    scores = torch.matmul(q, k.transpose(-2, -1)) / math.sqrt(q.shape[-1])
    if is_causal:
        length, keys = q.shape[-2], k.shape[-2]
        visible = torch.ones(length, keys, dtype=torch.bool, device=q.device).tril()
        scores = scores.masked_fill(~visible, float("-inf"))
    return torch.matmul(torch.softmax(scores, dim=-1), v)


def attention(q, k, v, is_causal):
    """Causal (or full) attention: PyTorch's SDPA where it exists, else the same maths explicitly."""
    if use_sdpa():
        return F.scaled_dot_product_attention(q, k, v, is_causal=is_causal)
    return explicit_attention(q, k, v, is_causal)
