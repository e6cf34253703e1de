r"""LayerNorm with a hand-derived backward pass, in the style of llm.c's ``doc/layernorm``.

:func:`helpers.layer_norm` lets autograd differentiate a mean, a subtraction, a
square, another mean and an ``rsqrt``: correct, but autograd keeps every
intermediate alive for the backward pass. :class:`LayerNormFunction` does what
torch's own kernel does instead: the forward pass keeps a small cache, the input,
the weight and, per row, the mean :math:`\mu` and the reciprocal standard deviation
:math:`r = 1 / \sqrt{\sigma^2 + \epsilon}`; the backward pass rebuilds everything
else from it.

The forward pass
----------------
Flatten the input to ``M`` rows of ``N = prod(normalized_shape)`` features. For one
row :math:`x \in \mathbb{R}^N`:

.. math::
    \mu = \frac{1}{N}\sum_i x_i, \qquad
    \sigma^2 = \frac{1}{N}\sum_i (x_i - \mu)^2, \qquad
    r = (\sigma^2 + \epsilon)^{-1/2}, \qquad
    \hat{x}_i = (x_i - \mu)\, r, \qquad
    y_i = \gamma_i \hat{x}_i + \beta_i

The backward pass
-----------------
We receive :math:`dy = \partial L / \partial y` and want :math:`dx`, :math:`d\gamma`
and :math:`d\beta`.

*Parameters.* :math:`y_i = \gamma_i \hat{x}_i + \beta_i` is elementwise in
:math:`\gamma` and :math:`\beta`, and every row uses the same :math:`\gamma, \beta`,
so their gradients add up over the rows:

.. math::
    d\gamma_i = \sum_\text{rows} dy_i\, \hat{x}_i, \qquad
    d\beta_i = \sum_\text{rows} dy_i

*Input.* Write :math:`g_i = dy_i\, \gamma_i`, the gradient with respect to
:math:`\hat{x}_i`. Each :math:`\hat{x}_j` depends on *every* :math:`x_i` of its row,
directly and through :math:`\mu` and :math:`r`:

.. math::
    \frac{\partial \hat{x}_j}{\partial x_i}
    = r\left(\delta_{ij} - \frac{1}{N}\right) + (x_j - \mu)\frac{\partial r}{\partial x_i}

With :math:`\partial \sigma^2 / \partial x_i = \frac{2}{N}(x_i - \mu)` (the terms from
:math:`\mu` sum to zero, since the centred values do) and
:math:`r = (\sigma^2 + \epsilon)^{-1/2}`:

.. math::
    \frac{\partial r}{\partial x_i} = -\frac{1}{2} r^3 \cdot \frac{2}{N}(x_i - \mu)
    = -\frac{r^2}{N}\, \hat{x}_i

and, with :math:`x_j - \mu = \hat{x}_j / r`,
:math:`\partial \hat{x}_j / \partial x_i = \frac{r}{N}\,(N\delta_{ij} - 1 -
\hat{x}_j \hat{x}_i)`. Contracting with :math:`g_j`:

.. math::
    dx_i = \sum_j g_j \frac{\partial \hat{x}_j}{\partial x_i}
    = r \left( g_i - \frac{1}{N}\sum_j g_j
      - \hat{x}_i \, \frac{1}{N}\sum_j g_j \hat{x}_j \right)

Three readable terms: the gradient itself, minus its mean (the centring removed
any shift of the row, so a shift cannot change the loss), minus its component along
:math:`\hat{x}` (the scaling removed any rescaling of the row). As a consequence
:math:`\sum_i dx_i = 0` for every row.

The formula needs two row sums (:math:`\sum_j g_j` and :math:`\sum_j g_j \hat{x}_j`)
before :math:`dx` can be formed, so a fused kernel can do it in two sweeps over each
row. This module's backward is eager PyTorch, one operation at a time, and each
operation is its own full pass over the ``(M, N)`` data: 12 of them with all three
gradients (two to recompute :math:`\hat{x}`, one product, two column sums, two
matrix-vector products, five in-place updates that build :math:`dx`), counted by
:func:`helpers.lessons.memory_and_speed.count_full_passes`. :class:`helpers.speed.compiled.CompiledLayerNormFunction`
runs the same formulas through ``torch.compile``: the forward pass in one sweep over the
rows, the backward in two (one for :math:`d\gamma` and :math:`d\beta` as block partial
sums, one for :math:`dx` row by row).

Half-precision inputs are handled as torch does: the statistics, the cache and the
backward arithmetic are float32, and each gradient is cast back to the dtype of the
tensor it belongs to.
"""

from __future__ import annotations

import math

import torch
from torch import Tensor
from torch.autograd.function import FunctionCtx, once_differentiable

