r"""Three ways to compute a row's mean and (biased) variance, and how wrong each can be.

- :func:`one_pass_var`: :math:`E[x^2] - E[x]^2`, one sweep over the data. When the mean
  is large next to the spread, both terms are huge and nearly equal, and their
  difference cancels catastrophically: the variance can come out 0 or even negative.
- :func:`two_pass_var`: first the mean, then the mean of the squared centred values.
  Stable, but it reads the data twice.
- :func:`welford_var`: one sweep that keeps a running mean and a running sum of squared
  deviations ``M2`` (Welford 1962), updated per element; blocks are combined with
  :func:`chan_merge` (Chan, Golub and LeVeque 1979), which is how a vectorised or
  multi-threaded kernel (PyTorch's CPU ``RowwiseMoments``) splits a row.

All work along the last dim, in the input's dtype unless ``acc_dtype`` says otherwise
(half inputs are accumulated in float32 by default, as torch does). Their sums are
:func:`row_sum`'s: a vector kernel's order, fixed, so each result has the same bits on
every CPU (torch's own ``sum`` and ``mean`` add in an order set by the CPU's vector width).
"""

from __future__ import annotations

import pandas as pd
import torch
from torch import Tensor


def _acc(x: Tensor, acc_dtype: torch.dtype | None) -> Tensor:
    if acc_dtype is None:
        acc_dtype = torch.float32 if x.dtype in (torch.float16, torch.bfloat16) else x.dtype
    return x.to(acc_dtype)


def row_sum(x: Tensor, lanes: int = 16) -> Tensor:
    """The sum along the last dim, added in one fixed order: the same bits on every CPU.

    The order is a vector kernel's: the row is cut into chunks of ``lanes`` values (16
    float32 values fill an AVX-512 register; an odd tail is padded with zeros, which
    change no sum), ``lanes`` running sums add the chunks one after another, and the
    lanes are then added pairwise. torch's own ``sum`` and ``mean`` use the lanes of the
    CPU they run on (16 with AVX-512, 8 with AVX2, 4 with NEON), so their last bits differ
    between machines; here every step is an elementwise IEEE addition, which rounds the
    same everywhere.
    """
    pad = -x.shape[-1] % lanes
    if pad:
        x = torch.cat([x, x.new_zeros(*x.shape[:-1], pad)], dim=-1)
    chunks = x.reshape(*x.shape[:-1], -1, lanes)
    acc = chunks[..., 0, :]
    for k in range(1, chunks.shape[-2]):  # each lane: a running sum over the chunks
        acc = acc + chunks[..., k, :]
    while acc.shape[-1] > 1:  # then the lanes, pairwise
        half = acc.shape[-1] // 2
        acc = acc[..., :half] + acc[..., half:]
    return acc[..., 0]


def _row_mean(x: Tensor) -> Tensor:
    return row_sum(x) / x.shape[-1]


def one_pass_var(x: Tensor, acc_dtype: torch.dtype | None = None) -> tuple[Tensor, Tensor]:
    """(mean, variance) as ``E[x^2] - E[x]^2``: fast, and wrong when the mean is large."""
    x = _acc(x, acc_dtype)
    mean = _row_mean(x)
    return mean, _row_mean(x * x) - mean * mean


def two_pass_var(x: Tensor, acc_dtype: torch.dtype | None = None) -> tuple[Tensor, Tensor]:
    """(mean, variance) as the mean, then the mean square of ``x - mean``."""
    x = _acc(x, acc_dtype)
    mean = _row_mean(x)
    return mean, _row_mean((x - mean.unsqueeze(-1)) ** 2)


def chan_merge(n_a: Tensor, mean_a: Tensor, m2_a: Tensor,
               n_b: Tensor, mean_b: Tensor, m2_b: Tensor) -> tuple[Tensor, Tensor, Tensor]:
    """Combine the (count, mean, M2) of two blocks into those of their union (Chan et al.).

    ``M2`` is the sum of squared deviations from the block's own mean. The correction term
    uses the difference of the two means, a small number, never a difference of squares.
    """
    n = n_a + n_b
    delta = mean_b - mean_a
    mean = mean_a + delta * (n_b / n)
    m2 = m2_a + m2_b + delta * delta * (n_a * n_b / n)
    return n, mean, m2


