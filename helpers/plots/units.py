"""Which outputs depend on which inputs (deep dive 16), and groups that share statistics (the
figure of a per-token / per-sentence / per-batch dashboard that no notebook shows now)."""

from __future__ import annotations

import matplotlib.pyplot as plt
import torch
from matplotlib.figure import Figure

from helpers.plots.core import DPI, HIGHLIGHT

__all__ = ["dependency_figure", "norm_unit_figure", "update_norm_unit_figure"]


GROUP_EDGE = "black"  # the outline of a group that shares one mean and variance


def _annotated_heatmap(ax, values, *, cmap: str, vmin: float, vmax: float, fmt: str = "{:.2f}"):
    """``values`` (2-D) as an image with each cell's value written on it; returns the image."""
    data = torch.as_tensor(values, dtype=torch.float64)
    image = ax.imshow(data.numpy(), cmap=cmap, vmin=vmin, vmax=vmax, aspect="auto")
    for i, row in enumerate(data.tolist()):
        for j, v in enumerate(row):
            ax.text(j, i, fmt.format(v), ha="center", va="center", fontsize=7,
                    color=_text_colour(image, v))
    return image


def _text_colour(image, v: float) -> str:
    """White on a dark cell, black on a light one (perceived brightness of the cell's colour)."""
    red, green, blue, _ = image.cmap(image.norm(v))
    return "white" if 0.299 * red + 0.587 * green + 0.114 * blue < 0.5 else "black"


def _update_heatmap(ax, values, *, vmin: float, vmax: float, fmt: str = "{:.2f}") -> None:
    """Put ``values`` (same shape) into a heatmap from :func:`_annotated_heatmap`: image, limits, texts."""
    data = torch.as_tensor(values, dtype=torch.float64)
    image = ax.get_images()[0]
    image.set_data(data.numpy())
    image.set_clim(vmin, vmax)
    rgb = image.cmap(image.norm(data.numpy()))[..., :3]  # every cell's colour at once
    dark = (rgb @ [0.299, 0.587, 0.114] < 0.5).tolist()  # as _text_colour decides, cell by cell
    cells = iter([t for t in ax.texts if t.get_gid() is None])  # row by row, as written
    for row, dark_row in zip(data.tolist(), dark, strict=True):
        for v, is_dark in zip(row, dark_row, strict=True):
            cell = next(cells)
            cell.set_text(fmt.format(v))
            cell.set_color("white" if is_dark else "black")


def _outline_groups(ax, groups, n_cols: int) -> None:
    """One rectangle per group of rows ``(first_row, n_rows)``, around every column."""
    from matplotlib.patches import Rectangle

    for patch in [p for p in ax.patches if str(p.get_gid()).startswith("group ")]:
        patch.remove()
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
    _annotated_heatmap(ax_in, rows_in, cmap="viridis", vmin=0.0, vmax=1.0)
    _annotated_heatmap(ax_out, rows_out, cmap="coolwarm", vmin=-2.5, vmax=2.5)
    for ax in (ax_in, ax_out):
        ax.set_xticks(range(dim))
        ax.set_xlabel("feature")
        ax.set_yticks(range(len(labels)))
        ax.set_yticklabels(labels)
        ax.get_yticklabels()[b * seq_len + t].set_color(HIGHLIGHT)
    update_norm_unit_figure(fig, state)
    fig.tight_layout()
    return fig


def update_norm_unit_figure(fig: Figure, state: dict) -> None:
    """Show ``state`` on a figure from :func:`norm_unit_figure` (a batch of the same shape, same
    token): the cells, the colour range of the input, the groups, the flags and the titles."""
    ax_in, ax_out = fig.axes[:2]
    inputs, outputs = state["inputs"], state["outputs"]
    batch, seq_len, dim = inputs.shape
    rows_in, rows_out = inputs.reshape(-1, dim), outputs.reshape(-1, dim)
    b, t = state["token"]
    _update_heatmap(ax_in, rows_in, vmin=min(0.0, rows_in.min().item()), vmax=max(1.0, rows_in.max().item()))
    ax_in.set_title(f"input x {tuple(inputs.shape)}: token s{b} t{t} × {state['scale']:g}",
                    fontsize=10)
    _update_heatmap(ax_out, rows_out, vmin=-2.5, vmax=2.5)
    shape = tuple(state["normalized_shape"])
    ax_out.set_title(f"LayerNorm(normalized_shape={shape})", fontsize=10)
    for ax in (ax_in, ax_out):
        _outline_groups(ax, state["groups"], dim)
    for text in [t for t in ax_out.texts if str(t.get_gid()).startswith("changed ")]:
        text.remove()
    for row, moved in enumerate(state["changed"].flatten().tolist()):
        if moved:
            ax_out.text(dim - 0.35, row, "← moved", va="center", fontsize=8, color="C3",
                        gid=f"changed {row}")
    n_groups, count = len(state["groups"]), state["table"]["count"].iloc[0]
    groups = f"{n_groups} groups of {count} values, each" if n_groups > 1 else f"1 group of {count} values"
    fig.suptitle(f"reduced dims {state['reduced_dims']}: {groups} with its own mean and variance; "
                 f"γ and β have shape {shape}", fontsize=10)


def dependency_figure(matrices, *, figsize: tuple[float, float] | None = None, dpi: int = DPI) -> Figure:
    """One heatmap per dependency matrix (output position × input position), the future hatched.

    Args:
        matrices: ``title -> (seq_len, seq_len)`` tensor, e.g. from
            :func:`helpers.lessons.sequence.dependency_matrix`.

    Returns:
        A Figure with one axis per matrix: the matrix as an annotated heatmap, and a hatched
        square (``gid`` ``"future i j"``) on each cell above the diagonal, where output ``i``
        would depend on a later input ``j``. Each title gives the largest such dependency.
    """
    from matplotlib.patches import Rectangle

    from helpers.lessons.sequence import future_leak

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
