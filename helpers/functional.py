r"""Layer, RMS, Batch, Group and Instance Normalization as plain tensor operations.

Each function has exactly the signature, defaults, results and errors of its
``torch.nn.functional`` twin, but is written so a learner can read it: a mean, the
variance of the centred values, ``rsqrt``, a scale and a shift. Autograd
differentiates these few operations for us; :mod:`helpers.autograd` derives the
LayerNorm backward by hand.

They share one idea, :func:`normalize`. Pick the dimensions to take statistics over, then

.. math::
    \hat{x} = \frac{x - \mathrm{E}[x]}{\sqrt{\mathrm{Var}[x] + \epsilon}}, \qquad
    y = \hat{x} \cdot \gamma + \beta

and only the dimensions differ:

- ``layer_norm``: over each sample's own features, the last ``len(normalized_shape)``
  dimensions; :math:`\gamma, \beta` have shape ``normalized_shape``.
- ``rms_norm``: the same dimensions, but without centring and without :math:`\beta`.
- ``batch_norm``: over the batch (and length) for each channel; :math:`\gamma, \beta`
  have shape ``(C,)``.
- ``group_norm``: over each sample's group of ``C / G`` channels; :math:`\gamma, \beta`
  have shape ``(C,)``.
- ``instance_norm``: over each sample's channel alone (GroupNorm with ``G = C``);
  :math:`\gamma, \beta` have shape ``(C,)``.

Two numerical rules hold throughout, as in torch's kernels:

- The variance is computed *after* centring, as the mean of :math:`(x - \mathrm{E}[x])^2`
  (the biased estimator, dividing by :math:`n`). The shortcut
  :math:`\mathrm{E}[x^2] - \mathrm{E}[x]^2` subtracts two large, nearly equal numbers
  when the mean is large compared with the spread, and cancels catastrophically.
- float16 and bfloat16 inputs are upcast to float32 for the statistics and the
  affine transform; the result is cast back to the input's dtype once, at the end.
  BatchNorm (and InstanceNorm, computed as BatchNorm) goes one step further, as torch's
  CPU kernel does: a float32 input is computed in float64, since one channel's sums run
  over the whole batch (see :func:`helpers._validation.batch_statistics_dtype`).

Each function is registered with ``torch.fx.wrap``: ``torch.fx.symbolic_trace`` records a
call to it as one node (as it records ``F.layer_norm``) instead of tracing into argument
checks that branch on the input's shape, which it cannot; the checks then run, with the
real input, whenever the traced graph runs. ``torch.compile`` and ``torch.export`` trace
through the functions as written.
"""

from __future__ import annotations

import math

import torch
from torch import Tensor

from helpers._validation import (
    accumulation_dtype,
    batch_statistics_dtype,
    check_channel_vector,
    check_floating_input,
    check_layer_norm_args,
    check_normalized_shape,
    check_num_groups,
    check_param_dtypes,
    check_param_shape,
    check_running_stats_not_differentiable,
    verify_batch_size,
)

__all__ = ["batch_norm", "group_norm", "instance_norm", "layer_norm", "normalize", "rms_norm"]


def _standardize(x: Tensor, dims: tuple[int, ...], eps: float) -> tuple[Tensor, Tensor, Tensor]:
    r"""Return :math:`\hat{x} = (x - \mu) / \sqrt{\sigma^2 + \epsilon}` and :math:`\mu, \sigma^2`.

    ``mean`` and ``var`` keep the reduced dimensions (size 1) so they broadcast back
    against ``x``. ``var`` is the biased variance: the mean of the squared centred
    values, computed in two passes so that no cancellation can occur.
    """
    mean = x.mean(dim=dims, keepdim=True)
    centred = x - mean
    var = (centred * centred).mean(dim=dims, keepdim=True)
    # eps goes inside the square root: it bounds 1/std by 1/sqrt(eps) for a constant row.
    return centred * torch.rsqrt(var + eps), mean, var


