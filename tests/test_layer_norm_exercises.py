"""LayerNorm by hand, the formula piece by piece (helpers.exercises.layer_norm: the biased variance
of deep dive 14 and the output variance of core notebook 00): a right answer passes, each usual
slip gets its own hint."""

from __future__ import annotations

import torch

from helpers.exercises.layer_norm import check_biased_variance, check_output_variance


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
