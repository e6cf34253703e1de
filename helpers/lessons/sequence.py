r"""Per token or per sentence: what LayerNorm's ``normalized_shape`` decides for a sequence.

A batch of sentences has shape ``(batch, seq_len, dim)``. ``nn.LayerNorm(dim)`` takes one
mean and variance per **token** (over its ``dim`` features); ``nn.LayerNorm((seq_len, dim))``
takes one per **sentence** (over all of its ``seq_len * dim`` values). This module holds what
deep dive 16 needs to show the difference and its costs:

- :func:`reduced_dims`: which dims a ``normalized_shape`` averages over;
- :func:`pad_batch` and :func:`masked_layer_norm`: a padded batch, and a sentence-level LN
  that ignores the pads (plain sentence-level LN counts them, and so changes the real tokens);
- :func:`dependency_matrix`, :func:`future_leak` and :func:`output_change`: how much each
  output position depends on each input position, measured with the Jacobian or by changing
  one token; in a left-to-right model, a sentence-level LN lets every position see the future;
- :class:`CausalBlock`: one pre-LN block of a GPT (causal self-attention) whose norm is per
  token or per sentence, to show that the causal mask cannot stop that leak;
- :func:`check_masked_sentence_layer_norm`: the exercise, a learner's masked sentence-level LN
  checked against :func:`masked_layer_norm`.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence

import torch
import torch.nn.functional as F
from torch import Tensor, nn

from helpers._validation import accumulation_dtype
from helpers.exercises.checking import Case, Exercise, Verdict, check, register
from helpers.language import Text


def reduced_dims(ndim: int, normalized_shape: int | Sequence[int]) -> tuple[int, ...]:
    """The dims (counted from 0) that LayerNorm with ``normalized_shape`` averages over.

    They are always the *last* ``len(normalized_shape)`` dims of an ``ndim``-dim input;
    the dims before them index the groups, each with its own mean and variance.

    Example::

        >>> reduced_dims(3, 4)          # nn.LayerNorm(dim) on (batch, seq_len, dim): per token
        (2,)
        >>> reduced_dims(3, (3, 4))     # nn.LayerNorm((seq_len, dim)): per sentence
        (1, 2)
    """
    shape = (normalized_shape,) if isinstance(normalized_shape, int) else tuple(normalized_shape)
    return tuple(range(ndim - len(shape), ndim))


# ------------------------------------------------------------------ padding


def pad_batch(sentences: Sequence[Tensor], padding_value: float = 0.0) -> tuple[Tensor, Tensor]:
    """Stack sentences of different lengths into one batch, padding each at the end.

    Args:
        sentences: tensors of shape ``(length_i, dim)``, same ``dim`` and dtype.
        padding_value: the value of every feature of a pad token.

    Returns:
        ``(padded, mask)``: ``padded`` of shape ``(batch, max_length, dim)`` and ``mask`` of
        shape ``(batch, max_length)``, ``True`` for a real token and ``False`` for a pad.

    Example::

        >>> padded, mask = pad_batch([torch.ones(3, 2), torch.ones(1, 2)])
        >>> mask
        tensor([[ True,  True,  True],
                [ True, False, False]])
    """
    lengths = torch.tensor([s.shape[0] for s in sentences])
    padded = nn.utils.rnn.pad_sequence(list(sentences), batch_first=True, padding_value=padding_value)
    mask = torch.arange(padded.shape[1]) < lengths[:, None]
    return padded, mask


def masked_layer_norm(input: Tensor, mask: Tensor, eps: float = 1e-5) -> Tensor:
    r"""Sentence-level LayerNorm that takes its statistics over the real tokens only.

    For each sentence :math:`b`, with :math:`R_b` its real (unmasked) tokens and :math:`n_b =
    |R_b| \cdot \text{dim}` values,

    .. math::
        \mu_b = \frac{1}{n_b}\sum_{t \in R_b,\, f} x_{btf} \qquad
        \sigma_b^2 = \frac{1}{n_b}\sum_{t \in R_b,\, f} (x_{btf} - \mu_b)^2 \qquad
        y_{btf} = \frac{x_{btf} - \mu_b}{\sqrt{\sigma_b^2 + \epsilon}}

    so a real token's output is exactly what ``F.layer_norm(sentence, (length, dim))`` gives
    on the sentence without its pads. Pad positions come out as 0. No ``gamma``/``beta``:
    their shape would be ``(seq_len, dim)``, tied to one length (see deep dive 16).

    Args:
        input: ``(batch, seq_len, dim)``, floating point.
        mask: ``(batch, seq_len)``, bool, ``True`` for a real token. Any pattern works (pads
            at the end, at the start, or in between); each sentence needs one real token.
        eps: added to the variance inside the square root. Default: 1e-5

    Example::

        >>> import torch.nn.functional as F
        >>> x, mask = pad_batch([torch.randn(3, 4), torch.randn(2, 4)])
        >>> y = masked_layer_norm(x, mask)
        >>> torch.allclose(y[1, :2], F.layer_norm(x[1, :2], (2, 4)), atol=1e-6)
        True
        >>> y[1, 2]
        tensor([0., 0., 0., 0.])
    """
    x = input.to(accumulation_dtype(input.dtype))
    real = mask[..., None]  # (batch, seq_len, 1): True for a real token, False for a pad
    count = real.sum(dim=(1, 2), keepdim=True) * x.shape[-1]  # real values per sentence
    mean = torch.where(real, x, 0.0).sum(dim=(1, 2), keepdim=True) / count
    centred = torch.where(real, x - mean, 0.0)  # pads: exactly 0, and out of the variance
    var = (centred * centred).sum(dim=(1, 2), keepdim=True) / count
    return (centred * torch.rsqrt(var + eps)).to(input.dtype)


# ------------------------------------------------------------------ who depends on whom


def _sentence_fn(fn: Callable[[Tensor], Tensor]) -> Callable[[Tensor], Tensor]:
    """``fn`` on one sentence ``(seq_len, dim)``, through a batch of one."""
    return lambda sentence: fn(sentence.unsqueeze(0)).squeeze(0)


def dependency_matrix(fn: Callable[[Tensor], Tensor], sentence: Tensor) -> Tensor:
    r"""How strongly each output position of ``fn`` depends on each input position.

    Entry ``[i, j]`` is the size (Frobenius norm) of the Jacobian block
    :math:`\partial\, \text{out}_i / \partial\, \text{in}_j`, a ``dim x dim`` matrix: 0 exactly
    when no feature of output token ``i`` moves with any feature of input token ``j``, to first
    order. A per-token norm gives a diagonal matrix; a sentence-level norm a full one.

    Args:
        fn: maps ``(batch, seq_len, dim)`` to ``(batch, seq_len, dim)`` (a norm, a block).
        sentence: one sentence, ``(seq_len, dim)``, floating point.

    Returns:
        ``(seq_len, seq_len)``, in ``sentence``'s dtype: rows are outputs, columns inputs.
    """
    jac = torch.autograd.functional.jacobian(_sentence_fn(fn), sentence.detach())
    return (jac * jac).sum(dim=(1, 3)).sqrt()  # (out position, in position)


def token_jacobian_norm(x: Tensor, eps: float = 1e-5) -> Tensor:
    r"""The Frobenius norm of per-token LayerNorm's Jacobian for each token of ``x``, in closed form.

    For one token of ``n`` features, with :math:`\sigma = \sqrt{\mathrm{Var}[x] + \epsilon}` and
    :math:`y = (x - \mathrm{E}[x]) / \sigma` (no gamma or beta),

    .. math::
        \frac{\partial y}{\partial x} = \frac{1}{\sigma}\Big(I - \frac{1}{n}\mathbf{1}\mathbf{1}^\top
        - \frac{1}{n} y y^\top\Big), \qquad
        \Big\|\frac{\partial y}{\partial x}\Big\|_F = \frac{\sqrt{n - 2 + (1 - r)^2}}{\sigma},
        \quad r = \frac{\mathrm{Var}[x]}{\mathrm{Var}[x] + \epsilon},

    since :math:`I - \mathbf{1}\mathbf{1}^\top / n` is a projection of rank ``n - 1``, ``y`` is
    orthogonal to :math:`\mathbf{1}` and :math:`y^\top y = n r`. With ``eps`` small next to the
    variance (``r`` near 1) it is :math:`\sqrt{n - 2} / \sigma`: the diagonal of
    :func:`dependency_matrix` for a per-token norm.

    Args:
        x: tokens, ``(..., n)``; computed in float64.
        eps: LayerNorm's eps.

    Returns:
        ``x.shape[:-1]``, float64.
    """
    x = x.double()
    n = x.shape[-1]
    var = (x - x.mean(-1, keepdim=True)).square().mean(-1)
    r = var / (var + eps)
    return torch.sqrt(n - 2 + (1 - r) ** 2) / torch.sqrt(var + eps)


def future_leak(dependencies: Tensor) -> float:
    """The largest dependency of an output on a *later* input: the strict upper triangle's max.

    0.0 means the outputs are causal: position ``i`` uses no input after ``i``.
    """
    future = torch.triu(torch.ones_like(dependencies, dtype=torch.bool), diagonal=1)
    return dependencies[future].max().item() if future.any() else 0.0


def output_change(fn: Callable[[Tensor], Tensor], x: Tensor, replacement: Tensor,
                  position: int = -1) -> Tensor:
    """Replace the token at ``position`` of every sentence; how far each output token moves.

    Args:
        fn: maps ``(batch, seq_len, dim)`` to the same shape.
        x: ``(batch, seq_len, dim)``.
        replacement: the new token, ``(dim,)`` (or ``(batch, dim)``, one per sentence).
        position: which token to replace. Default: the last.

    Returns:
        ``(batch, seq_len)``: per output token, the largest absolute change of a feature.
        With a per-token norm only ``position`` moves; with a sentence-level norm every
        token of the sentence does, the first one included.
    """
    changed = x.clone()
    changed[:, position] = replacement
    with torch.no_grad():
        return (fn(changed) - fn(x)).abs().amax(dim=-1)


# ------------------------------------------------------------------ a causal block


class CausalBlock(nn.Module):
    """``x + attention(norm(x))`` with a causal mask: the first half of a pre-LN GPT block.

    Position ``i`` attends only to positions ``<= i`` (the mask below), as in GPT-2 and LLaMA.
    The only choice is the norm:

    - ``unit="token"``: ``nn.LayerNorm(dim)``, what GPT-2 uses; the block stays causal;
    - ``unit="sentence"``: ``nn.LayerNorm((seq_len, dim))``; every position's normalized
      input already mixes in statistics of the whole sentence, future tokens included,
      before the mask is ever applied.

    Args:
        dim: features per token.
        seq_len: the sentence length (only the sentence-level norm needs it).
        unit: ``"token"`` or ``"sentence"``.
        seed: seeds the weights, so that two blocks differ only in their norm.
    """

    def __init__(self, dim: int, seq_len: int, unit: str = "token", seed: int = 0):
        super().__init__()
        with torch.random.fork_rng():
            torch.manual_seed(seed)
            self.qkv = nn.Linear(dim, 3 * dim)
            self.proj = nn.Linear(dim, dim)
        self.norm = nn.LayerNorm(dim if unit == "token" else (seq_len, dim))
        self.unit = unit

    def forward(self, x: Tensor) -> Tensor:
        seq_len, dim = x.shape[-2:]
        q, k, v = self.qkv(self.norm(x)).chunk(3, dim=-1)
        scores = q @ k.transpose(-2, -1) / math.sqrt(dim)
        future = torch.triu(torch.ones(seq_len, seq_len, dtype=torch.bool, device=x.device), 1)
        scores = scores.masked_fill(future, float("-inf"))  # position i never attends to j > i
        return x + self.proj(scores.softmax(dim=-1) @ v)


# ---------------------------------------------------------------- the exercise (deep dive 16)
# LayerNorm per sentence over the real tokens only, checked against masked_layer_norm above.


def _padded(lengths: Sequence[int], dim: int, pad: float = 0.0) -> Callable[[torch.Generator], tuple]:
    def make(g: torch.Generator) -> tuple:
        return pad_batch([torch.randn(n, dim, generator=g) for n in lengths], padding_value=pad)

    return make


def _masked_slip(x: Tensor, mask: Tensor, *, count_pads: bool = False,
                 zero_pads: bool = True) -> Tensor:
    """Masked sentence LN, or a slip: dividing by every position's count, or leaving pads as they come."""
    real = mask[..., None]
    count = (x.shape[1] if count_pads else real.sum(dim=(1, 2), keepdim=True)) * x.shape[-1]
    mean = torch.where(real, x, 0.0).sum(dim=(1, 2), keepdim=True) / count
    var = torch.where(real, x - mean, 0.0).square().sum(dim=(1, 2), keepdim=True) / count
    y = (x - mean) / torch.sqrt(var + 1e-5)
    return torch.where(real, y, 0.0) if zero_pads else y


