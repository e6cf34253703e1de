r"""LayerNorm and RMSNorm whose forward and backward are each compiled: the forward by
``torch.compile``, the training backward by Numba (:mod:`helpers.speed.one_pass`).

:class:`~helpers.autograd.LayerNormFunction` derives the backward by hand and runs it as
eager PyTorch, one operation (one full pass over the ``(M, N)`` data) at a time.
:class:`CompiledLayerNormFunction` runs the same formulas as two compiled graphs, one for
the forward pass and one for the backward pass. TorchInductor, PyTorch's compiler, turns
each graph into C++ loop nests: the operations on a row become one loop over the rows
with short loops over the row's ``N`` values inside, so a row is read from memory once
and the rest of the arithmetic finds it in the L1 cache.

**Forward**, row-wise: the row sum, then the sum of squared centred values (the two-pass
variance of :mod:`helpers.lessons.variance`, never :math:`E[x^2] - E[x]^2`), then :math:`y`. The
graph returns the two sums; the mean and :math:`r = 1/\sqrt{\sigma^2 + \epsilon}` are then
formed from them (``M`` values each). A graph that returned the mean and :math:`r`
themselves would make Inductor give each of them a loop over all rows of its own, and
the rows would be read from memory three times.

**Backward** (the Inductor version; see below for the one that training runs), one graph, two parts:

1. the input gradient, row-wise, the formula derived in :mod:`helpers.autograd`:

   .. math::
       dx = r\left(g - \tfrac{1}{N}\textstyle\sum_j g_j
            - \hat{x}\,\tfrac{1}{N}\sum_j g_j \hat{x}_j\right), \qquad g = dy\,\gamma

2. the parameter gradients, column sums over all rows, in two stages
   (:mod:`helpers.lessons.param_grad_reduction`, :func:`blocked_column_sum`): the rows are cut into
   blocks of a few rows (:func:`rows_per_block`: 8 at width 1024); stage 1 sums each
   block's rows into a partial row of its own (blocks are independent: threads take
   whole blocks); stage 2 adds the partial rows.

Why the two stages. Written as plain column sums, ``(dy * x_hat).sum(0)``, the same
graph (:func:`layer_norm_backward` with ``split=False``, and what ``torch.compile`` makes
of autograd's backward of :func:`helpers.layer_norm`) gets a loop nest for the column
sums with strips of 16 columns outside and all ``M`` rows inside. Each step of that inner
loop reads 64 bytes from the next row, ``N * 4`` bytes on: at width 1024, a new 4 KiB
memory page at every step, which the prefetcher and the TLB cannot keep up with; and
the strips (``N / 16`` of them) are all there is to share between threads. The block
partial sums walk a few rows at a time, strip by strip, and there are ``M / rows``
blocks to share. ``make bench`` times both backwards side by side.

What remains: the partial sums read ``x`` and ``dy`` a second time. Inductor places
them in a loop nest of their own, apart from ``dx``'s: its C++ backend nests two loop
nests under one outer loop only when one consumes what the other produces, and their
leading loops have the same ranges (rows for ``dx``, blocks and columns for the partial
sums). PyTorch's own kernel avoids that read by adding each row into its thread's
partial sums while it computes the row's ``dx``, and so does :mod:`helpers.speed.one_pass`, a
Numba kernel: where it can run (Numba installed, float32 or float64), it is the backward
of :class:`CompiledLayerNormFunction` and :class:`CompiledRMSNormFunction` when the
input and the weight both need gradients (training); the Inductor graphs here serve the
other cases (frozen weights, half precision) and the comparison in ``make bench``.

Shapes: each graph is compiled for one row width, dtype and set of optional arguments,
with the row count left symbolic (``torch._dynamo.maybe_mark_dynamic`` on dim 0), so a
new batch size or sequence length reuses the compiled code; a new width compiles anew (a
few seconds; Inductor keeps compiled kernels in its on-disk cache, so the next process
reuses them).

Compiling needs a C++ compiler at run time (``g++``, or ``CXX``). Where ``torch.compile``
fails, these functions warn once and run the same tensor functions eagerly: the same
results, slower. :func:`compile_status` says which happened. Under a
``TorchDispatchMode`` (which must see every operation) they run eagerly too.
"""

from __future__ import annotations

import math
import warnings
from collections.abc import Callable

