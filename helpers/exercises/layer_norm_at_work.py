"""Exercises that put LayerNorm to work: a Linear -> LN -> tanh block written by hand (deep dive 12,
where the norm goes), where a model's final LN goes (core notebook 02) and LLaMA's RMSNorm (deep
dive 15), over the shared checking machinery.

Each case set holds the inputs that catch the classic mistakes (the unbiased variance, eps
outside the root, the wrong dim, a large mean), and while a check runs torch's norm functions
and the set's own refuse to run, so handing one of them in does not pass.
"""

from __future__ import annotations

from collections.abc import Callable

import torch
import torch.nn.functional as F

from helpers.exercises.checking import Case, Exercise, Verdict, check, register
from helpers.language import Text

__all__ = ["check_final_ln", "check_ln_before_activation", "check_rms_norm"]


def _ln(x: torch.Tensor, *, unbiased: bool = False, eps_inside: bool = True, eps: float = 1e-5) -> torch.Tensor:
    """LayerNorm over the last dim without gamma and beta, or one of its classic slips."""
    mean = x.mean(-1, keepdim=True)
    var = x.var(-1, unbiased=unbiased, keepdim=True)
    return (x - mean) / (torch.sqrt(var + eps) if eps_inside else torch.sqrt(var) + eps)


# ------------------------------------------------ deep dive 12: Linear -> LN -> tanh


def _block(x, weight, bias, gamma, beta):
    return torch.tanh(F.layer_norm(x @ weight.T + bias, weight.shape[:1], gamma, beta))


def _block_case(tokens: int, d_in: int, d_out: int, mean: float = 0.0, std: float = 1.0):
    def make(g: torch.Generator) -> tuple:
        x = torch.randn(tokens, d_in, generator=g) * std + mean
        return (x, torch.randn(d_out, d_in, generator=g) / d_in**0.5, torch.randn(d_out, generator=g),
                1 + 0.5 * torch.randn(d_out, generator=g), 0.5 * torch.randn(d_out, generator=g))
    return make


register(Exercise(
    name="ln_before_activation",
    reference=_block,
    cases=[
        Case(Text("4 tokens, 8 -> 6 features",
                  "4 个 token，8 -> 6 个特征"), _block_case(4, 8, 6)),
        Case(Text("2 x 3 tokens (the lesson's batch shape), 4 -> 4 features",
                  "2 × 3 个 token（原课程里那批数据的形状），4 -> 4 个特征"),
             lambda g: (torch.rand(2, 3, 4, generator=g), *_block_case(1, 4, 4)(g)[1:])),
        Case(Text("5 tokens, 8 -> 16 features, inputs around 1000 (std 50)",
                  "5 个 token，8 -> 16 个特征，输入在 1000 附近（标准差 50）"), _block_case(5, 8, 16, 1e3, 50.0)),
        Case(Text("3 tokens whose Linear outputs barely differ (std about 0.003)",
                  "3 个 token，Linear 的输出几乎相同（标准差约 0.003）"),
             lambda g: (lambda x, w, b, gamma, beta: (x, w * 3e-3, b * 0, gamma, beta))(*_block_case(3, 8, 6)(g))),
    ],
    mistakes={
        Text("that is the activation first, then LN: the lesson puts LN before it, tanh(LN(linear(x))).",
             "这是先激活、后 LN：原课程把 LN 放在激活函数之前，tanh(LN(linear(x)))。"):
            lambda x, w, b, g, be: F.layer_norm(torch.tanh(x @ w.T + b), w.shape[:1], g, be),
        Text("LN goes on the linear layer's output, not on its input x: tanh(LN(x @ weight.T + bias)).",
             "LN 作用在线性层的输出上，而不是它的输入 x：tanh(LN(x @ weight.T + bias))。"):
            lambda x, w, b, g, be: torch.tanh(F.layer_norm(x, x.shape[-1:]) @ w.T + b),
        Text("scale by gamma and shift by beta after standardising, before the tanh.",
             "标准化之后、tanh 之前，要乘以 gamma 缩放、加上 beta 平移。"):
            lambda x, w, b, g, be: torch.tanh(_ln(x @ w.T + b)),
        Text("`x.var()` divides by n - 1 (unbiased); LayerNorm divides by n.",
             "`x.var()` 除以 n - 1（无偏）；LayerNorm 除以 n。"):
            lambda x, w, b, g, be: torch.tanh(_ln(x @ w.T + b, unbiased=True) * g + be),
        Text("eps goes inside the square root: `torch.sqrt(var + eps)`.",
             "eps 应放在根号里面：`torch.sqrt(var + eps)`。"):
            lambda x, w, b, g, be: torch.tanh(_ln(x @ w.T + b, eps_inside=False) * g + be),
        Text("there is no activation: the block ends with tanh.",
             "缺了激活函数：这个块最后要过 tanh。"):
            lambda x, w, b, g, be: F.layer_norm(x @ w.T + b, w.shape[:1], g, be),
    },
    hint=Text("z = x @ weight.T + bias; then LN over z's last dim (mean, biased variance, eps inside "
              "the root), times gamma plus beta; then torch.tanh.",
              "z = x @ weight.T + bias；然后在 z 的最后一个轴上做 LN（均值、有偏方差、eps 在根号里），乘以 gamma 再加上 beta；最后过 torch.tanh。"),
    example="torch.randn(4, 8), torch.randn(6, 8), torch.zeros(6), torch.ones(6), torch.zeros(6)",
    shape_hint=Text("one output per token and output feature: shape (..., weight.shape[0]).",
                    "每个 token 的每个输出特征一个值：形状为 (..., weight.shape[0])。"),
))