def _affine(
    x_hat: Tensor, weight: Tensor | None, bias: Tensor | None, shape: tuple[int, ...]
) -> Tensor:
    """``x_hat * weight + bias``, each reshaped to ``shape`` so it broadcasts.

    The parameters are cast to ``x_hat``'s (accumulation) dtype first, so a float16
    weight is applied in float32 and the output is rounded only once.
    """
    y = x_hat
    if weight is not None:
        y = y * weight.to(y.dtype).reshape(shape)
    if bias is not None:
        y = y + bias.to(y.dtype).reshape(shape)
    return y


def _channel_shape(input: Tensor) -> tuple[int, ...]:
    """``(1, C, 1, ..., 1)``: the shape that broadcasts a per-channel vector over input."""
    return (1, input.shape[1]) + (1,) * (input.dim() - 2)


@torch.fx.wrap
def layer_norm(
    input: Tensor,
    normalized_shape: list[int],
    weight: Tensor | None = None,
    bias: Tensor | None = None,
    eps: float = 1e-05,
) -> Tensor:
    r"""Apply Layer Normalization over the last ``len(normalized_shape)`` dimensions.

    .. math::
        y = \frac{x - \mathrm{E}[x]}{\sqrt{\mathrm{Var}[x] + \epsilon}} * \gamma + \beta

    The mean and the (biased) variance are taken over each sample's own features,
    the trailing dimensions named by ``normalized_shape``; no batch statistics are
    involved, so training and evaluation behave the same.

    Args:
        input: the tensor to normalize, of shape ``(*, *normalized_shape)``.
        normalized_shape (list, tuple or torch.Size of ints): the trailing shape to
            normalize over, e.g. ``(dim,)`` per token or ``(seq_len, dim)`` per
            sentence. A bare int is refused, as in ``torch.nn.functional``.
        weight: :math:`\gamma`, of shape ``normalized_shape``, or ``None`` for 1.
        bias: :math:`\beta`, of shape ``normalized_shape``, or ``None`` for 0.
        eps: added to the variance inside the square root. Default: 1e-5

    Shape:
        - Input: :math:`(*, \text{normalized\_shape})`
        - Output: same shape as input, same dtype as input

    Examples::

        >>> x = torch.tensor([[1.0, 2.0, 3.0, 4.0], [2.0, 4.0, 6.0, 8.0]])
        >>> layer_norm(x, (4,))  # each row gets mean 0 and variance 1
        tensor([[-1.3416, -0.4472,  0.4472,  1.3416],
                [-1.3416, -0.4472,  0.4472,  1.3416]])
        >>> import torch.nn.functional as F
        >>> y = torch.randn(2, 3, 4)
        >>> torch.allclose(layer_norm(y, (3, 4)), F.layer_norm(y, (3, 4)), atol=1e-6)
        True
    """
    shape = check_layer_norm_args(input, normalized_shape, weight, bias)

    dims = tuple(range(-len(shape), 0))  # the trailing, normalized dimensions
    x_hat, _, _ = _standardize(input.to(accumulation_dtype(input.dtype)), dims, eps)
    return _affine(x_hat, weight, bias, shape).to(input.dtype)


@torch.fx.wrap
def rms_norm(
    input: Tensor,
    normalized_shape: list[int],
    weight: Tensor | None = None,
    eps: float | None = None,
) -> Tensor:
    r"""Apply Root Mean Square Layer Normalization over the trailing dimensions.

    .. math::
        y = \frac{x}{\mathrm{RMS}(x)} * \gamma, \qquad
        \mathrm{RMS}(x) = \sqrt{\epsilon + \frac{1}{n} \sum_{i=1}^{n} x_i^2}

    LayerNorm without the centring and without :math:`\beta`: it only fixes each
    sample's scale. Cheaper, and what LLaMA-style Transformers use.

    Args:
        input: the tensor to normalize, of shape ``(*, *normalized_shape)``.
        normalized_shape (list, tuple or torch.Size of ints): the trailing shape to
            normalize over.
        weight: :math:`\gamma`, of shape ``normalized_shape``, or ``None`` for 1.
            Any dtype: it is cast to the computation dtype.
        eps: added to the mean square inside the square root. ``None`` (default)
            means the machine epsilon of the computation dtype:
            ``torch.finfo(torch.float32).eps`` for float16, bfloat16 and float32
            inputs, ``torch.finfo(torch.float64).eps`` for float64 inputs.

    Shape:
        - Input: :math:`(*, \text{normalized\_shape})`
        - Output: same shape as input, same dtype as input

    Examples::

        >>> x = torch.tensor([[3.0, 4.0], [-6.0, 8.0]])
        >>> rms_norm(x, (2,), eps=0.0)  # RMS of each row: 3.5355 and 7.0711
        tensor([[ 0.8485,  1.1314],
                [-0.8485,  1.1314]])
    """
    shape = check_normalized_shape("rms_norm", input, normalized_shape)
    check_param_shape("rms_norm", "weight", weight, shape)
    # torch's rms_norm also takes complex inputs (and any weight dtype).
    check_floating_input("rms_norm", input, allow_complex=True)

    acc = accumulation_dtype(input.dtype)
    if eps is None:
        eps = torch.finfo(acc).eps
    x = input.to(acc)
    dims = tuple(range(-len(shape), 0))
    mean_square = (x * x).mean(dim=dims, keepdim=True)
    y = x * torch.rsqrt(mean_square + eps)
    if weight is not None:
        y = y * weight.to(acc)
    return y.to(input.dtype)


