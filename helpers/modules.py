r"""Drop-in replacements for ``nn.LayerNorm``, ``nn.RMSNorm``, ``nn.BatchNorm1d``,
``nn.BatchNorm2d``, ``nn.GroupNorm`` and ``nn.InstanceNorm2d``; and DyT, which torch does not
have.

Each class *subclasses* torch's own and overrides only ``forward``, which calls the
readable function of the same name in :mod:`helpers.functional`. Everything else is
torch's: the constructor, the parameters and buffers, ``state_dict`` and its loading
(old checkpoints included), ``reset_parameters`` and ``repr``. So a model built with
``nn.LayerNorm`` can use ``helpers.LayerNorm`` instead and load the same checkpoint, and
code that asks what a module is (``isinstance(m, nn.LayerNorm)``: weight-decay grouping,
``nn.SyncBatchNorm.convert_sync_batchnorm``, initialisation schemes) treats the two alike.

>>> import torch
>>> from torch import nn
>>> ours, theirs = LayerNorm(4), nn.LayerNorm(4)
>>> ours
LayerNorm((4,), eps=1e-05, elementwise_affine=True, bias=True)
>>> isinstance(ours, nn.LayerNorm)
True
>>> _ = theirs.load_state_dict(ours.state_dict())
>>> x = torch.randn(2, 3, 4)
>>> torch.allclose(ours(x), theirs(x), atol=1e-6)
True

Where torch's code does not call ``forward``, the from-scratch computation does not run:

- **torch's fused fast path.** ``nn.TransformerEncoderLayer`` (and ``nn.TransformerEncoder``)
  in evaluation, under ``torch.no_grad()`` (with ``batch_first=True`` and its other
  conditions met), hands ``norm1.weight``, ``norm1.bias``, ``norm2.weight`` and
  ``norm2.bias`` to one fused C++ kernel and never calls the norms. The results agree to
  float32 rounding; to have the norms run, turn the fast path off with
  ``torch.backends.mha.set_fastpath_enabled(False)``.
- **Code that needs an exact type.** ``torch.ao.quantization.fuse_modules`` looks up
  ``type(module)`` in a table of torch's classes, so it refuses to fuse ``nn.Conv2d`` with
  ``helpers.BatchNorm2d`` (``AssertionError: did not find fuser method``); fuse
  torch's classes, or pass ``additional_fuser_method_mapping``.
- **TorchScript.** ``torch.jit.script`` cannot compile the functions' Python (see the
  README); ``torch.fx.symbolic_trace``, ``torch.compile`` and ``torch.export`` work.

Tracing with ``torch.fx``: the argument checks branch on the input's shape in Python,
which symbolic tracing cannot see, so the functions (and the modules' forward logic that
branches on the input) are registered with ``torch.fx.wrap``: a traced model records each
as one call, and runs it, checks included, with the real tensors. Unlike torch's norm
modules, which ``torch.fx`` keeps as calls to the module, helpers' are traced through, so
a traced graph keeps the mode it was traced in (trace a BatchNorm model once in training
and once in evaluation, as torchvision's feature extraction does, to have both), and only
the buffers its graph reads (not the ``num_batches_tracked`` that InstanceNorm registers
with ``track_running_stats=True`` and never uses).
"""

from __future__ import annotations

import math
import numbers
import warnings

import torch
from torch import Size, Tensor, nn
from torch.nn import init

from helpers import functional as HF

__all__ = [
    "BatchNorm1d",
    "BatchNorm2d",
    "DyT",
    "GroupNorm",
    "InstanceNorm2d",
    "LayerNorm",
    "RMSNorm",
]

_shape_t = int | list[int] | Size


def _as_shape(normalized_shape: _shape_t) -> tuple[int, ...]:
    # The modules (unlike the functions) accept a bare int: DyT(512).
    if isinstance(normalized_shape, numbers.Integral):
        return (normalized_shape,)
    return tuple(normalized_shape)


