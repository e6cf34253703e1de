"""helpers.lessons.param_grad_reduction: dgamma and dbeta as block partial sums, then a second reduction."""

from __future__ import annotations

import math

import pytest
import torch
import torch.nn.functional as F

from helpers.lessons.param_grad_reduction import (
    block_partial_sums,
    column_sum_bound,
    column_sum_errors,
    layer_norm_param_grads,
    sequential_column_sum,
    two_stage_column_sum,
)


def torch_param_grads(x, dy, shape, eps=1e-5):
    x = x.detach().clone().requires_grad_()
    w = torch.randn(shape, dtype=x.dtype, requires_grad=True)
    b = torch.randn(shape, dtype=x.dtype, requires_grad=True)
    F.layer_norm(x, shape, w, b, eps).backward(dy)
    return w.grad, b.grad


@pytest.mark.parametrize("rows,block_rows", [(1, 1), (7, 3), (64, 64), (65, 8), (100, 1000), (37, 1)])
def test_two_stage_equals_the_one_shot_sum_in_float64(rows, block_rows):
    values = torch.randn(rows, 5, generator=torch.Generator().manual_seed(rows), dtype=torch.float64)
    torch.testing.assert_close(two_stage_column_sum(values, block_rows), values.sum(0), rtol=1e-13, atol=1e-13)
    torch.testing.assert_close(sequential_column_sum(values), values.sum(0), rtol=1e-13, atol=1e-13)


def test_partial_sums_are_the_blocks_column_sums():
    values = torch.arange(7 * 3, dtype=torch.float64).reshape(7, 3)
    partials = block_partial_sums(values, 3)
    assert partials.shape == (3, 3)  # ceil(7 / 3) blocks, the last one of a single row
    expected = torch.stack([values[0:3].sum(0), values[3:6].sum(0), values[6:7].sum(0)])
    assert torch.equal(partials, expected)  # small integers: exact in any order


@pytest.mark.parametrize("shape,normalized,block_rows", [((16, 32), (32,), 4), ((3, 5, 8), (8,), 2),
                                                          ((4, 6, 10), (6, 10), 3), ((1, 9), (9,), 7)])
def test_param_grads_match_torchs_layer_norm_backward_float64(shape, normalized, block_rows):
    g = torch.Generator().manual_seed(0)
    x = 3 + 2 * torch.randn(shape, generator=g, dtype=torch.float64)
    dy = torch.randn(shape, generator=g, dtype=torch.float64)
    dgamma, dbeta = layer_norm_param_grads(x, dy, normalized, block_rows=block_rows)
    ref_gamma, ref_beta = torch_param_grads(x, dy, normalized)
    torch.testing.assert_close(dgamma, ref_gamma, rtol=1e-12, atol=1e-12)
    torch.testing.assert_close(dbeta, ref_beta, rtol=1e-12, atol=1e-12)


def test_param_grads_in_float32_and_bfloat16_match_torch_within_their_precision():
    g = torch.Generator().manual_seed(1)
    x, dy = torch.randn(256, 64, generator=g), torch.randn(256, 64, generator=g)
    dgamma, dbeta = layer_norm_param_grads(x, dy, (64,), block_rows=16)
    ref_gamma, ref_beta = torch_param_grads(x, dy, (64,))
    torch.testing.assert_close(dgamma, ref_gamma, rtol=1e-5, atol=1e-4)
    torch.testing.assert_close(dbeta, ref_beta, rtol=1e-5, atol=1e-4)
    half = layer_norm_param_grads(x.bfloat16(), dy.bfloat16(), (64,))
    assert all(t.dtype == torch.bfloat16 for t in half)
    ref64 = torch_param_grads(x.bfloat16().double(), dy.bfloat16().double(), (64,))
    for mine, ref in zip(half, ref64, strict=True):
        torch.testing.assert_close(mine.double(), ref, rtol=2e-2, atol=0.3)


def test_float32_errors_stay_within_the_n_eps_bounds_and_two_stage_is_smaller():
    table = column_sum_errors(rows=4096, columns=32, block_rows=64)
    assert (table["max error"] <= table["bound"]).all()
    u = torch.finfo(torch.float32).eps / 2
    assert table["bound"].iloc[0] == pytest.approx(4095 * u / (1 - 4095 * u), rel=1e-9)
    assert table["additions per value"].tolist() == [4095, 63 + 63]
    sequential, two_stage = table["median error"]
    assert two_stage < sequential


def test_column_sum_bound_holds_for_the_sequential_sum():
    values = torch.rand(2000, 8, generator=torch.Generator().manual_seed(2))
    error = (sequential_column_sum(values).double() - values.double().sum(0)).abs()
    assert (error <= column_sum_bound(values, 1999)).all()


def test_the_sums_have_the_same_bits_whatever_the_thread_count():
    values = torch.randn(1000, 16, generator=torch.Generator().manual_seed(3))
    threads = torch.get_num_threads()
    try:
        torch.set_num_threads(1)
        one = two_stage_column_sum(values, 10)
        torch.set_num_threads(max(2, threads))
        assert torch.equal(two_stage_column_sum(values, 10), one)
    finally:
        torch.set_num_threads(threads)


def test_bad_values_and_inputs_are_named():
    with pytest.raises(RuntimeError, match="normalized_shape"):  # the library's check
        layer_norm_param_grads(torch.zeros(4, 2), torch.zeros(4, 2), (3,))
    assert math.isfinite(column_sum_bound(torch.ones(3, 1), 2).item())
