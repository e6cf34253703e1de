"""Argument checks shared by :mod:`helpers.functional`, :mod:`helpers.modules` and
:mod:`helpers.autograd`.

Each check raises where ``torch.nn.functional`` raises, with the same exception
type (``RuntimeError`` for shapes and dtypes, ``NotImplementedError`` for an input
dtype the op has no kernel for, ``TypeError`` for an argument of the wrong Python
type, ``ValueError`` where torch's Python layer uses it), but with a message that
names the argument, what was expected and what was received.

Every message starts with the op's name, e.g. ``layer_norm(): ...``.
"""

from __future__ import annotations

import operator
from collections.abc import Sequence

import torch
from torch import Tensor

#: The dtypes torch's norm kernels accept for their input.
FLOATING_DTYPES = (torch.float16, torch.bfloat16, torch.float32, torch.float64)
#: Half-precision dtypes: their statistics are accumulated in float32, as torch does.
REDUCED_DTYPES = (torch.float16, torch.bfloat16)


def accumulation_dtype(dtype: torch.dtype) -> torch.dtype:
    """The dtype statistics are computed in: float32 for float16/bfloat16 inputs.

    A float16 mean of 1024 values loses about three decimal digits and a float16
    sum of squares overflows beyond 65504, so torch's kernels (and ours) upcast
    half-precision inputs ("opmath" in ATen) and cast the result back once.
    """
    return torch.float32 if dtype in REDUCED_DTYPES else dtype


def batch_statistics_dtype(dtype: torch.dtype) -> torch.dtype:
    """The dtype BatchNorm (and InstanceNorm, computed as BatchNorm) works in: float64 for
    float32 inputs, float32 for float16/bfloat16 ones.

    One channel's statistics sum over the whole batch, often thousands of values; when the
    channel's mean is large against its spread, a float32 sum of them (and of the squared
    deviations, and of the gradients in the backward) loses the digits that matter. torch's
    CPU BatchNorm kernel therefore sums in double for a float32 input (``acc_type<float>``).
    Here the whole computation runs in float64 and is rounded to float32 once, at the end,
    so that autograd's sums in the backward are float64 too.
    """
    return torch.float64 if dtype == torch.float32 else accumulation_dtype(dtype)


def _as_int(value: object) -> int:
    """``operator.index`` without bools, as torch's int-list parser does."""
    if isinstance(value, bool):
        raise TypeError
    return operator.index(value)


def check_normalized_shape(op: str, input: Tensor, normalized_shape: object) -> tuple[int, ...]:
    """Return ``normalized_shape`` as a tuple after checking it against ``input``.

    Like ``F.layer_norm`` (and unlike ``nn.LayerNorm``), a bare int is refused.
    """
    if not isinstance(normalized_shape, (list, tuple)):  # torch.Size is a tuple
        raise TypeError(
            f"{op}(): argument 'normalized_shape' must be a tuple, list or torch.Size of "
            f"ints such as (4,), but got {type(normalized_shape).__name__} {normalized_shape!r}"
        )
    try:
        shape = tuple(_as_int(size) for size in normalized_shape)
    except TypeError:
        raise TypeError(
            f"{op}(): argument 'normalized_shape' must contain only ints, but got "
            f"{list(normalized_shape)!r}"
        ) from None
    if len(shape) == 0:
        raise RuntimeError(
            f"{op}(): expected normalized_shape to have at least one dimension, "
            f"but got normalized_shape={list(shape)}"
        )
    if tuple(input.shape[-len(shape) :]) != shape:
        expected = ", ".join(["*", *map(str, shape)])
        raise RuntimeError(
            f"{op}(): given normalized_shape={list(shape)}, expected input with shape "
            f"[{expected}], but got input of shape {list(input.shape)}"
        )
    return shape


def check_layer_norm_args(
    input: Tensor, normalized_shape: object, weight: Tensor | None, bias: Tensor | None
) -> tuple[int, ...]:
    """All of ``layer_norm``'s checks, in torch's order; returns ``normalized_shape``."""
    shape = check_normalized_shape("layer_norm", input, normalized_shape)
    check_param_shape("layer_norm", "weight", weight, shape)
    check_param_shape("layer_norm", "bias", bias, shape)
    check_param_dtypes("layer_norm", input, {"weight": weight, "bias": bias})
    check_floating_input("layer_norm", input)
    return shape


