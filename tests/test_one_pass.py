"""helpers.speed.one_pass: LayerNorm's and RMSNorm's backward in one pass (a Numba kernel), against
PyTorch's backward kernel and float64 references. (gradcheck through the compiled Functions, which
train with this kernel, is in tests/test_compiled.py.)"""

from __future__ import annotations

import os

import pytest
import torch
import torch.nn.functional as F

from helpers.speed import one_pass


def data(rows, n, dtype, seed=0, offset=3.0):
    g = torch.Generator().manual_seed(seed)
    x = (offset + 2 * torch.randn(rows, n, generator=g, dtype=torch.float64)).to(dtype)
    w = torch.randn(n, generator=g, dtype=torch.float64).to(dtype)
    b = torch.randn(n, generator=g, dtype=torch.float64).to(dtype)
    dy = torch.randn(rows, n, generator=g, dtype=torch.float64).to(dtype)
    return x, w, b, dy


def test_numba_is_installed_here():
    """requirements.txt installs Numba: the one-pass kernels are what runs, not a fallback."""
    assert one_pass.available(torch.float32) and one_pass.available(torch.float64)
    assert not one_pass.available(torch.bfloat16)


@pytest.mark.parametrize("rows,n", [(1, 5), (7, 3), (37, 24), (300, 64), (1000, 130)])
@pytest.mark.parametrize("weighted", [True, False])
def test_layer_norm_backward_equals_torchs_kernel_in_float64(rows, n, weighted):
    x, w, b, dy = data(rows, n, torch.float64, seed=rows + n)
    w = w if weighted else torch.ones_like(w)  # no weight is a weight of ones
    _, mean, rstd = torch.ops.aten.native_layer_norm(x, [n], w, b, 1e-5)
    expected = torch.ops.aten.native_layer_norm_backward(dy, x, [n], mean, rstd, w, b, [True, True, True])
    got = one_pass.layer_norm_backward(x, dy, w if weighted else None, mean, rstd)
    for mine, ref in zip(got, expected, strict=True):
        torch.testing.assert_close(mine, ref, rtol=1e-12, atol=1e-12)


def test_layer_norm_backward_float32_is_as_close_to_float64_as_torchs():
    x, w, b, dy = data(2048, 512, torch.float32)
    _, mean, rstd = torch.ops.aten.native_layer_norm(x, [512], w, b, 1e-5)
    ours = one_pass.layer_norm_backward(x, dy, w, mean, rstd)
    torchs = torch.ops.aten.native_layer_norm_backward(dy, x, [512], mean, rstd, w, b, [True, True, True])
    exact = torch.ops.aten.native_layer_norm_backward(dy.double(), x.double(), [512], mean.double(), rstd.double(),
                                                      w.double(), b.double(), [True, True, True])
    for mine, theirs, ref in zip(ours, torchs, exact, strict=True):
        assert mine.dtype == torch.float32
        # dgamma and dbeta sum 2048 rows; the error bound is the same k*u for both orders of addition
        assert (mine.double() - ref).abs().max() <= 4 * (theirs.double() - ref).abs().max() + 1e-6


def test_rms_norm_backward_equals_autograd_in_float64():
    x, w, _, dy = data(333, 48, torch.float64, offset=0.5)
    xs, ws = x.clone().requires_grad_(), w.clone().requires_grad_()
    expected = torch.autograd.grad(F.rms_norm(xs, (48,), ws, 1e-6), (xs, ws), dy)
    rstd = torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + 1e-6)
    got = one_pass.rms_norm_backward(x, dy, w, rstd)
    for mine, ref in zip(got, expected, strict=True):
        torch.testing.assert_close(mine, ref, rtol=1e-12, atol=1e-12)


@pytest.mark.parametrize("rows,threads,expected", [(0, 2, 1), (1, 2, 1), (5, 2, 5), (10**6, 2, 8), (10**6, 16, 64)])
def test_blocks_for_is_four_per_thread_at_most_one_per_row(rows, threads, expected):
    assert one_pass.blocks_for(rows, threads) == expected


def test_trailing_empty_blocks_add_nothing(monkeypatch):
    """10 rows on 2 threads: 8 blocks of 2 rows, the last 3 empty; the sums are still torch's."""
    monkeypatch.setattr(torch, "get_num_threads", lambda: 2)
    x, w, b, dy = data(10, 6, torch.float64)
    _, mean, rstd = torch.ops.aten.native_layer_norm(x, [6], w, b, 1e-5)
    expected = torch.ops.aten.native_layer_norm_backward(dy, x, [6], mean, rstd, w, b, [True, True, True])
    for mine, ref in zip(one_pass.layer_norm_backward(x, dy, w, mean, rstd), expected, strict=True):
        torch.testing.assert_close(mine, ref, rtol=1e-12, atol=1e-12)


def test_non_finite_values_land_where_torchs_do():
    """No NaN where torch returns numbers, and no number where it returns inf or NaN."""
    x, w, b, dy = data(16, 8, torch.float32)
    dy[3, 2] = float("inf")
    x[5, 1] = float("nan")
    _, mean, rstd = torch.ops.aten.native_layer_norm(x, [8], w, b, 1e-5)
    expected = torch.ops.aten.native_layer_norm_backward(dy, x, [8], mean, rstd, w, b, [True, True, True])
    got = one_pass.layer_norm_backward(x, dy, w, mean, rstd)
    for mine, ref in zip(got, expected, strict=True):
        assert torch.equal(mine.isfinite(), ref.isfinite())
        assert not mine.isfinite().all()


def test_the_kernels_run_on_numbas_own_threads_not_a_second_openmp_runtime():
    # An OpenMP pool beside PyTorch's spins between launches and slowed every later op 10- to 50-fold
    # on 2 cores (a small CNN: 32 s instead of 0.6 s); the module chooses the workqueue layer
    # unless the environment names another.
    expected = os.environ.get("NUMBA_THREADING_LAYER", "workqueue")
    assert one_pass.describe().endswith(f"{expected} threading layer")
