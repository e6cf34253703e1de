"""Figures of the formula: drift without LN (deep dive 13), the gamma/beta fit (deep dive 14), and
the eps and gamma/beta dashboards' figures (no notebook shows those dashboards now)."""

from __future__ import annotations

import matplotlib.pyplot as plt
import numpy as np
from matplotlib.figure import Figure

from helpers.plots.core import DPI, HIGHLIGHT, OTHER, find_line

__all__ = ["AFFINE_YLIM", "DRIFT_PANELS", "affine_figure", "drift_figure", "eps_figure", "gamma_beta_fit_figure", "update_affine_figure",
           "update_eps_figure"]


BAND = {"p05-p95": 0.2, "p25-p75": 0.45}  # the percentile bands of drift_figure, and their alpha


#: The titles of :func:`drift_figure`'s distribution panels, by (model, site).
DRIFT_PANELS = {("no norm", "Linear output"): "no norm: Linear output (enters the ReLU)",
                ("LayerNorm", "Linear output"): "LayerNorm net: Linear output (enters LN)",
                ("LayerNorm", "LayerNorm output"): "LayerNorm net: LN output (enters the ReLU)"}


def drift_figure(frame, *, figsize: tuple[float, float] = (12, 6.4), dpi: int = DPI) -> Figure:
    """Per step, the distributions recorded in one hidden block, the runs' spread, loss and token means.

    Args:
        frame: what :func:`helpers.experiments.drift.drift_runs` returns for one seed (columns
            ``model``, ``site``, ``step``, ``loss``, ``loss_of_mean``, ``std``, ``p05`` ... ``p95``,
            ``token_mean_absmax``).

    Returns:
        A Figure with two rows of three axes, every x-axis the training step on a symlog scale
        (linear to step 10, so the first steps show). Top: one axis per (model, site) of
        :data:`DRIFT_PANELS` present, sharing one y-range (the finite percentiles'): the 5-95 and
        25-75 percentile bands (``gid`` ``"p05-p95"``, ``"p25-p75"``) and the median (a line,
        ``gid`` ``"p50"``), titled with the panel's name and the std at the first and last step.
        Bottom: each run's std divided by its std at step 0 (one line per panel, ``gid`` the
        panel's title), a dotted line at 1; the probe loss of each model (``gid`` the model)
        on a log scale, with the level of always answering the probe targets' mean dashed
        (``gid`` ``"loss of the mean"``, the same for both models of a seed); and each run's largest token ``|mean|`` (``gid`` the panel's
        title).
    """
    panels = [(key, title) for key, title in DRIFT_PANELS.items()
              if ((frame["model"] == key[0]) & (frame["site"] == key[1])).any()]
    fig, axes = plt.subplots(2, 3, figsize=figsize, dpi=dpi)
    top, (ratio_ax, loss_ax, token_ax) = axes
    runs = {key: frame[(frame["model"] == key[0]) & (frame["site"] == key[1])].sort_values("step")
            for key, _ in panels}
    for k, (ax, (key, title)) in enumerate(zip(top, panels, strict=False)):
        run = runs[key]
        steps = run["step"].tolist()
        for band, alpha in BAND.items():
            low, high = band.split("-")
            ax.fill_between(steps, run[low].tolist(), run[high].tolist(), color=f"C{k}",
                            alpha=alpha, lw=0, gid=band, label=f"{low}–{high}")
        ax.plot(steps, run["p50"].tolist(), color=f"C{k}", lw=1.5, gid="p50", label="median")
        ax.set_title(f"{title}\nstd {run['std'].iloc[0]:.2f} → {run['std'].iloc[-1]:.2f}", fontsize=9)
        ax.legend(loc="lower left", fontsize="x-small")
    top[0].set_ylabel("recorded value")
    finite = frame[["p05", "p95"]].replace([float("inf"), float("-inf")], float("nan"))
    low, high = finite["p05"].min(), finite["p95"].max()
    if low == low and high == high:  # the same y-range on every distribution axis (not NaN)
        pad = 0.05 * (high - low)
        for ax in top[:len(panels)]:
            ax.set_ylim(low - pad, high + pad)
    for ax in top[len(panels):]:
        ax.set_visible(False)
    for k, (key, title) in enumerate(panels):
        run = runs[key]
        ratio_ax.plot(run["step"].tolist(), (run["std"] / run["std"].iloc[0]).tolist(),
                      color=f"C{k}", lw=1.5, gid=title, label=title)
        token_ax.plot(run["step"].tolist(), run["token_mean_absmax"].tolist(), color=f"C{k}", lw=1.5,
                      gid=title, label=title)
    ratio_ax.axhline(1.0, color="0.5", ls=":", lw=1)
    ratio_ax.set_title("std / std at step 0", fontsize=9)
    token_ax.set_title("largest token |mean|", fontsize=9)
    for k, model in enumerate(dict.fromkeys(frame["model"])):
        run = frame[frame["model"] == model].drop_duplicates("step").sort_values("step")
        loss_ax.plot(run["step"].tolist(), run["loss"].tolist(), color=f"C{2 * k}", lw=1.5, gid=model, label=model)
    # the same seed gives both models the same probe batch, so one level serves both
    loss_ax.axhline(frame["loss_of_mean"].iloc[0], color="0.3", ls="--", lw=1, gid="loss of the mean",
                    label="answering the mean")
    loss_ax.set_yscale("log")
    loss_ax.set_title("probe loss (MSE)", fontsize=9)
    for ax in [*top, ratio_ax, loss_ax, token_ax]:
        ax.set_xscale("symlog", linthresh=10)
        ax.set_xlim(0, frame["step"].max())
        ax.set_xlabel("training step (linear to 10, then log)")
        ax.grid(alpha=0.3)
    for ax in (ratio_ax, loss_ax, token_ax):
        ax.legend(fontsize=6)
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


