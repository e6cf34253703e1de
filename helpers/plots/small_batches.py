"""Deep dive 15's figures on the CNN experiment: test error against batch size for BN, GN, LN and
IN (Wu and He's curve at small scale), and one image of each class of the task."""

from __future__ import annotations

import matplotlib.pyplot as plt
import numpy as np
import pandas as pd
from matplotlib.figure import Figure

from helpers.plots.core import DPI

#: One colour per norm of the CNN experiment.
NORM_COLOURS = {"BatchNorm": "C3", "GroupNorm": "C0", "LayerNorm": "C2", "InstanceNorm": "C1"}


def small_batch_figure(table: pd.DataFrame, finals: pd.DataFrame, *, chance: float | None = None,
                       dpi: int = DPI) -> Figure:
    """Mean test error (%) against batch size, one line per norm (``gid`` = the norm) with its 95%
    interval as error bars, every seed's error as a dot beside it, and BN's error in ``train()``
    mode dashed (``gid`` ``"BatchNorm, train() mode"``).

    Args:
        table: :func:`helpers.experiments.norm_family_cnn.error_table`'s rows (``norm``, ``batch_size``,
            ``error``, ``error_low``, ``error_high``, ``train_mode_error``; errors as fractions).
        finals: :func:`helpers.experiments.norm_family_cnn.final_errors`'s rows (one per run: ``norm``,
            ``batch_size``, ``error``), for the dots.
        chance: the error of a guess, drawn dotted, if given.
    """
    fig, ax = plt.subplots(figsize=(7.2, 3.9), dpi=dpi)
    norms = list(dict.fromkeys(table["norm"]))
    sizes = sorted(table["batch_size"].unique())
    step = 0.06  # the norms side by side around each batch size, on the log axis
    for k, norm in enumerate(norms):
        rows = table[table["norm"] == norm].sort_values("batch_size")
        shift = 2.0 ** ((k - (len(norms) - 1) / 2) * step)
        x = rows["batch_size"].to_numpy(float) * shift
        y = 100 * rows["error"].to_numpy(float)
        err = 100 * np.abs(rows[["error_low", "error_high"]].to_numpy(float).T - rows["error"].to_numpy(float))
        colour = NORM_COLOURS.get(norm, "C7")
        ax.errorbar(x, y, yerr=err, fmt="o-", color=colour, capsize=3, lw=1.6, ms=5, label=norm, gid=norm)
        dots = finals[finals["norm"] == norm]
        ax.scatter(dots["batch_size"].to_numpy(float) * shift * 2 ** (step / 3), 100 * dots["error"].to_numpy(float),
                   s=7, color=colour, alpha=0.35, lw=0)
        if norm == "BatchNorm" and rows["train_mode_error"].notna().any():
            ax.plot(x, 100 * rows["train_mode_error"].to_numpy(float), ls="--", color=colour, lw=1.0,
                    gid="BatchNorm, train() mode", label="BatchNorm, train() mode (batch statistics)")
    if chance is not None:
        ax.axhline(100 * chance, color="k", ls=":", lw=1, gid="chance", label=f"chance ({chance:.0%})")
    ax.set_xscale("log", base=2)
    ax.set_xticks(sizes, [str(b) for b in sizes])
    ax.set_xlabel("batch size (every batch size sees the same samples; rate scaled with the batch)")
    ax.set_ylabel("test error (%)")
    ax.set_title("mean over seeds with its 95% interval; dots: single seeds; eval() mode", fontsize=9)
    ax.grid(alpha=0.3)
    ax.legend(fontsize="x-small", loc="best")
    fig.tight_layout()
    return fig


def class_examples_figure(examples: pd.DataFrame, *, dpi: int = DPI) -> Figure:
    """One panel per row of ``examples`` (:func:`helpers.experiments.norm_family_cnn.example_images`: ``name``
    and a 2-D ``image``), in grey, with the class name as title."""
    fig, axes = plt.subplots(1, len(examples), figsize=(1.55 * len(examples), 1.9), dpi=dpi, squeeze=False)
    for ax, (_, row) in zip(axes[0], examples.iterrows(), strict=True):
        ax.imshow(row["image"], cmap="gray")
        ax.set_title(row["name"], fontsize=8)
        ax.set_xticks([])
        ax.set_yticks([])
    fig.tight_layout()
    return fig