def check_ln_before_activation(fn: Callable[..., torch.Tensor]) -> Verdict:
    """Check ``fn(x, weight, bias, gamma, beta)``: ``tanh(LN(x @ weight.T + bias) * gamma + beta)``,
    LN over the last dim with eps = 1e-5, written by hand."""
    return check("ln_before_activation", fn)


# ------------------------------------------------ deep dive 15: RMSNorm, LLaMA's norm


def _rms_case(shape: tuple[int, ...], mean: float = 0.0, std: float = 1.0):
    return lambda g: (torch.randn(*shape, generator=g) * std + mean, 1 + 0.5 * torch.randn(shape[-1], generator=g))


register(Exercise(
    name="rms_norm",
    reference=lambda x, weight: F.rms_norm(x, x.shape[-1:], weight, eps=1e-6),
    cases=[
        Case(Text("4 tokens x 8 features",
                  "4 个 token × 8 个特征"), _rms_case((4, 8))),
        Case(Text("2 x 3 tokens x 4 features, mean 3",
                  "2 × 3 个 token × 4 个特征，均值 3"), _rms_case((2, 3, 4), 3.0)),
        Case(Text("3 tokens x 8 features that are almost 0 (std 1e-4)",
                  "3 个 token × 8 个几乎为 0 的特征（标准差 1e-4）"), _rms_case((3, 8), 0.0, 1e-4)),
    ],
    mistakes={
        Text("RMSNorm does not subtract the mean: divide x itself by sqrt(mean(x ** 2) + eps).",
             "RMSNorm 不减均值：直接把 x 本身除以 sqrt(mean(x ** 2) + eps)。"):
            lambda x, w: _ln(x, eps=1e-6) * w,
        Text("eps goes inside the square root: `torch.rsqrt(ms + eps)`.",
             "eps 应放在根号里面：`torch.rsqrt(ms + eps)`。"):
            lambda x, w: x / (x.pow(2).mean(-1, keepdim=True).sqrt() + 1e-6) * w,
        Text("the root mean square is over each token's features, the last dim.",
             "均方根是在每个 token 的特征上算的，也就是最后一个轴。"):
            lambda x, w: x * torch.rsqrt(x.pow(2).mean(0, keepdim=True) + 1e-6) * w,
        Text("now multiply by weight (RMSNorm's gamma).",
             "接下来乘以 weight（RMSNorm 的 gamma）。"):
            lambda x, w: x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + 1e-6),
        Text("that divides by the mean square; divide by its square root.",
             "这样除的是均方；应当除以它的平方根。"):
            lambda x, w: x / (x.pow(2).mean(-1, keepdim=True) + 1e-6) * w,
    },
    hint=Text("x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + eps) * weight, with eps = 1e-6.",
              "x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + eps) * weight，其中 eps = 1e-6。"),
    example="torch.randn(4, 8), torch.ones(8)",
))


def check_rms_norm(fn: Callable[[torch.Tensor, torch.Tensor], torch.Tensor]) -> Verdict:
    """Check ``fn(x, weight)``: RMSNorm over the last dim, eps = 1e-6 (LLaMA's), by hand:
    ``x / sqrt(mean(x ** 2) + eps) * weight``."""
    return check("rms_norm", fn)


# ------------------------------------------------ core notebook 02: a model's final LN