def welford_var(x: Tensor, acc_dtype: torch.dtype | None = None, block: int = 8) -> tuple[Tensor, Tensor]:
    """(mean, variance) by Welford's update within blocks of ``block`` columns, merged by Chan's rule.

    The row is cut into contiguous blocks of ``block`` columns (0-7, 8-15, ...). Each block
    is swept element by element, keeping a running mean and ``M2``; the blocks' results are
    then merged pairwise by :func:`chan_merge`. (A SIMD kernel such as PyTorch's
    ``RowwiseMoments`` orders the work differently: each vector lane updates a strided set of
    columns, j, j + L, j + 2L, ... for L lanes, and the lanes are merged at the end.) Slow in
    Python (a loop over the row), and readable.

    It is stable (no cancellation of two large squares), but in float32 it is *less*
    accurate than :func:`two_pass_var` on rows whose mean is large next to their spread:
    the running mean is rounded at every update, and near 1e4 float32's spacing (9.8e-4)
    is a tenth of a 1e-2 std, while the two-pass mean is rounded once. On
    :func:`error_table`'s offset float32 rows its relative error is 2.5e-2 against
    two-pass's 4.8e-3.
    """
    x = _acc(x, acc_dtype)
    width = x.shape[-1]
    stats = []
    for start in range(0, width, block):
        chunk = x[..., start:start + block]
        mean = torch.zeros(x.shape[:-1], dtype=x.dtype)
        m2 = torch.zeros_like(mean)
        for k in range(chunk.shape[-1]):  # Welford: one element at a time
            value = chunk[..., k]
            delta = value - mean
            mean = mean + delta / (k + 1)
            m2 = m2 + delta * (value - mean)
        stats.append((torch.full_like(mean, chunk.shape[-1]), mean, m2))
    while len(stats) > 1:  # a tree of merges, as threads or SIMD lanes would combine
        merged = [chan_merge(*stats[i], *stats[i + 1]) for i in range(0, len(stats) - 1, 2)]
        stats = merged + ([stats[-1]] if len(stats) % 2 else [])
    n, mean, m2 = stats[0]
    return mean, m2 / n


ALGORITHMS = {"one-pass E[x²]−E[x]²": one_pass_var, "two-pass": two_pass_var, "Welford + Chan": welford_var}


def adversarial_rows(kind: str, rows: int = 8, width: int = 1024, seed: int = 0) -> Tensor:
    """Float64 test rows: ``"offset"`` (mean 1e4, std 1e-2), ``"constant"`` (every value 1e4 + 0.1),
    ``"standard"`` (mean 0, std 1)."""
    g = torch.Generator().manual_seed(seed)
    z = torch.randn(rows, width, generator=g, dtype=torch.float64)
    if kind == "offset":
        return 1e4 + 1e-2 * z
    if kind == "constant":
        return torch.full((rows, width), 1e4 + 0.1, dtype=torch.float64)
    return z  # "standard"


def variance_errors(x64: Tensor, dtype: torch.dtype) -> dict[str, float]:
    """Each algorithm's largest relative variance error on ``x64`` cast to ``dtype``, against float64.

    The reference is the two-pass variance of the *rounded* input in float64, so the error
    measured is the algorithm's, not the rounding of the input. For a constant row (true
    variance 0) the error is absolute.
    """
    x = x64.to(dtype)
    _, ref = two_pass_var(x.double())
    scale = ref.abs().clamp_min(torch.finfo(torch.float64).tiny)
    out = {}
    for name, algorithm in ALGORITHMS.items():
        _, var = algorithm(x)
        err = (var.double() - ref).abs()
        out[name] = float(torch.where(ref > 0, err / scale, err).max())
    return out


def layer_norm_error(x64: Tensor, dtype: torch.dtype, eps: float, algorithm: str) -> Tensor:
    """Per-row max |LN(x) - LN64(x)| when LN's variance comes from ``algorithm`` on ``x`` in ``dtype``."""
    x = x64.to(dtype)
    mean, var = ALGORITHMS[algorithm](x)
    y = (x.to(mean.dtype) - mean.unsqueeze(-1)) * torch.rsqrt(var.unsqueeze(-1) + eps)
    xd = x.double()
    ref = torch.nn.functional.layer_norm(xd, (xd.shape[-1],), eps=eps)
    return (y.double() - ref).abs().amax(-1)


def error_table(dtypes=(torch.float32, torch.float16, torch.bfloat16)) -> pd.DataFrame:
    """Relative variance error of each algorithm, per input kind and dtype (rows: kind, dtype).

    ``rounding the input`` is how much the variance changes when the float64 data is
    rounded to ``dtype`` before any algorithm runs; the other columns measure each
    algorithm on the rounded data against float64 arithmetic on the same data.
    """
    rows = []
    for kind in ("standard", "offset", "constant"):
        x64 = adversarial_rows(kind, rows=4, width=256)
        for dtype in dtypes:
            _, exact = two_pass_var(x64)
            _, rounded = two_pass_var(x64.to(dtype).double())
            lost = 0.0 if kind == "constant" else float(((rounded - exact).abs() / exact).max())
            rows.append({"input": kind, "dtype": str(dtype).removeprefix("torch."),
                         "rounding the input": lost, **variance_errors(x64, dtype)})
    return pd.DataFrame(rows).set_index(["input", "dtype"])
