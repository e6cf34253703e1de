"""Deep dive 13's exercises: when a run first gets below a loss threshold, and the noisy LayerNorm.

- :func:`check_first_step_below`: ``fn(losses, threshold)``, the first step below the threshold
  (``-1`` when there is none): how time to threshold is read off a curve.
- :func:`check_noisy_layer_norm`: ``fn(a, shift, scale)``, LayerNorm over the last dim, then the
  noisy variant's per-unit ``* scale + shift`` (:class:`helpers.experiments.rnn_models.StackedRNN`).
"""

from __future__ import annotations

import torch

from helpers.exercises.checking import Case, Exercise, Verdict, check, register
from helpers.functional import layer_norm
from helpers.language import Text


def _first_below(losses: torch.Tensor, threshold: float) -> torch.Tensor:
    below = torch.nonzero(losses < threshold)
    return below[0, 0] if len(below) else torch.tensor(-1)


def _curve(steps: int, rate: float, never: bool = False):
    def make(g: torch.Generator) -> tuple:
        noise = 1 + 0.3 * torch.rand(steps, generator=g)
        curve = torch.exp(-rate * torch.arange(steps)) * noise + (0.2 if never else 0.0)
        return curve, 0.1
    return make


register(Exercise(
    name="first_step_below",
    reference=_first_below,
    cases=[Case(Text("a falling curve of 50 steps",
                     "一条 50 步的下降曲线"), _curve(50, 0.1)),
           Case(Text("a noisy, slower curve of 200 steps",
                     "一条 200 步、带噪声、下降较慢的曲线"), _curve(200, 0.02)),
           Case(Text("a curve that never gets there",
                     "一条始终到不了阈值的曲线"), _curve(50, 0.1, never=True))],
    mistakes={
        Text("you returned the LAST step below the threshold: the first one is when the run got there.",
             "你返回的是最后一个低于阈值的步：第一个才是这次训练到达阈值的时刻。"):
            lambda losses, t: torch.nonzero(losses < t)[-1, 0] if (losses < t).any() else torch.tensor(-1),
        Text("you returned how many steps are below the threshold, not the first one.",
             "你返回的是低于阈值的步有多少个，而不是第一个这样的步。"):
            lambda losses, t: (losses < t).sum(),
    },
    hint=Text("torch.nonzero(losses < threshold) lists the steps below; take the first, or -1 if there is none.",
              "torch.nonzero(losses < threshold) 列出低于阈值的步；取第一个，一个都没有时返回 -1。"),
    example="torch.tensor([1.0, 0.5, 0.05, 0.2]), 0.1",
    shape_hint=Text("return a 0-d tensor: one step number (torch.tensor(-1) if the run never got there).",
                    "返回一个 0 维张量：一个步数（从未到达阈值时返回 torch.tensor(-1)）。"),
))


def check_first_step_below(fn) -> Verdict:
    """Check ``fn(losses, threshold)``: the first index with ``losses < threshold`` as a 0-d
    tensor, or ``torch.tensor(-1)`` when there is none."""
    return check("first_step_below", fn)


def _noisy_reference(a: torch.Tensor, shift: torch.Tensor, scale: torch.Tensor) -> torch.Tensor:
    return layer_norm(a, a.shape[-1:]) * scale + shift


def _noisy_case(rows: int, width: int, mean: float = 0.0, std: float = 3.0):
    def make(g: torch.Generator) -> tuple:
        a = mean + std * torch.randn(rows, width, generator=g)
        return a, torch.rand(width, generator=g) - 0.5, 1 + torch.rand(width, generator=g)
    return make


register(Exercise(
    name="noisy_layer_norm",
    reference=_noisy_reference,
    cases=[Case(Text("2 rows of 4",
                     "2 行，每行 4 个值"), _noisy_case(2, 4)), Case(Text("8 rows of 16, mean 5",
                                                             "8 行，每行 16 个值，均值 5"), _noisy_case(8, 16, 5.0)),
           Case(Text("3 rows of 8 whose units barely differ (std 0.003)",
                     "3 行，每行 8 个几乎相同的单元（标准差 0.003）"), _noisy_case(3, 8, std=0.003))],
    mistakes={
        Text("normalize first: the noise is applied to LN's output, x_hat * scale + shift.",
             "先归一化：噪声加在 LN 的输出上，x_hat * scale + shift。"):
            lambda a, shift, scale: a * scale + shift,
        Text("scale, then shift: x_hat * scale + shift, not (x_hat + shift) * scale.",
             "先缩放，再平移：x_hat * scale + shift，而不是 (x_hat + shift) * scale。"):
            lambda a, shift, scale: (layer_norm(a, a.shape[-1:]) + shift) * scale,
        Text("`var()` divides by n - 1 (unbiased); LayerNorm divides by n: `((a - mean) ** 2).mean(-1)`.",
             "`var()` 除以 n - 1（无偏）；LayerNorm 除以 n：`((a - mean) ** 2).mean(-1)`。"):
            lambda a, shift, scale: (a - a.mean(-1, keepdim=True))
            / torch.sqrt(a.var(-1, keepdim=True) + 1e-5) * scale + shift,
        Text("eps goes inside the square root: `torch.sqrt(var + eps)`, not `torch.sqrt(var) + eps`.",
             "eps 应放在根号里面：`torch.sqrt(var + eps)`，而不是 `torch.sqrt(var) + eps`。"):
            lambda a, shift, scale: (a - a.mean(-1, keepdim=True))
            / (a.var(-1, unbiased=False, keepdim=True).sqrt() + 1e-5) * scale + shift,
        Text("each row (sample) is normalized over its own units, the last dim, not over the batch (dim 0).",
             "每一行（一个样本）在它自己的单元上归一化，也就是最后一个轴，而不是在批次上（第 0 轴）。"):
            lambda a, shift, scale: (a - a.mean(0, keepdim=True))
            / torch.sqrt(a.var(0, unbiased=False, keepdim=True) + 1e-5) * scale + shift,
    },
    hint=Text("x_hat = (a - mean) / sqrt(var + 1e-5) per row (biased var), then x_hat * scale + shift.",
              "每行算 x_hat = (a - mean) / sqrt(var + 1e-5)（有偏方差），然后算 x_hat * scale + shift。"),
    example="torch.randn(2, 4), torch.zeros(4), torch.ones(4)",
))


def check_noisy_layer_norm(fn) -> Verdict:
    """Check ``fn(a, shift, scale)``: LayerNorm over the last dim (eps 1e-5, no gamma/beta),
    then the noisy variant's ``* scale + shift``, per unit."""
    return check("noisy_layer_norm", fn)
