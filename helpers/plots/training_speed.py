"""Notebook 05's figures: loss curves with spread, the learning-rate table, the hidden input's drift."""

from __future__ import annotations

import matplotlib.pyplot as plt
import numpy as np
import pandas as pd
from matplotlib.figure import Figure

from helpers.plots.core import DPI
from helpers.training_speed import labels

__all__ = ["VARIANT_COLOURS", "arm_colour", "curves_figure", "lr_heatmap_figure", "update_curves_figure"]

VARIANT_COLOURS = {"no norm": "0.45", "LayerNorm": "C0", "noisy LayerNorm": "C1"}


def arm_colour(variant: str, noise: float = 0.0):
    """The variant's colour; noisy arms in oranges, darker for stronger noise."""
    if variant != "noisy LayerNorm" or not noise:
        return VARIANT_COLOURS.get(variant)
    return plt.get_cmap("Oranges")(min(0.35 + 0.9 * noise, 0.95))

_LABELS = {"loss": "minibatch MSE (smoothed)", "pre_mean": "mean of the tanh input",
           "pre_std": "std of the tanh input"}


def curves_figure(curves: pd.DataFrame, *, column: str = "loss", title: str = "", log: bool | None = None,
                  threshold: float | None = None, figsize: tuple[float, float] = (6, 3.2),
                  dpi: int = DPI) -> Figure:
    """One line per arm (mean over seeds, ``gid`` = the arm's label) and a min-max band.

    Args:
        curves: rows ``step, seed, variant, <column>`` (and optionally ``noise`` and ``depth``)
            for ONE learning rate; arms are named as :func:`helpers.training_speed.labels` does.
        column: what to plot: ``"loss"``, ``"pre_mean"`` or ``"pre_std"``.
        log: log y axis (default: for the loss only).
        threshold: a dashed horizontal line (``gid`` ``"threshold"``), or None.
    """
    fig, ax = plt.subplots(figsize=figsize, dpi=dpi)
    ax.set_xlabel("training step")
    ax.grid(alpha=0.3)
    update_curves_figure(fig, curves, column=column, title=title, log=log, threshold=threshold)
    fig.tight_layout()
    return fig


def update_curves_figure(fig: Figure, curves: pd.DataFrame, *, column: str = "loss", title: str = "",
                         log: bool | None = None, threshold: float | None = None) -> None:
    """Draw ``curves`` on a figure from :func:`curves_figure`, in place of what it showed.

    Same arguments as :func:`curves_figure`. The arms' lines and bands are made anew (their
    number changes); the axes, their ticks and the layout are kept, but a title that gains or
    loses a line lays the figure out again.
    """
    ax = fig.axes[0]
    lines_before = ax.get_title().count("\n")
    for artist in [*ax.get_lines(), *ax.collections]:
        artist.remove()
    if ax.get_legend() is not None:
        ax.get_legend().remove()
    ax.relim()  # forget the removed artists' extent; the new ones add theirs (bands included)
    # the scale first: a log axis left from the loss view would refuse a band of negative means
    ax.set_yscale("log" if (log if log is not None else column == "loss") else "linear")
    curves = curves.assign(arm=labels(curves))
    stats = curves.groupby(["arm", "step"], sort=False)[column].agg(["mean", "min", "max"])
    for arm, first in curves.drop_duplicates("arm").set_index("arm").iterrows():
        part = stats.loc[arm]
        colour = arm_colour(first["variant"], first.get("noise", 0.0))
        steps = part.index.to_numpy()
        ax.plot(steps, part["mean"].to_numpy(), color=colour, gid=arm, label=arm)
        ax.fill_between(steps, part["min"].to_numpy(), part["max"].to_numpy(), color=colour, alpha=0.2)
    if threshold is not None:
        ax.axhline(threshold, color="k", ls="--", lw=0.8, gid="threshold", label=f"threshold {threshold}")
    ax.autoscale_view()
    ax.set_ylabel(_LABELS.get(column, column))
    ax.set_title(title or "mean over seeds; band: min to max", fontsize=10)
    ax.legend(fontsize="small")
    if ax.get_title().count("\n") != lines_before and fig.get_layout_engine() is None:
        fig.tight_layout()


def lr_heatmap_figure(table: pd.DataFrame, *, figsize: tuple[float, float] = (6, 2.4), dpi: int = DPI) -> Figure:
    """:func:`helpers.training_speed.lr_table` as a heatmap (log colour scale), each cell labelled.

    The axes' first image holds ``log10`` of the table (``inf`` where a run diverged).
    """
    fig, ax = plt.subplots(figsize=figsize, dpi=dpi)
    values = table.to_numpy(dtype=float)
    image = ax.imshow(np.log10(values), cmap="viridis_r", aspect="auto")
    for (r, c), v in np.ndenumerate(values):
        # viridis_r is light for low losses and dark for high ones: dark text on light cells
        ax.text(c, r, f"{v:.3f}", ha="center", va="center", fontsize=9, color="k" if v < np.nanmedian(values) else "w")
    ax.set_xticks(range(values.shape[1]), [str(lr) for lr in table.columns])
    ax.set_yticks(range(values.shape[0]), list(table.index))
    ax.set_xlabel("learning rate (Adam)")
    ax.set_title("final smoothed loss, mean over seeds (lower is better)", fontsize=10)
    fig.colorbar(image, ax=ax, label="log10 loss")
    fig.tight_layout()
    return fig
