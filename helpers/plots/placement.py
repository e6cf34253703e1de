"""Notebook 04's figures: per-layer activation histograms and gradient norms."""

from __future__ import annotations

import matplotlib.pyplot as plt
import numpy as np
import pandas as pd
from matplotlib.figure import Figure

from helpers.plots.core import DPI

__all__ = ["layer_histograms_figure", "transformer_grad_figure", "update_layer_histograms_figure"]


def layer_histograms_figure(state: dict) -> Figure:
    """Left: one histogram line per layer (gid ``"layer N"``); right: the gradient norm per layer (gid ``"grad_norm"``).

    ``state`` is :func:`helpers.placement.placement_state`'s dict (or one with the same keys).
    """
    fig, (left, right) = plt.subplots(1, 2, figsize=(9, 3), dpi=DPI, gridspec_kw={"width_ratios": [2, 1]})
    left.set_xlabel("activation value (clamped to [-3, 3])")
    left.set_ylabel("fraction")
    right.plot([], [], "o-", gid="grad_norm")
    right.set_yscale("log")
    right.set_xlabel("layer")
    right.set_title("weight-gradient norm", fontsize=9)
    update_layer_histograms_figure(fig, state)
    fig.tight_layout()
    return fig


def update_layer_histograms_figure(fig: Figure, state: dict) -> None:
    """Show ``state`` (any depth) on a figure from :func:`layer_histograms_figure`: one line per
    layer (re-made: their number and colours follow the depth), the gradient norms, the title."""
    from helpers.placement import BINS

    left, right = fig.axes
    depth = len(state["hist"])
    if len(left.get_lines()) == depth:  # same depth: same lines, colours and legend; new heights
        for line, h in zip(left.get_lines(), state["hist"], strict=True):
            line.set_ydata(np.asarray(h.tolist(), dtype=float))
    else:
        for line in list(left.get_lines()):
            line.remove()
        centres = ((BINS[1:] + BINS[:-1]) / 2).tolist()
        cmap = plt.get_cmap("viridis")
        for i, h in enumerate(state["hist"]):
            left.plot(centres, h.tolist(), color=cmap(i / max(depth - 1, 1)), gid=f"layer {i + 1}",
                      label=f"{i + 1}")
        if left.get_legend() is not None:
            left.get_legend().remove()
        if depth <= 8:
            left.legend(title="layer", fontsize=7, ncol=2)
    left.relim()
    left.autoscale_view()
    left.set_title(state["readout"], fontsize=9)
    grad = right.get_lines()[0]
    grad.set_data(np.arange(1, depth + 1), np.asarray(state["grad_norm"], dtype=float))
    right.relim()
    right.autoscale_view()


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