def _reset_affine(module: nn.Module) -> None:
    """``weight`` to 1 and ``bias`` to 0: a fresh layer only standardizes."""
    if module.weight is not None:
        init.ones_(module.weight)
    if module.bias is not None:
        init.zeros_(module.bias)


# Module code that branches on the input (its rank, its shape) lives in module-level
# functions registered with torch.fx.wrap (_batch_norm_forward, _instance_norm_forward,
# _check_trailing_shape): symbolic tracing runs forward with stand-ins that have no shape,
# so such a branch cannot be traced; wrapped, each function is one node of the traced graph,
# and runs with the real input whenever the graph runs.


def _check_input_rank(input: Tensor, ranks: tuple[int, ...]) -> None:
    """torch's ``_check_input_dim``, with its message: ``input`` has one of ``ranks`` dimensions."""
    if input.dim() not in ranks:
        expected = " or ".join(f"{rank}D" for rank in ranks)
        raise ValueError(f"expected {expected} input (got {input.dim()}D input)")


class LayerNorm(nn.LayerNorm):
    r"""Applies Layer Normalization over the last dimensions of each sample.

    .. math::
        y = \frac{x - \mathrm{E}[x]}{\sqrt{\mathrm{Var}[x] + \epsilon}} * \gamma + \beta

    The mean and the biased variance are computed over the last ``D`` dimensions,
    where ``D = len(normalized_shape)``: per token with ``normalized_shape=dim``,
    per sentence with ``normalized_shape=(seq_len, dim)``. Each sample uses only its
    own statistics, in training and in evaluation alike: LayerNorm keeps no running
    mean or variance. :math:`\gamma` (``weight``) and :math:`\beta` (``bias``) are
    learned per element, initialised to 1 and 0.

    A subclass of ``nn.LayerNorm`` whose ``forward`` is :func:`helpers.functional.layer_norm`.
    ``nn.TransformerEncoderLayer``'s fused fast path (evaluation under ``torch.no_grad()``)
    reads ``weight`` and ``bias`` without calling it: see this module's docstring.

    Args:
        normalized_shape (int or list or torch.Size): the trailing shape to
            normalize over; an int means the last dimension only.
        eps: added to the variance inside the square root. Default: 1e-5
        elementwise_affine: learn ``weight`` (and ``bias``) of shape
            ``normalized_shape``. Default: ``True``
        bias: learn ``bias`` too (only with ``elementwise_affine``). Default: ``True``
        device, dtype: where and in what dtype to create the parameters.

    Shape:
        - Input: :math:`(N, *)`
        - Output: :math:`(N, *)` (same shape as input)

    Examples::

        >>> batch, seq_len, dim = 2, 3, 4
        >>> x = torch.rand(batch, seq_len, dim)
        >>> per_token = LayerNorm(dim)
        >>> per_token(x).mean(-1).abs().max() < 1e-6
        tensor(True)
        >>> per_sentence = LayerNorm((seq_len, dim), elementwise_affine=False)
        >>> per_sentence(x).shape
        torch.Size([2, 3, 4])
    """

    def forward(self, input: Tensor) -> Tensor:
        return HF.layer_norm(input, self.normalized_shape, self.weight, self.bias, self.eps)


class RMSNorm(nn.RMSNorm):
    r"""Applies Root Mean Square Layer Normalization over the last dimensions.

    .. math::
        y_i = \frac{x_i}{\mathrm{RMS}(x)} * \gamma_i, \quad
        \text{where} \quad \mathrm{RMS}(x) = \sqrt{\epsilon + \frac{1}{n} \sum_{i=1}^{n} x_i^2}

    A subclass of ``nn.RMSNorm`` whose ``forward`` is :func:`helpers.functional.rms_norm`.

    Args:
        normalized_shape (int or list or torch.Size): the trailing shape to
            normalize over; an int means the last dimension only.
        eps: added to the mean square inside the square root. Default: ``None``,
            the machine epsilon of the computation dtype
            (``torch.finfo(torch.float32).eps`` for half and float32 inputs).
        elementwise_affine: learn a ``weight`` of shape ``normalized_shape``,
            initialised to 1. Default: ``True``
        device, dtype: where and in what dtype to create the parameters.

    Shape:
        - Input: :math:`(N, *)`
        - Output: :math:`(N, *)` (same shape as input)

    Examples::

        >>> rms = RMSNorm([2, 3])
        >>> x = torch.randn(2, 2, 3)
        >>> mean_square = rms(x).pow(2).mean((-2, -1))  # 1 for each sample
        >>> torch.allclose(mean_square, torch.ones(2), atol=1e-5)
        True
    """

    def forward(self, x: Tensor) -> Tensor:
        return HF.rms_norm(x, self.normalized_shape, self.weight, self.eps)