def check_param_shape(op: str, name: str, param: Tensor | None, shape: tuple[int, ...]) -> None:
    """A per-element parameter (LayerNorm's, RMSNorm's weight and bias) must have
    exactly ``normalized_shape``: a ``(1,)`` weight would broadcast silently."""
    if param is not None and tuple(param.shape) != shape:
        raise RuntimeError(
            f"{op}(): expected {name} to have the same shape as normalized_shape="
            f"{list(shape)}, but got {name} of shape {list(param.shape)}"
        )


def check_channel_vector(
    op: str, name: str, param: Tensor | None, num_channels: int, *, strict_1d: bool
) -> None:
    """A per-channel tensor (BatchNorm's and GroupNorm's weight, bias, running stats).

    ``strict_1d`` is how torch treats it: group_norm and batch_norm's running stats
    must be 1-D; batch_norm's weight and bias only need ``num_channels`` elements.
    """
    if param is None:
        return
    if param.numel() != num_channels or (strict_1d and param.dim() != 1):
        wanted = "a 1-D tensor of" if strict_1d else "a tensor with"
        raise RuntimeError(
            f"{op}(): expected {name} to be {wanted} {num_channels} elements, one per "
            f"channel (input.shape[1]), but got {name} of shape {list(param.shape)}"
        )


def check_floating_input(op: str, input: Tensor, *, allow_complex: bool = False) -> None:
    """Integer and bool inputs have no norm kernel in torch: NotImplementedError."""
    if input.dtype in FLOATING_DTYPES or (allow_complex and input.is_complex()):
        return
    kinds = "floating-point or complex" if allow_complex else "floating-point"
    raise NotImplementedError(
        f"{op}(): expected input to be a {kinds} tensor (float16, bfloat16, float32 or "
        f"float64), but got input of dtype {input.dtype}"
    )


def check_param_dtypes(op: str, input: Tensor, params: dict[str, Tensor | None]) -> None:
    """The parameters must share one dtype: the input's, or float32 for a half input.

    This is torch's CPU "mixed dtype" rule: a float16/bfloat16 input may come with
    float32 parameters (mixed-precision training keeps master weights in float32),
    but a float32 input with float64 weights, or a float16 weight beside a float32
    bias, is refused rather than silently promoted.
    """
    given = {name: p for name, p in params.items() if p is not None}
    if not given:
        return
    names = list(given)
    first = names[0]
    for name in names[1:]:
        if given[name].dtype != given[first].dtype:
            raise RuntimeError(
                f"{op}(): expected {first} and {name} to have the same dtype, but got "
                f"{first} of dtype {given[first].dtype} and {name} of dtype {given[name].dtype}"
            )
    allowed = [input.dtype]
    if input.dtype in REDUCED_DTYPES:
        allowed.append(torch.float32)
    if given[first].dtype not in allowed:
        wanted = " or ".join(str(d) for d in allowed)
        raise RuntimeError(
            f"{op}(): expected {' and '.join(names)} to have dtype {wanted} for an input "
            f"of dtype {input.dtype}, but got {first} of dtype {given[first].dtype}"
        )


def verify_batch_size(size: Sequence[int]) -> None:
    """Training-mode statistics need at least two values per channel.

    A port of ``torch.nn.functional._verify_batch_size``: ``size`` is
    ``(N, C, *spatial)`` and the number of values per channel is ``N * prod(spatial)``.
    With a single value the variance is 0 and the output is all zeros (or NaN for
    ``eps=0``), which is never what a learner wants.
    """
    values_per_channel = size[0]
    for extent in size[2:]:
        values_per_channel *= extent
    if values_per_channel == 1:
        raise ValueError(
            f"Expected more than 1 value per channel when training, got input size {size}"
        )


def check_num_groups(num_groups: object) -> int:
    """group_norm's ``num_groups`` must be a (non-bool) int, as torch's parser wants."""
    try:
        return _as_int(num_groups)
    except TypeError:
        raise TypeError(
            f"group_norm(): argument 'num_groups' must be int, but got "
            f"{type(num_groups).__name__} {num_groups!r}"
        ) from None


def check_running_stats_not_differentiable(
    op: str, running_mean: Tensor | None, running_var: Tensor | None
) -> None:
    """Running statistics are buffers, updated in place: torch refuses them as
    tensors that require grad while autograd is recording."""
    if not torch.is_grad_enabled():
        return
    for name, stat in (("running_mean", running_mean), ("running_var", running_var)):
        if stat is not None and stat.requires_grad:
            raise RuntimeError(
                f"{op}(): expected {name} not to require grad (it is a buffer updated in "
                f"place, not a parameter), but got {name} with requires_grad=True"
            )
