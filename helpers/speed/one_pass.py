r"""LayerNorm's and RMSNorm's backward in one pass over the data: a Numba kernel.

:mod:`helpers.speed.compiled`'s split backward runs as two loop nests, because TorchInductor
will not nest them under one loop over the rows: the row-wise ``dx`` and the block
partial sums of :math:`d\gamma, d\beta`. Each reads ``x`` and ``dy`` from memory, so the
backward moves 5 tensors' worth of bytes where 3 would do (read ``x`` and ``dy``, write
``dx``). The kernel here does what PyTorch's own CPU kernel does, written as Python
loops that Numba compiles to machine code:

.. code-block:: text

    for each block of rows, in parallel:             # stage 1, one thread per block
        partial_dgamma = partial_dbeta = 0           # one row of N values each
        for each row i of the block:
            a = sum_j g_ij / N,  c = sum_j g_ij x_hat_ij / N      # first walk along the row
            for j: dx_ij = r_i (g_ij - a - x_hat_ij c)           # second walk: the row is in L1 now
                   partial_dgamma_j += dy_ij x_hat_ij
                   partial_dbeta_j  += dy_ij
    dgamma, dbeta = the sums of the blocks' partial rows          # stage 2

with :math:`g = dy\,\gamma` and :math:`\hat{x} = (x - \mu) r`. A row is read from
memory once, by the first walk; the second finds it in the L1 cache. Blocks are
independent, so threads never write to the same partial row; stage 2 adds
``blocks x N`` values (:mod:`helpers.lessons.param_grad_reduction` shows the two stages and
their rounding).

``fastmath`` is limited to reassociation and fused multiply-add, so that Numba may
vectorize the row sums (their order of additions, and so their last bits, depends on
the CPU's vector width) while infinities and NaNs behave as in PyTorch. The first call
compiles (about 2 s); ``cache=True`` keeps the machine code on disk for the next process.

The kernels run on Numba's own thread pool (the ``workqueue`` threading layer), not on an
OpenMP one: a second OpenMP runtime beside PyTorch's keeps its idle threads spinning, and on a
2-core machine every later PyTorch op waited for them (measured: a small CNN's training took
32 s after one call of this kernel on the ``omp`` layer, 0.6 s on ``workqueue``). An explicit
``NUMBA_THREADING_LAYER`` in the environment still wins.

Numba is imported at the first launch, not with the package. Where it is not installed,
:func:`available` is ``False`` and
:mod:`helpers.speed.compiled` runs its split backward instead.
"""

from __future__ import annotations

import importlib.util

import numpy as np
import torch
from torch import Tensor

#: Whether Numba is installed (it is in requirements.txt; this is for other environments). Numba
#: itself is imported with the kernels (:mod:`helpers.speed._one_pass_kernels`) at their first launch.
HAVE_NUMBA = importlib.util.find_spec("numba") is not None

#: The dtypes the kernels take (Numba has no bfloat16 or float16 arithmetic).
DTYPES = (torch.float32, torch.float64)


def available(dtype: torch.dtype = torch.float32) -> bool:
    """Whether the one-pass kernels can run here for inputs of ``dtype``."""
    return HAVE_NUMBA and dtype in DTYPES


def describe() -> str:
    """Which Numba and which of its threading layers run the kernels here (for benchmark records)."""
    if not HAVE_NUMBA:
        return "unavailable (no Numba)"
    layer_norm_backward(torch.zeros(1, 1), torch.zeros(1, 1), None, torch.zeros(1), torch.ones(1))  # starts the threads
    numba = kernels().numba
    return f"Numba {numba.__version__}, {numba.threading_layer()} threading layer"


def blocks_for(rows: int, threads: int) -> int:
    """Row blocks in stage 1: 4 per thread (so that a thread slowed by other work holds up
    less of the whole), never more than the rows, at least 1."""
    return max(1, min(rows, 4 * threads))


def _arrays(x: Tensor, dy: Tensor, weight: Tensor | None, *stats: Tensor):
    """NumPy views of contiguous copies (no copy where already contiguous), ``weight`` ones where None."""
    n = x.shape[1]
    w = torch.ones(n, dtype=x.dtype) if weight is None else weight.to(x.dtype)
    return [t.detach().contiguous().numpy() for t in (x, dy, w, *(s.reshape(-1) for s in stats))]


def kernels():
    """The module that holds the Numba kernels, ``layer_norm_kernel`` and ``rms_norm_kernel``
    (:mod:`helpers.speed._one_pass_kernels`), imported with Numba at the first call."""
    from helpers.speed import _one_pass_kernels

    return _one_pass_kernels


def _launch(name: str, rows: int, n: int, dtype: torch.dtype, arrays: list, parts: int) -> tuple[Tensor, Tensor]:
    module = kernels()
    kernel, numba = getattr(module, name), module.numba
    threads = min(torch.get_num_threads(), numba.config.NUMBA_NUM_THREADS)
    numba.set_num_threads(threads)
    blocks = blocks_for(rows, threads)
    block_rows = -(-rows // blocks)
    dx = torch.empty(rows, n, dtype=dtype)
    partials = torch.empty(blocks, parts, n, dtype=dtype)
    inv_n = np.dtype(arrays[0].dtype).type(1.0 / n)  # times 1/N, as torch's kernel does
    kernel(*arrays, inv_n, dx.numpy(), partials.numpy(), block_rows)
    return dx, partials.sum(0)  # stage 2: add the blocks' partial rows


def layer_norm_backward(x: Tensor, dy: Tensor, weight: Tensor | None, mean: Tensor,
                        rstd: Tensor) -> tuple[Tensor, Tensor, Tensor]:
    r"""(dx, :math:`d\gamma`, :math:`d\beta`) of LayerNorm over the rows of a 2-D ``x``, in one pass.

    ``x`` and ``dy``: ``(M, N)``, float32 or float64; ``mean`` and ``rstd``: the forward
    pass's ``M`` row statistics in the same dtype; ``weight``: ``(N,)`` or None. All three
    results in ``x``'s dtype; :math:`d\gamma` and :math:`d\beta` have shape ``(N,)``.
    """
    rows, n = x.shape
    dx, sums = _launch("layer_norm_kernel", rows, n, x.dtype, _arrays(x, dy, weight, mean, rstd), 2)
    return dx, sums[0], sums[1]


def rms_norm_backward(x: Tensor, dy: Tensor, weight: Tensor | None, rstd: Tensor) -> tuple[Tensor, Tensor]:
    r"""(dx, :math:`d\gamma`) of RMSNorm over the rows of a 2-D ``x``, in one pass; as
    :func:`layer_norm_backward` without the mean and :math:`d\beta`."""
    rows, n = x.shape
    dx, sums = _launch("rms_norm_kernel", rows, n, x.dtype, _arrays(x, dy, weight, rstd), 1)
    return dx, sums[0]
