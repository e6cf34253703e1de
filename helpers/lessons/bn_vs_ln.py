"""BatchNorm against LayerNorm (deep dive 11): whose statistics, what depends on the batch.

Plain functions that return tensors or tidy DataFrames, so a notebook can show them and
tests can assert on them:

- :func:`pooling_groups`: which entries of a ``(batch, features)`` or ``(batch, seq_len,
  features)`` tensor share one mean and variance under BN and under LN.
- :func:`batch_mean_noise`: how far a batch's mean strays from the population's, per
  batch size.
- :func:`shift_robustness`: BN with trained statistics and LN on data shifted feature by
  feature: neither is robust to it.
- :func:`padding_pollution`: BN over padded sequences lets pad tokens into the real
  tokens' statistics; per-token LN does not.
- :func:`invariance_table`: Table 1 of Ba, Kiros and Hinton (2016), measured.
- :func:`check_batch_norm_train` and :func:`check_running_var_update`: the exercises, BN's
  training-mode output and its running-variance update by hand (the first case is
  :data:`TWO_SAMPLES`).

The batch-size experiment (small MLPs with BN, LN or no norm at several batch sizes, and its
stored results) is :mod:`helpers.experiments.batch_size`.
"""

from __future__ import annotations

import math

import pandas as pd
import torch
import torch.nn.functional as F
from torch import nn

from helpers.exercises.checking import Case, Exercise, Verdict, check, register
from helpers.functional import batch_norm, layer_norm, rms_norm
from helpers.language import Text
from helpers.lessons.sequence import pad_batch

#: The two-sample example: 2 samples (rows) x 3 features (columns), on very different scales.
TWO_SAMPLES = torch.tensor([[1.0, 20.0, 300.0],
                            [3.0, 60.0, 100.0]])


def pooling_groups(shape: tuple[int, ...], norm: str) -> torch.Tensor:
    """A label per entry: entries with the same label share one mean and variance.

    Args:
        shape: ``(batch, features)`` or ``(batch, seq_len, features)`` (features last, as
            a Transformer holds them; BN pools every position of a feature).
        norm: ``"BatchNorm"`` (one group per feature) or ``"LayerNorm"`` (one group per
            sample, or per token for 3-D: ``normalized_shape=features``).

    Returns:
        An integer tensor of ``shape``.
    """
    index = torch.arange(math.prod(shape)).reshape(shape)
    return index % shape[-1] if norm == "BatchNorm" else index // shape[-1]  # else LayerNorm


def batch_mean_noise(batch_sizes=(1, 2, 4, 8, 16, 32, 64, 128), *, trials: int = 2000,
                     seed: int = 0) -> pd.DataFrame:
    """How far the mean of a batch of standard-normal values strays from the true mean 0.

    For each batch size ``B``, ``trials`` batches are drawn; the spread (std) of their
    means is what BN's training-time centring wobbles by, against ``1 / sqrt(B)``.

    Returns:
        One row per batch size: ``batch_size``, ``std_of_batch_mean`` and ``theory``
        (``1 / sqrt(B)``).
    """
    g = torch.Generator().manual_seed(seed)
    rows = []
    for b in batch_sizes:
        means = torch.randn(trials, b, generator=g, dtype=torch.float64).mean(dim=1)
        rows.append({"batch_size": b, "std_of_batch_mean": means.std().item(), "theory": 1 / math.sqrt(b)})
    return pd.DataFrame(rows)


# ------------------------------------------------------------ a shift between training and deployment


