"""A dashboard of what LayerNorm normalizes over (per token, per sentence, per batch); no notebook
shows it now (deep dive 16 uses :mod:`helpers.widgets.token_or_sentence`)."""

from __future__ import annotations

import ipywidgets as widgets
import pandas as pd
import torch

from helpers import plots
from helpers.functional import layer_norm
from helpers.lessons.group_stats import group_stats, rounded
from helpers.widgets.core import Dashboard, slider

__all__ = ["NORM_UNITS", "norm_unit_demo", "norm_unit_state"]


# What LayerNorm normalizes over, by the number of trailing dims of (batch, seq_len, dim).
NORM_UNITS = {1: "token", 2: "sentence", 3: "whole batch"}
SEQUENCE_NAMES = ("sentence", "token", "feature")


def norm_unit_state(x: torch.Tensor, n_trailing: int, scale: float = 1.0, *,
                    token: tuple[int, int] = (0, 2), eps: float = 1e-5) -> dict:
    """LayerNorm a ``(batch, seq_len, dim)`` batch over its last ``n_trailing`` dims.

    Args:
        x: the batch, ``(batch, seq_len, dim)``.
        n_trailing: 1 (per token: ``normalized_shape=(dim,)``), 2 (per sentence:
            ``(seq_len, dim)``) or 3 (the whole batch as one group: ``(batch, seq_len, dim)``).
        scale: multiplies every feature of the token ``token`` first; 1 leaves ``x`` as is.
        token: ``(sentence, position)`` of the token that ``scale`` acts on.
        eps: LayerNorm's eps.

    Returns:
        A dict: ``inputs`` (``x`` after scaling), ``outputs`` (``helpers.layer_norm``),
        ``normalized_shape``, ``reduced_dims``, ``unit`` (its name in :data:`NORM_UNITS`),
        ``groups`` (per group of values that share a mean and variance, its
        ``(first_row, n_rows)`` with the tokens as rows ``sentence * seq_len + position``),
        ``changed`` (bool, ``(batch, seq_len)``: whose output moved by more than 1e-4 compared
        with ``scale=1``), ``token``, ``scale`` and ``table``: per group, its ``count`` and the
        mean and (biased) variance of its input and of its output, from
        :func:`helpers.lessons.group_stats.group_stats`.
    """
    from helpers.lessons.sequence import reduced_dims

    if not isinstance(x, torch.Tensor) or x.ndim != 3:
        got = tuple(x.shape) if isinstance(x, torch.Tensor) else type(x).__name__
        raise ValueError(f"norm_unit_state(): argument 'x' must be a 3-D tensor "
                         f"(batch, seq_len, dim), got {got}")
    if n_trailing not in NORM_UNITS:
        raise ValueError(f"norm_unit_state(): argument 'n_trailing' must be one of "
                         f"{sorted(NORM_UNITS)}, got {n_trailing!r}")
    batch, seq_len, _ = x.shape
    b, t = token
    if not (0 <= b < batch and 0 <= t < seq_len):
        raise ValueError(f"norm_unit_state(): argument 'token' must be a (sentence, position) "
                         f"in [0, {batch - 1}] x [0, {seq_len - 1}], got {token}")
    shape = tuple(x.shape[-n_trailing:])
    scaled = x.clone()
    scaled[b, t] = x[b, t] * scale
    outputs = layer_norm(scaled, shape, eps=eps)
    original = layer_norm(x, shape, eps=eps)
    dims = reduced_dims(3, shape)
    stats_in = group_stats(scaled, dims, names=SEQUENCE_NAMES)
    stats_out = group_stats(outputs, dims, names=SEQUENCE_NAMES)
    rows_per_group = batch * seq_len // len(stats_in)  # 1 token, a sentence's, or every token
    groups = [(first, rows_per_group) for first in range(0, batch * seq_len, rows_per_group)]
    table = pd.DataFrame({
        "count": stats_in["count"],
        "input mean": stats_in["mean"], "input var": stats_in["var"],
        "output mean": stats_out["mean"], "output var": stats_out["var"],
    })
    return {
        "inputs": scaled, "outputs": outputs, "normalized_shape": shape,
        "reduced_dims": dims, "unit": NORM_UNITS[n_trailing], "groups": groups,
        "changed": (outputs - original).abs().amax(dim=-1) > 1e-4,
        "token": (b, t), "scale": float(scale), "table": table,
    }


def _norm_unit_table(state: dict) -> pd.DataFrame:
    return rounded(state["table"], 4)


def norm_unit_demo(x: torch.Tensor | None = None) -> Dashboard:
    """Pick what LayerNorm normalizes over (token, sentence, whole batch) and scale one token.

    ``x`` defaults to the lesson's batch: ``torch.manual_seed(42)``, then
    ``torch.rand(2, 3, 4)``. The figure outlines the groups that share a mean and variance and
    flags the outputs that move when token (0, 2) is scaled; the table has each group's
    statistics.
    """
    if x is None:
        x = torch.rand(2, 3, 4, generator=torch.Generator().manual_seed(42))
    options = [(f"{name} · normalized_shape={tuple(x.shape[-n:])}", n) for n, name in NORM_UNITS.items()]
    controls = {
        "n_trailing": widgets.ToggleButtons(options=options, value=1, description="normalize per",
                                            style={"description_width": "initial",
                                                   "button_width": "auto"}),
        "scale": slider("scale token s0 t2 by", 1.0, 1.0, 10.0, 0.5),
    }
    return Dashboard(
        controls,
        lambda n_trailing, scale: norm_unit_state(x, n_trailing, scale),
        plots.norm_unit_figure,
        update=plots.update_norm_unit_figure,
        table=_norm_unit_table,
        title="<b>Which values share one mean and variance? Choose the unit, then make one token "
              "louder.</b>",
    )
