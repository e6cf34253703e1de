"""Deep dive 12's figures: per-layer activation histograms and weight-gradient norms at
initialisation, and the stored runs. Their depth colours (:func:`layer_colours`) serve core
notebooks 00's and 02's dashboards too."""

from __future__ import annotations

import matplotlib.pyplot as plt
import numpy as np
from matplotlib.cm import ScalarMappable
from matplotlib.colors import BoundaryNorm, ListedColormap
from matplotlib.figure import Figure
from matplotlib.ticker import FuncFormatter, LogLocator, MaxNLocator, NullFormatter
from mpl_toolkits.axes_grid1 import make_axes_locatable

from helpers.plots.core import DPI, TITLE_Y, clear_curves, curves_figure, seed_curves

#: The sequential colormap over depth: layer 1 dark, the last layer light (viridis without its
#: palest yellow, which is hard to see on white).
DEPTH_CMAP = ListedColormap(plt.get_cmap("viridis")(np.linspace(0.0, 0.9, 256)), name="depth")
# the histogram's x label per activation
_XLABEL = {"tanh": "tanh output", "relu": "ReLU output (values above 4 counted at 4)",
           "gelu": "GELU output (values above 4 counted at 4)"}


def layer_colours(depth: int) -> list:
    """The colour of each layer ``1 .. depth``, from :data:`DEPTH_CMAP` (first layer dark, last light)."""
    return [DEPTH_CMAP(i / max(depth - 1, 1)) for i in range(depth)]


def layer_histograms_figure(state: dict) -> Figure:
    """Left: one histogram line per layer (gid ``"layer N"``), coloured by depth, with a colourbar
    naming the layers; right: the weight-gradient norm per layer on a log axis (gid ``"grad_norm"``).

    ``state`` is :func:`helpers.lessons.placement.placement_state`'s dict (or one with the same keys). The
    axes are, in order: histograms, gradient norms, colourbar.
    """
    fig, (left, right) = plt.subplots(1, 2, figsize=(10, 3.3), dpi=DPI, gridspec_kw={"width_ratios": [2, 1]})
    make_axes_locatable(left).append_axes("right", size="3%", pad=0.08)  # the colourbar's, filled by the update
    left.set_ylabel("fraction of values")
    right.plot([], [], "o-", color="0.3", gid="grad_norm")
    right.set_yscale("log")
    # plain numbers at 1, 2, 5 x 10^k: fewer, cheaper labels than the default mathtext ones
    right.yaxis.set_major_locator(LogLocator(subs=(1.0, 2.0, 5.0)))
    right.yaxis.set_major_formatter(FuncFormatter(lambda v, _: f"{v:g}"))
    right.yaxis.set_minor_formatter(NullFormatter())
    right.xaxis.set_major_locator(MaxNLocator(6, integer=True, steps=[1, 2, 4, 5, 10]))
    left.xaxis.set_major_locator(MaxNLocator(6, steps=[1, 2, 5, 10]))
    right.set_xlabel("layer (input -> output)")
    right.set_ylabel("weight-gradient norm (log scale)")
    right.set_title("gradient norm of each layer's weights", fontsize=9, y=TITLE_Y)
    update_layer_histograms_figure(fig, state)
    fig.tight_layout()
    return fig


