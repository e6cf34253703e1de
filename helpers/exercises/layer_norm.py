"""LayerNorm by hand (core notebooks 00 and 01, deep dive 14): the exercises and their checkers.

- :func:`check_layer_norm_last_dim` (core notebook 00: ``my_layer_norm(x, gamma, beta, eps)``),
  :func:`check_biased_variance` and :func:`check_output_variance` (deep dive 14): the formula,
  piece by piece.
- :func:`check_sentence_layer_norm`: LayerNorm per sentence (core notebook 01); the same over the real
  tokens of a padded batch is :func:`helpers.lessons.sequence.check_masked_sentence_layer_norm`,
  beside the reference it is checked against.

Each case set includes the inputs that catch the classic mistakes (E[x²] - E[x]² at a large mean,
the unbiased variance, eps outside the root, the wrong dims); while a check runs, torch's norm
functions and the set's own refuse to run (:data:`helpers.exercises.checking.ALWAYS_FORBIDDEN`).
"""

from __future__ import annotations

from collections.abc import Callable

import torch
import torch.nn.functional as F

from helpers.exercises.checking import Case, Exercise, Verdict, check, register
from helpers.language import Text

__all__ = ["check_biased_variance", "check_output_variance", "check_sentence_layer_norm"]


#: The hint for a function that ignores the ``eps`` it is given (both LayerNorm exercises).
_FIXED_EPS_HINT = Text("your function uses 1e-5 whatever eps is passed: use the argument, `torch.sqrt(var + eps)`.",
                       "不管传入的 eps 是多少，你的函数都用 1e-5，要用参数 eps，即 `torch.sqrt(var + eps)`。")
_ONE_PASS_HINT = (
    Text("E[x²] - E[x]² subtracts two huge, nearly equal numbers when the mean is large next to the "
         "spread, and float32 cancels catastrophically: centre first, then average the squares.",
         "均值远大于标准差时，E[x²] - E[x]² 是两个几乎相等的大数相减，float32 会发生灾难性抵消：先减去均值，再对平方求平均。"))


def _one_pass_var(x: torch.Tensor, dims: tuple[int, ...], *, keepdim: bool = True) -> torch.Tensor:
    """The one-pass shortcut E[x²] - E[x]², a classic mistake in float32 at a large mean."""
    return (x * x).mean(dim=dims, keepdim=keepdim) - x.mean(dim=dims, keepdim=keepdim) ** 2


# ------------------------------------------------ core notebook 01: LayerNorm per sentence


def _sentence_reference(x: torch.Tensor, eps: float = 1e-5) -> torch.Tensor:
    return F.layer_norm(x, x.shape[-2:], eps=eps)


def _randn_batch(batch: int, seq_len: int, dim: int, mean: float = 0.0,
                 std: float = 1.0) -> Callable[[torch.Generator], tuple]:
    return lambda g: (torch.randn(batch, seq_len, dim, generator=g) * std + mean,)


def _per_sentence(x: torch.Tensor, dims: tuple[int, ...], *, unbiased: bool = False,
                  eps_inside: bool = True, eps: float = 1e-5) -> torch.Tensor:
    """(x - mean) / sqrt(var + eps) over ``dims``: the right answer for dims (1, 2), else a slip."""
    mean = x.mean(dim=dims, keepdim=True)
    var = x.var(dim=dims, unbiased=unbiased, keepdim=True)
    return (x - mean) / (torch.sqrt(var + eps) if eps_inside else torch.sqrt(var) + eps)


