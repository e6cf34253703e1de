"""helpers.lessons.variance: one-pass, two-pass and Welford/Chan against float64 references."""

from __future__ import annotations

import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

from helpers.lessons.variance import (
    ALGORITHMS,
    adversarial_rows,
    chan_merge,
    error_table,
    layer_norm_error,
    one_pass_var,
    row_sum,
    two_pass_var,
    variance_errors,
    welford_var,
)


@pytest.mark.parametrize("name", list(ALGORITHMS))
@pytest.mark.parametrize("width", [1, 7, 64, 1000])
def test_all_agree_with_torch_in_float64_on_ordinary_rows(name, width):
    x = torch.randn(5, width, dtype=torch.float64, generator=torch.Generator().manual_seed(width))
    mean, var = ALGORITHMS[name](x)
    torch.testing.assert_close(mean, x.mean(-1))
    torch.testing.assert_close(var, x.var(-1, correction=0), rtol=1e-10, atol=1e-12)


@given(width=st.integers(1, 300), block=st.integers(1, 40), seed=st.integers(0, 2**16))
@settings(max_examples=40, deadline=None)
def test_welford_with_any_block_size_matches_float64(width, block, seed):
    x = 3.0 + torch.randn(3, width, dtype=torch.float64, generator=torch.Generator().manual_seed(seed))
    mean, var = welford_var(x, block=block)
    torch.testing.assert_close(mean, x.mean(-1))
    torch.testing.assert_close(var, x.var(-1, correction=0), rtol=1e-9, atol=1e-12)


def test_chan_merge_of_two_halves_equals_the_whole():
    x = torch.randn(4, 37, dtype=torch.float64, generator=torch.Generator().manual_seed(1)) + 50
    a, b = x[:, :10], x[:, 10:]

    def stats(t):
        return (torch.full((4,), float(t.shape[-1]), dtype=torch.float64), t.mean(-1),
                ((t - t.mean(-1, keepdim=True)) ** 2).sum(-1))

    n, mean, m2 = chan_merge(*stats(a), *stats(b))
    assert torch.equal(n, torch.full((4,), 37.0, dtype=torch.float64))
    torch.testing.assert_close(mean, x.mean(-1))
    torch.testing.assert_close(m2 / n, x.var(-1, correction=0))


def test_one_pass_cancels_catastrophically_on_a_large_mean_and_the_others_do_not():
    errors = variance_errors(adversarial_rows("offset"), torch.float32)  # mean 1e4, std 1e-2
    assert errors["one-pass E[x²]−E[x]²"] > 1.0  # more than 100% wrong
    assert errors["two-pass"] < 0.05
    assert errors["Welford + Chan"] < 0.05


def test_one_pass_can_return_a_negative_variance():
    _, var = one_pass_var(adversarial_rows("offset").float())
    assert (var < 0).any()


def test_constant_rows_have_zero_variance_except_in_one_pass():
    x = adversarial_rows("constant").float()
    assert torch.equal(welford_var(x)[1], torch.zeros(8))
    assert two_pass_var(x)[1].abs().max() < 1e-6
    assert one_pass_var(x)[1].abs().max() > 1.0


@pytest.mark.parametrize("dtype", [torch.float16, torch.bfloat16])
def test_half_inputs_accumulate_in_float32(dtype):
    x = adversarial_rows("standard").to(dtype)
    for algorithm in ALGORITHMS.values():
        mean, var = algorithm(x)
        assert mean.dtype == var.dtype == torch.float32
    assert max(variance_errors(adversarial_rows("standard"), dtype).values()) < 1e-5


def test_layer_norm_error_shows_the_nan_of_a_negative_variance():
    x64 = adversarial_rows("offset", rows=8, width=256)  # the widget's rows: the last one goes negative
    assert layer_norm_error(x64, torch.float32, 1e-5, "one-pass E[x²]−E[x]²").isnan().any()
    assert layer_norm_error(x64, torch.float32, 1e-5, "Welford + Chan").max() < 0.2
    assert layer_norm_error(adversarial_rows("standard"), torch.float32, 1e-5, "two-pass").max() < 1e-5


