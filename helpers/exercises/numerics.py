"""Deep dive 14's exercises: LayerNorm's input gradient by hand, and Chan's merge."""

from __future__ import annotations

from collections.abc import Callable

import torch

from helpers.exercises.checking import Case, Exercise, Verdict, check, register
from helpers.language import Text


def _dx_reference(x: torch.Tensor, dy: torch.Tensor, eps: float) -> torch.Tensor:
    leaf = x.detach().clone().requires_grad_()
    torch.nn.functional.layer_norm(leaf, x.shape[-1:], eps=eps).backward(dy)
    return leaf.grad


def _x_hat_rstd(x: torch.Tensor, eps: float) -> tuple[torch.Tensor, torch.Tensor]:
    mean = x.mean(-1, keepdim=True)
    rstd = ((x - mean) ** 2).mean(-1, keepdim=True).add(eps).rsqrt()
    return (x - mean) * rstd, rstd


def _backward_cases() -> list[Case]:
    def rows(m, n, offset=0.0, scale=1.0):
        return lambda g: (offset + scale * torch.randn(m, n, generator=g, dtype=torch.float64),
                          torch.randn(m, n, generator=g, dtype=torch.float64), 1e-5)
    return [Case(Text("one row of 4",
                      "一行，4 个值"), rows(1, 4)), Case(Text("3 rows of 16",
                                                        "3 行，每行 16 个值"), rows(3, 16)),
            Case(Text("5 rows of 64, mean 3, std 2",
                      "5 行，每行 64 个值，均值 3，标准差 2"), rows(5, 64, 3.0, 2.0))]


register(Exercise(
    name="layer_norm_backward",
    reference=_dx_reference,
    cases=_backward_cases(),
    mistakes={
        Text("you dropped the x_hat * mean(dy * x_hat) term: the gradient must also lose its "
             "component along x_hat, since rescaling the row cannot change the output.",
             "你漏掉了 x_hat * mean(dy * x_hat) 这一项：梯度还要去掉沿 x_hat 方向的分量，因为整体缩放这一行不会改变输出。"):
            lambda x, dy, eps: _x_hat_rstd(x, eps)[1] * (dy - dy.mean(-1, keepdim=True)),
        Text("you dropped the mean(dy) term: the gradient must sum to 0 over the row, since "
             "shifting the row cannot change the output.",
             "你漏掉了 mean(dy) 这一项：梯度在这一行上的和必须为 0，因为整体平移这一行不会改变输出。"):
            lambda x, dy, eps: (lambda xh, r: r * (dy - xh * (dy * xh).mean(-1, keepdim=True)))(
                *_x_hat_rstd(x, eps)),
        Text("the bracket is right but it must be multiplied by rstd = 1 / sqrt(var + eps).",
             "括号里是对的，但还要乘以 rstd = 1 / sqrt(var + eps)。"):
            lambda x, dy, eps: (lambda xh, r: dy - dy.mean(-1, keepdim=True)
                                - xh * (dy * xh).mean(-1, keepdim=True))(*_x_hat_rstd(x, eps)),
    },
    hint=Text("dx = rstd * (dy - dy.mean(-1, keepdim=True) - x_hat * (dy * x_hat).mean(-1, keepdim=True)).",
              "按这个公式算：dx = rstd * (dy - dy.mean(-1, keepdim=True) - x_hat * (dy * x_hat).mean(-1, keepdim=True))。"),
    example="torch.randn(2, 4, dtype=torch.float64), torch.randn(2, 4, dtype=torch.float64), 1e-5",
    shape_hint=Text("dx has the input's shape: one gradient per input value.",
                    "dx 与输入形状相同：每个输入值一个梯度。"),
    forbidden=("torch.autograd.grad", "torch.autograd.backward", "torch.Tensor.backward",
               "torch.autograd.functional.vjp", "torch.autograd.functional.jacobian", "torch.func.vjp",
               "torch.func.grad", "torch.func.jacrev"),
))


def check_layer_norm_backward(fn: Callable[[torch.Tensor, torch.Tensor, float], torch.Tensor]) -> Verdict:
    """Check ``fn(x, dy, eps)``: the gradient of LayerNorm (no gamma/beta, over the last dim)
    with respect to ``x``, given the output gradient ``dy``."""
    return check("layer_norm_backward", fn)


def _blocks(n_a: int, n_b: int, offset: float):
    def make(g):
        a = offset + torch.randn(3, n_a, generator=g, dtype=torch.float64)
        b = offset + 2 + torch.randn(3, n_b, generator=g, dtype=torch.float64)

        def stats(t):
            return (torch.full((3,), float(t.shape[-1]), dtype=torch.float64), t.mean(-1),
                    ((t - t.mean(-1, keepdim=True)) ** 2).sum(-1))
        return (*stats(a), *stats(b))
    return make


def _merged_m2(n_a, mean_a, m2_a, n_b, mean_b, m2_b):
    delta = mean_b - mean_a
    return m2_a + m2_b + delta * delta * n_a * n_b / (n_a + n_b)


register(Exercise(
    name="chan_merge_m2",
    reference=_merged_m2,
    cases=[Case(Text("two blocks of 4",
                     "两块，各 4 个值"), _blocks(4, 4, 0.0)), Case(Text("blocks of 3 and 9",
                                                                  "两块，分别 3 个和 9 个值"), _blocks(3, 9, 0.0)),
           Case(Text("blocks of 5 and 11 around 1000",
                     "两块，分别 5 个和 11 个值，在 1000 附近"), _blocks(5, 11, 1e3))],
    mistakes={
        Text("adding the two M2s is not enough: each is measured from its own block's mean, so add "
             "delta² · n_a · n_b / n for the distance between the two means.",
             "只把两个 M2 相加是不够的：它们各自是相对本块的均值算的，所以还要为两个均值之间的距离加上 delta² · n_a · n_b / n。"):
            lambda n_a, mean_a, m2_a, n_b, mean_b, m2_b: m2_a + m2_b,
        Text("the weight of delta² is n_a · n_b / n (n = n_a + n_b), not n.",
             "delta² 的权重是 n_a · n_b / n（n = n_a + n_b），不是 n。"):
            lambda n_a, mean_a, m2_a, n_b, mean_b, m2_b: m2_a + m2_b + (mean_b - mean_a) ** 2 * (n_a + n_b),
    },
    hint=Text("M2 = M2_a + M2_b + delta² · n_a · n_b / (n_a + n_b), with delta = mean_b - mean_a.",
              "M2 = M2_a + M2_b + delta² · n_a · n_b / (n_a + n_b)，其中 delta = mean_b - mean_a。"),
    example="*[torch.tensor([2.0]), torch.tensor([0.0]), torch.tensor([2.0])] * 2",
    shape_hint=Text("one merged M2 per row: the shape of m2_a.",
                    "每行一个合并后的 M2：形状与 m2_a 相同。"),
    forbidden=("helpers.lessons.variance.chan_merge",),
))


def check_chan_merge_m2(fn: Callable[..., torch.Tensor]) -> Verdict:
    """Check ``fn(n_a, mean_a, m2_a, n_b, mean_b, m2_b)``: the M2 (sum of squared deviations
    from the mean) of the union of two blocks, from each block's count, mean and M2."""
    return check("chan_merge_m2", fn)