register(Exercise(
    name="sentence_layer_norm",
    reference=_sentence_reference,
    cases=[
        Case(Text("the lesson's shape (2, 3, 4), from rand",
                  "原课程里的形状 (2, 3, 4)，取自 rand"), lambda g: (torch.rand(2, 3, 4, generator=g),)),
        Case(Text("3 sentences of 5 tokens x 8 features, mean 3 and std 10",
                  "3 个句子，每句 5 个 token × 8 个特征，均值 3、标准差 10"), _randn_batch(3, 5, 8, 3.0, 10.0)),
        Case(Text("1 sentence of 7 tokens x 4 features",
                  "1 个句子，7 个 token × 4 个特征"), _randn_batch(1, 7, 4)),
        Case(Text("2 sentences of 4 tokens x 8 features around 10000 (std 500)",
                  "2 个句子，每句 4 个 token × 8 个特征，在 10000 附近（标准差 500）"), _randn_batch(2, 4, 8, 1e4, 500.0)),
        Case(Text("2 sentences of 3 tokens x 4 features with std 0.1, eps = 0.1 passed in",
                  "2 个句子，每句 3 个 token × 4 个特征，标准差 0.1，传入 eps = 0.1"),
             lambda g: (*_randn_batch(2, 3, 4, 0.0, 0.1)(g), 0.1)),
    ],
    mistakes={
        Text("you normalized each token (statistics over the last dim only): a sentence's mean and "
             "variance are over its tokens AND features, `dim=(1, 2)`.",
             "你是对每个 token 分别归一化的（只在最后一个轴上算统计量）：一个句子的均值和方差要把它的 token 和特征全部算在内，`dim=(1, 2)`。"):
            lambda x, eps=1e-5: _per_sentence(x, (2,), eps=eps),
        Text("you took one mean and variance for the whole batch: each sentence needs its own, "
             "`dim=(1, 2)` with `keepdim=True`.",
             "你对整个批次只算了一个均值和方差：每个句子都需要自己的一组，`dim=(1, 2)` 并加上 `keepdim=True`。"):
            lambda x, eps=1e-5: _per_sentence(x, (0, 1, 2), eps=eps),
        Text("you averaged over the tokens only (`dim=1`), once per feature: take the features too, "
             "`dim=(1, 2)`.",
             "你只在 token 上求了平均（`dim=1`），每个特征各算一次：特征也要算进去，`dim=(1, 2)`。"):
            lambda x, eps=1e-5: _per_sentence(x, (1,), eps=eps),
        Text("`torch.var` divides by n - 1 unless you pass `unbiased=False`; LayerNorm divides by n.",
             "除非传入 `unbiased=False`，`torch.var` 会除以 n - 1；LayerNorm 除以 n。"):
            lambda x, eps=1e-5: _per_sentence(x, (1, 2), unbiased=True, eps=eps),
        Text("eps goes inside the square root: `torch.sqrt(var + eps)`, not `torch.sqrt(var) + eps`.",
             "eps 应放在根号里面：`torch.sqrt(var + eps)`，而不是 `torch.sqrt(var) + eps`。"):
            lambda x, eps=1e-5: _per_sentence(x, (1, 2), eps_inside=False, eps=eps),
        _ONE_PASS_HINT:
            lambda x, eps=1e-5: (x - x.mean(dim=(1, 2), keepdim=True)) / torch.sqrt(_one_pass_var(x, (1, 2)) + eps),
        _FIXED_EPS_HINT: lambda x, eps=1e-5: _per_sentence(x, (1, 2)),
    },
    hint=Text("per sentence: the mean and the biased variance over dims (1, 2) with `keepdim=True`, "
              "then (x - mean) / sqrt(var + eps), with the argument `eps`.",
              "以句子为单位，在轴 (1, 2) 上求均值和有偏方差，并加上 `keepdim=True`，然后用参数 `eps` 算 (x - mean) / sqrt(var + eps)。"),
    example="torch.rand(3, 5, 4)",
))


def check_sentence_layer_norm(fn: Callable[[torch.Tensor], torch.Tensor]) -> Verdict:
    """Check ``fn(x)``: LayerNorm per sentence (no gamma/beta, eps = 1e-5), ``x`` of shape
    ``(batch, seq_len, dim)``, any batch and length: ``F.layer_norm(x, x.shape[-2:])``."""
    return check("sentence_layer_norm", fn)


# ---------------------------------- the formula, piece by piece (core notebook 00, deep dive 14)

__all__ += ["check_layer_norm_last_dim"]


def _last_dim_reference(x: torch.Tensor, gamma: torch.Tensor, beta: torch.Tensor, eps: float = 1e-5) -> torch.Tensor:
    return F.layer_norm(x, x.shape[-1:], gamma, beta, eps=eps)


def _tokens(shape: tuple[int, ...], mean: float = 0.0, std: float = 1.0, *,
            affine: bool = True) -> Callable[[torch.Generator], tuple]:
    """``(x, gamma, beta)``: randn tokens, and random gamma/beta (or 1 and 0) of shape ``(dim,)``."""
    def make(g: torch.Generator) -> tuple:
        x = torch.randn(shape, generator=g) * std + mean
        dim = shape[-1]
        if not affine:
            return x, torch.ones(dim), torch.zeros(dim)
        return x, 1.0 + 0.5 * torch.randn(dim, generator=g), torch.randn(dim, generator=g)

    return make


def _affine_slip(x, gamma, beta, *, dims=(-1,), **kwargs) -> torch.Tensor:
    """A slip in the normalization (see ``_per_sentence``), then the right gamma and beta."""
    return _per_sentence(x, dims, **kwargs) * gamma + beta


