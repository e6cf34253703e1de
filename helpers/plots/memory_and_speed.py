"""Figures for deep dive 14: saved-for-backward bytes, variance errors, and ``make bench``'s results."""

from __future__ import annotations

import matplotlib.pyplot as plt
import pandas as pd
from matplotlib.figure import Figure

from helpers.plots.core import DPI


def saved_bytes_figure(table: pd.DataFrame) -> Figure:
    """Horizontal bars on a linear axis: new bytes each implementation saves for backward
    (``saved_bytes_table``), each labelled with its size and its ratio to the smallest bar, so a
    bar too short to see still says what it is."""
    fig, ax = plt.subplots(figsize=(6, 2.4), dpi=DPI)
    values = table["new bytes"].astype(float) / 1024
    ax.barh(list(table.index), values, color=["C3", "C1", "C0", "C2"][: len(values)])
    smallest = values[values > 0].min()
    for i, v in enumerate(values):
        ax.annotate(f"{v:.1f} KiB ({v / smallest:.0f}x)", (v, i), xytext=(3, 0),
                    textcoords="offset points", va="center", fontsize=8)
    ax.set_xlim(0, values.max() * 1.35)  # room for the labels
    ax.set_xlabel("KiB saved beyond x and the parameters (linear axis)")
    ax.invert_yaxis()
    ax.set_title("Memory kept alive for backward (in brackets: x the smallest)", fontsize=10)
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
    """Two panels against tensor size (MiB) at one row width: the fastest time of ``make bench``'s
    rounds (its ``time_ms``), and the achieved GB/s at that time with the measured copy
    bandwidth as a dashed line (the memory-bound ceiling). Only measurements with preallocated
    (reused) outputs, where the results say which. The legend sits below both panels, clear of
    the data."""
    data = results[(results.width == width) & (results.status == "ok")]
    if "outputs" in data:
        data = data[data.outputs == "preallocated"]
    fig, (left, right) = plt.subplots(1, 2, figsize=(9, 3.8), dpi=DPI, layout="constrained")
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
    left.set_ylabel("fastest time (ms, log)")
    right.set_ylabel("achieved GB/s at the fastest time")
    fig.legend(*right.get_legend_handles_labels(), loc="outside lower center", ncol=3, fontsize=7, frameon=False)
    fig.suptitle(f"{direction}, rows of width {width}: the fastest of each implementation's rounds", fontsize=10)
    return fig


def partial_sums_figure(values, block_rows: int) -> Figure:
    """Three panels for a small ``(rows, columns)`` tensor: the values with the row blocks outlined,
    each block's partial column sums (stage 1), and the final column sums (stage 2)."""
    from helpers.lessons.param_grad_reduction import block_partial_sums, two_stage_column_sum

    partials = block_partial_sums(values, block_rows)
    total = two_stage_column_sum(values, block_rows)
    rows = values.shape[0]
    fig, axes = plt.subplots(1, 3, figsize=(9, 3.2), dpi=DPI, gridspec_kw={"width_ratios": [1, 1, 1]},
                             layout="constrained")
    panels = [(values, f"dy·x̂: {rows} rows, blocks of {block_rows}", "row"),
              (partials, f"stage 1: {partials.shape[0]} partial sums", "block"),
              (total.reshape(1, -1), "stage 2: their sum = dγ", "")]
    for ax, (data, title, ylabel) in zip(axes, panels, strict=True):
        limit = float(data.abs().max())
        ax.imshow(data.detach().double().numpy(), cmap="RdBu_r", vmin=-limit, vmax=limit, aspect="auto")
        ax.set_title(title, fontsize=9)
        ax.set_xlabel("column (feature)")
        ax.set_ylabel(ylabel)
        ax.set_yticks(range(data.shape[0]) if data.shape[0] <= 16 else [])
    for edge in range(block_rows, rows, block_rows):
        axes[0].axhline(edge - 0.5, color="k", lw=1.5, gid="block edge")
    axes[2].set_yticks([])
    return fig
