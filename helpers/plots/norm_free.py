"""Deep dive 15's figures on normalization-free Transformers: the stored training curves of LN,
RMSNorm, DyT and no norm, and LN's input-to-output maps with their line and tanh fits."""

from __future__ import annotations

import matplotlib.pyplot as plt
import numpy as np
import pandas as pd
from matplotlib.figure import Figure

from helpers.plots.core import DPI, seed_curves

#: One colour per arm of the norm-free comparison.
NORM_FREE_COLOURS = {"Pre-LN": "C0", "Pre-RMSNorm": "C2", "no norm": "0.35", "DyT, alpha0 0.1": "C1",
                     "DyT, alpha0 0.5": "C3", "DyT, alpha0 2": "C4"}


def norm_free_curves_figure(frame: pd.DataFrame, panels: dict[str, list[str]], *, levels: dict[str, float],
                            dpi: int = DPI) -> Figure:
    """The reported runs of ``small_transformer`` (each arm at its tuned rate): held-out loss
    against step, one thin line per seed and the median in bold, one panel per entry of
    ``panels`` (title -> arms), with the task's ``levels`` (name -> loss) as dashed lines.

    Args:
        frame: the stored table (``runner.load("small_transformer").frame``).
        panels: ``{title: [arm, ...]}``, arms as named in :data:`helpers.experiments.small_transformer.ARMS`.
        levels: e.g. ``{"no copy": NO_COPY, "threshold": THRESHOLD, "floor": FLOOR}``.
    """
    report = frame[(frame["stage"] == "report") & frame["eval_loss"].notna()]
    fig, axes = plt.subplots(1, len(panels), figsize=(4.2 * len(panels), 3.3), dpi=dpi, sharey=True, squeeze=False)
    for ax, (title, arms) in zip(axes[0], panels.items(), strict=True):
        for arm in arms:
            runs = report[report["variant"] == arm]
            finite = runs[np.isfinite(runs["eval_loss"])]
            seed_curves(ax, finite, "eval_loss", colour=NORM_FREE_COLOURS.get(arm, "C7"),
                        label=f"{arm}, lr {runs['lr'].iloc[0]:g}")
        for (name, level), style in zip(levels.items(), ("--", ":", "-."), strict=False):
            ax.axhline(level, color="k", ls=style, lw=0.8, gid=name, label=f"{name} {level:.3f}")
        ax.set_title(title, fontsize=10)
        ax.set_xlabel("training step")
        ax.grid(alpha=0.3)
        ax.legend(fontsize=7, loc="upper right")
    axes[0, 0].set_ylabel("held-out loss (nats per token)")
    fig.tight_layout()
    return fig


def s_shape_figure(frame: pd.DataFrame, layers: list[str], *, seed: int = 0, dpi: int = DPI) -> Figure:
    """LN's input (x axis) against its normalized output (y axis), before the gain and bias: the
    stored sample of points of model ``seed`` for each of ``layers`` (columns), at initialisation
    and after training (rows), with that model's fitted line (dashed) and tanh (solid), their R²
    in the title.

    Args:
        frame: the stored table of ``ln_input_output`` (``runner.load("ln_input_output").frame``).
        layers: LN names, as :func:`helpers.experiments.ln_input_output.layer_names` gives them.
        seed: a seed whose points were stored.
    """
    points, fits = frame[frame["kind"] == "point"], frame[frame["kind"] == "fit"]
    moments = ("init", "trained")
    fig, axes = plt.subplots(len(moments), len(layers), figsize=(2.7 * len(layers), 5.0), dpi=dpi, squeeze=False)
    for i, moment in enumerate(moments):
        for j, layer in enumerate(layers):
            ax = axes[i, j]
            pts = points[(points["seed"] == seed) & (points["moment"] == moment) & (points["layer"] == layer)]
            fit = fits[(fits["seed"] == seed) & (fits["moment"] == moment) & (fits["layer"] == layer)]
            fit = fit.iloc[0]
            x = pts["x"].to_numpy(float)
            ax.scatter(x, pts["y"].to_numpy(float), s=4, alpha=0.35, color="C0", lw=0, gid="points")
            grid = np.linspace(x.min(), x.max(), 200)
            ax.plot(grid, fit["a"] * np.tanh(fit["b"] * grid + fit["d"]) + fit["c"], color="C3", lw=1.6,
                    gid="tanh", label="tanh fit")
            ax.plot(grid, fit["slope"] * grid + fit["intercept"], color="k", ls="--", lw=1.0, gid="line", label="line")
            ax.set_title(f"{layer}, {moment}\nR² line {fit['r2_linear']:.2f}, tanh {fit['r2_tanh']:.2f}", fontsize=8)
            ax.grid(alpha=0.3)
            if i == len(moments) - 1:
                ax.set_xlabel("LN input x")
            if j == 0:
                ax.set_ylabel("LN output (before gain, bias)")
    axes[0, 0].legend(fontsize=7, loc="upper left")
    fig.tight_layout()
    return fig
