"""Notebook 01's figures: drift without LN, eps, gamma and beta."""

from __future__ import annotations

import matplotlib.pyplot as plt
import numpy as np
from matplotlib.figure import Figure

from helpers.plots.core import DPI, HIGHLIGHT, OTHER, find_line

__all__ = ["affine_figure", "drift_figure", "eps_figure", "gamma_beta_fit_figure", "update_affine_figure",
           "update_eps_figure"]


BAND = {"p05-p95": 0.2, "p25-p75": 0.45}  # the percentile bands of drift_figure, and their alpha


def drift_figure(frame, *, figsize: tuple[float, float] = (10, 3), dpi: int = DPI) -> Figure:
    """Per step, the distribution of what enters one hidden activation, for each model.

    Args:
        frame: what :func:`helpers.experiments.drift_runs` returns (columns ``model``,
            ``step``, ``std``, ``p05`` ... ``p95``).

    Returns:
        A Figure with one axis per model (in the frame's order, sharing the y-axis): the
        5-95 and 25-75 percentile bands (``gid`` ``"p05-p95"``, ``"p25-p75"``) and the
        median (a line, ``gid`` ``"p50"``) against the step, titled with the std at the
        first and last step, all on the same y-range (the finite percentiles'); and a last axis with each model's std divided by its std at
        step 0 (one line per model, ``gid`` the model's name), with a dotted line at 1.
    """
    models = list(dict.fromkeys(frame["model"]))
    fig, axes = plt.subplots(1, len(models) + 1, figsize=figsize, dpi=dpi)
    for k, (ax, model) in enumerate(zip(axes, models, strict=False)):
        run = frame[frame["model"] == model].sort_values("step")
        steps = run["step"].tolist()
        for band, alpha in BAND.items():
            low, high = band.split("-")
            ax.fill_between(steps, run[low].tolist(), run[high].tolist(), color=f"C{k}",
                            alpha=alpha, lw=0, gid=band, label=f"{low}–{high}")
        ax.plot(steps, run["p50"].tolist(), color=f"C{k}", lw=1.5, gid="p50", label="median")
        ax.set_title(f"{model}: std {run['std'].iloc[0]:.2f} → {run['std'].iloc[-1]:.2f}",
                     fontsize=10)
        ax.set_xlabel("training step")
        ax.grid(alpha=0.3)
        ax.legend(loc="lower left", fontsize="x-small")
    axes[0].set_ylabel("value entering the activation")
    finite = frame[["p05", "p95"]].replace([float("inf"), float("-inf")], float("nan"))
    low, high = finite["p05"].min(), finite["p95"].max()
    if low == low and high == high:  # the same y-range on every model's axis (not NaN)
        pad = 0.05 * (high - low)
        for ax in axes[:-1]:
            ax.set_ylim(low - pad, high + pad)
    ratio_ax = axes[-1]
    for k, model in enumerate(models):
        run = frame[frame["model"] == model].sort_values("step")
        ratio_ax.plot(run["step"].tolist(), (run["std"] / run["std"].iloc[0]).tolist(),
                      color=f"C{k}", lw=1.5, gid=model, label=model)
    ratio_ax.axhline(1.0, color="0.5", ls=":", lw=1)
    ratio_ax.set_title("std / std at step 0", fontsize=10)
    ratio_ax.set_xlabel("training step")
    ratio_ax.grid(alpha=0.3)
    ratio_ax.legend(fontsize="x-small")
    fig.tight_layout()
    return fig


