"""LayerNorm by hand (core notebooks 00 and 01, deep dive 14): the exercises and their checkers.

- :func:`check_biased_variance` (deep dive 14) and :func:`check_output_variance` (core notebook
  00): the formula, piece by piece.
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


_ONE_PASS_HINT = (
    Text("E[x²] - E[x]² subtracts two huge, nearly equal numbers when the mean is large next to the "
         "spread, and float32 cancels catastrophically: centre first, then average the squares.",
         "均值远大于数据的离散程度时，E[x²] - E[x]² 是两个几乎相等的大数相减，float32 会发生灾难性抵消：先减去均值，再对平方求平均。"))


def _one_pass_var(x: torch.Tensor, dims: tuple[int, ...], *, keepdim: bool = True) -> torch.Tensor:
    """The one-pass shortcut E[x²] - E[x]², a classic mistake in float32 at a large mean."""
    return (x * x).mean(dim=dims, keepdim=keepdim) - x.mean(dim=dims, keepdim=keepdim) ** 2


# ------------------------------------------------ core notebook 01: LayerNorm per sentence


def _sentence_reference(x: torch.Tensor) -> torch.Tensor:
    return F.layer_norm(x, x.shape[-2:], eps=1e-5)


def _randn_batch(batch: int, seq_len: int, dim: int, mean: float = 0.0,
                 std: float = 1.0) -> Callable[[torch.Generator], tuple]:
    return lambda g: (torch.randn(batch, seq_len, dim, generator=g) * std + mean,)


def _per_sentence(x: torch.Tensor, dims: tuple[int, ...], *, unbiased: bool = False,
                  eps_inside: bool = True) -> torch.Tensor:
    """(x - mean) / sqrt(var + eps) over ``dims``: the right answer for dims (1, 2), else a slip."""
    mean = x.mean(dim=dims, keepdim=True)
    var = x.var(dim=dims, unbiased=unbiased, keepdim=True)
    return (x - mean) / (torch.sqrt(var + 1e-5) if eps_inside else torch.sqrt(var) + 1e-5)


register(Exercise(
    name="sentence_layer_norm",
    reference=_sentence_reference,
    cases=[
        Case(Text("the lesson's shape (2, 3, 4), from rand",
                  "课程里的形状 (2, 3, 4)，取自 rand"), lambda g: (torch.rand(2, 3, 4, generator=g),)),
        Case(Text("3 sentences of 5 tokens x 8 features, mean 3 and std 10",
                  "3 个句子，每句 5 个 token × 8 个特征，均值 3、标准差 10"), _randn_batch(3, 5, 8, 3.0, 10.0)),
        Case(Text("1 sentence of 7 tokens x 4 features",
                  "1 个句子，7 个 token × 4 个特征"), _randn_batch(1, 7, 4)),
        Case(Text("2 sentences of 4 tokens x 8 features around 10000 (std 500)",
                  "2 个句子，每句 4 个 token × 8 个特征，在 10000 附近（标准差 500）"), _randn_batch(2, 4, 8, 1e4, 500.0)),
    ],
    mistakes={
        Text("you normalized each token (statistics over the last dim only): a sentence's mean and "
             "variance are over its tokens AND features, `dim=(1, 2)`.",
             "你是对每个 token 分别归一化的（只在最后一维上算统计量）：一个句子的均值和方差要把它的 token 和特征全部算在内，`dim=(1, 2)`。"):
            lambda x: _per_sentence(x, (2,)),
        Text("you took one mean and variance for the whole batch: each sentence needs its own, "
             "`dim=(1, 2)` with `keepdim=True`.",
             "你对整个批次只算了一个均值和方差：每个句子都需要自己的一组，`dim=(1, 2)` 并加上 `keepdim=True`。"):
            lambda x: _per_sentence(x, (0, 1, 2)),
        Text("you averaged over the tokens only (`dim=1`), once per feature: take the features too, "
             "`dim=(1, 2)`.",
             "你只在 token 上求了平均（`dim=1`），每个特征各算一次：特征也要算进去，`dim=(1, 2)`。"):
            lambda x: _per_sentence(x, (1,)),
        Text("`torch.var` divides by n - 1 unless you pass `unbiased=False`; LayerNorm divides by n.",
             "除非传入 `unbiased=False`，`torch.var` 会除以 n - 1；LayerNorm 除以 n。"):
            lambda x: _per_sentence(x, (1, 2), unbiased=True),
        Text("eps goes inside the square root: `torch.sqrt(var + eps)`, not `torch.sqrt(var) + eps`.",
             "eps 应放在根号里面：`torch.sqrt(var + eps)`，而不是 `torch.sqrt(var) + eps`。"):
            lambda x: _per_sentence(x, (1, 2), eps_inside=False),
        _ONE_PASS_HINT:
            lambda x: (x - x.mean(dim=(1, 2), keepdim=True)) / torch.sqrt(_one_pass_var(x, (1, 2)) + 1e-5),
    },
    hint=Text("per sentence: the mean and the biased variance over dims (1, 2) with `keepdim=True`, "
              "then (x - mean) / sqrt(var + 1e-5).",
              "以句子为单位：在第 (1, 2) 维上求均值和有偏方差，并加上 `keepdim=True`，然后算 (x - mean) / sqrt(var + 1e-5)。"),
    example="torch.rand(3, 5, 4)",
))


def check_sentence_layer_norm(fn: Callable[[torch.Tensor], torch.Tensor]) -> Verdict:
    """Check ``fn(x)``: LayerNorm per sentence (no gamma/beta, eps = 1e-5), ``x`` of shape
    ``(batch, seq_len, dim)``, any batch and length: ``F.layer_norm(x, x.shape[-2:])``."""
    return check("sentence_layer_norm", fn)


# ---------------------------------- the formula, piece by piece (deep dive 14, core notebook 00)

register(Exercise(
    name="biased_variance",
    reference=lambda x: x.var(-1, correction=0),
    cases=[
        Case(Text("one token [1, 2, 3, 4]",
                  "一个 token [1, 2, 3, 4]"), lambda g: (torch.tensor([1.0, 2.0, 3.0, 4.0]),)),
        Case(Text("the lesson's shape (2, 3, 4), from rand",
                  "课程里的形状 (2, 3, 4)，取自 rand"), lambda g: (torch.rand(2, 3, 4, generator=g),)),
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
                    "每个 token 一个方差：在最后一维上归约并去掉这一维，形状为 x.shape[:-1]（`keepdim=False`）。"),
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
                  "方差 0.0546、0.0418、0.109（课程里的前三个）和 1.25，eps = 1e-5"),
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
