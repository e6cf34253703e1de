"""Where the norm goes (deep dive 12): before or after the activation, and in well-known models.

- :func:`placement_state`: one freshly initialised deep MLP, the stored ``placement_tuned``
  experiment's model and init (:class:`helpers.experiments.placement_tuned.StackedMLP`,
  :func:`helpers.experiments.placement_tuned.init_gain`), on a probe batch: per layer, the
  activations' histogram, % saturated (tanh), % dead (ReLU) and the weight-gradient norm; what
  the dashboard :func:`helpers.widgets.placement_demo` shows.
- :data:`PLACEMENTS`, with the activations of :data:`helpers.experiments.placement_tuned.ACTIVATIONS` (tanh, ReLU, GELU).
- :data:`NORM_PLACEMENT`: where the norm sits in well-known models, why there, with references.
- Three exercises with their checkers: :func:`check_saturated_fraction`,
  :func:`check_dead_fraction` and :func:`check_pre_ln_residual`.

Deep dive 12's stored experiments on placement live in :mod:`helpers.experiments.placement_tuned`.
"""

from __future__ import annotations

import pandas as pd
import torch
import torch.nn.functional as F

from helpers.exercises.checking import Case, Exercise, Verdict, check, register
from helpers.experiments.batch_size import make_task
from helpers.experiments.placement_tuned import StackedMLP
from helpers.functional import layer_norm
from helpers.language import Text

#: The arrangements compared, as the notebook (and :data:`helpers.experiments.placement_tuned.ARRANGEMENTS`) names them.
PLACEMENTS = ("LN -> act", "act -> LN", "no norm")
#: A tanh unit is saturated when ``|tanh| > SATURATED`` (its local gradient is then below 0.06).
SATURATED = 0.97
#: What counts as "dead" for ReLU: a unit that is 0 on every sample of the probe batch.
DEAD = 0.0
#: Histogram bin edges per activation, spanning what it outputs: tanh's [-1, 1]; ReLU's and GELU's
#: from -0.25 (GELU's minimum is -0.17) to about 4 (values beyond are clamped into the end bins),
#: with 0 at the centre of a bin of width 0.1, so ReLU's exact zeros have a bin of their own.
BINS = {"tanh": torch.linspace(-1.0, 1.0, 41),
        "relu": torch.linspace(-0.25, 4.05, 44),
        "gelu": torch.linspace(-0.25, 4.05, 44)}


def saturated_fraction(t: torch.Tensor) -> torch.Tensor:
    """Fraction of tanh outputs ``t`` with ``|t| > SATURATED``, over all but the last dim (per unit -> mean)."""
    return (t.abs() > SATURATED).float().mean()


def dead_fraction(a: torch.Tensor) -> torch.Tensor:
    """Fraction of units (last dim) whose ReLU output ``a`` is 0 for every sample (all other dims)."""
    alive = (a.reshape(-1, a.shape[-1]) > DEAD).any(dim=0)
    return 1.0 - alive.float().mean()


def _histogram(a: torch.Tensor, edges: torch.Tensor) -> torch.Tensor:
    """Counts of ``a``'s values over the bins ``edges``, values outside clamped into the end bins."""
    lo, hi = edges[0].item(), edges[-1].item()
    return torch.histc(a.clamp(lo, hi), bins=len(edges) - 1, min=lo, max=hi)


def placement_state(activation: str, placement: str, depth: int, *, seed: int = 0, n_probe: int = 256) -> dict:
    """One freshly initialised MLP on a probe batch: what the widget shows.

    The MLP is :class:`helpers.experiments.placement_tuned.StackedMLP` with one model, seed 0's
    weights, 8 inputs and ``depth`` hidden layers of 32 units; at initialisation its LN gains are 1
    and its biases 0, so the arrangements differ only by where the normalisation sits.

    Returns:
        A dict: ``activation``, ``placement``, ``depth``; ``hist`` (``depth x len(BINS[activation]) - 1``,
        per-layer activation histogram over :data:`BINS` ``[activation]``, as fractions); per-layer lists
        ``saturated``, ``dead`` (fractions) and ``grad_norm`` (the layer weight's gradient norm);
        ``readout`` (one line of text).
    """
    model = StackedMLP(1, activation=activation, arrangement=placement, in_features=8, width=32, depth=depth,
                       generators=[torch.Generator().manual_seed(0)])
    g = torch.Generator().manual_seed(1234 + seed)
    x, y = make_task(n_probe, g)
    keep, h = [], x[None]
    for k in range(depth):
        _, act_in, h = model.layer(k, h)
        keep.append(model.act(act_in).detach())  # what the activation outputs, before an LN after it
    logits = torch.baddbmm(model.b_out, h, model.w_out).squeeze(-1)
    F.binary_cross_entropy_with_logits(logits[0], y).backward()
    hist = torch.stack([_histogram(a[0], BINS[activation]) for a in keep])
    state = {"activation": activation, "placement": placement, "depth": depth,
             "hist": hist / hist.sum(dim=1, keepdim=True),
             "saturated": [saturated_fraction(a[0]).item() for a in keep],
             "dead": [dead_fraction(a[0]).item() for a in keep],
             "grad_norm": [model.weights[i].grad[0].norm().item() for i in range(depth)]}
    ratio = state["grad_norm"][0] / state["grad_norm"][-1]
    counted = {"tanh": ("saturated (|tanh| > 0.97)", state["saturated"]),
               "relu": ("dead units (0 on every sample)", state["dead"])}.get(activation)
    what = "" if counted is None else (f"{counted[0]}: mean {100 * sum(counted[1]) / depth:.1f}%, "
                                       f"last layer {100 * counted[1][-1]:.1f}%; ")
    state["readout"] = (f"{activation}, {placement}, {depth} layers: {what}"
                        f"weight-gradient norm, first layer / last layer: {ratio:.2g}")
    return state