def eps_figure(state: dict, *, figsize: tuple[float, float] = (9, 3), dpi: int = DPI) -> Figure:
    """One near-constant token before (left) and after (right) LayerNorm with a given eps.

    Args:
        state: what :func:`helpers.widgets.eps_state` returns.

    Returns:
        A Figure with two axes. Left: the token's features (``gid`` ``"input"``), its mean
        dotted. Right, on a fixed (-2.5, 2.5) axis: LayerNorm's output with ``state["eps"]``
        (``gid`` ``"output"``) over a wide pale band, the output with eps = 0 (``gid``
        ``"eps = 0"``: the token exactly standardised); the title gives eps and the
        output's std.
    """
    fig, (ax_in, ax_out) = plt.subplots(1, 2, figsize=figsize, dpi=dpi)
    features = list(range(state["input"].shape[-1]))
    ax_in.plot(features, state["input"].tolist(), color=HIGHLIGHT, marker="o", lw=1.5, gid="input")
    ax_in.axhline(state["mean"], color="0.5", ls=":", lw=1, gid="mean")
    ax_in.ticklabel_format(axis="y", useOffset=False)
    ax_out.plot(features, state["limit"].tolist(), color=HIGHLIGHT, lw=6, alpha=0.25,
                solid_capstyle="round", gid="eps = 0", label="eps = 0 (mean 0, std 1)")
    ax_out.plot(features, state["output"].tolist(), color=HIGHLIGHT, marker="o", lw=2,
                gid="output", label=f"eps = {state['eps']:.0e}")
    ax_out.set_ylim(-2.5, 2.5)
    ax_out.legend(loc="upper left", fontsize="x-small")
    for ax in (ax_in, ax_out):
        ax.set_xlabel("feature")
        ax.set_xticks(features)
        ax.grid(alpha=0.3)
    update_eps_figure(fig, state)
    fig.tight_layout()
    return fig


def update_eps_figure(fig: Figure, state: dict) -> None:
    """Show ``state`` on a figure from :func:`eps_figure` (a token of the same length)."""
    ax_in, ax_out = fig.axes
    find_line(ax_in, "input").set_ydata(np.asarray(state["input"].tolist(), dtype=float))
    find_line(ax_in, "mean").set_ydata(np.asarray([state["mean"]] * 2, dtype=float))
    ax_in.set_title(f"input token: mean {state['mean']:.4f}, var {state['var']:.2e}", fontsize=10)
    find_line(ax_out, "eps = 0").set_ydata(np.asarray(state["limit"].tolist(), dtype=float))
    output = find_line(ax_out, "output")
    output.set_ydata(np.asarray(state["output"].tolist(), dtype=float))
    output.set_label(f"eps = {state['eps']:.0e}")
    ax_out.get_legend().get_texts()[1].set_text(output.get_label())
    ax_out.set_title(f"LayerNorm, eps = {state['eps']:.0e}: output std {state['output_std']:.3f}",
                     fontsize=10)


def affine_figure(state: dict, *, figsize: tuple[float, float] = (7, 3), dpi: int = DPI) -> Figure:
    """Histograms of the normalised values and of ``gamma * x_hat + beta``, on a fixed axis.

    Args:
        state: what :func:`helpers.widgets.affine_state` returns (``edges``,
            ``normalised_counts``, ``output_counts``, ``mean``, ``std``, ``gamma``, ``beta``).

    Returns:
        A Figure with one axis: two step histograms over ``state["edges"]`` (``gid``
        ``"normalised"``, grey, and ``"output"``, blue), a vertical line at the output's
        mean (``gid`` ``"mean"``) and two at mean ± std (``gid`` ``"mean - std"`` and
        ``"mean + std"``). The x-axis is the edges' range whatever the sliders say.
    """
    fig, ax = plt.subplots(figsize=figsize, dpi=dpi)
    edges = state["edges"].tolist()
    ax.stairs(state["normalised_counts"].tolist(), edges, fill=True, color=OTHER, alpha=0.6,
              gid="normalised", label="x̂: normalised (mean 0, std 1)")
    ax.stairs(state["output_counts"].tolist(), edges, fill=True, color=HIGHLIGHT, alpha=0.5,
              gid="output", label=_affine_label(state))
    ax.axvline(state["mean"], color=HIGHLIGHT, lw=2, gid="mean")
    for gid in ("mean - std", "mean + std"):
        ax.axvline(state["mean"], color=HIGHLIGHT, lw=1, ls="--", gid=gid)
    ax.set_xlim(edges[0], edges[-1])
    ax.set_xlabel("value")
    ax.set_ylabel("count")
    ax.legend(loc="upper left", fontsize="x-small")
    update_affine_figure(fig, state)
    fig.tight_layout()
    return fig


