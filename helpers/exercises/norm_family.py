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
from helpers.language import Text


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
        Case(Text("2 images, 4 channels of 3x3, 2 groups",
                  "2 张图像，4 个 3x3 的通道，2 组"), _images(2, 4, 3, 3, 2)),
        Case(Text("3 images, 6 channels of 4x4, 3 groups, mean 5 and std 3",
                  "3 张图像，6 个 4x4 的通道，3 组，均值 5、标准差 3"), _images(3, 6, 4, 4, 3, 5.0, 3.0)),
        Case(Text("1 image, 8 channels of 2x2, 4 groups",
                  "1 张图像，8 个 2x2 的通道，4 组"), _images(1, 8, 2, 2, 4)),
        Case(Text("2 sequences (N, C, L) = (2, 6, 5), 2 groups",
                  "2 个序列，(N, C, L) = (2, 6, 5)，2 组"),
             lambda g: (torch.randn(2, 6, 5, generator=g, dtype=torch.float64), 2, 1e-5)),
        Case(Text("2 images, 4 channels of 2x2, 1 group, values barely differ (std 1e-3)",
                  "2 张图像，4 个 2x2 的通道，1 组，数值几乎相同（标准差 1e-3）"),
             _images(2, 4, 2, 2, 1, 1.0, 1e-3)),
        Case(Text("2 float32 images, 4 channels of 4x4, 2 groups, around 10000 (std 500)",
                  "2 张 float32 图像，4 个 4x4 的通道，2 组，在 10000 附近（标准差 500）"),
             lambda g: (1e4 + 500 * torch.randn(2, 4, 4, 4, generator=g), 2, 1e-5)),
    ],
    mistakes={
        Text("a group is a block of consecutive channels: channels 0 .. C/G - 1 form group 0. "
             "`x.reshape(N, G, -1)` takes them in that order; a reshape to (N, C/G, G, ...) deals them out "
             "like cards.",
             "一个组是一段连续的通道：通道 0 .. C/G - 1 构成第 0 组。`x.reshape(N, G, -1)` 正是按这个顺序取的；reshape 成 (N, C/G, G, ...) 则像发牌一样把通道轮流分到各组。"): lambda x, groups, eps: _group_stats(x, groups, eps, interleaved=True),
        Text("you normalized each channel on its own (InstanceNorm): a group pools C/G channels AND all "
             "their positions.",
             "你对每个通道分别做了归一化（InstanceNorm）：一个组要把 C/G 个通道连同它们的所有位置合在一起算。"): lambda x, groups, eps: _group_stats(x, x.shape[1], eps),
        Text("you normalized each sample as a whole (LayerNorm over C, H, W): split the channels into "
             "`groups` blocks first.",
             "你把每个样本整体做了归一化（在 C, H, W 上做 LayerNorm）：要先把通道分成 `groups` 段。"): lambda x, groups, eps: _group_stats(x, 1, eps),
        Text("GroupNorm divides by the number of values (biased variance): use `correction=0` or "
             "`((g - mean) ** 2).mean(...)`.",
             "GroupNorm 除以值的个数（有偏方差）：用 `correction=0` 或 `((g - mean) ** 2).mean(...)`。"): lambda x, groups, eps: _group_stats(x, groups, eps, unbiased=True),
        Text("eps goes inside the square root: `torch.sqrt(var + eps)`.",
             "eps 应放在根号里面：`torch.sqrt(var + eps)`。"):
            lambda x, groups, eps: _group_stats(x, groups, eps, eps_outside=True),
        Text("E[x²] - E[x]² cancels catastrophically when the mean is large: take the mean of the squared "
             "deviations, ((g - mean) ** 2).mean(...)",
             "均值很大时，E[x²] - E[x]² 会发生灾难性抵消：应对偏差的平方求均值，((g - mean) ** 2).mean(...)"): lambda x, groups, eps: _group_stats(x, groups, eps, one_pass=True),
    },
    hint=Text("reshape to (N, groups, -1), take the mean and the biased variance over the last dim with "
              "keepdim=True, normalise, and reshape back to x.shape.",
              "reshape 成 (N, groups, -1)，在最后一个轴上用 keepdim=True 求均值和有偏方差，做归一化，再 reshape 回 x.shape。"),
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
        Case(Text("one 3-vector",
                  "一个 3 维向量"), _vectors((3,))),
        Case(Text("5 vectors of 3, mean 4",
                  "5 个 3 维向量，均值 4"), _vectors((5, 3), mean=4.0)),
        Case(Text("2 x 3 vectors of 8, std 10",
                  "2 × 3 个 8 维向量，标准差 10"), _vectors((2, 3, 8), std=10.0)),
    ],
    mistakes={
        Text("the sphere's radius is sqrt(n), not 1: LN's output has mean square 1, so its length is "
             "sqrt(n).",
             "球面的半径是 sqrt(n)，不是 1：LN 输出的均方为 1，所以它的长度是 sqrt(n)。"): lambda x: _geometry_reference(x) / x.shape[-1] ** 0.5,
        Text("project first: subtract the mean (the component along (1, ..., 1)) before scaling. Without "
             "it you wrote RMSNorm.",
             "先投影：缩放之前减去均值（也就是沿 (1, ..., 1) 方向的分量）。少了这一步，你写的就是 RMSNorm。"): lambda x: x / x.norm(dim=-1, keepdim=True) * x.shape[-1] ** 0.5,
        Text("the radius is sqrt(n), not n.",
             "半径是 sqrt(n)，不是 n。"): lambda x: _geometry_reference(x) * x.shape[-1] ** 0.5,
        Text("now scale the projection onto the sphere: divide by its length, multiply by sqrt(n).",
             "接下来把投影缩放到球面上：除以它的长度，再乘以 sqrt(n)。"):
            lambda x: x - x.mean(-1, keepdim=True),
    },
    hint=Text("centred = x - x.mean(-1, keepdim=True); then centred / its length (torch.linalg.vector_norm "
              "over the last dim, keepdim=True) times sqrt(n).",
              "centred = x - x.mean(-1, keepdim=True)；然后用 centred 除以它的长度（在最后一个轴上用 torch.linalg.vector_norm，keepdim=True），再乘以 sqrt(n)。"),
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
