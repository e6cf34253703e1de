"""Figures of the formula: drift without LN (deep dive 13) and the gamma/beta fit (deep dive 14)."""

from __future__ import annotations

import matplotlib.pyplot as plt
from matplotlib.figure import Figure

from helpers.plots.core import DPI

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