def shift_robustness(shift: torch.Tensor, scale: torch.Tensor, *, n: int = 4096, batches: int = 200,
                     batch_size: int = 32, seed: int = 0) -> pd.DataFrame:
    """BN with trained statistics and LN, on in-distribution data and on data shifted feature by feature.

    Training data is standard normal, ``(*, C)`` with ``C = len(shift)``. BN's statistics are
    trained on ``batches`` batches of ``batch_size`` with ``momentum=None`` (a cumulative average
    of the batch statistics: converged, not one update), then BN runs in ``eval()``. The test
    data are ``n`` fresh standard-normal samples, as they are (``"in distribution"``) and as
    ``x * scale + shift`` (``"shifted"``, a different shift and scale per feature). LN is
    ``nn.LayerNorm(C)`` (gamma 1, beta 0).

    Returns:
        One row per (norm, data), columns ``feature {j} mean`` and ``feature {j} std`` of the
        outputs, feature by feature over the ``n`` samples (float64, biased std), and
        ``largest change from in distribution``: the largest change of a feature's output mean
        or std from the same norm on in-distribution data.
    """
    c = len(shift)
    g = torch.Generator().manual_seed(seed)
    bn = nn.BatchNorm1d(c, momentum=None)
    with torch.no_grad():
        for _ in range(batches):
            bn(torch.randn(batch_size, c, generator=g))
    bn.eval()
    ln = nn.LayerNorm(c)
    clean = torch.randn(n, c, generator=g)
    data = {"in distribution": clean, "shifted": clean * scale + shift}
    rows = {}
    with torch.no_grad():
        for name, module in (("BatchNorm1d, eval()", bn), ("LayerNorm", ln)):
            for label, x in data.items():
                y = module(x).double()
                rows[name, label] = {**{f"feature {j} mean": y[:, j].mean().item() for j in range(c)},
                                     **{f"feature {j} std": y[:, j].std(unbiased=False).item() for j in range(c)}}
    table = pd.DataFrame.from_dict(rows, orient="index")
    table.index = pd.MultiIndex.from_tuples(table.index, names=["norm", "data"])
    reference = table.xs("in distribution", level="data")
    table["largest change from in distribution"] = [
        (table.loc[key, reference.columns] - reference.loc[key[0]]).abs().max() for key in table.index]
    return table


# ------------------------------------------------------------ padding


def padding_pollution(lengths=(5, 2), dim: int = 4, *, seed: int = 0, extra_pads: int = 3) -> pd.DataFrame:
    """Normalize the same real tokens padded to two lengths; how much do their outputs move?

    The sentences (``lengths`` tokens of ``dim`` features) are padded with zeros to the
    longest, then again with ``extra_pads`` more zero tokens. BN (per feature, over every
    position of the batch, pads included) and per-token LN are applied to both.

    Returns:
        One row per norm (``"BatchNorm over (batch, seq_len)"``, ``"LayerNorm per token"``):
        ``real_token_max_change`` (largest change of a real token's output between the two
        paddings) and ``pad_share`` (the fraction of pooled positions that are pads, per
        padding: a string ``"a -> b"``).
    """
    g = torch.Generator().manual_seed(seed)
    sentences = [torch.randn(n, dim, generator=g) * 2 + 1 for n in lengths]
    short, mask_short = pad_batch(sentences)
    long = torch.cat([short, short.new_zeros(short.shape[0], extra_pads, dim)], dim=1)
    real = mask_short[..., None].expand_as(short)

    def bn(x):  # channels = features: (batch, seq, dim) -> (batch, dim, seq)
        return batch_norm(x.transpose(1, 2), None, None, training=True).transpose(1, 2)

    def ln(x):
        return layer_norm(x, (dim,))

    rows = []
    for name, fn in (("BatchNorm over (batch, seq_len)", bn), ("LayerNorm per token", ln)):
        change = (fn(short) - fn(long)[:, : short.shape[1]]).abs()[real].max().item()
        n_real = int(mask_short.sum())
        share = f"{1 - n_real / mask_short.numel():.2f} -> {1 - n_real / (long.shape[0] * long.shape[1]):.2f}"
        rows.append({"norm": name, "real_token_max_change": change, "pad_share": share})
    return pd.DataFrame(rows).set_index("norm")


# ------------------------------------------------------------ invariances