@torch.fx.wrap
def batch_norm(
    input: Tensor,
    running_mean: Tensor | None,
    running_var: Tensor | None,
    weight: Tensor | None = None,
    bias: Tensor | None = None,
    training: bool = False,
    momentum: float = 0.1,
    eps: float = 1e-05,
) -> Tensor:
    r"""Apply Batch Normalization to each channel ``C`` of an ``(N, C, *)`` input.

    .. math::
        y = \frac{x - \mathrm{E}[x]}{\sqrt{\mathrm{Var}[x] + \epsilon}} * \gamma + \beta

    In training (``training=True``) the mean and biased variance are taken per
    channel over the batch and any trailing dimensions, and, when running
    statistics are given, they are updated in place:

    .. math::
        \hat{\mu} \leftarrow (1 - m)\,\hat{\mu} + m\,\mu_B, \qquad
        \hat{\sigma}^2 \leftarrow (1 - m)\,\hat{\sigma}^2 + m\,\frac{n}{n - 1}\,\sigma_B^2

    with :math:`m` = ``momentum`` and :math:`n` values per channel: the batch is
    normalized with its *biased* variance, but the running estimate stores the
    *unbiased* one. In evaluation (``training=False``) the running statistics are
    used instead of the batch's.

    Args:
        input: of shape ``(N, C, *)``.
        running_mean: the running mean, of shape ``(C,)``, or ``None``.
        running_var: the running (unbiased) variance, of shape ``(C,)``, or ``None``.
            Both are required when ``training=False``.
        weight: :math:`\gamma`, with ``C`` elements, or ``None`` for 1.
        bias: :math:`\beta`, with ``C`` elements, or ``None`` for 0.
        training: use (and update) batch statistics. Default: ``False``
        momentum: the update factor :math:`m` of the running statistics. Default: 0.1
        eps: added to the variance inside the square root; must be positive in
            training and non-negative in evaluation. Default: 1e-5

    A float32 input is computed in float64 and rounded once, at the end: a channel's
    statistics (and, in the backward, its gradient sums) run over the whole batch, and
    torch's CPU kernel sums them in double too. Half-precision inputs are computed in float32.

    .. note::
        With float16/bfloat16 *parameters* (not float32 ones), torch's CPU kernel
        rounds the batch mean and 1/std to that dtype before normalizing; here they
        stay in float32, so the two can differ by an ulp of the half type.

    Shape:
        - Input: :math:`(N, C, *)`
        - Output: same shape as input, same dtype as input

    Examples::

        >>> x = torch.tensor([[1.0, 10.0], [3.0, 30.0]])  # 2 samples, 2 features
        >>> mean, var = torch.zeros(2), torch.ones(2)
        >>> batch_norm(x, mean, var, training=True)  # each column: mean 0, variance 1
        tensor([[-1.0000, -1.0000],
                [ 1.0000,  1.0000]])
        >>> mean  # 0.9 * 0 + 0.1 * batch mean
        tensor([0.2000, 2.0000])
        >>> var  # 0.9 * 1 + 0.1 * unbiased batch variance (2 and 200)
        tensor([ 1.1000, 20.9000])
    """
    op = "batch_norm"
    # The checks torch makes in Python, in its order (with its messages).
    if training:
        verify_batch_size(input.size())
    if training and eps <= 0.0:
        raise ValueError(f"batch_norm eps must be positive during training, but got {eps}")
    elif eps < 0.0:
        raise ValueError(f"batch_norm eps must be non-negative, but got {eps}")
    if momentum is None:
        raise TypeError(
            "batch_norm(): argument 'momentum' must be float, but got None "
            "(BatchNorm1d(momentum=None) computes 1 / num_batches_tracked for it)"
        )
    if input.numel() == 0:
        # torch's kernel returns before any other check for an empty input (even a 1-D one):
        # a copy, scaled and shifted by the first gamma and beta, so the result stays in the graph
        return _empty_batch_norm(input, weight, bias)
    if training and (running_mean is None) != (running_var is None):
        raise ValueError(
            "batch_norm(): running_mean and running_var must either both be None or neither "
            f"be None, but got running_mean={_describe(running_mean)} and "
            f"running_var={_describe(running_var)}"
        )
    if not training:
        for name, stat in (("running_mean", running_mean), ("running_var", running_var)):
            if stat is None:
                raise RuntimeError(
                    f"batch_norm(): {name} must be defined in evaluation mode "
                    f"(training=False), but got {name}=None"
                )

    # torch counts a 1-D input as having 0 channels, so any parameter mismatches.
    num_channels = input.shape[1] if input.dim() > 1 else 0
    check_channel_vector(op, "weight", weight, num_channels, strict_1d=False)
    check_channel_vector(op, "bias", bias, num_channels, strict_1d=False)
    check_channel_vector(op, "running_mean", running_mean, num_channels, strict_1d=True)
    check_channel_vector(op, "running_var", running_var, num_channels, strict_1d=True)
    check_param_dtypes(
        op,
        input,
        {"weight": weight, "bias": bias, "running_mean": running_mean, "running_var": running_var},
    )
    check_running_stats_not_differentiable(op, running_mean, running_var)
    check_floating_input(op, input)
    if input.dim() < 2:
        raise IndexError(
            f"batch_norm(): expected input of shape (N, C, *) with at least 2 dimensions, "
            f"but got input of shape {list(input.shape)}"
        )

    return _batch_norm_unchecked(
        input, running_mean, running_var, weight, bias, training, momentum, eps
    )