@torch.fx.wrap
def _batch_norm_forward(
    input: Tensor,
    ranks: tuple[int, ...],
    running_mean: Tensor | None,
    running_var: Tensor | None,
    num_batches_tracked: Tensor | None,
    weight: Tensor | None,
    bias: Tensor | None,
    training: bool,
    track_running_stats: bool,
    momentum: float | None,
    eps: float,
) -> Tensor:
    """BatchNorm1d's and BatchNorm2d's forward, as torch's ``_BatchNorm.forward``.

    A function rather than a method so that torch.fx records it as one call: it branches on
    the input's rank, and it counts the batch in ``num_batches_tracked`` each time it runs
    (traced through, the count would happen once, while tracing).
    """
    _check_input_rank(input, ranks)

    # Batch statistics in training, and in evaluation when none are tracked.
    use_batch_stats = training or (running_mean is None and running_var is None)
    # Update the running statistics only while training and tracking them.
    update = training and track_running_stats
    factor = 0.0 if momentum is None else momentum
    if update and num_batches_tracked is not None:
        num_batches_tracked.add_(1)
        if momentum is None:  # cumulative moving average: the k-th batch weighs 1/k
            factor = 1.0 / float(num_batches_tracked)

    # A module that does not track (or a training one that is not allowed to
    # update) passes no buffers, so the function leaves them alone.
    keep_buffers = not training or track_running_stats
    return HF.batch_norm(
        input,
        running_mean if keep_buffers else None,
        running_var if keep_buffers else None,
        weight,
        bias,
        use_batch_stats,
        factor,
        eps,
    )


class _BatchNormForward:
    """BatchNorm1d's and BatchNorm2d's ``forward``; each class names the input ranks it takes.

    Mixed in before torch's class, which supplies everything else (``nn.BatchNorm1d``'s
    buffers, ``reset_running_stats``, loading of checkpoints without ``num_batches_tracked``).
    """

    _ranks: tuple[int, ...]

    def forward(self, input: Tensor) -> Tensor:
        return _batch_norm_forward(
            input,
            self._ranks,
            self.running_mean,
            self.running_var,
            self.num_batches_tracked,
            self.weight,
            self.bias,
            self.training,
            self.track_running_stats,
            self.momentum,
            self.eps,
        )