#: Table 1 of Ba, Kiros and Hinton (2016), arXiv:1607.06450 (batch, weight and layer
#: normalization), and RMSNorm's row from Table 1 of Zhang and Sennrich (2019), arXiv:1910.07467.
PAPER_TABLE = pd.DataFrame(
    {"BatchNorm": [True, False, True, True, True, False],
     "WeightNorm": [True, False, True, False, False, False],
     "LayerNorm": [True, True, False, True, False, True],
     "RMSNorm": [True, False, False, True, False, True]},
    index=pd.Index(["weight matrix re-scaling", "weight matrix re-centering", "weight vector re-scaling",
                    "dataset re-scaling", "dataset re-centering", "single training case re-scaling"],
                   name="transformation"),
)

#: Each norm as ``fn(x, W, eps)`` -> the normalized summed inputs: BN, LN and RMSNorm act on
#: ``a = x @ W.T``; weight normalization (Salimans & Kingma 2016, gain 1) on the weights,
#: ``x @ (W / ||W_i||).T``, each unit's weight vector divided by its length.
_INVARIANCE_NORMS = {
    "BatchNorm": lambda x, w, eps: batch_norm(x @ w.T, None, None, training=True, eps=eps),
    "WeightNorm": lambda x, w, eps: x @ (w / w.norm(dim=1, keepdim=True)).T,
    "LayerNorm": lambda x, w, eps: layer_norm(x @ w.T, (w.shape[0],), eps=eps),
    "RMSNorm": lambda x, w, eps: rms_norm(x @ w.T, (w.shape[0],), eps=eps),
}


def _transformations(x: torch.Tensor, w: torch.Tensor, g: torch.Generator) -> dict:
    """``name -> (x', W')``; the summed inputs are ``a = x @ W.T`` (cases x units), no bias."""
    d = x.shape[1]
    delta = 3.0
    row_shift = torch.randn(d, generator=g, dtype=x.dtype)  # one vector added to every row of W
    data_shift = torch.randn(d, generator=g, dtype=x.dtype)
    w_vec = w.clone()
    w_vec[0] *= delta
    x_case = x.clone()
    x_case[0] *= delta
    return {
        "weight matrix re-scaling": (x, delta * w),
        "weight matrix re-centering": (x, w + row_shift),
        "weight vector re-scaling": (x, w_vec),
        "dataset re-scaling": (delta * x, w),
        "dataset re-centering": (x + data_shift, w),
        "single training case re-scaling": (x_case, w),
    }


def invariance_table(*, cases: int = 16, in_features: int = 6, units: int = 5, seed: int = 0,
                     eps: float = 1e-10, tol: float = 1e-6) -> pd.DataFrame:
    """Measure, for BN, WeightNorm, LN and RMSNorm, which of Ba et al.'s transformations leave the output unchanged.

    Definitions (the paper's, with ``a = x @ W.T`` the summed inputs of one layer, rows
    of ``W`` one unit's weight vector, rows of ``x`` the training cases):
    weight matrix re-scaling ``W -> 3 W``; weight matrix re-centering ``W -> W + 1 v^T``
    (the same vector ``v`` added to every unit's weights); weight vector re-scaling: one
    row of ``W`` times 3; dataset re-scaling ``x -> 3 x``; dataset re-centering ``x -> x +
    c`` (the same ``c`` for every case); single training case re-scaling: one row of
    ``x`` times 3. The norms run without gamma/beta (BN on the batch's statistics) in
    float64 with a tiny ``eps``: with the usual 1e-5, a re-scaling by 3 moves the output by
    a relative amount of order ``eps / Var``, which would blur "invariant up to eps" into a
    threshold on the data. *Invariant* means the output moved by less than ``tol``.

    Returns:
        One row per transformation; columns ``BatchNorm``, ``WeightNorm``, ``LayerNorm``,
        ``RMSNorm`` (measured, bool), ``... max change`` for each, and ``paper ...`` for each
        (:data:`PAPER_TABLE`: Ba et al.'s Table 1, RMSNorm's row from Zhang & Sennrich's).
    """
    g = torch.Generator().manual_seed(seed)
    x = torch.randn(cases, in_features, generator=g, dtype=torch.float64)
    w = torch.randn(units, in_features, generator=g, dtype=torch.float64)
    rows = {}
    for name, (x2, w2) in _transformations(x, w, g).items():
        row = {}
        for norm, fn in _INVARIANCE_NORMS.items():
            row[f"{norm} max change"] = (fn(x2, w2, eps) - fn(x, w, eps)).abs().max().item()
        for norm in _INVARIANCE_NORMS:
            row[norm] = row[f"{norm} max change"] < tol
        rows[name] = row
    table = pd.DataFrame.from_dict(rows, orient="index")
    table.index.name = "transformation"
    table = table[[*_INVARIANCE_NORMS, *(f"{n} max change" for n in _INVARIANCE_NORMS)]]
    for norm in PAPER_TABLE:
        table[f"paper {norm}"] = PAPER_TABLE[norm]
    return table


