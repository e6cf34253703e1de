"""LayerNormFunction for deep dive 14: many shapes against torch, gradcheck, the per-row
properties of dx, and the bytes it saves for backward against torch's kernel."""

from __future__ import annotations

import pytest
import torch
import torch.nn.functional as F
from hypothesis import given, settings
from hypothesis import strategies as st

import helpers
from helpers import LayerNormFunction
from helpers.lessons.memory_and_speed import (
    bytes_moved,
    naive_layer_norm,
    saved_bytes,
    saved_bytes_table,
)


def _leaves(*tensors):
    return [t.detach().clone().requires_grad_() for t in tensors]


@given(lead=st.lists(st.integers(1, 4), min_size=0, max_size=2),
       normalized=st.lists(st.integers(1, 9), min_size=1, max_size=2),
       seed=st.integers(0, 2**16))
@settings(max_examples=30, deadline=None)
def test_equals_torch_forward_and_backward_over_many_shapes(lead, normalized, seed):
    g = torch.Generator().manual_seed(seed)
    shape = (*lead, *normalized)
    x = 2 + 3 * torch.randn(shape, generator=g, dtype=torch.float64)
    w, b = torch.randn(normalized, generator=g, dtype=torch.float64), torch.randn(normalized, generator=g, dtype=torch.float64)
    dy = torch.randn(shape, generator=g, dtype=torch.float64)
    ours, theirs = _leaves(x, w, b), _leaves(x, w, b)
    y1 = LayerNormFunction.apply(*ours[:1], normalized, *ours[1:], 1e-5)
    y2 = F.layer_norm(theirs[0], normalized, theirs[1], theirs[2], 1e-5)
    torch.testing.assert_close(y1, y2)
    y1.backward(dy)
    y2.backward(dy)
    for mine, ref in zip(ours, theirs, strict=True):
        torch.testing.assert_close(mine.grad, ref.grad)


@pytest.mark.parametrize("weight,bias", [(True, True), (True, False), (False, True), (False, False)])
def test_gradcheck_in_float64(weight, bias):
    g = torch.Generator().manual_seed(0)
    x = torch.randn(3, 6, generator=g, dtype=torch.float64, requires_grad=True)
    w = torch.randn(6, generator=g, dtype=torch.float64, requires_grad=True) if weight else None
    b = torch.randn(6, generator=g, dtype=torch.float64, requires_grad=True) if bias else None
    assert torch.autograd.gradcheck(LayerNormFunction.apply, (x, (6,), w, b, 1e-5))


def test_dx_sums_to_zero_and_is_orthogonal_to_x_hat_per_row():
    """sum(dx) = 0 always; dx . x_hat = r (g . x_hat) eps / (var + eps), so 0 when eps = 0."""
    g = torch.Generator().manual_seed(3)
    x = 5 + 2 * torch.randn(16, 32, generator=g, dtype=torch.float64)
    w = torch.randn(32, generator=g, dtype=torch.float64)
    dy = torch.randn(16, 32, generator=g, dtype=torch.float64)
    for eps in (0.0, 1e-5):
        leaf = x.clone().requires_grad_()
        LayerNormFunction.apply(leaf, (32,), w, None, eps).backward(dy)
        dx = leaf.grad
        var = x.var(-1, correction=0)
        x_hat = (x - x.mean(-1, keepdim=True)) * (var + eps).rsqrt().unsqueeze(-1)
        predicted = (var + eps).rsqrt() * (dy * w * x_hat).sum(-1) * eps / (var + eps)
        assert dx.sum(-1).abs().max() < 1e-12
        torch.testing.assert_close((dx * x_hat).sum(-1), predicted, atol=1e-12, rtol=1e-9)
        assert dx.abs().max() > 1e-2
    assert predicted.abs().max() > 1e-9  # with eps > 0 the dot product is small, not zero


@pytest.mark.parametrize("shape", [(64, 256), (4, 8, 32)])
def test_saves_no_more_bytes_than_torchs_kernel(shape):
    g = torch.Generator().manual_seed(0)
    x = torch.randn(shape, generator=g).requires_grad_()
    w, b = torch.randn(shape[-1:], generator=g).requires_grad_(), torch.randn(shape[-1:], generator=g).requires_grad_()
    ours = saved_bytes(LayerNormFunction.apply, x, shape[-1:], w, b)
    theirs = saved_bytes(F.layer_norm, x, shape[-1:], w, b)
    assert ours["new bytes"] <= theirs["new bytes"]
    assert ours["new bytes"] == 2 * x.numel() // shape[-1] * 4  # mean and rstd: one float32 per row each
    composed = saved_bytes(helpers.layer_norm, x, shape[-1:], w, b)
    assert composed["new bytes"] >= x.numel() * 4  # at least one full-size intermediate


def test_saved_bytes_table_orders_the_implementations():
    table = saved_bytes_table()
    new = table["new bytes"]
    assert new["naive composition"] > new["helpers.layer_norm"] > new["LayerNormFunction"]
    assert new["LayerNormFunction"] <= new["torch (F.layer_norm)"]
    assert table.loc["naive composition", "new / x size"] == pytest.approx(3.0, abs=0.01)


def test_naive_composition_is_layer_norm():
    x = torch.randn(4, 10, generator=torch.Generator().manual_seed(0))
    w, b = torch.randn(10), torch.randn(10)
    torch.testing.assert_close(naive_layer_norm(x, (10,), w, b), F.layer_norm(x, (10,), w, b))


def test_bytes_moved_model():
    assert bytes_moved(4096, 1024, 4, "forward") == 2 * 16 * 2**20
    assert bytes_moved(4096, 1024, 4, "forward+backward") == 5 * 16 * 2**20
    assert bytes_moved(4096, 1024, 4, "backward") == 3 * 16 * 2**20
    assert bytes_moved(4096, 1024, 4, "copy") == bytes_moved(4096, 1024, 4, "forward")
