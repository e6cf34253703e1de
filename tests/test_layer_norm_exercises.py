"""LayerNorm by hand, the formula piece by piece (helpers.exercises.layer_norm: the biased variance
of deep dive 14, the output variance of core notebook 00, and LayerNorm over the last dim, which no
notebook calls now): a right answer passes, each usual slip gets its own hint."""

from __future__ import annotations

import pytest
import torch
import torch.nn.functional as F

import helpers
from helpers.exercises.layer_norm import (
    check_biased_variance,
    check_layer_norm_last_dim,
    check_output_variance,
)


def layer_norm_by_hand(x, gamma, beta, eps=1e-5):
    mean = x.mean(-1, keepdim=True)
    var = ((x - mean) ** 2).mean(-1, keepdim=True)
    return (x - mean) / torch.sqrt(var + eps) * gamma + beta


@pytest.mark.parametrize("fn", [
    layer_norm_by_hand,
    lambda x, g, b: (x - x.mean(-1, keepdim=True))
    * torch.rsqrt(x.var(-1, correction=0, keepdim=True) + 1e-5) * g + b,
])
def test_right_layer_norms_pass(fn):
    verdict = check_layer_norm_last_dim(fn)
    assert verdict and repr(verdict).startswith("✅ layer_norm_last_dim: all 6 cases match")


@pytest.mark.parametrize("fn", [
    lambda x, g, b: F.layer_norm(x, x.shape[-1:], g, b),
    lambda x, g, b: helpers.layer_norm(x, x.shape[-1:], g, b),
])
def test_torchs_and_the_sets_own_layer_norm_hand_in_the_answer(fn):
    verdict = check_layer_norm_last_dim(fn)
    assert not verdict and "which hands in the answer" in repr(verdict)


def _hat(x, unbiased=False, eps_inside=True, keepdim=True):
    mean = x.mean(-1, keepdim=keepdim)
    var = x.var(-1, unbiased=unbiased, keepdim=keepdim)
    return (x - mean) / (torch.sqrt(var + 1e-5) if eps_inside else var.sqrt() + 1e-5)


LN_SLIPS = {
    "no keepdim": (lambda x, g, b: _hat(x, keepdim=False) * g + b,
                   "4 tokens x 4 features", "keepdim=True"),
    "only centres": (lambda x, g, b: x - x.mean(-1, keepdim=True), "4 tokens x 4 features",
                     "now divide the centred values"),
    "no gamma, beta": (lambda x, g, b: _hat(x), "the lesson's shape", "multiply by gamma, then add beta"),
    "shift then scale": (lambda x, g, b: (_hat(x) + b) * g, "the lesson's shape", "scale first"),
    "swapped": (lambda x, g, b: _hat(x) * b + g, "4 tokens x 4 features", "swapped"),
    "unbiased": (lambda x, g, b: _hat(x, unbiased=True) * g + b, "4 tokens x 4 features", "n - 1"),
    "eps outside": (lambda x, g, b: _hat(x, eps_inside=False) * g + b, "the lesson's shape",
                    "inside the square root"),
    "no eps": (lambda x, g, b: (x - x.mean(-1, keepdim=True))
               / x.var(-1, unbiased=False, keepdim=True).sqrt() * g + b, "4 tokens x 4 features", "add eps"),
    "whole tensor": (lambda x, g, b: (x - x.mean()) / torch.sqrt(x.var(unbiased=False) + 1e-5) * g + b,
                     "4 tokens x 4 features", "whole tensor"),
    "over tokens": (lambda x, g, b: (x - x.mean(0, keepdim=True))
                    / torch.sqrt(x.var(0, unbiased=False, keepdim=True) + 1e-5) * g + b,
                    "4 tokens x 4 features", "BatchNorm's direction"),
    "unknown": (lambda x, g, b: 2 * layer_norm_by_hand(x, g, b), "4 tokens x 4 features",
                "per token: mean and biased variance over the last dim"),
    "raises": (lambda x, g, b: x.no_such_method(), "4 tokens x 4 features",
               "try your function on `torch.randn(2, 3, 4), torch.ones(4), torch.zeros(4)`"),
}


@pytest.mark.parametrize("name", LN_SLIPS)
def test_each_layer_norm_slip_gets_its_hint(name):
    fn, case, hint = LN_SLIPS[name]
    message = repr(check_layer_norm_last_dim(fn))
    assert message.startswith(f"❌ layer_norm_last_dim: case '{case}")
    assert hint in message.split("Hint:")[1]


def test_without_keepdim_a_non_square_case_raises_and_says_so():
    verdict = check_layer_norm_last_dim(LN_SLIPS["no keepdim"][0])
    table = verdict.table
    assert not table.loc["the lesson's shape (2, 3, 4), random gamma and beta", "ok"]


def test_biased_variance():
    assert check_biased_variance(lambda x: ((x - x.mean(-1, keepdim=True)) ** 2).mean(-1))
    assert "hands in the answer" in repr(check_biased_variance(lambda x: x.var(-1, correction=0)))

    def centred_squares(x):
        return (x - x.mean(-1, keepdim=True)) ** 2

    slips = {
        "n - 1": lambda x: centred_squares(x).sum(-1) / (x.shape[-1] - 1),
        "cancels catastrophically": lambda x: (x * x).mean(-1) - x.mean(-1) ** 2,
        "standard deviation": lambda x: centred_squares(x).mean(-1).sqrt(),
        "one variance per token": lambda x: centred_squares(x).mean(-1, keepdim=True),
    }
    for hint, fn in slips.items():
        verdict = check_biased_variance(fn)
        assert not verdict and hint in repr(verdict).split("Hint:")[1], hint


def test_the_one_pass_formula_fails_only_where_it_cancels():
    table = check_biased_variance(lambda x: (x * x).mean(-1) - x.mean(-1) ** 2).table
    assert table["ok"].tolist() == [True, True, False]
    assert table["max_abs_diff"].iloc[2] > 1.0  # the variance is about 1: wrong by more than itself


def test_output_variance():
    assert check_output_variance(lambda var, eps: var / (var + eps))
    slips = {"exactly 1 only when eps is negligible": lambda var, eps: torch.ones_like(var),
             "standard deviation": lambda var, eps: (var / (var + eps)).sqrt(),
             "upside down": lambda var, eps: (var + eps) / var}
    for hint, fn in slips.items():
        verdict = check_output_variance(fn)
        assert not verdict and hint in repr(verdict).split("Hint:")[1], hint