# ------------------------------------------------------------ exercises (helpers.exercises.checking)


def _bn_train_reference(x: torch.Tensor) -> torch.Tensor:
    return F.batch_norm(x, None, None, training=True, eps=1e-5)


def _standardize_over(x: torch.Tensor, dim: int, *, unbiased: bool = False) -> torch.Tensor:
    mean = x.mean(dim=dim, keepdim=True)
    return (x - mean) / torch.sqrt(x.var(dim=dim, unbiased=unbiased, keepdim=True) + 1e-5)


def _randn_case(n: int, c: int, mean: float = 0.0, std: float = 1.0):
    return lambda g: (torch.randn(n, c, generator=g) * std + mean,)


register(Exercise(
    name="batch_norm_train",
    reference=_bn_train_reference,
    cases=[
        Case(Text("the two-sample example (2 samples x 3 features)",
                  "两个样本的例子（2 个样本 × 3 个特征）"), lambda g: (TWO_SAMPLES.clone(),)),
        Case(Text("8 samples x 4 features from randn",
                  "8 个样本 × 4 个特征，取自 randn"), _randn_case(8, 4)),
        Case(Text("16 samples x 5 features, mean 3 and std 10",
                  "16 个样本 × 5 个特征，均值 3、标准差 10"), _randn_case(16, 5, 3.0, 10.0)),
        Case(Text("32 samples x 4 features around 10000 (std 500)",
                  "32 个样本 × 4 个特征，在 10000 附近（标准差 500）"), _randn_case(32, 4, 1e4, 500.0)),
        Case(Text("8 samples x 3 features that barely differ (std 0.003)",
                  "8 个样本 × 3 个几乎相同的特征（标准差 0.003）"), _randn_case(8, 3, 0.0, 0.003)),
    ],
    mistakes={
        Text("you normalized each sample over its features (that is LayerNorm): BatchNorm takes each "
             "feature's statistics over the batch, `dim=0`.",
             "你对每个样本在它的特征上做了归一化（那是 LayerNorm）：BatchNorm 对每个特征在整个批次上算统计量，`dim=0`。"): lambda x: _standardize_over(x, 1),
        Text("`x.var()` divides by n - 1 (unbiased); BatchNorm normalizes with the biased variance: "
             "`x.var(dim=0, unbiased=False)`.",
             "`x.var()` 除以 n - 1（无偏）；BatchNorm 归一化时用的是有偏方差：`x.var(dim=0, unbiased=False)`。"): lambda x: _standardize_over(x, 0, unbiased=True),
        Text("eps goes inside the square root: `torch.sqrt(var + eps)`, not `torch.sqrt(var) + eps`.",
             "eps 应放在根号里面：`torch.sqrt(var + eps)`，而不是 `torch.sqrt(var) + eps`。"):
            lambda x: (x - x.mean(dim=0, keepdim=True)) / (x.var(dim=0, unbiased=False, keepdim=True).sqrt() + 1e-5),
        Text("E[x²] - E[x]² subtracts two huge, nearly equal numbers when the mean is large next to the "
             "spread, and float32 cancels catastrophically: centre first, then average the squares.",
             "均值远大于标准差时，E[x²] - E[x]² 是两个几乎相等的大数相减，float32 会发生灾难性抵消：先减去均值，再对平方求平均。"):
            lambda x: (x - x.mean(dim=0, keepdim=True))
            / torch.sqrt((x * x).mean(dim=0, keepdim=True) - x.mean(dim=0, keepdim=True) ** 2 + 1e-5),
        Text("you took one mean and variance over the whole batch: BatchNorm takes one per feature, "
             "`dim=0` with `keepdim=True`.",
             "你对整个批次只算了一个均值和方差：BatchNorm 每个特征各算一组，`dim=0` 并加上 `keepdim=True`。"): lambda x: (x - x.mean()) / torch.sqrt(x.var(unbiased=False) + 1e-5),
    },
    hint=Text("per feature: mean and biased variance over dim 0 (keepdim=True), then (x - mean) / sqrt(var + 1e-5).",
              "以特征为单位：在第 0 轴上求均值和有偏方差（keepdim=True），然后算 (x - mean) / sqrt(var + 1e-5)。"),
    example="torch.randn(8, 4)",
))