register(Exercise(
    name="masked_sentence_layer_norm",
    reference=masked_layer_norm,
    cases=[
        Case(Text("2 sentences of 3 and 2 tokens x 4 features, padded with 0",
                  "2 个句子，分别 3 个和 2 个 token × 4 个特征，用 0 填充"), _padded([3, 2], 4)),
        Case(Text("3 sentences of 5, 1 and 3 tokens x 8 features, padded with 0",
                  "3 个句子，分别 5、1、3 个 token × 8 个特征，用 0 填充"), _padded([5, 1, 3], 8)),
        Case(Text("2 sentences of 2 and 4 tokens, padded with 7.0",
                  "2 个句子，分别 2 个和 4 个 token，用 7.0 填充"), _padded([2, 4], 4, pad=7.0)),
        Case(Text("2 sentences of 3 tokens: no pad at all",
                  "2 个句子，各 3 个 token：完全没有填充"), _padded([3, 3], 4)),
    ],
    mistakes={
        Text("the pads went into the mean and the variance: take them over the real tokens only "
             "(e.g. sums of `torch.where(mask[..., None], x, 0.0)`, divided by the number of real "
             "values), and set the pads' outputs to 0.",
             "填充位被算进了均值和方差：只在真实 token 上算（例如对 `torch.where(mask[..., None], x, 0.0)` 求和，再除以真实值的个数），并把填充位的输出设为 0。"):
            lambda x, mask: F.layer_norm(x, x.shape[-2:]),
        Text("the pads went into the mean and the variance (the pads' outputs are 0, good): take the "
             "statistics over the real tokens only.",
             "填充位被算进了均值和方差（填充位的输出是 0，这点对了）：统计量只在真实 token 上算。"):
            lambda x, mask: F.layer_norm(x, x.shape[-2:]) * mask[..., None],
        Text("divide by the number of REAL values (real tokens x dim), not by seq_len x dim: the "
             "pads must not count.",
             "要除以真实值的个数（真实 token 数 × dim），而不是 seq_len × dim：填充位不能算在内。"):
            lambda x, mask: _masked_slip(x, mask, count_pads=True),
        Text("the real tokens are right; now set the pads' outputs to 0, e.g. "
             "`torch.where(mask[..., None], y, 0.0)`.",
             "真实 token 的结果对了；接下来把填充位的输出设为 0，例如 `torch.where(mask[..., None], y, 0.0)`。"):
            lambda x, mask: _masked_slip(x, mask, zero_pads=False),
    },
    hint=Text("per sentence, over its real tokens only: mean, then the biased variance of the "
              "centred values, then (x - mean) / sqrt(var + 1e-5); 0 at every pad.",
              "以句子为单位，只在它的真实 token 上：先求均值，再求减去均值后的有偏方差，然后算 (x - mean) / sqrt(var + 1e-5)；每个填充位输出 0。"),
    example="helpers.lessons.sequence.pad_batch([torch.randn(3, 4), torch.randn(2, 4)])",
))


def check_masked_sentence_layer_norm(fn: Callable[[Tensor, Tensor], Tensor]) -> Verdict:
    """Check ``fn(x, mask)``: LayerNorm per sentence over the real tokens only (``mask`` True),
    0 at the pads; ``x`` of shape ``(batch, seq_len, dim)``, ``mask`` ``(batch, seq_len)``."""
    return check("masked_sentence_layer_norm", fn)