def test_error_table_covers_every_input_and_dtype():
    table = error_table()
    assert len(table) == 9
    assert list(table.columns) == ["rounding the input", *ALGORITHMS]
    # float16 cannot hold 1e4 + 1e-2 z: rounding the input destroys the variance (100% lost).
    assert table.loc[("offset", "float16"), "rounding the input"] == pytest.approx(1.0)


@pytest.mark.parametrize("width", [1, 5, 16, 17, 256, 1000])
@pytest.mark.parametrize("lanes", [1, 4, 16])
def test_row_sum_adds_in_the_documented_order(width, lanes):
    import numpy as np

    x = 1e4 + torch.randn(3, width, generator=torch.Generator().manual_seed(width)).float()
    expected = []
    for row in x.numpy():  # float32 scalars: one IEEE addition at a time, in row_sum's order
        row = np.concatenate([row, np.zeros(-width % lanes, np.float32)])
        acc = row[:lanes].copy()
        for start in range(lanes, row.size, lanes):
            acc = (acc + row[start:start + lanes]).astype(np.float32)
        while acc.size > 1:
            acc = (acc[:acc.size // 2] + acc[acc.size // 2:]).astype(np.float32)
        expected.append(acc[0])
    assert torch.equal(row_sum(x, lanes=lanes), torch.tensor(expected))
    torch.testing.assert_close(row_sum(x.double(), lanes=lanes), x.double().sum(-1))


def test_error_table_digits_are_fixed():
    """The numbers deep dive 14 prints: exact on every CPU, since row_sum fixes the order."""
    table = error_table()
    assert table.loc[("constant", "float32"), "one-pass E[x²]−E[x]²"] == 16.0  # steps of 8 near 1e8
    assert f"{table.loc[('offset', 'float32'), 'one-pass E[x²]−E[x]²']:.1e}" == "1.8e+05"
    assert f"{table.loc[('offset', 'float32'), 'two-pass']:.1e}" == "4.8e-03"


def test_exercises_accept_the_right_answer_and_name_each_mistake():
    from helpers.exercises.checking import _REGISTRY
    from helpers.exercises.numerics import check_chan_merge_m2, check_layer_norm_backward

    def dx(x, dy, eps):
        mean = x.mean(-1, keepdim=True)
        rstd = ((x - mean) ** 2).mean(-1, keepdim=True).add(eps).rsqrt()
        x_hat = (x - mean) * rstd
        return rstd * (dy - dy.mean(-1, keepdim=True) - x_hat * (dy * x_hat).mean(-1, keepdim=True))

    assert check_layer_norm_backward(dx)
    handed_in = check_chan_merge_m2(lambda na, ma, sa, nb, mb, sb: chan_merge(na, ma, sa, nb, mb, sb)[2])
    assert not handed_in and "hands in the answer" in handed_in.message
    assert check_chan_merge_m2(lambda na, ma, sa, nb, mb, sb: sa + sb + (mb - ma) ** 2 * na * nb / (na + nb))
    for name, check_fn in (("layer_norm_backward", check_layer_norm_backward),
                           ("chan_merge_m2", check_chan_merge_m2)):
        for hint, wrong in _REGISTRY[name].mistakes.items():
            verdict = check_fn(wrong)
            assert not verdict and hint in verdict.message


def test_welford_is_stable_but_less_accurate_than_two_pass_on_offset_float32_rows():
    # what welford_var's docstring and deep dive 14 say: both far from the one-pass error, and
    # Welford's running mean, rounded at every update, costs it accuracy against two-pass
    errors = error_table(dtypes=(torch.float32,)).loc[("offset", "float32")]
    assert errors["Welford + Chan"] < 0.05 and errors["two-pass"] < 0.05
    assert errors["Welford + Chan"] > 4 * errors["two-pass"]
    doc = " ".join(welford_var.__doc__.split())
    assert f"{errors['Welford + Chan']:.1e}".replace("e-0", "e-") + " against two-pass's" in doc
    assert f"two-pass's {errors['two-pass']:.1e}".replace("e-0", "e-") in doc
