"""Figures: builders that take plain data (tensors, dicts, DataFrames) and return a Figure.

A builder never calls ``plt.show()``: a notebook cell or a widget callback shows the
figure, and tests read the artists' data (line ydata, axis limits, titles) instead of
pixels. Figures are small (``DPI`` dots per inch) so stored notebooks stay small.
"""

from __future__ import annotations

import matplotlib.pyplot as plt
import torch
from matplotlib.figure import Figure

__all__ = ["DPI", "OTHER", "HIGHLIGHT", "find_line", "shift_scale_figure"]

DPI = 80
HIGHLIGHT = "C0"  # the sample a widget moves
OTHER = "0.7"  # every other sample: light grey


def find_line(ax, gid: str):
    """The line on ``ax`` whose ``gid`` is ``gid`` (builders tag their lines this way)."""
    lines = [line for line in ax.get_lines() if line.get_gid() == gid]
    if len(lines) != 1:
        raise LookupError(f"find_line(): expected one line with gid {gid!r}, found {len(lines)}")
    return lines[0]


def _plot_samples(ax, values: torch.Tensor, before: torch.Tensor, sample: int) -> None:
    """One line per sample over the feature axis; ``sample`` highlighted over a wide pale band where it was."""
    features = range(values.shape[1])
    for i, row in enumerate(values.tolist()):
        if i != sample:
            ax.plot(features, row, color=OTHER, marker=".", lw=1, gid=f"sample {i}",
                    label="other samples" if i == (1 if sample == 0 else 0) else "_nolegend_")
    ax.plot(features, before[sample].tolist(), color=HIGHLIGHT, lw=6, alpha=0.25,
            solid_capstyle="round", gid=f"sample {sample} before", label=f"sample {sample} before")
    ax.plot(features, values[sample].tolist(), color=HIGHLIGHT, marker="o", lw=2,
            gid=f"sample {sample}", label=f"sample {sample} now")
    ax.set_xlabel("feature")
    ax.set_xticks(list(features))
    ax.grid(alpha=0.3)


def shift_scale_figure(state: dict, *, figsize: tuple[float, float] = (9, 3.2), dpi: int = DPI) -> Figure:
    """Inputs (left) and LayerNorm outputs (right) of a batch in which one sample was moved.

    Args:
        state: what :func:`helpers.widgets.shift_scale_state` returns: ``inputs``,
            ``outputs``, ``original_inputs``, ``original_outputs``, ``sample``, ``shift``,
            ``scale`` and ``input_ylim``.

    Returns:
        A Figure with two axes. Each has one line per sample (``gid`` ``"sample i"``) and,
        as a wide pale band, the moved sample's line before the move (``gid``
        ``"sample i before"``). The input
        axis follows the data (``state["input_ylim"]``); the output axis is fixed at
        (-3, 3), so that an output that does not move visibly does not move.
    """
    fig, (ax_in, ax_out) = plt.subplots(1, 2, figsize=figsize, dpi=dpi)
    s = state["sample"]
    _plot_samples(ax_in, state["inputs"], state["original_inputs"], s)
    ax_in.set_ylim(*state["input_ylim"])
    sign = "-" if state["shift"] < 0 else "+"
    ax_in.set_title(f"input: sample {s} becomes {state['scale']:g} · x {sign} {abs(state['shift']):g}")
    ax_in.set_ylabel("value")
    ax_in.legend(loc="upper left", fontsize="small")

    _plot_samples(ax_out, state["outputs"], state["original_outputs"], s)
    ax_out.set_ylim(-3, 3)
    ax_out.set_title("LayerNorm output (over each sample's features)")
    fig.tight_layout()
    return fig


# ------------------------------------------------ notebook 02: per token or per sentence

__all__ += ["dependency_figure", "norm_unit_figure"]

GROUP_EDGE = "black"  # the outline of a group that shares one mean and variance