def _without_keepdim(x: torch.Tensor, gamma: torch.Tensor, beta: torch.Tensor, eps: float = 1e-5) -> torch.Tensor:
    """``x.mean(-1)`` without ``keepdim``: broadcasts against the features, or cannot broadcast."""
    try:
        mean, var = x.mean(-1), x.var(-1, unbiased=False)
        return (x - mean) / torch.sqrt(var + eps) * gamma + beta
    except RuntimeError:  # shapes that do not broadcast: the learner's function raised as well
        return x.new_empty(0)


register(Exercise(
    name="layer_norm_last_dim",
    reference=_last_dim_reference,
    cases=[
        Case(Text("4 tokens x 4 features, gamma 1 and beta 0",
                  "4 个 token × 4 个特征，gamma 为 1、beta 为 0"), _tokens((4, 4), affine=False)),
        Case(Text("the lesson's shape (2, 3, 4), random gamma and beta",
                  "原课程里的形状 (2, 3, 4)，gamma 和 beta 随机"),
             lambda g: (torch.rand(2, 3, 4, generator=g), *_tokens((4,))(g)[1:])),
        Case(Text("5 tokens x 8 features, mean 3 and std 10",
                  "5 个 token × 8 个特征，均值 3、标准差 10"), _tokens((5, 8), 3.0, 10.0)),
        Case(Text("3 tokens whose 8 features barely differ (std 0.003)",
                  "3 个 token，各自的 8 个特征几乎相同（标准差 0.003）"), _tokens((3, 8), 0.0, 0.003)),
        Case(Text("2 tokens whose 4 features are all equal",
                  "2 个 token，各自的 4 个特征全部相等"), _tokens((2, 4), 0.5, 0.0)),
        Case(Text("4 tokens x 8 features around 10000 (std 500), gamma 1 and beta 0",
                  "4 个 token × 8 个特征，在 10000 附近（标准差 500），gamma 为 1、beta 为 0"),
             _tokens((4, 8), 1e4, 500.0, affine=False)),
        Case(Text("3 tokens of 8 features with std 0.1, random gamma and beta, eps = 0.1 passed in",
                  "3 个 token × 8 个特征，标准差 0.1，gamma 和 beta 随机，传入 eps = 0.1"),
             lambda g: (*_tokens((3, 8), 0.0, 0.1)(g), 0.1)),
    ],
    mistakes={
        _FIXED_EPS_HINT:
            lambda x, gamma, beta, eps=1e-5: _last_dim_reference(x, gamma, beta),
        Text("`x.mean(-1)` drops the last axis, so `x - mean` lines each token's mean up with the "
             "features, not with the token: pass `keepdim=True` to the mean and the variance.",
             "`x.mean(-1)` 会去掉最后一个轴，于是 `x - mean` 把每个 token 的均值对齐到了特征上，而不是对齐到这个 token：求均值和方差时都要传 `keepdim=True`。"):
            _without_keepdim,
        Text("now divide the centred values by `sqrt(var + eps)`, then scale by gamma and shift by beta.",
             "接下来把减去均值后的值除以 `sqrt(var + eps)`，再乘以 gamma 缩放、加上 beta 平移。"):
            lambda x, gamma, beta, eps=1e-5: x - x.mean(-1, keepdim=True),
        Text("now scale and shift: multiply by gamma, then add beta.",
             "接下来缩放和平移：先乘以 gamma，再加上 beta。"):
            lambda x, gamma, beta, eps=1e-5: _per_sentence(x, (-1,), eps=eps),
        Text("scale first, then shift: `x_hat * gamma + beta`, not `(x_hat + beta) * gamma`.",
             "先缩放，再平移：`x_hat * gamma + beta`，而不是 `(x_hat + beta) * gamma`。"):
            lambda x, gamma, beta, eps=1e-5: (_per_sentence(x, (-1,), eps=eps) + beta) * gamma,
        Text("gamma and beta are swapped: gamma (the weight) multiplies, beta (the bias) is added.",
             "gamma 和 beta 弄反了：gamma（weight）用来乘，beta（bias）用来加。"):
            lambda x, gamma, beta, eps=1e-5: _per_sentence(x, (-1,), eps=eps) * beta + gamma,
        Text("`x.var()` divides by n - 1 (unbiased); LayerNorm divides by n: "
             "`x.var(-1, unbiased=False, keepdim=True)`.",
             "`x.var()` 除以 n - 1（无偏）；LayerNorm 除以 n：`x.var(-1, unbiased=False, keepdim=True)`。"):
            lambda x, gamma, beta, eps=1e-5: _affine_slip(x, gamma, beta, unbiased=True, eps=eps),
        Text("eps goes inside the square root: `torch.sqrt(var + eps)`, not `torch.sqrt(var) + eps`.",
             "eps 应放在根号里面：`torch.sqrt(var + eps)`，而不是 `torch.sqrt(var) + eps`。"):
            lambda x, gamma, beta, eps=1e-5: _affine_slip(x, gamma, beta, eps_inside=False, eps=eps),
        Text("divide by the standard deviation `sqrt(var + eps)`, not by the variance.",
             "要除以标准差 `sqrt(var + eps)`，而不是除以方差。"):
            lambda x, gamma, beta, eps=1e-5: (x - x.mean(-1, keepdim=True))
            / (x.var(-1, unbiased=False, keepdim=True) + eps) * gamma + beta,
        Text("add eps = 1e-5 under the square root: it matters when the features barely differ, "
             "and without it equal features give 0 / 0 = nan.",
             "在根号里加上 eps = 1e-5：特征之间几乎没有差别时它很关键；没有它，特征全部相等时会得到 0 / 0 = nan。"):
            lambda x, gamma, beta, eps=1e-5: (x - x.mean(-1, keepdim=True))
            / x.var(-1, unbiased=False, keepdim=True).sqrt() * gamma + beta,
        Text("you took one mean and variance over the whole tensor: each token needs its own, over "
             "its features: `dim=-1, keepdim=True`.",
             "你对整个张量只算了一个均值和方差：每个 token 都要在自己的特征上算自己的一组：`dim=-1, keepdim=True`。"):
            lambda x, gamma, beta, eps=1e-5: _affine_slip(x, gamma, beta, dims=tuple(range(x.ndim)), eps=eps),
        Text("you averaged over axis 0, across tokens (that is BatchNorm's direction): LayerNorm "
             "averages each token over its own features, the last axis.",
             "你在第 0 轴上、跨 token 求了平均（那是 BatchNorm 的方向）：LayerNorm 对每个 token 在它自己的特征上求平均，也就是最后一个轴。"):
            lambda x, gamma, beta, eps=1e-5: _affine_slip(x, gamma, beta, dims=(0,), eps=eps),
        _ONE_PASS_HINT:
            lambda x, gamma, beta, eps=1e-5: (x - x.mean(-1, keepdim=True))
            / torch.sqrt(_one_pass_var(x, (-1,)) + eps) * gamma + beta,
    },
    hint=Text("per token: mean and biased variance over the last axis (keepdim=True), "
              "x_hat = (x - mean) / sqrt(var + eps), then x_hat * gamma + beta.",
              "以 token 为单位，在最后一个轴上求均值和有偏方差（keepdim=True），x_hat = (x - mean) / sqrt(var + eps)，然后算 x_hat * gamma + beta。"),
    example="torch.randn(2, 3, 4), torch.ones(4), torch.zeros(4)",
))