def _batch_norm_unchecked(
    input: Tensor,
    running_mean: Tensor | None,
    running_var: Tensor | None,
    weight: Tensor | None,
    bias: Tensor | None,
    training: bool,
    momentum: float,
    eps: float,
) -> Tensor:
    """batch_norm's arithmetic on arguments already checked (by batch_norm or instance_norm)."""
    num_channels = input.shape[1]
    acc = batch_statistics_dtype(input.dtype)
    x = input.to(acc)
    channel_shape = _channel_shape(input)
    if training:
        dims = (0, *range(2, input.dim()))  # every dimension but the channels
        x_hat, mean, var = _standardize(x, dims, eps)
        if running_mean is not None and input.numel() > 0:
            n = input.numel() // num_channels  # values per channel
            _update_running_stats(running_mean, running_var, mean, var * n / (n - 1), momentum)
    else:
        mean = running_mean.to(acc).reshape(channel_shape)
        var = running_var.to(acc).reshape(channel_shape)
        x_hat = (x - mean) * torch.rsqrt(var + eps)
    return _affine(x_hat, weight, bias, channel_shape).to(input.dtype)


def _empty_batch_norm(input: Tensor, weight: Tensor | None, bias: Tensor | None) -> Tensor:
    """An empty input's result as torch's kernel makes it: ``input * weight[0] + bias[0]``."""
    out = input.clone()
    if weight is not None:
        out = out * weight[0]
    if bias is not None:
        out = out + bias[0]
    return out