def _annotated_heatmap(ax, values, *, cmap: str, vmin: float, vmax: float, fmt: str = "{:.2f}"):
    """``values`` (2-D) as an image with each cell's value written on it; returns the image."""
    data = torch.as_tensor(values, dtype=torch.float64)
    image = ax.imshow(data.numpy(), cmap=cmap, vmin=vmin, vmax=vmax, aspect="auto")
    for i, row in enumerate(data.tolist()):
        for j, v in enumerate(row):
            red, green, blue, _ = image.cmap(image.norm(v))
            dark = 0.299 * red + 0.587 * green + 0.114 * blue < 0.5  # perceived brightness
            ax.text(j, i, fmt.format(v), ha="center", va="center", fontsize=7,
                    color="white" if dark else "black")
    return image


def _outline_groups(ax, groups, n_cols: int) -> None:
    """One rectangle per group of rows ``(first_row, n_rows)``, around every column."""
    from matplotlib.patches import Rectangle

    for k, (first, n_rows) in enumerate(groups):
        ax.add_patch(Rectangle((-0.5, first - 0.5), n_cols, n_rows, fill=False,
                               edgecolor=GROUP_EDGE, lw=2.5, gid=f"group {k}"))


def norm_unit_figure(state: dict, *, figsize: tuple[float, float] = (9.5, 3.8), dpi: int = DPI) -> Figure:
    """Input (left) and LayerNorm output (right) of a ``(batch, seq_len, dim)`` batch, one row per token.

    Args:
        state: what :func:`helpers.widgets.norm_unit_state` returns.

    Returns:
        A Figure with two heatmaps (rows: ``s{sentence} t{token}``, columns: features), each
        value written in its cell. On both, a black rectangle (``gid`` ``"group k"``) outlines
        each group of values that shares one mean and variance. On the output, a marker (``gid``
        ``"changed r"``) flags each token row whose output moved when the chosen token was
        scaled. The output's colour scale is fixed at (-2.5, 2.5).
    """
    inputs, outputs = state["inputs"], state["outputs"]
    batch, seq_len, dim = inputs.shape
    rows_in, rows_out = inputs.reshape(-1, dim), outputs.reshape(-1, dim)
    labels = [f"s{b} t{t}" for b in range(batch) for t in range(seq_len)]
    fig, (ax_in, ax_out) = plt.subplots(1, 2, figsize=figsize, dpi=dpi)
    b, t = state["token"]
    _annotated_heatmap(ax_in, rows_in, cmap="viridis", vmin=min(0.0, rows_in.min().item()),
                       vmax=max(1.0, rows_in.max().item()))
    ax_in.set_title(f"input x {tuple(inputs.shape)}: token s{b} t{t} × {state['scale']:g}",
                    fontsize=10)
    _annotated_heatmap(ax_out, rows_out, cmap="coolwarm", vmin=-2.5, vmax=2.5)
    shape = tuple(state["normalized_shape"])
    ax_out.set_title(f"LayerNorm(normalized_shape={shape})", fontsize=10)
    for ax in (ax_in, ax_out):
        _outline_groups(ax, state["groups"], dim)
        ax.set_xticks(range(dim))
        ax.set_xlabel("feature")
        ax.set_yticks(range(len(labels)))
        ax.set_yticklabels(labels)
        ax.get_yticklabels()[b * seq_len + t].set_color(HIGHLIGHT)
    for row, moved in enumerate(state["changed"].flatten().tolist()):
        if moved:
            ax_out.text(dim - 0.35, row, "← moved", va="center", fontsize=8, color="C3",
                        gid=f"changed {row}")
    n_groups, count = len(state["groups"]), state["table"]["count"].iloc[0]
    groups = f"{n_groups} groups of {count} values, each" if n_groups > 1 else f"1 group of {count} values"
    fig.suptitle(f"reduced dims {state['reduced_dims']}: {groups} with its own mean and variance; "
                 f"γ and β have shape {shape}", fontsize=10)
    fig.tight_layout()
    return fig


