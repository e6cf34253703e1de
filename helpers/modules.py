r"""Drop-in replacements for ``nn.LayerNorm``, ``nn.RMSNorm``, ``nn.BatchNorm1d``,
``nn.BatchNorm2d``, ``nn.GroupNorm``, ``nn.InstanceNorm1d`` and ``nn.InstanceNorm2d``;
and DyT, which torch does not have.

Same constructor signatures, parameter and buffer names, ``state_dict`` keys,
``repr`` and running-statistics updates as torch's modules, so that a model built
with ``nn.LayerNorm`` can use ``helpers.LayerNorm`` instead and load the same
checkpoint. Each ``forward`` calls the readable function of the same name in
:mod:`helpers.functional`.

>>> import torch
>>> from torch import nn
>>> ours, theirs = LayerNorm(4), nn.LayerNorm(4)
>>> ours
LayerNorm((4,), eps=1e-05, elementwise_affine=True, bias=True)
>>> _ = theirs.load_state_dict(ours.state_dict())
>>> x = torch.randn(2, 3, 4)
>>> torch.allclose(ours(x), theirs(x), atol=1e-6)
True
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
    "InstanceNorm1d",
    "InstanceNorm2d",
    "LayerNorm",
    "RMSNorm",
]

_shape_t = int | list[int] | Size


def _as_shape(normalized_shape: _shape_t) -> tuple[int, ...]:
    # The modules (unlike the functions) accept a bare int: LayerNorm(512).
    if isinstance(normalized_shape, numbers.Integral):
        return (normalized_shape,)
    return tuple(normalized_shape)


def _add_affine(module: nn.Module, enabled: bool, bias: bool, shape, factory_kwargs) -> None:
    """Register ``weight`` and ``bias`` as torch's norm layers do: a disabled one is
    registered as ``None``, so ``module.bias`` exists but stays out of ``state_dict``."""
    if enabled:
        module.weight = nn.Parameter(torch.empty(shape, **factory_kwargs))
        if bias:
            module.bias = nn.Parameter(torch.empty(shape, **factory_kwargs))
        else:
            module.register_parameter("bias", None)
    else:
        module.register_parameter("weight", None)
        module.register_parameter("bias", None)


def _reset_affine(module: nn.Module) -> None:
    """``weight`` to 1 and ``bias`` to 0: a fresh layer only standardizes."""
    if module.weight is not None:
        init.ones_(module.weight)
    if module.bias is not None:
        init.zeros_(module.bias)


class LayerNorm(nn.Module):
    r"""Applies Layer Normalization over the last dimensions of each sample.

    .. math::
        y = \frac{x - \mathrm{E}[x]}{\sqrt{\mathrm{Var}[x] + \epsilon}} * \gamma + \beta

    The mean and the biased variance are computed over the last ``D`` dimensions,
    where ``D = len(normalized_shape)``: per token with ``normalized_shape=dim``,
    per sentence with ``normalized_shape=(seq_len, dim)``. Each sample uses only its
    own statistics, in training and in evaluation alike: LayerNorm keeps no running
    mean or variance. :math:`\gamma` (``weight``) and :math:`\beta` (``bias``) are
    learned per element, initialised to 1 and 0.

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

    __constants__ = ["normalized_shape", "eps", "elementwise_affine"]
    normalized_shape: tuple[int, ...]
    eps: float
    elementwise_affine: bool

    def __init__(
        self,
        normalized_shape: _shape_t,
        eps: float = 1e-5,
        elementwise_affine: bool = True,
        bias: bool = True,
        device=None,
        dtype=None,
    ) -> None:
        factory_kwargs = {"device": device, "dtype": dtype}
        super().__init__()
        self.normalized_shape = _as_shape(normalized_shape)
        self.eps = eps
        self.elementwise_affine = elementwise_affine
        _add_affine(self, elementwise_affine, bias, self.normalized_shape, factory_kwargs)
        self.reset_parameters()

    def reset_parameters(self) -> None:
        """Set ``weight`` to 1 and ``bias`` to 0: the layer starts as a pure standardizer."""
        _reset_affine(self)

    def forward(self, input: Tensor) -> Tensor:
        return HF.layer_norm(input, self.normalized_shape, self.weight, self.bias, self.eps)

    def extra_repr(self) -> str:
        return (
            f"{self.normalized_shape}, eps={self.eps}, "
            f"elementwise_affine={self.elementwise_affine}, bias={self.bias is not None}"
        )


