"""Histogram panels: side-by-side distributions, one line per group (a layer, a token, a stage).

The core path's dashboards (and deep dive 16's token-or-sentence one) all compare distributions,
so they share one figure: a row of panels, each with a few histogram lines over the same bins. A dashboard's state function
returns a plain dict, and :func:`update_histogram_panels_figure` shows a new one on the kept
figure by setting each line's data and each panel's title; nothing is built anew unless the
number of lines in a panel changes.

The state::

    {"edges": 1-D array of bin edges (values outside are counted in the end bins),
     "panels": [{"title": str, "xlabel": str, "edges": (optional) this panel's own bin edges,
                 "curves": [{"label": str, "values": 1-D array, one fraction per bin,
                             "colour": a matplotlib colour, "width": line width}, ...]}, ...],
     "ymax": (optional) the upper y limit of every panel; without it, each panel's own
             highest bin plus 10%,
     "suptitle": str}
"""

from __future__ import annotations

import matplotlib.pyplot as plt
import numpy as np
import torch
from matplotlib.figure import Figure

from helpers.plots.core import DPI


def histogram(values: torch.Tensor, edges: np.ndarray) -> np.ndarray:
    """The fraction of ``values`` in each bin of ``edges``; values outside fall in the end bins."""
    low, high = float(edges[0]), float(edges[-1])
    flat = values.detach().double().flatten().clamp(low, high)
    counts = torch.histc(flat, bins=len(edges) - 1, min=low, max=high)
    return (counts / max(flat.numel(), 1)).numpy()


def histogram_panels_figure(state: dict) -> Figure:
    """One axes per panel of ``state``, one line per curve (gid ``"<panel index>: <label>"``)."""
    n = len(state["panels"])
    fig, axes = plt.subplots(1, n, figsize=(4.2 * n, 3.2), dpi=DPI, squeeze=False)
    axes[0][0].set_ylabel("fraction of values")
    update_histogram_panels_figure(fig, state)
    fig.tight_layout()
    return fig


def _lines(ax, index: int, panel: dict, centres: np.ndarray) -> None:
    curves = panel["curves"]
    lines = ax.get_lines()
    if len(lines) != len(curves):
        for line in list(lines):
            line.remove()
        for curve in curves:
            ax.plot([], [], gid=f"{index}: {curve['label']}")
        lines = ax.get_lines()
    for line, curve in zip(lines, curves, strict=True):
        line.set_data(centres, np.asarray(curve["values"], dtype=float))
        line.set_gid(f"{index}: {curve['label']}")
        line.set_label(curve["label"])
        line.set_color(curve["colour"])
        line.set_linewidth(curve.get("width", 1.3))


def update_histogram_panels_figure(fig: Figure, state: dict) -> None:
    """Show ``state`` on a figure from :func:`histogram_panels_figure`: lines, titles, labels, limits,
    legends (only on panels with at most 4 curves) and the suptitle."""
    for index, (ax, panel) in enumerate(zip(fig.axes, state["panels"], strict=True)):
        edges = np.asarray(panel.get("edges", state["edges"]), dtype=float)
        centres = (edges[1:] + edges[:-1]) / 2
        _lines(ax, index, panel, centres)
        ax.set_title(panel["title"], fontsize=9)
        ax.set_xlabel(panel["xlabel"])
        ax.set_xlim(edges[0], edges[-1])
        ymax = state.get("ymax") or 1.1 * max(float(np.max(c["values"])) for c in panel["curves"])
        ax.set_ylim(0, ymax or 1.0)
        legend = ax.get_legend()
        if legend is not None:
            legend.remove()
        if len(panel["curves"]) <= 4:
            ax.legend(fontsize=8, loc="upper right")
    fig.suptitle(state.get("suptitle", ""), fontsize=10)


def histogram_panels_changing(fig: Figure) -> list:
    """The artists :func:`update_histogram_panels_figure` changes without moving anything else:
    per panel its y axis (its limit follows the data), lines, title and legend; the suptitle.
    (Its x limits and label move the rest: a dashboard redraws the whole figure when they change.)"""
    artists = [] if fig._suptitle is None else [fig._suptitle]
    for ax in fig.axes:
        artists += [ax.yaxis, *ax.get_lines(), ax.title]
        if ax.get_legend() is not None:
            artists.append(ax.get_legend())
    return artists