def dependency_figure(matrices, *, figsize: tuple[float, float] | None = None, dpi: int = DPI) -> Figure:
    """One heatmap per dependency matrix (output position × input position), the future hatched.

    Args:
        matrices: ``title -> (seq_len, seq_len)`` tensor, e.g. from
            :func:`helpers.sequence.dependency_matrix`.

    Returns:
        A Figure with one axis per matrix: the matrix as an annotated heatmap, and a hatched
        square (``gid`` ``"future i j"``) on each cell above the diagonal, where output ``i``
        would depend on a later input ``j``. Each title gives the largest such dependency.
    """
    from matplotlib.patches import Rectangle

    from helpers.sequence import future_leak

    n = len(matrices)
    fig, axes = plt.subplots(1, n, figsize=figsize or (3.4 * n, 3.2), dpi=dpi, squeeze=False)
    vmax = max(m.max().item() for m in matrices.values())
    for ax, (title, m) in zip(axes[0], matrices.items(), strict=True):
        _annotated_heatmap(ax, m, cmap="Greys", vmin=0.0, vmax=vmax)
        size = m.shape[0]
        for i in range(size):
            for j in range(i + 1, size):
                ax.add_patch(Rectangle((j - 0.5, i - 0.5), 1, 1, fill=False, hatch="/",
                                       edgecolor=(0.84, 0.15, 0.16, 0.5), lw=0, gid=f"future {i} {j}"))
        ax.set_title(f"{title}\nlargest future dependency: {future_leak(m):.3g}", fontsize=10)
        ax.set_xlabel("input position j")
        ax.set_ylabel("output position i")
        ax.set_xticks(range(size))
        ax.set_yticks(range(size))
    fig.tight_layout()
    return fig


# ------------------------------------------------ notebook 01: the formula, eps, gamma and beta

__all__ += ["affine_figure", "drift_figure", "eps_figure", "gamma_beta_fit_figure"]

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
    ax_in.set_title(f"input token: mean {state['mean']:.4f}, var {state['var']:.2e}", fontsize=10)
    ax_in.ticklabel_format(axis="y", useOffset=False)
    ax_out.plot(features, state["limit"].tolist(), color=HIGHLIGHT, lw=6, alpha=0.25,
                solid_capstyle="round", gid="eps = 0", label="eps = 0 (mean 0, std 1)")
    ax_out.plot(features, state["output"].tolist(), color=HIGHLIGHT, marker="o", lw=2,
                gid="output", label=f"eps = {state['eps']:.0e}")
    ax_out.set_ylim(-2.5, 2.5)
    ax_out.set_title(f"LayerNorm, eps = {state['eps']:.0e}: output std {state['output_std']:.3f}",
                     fontsize=10)
    ax_out.legend(loc="upper left", fontsize="x-small")
    for ax in (ax_in, ax_out):
        ax.set_xlabel("feature")
        ax.set_xticks(features)
        ax.grid(alpha=0.3)
    fig.tight_layout()
    return fig


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
              gid="output", label=f"y = {state['gamma']:g}·x̂ {'-' if state['beta'] < 0 else '+'} "
                                  f"{abs(state['beta']):g}")
    mean, std = state["mean"], state["std"]
    ax.axvline(mean, color=HIGHLIGHT, lw=2, gid="mean")
    for sign, gid in ((-1, "mean - std"), (1, "mean + std")):
        ax.axvline(mean + sign * std, color=HIGHLIGHT, lw=1, ls="--", gid=gid)
    ax.set_xlim(edges[0], edges[-1])
    ax.set_xlabel("value")
    ax.set_ylabel("count")
    ax.set_title(f"γ = {state['gamma']:g}, β = {state['beta']:g}: "
                 f"output mean {mean:.3f}, std {std:.3f}", fontsize=10)
    ax.legend(loc="upper left", fontsize="x-small")
    fig.tight_layout()
    return fig


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
