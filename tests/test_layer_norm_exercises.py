"""LayerNorm by hand, the formula piece by piece (helpers.exercises.layer_norm: the biased variance
of deep dive 14, the output variance, and core notebook 00's my_layer_norm): a right answer passes, each usual
slip gets its own hint."""

from __future__ import annotations

import torch

from helpers.exercises.layer_norm import (
    check_biased_variance,
    check_layer_norm_last_dim,
    check_output_variance,
)


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


def test_layer_norm_last_dim_catches_a_hard_coded_eps():
    def right(x, gamma, beta, eps=1e-5):
        mean = x.mean(-1, keepdim=True)
        var = ((x - mean) ** 2).mean(-1, keepdim=True)
        return (x - mean) / torch.sqrt(var + eps) * gamma + beta

    def hard_coded(x, gamma, beta, eps=1e-5):  # a planted slip: ignores the eps it is given
        mean = x.mean(-1, keepdim=True)
        var = ((x - mean) ** 2).mean(-1, keepdim=True)
        return (x - mean) / torch.sqrt(var + 1e-5) * gamma + beta

    assert check_layer_norm_last_dim(right)
    verdict = check_layer_norm_last_dim(hard_coded)
    assert not verdict and "uses 1e-5 whatever eps is passed" in repr(verdict).split("Hint:")[1]
    assert verdict.table["ok"].tolist() == [True] * 6 + [False]  # only the case that passes eps catches it


def test_layer_norm_last_dim_names_a_solution_that_changes_its_input_in_place():
    def in_place(x, gamma, beta, eps=1e-5):  # a planted slip: right values, but the caller's x is spoiled
        mean = x.mean(-1, keepdim=True)
        x -= mean
        return x / torch.sqrt((x**2).mean(-1, keepdim=True) + eps) * gamma + beta

    x = torch.randn(3, 4)
    kept = x.clone()
    verdict = check_layer_norm_last_dim(in_place)
    assert not verdict and "changed its argument 1 in place" in verdict.message and "x -= mean" in verdict.message
    assert verdict.table["close"].all() and not verdict.table["ok"].any()  # every value right, every case failed
    assert torch.equal(x, kept)  # a tensor of the learner's own is not touched by the check