def _update_running_stats(
    running_mean: Tensor,
    running_var: Tensor,
    batch_mean: Tensor,
    unbiased_var: Tensor,
    momentum: float,
) -> None:
    """Exponential moving average, in place: the buffers are the caller's (a module's)."""
    with torch.no_grad():  # running statistics are data, not part of the graph
        acc = batch_mean.dtype
        new_mean = (1 - momentum) * running_mean.to(acc) + momentum * batch_mean.flatten()
        new_var = (1 - momentum) * running_var.to(acc) + momentum * unbiased_var.flatten()
        running_mean.copy_(new_mean)
        running_var.copy_(new_var)


def _describe(stat: Tensor | None) -> str:
    return "None" if stat is None else f"a tensor of shape {list(stat.shape)}"


@torch.fx.wrap
def group_norm(
    input: Tensor,
    num_groups: int,
    weight: Tensor | None = None,
    bias: Tensor | None = None,
    eps: float = 1e-05,
) -> Tensor:
    r"""Apply Group Normalization: each sample's channels are split into groups.

    .. math::
        y = \frac{x - \mathrm{E}[x]}{\sqrt{\mathrm{Var}[x] + \epsilon}} * \gamma + \beta

    The ``C`` channels of each sample are split into ``num_groups`` groups of
    ``C / num_groups`` consecutive channels; mean and biased variance are taken over
    each group (and all trailing dimensions). ``num_groups=1`` is LayerNorm over
    ``(C, *)`` with per-channel :math:`\gamma, \beta`; ``num_groups=C`` is
    InstanceNorm.

    Args:
        input: of shape ``(N, C, *)``.
        num_groups (int): number of groups; must divide ``C``.
        weight: :math:`\gamma`, of shape ``(C,)``, or ``None`` for 1.
        bias: :math:`\beta`, of shape ``(C,)``, or ``None`` for 0.
        eps: added to the variance inside the square root. Default: 1e-5

    Shape:
        - Input: :math:`(N, C, *)`
        - Output: same shape as input, same dtype as input

    Examples::

        >>> x = torch.tensor([[[1.0], [3.0], [10.0], [30.0]]])  # N=1, C=4, L=1
        >>> group_norm(x, 2).flatten()  # groups {1, 3} and {10, 30}
        tensor([-1.0000,  1.0000, -1.0000,  1.0000])
    """
    op = "group_norm"
    num_groups = check_num_groups(num_groups)
    if input.dim() < 2:
        raise RuntimeError(
            f"group_norm(): expected input of shape (N, C, *) with at least 2 dimensions, "
            f"but got input of shape {list(input.shape)}"
        )
    batch, channels = input.shape[:2]
    spatial = list(input.shape[2:])
    if num_groups == 0:  # torch fails here dividing by num_groups, hence the type
        raise ZeroDivisionError(
            f"group_norm(): expected num_groups to be a positive divisor of the "
            f"{channels} channels, but got num_groups=0"
        )
    verify_batch_size([batch * channels // num_groups, num_groups, *spatial])
    if num_groups < 0 or channels % num_groups != 0:
        raise RuntimeError(
            f"group_norm(): expected num_groups to be a positive divisor of the number of "
            f"channels {channels} (input.shape[1]), but got num_groups={num_groups} for "
            f"input of shape {list(input.shape)}"
        )
    check_channel_vector(op, "weight", weight, channels, strict_1d=True)
    check_channel_vector(op, "bias", bias, channels, strict_1d=True)
    check_param_dtypes(op, input, {"weight": weight, "bias": bias})
    check_floating_input(op, input)

    # (N, C, *) -> (N, G, C/G, *): each group's values then share dims 2, 3, ...
    grouped = input.to(accumulation_dtype(input.dtype)).reshape(
        batch, num_groups, channels // num_groups, *spatial
    )
    x_hat, _, _ = _standardize(grouped, tuple(range(2, grouped.dim())), eps)
    x_hat = x_hat.reshape(input.shape)
    return _affine(x_hat, weight, bias, _channel_shape(input)).to(input.dtype)


@torch.fx.wrap
def instance_norm(
    input: Tensor,
    running_mean: Tensor | None = None,
    running_var: Tensor | None = None,
    weight: Tensor | None = None,
    bias: Tensor | None = None,
    use_input_stats: bool = True,
    momentum: float = 0.1,
    eps: float = 1e-5,
) -> Tensor:
    r"""Apply Instance Normalization to each channel of each sample of an ``(N, C, *)`` input.

    .. math::
        y = \frac{x - \mathrm{E}[x]}{\sqrt{\mathrm{Var}[x] + \epsilon}} * \gamma + \beta

    With ``use_input_stats=True`` the mean and biased variance are taken over the
    spatial dimensions ``*`` of one channel of one sample: BatchNorm applied to each
    sample alone. That is how torch computes it, and how we do: the ``(N, C, *)``
    input is viewed as one sample with ``N * C`` channels, :math:`\gamma, \beta` and
    the running statistics are repeated ``N`` times, and batch normalization runs on
    that. Given running statistics are then updated with the *average over the batch*
    of the per-sample updates:

    .. math::
        \hat{\mu} \leftarrow (1 - m)\,\hat{\mu} + m\,\frac{1}{N}\sum_{n} \mu_{n}, \qquad
        \hat{\sigma}^2 \leftarrow (1 - m)\,\hat{\sigma}^2
            + m\,\frac{1}{N}\sum_{n} \frac{k}{k - 1}\,\sigma_{n}^2

    with :math:`k` values per channel and sample. With ``use_input_stats=False`` the
    running statistics normalize instead (both are then required).

    Args:
        input: of shape ``(N, C, *)``.
        running_mean, running_var: of shape ``(C,)``, or ``None``. Default: ``None``
        weight: :math:`\gamma`, of shape ``(C,)``, or ``None`` for 1.
        bias: :math:`\beta`, of shape ``(C,)``, or ``None`` for 0.
        use_input_stats: normalize with each instance's statistics (and update the
            running ones) rather than with the running ones. Default: ``True``
        momentum: the update factor :math:`m` of the running statistics. Default: 0.1
        eps: added to the variance inside the square root. Default: 1e-5

    Shape:
        - Input: :math:`(N, C, *)`
        - Output: same shape as input, same dtype as input

    Examples::

        >>> x = torch.tensor([[[1.0, 3.0], [10.0, 30.0]]])  # N=1, C=2, L=2
        >>> instance_norm(x)
        tensor([[[-1.0000,  1.0000],
                 [-1.0000,  1.0000]]])
    """
    op = "instance_norm"
    if momentum is None:
        raise TypeError("instance_norm(): argument 'momentum' must be float, but got None")
    if use_input_stats and math.prod(input.shape[2:]) == 1:  # torch's _verify_spatial_size
        raise ValueError(
            f"Expected more than 1 spatial element when training, got input size {input.size()}"
        )
    if not use_input_stats and (running_mean is None or running_var is None):
        raise RuntimeError(
            "instance_norm(): expected running_mean and running_var to be defined when "
            f"use_input_stats=False, but got running_mean={_describe(running_mean)} and "
            f"running_var={_describe(running_var)}"
        )
    if input.dim() < 2:
        raise IndexError(
            f"instance_norm(): expected input of shape (N, C, *) with at least 2 dimensions, "
            f"but got input of shape {list(input.shape)}"
        )
    batch, channels = input.shape[:2]
    stats = {
        "weight": weight,
        "bias": bias,
        "running_mean": running_mean,
        "running_var": running_var,
    }
    for name, param in stats.items():
        check_channel_vector(op, name, param, channels, strict_1d=True)
    if (running_mean is None) != (running_var is None):
        raise ValueError(
            "instance_norm(): running_mean and running_var must either both be None or neither "
            f"be None, but got running_mean={_describe(running_mean)} and "
            f"running_var={_describe(running_var)}"
        )
    check_param_dtypes(op, input, stats)
    check_running_stats_not_differentiable(op, running_mean, running_var)
    check_floating_input(op, input)
    if input.numel() == 0:  # as torch's kernel: a copy, scaled and shifted by gamma[0], beta[0]
        if batch == 0 and (weight is not None or bias is not None):
            raise IndexError(
                "instance_norm(): expected at least one sample to apply weight and bias to "
                "(torch repeats them N = 0 times and reads the first), but got input of "
                f"shape {list(input.shape)}"
            )
        return _empty_batch_norm(input, weight, bias)

    def repeat(t: Tensor | None) -> Tensor | None:  # one copy per sample: (C,) -> (N * C,)
        return None if t is None else t.repeat(batch)

    # (N, C, *) -> (1, N * C, *): each (sample, channel) pair becomes a channel of its own.
    as_channels = input.reshape(1, batch * channels, *input.shape[2:])
    mean_, var_ = repeat(running_mean), repeat(running_var)
    out = _batch_norm_unchecked(
        as_channels, mean_, var_, repeat(weight), repeat(bias), use_input_stats, momentum, eps
    )
    if use_input_stats and running_mean is not None:
        with torch.no_grad():  # the N per-sample updates, averaged back into one per channel
            running_mean.copy_(mean_.view(batch, channels).mean(0))
            running_var.copy_(var_.view(batch, channels).mean(0))
    return out.reshape(input.shape)


@torch.fx.wrap
def normalize(x: Tensor, dims: int | tuple[int, ...], eps: float = 1e-5) -> Tensor:
    r"""Standardize ``x`` over ``dims``: the one idea behind every norm layer here.

    .. math::
        \hat{x} = \frac{x - \mathrm{E}_{\text{dims}}[x]}{\sqrt{\mathrm{Var}_{\text{dims}}[x] + \epsilon}}

    with the mean and the biased variance taken over ``dims`` (one value of each
    for every index of the other dimensions), and no :math:`\gamma, \beta`. Each norm
    is this on its own dims, for an ``(N, C, H, W)`` input:

    - BatchNorm (training): ``dims=(0, 2, 3)``, statistics per channel;
    - LayerNorm over ``(C, H, W)``: ``dims=(1, 2, 3)``, per sample;
    - InstanceNorm: ``dims=(2, 3)``, per sample and channel;
    - GroupNorm with ``G`` groups: ``dims=(2, 3, 4)`` of ``x.reshape(N, G, C // G, H, W)``.

    RMSNorm is the exception: it divides by the root mean square without centring.

    Args:
        x: a floating-point tensor of any shape.
        dims (int or tuple of ints): the dimensions the statistics are taken over;
            negative values count from the end.
        eps: added to the variance inside the square root. Default: 1e-5

    Shape:
        - Input: any
        - Output: same shape as input, same dtype as input

    Examples::

        >>> x = torch.tensor([[1.0, 3.0], [10.0, 30.0]])
        >>> normalize(x, 1)  # per row
        tensor([[-1.0000,  1.0000],
                [-1.0000,  1.0000]])
        >>> normalize(x, 0)  # per column
        tensor([[-1.0000, -1.0000],
                [ 1.0000,  1.0000]])
    """
    dims = _check_dims("normalize", x, dims)
    check_floating_input("normalize", x)
    x_hat, _, _ = _standardize(x.to(accumulation_dtype(x.dtype)), dims, eps)
    return x_hat.to(x.dtype)


def _check_dims(op: str, x: Tensor, dims: object) -> tuple[int, ...]:
    """``dims`` as a tuple of distinct dimensions of ``x``, each non-negative."""
    given = (dims,) if isinstance(dims, int) else dims
    if (
        isinstance(dims, bool)
        or not isinstance(given, (tuple, list))
        or not all(isinstance(d, int) and not isinstance(d, bool) for d in given)
    ):
        raise TypeError(
            f"{op}(): argument 'dims' must be an int or a tuple of ints such as (1, 2), "
            f"but got {type(dims).__name__} {dims!r}"
        )
    if len(given) == 0:
        raise ValueError(f"{op}(): expected at least one dimension in dims, but got dims={dims!r}")
    for d in given:
        if not -x.dim() <= d < x.dim():
            raise IndexError(
                f"{op}(): expected each of dims in [{-x.dim()}, {x.dim() - 1}] for input of "
                f"shape {list(x.shape)}, but got dims={dims!r}"
            )
    resolved = tuple(d % x.dim() for d in given)
    if len(set(resolved)) != len(resolved):
        raise ValueError(
            f"{op}(): expected distinct dimensions in dims, but got dims={dims!r} "
            f"(dimensions {list(resolved)})"
        )
    return resolved