from helpers._validation import (
    accumulation_dtype,
    check_layer_norm_args,
)

__all__ = ["LayerNormFunction"]


class LayerNormFunction(torch.autograd.Function):
    r"""Layer Normalization with a hand-written backward pass.

    Call it through ``apply``, with the arguments of :func:`helpers.layer_norm`
    (all five are positional: ``autograd.Function.apply`` takes no keywords):

    >>> import torch
    >>> x = torch.randn(4, 8, requires_grad=True)
    >>> w = torch.randn(8, requires_grad=True)
    >>> y = LayerNormFunction.apply(x, (8,), w, None, 1e-5)
    >>> y.sum().backward()
    >>> x.grad.sum(-1).abs().max() < 1e-5  # input gradients sum to 0 per row
    tensor(True)

    The result and the gradients equal ``torch.nn.functional.layer_norm``'s. The
    backward pass is once-differentiable: a second derivative raises, because the
    cached mean and rstd are not themselves part of the graph.
    """

    @staticmethod
    def forward(
        ctx: FunctionCtx,
        input: Tensor,
        normalized_shape: list[int],
        weight: Tensor | None,
        bias: Tensor | None,
        eps: float,
    ) -> Tensor:
        shape = check_layer_norm_args(input, normalized_shape, weight, bias)

        acc = accumulation_dtype(input.dtype)
        # Flatten to (M rows, N features), with explicit sizes so that empty inputs work.
        num_rows = math.prod(input.shape[: input.dim() - len(shape)])
        num_features = math.prod(shape)
        x = input.to(acc).reshape(num_rows, num_features)

        # The two-pass variance (see helpers.lessons.variance): the mean, then the mean square of
        # the centred values. Later steps work in place: forward() records no graph.
        mean = x.mean(dim=1, keepdim=True)
        centred = x - mean
        rstd = torch.rsqrt((centred * centred).mean(dim=1, keepdim=True) + eps)
        y = centred.mul_(rstd)
        if weight is not None and bias is not None:
            y = torch.addcmul(bias.to(acc).reshape(1, num_features), y, weight.to(acc).reshape(1, num_features))
        elif weight is not None:
            y = y.mul_(weight.to(acc).reshape(1, num_features))
        elif bias is not None:
            y = y.add_(bias.to(acc).reshape(1, num_features))

        # The cache: O(M) statistics besides the tensors the caller already holds.
        ctx.save_for_backward(input, weight, mean, rstd)
        ctx.shape = shape
        ctx.bias_dtype = None if bias is None else bias.dtype
        return y.reshape(input.shape).to(input.dtype)

    @staticmethod
    @once_differentiable
    def backward(ctx: FunctionCtx, grad_output: Tensor):
        input, weight, mean, rstd = ctx.saved_tensors
        shape = ctx.shape
        acc = mean.dtype
        num_rows, num_features = mean.shape[0], math.prod(shape)

        x = input.to(acc).reshape(num_rows, num_features)
        dy = grad_output.to(acc).reshape(num_rows, num_features)
        x_hat = (x - mean).mul_(rstd)  # recomputed from the cache: cheaper than storing it

        # Each full pass over (M, N) data costs time (the op is memory-bound), so the
        # backward makes few of them and shares them between the three gradients:
        #   p = dy * x_hat (one product), dgamma = column sums of p, dbeta = column sums of dy;
        #   the two row means need no new (M, N) tensor: mean(g) = dy @ gamma / N and
        #   mean(g * x_hat) = p @ gamma / N, two matrix-vector products;
        #   dx = rstd * (dy * gamma - mean(g) - x_hat * mean(g * x_hat)) is built in x_hat's buffer.
        grad_input = grad_weight = grad_bias = None
        w = torch.ones(num_features, dtype=acc) if weight is None else weight.to(acc).reshape(num_features)
        p = dy * x_hat
        if weight is not None and ctx.needs_input_grad[2]:
            grad_weight = p.sum(dim=0).reshape(shape).to(weight.dtype)
        if ctx.bias_dtype is not None and ctx.needs_input_grad[3]:
            grad_bias = dy.sum(dim=0).reshape(shape).to(ctx.bias_dtype)
        if ctx.needs_input_grad[0]:
            mean_g = (dy @ w).div_(num_features).unsqueeze(1)
            mean_g_xhat = (p @ w).div_(num_features).unsqueeze(1)
            dx = x_hat.mul_(mean_g_xhat).add_(mean_g).neg_()  # -(x_hat * mean(g x_hat) + mean(g))
            dx.addcmul_(dy, w.reshape(1, num_features)).mul_(rstd)
            grad_input = dx.reshape(input.shape).to(input.dtype)
        # One gradient per forward argument: input, normalized_shape, weight, bias, eps.
        return grad_input, None, grad_weight, grad_bias, None