def check_layer_norm_last_dim(fn: Callable[..., torch.Tensor]) -> Verdict:
    """Check ``fn(x, gamma, beta, eps=1e-5)``: LayerNorm over the last axis, ``x`` of shape
    ``(*, d)`` and ``gamma``, ``beta`` of shape ``(d,)``: ``F.layer_norm(x, (d,), gamma, beta, eps)``.
    Every case but the last leaves ``eps`` at its default; the last passes ``eps=0.1`` (positionally),
    which catches a function that hard-codes 1e-5."""
    return check("layer_norm_last_dim", fn)


register(Exercise(
    name="biased_variance",
    reference=lambda x: x.var(-1, correction=0),
    cases=[
        Case(Text("one token [1, 2, 3, 4]",
                  "一个 token [1, 2, 3, 4]"), lambda g: (torch.tensor([1.0, 2.0, 3.0, 4.0]),)),
        Case(Text("the lesson's shape (2, 3, 4), from rand",
                  "原课程里的形状 (2, 3, 4)，取自 rand"), lambda g: (torch.rand(2, 3, 4, generator=g),)),
        Case(Text("4 tokens of 8 features around 10000 (std 1)",
                  "4 个 token，各 8 个特征，在 10000 附近（标准差 1）"),
             lambda g: (1e4 + torch.randn(4, 8, generator=g),)),
    ],
    mistakes={
        Text("that divides by n - 1 (the unbiased estimate, torch.var's default); LayerNorm divides "
             "by n: the mean of the squared centred values, `((x - mean) ** 2).mean(-1)`.",
             "这样除的是 n - 1（无偏估计，torch.var 的默认做法）；LayerNorm 除以 n：即减去均值后各值平方的均值，`((x - mean) ** 2).mean(-1)`。"):
            lambda x: x.var(-1),
        _ONE_PASS_HINT: lambda x: _one_pass_var(x, (-1,), keepdim=False),
        Text("that is the standard deviation; the variance is its square (no square root).",
             "这是标准差；方差是它的平方（不开根号）。"):
            lambda x: x.std(-1, correction=0),
    },
    hint=Text("var = ((x - mean) ** 2).mean(-1) with mean = x.mean(-1, keepdim=True).",
              "var = ((x - mean) ** 2).mean(-1)，其中 mean = x.mean(-1, keepdim=True)。"),
    example="torch.rand(2, 3, 4)",
    shape_hint=Text("one variance per token: reduce the last dim and drop it, shape x.shape[:-1] "
                    "(`keepdim=False`).",
                    "每个 token 一个方差：在最后一个轴上归约并去掉这个轴，形状为 x.shape[:-1]（`keepdim=False`）。"),
    forbidden=("torch.var", "torch.Tensor.var", "torch.std", "torch.Tensor.std", "torch.var_mean",
               "torch.std_mean", "torch.ops.aten.var", "torch.ops.aten.std", "torch.ops.aten.var_mean",
               "torch.ops.aten.std_mean"),
))


