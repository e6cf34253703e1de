"""Figures for notebook 06: saved-for-backward bytes, variance errors, and ``make bench``'s results."""

from __future__ import annotations

import matplotlib.pyplot as plt
import pandas as pd
from matplotlib.figure import Figure

from helpers.plots.core import DPI

__all__ = ["bandwidth_figure", "saved_bytes_figure", "stability_figure", "update_stability_figure"]


def saved_bytes_figure(table: pd.DataFrame) -> Figure:
    """Horizontal bars: new bytes each implementation saves for backward (``saved_bytes_table``)."""
    fig, ax = plt.subplots(figsize=(6, 2.4), dpi=DPI)
    values = table["new bytes"].astype(float) / 1024
    ax.barh(list(table.index), values, color=["C3", "C1", "C0", "C2"][: len(values)])
    for i, v in enumerate(values):
        ax.annotate(f"{v:.1f} KiB", (v, i), xytext=(3, 0), textcoords="offset points", va="center", fontsize=8)
    ax.set_xscale("symlog", linthresh=1)
    ax.set_xlabel("bytes saved for backward beyond x and the parameters (KiB)")
    ax.invert_yaxis()
    ax.set_title("Memory kept alive between forward and backward")
    fig.tight_layout()
    return fig


def stability_figure(state: dict) -> Figure:
    """Bars: max |LN(x) - float64 LN(x)| per variance algorithm, for the widget's state."""
    fig, ax = plt.subplots(figsize=(6, 2.6), dpi=DPI)
    names = list(state["ln_error"])
    ax.bar(names, [1e-9] * len(names), color="C0")
    for i in range(len(names)):
        ax.annotate("", (i, 1e-9), ha="center", xytext=(0, 2), textcoords="offset points", fontsize=8)
    ax.set_yscale("log")
    ax.set_ylim(1e-9, 1e4)
    ax.axhline(0.1, color="0.6", lw=0.8, ls="--")
    ax.set_ylabel("max |error| of LN output")
    update_stability_figure(fig, state)
    fig.tight_layout()
    return fig


def update_stability_figure(fig: Figure, state: dict) -> None:
    """Show ``state`` on a figure from :func:`stability_figure` (same algorithms): bar heights and
    colours (red: NaN, drawn 1e3 tall, or an error over 0.1), their labels, the title."""
    ax = fig.axes[0]
    values = list(state["ln_error"].values())
    shown = [v if v == v else 1e3 for v in values]  # NaN drawn as a tall red bar
    for i, (bar, label, v) in enumerate(zip(ax.patches, ax.texts, values, strict=True)):
        height = max(shown[i], 1e-9)
        bar.set_height(height)
        bar.set_color("C3" if v != v or v > 0.1 else "C0")
        label.set_text("NaN" if v != v else f"{v:.1e}")
        label.xy = (i, height)
    ax.set_title(f"offset {state['offset']:.0e}, scale {state['scale']:.0e}, {state['dtype']}, eps {state['eps']:.0e}",
                 fontsize=9)


def bandwidth_figure(results: pd.DataFrame, width: int = 1024, direction: str = "forward+backward") -> Figure:
    """Two panels against tensor size (MiB) at one row width: median time, and achieved GB/s
    with the measured copy bandwidth as a dashed line (the memory-bound ceiling)."""
    data = results[(results.width == width) & (results.status == "ok")]
    fig, (left, right) = plt.subplots(1, 2, figsize=(9, 3.2), dpi=DPI)
    for name, group in data[data.direction == direction].groupby("implementation", sort=False):
        group = group.sort_values("MiB")
        left.plot(group.MiB, group.time_ms, marker="o", label=name, gid=name)
        right.plot(group.MiB, group.GBps, marker="o", label=name, gid=name)
    copy = data[data.direction == "copy"].sort_values("MiB")
    right.plot(copy.MiB, copy.GBps, "k--", label="copy (ceiling)", gid="copy")
    for ax in (left, right):
        ax.set_xscale("log", base=2)
        ax.set_xlabel("tensor size (MiB, float32)")
    left.set_yscale("log")
    left.set_ylabel("median time (ms)")
    right.set_ylabel("achieved GB/s (bytes-moved model)")
    right.legend(fontsize=7, loc="upper right")
    fig.suptitle(f"{direction}, rows of width {width}", fontsize=10)
    fig.tight_layout()
    return fig
