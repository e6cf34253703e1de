r"""LayerNorm's parameter gradients, summed over the rows in two stages, as parallel kernels do.

Every row shares :math:`\gamma` and :math:`\beta`, so their gradients are column sums
over all ``M`` rows of an ``(M, N)`` batch:

.. math::
    d\gamma_j = \sum_{i=1}^{M} dy_{ij}\,\hat{x}_{ij}, \qquad
    d\beta_j = \sum_{i=1}^{M} dy_{ij}

The input gradient :math:`dx` is row-wise: each row needs only its own values, so
threads (or GPU program instances) can take rows independently. The column sums are the
opposite: every row adds into the same ``N`` accumulators. One accumulator per column
would make the threads take turns (serialise) or add with atomic operations. Kernels
split the sum instead:

1. **partial sums**: the rows are cut into blocks of ``block_rows``; each block (one
   thread's or one program instance's share) adds its rows into its own ``N`` partial
   sums, with no sharing;
2. **a second reduction**: the ``ceil(M / block_rows)`` partial sums of each column are
   added together.

PyTorch's CPU kernel (``aten/src/ATen/native/cpu/layer_norm_kernel.cpp``) keeps a
``(2, num_threads, N)`` buffer: each thread adds its rows' :math:`dy\,\hat{x}` and
:math:`dy` while it computes their :math:`dx`, then a second parallel loop over the
columns adds the threads' partials. Triton's LayerNorm tutorial does the same on a GPU:
each program instance accumulates into one of ``GROUP_SIZE_M`` partial buffers (behind a
lock), and a second kernel sums them.

Splitting the sum also changes its rounding. Adding ``M`` values one after another,
each partial result is rounded, and the worst-case error grows with the number of
additions a value goes through: at most :math:`\gamma_{M-1} \sum_i |v_i|` with
:math:`\gamma_k = k u / (1 - k u)` and :math:`u` the unit roundoff (:math:`2^{-24}` in
float32; Higham, *Accuracy and Stability of Numerical Algorithms*, 2nd ed., §4.2). In
two stages a value goes through at most ``block_rows - 1`` additions in its block and
``ceil(M / block_rows) - 1`` in the second stage, so the bound falls to
:math:`\gamma_{B - 1 + \lceil M/B \rceil - 1} \sum_i |v_i|`, smallest near
:math:`B = \sqrt{M}`. :func:`column_sum_errors` measures both.

Every sum here is a fixed sequence of elementwise additions (never torch's ``sum``,
whose order depends on the CPU's vector width), so each result has the same bits on
every CPU.
"""

from __future__ import annotations

import math

import pandas as pd
import torch
from torch import Tensor

from helpers._validation import accumulation_dtype, check_normalized_shape


def sequential_column_sum(values: Tensor) -> Tensor:
    """Column sums of a ``(rows, columns)`` tensor, one row after another: what a single
    accumulator per column computes. Added in ``values``' dtype."""
    acc = values.new_zeros(values.shape[1])
    for row in values:
        acc = acc + row
    return acc


def block_partial_sums(values: Tensor, block_rows: int) -> Tensor:
    """Stage 1: the column sums of each block of ``block_rows`` consecutive rows.

    Returns a ``(ceil(rows / block_rows), columns)`` tensor: row ``b`` holds the sums of rows
    ``b * block_rows`` up to ``(b + 1) * block_rows - 1`` (the last block may be shorter). Each
    block adds its rows one after another, as one thread would; the blocks are independent
    (computed side by side here, as threads would run them).
    """
    rows, columns = values.shape
    blocks = max(1, math.ceil(rows / block_rows))
    pad = blocks * block_rows - rows  # zero rows: adding 0 changes no sum
    padded = torch.cat([values, values.new_zeros(pad, columns)]) if pad else values
    per_block = padded.reshape(blocks, block_rows, columns)
    acc = values.new_zeros(blocks, columns)
    for k in range(block_rows):  # row k of every block, all blocks at once
        acc = acc + per_block[:, k]
    return acc


def two_stage_column_sum(values: Tensor, block_rows: int) -> Tensor:
    """Column sums in two stages: :func:`block_partial_sums`, then the partials added one after
    another (the second reduction)."""
    partials = block_partial_sums(values, block_rows)
    acc = partials.new_zeros(partials.shape[1])
    for partial in partials:
        acc = acc + partial
    return acc


