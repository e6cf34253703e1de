"""The drop-in library on the half-precision cases of deep dive 17 (LayerNorm in your own training
code): rows whose squares overflow float16, a constant row with an ``eps`` that float16 cannot
hold (1e-12), and a bias-free ``LayerNorm`` in float16. ``helpers`` must give what torch's kernel
gives (and the float64 answer, rounded), because both compute in float32."""

from __future__ import annotations

import pytest
import torch
import torch.nn.functional as F
from torch import nn

import helpers

HALF_SPACING_AT_1 = torch.finfo(torch.float16).eps / 2  # float16 rounds to within this near 1


@pytest.mark.parametrize("s", [255.0, 256.0, 1000.0, 60000.0])
def test_rows_whose_squares_overflow_float16_give_the_float64_answer(s):
    x = (s * torch.tensor([-1.0, 1.0, 0.5, -0.5]).repeat(192)).half()  # 768 features, mean 0
    # the squares a hand-written float16 LN would keep: inf from |x - mean| = 256 on
    assert bool(torch.isinf((x.float() ** 2).half()).any()) == (s >= 256)
    centred = x.double() - x.double().mean()
    expected = centred / torch.sqrt((centred**2).mean() + 1e-5)
    ours = helpers.layer_norm(x, (768,))
    assert ours.dtype == torch.float16
    assert (ours.double() - expected).abs().max() <= HALF_SPACING_AT_1
    assert torch.equal(ours, F.layer_norm(x, (768,)))


@pytest.mark.parametrize("eps", [1e-12, 1e-5])
@pytest.mark.parametrize("dtype", [torch.float16, torch.bfloat16])
def test_a_constant_row_is_zero_whatever_eps_float16_can_hold(dtype, eps):
    row = torch.full((2, 768), 3.0, dtype=dtype)
    ours, theirs = helpers.layer_norm(row, (768,), eps=eps), F.layer_norm(row, (768,), eps=eps)
    assert torch.equal(ours, torch.zeros_like(row)) and torch.equal(theirs, torch.zeros_like(row))


def test_a_bias_free_layer_norm_in_float16_matches_torch_with_eps_1e_12():
    torch.manual_seed(0)
    theirs = nn.LayerNorm(64, eps=1e-12, bias=False).half()
    ours = helpers.LayerNorm(64, eps=1e-12, bias=False).half()
    with torch.no_grad():
        theirs.weight.copy_(torch.randn(64))
        ours.weight.copy_(theirs.weight)
    assert list(ours.state_dict()) == list(theirs.state_dict()) == ["weight"]
    # a constant row, then rows whose squares overflow float16
    x = torch.cat([torch.full((1, 64), 2.0), 300 * torch.randn(3, 64)]).half()
    out_ours, out_theirs = ours(x), theirs(x)
    assert out_ours.dtype == out_theirs.dtype == torch.float16
    assert torch.equal(out_ours[0], torch.zeros(64, dtype=torch.float16))
    torch.testing.assert_close(out_ours, out_theirs, atol=2e-3, rtol=2e-3)


def test_a_constant_rows_gradient_overflows_float16_at_eps_1e_12_in_both():
    """dx = (g - mean g) / sqrt(eps) for a constant row (gamma 1): 1e6 times g at eps = 1e-12, beyond
    float16. Neither implementation returns a finite float16 gradient there; both do at 1e-5."""
    upstream = torch.arange(8.0)
    for eps, finite in ((1e-12, False), (1e-5, True)):
        for fn in (F.layer_norm, helpers.layer_norm):
            row = torch.full((8,), 3.0, dtype=torch.float16, requires_grad=True)
            fn(row, (8,), eps=eps).backward(upstream.half())
            assert bool(row.grad.isfinite().all()) == finite, (fn, eps, row.grad)
