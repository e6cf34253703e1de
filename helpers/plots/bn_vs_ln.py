"""Deep dive 11's figures: BatchNorm against LayerNorm."""

from __future__ import annotations

import matplotlib.pyplot as plt
import numpy as np
import pandas as pd
import torch
from matplotlib.figure import Figure

from helpers.plots.core import DPI, HIGHLIGHT, OTHER


def _groups_panel(ax, groups: torch.Tensor, title: str) -> None:
    """One coloured, numbered cell per entry; ``groups`` is 2-D (rows x features)."""
    ax.imshow(groups.numpy() % 20, cmap="tab20", vmin=0, vmax=19, aspect="equal")
    for (r, c), g in np.ndenumerate(groups.numpy()):
        ax.text(c, r, str(g), ha="center", va="center", fontsize=8)
    ax.set_xticks(range(groups.shape[1]))
    ax.set_yticks(range(groups.shape[0]))
    ax.set_title(title, fontsize=10)


def pooling_figure(groups: dict, *, figsize: tuple[float, float] = (10, 5.6), dpi: int = DPI) -> Figure:
    """Which entries share one mean and variance: same colour and number, same statistics.

    Args:
        groups: ``{(norm, ndim): labels}`` for norms ``"BatchNorm"``/``"LayerNorm"`` and
            ``ndim`` 2 (labels of shape ``(batch, features)``) and 3 (``(batch, seq_len,
            features)``, drawn one panel per sample), as
            :func:`helpers.lessons.bn_vs_ln.pooling_groups` returns them.

    Returns:
        A Figure whose axes have ``gid`` ``"<norm> 2d"`` and ``"<norm> 3d sample <b>"``; each
        axes' first image holds its labels modulo 20 (the colormap's size).
    """
    norms = ("BatchNorm", "LayerNorm")
    batch3 = groups[(norms[0], 3)].shape[0]
    top = [f"{norm} 2d" for norm in norms for _ in range(batch3)]
    bottom = [f"{norm} 3d sample {b}" for norm in norms for b in range(batch3)]
    fig, axes = plt.subplot_mosaic([top, bottom], figsize=figsize, dpi=dpi)
    for norm in norms:
        two = groups[(norm, 2)]
        ax = axes[f"{norm} 2d"]
        ax.set_gid(f"{norm} 2d")
        _groups_panel(ax, two, f"{norm}, (batch, features) = {tuple(two.shape)}")
        ax.set_ylabel("sample")
        ax.set_xlabel("feature")
        three = groups[(norm, 3)]
        for b in range(three.shape[0]):
            ax = axes[f"{norm} 3d sample {b}"]
            ax.set_gid(f"{norm} 3d sample {b}")
            _groups_panel(ax, three[b], f"{norm} (3-D), sample {b}")
            ax.set_xlabel("feature")
            ax.set_ylabel("token")
    fig.suptitle("Same number (and colour) = pooled into one mean and variance", fontsize=11)
    fig.tight_layout()
    return fig


def other_samples_figure(state: dict, *, figsize: tuple[float, float] = (10, 3.2), dpi: int = DPI) -> Figure:
    """BN's and LN's outputs after one sample was moved; dashed: before the move.

    Args:
        state: what :func:`helpers.widgets.other_samples_state` returns.

    Returns:
        A Figure with axes ``BatchNorm`` and ``LayerNorm``; on each, per sample ``i``, a
        line with ``gid`` ``"sample i"`` (the output now) and ``"sample i before"``.
    """
    fig, axes = plt.subplots(1, 2, figsize=figsize, dpi=dpi, sharey=True)
    moved = state["sample"]
    for ax, norm in zip(axes, ("BatchNorm", "LayerNorm"), strict=True):
        now, before = state[norm], state[f"{norm} before"]
        features = range(now.shape[1])
        for i in range(now.shape[0]):
            colour = HIGHLIGHT if i == moved else OTHER
            ax.plot(features, before[i].tolist(), color=colour, ls="--", lw=1, alpha=0.8,
                    gid=f"sample {i} before")
            ax.plot(features, now[i].tolist(), color=colour if i == moved else "0.3", marker="o",
                    ms=3, lw=1.5 if i == moved else 1, gid=f"sample {i}",
                    label=(f"sample {i} (moved)" if i == moved else
                           ("other samples" if i == (1 if moved == 0 else 0) else "_nolegend_")))
        ax.set_xlabel("feature")
        ax.set_ylim(-3, 3)
        ax.grid(alpha=0.3)
    axes[0].set_ylabel("output (dashed: before)")
    axes[0].legend(loc="upper left", fontsize="small")
    update_other_samples_figure(fig, state)
    fig.tight_layout()
    return fig