def _running_var_reference(running_var: torch.Tensor, x: torch.Tensor) -> torch.Tensor:
    running_var = running_var.clone()
    F.batch_norm(x, torch.zeros_like(running_var), running_var, training=True, momentum=0.1)
    return running_var


def _running_var_slip(running_var, x, *, unbiased=True, swap=False):
    var = x.var(dim=0, unbiased=unbiased)
    return 0.1 * running_var + 0.9 * var if swap else 0.9 * running_var + 0.1 * var


register(Exercise(
    name="running_var_update",
    reference=_running_var_reference,
    cases=[
        Case(Text("running_var = 1, batch of 4 x 3",
                  "running_var = 1，批次 4 × 3"), lambda g: (torch.ones(3), torch.randn(4, 3, generator=g))),
        Case(Text("running_var from rand, batch of 2 x 5",
                  "running_var 取自 rand，批次 2 × 5"), lambda g: (torch.rand(5, generator=g) + 0.5,
                                                                 torch.randn(2, 5, generator=g) * 3)),
        Case(Text("running_var = 2, batch of 32 x 4",
                  "running_var = 2，批次 32 × 4"), lambda g: (torch.full((4,), 2.0), torch.randn(32, 4, generator=g))),
    ],
    mistakes={
        Text("the running estimate stores the UNBIASED batch variance (divided by n - 1): "
             "`x.var(dim=0, unbiased=True)`.",
             "移动平均值存的是批次的无偏方差（除以 n - 1）：`x.var(dim=0, unbiased=True)`。"): lambda rv, x: _running_var_slip(rv, x, unbiased=False),
        Text("momentum weighs the NEW batch: `(1 - 0.1) * running_var + 0.1 * batch_var`.",
             "momentum 是新批次的权重：`(1 - 0.1) * running_var + 0.1 * batch_var`。"):
            lambda rv, x: _running_var_slip(rv, x, swap=True),
    },
    hint=Text("new running_var = 0.9 * running_var + 0.1 * x.var(dim=0, unbiased=True).",
              "新的 running_var = 0.9 * running_var + 0.1 * x.var(dim=0, unbiased=True)。"),
    example="torch.ones(3), torch.randn(4, 3)",
    shape_hint=Text("return one value per feature: the shape of running_var.",
                    "每个特征返回一个值：形状与 running_var 相同。"),
))


def check_batch_norm_train(fn) -> Verdict:
    """Check ``fn(x)``: BatchNorm in training mode (no gamma/beta, eps 1e-5) of ``x`` ``(N, C)``."""
    return check("batch_norm_train", fn)


def check_running_var_update(fn) -> Verdict:
    """Check ``fn(running_var, x)``: the new ``running_var`` after one training step (momentum 0.1)."""
    return check("running_var_update", fn)