def _affine_label(state: dict) -> str:
    return f"y = {state['gamma']:g}·x̂ {'-' if state['beta'] < 0 else '+'} {abs(state['beta']):g}"


def update_affine_figure(fig: Figure, state: dict) -> None:
    """Show ``state`` on a figure from :func:`affine_figure` (same edges): counts, lines, y-range, title."""
    ax = fig.axes[0]
    patches = {p.get_gid(): p for p in ax.patches}
    edges = state["edges"].tolist()
    patches["normalised"].set_data(state["normalised_counts"].tolist(), edges)
    patches["output"].set_data(state["output_counts"].tolist(), edges)
    patches["output"].set_label(_affine_label(state))
    ax.get_legend().get_texts()[1].set_text(_affine_label(state))
    mean, std = state["mean"], state["std"]
    for gid, x in (("mean", mean), ("mean - std", mean - std), ("mean + std", mean + std)):
        find_line(ax, gid).set_xdata(np.asarray([x, x], dtype=float))
    top = max(state["normalised_counts"].max().item(), state["output_counts"].max().item())
    ax.set_ylim(0, 1.05 * top)  # what autoscaling gives a histogram: 5% over its tallest bin
    ax.set_title(f"γ = {state['gamma']:g}, β = {state['beta']:g}: "
                 f"output mean {mean:.3f}, std {std:.3f}", fontsize=10)


def gamma_beta_fit_figure(frame, *, targets: dict | None = None,
                          figsize: tuple[float, float] = (9, 3), dpi: int = DPI) -> Figure:
    """gamma and beta (every feature) and the loss against the step, of a fit_gamma_beta run.

    Args:
        frame: what :func:`helpers.experiments.fit_gamma_beta` returns.
        targets: optional ``{"gamma": value, "beta": value}``, drawn dashed.

    Returns:
        A Figure with two axes. Left: one line per parameter and feature (``gid``
        ``"gamma[j]"``, ``"beta[j]"``) and the targets (``gid`` ``"gamma target"``,
        ``"beta target"``). Right: the loss per step on a log scale (``gid`` ``"loss"``).
    """
    fig, (ax_p, ax_loss) = plt.subplots(1, 2, figsize=figsize, dpi=dpi)
    for k, name in enumerate(("gamma", "beta")):
        for j, run in frame.groupby("feature"):
            run = run.sort_values("step")
            ax_p.plot(run["step"].tolist(), run[name].tolist(), color=f"C{k}", lw=1.2,
                      alpha=0.8, gid=f"{name}[{j}]", label=name if j == 0 else "_nolegend_")
        if targets and name in targets:
            ax_p.axhline(targets[name], color=f"C{k}", ls="--", lw=1, gid=f"{name} target",
                         label=f"{name} target {targets[name]:g}")
    ax_p.set_xlabel("SGD step")
    ax_p.set_title("LayerNorm's gamma and beta, every feature", fontsize=10)
    ax_p.legend(fontsize="x-small")
    ax_p.grid(alpha=0.3)
    loss = frame.groupby("step")["loss"].first()
    ax_loss.plot(loss.index.tolist(), loss.tolist(), color="C3", gid="loss")
    ax_loss.set_yscale("log")
    ax_loss.set_xlabel("SGD step")
    ax_loss.set_title("loss (MSE to the un-normalised input)", fontsize=10)
    ax_loss.grid(alpha=0.3)
    fig.tight_layout()
    return fig