def update_other_samples_figure(fig: Figure, state: dict) -> None:
    """Show ``state`` on a figure from :func:`other_samples_figure` (same batch shape, same moved sample)."""
    for ax, norm in zip(fig.axes, ("BatchNorm", "LayerNorm"), strict=True):
        lines = {line.get_gid(): line for line in ax.get_lines()}
        for i, (now, before) in enumerate(zip(state[norm].tolist(), state[f"{norm} before"].tolist(),
                                              strict=True)):
            lines[f"sample {i}"].set_ydata(np.asarray(now, dtype=float))
            lines[f"sample {i} before"].set_ydata(np.asarray(before, dtype=float))
        change = state["table"].loc[norm, "other samples: max change"]
        ax.set_title(f"{norm} output: other samples moved by up to {change:.3f}", fontsize=10)


def batch_noise_figure(frame: pd.DataFrame, *, figsize: tuple[float, float] = (5, 3.2), dpi: int = DPI) -> Figure:
    """Spread of a batch's mean against batch size (log-log), measured (``gid`` ``"measured"``)
    and ``1 / sqrt(B)`` (``gid`` ``"theory"``), from :func:`helpers.lessons.bn_vs_ln.batch_mean_noise`."""
    fig, ax = plt.subplots(figsize=figsize, dpi=dpi)
    ax.plot(frame["batch_size"], frame["std_of_batch_mean"], "o-", color="C3", gid="measured",
            label="measured std of the batch mean")
    ax.plot(frame["batch_size"], frame["theory"], "--", color="0.4", gid="theory", label="1 / sqrt(B)")
    ax.set_xscale("log", base=2)
    ax.set_yscale("log")
    ax.set_xlabel("batch size B")
    ax.set_ylabel("std of the batch mean")
    ax.set_title("BN's batch mean is noisy for small batches", fontsize=10)
    ax.grid(alpha=0.3, which="both")
    ax.legend(fontsize="small")
    fig.tight_layout()
    return fig


_ARM_STYLES = {"BatchNorm": ("C3", "o-"), "BatchNorm, precise statistics": ("C1", "s--"),
               "BatchNorm, train mode": ("C4", "^:"), "LayerNorm": ("C0", "o-"), "no norm": ("0.45", "o-")}


def batch_size_figure(summary: pd.DataFrame, *, seeds: int, samples: int, chance: float = 0.5,
                      figsize: tuple[float, float] = (7, 3.8), dpi: int = DPI) -> Figure:
    """Mean final test accuracy over seeds (line, ``gid`` = the arm) and min-max band per arm, against batch size.

    Args:
        summary: :func:`helpers.experiments.batch_size.batch_size_summary`'s table: index ``batch_size``,
            columns ``(arm, "mean" | "min" | "max")``.
        seeds, samples: named in the title (how many seeds; the training samples every batch size saw).
        chance: the accuracy of a guess, drawn dotted (``gid`` ``"chance"``).
    """
    fig, ax = plt.subplots(figsize=figsize, dpi=dpi)
    x = summary.index.to_numpy()
    for arm in summary.columns.get_level_values(0).unique():
        colour, style = _ARM_STYLES.get(arm, (None, "o-"))
        ax.plot(x, summary[(arm, "mean")], style, color=colour, gid=arm, label=arm)
        ax.fill_between(x, summary[(arm, "min")], summary[(arm, "max")], color=colour, alpha=0.12)
    ax.axhline(chance, color="k", ls=":", lw=1, gid="chance", label=f"chance ({chance:.0%})")
    ax.set_xscale("log", base=2)
    ax.set_xticks(x, [str(v) for v in x])
    ax.set_xlabel("batch size (every batch size sees the same samples; rate ∝ √batch)")
    ax.set_ylabel("test accuracy")
    ax.set_title(f"{seeds} seeds, {samples} training samples each, each norm at its tuned rate;\n"
                 f"eval() mode unless named; mean over seeds, band: min to max", fontsize=9)
    ax.grid(alpha=0.3)
    ax.legend(fontsize="x-small", loc="lower right")
    fig.tight_layout()
    return fig