#: Where the norm sits in well-known models.
NORM_PLACEMENT = pd.DataFrame(
    [
        ("Transformer (2017)", "LayerNorm", "Post-LN: LN(x + f(x))", "no",
         "the recipe of the time: residual, then LN of the sum; the paper cites Ba et al. and gives no other reason",
         "Vaswani et al. 2017, arXiv:1706.03762, sec. 3.1"),
        ("BERT (2018)", "LayerNorm", "Post-LN", "no", "kept the 2017 block",
         "Devlin et al. 2018, arXiv:1810.04805 (uses the 2017 block)"),
        ("GPT-2 (2019)", "LayerNorm", "Pre-LN: x + f(LN(x))", "yes",
         "LN moved to each sub-block's input, 'similar to a pre-activation residual network' (He et al. 2016)",
         "Radford et al. 2019, 'Language Models are Unsupervised Multitask Learners', sec. 2.3"),
        ("Admin (2020)", "LayerNorm", "Post-LN, residual re-weighted at init", "no",
         "keeps Post-LN's final quality while making it train without divergence",
         "Liu et al. 2020, arXiv:2004.08249"),
        ("NormFormer (2021)", "LayerNorm", "Pre-LN + LN after attention and after the FFN activation", "yes",
         "Pre-LN's early layers get much larger gradients than its late ones; the extra norms rebalance them",
         "Shleifer et al. 2021, arXiv:2110.09456"),
        ("DeepNet (2022)", "LayerNorm", "Post-LN: LN(a x + f(x)), scaled init", "no",
         "Post-LN's quality at 1,000 layers, with the update size bounded by the residual scaling",
         "Wang et al. 2022, arXiv:2203.00555"),
        ("Sub-LN / Magneto (2022)", "LayerNorm", "Pre-LN + LN inside each sublayer (after the FFN activation)",
         "yes", "one architecture that trains stably across language, vision and speech",
         "Wang et al. 2022, arXiv:2210.06423"),
        ("LLaMA (2023)", "RMSNorm", "Pre-norm", "yes",
         "'to improve the training stability', as GPT-3; RMSNorm (Zhang and Sennrich 2019) is cheaper",
         "Touvron et al. 2023, arXiv:2302.13971, sec. 2.2"),
        ("Gemma 2 (2024)", "RMSNorm", "pre- and post-norm (sandwich)", "yes",
         "'to stabilize training': each sublayer's input and output normalized",
         "Gemma Team 2024, arXiv:2408.00118"),
        ("OLMo 2 (2024)", "RMSNorm", "norm of the sublayer's output inside the residual: x + N(f(x))", "yes",
         "training stability (with QK-norm): the residual stream is never normalized, each update is",
         "OLMo et al. 2024, arXiv:2501.00656"),
    ],
    columns=["model", "norm", "placement", "final norm", "why there", "reference"],
).set_index("model")


# ------------------------------------------------------------------ exercises


register(Exercise(
    name="saturated_fraction", reference=saturated_fraction,
    cases=[Case(Text("tanh of N(0, 1)",
                     "N(0, 1) 的 tanh"), lambda g: (torch.tanh(torch.randn(64, 8, generator=g)),)),
           Case(Text("tanh of N(0, 9)",
                     "N(0, 9) 的 tanh"), lambda g: (torch.tanh(3 * torch.randn(64, 8, generator=g)),))],
    mistakes={Text("count |t| > 0.97, not t > 0.97: a unit saturates at -1 too.",
                   "要数 |t| > 0.97，而不是 t > 0.97：单元在 -1 处也会饱和。"): lambda t: (t > SATURATED).float().mean(),
              Text("return the fraction (a mean), not the count.",
                   "返回比例（一个均值），而不是个数。"): lambda t: (t.abs() > SATURATED).float().sum()},
    hint=Text("compare |t| with 0.97 entry by entry, then average the booleans (as floats) over all entries.",
              "逐个元素比较 |t| 和 0.97，再把这些布尔值（转成浮点数）在所有元素上求平均。"),
    example="torch.tanh(torch.randn(4, 3))", shape_hint=Text("return a 0-d tensor: one fraction.",
                                                             "返回一个 0 维张量：一个比例。"),
    forbidden=("helpers.lessons.placement.saturated_fraction",),
))

