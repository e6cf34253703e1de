"""Histogram panels: side-by-side distributions, one line per group (a layer, a token, a stage).

The core path's dashboards (and deep dive 16's token-or-sentence one) all compare distributions,
so they share one figure: a row of panels, each with a few histogram lines over the same bins. A dashboard's state function
returns a plain dict, and :func:`update_histogram_panels_figure` shows a new one on the kept
figure by setting each line's data and each panel's title; nothing is built anew unless the
number of lines in a panel changes.

Values outside the bins are not drawn in the end bins, where they would look like data: each
panel says in its corner how much of its curves lies beyond the axis (the largest share, and whose).

The state::

    {"edges": 1-D array of bin edges,
     "panels": [{"title": str, "xlabel": str, "edges": (optional) this panel's own bin edges,
                 "xscale": (optional) "symlog": linear within ±1, logarithmic beyond (:data:`SYMLOG`),
                 "curves": [{"label": str, "values": 1-D array, one fraction of all values per bin,
                             "colour": a matplotlib colour, "width": line width}, ...]}, ...],
     "ymax": (optional) the upper y limit of every panel; without it, each panel's own
             highest bin plus 10%,
     "colorbar": (optional) a label ("layer"): the figure gets a colour bar that numbers the curves
                 1, 2, ... in the first panel's colours (read once, when the figure is built),
     "suptitle": str}
"""

from __future__ import annotations

import matplotlib.pyplot as plt
import numpy as np
import torch
from matplotlib.cm import ScalarMappable
from matplotlib.colors import BoundaryNorm, ListedColormap
from matplotlib.figure import Figure

from helpers.plots.core import DPI

#: The symlog axis: linear within ±1 and logarithmic beyond, its slope the same on both sides of ±1
#: (linscale (1 - 1/10) / ln 10), so that a smooth distribution stays smooth there; ticks every 100x.
SYMLOG = {"base": 10, "linthresh": 1.0, "linscale": 0.9 / np.log(10)}
SYMLOG_TICKS = [-1e6, -1e4, -1e2, 0, 1e2, 1e4, 1e6]


def histogram(values: torch.Tensor, edges: np.ndarray) -> np.ndarray:
    """The fraction of all ``values`` in each bin of ``edges`` (equally spaced); values outside the
    edges are in no bin, so the fractions add up to the share inside."""
    flat = values.detach().double().flatten()
    counts = torch.histc(flat, bins=len(edges) - 1, min=float(edges[0]), max=float(edges[-1]))  # ignores outside
    return (counts / max(flat.numel(), 1)).numpy()


def _panel_axes(fig: Figure) -> list:
    return [ax for ax in fig.axes if ax.get_label() != "colorbar"]


def histogram_panels_figure(state: dict) -> Figure:
    """One axes per panel of ``state``, one line per curve (gid ``"<panel index>: <label>"``), at least
    900 pixels wide; and a colour bar where ``state`` asks for one."""
    n, label = len(state["panels"]), state.get("colorbar")
    ratios = [1] * n + ([0.035] if label else [])
    fig, axes = plt.subplots(1, len(ratios), figsize=(5.8 * n + 0.6 * bool(label), 3.4), dpi=DPI, squeeze=False,
                             gridspec_kw={"width_ratios": ratios})
    axes[0][0].set_ylabel("fraction of values")
    if label:
        colours = [c["colour"] for c in state["panels"][0]["curves"]]
        count = len(colours)
        mappable = ScalarMappable(BoundaryNorm(np.arange(0.5, count + 1), count), ListedColormap(colours))
        axes[0][-1].set_label("colorbar")
        fig.colorbar(mappable, cax=axes[0][-1], ticks=range(1, count + 1), label=label)
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


def _outside(ax, panel: dict) -> None:
    """The panel's corner text: the largest share of a curve's values beyond the axis, and whose."""
    shares = [(1 - float(np.sum(c["values"])), c["label"]) for c in panel["curves"]]
    share, label = max(shares)
    texts = [t for t in ax.texts if t.get_gid() == "outside"]
    text = texts[0] if texts else ax.text(0.01, 0.97, "", transform=ax.transAxes, ha="left", va="top",
                                          fontsize=8, color="C3", gid="outside")
    text.set_text(f"beyond the axis: {share:.0%} of {label}" if share >= 0.005 else "")


def update_histogram_panels_figure(fig: Figure, state: dict) -> None:
    """Show ``state`` on a figure from :func:`histogram_panels_figure`: lines, titles, labels, scales,
    limits, legends (only on panels with at most 4 curves), what lies beyond each axis, and the suptitle."""
    for index, (ax, panel) in enumerate(zip(_panel_axes(fig), state["panels"], strict=True)):
        edges = np.asarray(panel.get("edges", state["edges"]), dtype=float)
        scale = panel.get("xscale", "linear")
        if ax.get_xscale() != scale:
            ax.set_xscale(scale, **(SYMLOG if scale == "symlog" else {}))
            if scale == "symlog":
                ax.set_xticks(SYMLOG_TICKS)
        # each bin's centre where the axis draws it halfway between its edges (on a symlog axis too)
        scaled = ax.xaxis.get_transform().transform(edges.reshape(-1, 1)).ravel()
        centres = ax.xaxis.get_transform().inverted().transform(((scaled[1:] + scaled[:-1]) / 2).reshape(-1, 1)).ravel()
        _lines(ax, index, panel, centres)
        _outside(ax, panel)
        ax.set_title(panel["title"], fontsize=9)
        ax.set_xlabel(panel["xlabel"])
        ax.set_xlim(edges[0], edges[-1])
        ymax = state.get("ymax") or 1.1 * max(float(np.max(c["values"])) for c in panel["curves"])
        ax.set_ylim(0, ymax or 1.0)
        legend = ax.get_legend()
        labels = [c["label"] for c in panel["curves"]] if len(panel["curves"]) <= 4 else []
        if legend is not None and [t.get_text() for t in legend.get_texts()] != labels:
            legend.remove()
            legend = None
        if legend is None and labels:
            ax.legend(fontsize=8, loc="upper right")
    fig.suptitle(state.get("suptitle", ""), fontsize=10)


def histogram_panels_changing(fig: Figure) -> list:
    """The artists :func:`update_histogram_panels_figure` changes without moving anything else:
    per panel its y axis (its limit follows the data), lines, corner text, title and legend; the
    suptitle. (Its x limits, scale and label move the rest: a dashboard redraws the whole figure when
    they change.)"""
    artists = [] if fig._suptitle is None else [fig._suptitle]
    for ax in _panel_axes(fig):
        artists += [ax.yaxis, *ax.get_lines(), *ax.texts, ax.title]
        if ax.get_legend() is not None:
            artists.append(ax.get_legend())
    return artists