class RMSNorm(nn.Module):
    r"""Applies Root Mean Square Layer Normalization over the last dimensions.

    .. math::
        y_i = \frac{x_i}{\mathrm{RMS}(x)} * \gamma_i, \quad
        \text{where} \quad \mathrm{RMS}(x) = \sqrt{\epsilon + \frac{1}{n} \sum_{i=1}^{n} x_i^2}

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

    __constants__ = ["normalized_shape", "eps", "elementwise_affine"]
    normalized_shape: tuple[int, ...]
    eps: float | None
    elementwise_affine: bool

    def __init__(
        self,
        normalized_shape: _shape_t,
        eps: float | None = None,
        elementwise_affine: bool = True,
        device=None,
        dtype=None,
    ) -> None:
        factory_kwargs = {"device": device, "dtype": dtype}
        super().__init__()
        self.normalized_shape = _as_shape(normalized_shape)
        self.eps = eps
        self.elementwise_affine = elementwise_affine
        if elementwise_affine:
            self.weight = nn.Parameter(torch.empty(self.normalized_shape, **factory_kwargs))
        else:
            self.register_parameter("weight", None)
        self.reset_parameters()

    def reset_parameters(self) -> None:
        """Set ``weight`` to 1."""
        if self.elementwise_affine:
            init.ones_(self.weight)

    def forward(self, x: Tensor) -> Tensor:
        return HF.rms_norm(x, self.normalized_shape, self.weight, self.eps)

    def extra_repr(self) -> str:
        return (
            f"{self.normalized_shape}, eps={self.eps}, elementwise_affine={self.elementwise_affine}"
        )


class _NormBase(nn.Module):
    """What BatchNorm and InstanceNorm share, as in torch: ``weight``/``bias`` of shape
    ``(C,)``, the ``running_mean``/``running_var``/``num_batches_tracked`` buffers
    (registered as ``None`` when not tracked), their reset, ``repr`` and loading."""

    _version = 2  # version 2 added num_batches_tracked; keeps old checkpoints loading
    __constants__ = ["track_running_stats", "momentum", "eps", "num_features", "affine"]
    num_features: int
    eps: float
    momentum: float | None
    affine: bool
    track_running_stats: bool

    def __init__(
        self,
        num_features: int,
        eps: float = 1e-5,
        momentum: float | None = 0.1,
        affine: bool = True,
        track_running_stats: bool = True,
        device=None,
        dtype=None,
        *,
        bias: bool = True,
    ) -> None:
        factory_kwargs = {"device": device, "dtype": dtype}
        super().__init__()
        self.num_features = num_features
        self.eps = eps
        self.momentum = momentum
        self.affine = affine
        self.track_running_stats = track_running_stats
        _add_affine(self, affine, bias, (num_features,), factory_kwargs)
        if track_running_stats:
            self.register_buffer("running_mean", torch.zeros(num_features, **factory_kwargs))
            self.register_buffer("running_var", torch.ones(num_features, **factory_kwargs))
            # A count, so always int64 whatever the module's dtype.
            self.register_buffer(
                "num_batches_tracked", torch.tensor(0, dtype=torch.long, device=device)
            )
        else:
            self.register_buffer("running_mean", None)
            self.register_buffer("running_var", None)
            self.register_buffer("num_batches_tracked", None)
        self.reset_parameters()

    def reset_running_stats(self) -> None:
        """Forget all batches seen: mean 0, variance 1, count 0."""
        if self.track_running_stats:
            self.running_mean.zero_()
            self.running_var.fill_(1)
            self.num_batches_tracked.zero_()

    def reset_parameters(self) -> None:
        """Reset the running statistics, ``weight`` to 1 and ``bias`` to 0."""
        self.reset_running_stats()
        _reset_affine(self)

    def extra_repr(self) -> str:
        return (
            f"{self.num_features}, eps={self.eps}, momentum={self.momentum}, "
            f"affine={self.affine}, bias={self.bias is not None}, "
            f"track_running_stats={self.track_running_stats}"
        )

    def _load_from_state_dict(
        self, state_dict, prefix, local_metadata, strict, missing_keys, unexpected_keys, error_msgs
    ) -> None:
        # Checkpoints saved before num_batches_tracked existed (version < 2) lack it:
        # keep the current count instead of reporting a missing key, as torch does.
        version = local_metadata.get("version", None)
        key = prefix + "num_batches_tracked"
        if (version is None or version < 2) and self.track_running_stats and key not in state_dict:
            state_dict[key] = (
                self.num_batches_tracked
                if self.num_batches_tracked is not None
                and self.num_batches_tracked.device != torch.device("meta")
                else torch.tensor(0, dtype=torch.long)
            )
        super()._load_from_state_dict(
            state_dict, prefix, local_metadata, strict, missing_keys, unexpected_keys, error_msgs
        )


class _BatchNorm(_NormBase):
    """The BatchNorm forward; subclasses only say which input ranks they accept."""

    def _check_input_dim(self, input: Tensor) -> None:
        raise NotImplementedError

    def forward(self, input: Tensor) -> Tensor:
        self._check_input_dim(input)

        # Batch statistics in training, and in evaluation when none are tracked.
        use_batch_stats = self.training or (self.running_mean is None and self.running_var is None)
        # Update the running statistics only while training and tracking them.
        update = self.training and self.track_running_stats
        momentum = 0.0 if self.momentum is None else self.momentum
        if update and self.num_batches_tracked is not None:
            self.num_batches_tracked.add_(1)
            if self.momentum is None:  # cumulative moving average: the k-th batch weighs 1/k
                momentum = 1.0 / float(self.num_batches_tracked)

        # A module that does not track (or a training one that is not allowed to
        # update) passes no buffers, so the function leaves them alone.
        keep_buffers = not self.training or self.track_running_stats
        return HF.batch_norm(
            input,
            self.running_mean if keep_buffers else None,
            self.running_var if keep_buffers else None,
            self.weight,
            self.bias,
            use_batch_stats,
            momentum,
            self.eps,
        )


class BatchNorm1d(_BatchNorm):
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

    def _check_input_dim(self, input: Tensor) -> None:
        if input.dim() != 2 and input.dim() != 3:
            raise ValueError(f"expected 2D or 3D input (got {input.dim()}D input)")


class BatchNorm2d(_BatchNorm):
    r"""Applies Batch Normalization over a 4D ``(N, C, H, W)`` input.

    As :class:`BatchNorm1d`, with the statistics of each channel taken over the
    batch and both spatial dimensions, ``N * H * W`` values.

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

    def _check_input_dim(self, input: Tensor) -> None:
        if input.dim() != 4:
            raise ValueError(f"expected 4D input (got {input.dim()}D input)")