def check_biased_variance(fn: Callable[[torch.Tensor], torch.Tensor]) -> Verdict:
    """Check ``fn(x)``: the biased variance over the last dim, shape ``x.shape[:-1]``,
    by hand: ``torch.var``, ``torch.std`` and their methods refuse to run while it is checked."""
    return check("biased_variance", fn)


register(Exercise(
    name="output_variance",
    reference=lambda var, eps: var / (var + eps),
    cases=[
        Case(Text("variances 0.0546, 0.0418, 0.109 (the lesson's first three) and 1.25, eps = 1e-5",
                  "方差 0.0546、0.0418、0.109（原课程里的前三个）和 1.25，eps = 1e-5"),
             lambda g: (torch.tensor([0.0546, 0.0418, 0.1090, 1.25]), 1e-5)),
        Case(Text("variances near eps, eps = 1e-5",
                  "接近 eps 的方差，eps = 1e-5"), lambda g: (torch.tensor([1e-3, 1e-5, 1e-7]), 1e-5)),
        Case(Text("a constant token (variance 0) and a unit one, eps = 1e-2",
                  "一个常数 token（方差 0）和一个单位方差的 token，eps = 1e-2"),
             lambda g: (torch.tensor([0.0, 1.0]), 1e-2)),
    ],
    mistakes={
        Text("the output's variance is exactly 1 only when eps is negligible next to var: LayerNorm "
             "divides by sqrt(var + eps), not by sqrt(var).",
             "只有当 eps 相对 var 可以忽略时，输出的方差才恰好是 1：LayerNorm 除以的是 sqrt(var + eps)，而不是 sqrt(var)。"):
            lambda var, eps: torch.ones_like(var),
        Text("that is the output's standard deviation; its variance has no square root.",
             "这是输出的标准差；它的方差不开根号。"):
            lambda var, eps: (var / (var + eps)).sqrt(),
        Text("upside down: the output's variance is var / (var + eps), at most 1.",
             "分子分母颠倒了：输出的方差是 var / (var + eps)，最大为 1。"):
            lambda var, eps: (var + eps) / var,
    },
    hint=Text("y = (x - mean) / sqrt(var + eps) divides every centred value by sqrt(var + eps), "
              "so the variance is divided by (var + eps).",
              "y = (x - mean) / sqrt(var + eps) 把每个减去均值后的值都除以 sqrt(var + eps)，所以方差被除以 (var + eps)。"),
    example="torch.tensor([1.0, 1e-5]), 1e-5",
    shape_hint=Text("one output variance per input variance: the same shape as `var`.",
                    "每个输入方差对应一个输出方差：形状与 `var` 相同。"),
))


def check_output_variance(fn: Callable[[torch.Tensor, float], torch.Tensor]) -> Verdict:
    """Check ``fn(var, eps)``: the variance of LayerNorm's output (no gamma/beta) for tokens
    whose biased variance is ``var``: ``var / (var + eps)``."""
    return check("output_variance", fn)