def update_layer_histograms_figure(fig: Figure, state: dict) -> None:
    """Show ``state`` (any activation and depth) on a figure from :func:`layer_histograms_figure`:
    one line per layer over the activation's bins (re-made when the depth changes, with the
    colourbar), the x range and label, the gradient norms, the title."""
    from helpers.lessons.placement import BINS

    left, right, cax = fig.axes
    depth = len(state["hist"])
    edges = BINS[state["activation"]]
    centres = ((edges[1:] + edges[:-1]) / 2).numpy().astype(float)
    hists = np.asarray(state["hist"].tolist(), dtype=float)
    if len(left.get_lines()) == depth:  # same depth: same lines and colours; new bins and heights
        for line, h in zip(left.get_lines(), hists, strict=True):
            line.set_data(centres, h)
    else:
        for line in list(left.get_lines()):
            line.remove()
        for i, (h, colour) in enumerate(zip(hists, layer_colours(depth), strict=True)):
            left.plot(centres, h, color=colour, lw=1.2, gid=f"layer {i + 1}", label=f"{i + 1}")
        cax.clear()
        colours = ListedColormap(layer_colours(depth))
        norm = BoundaryNorm(np.arange(0.5, depth + 1.5), depth)
        ticks = [1, depth] if depth <= 4 else [1, (depth + 1) // 2, depth]
        bar = fig.colorbar(ScalarMappable(norm, colours), cax=cax, ticks=ticks)
        bar.set_label("layer (1 = input side)", fontsize=8)
        bar.ax.tick_params(labelsize=8)
    left.set_xlim(float(edges[0]), float(edges[-1]))
    left.set_ylim(0.0, 1.05 * float(hists.max()))
    left.set_xlabel(_XLABEL[state["activation"]])
    left.set_title("activations of each layer on a probe batch", fontsize=9, y=TITLE_Y)
    fig.suptitle(state["readout"].replace("; ", "\n"), fontsize=9)
    grad = np.asarray(state["grad_norm"], dtype=float)
    right.get_lines()[0].set_data(np.arange(1, depth + 1), grad)
    right.set_xlim(0.5, depth + 0.5)
    right.set_ylim(*_log_range(grad))


def layer_histograms_changing(fig: Figure) -> list:
    """The artists :func:`update_layer_histograms_figure` changes without moving anything else: both
    y axes (their limits follow the data), the lines and the suptitle; and the two axes' spines,
    which a full draw puts over the lines. (A new activation or depth moves the x limits, the label
    and the colourbar: a dashboard redraws the whole figure then.)"""
    left, right, _ = fig.axes
    return [left.yaxis, right.yaxis, *left.get_lines(), *right.get_lines(), *left.spines.values(),
            *right.spines.values(), fig._suptitle]


def _log_range(values: np.ndarray) -> tuple[float, float]:
    """y limits for positive ``values`` on a log axis: a margin either side, and at least one decade,
    so that a few percent between layers is not drawn as a steep profile."""
    positive = values[values > 0]
    if len(positive) == 0:
        return 1e-3, 1.0
    lo, hi = float(positive.min()) / 1.3, float(positive.max()) * 1.3
    if hi / lo < 10:
        middle = np.sqrt(lo * hi)
        lo, hi = middle / np.sqrt(10), middle * np.sqrt(10)
    return lo, hi


def stored_runs_figure(state: dict, *, figsize: tuple[float, float] = (7, 3.4), dpi: int = DPI) -> Figure:
    """:func:`helpers.experiments.placement_tuned.stored_runs_state` drawn: one thin line per seed, the median
    in bold (``gid`` = the arrangement), the learned-nothing level dotted, log loss axis."""
    return curves_figure(update_stored_runs_figure, state, figsize=figsize, dpi=dpi)


def update_stored_runs_figure(fig: Figure, state: dict) -> None:
    """Draw ``state`` on a figure from :func:`stored_runs_figure`, in place of what it showed."""
    from helpers.plots.training_speed import ARM_COLOURS

    ax = fig.axes[0]
    clear_curves(ax)
    ax.set_ylabel("mean squared error (evaluation sample)")
    ax.set_yscale("log")
    curves = state["curves"]
    for arr, runs in curves.groupby("arrangement", sort=False):
        seed_curves(ax, runs, "eval_loss", colour=ARM_COLOURS.get(arr, "C7"), label=arr)
    ax.axhline(1.0, color="k", ls=":", lw=0.8, gid="nothing", label="learned nothing")
    if curves.empty:  # fixed axes, so that an updated figure and a fresh one agree
        ax.set_xlim(0, 1)
        ax.set_ylim(0.1, 10)
        ax.text(0.5, 0.5, "nothing to show for this choice", ha="center", va="center", transform=ax.transAxes)
    else:
        ax.autoscale(True)
        ax.autoscale_view()
    rate = "each arrangement at its tuned rate" if state["rate"] == "tuned" else f"rate {state['rate']:g}"
    title = f"{state['activation']}, {rate}"
    if state["notes"]:
        title += " (" + "; ".join(state["notes"]) + ")"
    ax.set_title(title, fontsize=9, y=TITLE_Y)
    ax.legend(fontsize="x-small", loc="upper right")