import torch
from torch import Tensor
from torch.autograd.function import FunctionCtx, once_differentiable
from torch.utils._python_dispatch import _get_current_dispatch_mode

from helpers._validation import (
    accumulation_dtype,
    check_floating_input,
    check_layer_norm_args,
    check_normalized_shape,
    check_param_shape,
)
from helpers.speed import one_pass

#: Bytes of one row block in stage 1 of the parameter-gradient sums (of ``x``, and as many of
#: ``dy``): the size of a typical L1 data cache. See :func:`rows_per_block`.
BLOCK_BYTES = 32 * 1024


def rows_per_block(columns: int) -> int:
    """Rows per block in stage 1 for rows of ``columns`` float32 values: a block of about
    :data:`BLOCK_BYTES`, and at least 8 rows (4096 x 1024: blocks of 8 rows; width 64: of 128).

    Stage 1 walks a block column strip by column strip, 16 columns at a time, each strip down
    all the block's rows, so a block touches as many memory pages at once as it has rows
    (rows of 4 KiB or more): few enough rows keep those pages in the TLB and the access
    streams within what the prefetcher follows. Each block writes one partial row, so the
    partials are a ``1 / rows`` share of the data: enough rows keep that small.
    """
    return max(8, BLOCK_BYTES // (4 * max(columns, 1)))


# ----------------------------------------------------------------- the tensor functions
# Plain tensor code: torch.compile turns each into one graph, and the eager fallback runs it as is.


def blocked_column_sum(term: Callable[..., Tensor], *rows: Tensor, block_rows: int | None = None) -> Tensor:
    """The column sums of ``term(*rows)`` over all rows, in two stages, with tensor sums.

    ``rows`` are 2-D tensors with the same number of rows (a per-row value is a
    ``(rows, 1)`` column); ``term`` combines them elementwise. The stages are those of
    :func:`helpers.lessons.param_grad_reduction.two_stage_column_sum`: each whole block of
    ``block_rows`` rows is summed into its own partial row (stage 1), the partials are
    summed (stage 2), and the last, shorter block (fewer than ``block_rows`` rows,
    possibly none) is added; ``block_rows=None`` takes :func:`rows_per_block` of the
    widest input. The blocks are cut from the inputs, before ``term``, and
    the sums are ``sum`` over tensor dims rather than a loop of additions, so that
    ``torch.compile`` makes them two loop nests whatever the row count. The order of
    the additions inside each ``sum`` is the compiler's (or, eagerly, the CPU's), so the
    last bits can differ between machines.

    >>> values = torch.arange(40.0).reshape(10, 4)
    >>> blocked_column_sum(lambda v: v, values, block_rows=4)  # blocks of rows 0-3, 4-7; rows 8-9
    tensor([180., 190., 200., 210.])
    """
    if block_rows is None:
        block_rows = rows_per_block(max(t.shape[1] for t in rows))
    whole = rows[0].shape[0] // block_rows * block_rows
    blocks = [t[:whole].reshape(whole // block_rows, block_rows, t.shape[1]) for t in rows]
    partials = term(*blocks).sum(1)  # stage 1: one partial row per block
    return partials.sum(0) + term(*(t[whole:] for t in rows)).sum(0)  # stage 2, plus the short block


def _layer_norm_forward(x: Tensor, weight: Tensor | None, bias: Tensor | None, eps: float):
    """(y, row sums, row sums of squared centred values) of a 2-D ``x``."""
    acc = accumulation_dtype(x.dtype)
    n = x.shape[1]
    xa = x.to(acc)
    total = xa.sum(1, keepdim=True)
    centred = xa - total * (1.0 / n)  # times 1/N, as torch's kernel does: cheaper than a division
    squares = (centred * centred).sum(1, keepdim=True)
    y = centred * torch.rsqrt(squares * (1.0 / n) + eps)
    if weight is not None:
        y = y * weight.to(acc)
    if bias is not None:
        y = y + bias.to(acc)
    return y.to(x.dtype), total, squares


def _layer_norm_input_grad(x: Tensor, dy: Tensor, weight: Tensor | None, mean: Tensor, rstd: Tensor) -> Tensor:
    """dx, row by row, from the forward pass's cache (mean, rstd)."""
    acc = mean.dtype
    n = x.shape[1]
    x_hat = (x.to(acc) - mean) * rstd
    g = dy.to(acc) if weight is None else dy.to(acc) * weight.to(acc)
    mean_g = g.sum(1, keepdim=True) * (1.0 / n)  # times 1/N, as torch's kernel does
    mean_g_x_hat = (g * x_hat).sum(1, keepdim=True) * (1.0 / n)
    return (rstd * (g - mean_g - x_hat * mean_g_x_hat)).to(x.dtype)


def _layer_norm_param_grads(x: Tensor, dy: Tensor, mean: Tensor, rstd: Tensor, block_rows: int):
    """(dgamma, dbeta) as block partial sums and a second reduction, in the accumulation dtype."""
    acc = mean.dtype
    torch._check(dy.shape[0] == x.shape[0])  # one row count: the sums over dy and x share their loops

    def dy_x_hat(x, dy, mean, rstd):
        return dy.to(acc) * ((x.to(acc) - mean) * rstd)

    return (blocked_column_sum(dy_x_hat, x, dy, mean, rstd, block_rows=block_rows),
            blocked_column_sum(lambda dy: dy.to(acc), dy, block_rows=block_rows))


def _layer_norm_backward(x: Tensor, dy: Tensor, weight: Tensor | None, mean: Tensor, rstd: Tensor, block_rows: int):
    """dx row by row and (dgamma, dbeta) as block partial sums, in one graph: one compiled call."""
    return (_layer_norm_input_grad(x, dy, weight, mean, rstd),
            *_layer_norm_param_grads(x, dy, mean, rstd, block_rows))


def _layer_norm_backward_fused(x: Tensor, dy: Tensor, weight: Tensor | None, mean: Tensor, rstd: Tensor):
    """The whole backward in one graph, with plain column sums: what Inductor makes of autograd's."""
    acc = mean.dtype
    x_hat = (x.to(acc) - mean) * rstd
    dya = dy.to(acc)
    dx = _layer_norm_input_grad(x, dy, weight, mean, rstd)
    return dx, (dya * x_hat).sum(0), dya.sum(0)


def _rms_norm_forward(x: Tensor, weight: Tensor | None, eps: float):
    """(y, row sums of squares) of a 2-D ``x``."""
    acc = accumulation_dtype(x.dtype)
    n = x.shape[1]
    xa = x.to(acc)
    squares = (xa * xa).sum(1, keepdim=True)
    y = xa * torch.rsqrt(squares * (1.0 / n) + eps)
    if weight is not None:
        y = y * weight.to(acc)
    return y.to(x.dtype), squares


def _rms_norm_input_grad(x: Tensor, dy: Tensor, weight: Tensor | None, rstd: Tensor) -> Tensor:
    r"""dx of RMSNorm: :math:`r\,(g - \hat{x}\,\frac{1}{N}\sum_j g_j \hat{x}_j)`, :math:`\hat{x} = r x`."""
    acc = rstd.dtype
    n = x.shape[1]
    x_hat = x.to(acc) * rstd
    g = dy.to(acc) if weight is None else dy.to(acc) * weight.to(acc)
    return (rstd * (g - x_hat * ((g * x_hat).sum(1, keepdim=True) * (1.0 / n)))).to(x.dtype)


def _rms_norm_backward(x: Tensor, dy: Tensor, weight: Tensor, rstd: Tensor, block_rows: int):
    """dx and dgamma of RMSNorm in one graph."""
    return _rms_norm_input_grad(x, dy, weight, rstd), _rms_norm_weight_grad(x, dy, rstd, block_rows)


def _rms_norm_weight_grad(x: Tensor, dy: Tensor, rstd: Tensor, block_rows: int) -> Tensor:
    acc = rstd.dtype
    torch._check(dy.shape[0] == x.shape[0])
    return blocked_column_sum(lambda x, dy, rstd: dy.to(acc) * (x.to(acc) * rstd), x, dy, rstd,
                              block_rows=block_rows)


# ----------------------------------------------------------------- compiling, or not

_fallback: str | None = None  # why torch.compile is not used, once it failed


class _Kernel:
    """One tensor function, compiled on its first call (``fullgraph=True``: one graph or an
    error; ``dynamic=False`` with the row count of 2-D tensor arguments marked dynamic).
    Called with autograd off (inside the Functions below, or under ``torch.no_grad``)."""

    def __init__(self, fn: Callable):
        self.fn = fn
        self.compiled: Callable | None = None
        self.seen: set[tuple] = set()  # argument signatures already compiled for

    def __call__(self, *args):
        global _fallback
        # Detached: autograd is off here anyway, and a graph compiled for inputs that require
        # grad would not serve the same inputs without (Dynamo guards on requires_grad).
        args = tuple(a.detach() if isinstance(a, Tensor) else a for a in args)
        if _fallback is not None or args[0].numel() == 0 or _get_current_dispatch_mode() is not None:
            # No compiler; nothing to compute; or a TorchDispatchMode that must see every
            # operation (compiled code would run past it): the same code, eagerly.
            return self.fn(*args)
        try:
            if self.compiled is None:
                self.compiled = torch.compile(self.fn, dynamic=False, fullgraph=True)
            for a in args:
                if isinstance(a, Tensor) and a.dim() == 2:
                    torch._dynamo.maybe_mark_dynamic(a, 0)
            signature = tuple((a.shape[1:], a.dtype) if isinstance(a, Tensor) else a for a in args)
            if signature in self.seen:
                try:
                    return self.compiled(*args)
                except getattr(torch._dynamo.exc, "FailOnRecompileLimitHit", ()):
                    pass  # a new row-count case (fewer rows than a block, say): compile it, below
            # A new width, dtype or set of optional arguments: a new graph, which may take
            # Dynamo past its default of 8 graphs per function (a benchmark sweep does).
            with torch._dynamo.config.patch(**_more_graphs()):
                result = self.compiled(*args)
            self.seen.add(signature)
            return result
        except Exception as error:  # noqa: BLE001 (no C++ compiler, unsupported platform, ...)
            result = self.fn(*args)  # if this raises too, the arguments were wrong, not the compiler
            first_line = (str(error).strip().splitlines() or [""])[0][:200]
            _fallback = f"{type(error).__name__}: {first_line}"
            warnings.warn(f"helpers.speed.compiled: torch.compile failed ({_fallback}); the compiled functions "
                          "now run the same tensor code eagerly: the same results, slower",
                          RuntimeWarning, stacklevel=3)
            return result


def _more_graphs() -> dict:
    """Dynamo's limits on graphs per function, raised (named ``cache_size_limit`` before torch 2.6)."""
    config = torch._dynamo.config
    names = [("recompile_limit", "cache_size_limit", 256),
             ("accumulated_recompile_limit", "accumulated_cache_size_limit", 4096)]
    return {new if hasattr(config, new) else old: value for new, old, value in names}


_KERNELS = {fn.__name__: _Kernel(fn) for fn in (
    _layer_norm_forward, _layer_norm_input_grad, _layer_norm_param_grads, _layer_norm_backward,
    _layer_norm_backward_fused, _rms_norm_forward, _rms_norm_input_grad, _rms_norm_weight_grad, _rms_norm_backward)}


def _run(name: str, *args):
    return _KERNELS[name](*args)


def _one_pass_here(x: Tensor) -> bool:
    """Whether the backward takes :mod:`helpers.speed.one_pass`'s kernel: Numba installed, a float32 or
    float64 input with values, and no TorchDispatchMode (which must see every tensor operation)."""
    return one_pass.available(x.dtype) and x.numel() > 0 and _get_current_dispatch_mode() is None


def compile_status() -> str:
    """``"compiled"`` while ``torch.compile`` works here, else ``"eager: <why compiling failed>"``."""
    return "compiled" if _fallback is None else f"eager: {_fallback}"


# ----------------------------------------------------------------- LayerNorm


def _rows(input: Tensor, shape: tuple[int, ...]) -> tuple[int, int]:
    return math.prod(input.shape[: input.dim() - len(shape)]), math.prod(shape)


class CompiledLayerNormFunction(torch.autograd.Function):
    r"""Layer Normalization with a compiled forward and a compiled, hand-derived backward.

    Called like :class:`~helpers.autograd.LayerNormFunction`, through ``apply`` with five
    positional arguments: ``apply(input, normalized_shape, weight, bias, eps)``; the same
    argument checks, errors, results and gradients as ``F.layer_norm``, within float
    rounding. Half-precision inputs are accumulated in float32. Once-differentiable.

    >>> import torch
    >>> x = torch.randn(4, 8, requires_grad=True)
    >>> y = CompiledLayerNormFunction.apply(x, (8,), None, None, 1e-5)
    >>> torch.allclose(y, torch.nn.functional.layer_norm(x, (8,)), atol=1e-5)
    True
    """

    @staticmethod
    def forward(ctx: FunctionCtx, input: Tensor, normalized_shape, weight: Tensor | None,
                bias: Tensor | None, eps: float) -> Tensor:
        shape = check_layer_norm_args(input, normalized_shape, weight, bias)
        m, n = _rows(input, shape)
        x = input.reshape(m, n)
        w = None if weight is None else weight.reshape(n)
        b = None if bias is None else bias.reshape(n)
        y, total, squares = _run("_layer_norm_forward", x, w, b, float(eps))
        mean = total * (1.0 / n)
        rstd = torch.rsqrt(squares * (1.0 / n) + eps)
        ctx.save_for_backward(input, weight, mean, rstd)
        ctx.shape = shape
        ctx.bias_dtype = None if bias is None else bias.dtype
        return y.reshape(input.shape)

    @staticmethod
    @once_differentiable
    def backward(ctx: FunctionCtx, grad_output: Tensor):
        input, weight, mean, rstd = ctx.saved_tensors
        m, n = mean.shape[0], math.prod(ctx.shape)
        x, dy = input.reshape(m, n), grad_output.reshape(m, n)
        w = None if weight is None else weight.reshape(n)
        grad_input = grad_weight = grad_bias = None
        want_input = ctx.needs_input_grad[0]
        want_weight = weight is not None and ctx.needs_input_grad[2]
        want_bias = ctx.bias_dtype is not None and ctx.needs_input_grad[3]
        if want_input and (want_weight or want_bias) and _one_pass_here(x):  # training, the usual case
            dx, dgamma, dbeta = one_pass.layer_norm_backward(x, dy, w, mean, rstd)
        elif want_input and (want_weight or want_bias):  # all of them, in one compiled call
            dx, dgamma, dbeta = _run("_layer_norm_backward", x, dy, w, mean, rstd, rows_per_block(n))
        elif want_input:  # frozen parameters
            dx = _run("_layer_norm_input_grad", x, dy, w, mean, rstd)
        elif want_weight or want_bias:
            dgamma, dbeta = _run("_layer_norm_param_grads", x, dy, mean, rstd, rows_per_block(n))
        if want_input:
            grad_input = dx.reshape(input.shape)
        if want_weight or want_bias:
            if want_weight:
                grad_weight = dgamma.reshape(ctx.shape).to(weight.dtype)
            if want_bias:
                grad_bias = dbeta.reshape(ctx.shape).to(ctx.bias_dtype)
        return grad_input, None, grad_weight, grad_bias, None


#: The backwards :func:`layer_norm_backward` can run.
BACKWARD_KERNELS = ("one-pass", "split", "fused")


def layer_norm_backward(grad_output: Tensor, input: Tensor, normalized_shape, mean: Tensor, rstd: Tensor,
                        weight: Tensor | None = None, *, kernel: str = "one-pass") -> tuple[Tensor, Tensor, Tensor]:
    r"""(dx, :math:`d\gamma`, :math:`d\beta`) of LayerNorm from one of the backward kernels, without autograd.

    The arguments follow PyTorch's ``native_layer_norm_backward``: ``mean`` and ``rstd`` are
    the forward pass's per-row statistics (one value per row, any shape with that many
    elements, in the accumulation dtype). ``kernel``:

    - ``"one-pass"``: :mod:`helpers.speed.one_pass`'s kernel, what :class:`CompiledLayerNormFunction`
      runs (float32 and float64 with Numba installed; otherwise ``"split"``);
    - ``"split"``: the row-wise ``dx`` loop nest, then the block partial sums, compiled by
      Inductor as one graph (two loop nests, each reading ``x`` and ``dy``);
    - ``"fused"``: the whole backward as one graph with plain column sums,
      ``(dy * x_hat).sum(0)``, for Inductor to fuse as it likes (see the module's text).

    :math:`d\gamma` and :math:`d\beta` come in the accumulation dtype; ``dx`` in the input's.
    """
    if kernel not in BACKWARD_KERNELS:
        raise ValueError(f"layer_norm_backward(): expected kernel to be one of {BACKWARD_KERNELS}, but got {kernel!r}")
    shape = check_layer_norm_args(input, normalized_shape, weight, None)
    m, n = _rows(input, shape)
    if grad_output.shape != input.shape:
        raise RuntimeError(f"layer_norm_backward(): expected grad_output of input's shape {list(input.shape)}, "
                           f"but got {list(grad_output.shape)}")
    for name, stat in (("mean", mean), ("rstd", rstd)):
        if stat.numel() != m or stat.dtype != accumulation_dtype(input.dtype):
            raise RuntimeError(f"layer_norm_backward(): expected {name} with one {accumulation_dtype(input.dtype)} "
                               f"value per row ({m}), but got shape {list(stat.shape)} of dtype {stat.dtype}")
    x, dy = input.reshape(m, n), grad_output.reshape(m, n)
    mean, rstd = mean.reshape(m, 1), rstd.reshape(m, 1)
    w = None if weight is None else weight.reshape(n)
    with torch.no_grad():
        if kernel == "one-pass" and _one_pass_here(x):
            dx, dgamma, dbeta = one_pass.layer_norm_backward(x, dy, w, mean, rstd)
        elif kernel == "fused":
            dx, dgamma, dbeta = _run("_layer_norm_backward_fused", x, dy, w, mean, rstd)
        else:
            dx, dgamma, dbeta = _run("_layer_norm_backward", x, dy, w, mean, rstd, rows_per_block(n))
    return dx.reshape(input.shape), dgamma.reshape(shape), dbeta.reshape(shape)


# ----------------------------------------------------------------- RMSNorm


class CompiledRMSNormFunction(torch.autograd.Function):
    r"""RMSNorm (:func:`helpers.rms_norm`) with a compiled forward and a compiled backward.

    ``apply(input, normalized_shape, weight, eps)``, four positional arguments; ``eps=None``
    means the machine epsilon of the accumulation dtype, as in ``F.rms_norm``. The kernels
    are LayerNorm's without the mean: one row sum (of squares) in the forward pass, one
    (of :math:`g\hat{x}`) for ``dx``, and the weight gradient as block partial sums.
    Real floating-point inputs only (:func:`helpers.rms_norm` takes complex ones). Once-differentiable.
    """

    @staticmethod
    def forward(ctx: FunctionCtx, input: Tensor, normalized_shape, weight: Tensor | None,
                eps: float | None) -> Tensor:
        shape = check_normalized_shape("rms_norm", input, normalized_shape)
        check_param_shape("rms_norm", "weight", weight, shape)
        check_floating_input("rms_norm", input, allow_complex=True)  # torch's rms_norm takes complex inputs
        if input.is_complex():
            raise NotImplementedError("CompiledRMSNormFunction: expected a real floating-point input, but got "
                                      f"dtype {input.dtype}; helpers.rms_norm takes complex inputs")
        acc = accumulation_dtype(input.dtype)
        eps = torch.finfo(acc).eps if eps is None else float(eps)
        m, n = _rows(input, shape)
        x = input.reshape(m, n)
        w = None if weight is None else weight.reshape(n)
        y, squares = _run("_rms_norm_forward", x, w, eps)
        rstd = torch.rsqrt(squares * (1.0 / n) + eps)
        ctx.save_for_backward(input, weight, rstd)
        ctx.shape = shape
        return y.reshape(input.shape)

    @staticmethod
    @once_differentiable
    def backward(ctx: FunctionCtx, grad_output: Tensor):
        input, weight, rstd = ctx.saved_tensors
        m, n = rstd.shape[0], math.prod(ctx.shape)
        x, dy = input.reshape(m, n), grad_output.reshape(m, n)
        w = None if weight is None else weight.reshape(n)
        grad_input = grad_weight = None
        want_input, want_weight = ctx.needs_input_grad[0], weight is not None and ctx.needs_input_grad[2]
        if want_input and want_weight and _one_pass_here(x):
            dx, dgamma = one_pass.rms_norm_backward(x, dy, w, rstd)
        elif want_input and want_weight:
            dx, dgamma = _run("_rms_norm_backward", x, dy, w, rstd, rows_per_block(n))
        elif want_input:
            dx = _run("_rms_norm_input_grad", x, dy, w, rstd)
        elif want_weight:
            dgamma = _run("_rms_norm_weight_grad", x, dy, rstd, rows_per_block(n))
        if want_input:
            grad_input = dx.reshape(input.shape)
        if want_weight:
            grad_weight = dgamma.reshape(ctx.shape).to(weight.dtype)
        return grad_input, None, grad_weight, None