class BatchNorm1d(_BatchNormForward, nn.BatchNorm1d):
    r"""Applies Batch Normalization over a 2D ``(N, C)`` or 3D ``(N, C, L)`` input.

    .. math::
        y = \frac{x - \mathrm{E}[x]}{\sqrt{\mathrm{Var}[x] + \epsilon}} * \gamma + \beta

    In training, mean and biased variance are computed per channel over the batch
    (and length), and the running estimates are updated:

    .. math::
        \hat{x}_\text{new} = (1 - \text{momentum}) \times \hat{x} + \text{momentum} \times x_t

    where :math:`x_t` is the batch mean, or the batch's *unbiased* variance. With
    ``momentum=None`` the update factor is ``1 / num_batches_tracked``, a cumulative
    (simple) average of all batches seen. In evaluation the running estimates are
    used instead of the batch's statistics, unless ``track_running_stats=False``.

    A subclass of ``nn.BatchNorm1d`` (and so of torch's ``_BatchNorm`` and ``_NormBase``)
    whose ``forward`` is :func:`helpers.functional.batch_norm`; code that asks
    ``isinstance`` treats it as torch's (``nn.SyncBatchNorm.convert_sync_batchnorm``
    converts it to torch's ``nn.SyncBatchNorm``). Code that looks up the exact type does
    not: ``torch.ao.quantization.fuse_modules`` refuses to fuse it with the layer before it
    (``AssertionError: did not find fuser method``).

    Args:
        num_features: the number of channels :math:`C`.
        eps: added to the variance inside the square root. Default: 1e-5
        momentum: the update factor of the running statistics, or ``None`` for a
            cumulative moving average. Default: 0.1
        affine: learn ``weight`` (and ``bias``) of shape ``(C,)``. Default: ``True``
        track_running_stats: keep ``running_mean``, ``running_var`` and
            ``num_batches_tracked`` buffers; without them, batch statistics are
            used in evaluation too. Default: ``True``
        device, dtype: where and in what dtype to create parameters and buffers.
        bias: learn ``bias`` too (only with ``affine``). Default: ``True``

    Shape:
        - Input: :math:`(N, C)` or :math:`(N, C, L)`
        - Output: same shape as input

    Examples::

        >>> bn = BatchNorm1d(3, momentum=None)
        >>> for _ in range(4):
        ...     _ = bn(torch.randn(8, 3) + 5)
        >>> bn.num_batches_tracked
        tensor(4)
        >>> bool(((bn.running_mean - 5).abs() < 1).all())  # the average of 4 batch means
        True
    """

    _ranks = (2, 3)


class BatchNorm2d(_BatchNormForward, nn.BatchNorm2d):
    r"""Applies Batch Normalization over a 4D ``(N, C, H, W)`` input.

    As :class:`BatchNorm1d`, with the statistics of each channel taken over the
    batch and both spatial dimensions, ``N * H * W`` values. A subclass of
    ``nn.BatchNorm2d``; ``torch.ao.quantization.fuse_modules`` refuses to fuse it with the
    convolution before it, as it looks up exact types.

    Args: as :class:`BatchNorm1d`.

    Shape:
        - Input: :math:`(N, C, H, W)`
        - Output: same shape as input

    Examples::

        >>> bn = BatchNorm2d(3)
        >>> y = bn(torch.randn(4, 3, 5, 5) * 2 + 1)
        >>> bool(y.mean((0, 2, 3)).abs().max() < 1e-5)  # each channel: mean 0
        True
    """

    _ranks = (4,)


@torch.fx.wrap
def _instance_norm_forward(
    input: Tensor,
    unbatched_rank: int,
    num_features: int,
    affine: bool,
    running_mean: Tensor | None,
    running_var: Tensor | None,
    weight: Tensor | None,
    bias: Tensor | None,
    use_input_stats: bool,
    momentum: float,
    eps: float,
) -> Tensor:
    """InstanceNorm2d's forward, torch's checks included.

    A function rather than a method so that torch.fx can record it as one call: an input
    without its batch dimension is handled as a batch of one, a branch on its rank.
    """
    _check_input_rank(input, (unbatched_rank, unbatched_rank + 1))
    feature_dim = input.dim() - unbatched_rank
    if input.size(feature_dim) != num_features:
        if affine:
            raise ValueError(
                f"expected input's size at dim={feature_dim} to match num_features"
                f" ({num_features}), but got: {input.size(feature_dim)}."
            )
        warnings.warn(
            f"input's size at dim={feature_dim} does not match num_features. "
            "You can silence this warning by not passing in num_features, "
            "which is not used because affine=False",
            stacklevel=3,
        )
    unbatched = input.dim() == unbatched_rank
    x = input.unsqueeze(0) if unbatched else input
    y = HF.instance_norm(
        x, running_mean, running_var, weight, bias, use_input_stats, momentum, eps
    )
    return y.squeeze(0) if unbatched else y