class _InstanceNorm(_NormBase):
    """The InstanceNorm forward: affine and running statistics off by default, and an
    input without its batch dimension treated as a batch of one, as in torch."""

    _ranks: tuple[int, int]  # (without batch dimension, with it)

    def __init__(
        self,
        num_features: int,
        eps: float = 1e-5,
        momentum: float = 0.1,
        affine: bool = False,
        track_running_stats: bool = False,
        device=None,
        dtype=None,
        *,
        bias: bool = True,
    ) -> None:
        super().__init__(
            num_features, eps, momentum, affine, track_running_stats, device, dtype, bias=bias
        )

    def forward(self, input: Tensor) -> Tensor:
        unbatched, batched = self._ranks
        if input.dim() not in self._ranks:
            raise ValueError(
                f"expected {unbatched}D or {batched}D input (got {input.dim()}D input)"
            )
        feature_dim = input.dim() - unbatched
        if input.size(feature_dim) != self.num_features:
            if self.affine:
                raise ValueError(
                    f"expected input's size at dim={feature_dim} to match num_features"
                    f" ({self.num_features}), but got: {input.size(feature_dim)}."
                )
            warnings.warn(
                f"input's size at dim={feature_dim} does not match num_features. "
                "You can silence this warning by not passing in num_features, "
                "which is not used because affine=False",
                stacklevel=2,
            )
        x = input.unsqueeze(0) if input.dim() == unbatched else input
        # Unlike BatchNorm, InstanceNorm never counts batches: momentum=None means 0.
        y = HF.instance_norm(
            x,
            self.running_mean,
            self.running_var,
            self.weight,
            self.bias,
            self.training or not self.track_running_stats,
            0.0 if self.momentum is None else self.momentum,
            self.eps,
        )
        return y.squeeze(0) if input.dim() == unbatched else y

    def _load_from_state_dict(
        self, state_dict, prefix, local_metadata, strict, missing_keys, unexpected_keys, error_msgs
    ) -> None:
        # Checkpoints from before torch 0.4 (no version) stored running statistics that
        # InstanceNorm no longer tracks by default: report them, and drop them, as torch does.
        version = local_metadata.get("version", None)
        stale = [prefix + name for name in ("running_mean", "running_var")]
        stale = [key for key in stale if key in state_dict]
        if version is None and not self.track_running_stats and stale:
            klass = type(self).__name__
            names = " and ".join(f'"{key}"' for key in stale)
            error_msgs.append(
                f"Unexpected running stats buffer(s) {names} for "
                f"{klass} with track_running_stats=False. If state_dict is a checkpoint saved "
                f"before 0.4.0, this may be expected because {klass} does not track running "
                "stats by default since 0.4.0. Please remove these keys from state_dict. If the "
                f"running stats are actually needed, instead set track_running_stats=True in "
                f"{klass} to enable them. See the documentation of {klass} for details."
            )
            for key in stale:
                state_dict.pop(key)
        super()._load_from_state_dict(
            state_dict, prefix, local_metadata, strict, missing_keys, unexpected_keys, error_msgs
        )


