"""One sample shifted and rescaled, before and after LN: the figure of a dashboard that no notebook
shows now."""

from __future__ import annotations

import matplotlib.pyplot as plt
import numpy as np
import torch
from matplotlib.figure import Figure

from helpers.plots.core import DPI, HIGHLIGHT, OTHER

__all__ = ["shift_scale_figure", "update_shift_scale_figure"]


def _plot_samples(ax, values: torch.Tensor, before: torch.Tensor, sample: int) -> None:
    """One line per sample over the feature axis; ``sample`` highlighted over a wide pale band where it was."""
    features = range(values.shape[1])
    for i, row in enumerate(values.tolist()):
        if i != sample:
            ax.plot(features, row, color=OTHER, marker=".", lw=1, gid=f"sample {i}",
                    label="other samples" if i == (1 if sample == 0 else 0) else "_nolegend_")
    ax.plot(features, before[sample].tolist(), color=HIGHLIGHT, lw=6, alpha=0.25,
            solid_capstyle="round", gid=f"sample {sample} before", label=f"sample {sample} before")
    ax.plot(features, values[sample].tolist(), color=HIGHLIGHT, marker="o", lw=2,
            gid=f"sample {sample}", label=f"sample {sample} now")
    ax.set_xlabel("feature")
    ax.set_xticks(list(features))
    ax.grid(alpha=0.3)


def shift_scale_figure(state: dict, *, figsize: tuple[float, float] = (9, 3.2), dpi: int = DPI) -> Figure:
    """Inputs (left) and LayerNorm outputs (right) of a batch in which one sample was moved.

    Args:
        state: what :func:`helpers.widgets.shift_scale_state` returns: ``inputs``,
            ``outputs``, ``original_inputs``, ``original_outputs``, ``sample``, ``shift``,
            ``scale`` and ``input_ylim``.

    Returns:
        A Figure with two axes. Each has one line per sample (``gid`` ``"sample i"``) and,
        as a wide pale band, the moved sample's line before the move (``gid``
        ``"sample i before"``). The input
        axis follows the data (``state["input_ylim"]``); the output axis is fixed at
        (-3, 3), so that an output that does not move visibly does not move.
    """
    fig, (ax_in, ax_out) = plt.subplots(1, 2, figsize=figsize, dpi=dpi)
    s = state["sample"]
    _plot_samples(ax_in, state["inputs"], state["original_inputs"], s)
    ax_in.set_ylabel("value")
    ax_in.legend(loc="upper left", fontsize="small")
    _plot_samples(ax_out, state["outputs"], state["original_outputs"], s)
    ax_out.set_ylim(-3, 3)
    ax_out.set_title("LayerNorm output (over each sample's features)")
    update_shift_scale_figure(fig, state)
    fig.tight_layout()
    return fig


def update_shift_scale_figure(fig: Figure, state: dict) -> None:
    """Show ``state`` on a figure from :func:`shift_scale_figure` (same sample moved): lines, limits, title."""
    ax_in, ax_out = fig.axes
    s = state["sample"]
    for ax, now, before in ((ax_in, state["inputs"], state["original_inputs"]),
                            (ax_out, state["outputs"], state["original_outputs"])):
        lines = {line.get_gid(): line for line in ax.get_lines()}
        for i, row in enumerate(now.tolist()):
            lines[f"sample {i}"].set_ydata(np.asarray(row, dtype=float))
        lines[f"sample {s} before"].set_ydata(np.asarray(before[s].tolist(), dtype=float))
    ax_in.set_ylim(*state["input_ylim"])
    sign = "-" if state["shift"] < 0 else "+"
    ax_in.set_title(f"input: sample {s} becomes {state['scale']:g} · x {sign} {abs(state['shift']):g}")