class _InstanceNormForward:
    """InstanceNorm2d's ``forward``, mixed in before torch's class
    (affine and running statistics off by default, the loading of pre-0.4 checkpoints)."""

    def forward(self, input: Tensor) -> Tensor:
        return _instance_norm_forward(
            input,
            self._get_no_batch_dim(),
            self.num_features,
            self.affine,
            self.running_mean,
            self.running_var,
            self.weight,
            self.bias,
            # Unlike BatchNorm, InstanceNorm never counts batches: momentum=None means 0.
            self.training or not self.track_running_stats,
            0.0 if self.momentum is None else self.momentum,
            self.eps,
        )


class InstanceNorm2d(_InstanceNormForward, nn.InstanceNorm2d):
    r"""Applies Instance Normalization over a ``(N, C, H, W)`` or ``(C, H, W)`` input.

    .. math::
        y = \frac{x - \mathrm{E}[x]}{\sqrt{\mathrm{Var}[x] + \epsilon}} * \gamma + \beta

    Mean and biased variance are computed over ``H`` and ``W`` for each channel of each
    sample: the per-image contrast normalization of style transfer. With
    ``track_running_stats=True`` the running estimates are updated in training (the batch
    average of each sample's update) and used in evaluation.

    A subclass of ``nn.InstanceNorm2d`` (and so of torch's ``_InstanceNorm`` and
    ``_NormBase``) whose ``forward`` is :func:`helpers.functional.instance_norm`.

    Args:
        num_features: the number of channels :math:`C`.
        eps: added to the variance inside the square root. Default: 1e-5
        momentum: the update factor of the running statistics (``None`` means 0).
            Default: 0.1
        affine: learn per-channel ``weight`` (and ``bias``). Default: ``False``
        track_running_stats: keep running statistics and use them in evaluation.
            Default: ``False``
        device, dtype: where and in what dtype to create parameters and buffers.
        bias: learn ``bias`` too (only with ``affine``). Default: ``True``

    Shape:
        - Input: :math:`(N, C, H, W)` or :math:`(C, H, W)`
        - Output: same shape as input

    Examples::

        >>> inorm = InstanceNorm2d(3, affine=True)
        >>> inorm(torch.randn(2, 3, 4, 4)).shape
        torch.Size([2, 3, 4, 4])
    """


class GroupNorm(nn.GroupNorm):
    r"""Applies Group Normalization over a mini-batch of ``(N, C, *)`` inputs.

    .. math::
        y = \frac{x - \mathrm{E}[x]}{\sqrt{\mathrm{Var}[x] + \epsilon}} * \gamma + \beta

    Each sample's ``num_channels`` channels are split into ``num_groups`` groups;
    mean and biased variance are computed per group. :math:`\gamma` and
    :math:`\beta` are per channel. ``GroupNorm(1, C)`` normalizes like LayerNorm
    over ``(C, *)``; ``GroupNorm(C, C)`` like InstanceNorm.

    A subclass of ``nn.GroupNorm`` whose ``forward`` is :func:`helpers.functional.group_norm`.

    Args:
        num_groups (int): number of groups; must divide ``num_channels``.
        num_channels (int): number of channels expected in the input.
        eps: added to the variance inside the square root. Default: 1e-5
        affine: learn per-channel ``weight`` (and ``bias``). Default: ``True``
        device, dtype: where and in what dtype to create the parameters.
        bias: learn ``bias`` too (only with ``affine``). Default: ``True``

    Shape:
        - Input: :math:`(N, C, *)` where :math:`C=\text{num\_channels}`
        - Output: :math:`(N, C, *)` (same shape as input)

    Examples::

        >>> gn = GroupNorm(3, 6)  # 3 groups of 2 channels
        >>> gn(torch.randn(20, 6, 10)).shape
        torch.Size([20, 6, 10])
    """

    def __init__(
        self,
        num_groups: int,
        num_channels: int,
        eps: float = 1e-5,
        affine: bool = True,
        device=None,
        dtype=None,
        *,
        bias: bool = True,
    ) -> None:
        if num_groups == 0:  # torch raises this type too, computing num_channels % 0
            raise ZeroDivisionError(
                f"num_groups must be a positive divisor of num_channels ({num_channels}), "
                f"but got num_groups=0"
            )
        super().__init__(num_groups, num_channels, eps, affine, device, dtype, bias=bias)

    def forward(self, input: Tensor) -> Tensor:
        return HF.group_norm(input, self.num_groups, self.weight, self.bias, self.eps)


