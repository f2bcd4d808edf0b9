"""The references' attention fallback against PyTorch's SDPA (run where torch >= 2.0 is installed:
`python3 bench/torch/test_torch_compat.py`): the explicit path must give the same numbers, for a
prefill (causal, queries = keys), one decoded token over a cache, and a prefill after a cache;
and the version check must parse the version strings PyTorch builds carry. Not part of CI (no
PyTorch there); docs/performance.md says when it was last run."""

import unittest

import torch
import torch.nn.functional as F

from torch_compat import MINIMUM, explicit_attention, version_tuple


class ExplicitAttention(unittest.TestCase):
    def check(self, length, keys, is_causal):
        generator = torch.Generator().manual_seed(length * 100 + keys)
        q = torch.randn(2, 4, length, 32, generator=generator)
        k = torch.randn(2, 4, keys, 32, generator=generator)
        v = torch.randn(2, 4, keys, 32, generator=generator)
        expected = F.scaled_dot_product_attention(q, k, v, is_causal=is_causal)
        got = explicit_attention(q, k, v, is_causal)
        self.assertEqual(got.shape, expected.shape)
        self.assertLess((got - expected).abs().max().item(), 1e-5)

    def test_prefill_is_causal(self):
        self.check(16, 16, True)

    def test_one_token_over_a_cache_sees_every_key(self):
        self.check(1, 40, False)

    def test_causal_with_more_keys_is_top_left_aligned_like_sdpa(self):
        self.check(3, 7, True)

    def test_the_mask_is_not_a_no_op(self):
        q = torch.zeros(1, 1, 2, 4)
        k = torch.zeros(1, 1, 2, 4)
        v = torch.tensor([[[[1.0] * 4, [3.0] * 4]]])
        # causal: the first query sees only the first value; without the mask, the mean of both
        self.assertEqual(explicit_attention(q, k, v, True)[0, 0, 0, 0].item(), 1.0)
        self.assertEqual(explicit_attention(q, k, v, False)[0, 0, 0, 0].item(), 2.0)


class Versions(unittest.TestCase):
    def test_parses_build_suffixes(self):
        self.assertEqual(version_tuple("2.3.1+cpu"), (2, 3))
        self.assertEqual(version_tuple("1.13.0a0+git"), (1, 13))
        self.assertEqual(version_tuple("1.12.1"), (1, 12))

    def test_minimum_is_1_13(self):
        self.assertLess(version_tuple("1.12.1"), MINIMUM)
        self.assertGreaterEqual(version_tuple("1.13.1"), MINIMUM)


if __name__ == "__main__":
    unittest.main()