class _Part:
    """A fixed part of a tiny model (a block, the final LN, the head), made from a case's generator.

    Two parts made from the same seed compare equal (their kind and tensors), so a case's arguments
    made twice are the same arguments."""

    def __init__(self, kind: str, *tensors: torch.Tensor):
        self.kind, self.tensors = kind, tensors

    def __call__(self, x: torch.Tensor) -> torch.Tensor:
        t = self.tensors
        if self.kind == "Pre-LN block":  # x + f(LN(x)): the stream itself is never normalised
            return x + torch.tanh(_ln(x) @ t[0]) * 2.0
        if self.kind == "Post-LN block":  # LN(x + f(x)) * gamma + beta: ends with an LN
            return _ln(x + torch.tanh(x @ t[0])) * t[1] + t[2]
        if self.kind == "LN":
            return _ln(x) * t[0] + t[1]
        return x @ t[0]  # the head

    def __eq__(self, other) -> bool:
        return (isinstance(other, _Part) and self.kind == other.kind and len(self.tensors) == len(other.tensors)
                and all(torch.equal(a, b) for a, b in zip(self.tensors, other.tensors, strict=True)))

    __hash__ = None

    def __repr__(self) -> str:
        return f"<{self.kind}>"


def _model_case(norm_first: bool, n_blocks: int, tokens: int = 5, d: int = 8, vocab: int = 6):
    def make(g: torch.Generator) -> tuple:
        x = torch.randn(tokens, d, generator=g) * 3 + 1
        kind = "Pre-LN block" if norm_first else "Post-LN block"
        blocks = [_Part(kind, torch.randn(d, d, generator=g), 1 + 0.5 * torch.randn(d, generator=g),
                        0.5 * torch.randn(d, generator=g)) for _ in range(n_blocks)]
        ln_f = _Part("LN", 1 + 0.5 * torch.randn(d, generator=g), 0.5 * torch.randn(d, generator=g))
        return x, blocks, ln_f, _Part("head", torch.randn(d, vocab, generator=g)), norm_first
    return make


def _forward(x, blocks, ln_f, head, norm_first, *, final=None, first=False):
    """A model's forward; ``final`` forces the final LN on (True) or off (False); ``first`` puts it first."""
    if first:
        x = ln_f(x)
    for block in blocks:
        x = block(x)
    if not first and (norm_first if final is None else final):
        x = ln_f(x)
    return head(x)


register(Exercise(
    name="final_ln",
    reference=_forward,
    cases=[
        Case(Text("2 Pre-LN blocks", "2 个 Pre-LN 块"), _model_case(True, 2)),
        Case(Text("2 Post-LN blocks", "2 个 Post-LN 块"), _model_case(False, 2)),
        Case(Text("4 Pre-LN blocks", "4 个 Pre-LN 块"), _model_case(True, 4)),
        Case(Text("3 Post-LN blocks", "3 个 Post-LN 块"), _model_case(False, 3)),
    ],
    mistakes={
        Text("a Pre-LN stream is never normalised: apply ln_f after the last block, before the head.",
             "Pre-LN 的残差流从未归一化过，所以要在最后一个块之后、输出层之前加上 ln_f。"):
            lambda *args: _forward(*args, final=False),
        Text("a Post-LN block already ends with an LN: its model needs no final LN.",
             "Post-LN 块的最后一步已经是 LN，所以这种模型不需要最后的 LN。"):
            lambda *args: _forward(*args, final=True),
        Text("the final LN comes after the blocks, not before them.",
             "最后的 LN 在所有块之后，而不是之前。"):
            lambda *args: _forward(*args, first=True),
    },
    hint=Text("run the blocks in order; then ln_f only if norm_first (Pre-LN); then the head.",
              "依次运行各个块；只有 norm_first（Pre-LN）为真时再过 ln_f；最后过输出层。"),
    example="torch.randn(5, 8), [], torch.nn.LayerNorm(8), torch.nn.Linear(8, 6), True",  # a head that changes the width, as in the cases
    shape_hint=Text("the output is the head's: one row per token, one column per word of the vocabulary.",
                    "输出是输出层的结果：每个 token 一行，词表里每个词一列。"),
))


def check_final_ln(fn: Callable[..., torch.Tensor]) -> Verdict:
    """Check ``fn(x, blocks, ln_f, head, norm_first)``: a tiny model's forward, the blocks in order,
    the final LN ``ln_f`` where the blocks are Pre-LN (``norm_first``), then ``head``."""
    return check("final_ln", fn)