#: How far left (x̂) and right (y) of its feature each dot column of :func:`affine_figure` sits.
AFFINE_OFFSET = 0.2

#: The value range of :func:`affine_figure` (fixed, so the axis never moves when a slider does).
AFFINE_YLIM = (-12.0, 12.0)


def _affine_offsets(values, offset: float):
    """``(n_tokens * dim, 2)`` points: feature index + offset, value (token-major)."""
    n, dim = values.shape
    xs = np.tile(np.arange(dim, dtype=float), n) + offset
    return np.column_stack([xs, values.detach().double().numpy().reshape(-1)])


def affine_figure(state: dict, *, figsize: tuple[float, float] = (8, 3.2), dpi: int = DPI) -> Figure:
    """Every token's x̂ and y = gamma * x̂ + beta, feature by feature, on a fixed axis.

    Args:
        state: what :func:`helpers.widgets.affine_state` returns (``normalised``, ``output``,
            ``feature``, ``gamma``, ``beta``).

    Returns:
        A Figure with one axis, features on the x-axis: grey dots (``gid`` ``"normalised"``),
        each token's x̂ at each feature, just left of it; blue dots (``gid`` ``"output"``), its
        y, just right; token 0's y across the features as a line (``gid`` ``"token 0"``); a pale
        band over the chosen feature (``gid`` ``"feature"``). The y-range is
        :data:`AFFINE_YLIM` whatever the sliders say.
    """
    fig, ax = plt.subplots(figsize=figsize, dpi=dpi)
    dim = state["normalised"].shape[1]
    ax.axvspan(state["feature"] - 0.45, state["feature"] + 0.45, color=HIGHLIGHT, alpha=0.12, lw=0,
               gid="feature")
    ax.scatter(*_affine_offsets(state["normalised"], -AFFINE_OFFSET).T, s=4, color=OTHER, alpha=0.7,
               gid="normalised", label="x̂: standardised (each token: mean 0, std 1)")
    ax.scatter(*_affine_offsets(state["output"], AFFINE_OFFSET).T, s=4, color=HIGHLIGHT, alpha=0.7,
               gid="output", label="y = γ·x̂ + β")
    ax.plot(np.arange(dim) + AFFINE_OFFSET, state["output"][0].tolist(), color="k", lw=0.8, gid="token 0",
            label="token 0's y")
    ax.set_xticks(range(dim))
    ax.set_xlim(-0.6, dim - 0.4)
    ax.set_ylim(*AFFINE_YLIM)
    ax.set_xlabel("feature")
    ax.set_ylabel("value")
    ax.grid(alpha=0.3, axis="y")
    ax.legend(loc="lower left", fontsize="x-small", ncols=3)
    update_affine_figure(fig, state)
    fig.tight_layout()
    return fig


def update_affine_figure(fig: Figure, state: dict) -> None:
    """Show ``state`` on a figure from :func:`affine_figure` (same tokens): dots, token 0, band, title."""
    ax = fig.axes[0]
    dots = {c.get_gid(): c for c in ax.collections}
    dots["normalised"].set_offsets(_affine_offsets(state["normalised"], -AFFINE_OFFSET))
    dots["output"].set_offsets(_affine_offsets(state["output"], AFFINE_OFFSET))
    find_line(ax, "token 0").set_ydata(state["output"][0].tolist())
    (band,) = [p for p in ax.patches if p.get_gid() == "feature"]
    band.set_x(state["feature"] - 0.45)
    ax.set_title(f"feature {state['feature']}: γ = {state['gamma']:g}, β = {state['beta']:g} for every token; "
                 f"every other feature: γ = 1, β = 0", fontsize=10)


def gamma_beta_fit_figure(frame, *, targets: dict | None = None,
                          figsize: tuple[float, float] = (9, 3), dpi: int = DPI) -> Figure:
    """gamma and beta (every feature) and the loss against the step, of a fit_gamma_beta run.

    Args:
        frame: what :func:`helpers.experiments.drift.fit_gamma_beta` returns.
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
