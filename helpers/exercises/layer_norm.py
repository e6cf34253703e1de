"""LayerNorm by hand (core notebooks 00 and 01, deep dive 14): the exercises and their checkers.

- :func:`check_layer_norm_one_token`: one token's LayerNorm, no gamma or beta (no notebook calls
  it now).
- :func:`check_layer_norm_last_dim` (no notebook calls it now), :func:`check_biased_variance`
  (deep dive 14) and :func:`check_output_variance` (core notebook 00): the formula, piece by piece.
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

__all__ = ["check_layer_norm_one_token"]


# ------------------------------------------------ one token's LayerNorm (no notebook calls it now)

_ONE_PASS_HINT = (
    "E[x²] - E[x]² subtracts two huge, nearly equal numbers when the mean is large next to the "
    "spread, and float32 cancels catastrophically: centre first, then average the squares.")


def _one_pass_var(x: torch.Tensor, dims: tuple[int, ...], *, keepdim: bool = True) -> torch.Tensor:
    """The one-pass shortcut E[x²] - E[x]², a classic mistake in float32 at a large mean."""
    return (x * x).mean(dim=dims, keepdim=keepdim) - x.mean(dim=dims, keepdim=keepdim) ** 2



def _token_reference(x: torch.Tensor) -> torch.Tensor:
    return F.layer_norm(x, x.shape[-1:], eps=1e-5)


def _randn_token(n: int, mean: float = 0.0, std: float = 1.0) -> Callable[[torch.Generator], tuple]:
    return lambda g: (torch.randn(n, generator=g) * std + mean,)


register(Exercise(
    name="layer_norm_one_token",
    reference=_token_reference,
    cases=[
        Case("4 features from randn", _randn_token(4)),
        Case("8 features, mean 3 and std 10", _randn_token(8, mean=3.0, std=10.0)),
        Case("8 features that barely differ (std 0.01)", _randn_token(8, mean=1.0, std=0.01)),
        Case("all 4 features equal", lambda g: (torch.full((4,), 2.5),)),
        Case("16 features around 10000 (std 500)", _randn_token(16, mean=1e4, std=500.0)),
    ],
    mistakes={
        "`x.var()` divides by n - 1 (unbiased); LayerNorm divides by n: use "
        "`x.var(unbiased=False)` or `((x - mean) ** 2).mean()`.":
            lambda x: (x - x.mean()) / torch.sqrt(x.var() + 1e-5),
        "eps goes inside the square root: `torch.sqrt(var + eps)`, not `torch.sqrt(var) + eps`.":
            lambda x: (x - x.mean()) / (x.var(unbiased=False).sqrt() + 1e-5),
        "divide by the standard deviation `sqrt(var + eps)`, not by the variance.":
            lambda x: (x - x.mean()) / (x.var(unbiased=False) + 1e-5),
        "subtract the mean before dividing: LayerNorm centres, then scales.":
            lambda x: x / torch.sqrt(x.var(unbiased=False) + 1e-5),
        "now divide the centred values by `sqrt(var + eps)`.":
            lambda x: x - x.mean(),
        "add eps = 1e-5 under the square root: it matters when the features barely differ, "
        "and without it equal features give 0 / 0 = nan.":
            lambda x: (x - x.mean()) / x.var(unbiased=False).sqrt(),
        _ONE_PASS_HINT: lambda x: (x - x.mean()) / torch.sqrt(_one_pass_var(x, (-1,), keepdim=False) + 1e-5),
    },
    hint="LayerNorm of one token is (x - mean) / sqrt(var + 1e-5), with the biased variance.",
))


def check_layer_norm_one_token(fn: Callable[[torch.Tensor], torch.Tensor]) -> Verdict:
    """Check ``fn(x)``: LayerNorm (no gamma/beta, eps = 1e-5) of one token, ``x`` of shape ``(dim,)``."""
    return check("layer_norm_one_token", fn)


# ------------------------------------------------ core notebook 01: LayerNorm per sentence

__all__ += ["check_sentence_layer_norm"]


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
        Case("the lesson's shape (2, 3, 4), from rand", lambda g: (torch.rand(2, 3, 4, generator=g),)),
        Case("3 sentences of 5 tokens x 8 features, mean 3 and std 10", _randn_batch(3, 5, 8, 3.0, 10.0)),
        Case("1 sentence of 7 tokens x 4 features", _randn_batch(1, 7, 4)),
        Case("2 sentences of 4 tokens x 8 features around 10000 (std 500)", _randn_batch(2, 4, 8, 1e4, 500.0)),
    ],
    mistakes={
        "you normalized each token (statistics over the last dim only): a sentence's mean and "
        "variance are over its tokens AND features, `dim=(1, 2)`.":
            lambda x: _per_sentence(x, (2,)),
        "you took one mean and variance for the whole batch: each sentence needs its own, "
        "`dim=(1, 2)` with `keepdim=True`.":
            lambda x: _per_sentence(x, (0, 1, 2)),
        "you averaged over the tokens only (`dim=1`), once per feature: take the features too, "
        "`dim=(1, 2)`.":
            lambda x: _per_sentence(x, (1,)),
        "`torch.var` divides by n - 1 unless you pass `unbiased=False`; LayerNorm divides by n.":
            lambda x: _per_sentence(x, (1, 2), unbiased=True),
        "eps goes inside the square root: `torch.sqrt(var + eps)`, not `torch.sqrt(var) + eps`.":
            lambda x: _per_sentence(x, (1, 2), eps_inside=False),
        _ONE_PASS_HINT:
            lambda x: (x - x.mean(dim=(1, 2), keepdim=True)) / torch.sqrt(_one_pass_var(x, (1, 2)) + 1e-5),
    },
    hint="per sentence: the mean and the biased variance over dims (1, 2) with `keepdim=True`, "
         "then (x - mean) / sqrt(var + 1e-5).",
    example="torch.rand(3, 5, 4)",
))


def check_sentence_layer_norm(fn: Callable[[torch.Tensor], torch.Tensor]) -> Verdict:
    """Check ``fn(x)``: LayerNorm per sentence (no gamma/beta, eps = 1e-5), ``x`` of shape
    ``(batch, seq_len, dim)``, any batch and length: ``F.layer_norm(x, x.shape[-2:])``."""
    return check("sentence_layer_norm", fn)


# ---------------------------------- the formula, piece by piece (deep dive 14, core notebook 00)

__all__ += ["check_biased_variance", "check_layer_norm_last_dim", "check_output_variance"]


def _last_dim_reference(x: torch.Tensor, gamma: torch.Tensor, beta: torch.Tensor) -> torch.Tensor:
    return F.layer_norm(x, x.shape[-1:], gamma, beta, eps=1e-5)


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


def _without_keepdim(x: torch.Tensor, gamma: torch.Tensor, beta: torch.Tensor) -> torch.Tensor:
    """``x.mean(-1)`` without ``keepdim``: broadcasts against the features, or cannot broadcast."""
    try:
        mean, var = x.mean(-1), x.var(-1, unbiased=False)
        return (x - mean) / torch.sqrt(var + 1e-5) * gamma + beta
    except RuntimeError:  # shapes that do not broadcast: the learner's function raised as well
        return x.new_empty(0)


register(Exercise(
    name="layer_norm_last_dim",
    reference=_last_dim_reference,
    cases=[
        Case("4 tokens x 4 features, gamma 1 and beta 0", _tokens((4, 4), affine=False)),
        Case("the lesson's shape (2, 3, 4), random gamma and beta",
             lambda g: (torch.rand(2, 3, 4, generator=g), *_tokens((4,))(g)[1:])),
        Case("5 tokens x 8 features, mean 3 and std 10", _tokens((5, 8), 3.0, 10.0)),
        Case("3 tokens whose 8 features barely differ (std 0.003)", _tokens((3, 8), 0.0, 0.003)),
        Case("2 tokens whose 4 features are all equal", _tokens((2, 4), 0.5, 0.0)),
        Case("4 tokens x 8 features around 10000 (std 500), gamma 1 and beta 0",
             _tokens((4, 8), 1e4, 500.0, affine=False)),
    ],
    mistakes={
        "`x.mean(-1)` drops the last dim, so `x - mean` lines each token's mean up with the "
        "features, not with the token: pass `keepdim=True` to the mean and the variance.":
            _without_keepdim,
        "now divide the centred values by `sqrt(var + eps)`, then scale by gamma and shift by beta.":
            lambda x, gamma, beta: x - x.mean(-1, keepdim=True),
        "now scale and shift: multiply by gamma, then add beta.":
            lambda x, gamma, beta: _per_sentence(x, (-1,)),
        "scale first, then shift: `x_hat * gamma + beta`, not `(x_hat + beta) * gamma`.":
            lambda x, gamma, beta: (_per_sentence(x, (-1,)) + beta) * gamma,
        "gamma and beta are swapped: gamma (the weight) multiplies, beta (the bias) is added.":
            lambda x, gamma, beta: _per_sentence(x, (-1,)) * beta + gamma,
        "`x.var()` divides by n - 1 (unbiased); LayerNorm divides by n: "
        "`x.var(-1, unbiased=False, keepdim=True)`.":
            lambda x, gamma, beta: _affine_slip(x, gamma, beta, unbiased=True),
        "eps goes inside the square root: `torch.sqrt(var + eps)`, not `torch.sqrt(var) + eps`.":
            lambda x, gamma, beta: _affine_slip(x, gamma, beta, eps_inside=False),
        "divide by the standard deviation `sqrt(var + eps)`, not by the variance.":
            lambda x, gamma, beta: (x - x.mean(-1, keepdim=True))
            / (x.var(-1, unbiased=False, keepdim=True) + 1e-5) * gamma + beta,
        "add eps = 1e-5 under the square root: it matters when the features barely differ, "
        "and without it equal features give 0 / 0 = nan.":
            lambda x, gamma, beta: (x - x.mean(-1, keepdim=True))
            / x.var(-1, unbiased=False, keepdim=True).sqrt() * gamma + beta,
        "you took one mean and variance over the whole tensor: each token needs its own, over "
        "its features: `dim=-1, keepdim=True`.":
            lambda x, gamma, beta: _affine_slip(x, gamma, beta, dims=tuple(range(x.ndim))),
        "you averaged over dim 0, across tokens (that is BatchNorm's direction): LayerNorm "
        "averages each token over its own features, the last dim.":
            lambda x, gamma, beta: _affine_slip(x, gamma, beta, dims=(0,)),
        _ONE_PASS_HINT:
            lambda x, gamma, beta: (x - x.mean(-1, keepdim=True))
            / torch.sqrt(_one_pass_var(x, (-1,)) + 1e-5) * gamma + beta,
    },
    hint="per token: mean and biased variance over the last dim (keepdim=True), "
         "x_hat = (x - mean) / sqrt(var + 1e-5), then x_hat * gamma + beta.",
    example="torch.randn(2, 3, 4), torch.ones(4), torch.zeros(4)",
))


def check_layer_norm_last_dim(fn: Callable[[torch.Tensor, torch.Tensor, torch.Tensor], torch.Tensor]) -> Verdict:
    """Check ``fn(x, gamma, beta)``: LayerNorm over the last dim with eps = 1e-5, ``x`` of shape
    ``(*, dim)`` and ``gamma``, ``beta`` of shape ``(dim,)``: ``F.layer_norm(x, (dim,), gamma, beta)``."""
    return check("layer_norm_last_dim", fn)


register(Exercise(
    name="biased_variance",
    reference=lambda x: x.var(-1, correction=0),
    cases=[
        Case("one token [1, 2, 3, 4]", lambda g: (torch.tensor([1.0, 2.0, 3.0, 4.0]),)),
        Case("the lesson's shape (2, 3, 4), from rand", lambda g: (torch.rand(2, 3, 4, generator=g),)),
        Case("4 tokens of 8 features around 10000 (std 1)",
             lambda g: (1e4 + torch.randn(4, 8, generator=g),)),
    ],
    mistakes={
        "that divides by n - 1 (the unbiased estimate, torch.var's default); LayerNorm divides "
        "by n: the mean of the squared centred values, `((x - mean) ** 2).mean(-1)`.":
            lambda x: x.var(-1),
        _ONE_PASS_HINT: lambda x: _one_pass_var(x, (-1,), keepdim=False),
        "that is the standard deviation; the variance is its square (no square root).":
            lambda x: x.std(-1, correction=0),
    },
    hint="var = ((x - mean) ** 2).mean(-1) with mean = x.mean(-1, keepdim=True).",
    example="torch.rand(2, 3, 4)",
    shape_hint="one variance per token: reduce the last dim and drop it, shape x.shape[:-1] "
               "(`keepdim=False`).",
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
        Case("variances 0.0546, 0.0418, 0.109 (the lesson's first three) and 1.25, eps = 1e-5",
             lambda g: (torch.tensor([0.0546, 0.0418, 0.1090, 1.25]), 1e-5)),
        Case("variances near eps, eps = 1e-5", lambda g: (torch.tensor([1e-3, 1e-5, 1e-7]), 1e-5)),
        Case("a constant token (variance 0) and a unit one, eps = 1e-2",
             lambda g: (torch.tensor([0.0, 1.0]), 1e-2)),
    ],
    mistakes={
        "the output's variance is exactly 1 only when eps is negligible next to var: LayerNorm "
        "divides by sqrt(var + eps), not by sqrt(var).":
            lambda var, eps: torch.ones_like(var),
        "that is the output's standard deviation; its variance has no square root.":
            lambda var, eps: (var / (var + eps)).sqrt(),
        "upside down: the output's variance is var / (var + eps), at most 1.":
            lambda var, eps: (var + eps) / var,
    },
    hint="y = (x - mean) / sqrt(var + eps) divides every centred value by sqrt(var + eps), "
         "so the variance is divided by (var + eps).",
    example="torch.tensor([1.0, 1e-5]), 1e-5",
    shape_hint="one output variance per input variance: the same shape as `var`.",
))


def check_output_variance(fn: Callable[[torch.Tensor, float], torch.Tensor]) -> Verdict:
    """Check ``fn(var, eps)``: the variance of LayerNorm's output (no gamma/beta) for tokens
    whose biased variance is ``var``: ``var / (var + eps)``."""
    return check("output_variance", fn)