@torch.fx.wrap
def _check_trailing_shape(x: Tensor, shape: tuple[int, ...]) -> None:
    """DyT's input must end in its ``normalized_shape``, as LayerNorm's must."""
    if tuple(x.shape[-len(shape) :]) != shape or x.dim() < len(shape):
        expected = ", ".join(["*", *map(str, shape)])
        raise RuntimeError(
            f"DyT: given normalized_shape={list(shape)}, expected input with shape "
            f"[{expected}], but got input of shape {list(x.shape)}"
        )


class DyT(nn.Module):
    r"""Dynamic Tanh: an element-wise stand-in for a norm layer, with no statistics.

    .. math::
        y = \gamma \odot \tanh(\alpha x) + \beta

    ``alpha`` is one learnable scalar; :math:`\gamma` (``weight``, ones) and
    :math:`\beta` (``bias``, zeros) are per element over ``normalized_shape``, the
    trailing dimensions, as LayerNorm's are. Zhu, Chen, He, LeCun and Liu (CVPR 2025)
    replace every LayerNorm of a Transformer with it, starting from ``alpha = 0.5``.
    Each output lies in :math:`[\beta - |\gamma|, \beta + |\gamma|]`, and with
    :math:`\beta = 0` the layer is odd: ``DyT(-x) = -DyT(x)``.

    Args:
        normalized_shape (int or list or torch.Size): the trailing shape of
            ``weight`` and ``bias``; an int means the last dimension only.
        alpha_init_value (float): the initial ``alpha``. Default: 0.5
        device, dtype: where and in what dtype to create the parameters.

    Shape:
        - Input: :math:`(*, \text{normalized\_shape})`
        - Output: same shape as input

    Examples::

        >>> dyt = DyT(4)
        >>> dyt
        DyT((4,), alpha_init_value=0.5)
        >>> bool(dyt(100 * torch.randn(2, 3, 4)).abs().max() <= 1)  # |tanh| <= 1
        True
    """

    def __init__(
        self, normalized_shape: _shape_t, alpha_init_value: float = 0.5, device=None, dtype=None
    ) -> None:
        factory_kwargs = {"device": device, "dtype": dtype}
        super().__init__()
        shape = _as_shape(normalized_shape)
        if len(shape) == 0 or not all(
            isinstance(n, numbers.Integral) and not isinstance(n, bool) and n > 0 for n in shape
        ):
            raise ValueError(
                "DyT: expected normalized_shape to be a positive int or a non-empty sequence "
                f"of positive ints, but got {normalized_shape!r}"
            )
        if (
            isinstance(alpha_init_value, bool)
            or not isinstance(alpha_init_value, numbers.Real)
            or not math.isfinite(alpha_init_value)
        ):
            raise ValueError(
                "DyT: expected alpha_init_value to be a finite real number, "
                f"but got {alpha_init_value!r}"
            )
        self.normalized_shape = tuple(int(n) for n in shape)
        self.alpha_init_value = float(alpha_init_value)
        # One scalar for the whole layer, stored with shape (1,) as the paper's code does.
        self.alpha = nn.Parameter(torch.empty(1, **factory_kwargs))
        self.weight = nn.Parameter(torch.empty(self.normalized_shape, **factory_kwargs))
        self.bias = nn.Parameter(torch.empty(self.normalized_shape, **factory_kwargs))
        self.reset_parameters()

    def reset_parameters(self) -> None:
        """``alpha`` to its initial value, ``weight`` to 1 and ``bias`` to 0."""
        init.constant_(self.alpha, self.alpha_init_value)
        _reset_affine(self)

    def forward(self, x: Tensor) -> Tensor:
        _check_trailing_shape(x, self.normalized_shape)
        return self.weight * torch.tanh(self.alpha * x) + self.bias

    def extra_repr(self) -> str:
        return f"{self.normalized_shape}, alpha_init_value={self.alpha_init_value}"