class InstanceNorm1d(_InstanceNorm):
    r"""Applies Instance Normalization over a ``(N, C, L)`` or ``(C, L)`` input.

    .. math::
        y = \frac{x - \mathrm{E}[x]}{\sqrt{\mathrm{Var}[x] + \epsilon}} * \gamma + \beta

    Mean and biased variance are computed over ``L`` for each channel of each
    sample. With ``track_running_stats=True`` the running estimates are updated in
    training (the batch average of each sample's update) and used in evaluation.

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
        - Input: :math:`(N, C, L)` or :math:`(C, L)`
        - Output: same shape as input

    Examples::

        >>> inorm = InstanceNorm1d(3)
        >>> y = inorm(torch.randn(2, 3, 8) * 4 + 2)
        >>> bool(y.mean(-1).abs().max() < 1e-5)  # each sample's channel: mean 0
        True
    """

    _ranks = (2, 3)


class InstanceNorm2d(_InstanceNorm):
    r"""Applies Instance Normalization over a ``(N, C, H, W)`` or ``(C, H, W)`` input.

    As :class:`InstanceNorm1d`, with the statistics of each channel of each sample
    taken over ``H`` and ``W``: the per-image contrast normalization of style transfer.

    Args: as :class:`InstanceNorm1d`.

    Shape:
        - Input: :math:`(N, C, H, W)` or :math:`(C, H, W)`
        - Output: same shape as input

    Examples::

        >>> inorm = InstanceNorm2d(3, affine=True)
        >>> inorm(torch.randn(2, 3, 4, 4)).shape
        torch.Size([2, 3, 4, 4])
    """

    _ranks = (3, 4)


class GroupNorm(nn.Module):
    r"""Applies Group Normalization over a mini-batch of ``(N, C, *)`` inputs.

    .. math::
        y = \frac{x - \mathrm{E}[x]}{\sqrt{\mathrm{Var}[x] + \epsilon}} * \gamma + \beta

    Each sample's ``num_channels`` channels are split into ``num_groups`` groups;
    mean and biased variance are computed per group. :math:`\gamma` and
    :math:`\beta` are per channel. ``GroupNorm(1, C)`` normalizes like LayerNorm
    over ``(C, *)``; ``GroupNorm(C, C)`` like InstanceNorm.

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

    __constants__ = ["num_groups", "num_channels", "eps", "affine"]
    num_groups: int
    num_channels: int
    eps: float
    affine: bool

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
        factory_kwargs = {"device": device, "dtype": dtype}
        super().__init__()
        if num_groups == 0:  # torch raises this type too, computing num_channels % 0
            raise ZeroDivisionError(
                f"num_groups must be a positive divisor of num_channels ({num_channels}), "
                f"but got num_groups=0"
            )
        if num_channels % num_groups != 0:
            raise ValueError(
                f"num_channels ({num_channels}) must be divisible by num_groups ({num_groups})"
            )
        self.num_groups = num_groups
        self.num_channels = num_channels
        self.eps = eps
        self.affine = affine
        _add_affine(self, affine, bias, (num_channels,), factory_kwargs)
        self.reset_parameters()

    def reset_parameters(self) -> None:
        """Set ``weight`` to 1 and ``bias`` to 0."""
        _reset_affine(self)

    def forward(self, input: Tensor) -> Tensor:
        return HF.group_norm(input, self.num_groups, self.weight, self.bias, self.eps)

    def extra_repr(self) -> str:
        return (
            f"{self.num_groups}, {self.num_channels}, eps={self.eps}, "
            f"affine={self.affine}, bias={self.bias is not None}"
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
        shape = self.normalized_shape
        if tuple(x.shape[-len(shape) :]) != shape or x.dim() < len(shape):
            expected = ", ".join(["*", *map(str, shape)])
            raise RuntimeError(
                f"DyT: given normalized_shape={list(shape)}, expected input with shape "
                f"[{expected}], but got input of shape {list(x.shape)}"
            )
        return self.weight * torch.tanh(self.alpha * x) + self.bias

    def extra_repr(self) -> str:
        return f"{self.normalized_shape}, alpha_init_value={self.alpha_init_value}"
