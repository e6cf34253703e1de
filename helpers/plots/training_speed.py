"""Deep dive 13's figures: the stored runs of one setting (every seed, the median in bold) and the
learning-rate tuning behind each tuned setting (deep dive 12 draws its tuning with it too)."""

from __future__ import annotations

import matplotlib.pyplot as plt
import numpy as np
import pandas as pd
from matplotlib.figure import Figure

from helpers.plots.core import DPI, TITLE_Y, clear_curves, curves_figure, seed_curves

#: One colour per arm of deep dive 13's evidence, told apart at a glance (the noisy strengths too).
ARM_COLOURS = {"no norm": "0.35", "LSTM": "0.35", "LayerNorm": "C0", "LN-LSTM": "C0", "LN-LSTM without input LN": "C1",
               "Pre-LN": "C0", "Post-LN": "C3", "Pre-LN + warm-up": "C9", "Post-LN + warm-up": "C1",
               "noisy LayerNorm 0.1": "C2", "noisy LayerNorm 0.25": "C8", "noisy LayerNorm 0.5": "C6",
               "noisy LayerNorm 1": "C4", "LN -> act": "C0", "act -> LN": "C3"}


def evidence_figure(state: dict, *, figsize: tuple[float, float] = (7, 3.4), dpi: int = DPI) -> Figure:
    """:func:`helpers.experiments.training_speed_table.evidence_state` drawn: one thin line per seed, the median over
    seeds in bold (``gid`` = the arm), and for the loss the threshold, the learned-nothing level
    and the task's floor as horizontal lines."""
    return curves_figure(update_evidence_figure, state, figsize=figsize, dpi=dpi)


def update_evidence_figure(fig: Figure, state: dict) -> None:
    """Draw ``state`` on a figure from :func:`evidence_figure`, in place of what it showed."""
    ax = fig.axes[0]
    clear_curves(ax)
    setting, column, curves = state["setting"], state["column"], state["curves"]
    is_loss = column == "eval_loss"
    ax.set_yscale("log" if is_loss and setting.log else "linear")
    finite = curves[np.isfinite(curves[column])]
    for arm, runs in finite.groupby("arm", sort=False):
        seed_curves(ax, runs, column, colour=ARM_COLOURS.get(arm, "C7"), label=arm, by=("lr", "seed"))
    if is_loss:
        for level, style, name in ((setting.threshold, "--", "threshold"),
                                   (setting.learned_nothing, ":", "learned nothing"),
                                   (setting.floor, "-.", "floor")):
            if level > 0 or not setting.log:
                ax.axhline(level, color="k", ls=style, lw=0.9, gid=name, label=f"{name} {level:.3g}")
    if finite.empty:  # nothing measured for this choice: say so on fixed axes
        ax.set_yscale("linear")
        ax.set_xlim(0, 1)
        ax.set_ylim(0, 1)
        ax.text(0.5, 0.5, "nothing to show for this choice", ha="center", va="center", gid="empty")
    else:
        ax.autoscale(True)
        ax.autoscale_view()
    ax.set_ylabel(setting.loss if is_loss else state["measure"])
    rate = "each arm at its tuned rate" if state["rate"] == "tuned" else f"rate {state['rate']:g}"
    title = f"{setting.label}, {rate}"
    if state["notes"]:
        title += "\n(" + "; ".join(state["notes"]) + ")"
    ax.set_title(title, fontsize=9, y=TITLE_Y)
    if ax.get_lines():
        ax.legend(fontsize="x-small", loc="upper right")


def tuning_figure(scores: pd.DataFrame, *, columns: int = 4, dpi: int = DPI,
                  ylabel: str = "steps to threshold\n(restricted mean, pilot)", cap: str = "the cap",
                  log: bool = False) -> Figure:
    """:func:`helpers.experiments.training_speed_table.tuning_table` as small multiples: per setting, each arm's pilot
    score against the rate (log axis), its best rate ringed, the ``cap`` column dotted (the step cap,
    or whatever level means "learned nothing"). A best rate strictly inside the grid is what makes
    "each arm at its own best rate" a fair comparison. ``ylabel`` names the score; ``log`` puts it
    on a log axis."""
    names = list(dict.fromkeys(scores["setting"]))
    rows = -(-len(names) // columns)
    fig, axes = plt.subplots(rows, columns, figsize=(2.6 * columns, 2.2 * rows), dpi=dpi, sharex=True,
                             squeeze=False)
    for ax, name in zip(axes.flat, names, strict=False):
        part = scores[scores["setting"] == name]
        for arm, runs in part.groupby("arm", sort=False):
            colour = ARM_COLOURS.get(arm, "C7")
            runs = runs.sort_values("lr")
            ax.plot(runs["lr"], runs["score"], "o-", color=colour, ms=3, lw=1.2, label=arm, gid=arm)
            best = runs[runs["best"]]
            ax.plot(best["lr"], best["score"], "o", ms=9, mfc="none", mec=colour, mew=1.5)
        ax.axhline(part["cap"].iloc[0], color="k", ls=":", lw=0.8)
        ax.set_xscale("log")
        if log:
            ax.set_yscale("log")
        ax.set_title(name, fontsize=8)
        ax.tick_params(labelsize=7)
        ax.grid(alpha=0.3)
        ax.legend(fontsize=6)
    for ax in axes.flat[len(names):]:
        ax.set_visible(False)
    for ax in axes[:, 0]:
        ax.set_ylabel(ylabel, fontsize=7)
    for ax in axes[-1]:
        ax.set_xlabel("learning rate (Adam)", fontsize=7)
    fig.suptitle(f"Tuning: each arm's score at every rate of the grid; ringed: its best rate; dotted: {cap}",
                 fontsize=9)
    fig.tight_layout()
    return fig
