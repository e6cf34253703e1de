"""Statistics tables: what a normalization layer sees, one row per group it normalizes.

A *group* is every entry of a tensor that shares the same index over the dims that are
**kept**; the dims in ``dims`` are **reduced** (averaged over). For ``x`` of shape
``(batch, seq_len, dim)``:

- ``group_stats(x, -1)`` has one row per token: what ``nn.LayerNorm(dim)`` normalizes;
- ``group_stats(x, (1, 2))`` has one row per sentence: ``nn.LayerNorm((seq_len, dim))``;
- ``group_stats(x, (0, 1))`` has one row per feature: what BatchNorm normalizes.

Everything is computed in float64 with two passes (centre first, then average the
squares), so the table is a trustworthy reference for float32 layers.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import pandas as pd
import torch

from helpers.functional import _check_dims


def group_stats(x: torch.Tensor, dims, *, names: Sequence[str] | None = None) -> pd.DataFrame:
    r"""Mean and biased variance of every group of ``x`` that a norm over ``dims`` would see.

    .. math::
        \mu_g = \frac{1}{n}\sum_{i \in g} x_i \qquad
        \sigma^2_g = \frac{1}{n}\sum_{i \in g} (x_i - \mu_g)^2

    Args:
        x: a tensor with at least one dim (any real dtype; read in float64, never changed).
        dims: the dim or dims to reduce, as an int or a tuple of ints (negative counts
            from the end). The remaining dims index the groups.
        names: optional name for each dim of ``x``, e.g. ``("sample", "token", "feature")``;
            the kept dims' names label the rows. Default: ``dim0``, ``dim1``, ...

    Returns:
        A DataFrame with one row per group, indexed by the kept dims (a MultiIndex when
        more than one dim is kept; a single row labelled ``"all"`` when every dim is
        reduced), and columns ``count`` (entries per group), ``mean``, ``var`` (biased:
        divided by ``count``, as LayerNorm does) and ``std`` (``sqrt(var)``).

    Example::

        >>> x = torch.tensor([[1.0, 2.0, 3.0, 4.0], [10.0, 20.0, 30.0, 40.0]])
        >>> group_stats(x, -1, names=("sample", "feature"))
                count  mean     var        std
        sample
        0           4   2.5    1.25   1.118034
        1           4  25.0  125.00  11.180340
    """
    reduced = tuple(sorted(_check_dims("group_stats", x, dims)))  # non-negative, as the library resolves them
    names = tuple(f"dim{d}" for d in range(x.ndim)) if names is None else tuple(names)
    kept = tuple(d for d in range(x.ndim) if d not in reduced)

    # Kept dims first, reduced dims last, then one row per group.
    x64 = x.detach().to(device="cpu", dtype=torch.float64)
    rows = x64.permute(*kept, *reduced).reshape(math.prod(x.shape[d] for d in kept),
                                                math.prod(x.shape[d] for d in reduced))
    mean = rows.mean(dim=1)
    var = (rows - mean[:, None]).square().mean(dim=1)  # two-pass: centre, then square

    if kept:
        sizes = [range(x.shape[d]) for d in kept]
        if len(kept) == 1:
            index = pd.Index(sizes[0], name=names[kept[0]])
        else:
            index = pd.MultiIndex.from_product(sizes, names=[names[d] for d in kept])
    else:
        index = pd.Index(["all"], name="group")
    return pd.DataFrame(
        {
            "count": rows.shape[1],
            "mean": mean.numpy(),
            "var": var.numpy(),
            "std": var.sqrt().numpy(),
        },
        index=index,
    )


def rounded(frame: pd.DataFrame, decimals: int = 4) -> pd.DataFrame:
    """``frame`` with its float columns rounded to ``decimals`` and ``-0.0`` shown as ``0.0``.

    For display: a mean of -3e-8 rounds to -0.0, which reads like a sign that matters.
    Integer and other columns are left as they are.
    """
    out = frame.copy()
    floats = out.select_dtypes("float").columns
    out[floats] = out[floats].round(decimals) + 0.0  # -0.0 + 0.0 == 0.0
    return out
