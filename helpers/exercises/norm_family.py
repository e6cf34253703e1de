"""Deep dive 15's exercises: GroupNorm by hand, and LN as a projection then a scaling.

- :func:`check_group_norm_by_hand`: ``fn(x, groups, eps)``, GroupNorm without affine parameters
  on ``(N, C, *)``: each sample's channels split into ``groups`` consecutive blocks, one mean and
  one (biased) variance per block.
- :func:`check_ln_by_geometry`: ``fn(x)``, LN over the last dim with ``eps = 0`` written as
  geometry: project onto the hyperplane orthogonal to ``(1, ..., 1)``, then scale onto the
  sphere of radius ``sqrt(n)``.

While a check runs, torch's norm functions and this set's own refuse to run
(:data:`helpers.exercises.checking.ALWAYS_FORBIDDEN`).
"""

from __future__ import annotations

from collections.abc import Callable

import torch

from helpers.exercises.checking import Case, Exercise, Verdict, check, register

__all__ = ["check_group_norm_by_hand", "check_ln_by_geometry"]


def _group_stats(x: torch.Tensor, groups: int, eps: float, *, unbiased: bool = False,
                 eps_outside: bool = False, interleaved: bool = False, one_pass: bool = False) -> torch.Tensor:
    """GroupNorm by reshaping, and the classic mistakes as options: the reference and its slips."""
    n, c = x.shape[:2]
    if interleaved:  # channel k in group k % groups: a strided split, not consecutive blocks
        g = x.reshape(n, c // groups, groups, -1).transpose(1, 2).reshape(n, groups, -1)
    else:
        g = x.reshape(n, groups, -1)
    mean = g.mean(-1, keepdim=True)
    if one_pass:
        var = (g * g).mean(-1, keepdim=True) - mean * mean
    else:
        var = ((g - mean) ** 2).sum(-1, keepdim=True) / (g.shape[-1] - (1 if unbiased else 0))
    y = (g - mean) / (var.sqrt() + eps if eps_outside else (var + eps).sqrt())
    if interleaved:
        return y.reshape(n, groups, c // groups, -1).transpose(1, 2).reshape(x.shape)
    return y.reshape(x.shape)


def _group_reference(x: torch.Tensor, groups: int, eps: float) -> torch.Tensor:
    return torch.nn.functional.group_norm(x, groups, eps=eps)


def _images(n, c, h, w, groups, mean=0.0, std=1.0):
    return lambda g: (mean + std * torch.randn(n, c, h, w, generator=g, dtype=torch.float64), groups, 1e-5)


register(Exercise(
    name="group_norm_by_hand",
    reference=_group_reference,
    cases=[
        Case("2 images, 4 channels of 3x3, 2 groups", _images(2, 4, 3, 3, 2)),
        Case("3 images, 6 channels of 4x4, 3 groups, mean 5 and std 3", _images(3, 6, 4, 4, 3, 5.0, 3.0)),
        Case("1 image, 8 channels of 2x2, 4 groups", _images(1, 8, 2, 2, 4)),
        Case("2 sequences (N, C, L) = (2, 6, 5), 2 groups",
             lambda g: (torch.randn(2, 6, 5, generator=g, dtype=torch.float64), 2, 1e-5)),
        Case("2 images, 4 channels of 2x2, 1 group, values barely differ (std 1e-3)",
             _images(2, 4, 2, 2, 1, 1.0, 1e-3)),
        Case("2 float32 images, 4 channels of 4x4, 2 groups, around 10000 (std 500)",
             lambda g: (1e4 + 500 * torch.randn(2, 4, 4, 4, generator=g), 2, 1e-5)),
    ],
    mistakes={
        "a group is a block of consecutive channels: channels 0 .. C/G - 1 form group 0. "
        "`x.reshape(N, G, -1)` takes them in that order; a reshape to (N, C/G, G, ...) deals them out "
        "like cards.": lambda x, groups, eps: _group_stats(x, groups, eps, interleaved=True),
        "you normalized each channel on its own (InstanceNorm): a group pools C/G channels AND all "
        "their positions.": lambda x, groups, eps: _group_stats(x, x.shape[1], eps),
        "you normalized each sample as a whole (LayerNorm over C, H, W): split the channels into "
        "`groups` blocks first.": lambda x, groups, eps: _group_stats(x, 1, eps),
        "GroupNorm divides by the number of values (biased variance): use `correction=0` or "
        "`((g - mean) ** 2).mean(...)`.": lambda x, groups, eps: _group_stats(x, groups, eps, unbiased=True),
        "eps goes inside the square root: `torch.sqrt(var + eps)`.":
            lambda x, groups, eps: _group_stats(x, groups, eps, eps_outside=True),
        "E[x²] - E[x]² cancels catastrophically when the mean is large: take the mean of the squared "
        "deviations, ((g - mean) ** 2).mean(...)": lambda x, groups, eps: _group_stats(x, groups, eps, one_pass=True),
    },
    hint="reshape to (N, groups, -1), take the mean and the biased variance over the last dim with "
         "keepdim=True, normalise, and reshape back to x.shape.",
    example="torch.randn(2, 4, 3, 3), 2, 1e-5",
))


def _geometry_reference(x: torch.Tensor) -> torch.Tensor:
    centred = x - x.mean(-1, keepdim=True)
    return centred / centred.norm(dim=-1, keepdim=True) * x.shape[-1] ** 0.5


def _vectors(shape, mean=0.0, std=1.0):
    return lambda g: (mean + std * torch.randn(*shape, generator=g, dtype=torch.float64),)


register(Exercise(
    name="ln_by_geometry",
    reference=_geometry_reference,
    cases=[
        Case("one 3-vector", _vectors((3,))),
        Case("5 vectors of 3, mean 4", _vectors((5, 3), mean=4.0)),
        Case("2 x 3 vectors of 8, std 10", _vectors((2, 3, 8), std=10.0)),
    ],
    mistakes={
        "the sphere's radius is sqrt(n), not 1: LN's output has mean square 1, so its length is "
        "sqrt(n).": lambda x: _geometry_reference(x) / x.shape[-1] ** 0.5,
        "project first: subtract the mean (the component along (1, ..., 1)) before scaling. Without "
        "it you wrote RMSNorm.": lambda x: x / x.norm(dim=-1, keepdim=True) * x.shape[-1] ** 0.5,
        "the radius is sqrt(n), not n.": lambda x: _geometry_reference(x) * x.shape[-1] ** 0.5,
        "now scale the projection onto the sphere: divide by its length, multiply by sqrt(n).":
            lambda x: x - x.mean(-1, keepdim=True),
    },
    hint="centred = x - x.mean(-1, keepdim=True); then centred / its length (torch.linalg.vector_norm "
         "over the last dim, keepdim=True) times sqrt(n).",
    example="torch.tensor([1.0, 2.0, 6.0])",
    forbidden=("torch.Tensor.var", "torch.var", "torch.Tensor.std", "torch.std", "torch.var_mean",
               "torch.std_mean"),
))


def check_group_norm_by_hand(fn: Callable[[torch.Tensor, int, float], torch.Tensor]) -> Verdict:
    """Check ``fn(x, groups, eps)``: GroupNorm of ``x`` ``(N, C, *)`` into ``groups`` groups of
    consecutive channels, no affine parameters."""
    return check("group_norm_by_hand", fn)


def check_ln_by_geometry(fn: Callable[[torch.Tensor], torch.Tensor]) -> Verdict:
    """Check ``fn(x)``: LN over the last dim with ``eps = 0``, as a projection onto the hyperplane
    orthogonal to ``(1, ..., 1)`` then a scaling onto the sphere of radius ``sqrt(n)``; the
    variance functions refuse to run (the point is the geometry: a mean and a length)."""
    return check("ln_by_geometry", fn)