def layer_norm_param_grads(input: Tensor, grad_output: Tensor, normalized_shape, eps: float = 1e-5,
                           block_rows: int = 64) -> tuple[Tensor, Tensor]:
    r"""(:math:`d\gamma`, :math:`d\beta`) of ``F.layer_norm(input, normalized_shape, weight, bias, eps)``
    for the upstream gradient ``grad_output``, with the column sums in two stages.

    Args:
        input: the forward pass's input, ``(*, *normalized_shape)``.
        grad_output: :math:`dy`, the same shape as ``input``.
        normalized_shape: the trailing dims LN normalises over.
        eps: added to the variance, as in the forward pass.
        block_rows: rows per block in stage 1 (one thread's share).

    Returns:
        Two tensors of shape ``normalized_shape`` in ``input``'s dtype (half inputs are
        accumulated in float32, as torch does). They do not depend on the weight: :math:`y`
        is linear in :math:`\gamma` and :math:`\beta`.

    Example:
        >>> x, dy = torch.randn(6, 4), torch.randn(6, 4)
        >>> dgamma, dbeta = layer_norm_param_grads(x, dy, (4,), block_rows=2)
        >>> torch.allclose(dbeta, dy.sum(0))
        True
    """
    shape = check_normalized_shape("layer_norm_param_grads", input, normalized_shape)
    acc = accumulation_dtype(input.dtype)
    columns = math.prod(shape)
    x = input.to(acc).reshape(-1, columns)
    dy = grad_output.to(acc).reshape(-1, columns)
    mean = x.mean(1, keepdim=True)
    centred = x - mean
    x_hat = centred * torch.rsqrt((centred * centred).mean(1, keepdim=True) + eps)
    dgamma = two_stage_column_sum(dy * x_hat, block_rows)
    dbeta = two_stage_column_sum(dy, block_rows)
    return dgamma.reshape(shape).to(input.dtype), dbeta.reshape(shape).to(input.dtype)


def column_sum_bound(values: Tensor, additions: int) -> Tensor:
    r"""Per column, the worst-case error of a float sum in which each value goes through at most
    ``additions`` roundings: :math:`\gamma_k \sum_i |v_i|`, :math:`\gamma_k = k u / (1 - k u)`."""
    u = torch.finfo(values.dtype).eps / 2
    gamma = additions * u / (1 - additions * u)
    return gamma * values.double().abs().sum(0)


def column_sum_errors(rows: int = 16384, columns: int = 64, block_rows: int = 128, seed: int = 0) -> pd.DataFrame:
    r"""The float32 error of the sequential and the two-stage column sum on long columns.

    The values are a float32 :math:`dy\,\hat{x}`-like ``(rows, columns)`` tensor with a
    positive mean (``0.5 + z``, ``z`` standard normal), so the running sums grow with the row
    count, as :math:`d\beta` does when the gradients share a sign. The reference is the float64
    sum of the same float32 values. One row per method: the largest and the median error over
    the columns, each relative to the column's :math:`\sum_i |v_i|`, and the worst-case bound
    (:func:`column_sum_bound`) relative to the same sum.
    """
    g = torch.Generator().manual_seed(seed)
    values = (0.5 + torch.randn(rows, columns, generator=g, dtype=torch.float64)).float()
    exact = values.double().sum(0)  # float64: exact to ~1e-16 relative, far below float32's errors
    scale = values.double().abs().sum(0)
    blocks = math.ceil(rows / block_rows)
    methods = {
        "sequential (one accumulator)": (sequential_column_sum(values), rows - 1),
        f"two-stage (blocks of {block_rows})": (two_stage_column_sum(values, block_rows), block_rows - 1 + blocks - 1),
    }
    out = []
    for name, (total, additions) in methods.items():
        error = (total.double() - exact).abs() / scale
        bound = column_sum_bound(values, additions) / scale
        out.append({"method": name, "additions per value": additions, "max error": float(error.max()),
                    "median error": float(error.median()), "bound": float(bound.max())})
    return pd.DataFrame(out).set_index("method")
