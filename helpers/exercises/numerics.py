"""Deep dive 14's exercises: LayerNorm's input gradient by hand, and Chan's merge."""

from __future__ import annotations

from collections.abc import Callable

import torch

from helpers.exercises.checking import Case, Exercise, Verdict, check, register

__all__ = ["check_chan_merge_m2", "check_layer_norm_backward"]


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
    return [Case("one row of 4", rows(1, 4)), Case("3 rows of 16", rows(3, 16)),
            Case("5 rows of 64, mean 3, std 2", rows(5, 64, 3.0, 2.0))]


register(Exercise(
    name="layer_norm_backward",
    reference=_dx_reference,
    cases=_backward_cases(),
    mistakes={
        "you dropped the x_hat * mean(dy * x_hat) term: the gradient must also lose its "
        "component along x_hat, since rescaling the row cannot change the output.":
            lambda x, dy, eps: _x_hat_rstd(x, eps)[1] * (dy - dy.mean(-1, keepdim=True)),
        "you dropped the mean(dy) term: the gradient must sum to 0 over the row, since "
        "shifting the row cannot change the output.":
            lambda x, dy, eps: (lambda xh, r: r * (dy - xh * (dy * xh).mean(-1, keepdim=True)))(
                *_x_hat_rstd(x, eps)),
        "the bracket is right but it must be multiplied by rstd = 1 / sqrt(var + eps).":
            lambda x, dy, eps: (lambda xh, r: dy - dy.mean(-1, keepdim=True)
                                - xh * (dy * xh).mean(-1, keepdim=True))(*_x_hat_rstd(x, eps)),
    },
    hint="dx = rstd * (dy - dy.mean(-1, keepdim=True) - x_hat * (dy * x_hat).mean(-1, keepdim=True)).",
    example="torch.randn(2, 4, dtype=torch.float64), torch.randn(2, 4, dtype=torch.float64), 1e-5",
    shape_hint="dx has the input's shape: one gradient per input value.",
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
    cases=[Case("two blocks of 4", _blocks(4, 4, 0.0)), Case("blocks of 3 and 9", _blocks(3, 9, 0.0)),
           Case("blocks of 5 and 11 around 1000", _blocks(5, 11, 1e3))],
    mistakes={
        "adding the two M2s is not enough: each is measured from its own block's mean, so add "
        "delta² · n_a · n_b / n for the distance between the two means.":
            lambda n_a, mean_a, m2_a, n_b, mean_b, m2_b: m2_a + m2_b,
        "the weight of delta² is n_a · n_b / n (n = n_a + n_b), not n.":
            lambda n_a, mean_a, m2_a, n_b, mean_b, m2_b: m2_a + m2_b + (mean_b - mean_a) ** 2 * (n_a + n_b),
    },
    hint="M2 = M2_a + M2_b + delta² · n_a · n_b / (n_a + n_b), with delta = mean_b - mean_a.",
    example="*[torch.tensor([2.0]), torch.tensor([0.0]), torch.tensor([2.0])] * 2",
    shape_hint="one merged M2 per row: the shape of m2_a.",
    forbidden=("helpers.lessons.variance.chan_merge",),
))


def check_chan_merge_m2(fn: Callable[..., torch.Tensor]) -> Verdict:
    """Check ``fn(n_a, mean_a, m2_a, n_b, mean_b, m2_b)``: the M2 (sum of squared deviations
    from the mean) of the union of two blocks, from each block's count, mean and M2."""
    return check("chan_merge_m2", fn)