register(Exercise(
    name="dead_fraction", reference=dead_fraction,
    cases=[Case(Text("relu of a shifted batch",
                     "平移后的批次过 relu"), lambda g: (torch.relu(torch.randn(16, 8, generator=g) - 1.5),)),
           Case(Text("relu, some units always negative",
                     "relu，有些单元总是负的"),
                lambda g: (torch.relu(torch.randn(32, 8, generator=g) - torch.arange(8.0)),))],
    mistakes={Text("a unit is dead when it is 0 on EVERY sample: reduce over the batch (dim 0) with .any().",
                   "一个单元在每一个样本上都是 0 才算死亡：用 .any() 在批次上（第 0 轴）归约。"):
              lambda a: (a == 0).float().mean(),
              Text("average over units (the last dim), after finding which are never positive.",
                   "先找出哪些单元从不为正，再在单元上（最后一个轴）求平均。"):
              lambda a: 1.0 - (a > 0).any(dim=1).float().mean()},
    hint=Text("a unit (a column of the last dim) is dead when it is 0 on every sample: find the units "
              "positive on at least one sample (`.any` over the samples), then average over the units.",
              "一个单元（最后一个轴上的一列）在每个样本上都是 0 才算死亡：先找出至少在一个样本上为正的单元（在样本上用 `.any`），再在单元上求平均。"),
    example="torch.relu(torch.randn(4, 3))", shape_hint=Text("return a 0-d tensor: one fraction.",
                                                             "返回一个 0 维张量：一个比例。"),
    forbidden=("helpers.lessons.placement.dead_fraction",),
))


def _pre_ln(x: torch.Tensor, w: torch.Tensor) -> torch.Tensor:
    return x + layer_norm(x, (x.shape[-1],)) @ w


register(Exercise(
    name="pre_ln_residual", reference=_pre_ln,
    cases=[Case(Text("4 tokens, dim 8",
                     "4 个 token，dim 8"), lambda g: (torch.randn(4, 8, generator=g), torch.randn(8, 8, generator=g) / 3)),
           Case(Text("2 x 5 tokens, dim 6",
                     "2 × 5 个 token，dim 6"),
                lambda g: (3 * torch.randn(2, 5, 6, generator=g) + 1, torch.randn(6, 6, generator=g) / 3))],
    mistakes={Text("that is Post-LN, LN(x + f(x)); Pre-LN normalises the sublayer's INPUT: x + f(LN(x)).",
                   "这是 Post-LN，LN(x + f(x))；Pre-LN 归一化的是子层的输入：x + f(LN(x))。"):
              lambda x, w: layer_norm(x + x @ w, (x.shape[-1],)),
              Text("the residual must carry the un-normalised x: x + f(LN(x)), not LN(x) + f(LN(x)).",
                   "残差要带上未归一化的 x：x + f(LN(x))，而不是 LN(x) + f(LN(x))。"):
              lambda x, w: layer_norm(x, (x.shape[-1],)) * 1 + layer_norm(x, (x.shape[-1],)) @ w,
              Text("normalise the input to f, not f's output: x + f(LN(x)).",
                   "归一化的是 f 的输入，而不是 f 的输出：x + f(LN(x))。"):
              lambda x, w: x + layer_norm(x @ w, (x.shape[-1],)),
              Text("that is the sublayer alone, f(LN(x)): add the residual, x + f(LN(x)).",
                   "这只是子层本身，f(LN(x))：还要加上残差，x + f(LN(x))。"):
              lambda x, w: layer_norm(x, (x.shape[-1],)) @ w,
              Text("that is the residual step without a norm, x + f(x): normalise f's input first.",
                   "这是没有归一化的残差步，x + f(x)：要先把 f 的输入归一化。"):
              lambda x, w: x + x @ w},
    hint=Text("Pre-LN: x + f(LN(x)) with f(h) = h @ w and LN over the last dim written by hand "
              "(mean, biased variance, eps = 1e-5, no gamma or beta).",
              "Pre-LN：x + f(LN(x))，其中 f(h) = h @ w，LN 在最后一个轴上手写（均值、有偏方差、eps = 1e-5，不带 gamma 和 beta）。"),
    example="torch.randn(4, 8), torch.randn(8, 8)",
))


def check_saturated_fraction(fn) -> Verdict:
    """Check ``fn(t) -> fraction of |t| > 0.97`` against :func:`saturated_fraction`."""
    return check("saturated_fraction", fn)


def check_dead_fraction(fn) -> Verdict:
    """Check ``fn(a) -> fraction of units 0 on every sample`` against :func:`dead_fraction`."""
    return check("dead_fraction", fn)


def check_pre_ln_residual(fn) -> Verdict:
    """Check ``fn(x, w) -> x + layer_norm(x) @ w`` (one Pre-LN residual step, ``f(h) = h @ w``)."""
    return check("pre_ln_residual", fn)
