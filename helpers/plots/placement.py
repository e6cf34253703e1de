"""Notebook 04's figures: per-layer activation histograms and gradient norms."""

from __future__ import annotations

import matplotlib.pyplot as plt
import pandas as pd
from matplotlib.figure import Figure

from helpers.plots.core import DPI

__all__ = ["layer_histograms_figure", "transformer_grad_figure"]


def layer_histograms_figure(state: dict) -> Figure:
    """Left: one histogram line per layer (gid ``"layer N"``); right: the gradient norm per layer (gid ``"grad_norm"``).

    ``state`` is :func:`helpers.placement.placement_state`'s dict (or one with the same keys).
    """
    from helpers.placement import BINS

    fig, (left, right) = plt.subplots(1, 2, figsize=(9, 3), dpi=DPI, gridspec_kw={"width_ratios": [2, 1]})
    centres = ((BINS[1:] + BINS[:-1]) / 2).tolist()
    depth = len(state["hist"])
    cmap = plt.get_cmap("viridis")
    for i, h in enumerate(state["hist"]):
        left.plot(centres, h.tolist(), color=cmap(i / max(depth - 1, 1)), gid=f"layer {i + 1}", label=f"{i + 1}")
    left.set_xlabel("activation value (clamped to [-3, 3])")
    left.set_ylabel("fraction")
    left.set_title(state["readout"], fontsize=9)
    if depth <= 8:
        left.legend(title="layer", fontsize=7, ncol=2)
    layers = list(range(1, depth + 1))
    right.plot(layers, state["grad_norm"], "o-", gid="grad_norm")
    right.set_yscale("log")
    right.set_xlabel("layer")
    right.set_title("weight-gradient norm", fontsize=9)
    fig.tight_layout()
    return fig


def transformer_grad_figure(frame: pd.DataFrame) -> Figure:
    """Mean gradient norm per layer (over seeds) of Post-LN and Pre-LN, one panel per depth; gid ``"<form> <n>"``."""
    depths = sorted(frame.n_layers.unique())
    fig, axes = plt.subplots(1, len(depths), figsize=(4 * len(depths), 3), dpi=DPI, squeeze=False)
    for ax, n in zip(axes[0], depths, strict=True):
        part = frame[frame.n_layers == n].groupby(["form", "layer"]).grad_norm.mean()
        for form in ("Post-LN", "Pre-LN"):
            series = part[form]
            ax.plot(series.index, series.values, "o-", gid=f"{form} {n}", label=form)
        ax.set_title(f"{n} layers: |grad fc2.weight| at init", fontsize=9)
        ax.set_xlabel("layer (input -> output)")
        ax.legend(fontsize=8)
    fig.tight_layout()
    return fig
