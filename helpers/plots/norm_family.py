"""Deep dive 15's family picture: the cells that share one mean and variance, per norm, on an image
batch ``(N, C, H, W)`` and on token sequences ``(B, T, D)``."""

from __future__ import annotations

import matplotlib.pyplot as plt
import numpy as np
from matplotlib.collections import LineCollection
from matplotlib.colors import to_rgba_array
from matplotlib.figure import Figure

from helpers.plots.core import DPI, find_line

# tab20's strong colours first, then its light ones: up to 20 groups get 20 different colours.
_PALETTE = to_rgba_array([plt.get_cmap("tab20")(i) for i in (*range(0, 20, 2), *range(1, 20, 2))])
PALE = 0.4  # how much of its colour a group that is not highlighted keeps (the rest is white)
BLOCKS = {"image": ("sample", "channel"), "tokens": ("sentence", "token")}  # the columns' unit, the rows


def block_grid(ids: np.ndarray) -> np.ndarray:
    """A block's group ids laid out flat: ``(N, C, H, W)`` as ``C`` rows and, per sample, ``H * W``
    columns; ``(B, T, D)`` as ``T`` rows and, per sentence, ``D`` columns. Samples stand side by
    side, one column of ``-1`` between them."""
    ids = np.asarray(ids)
    flat = ids.reshape(ids.shape[0], ids.shape[1], -1)  # (samples, rows, columns)
    samples, rows, columns = flat.shape
    grid = np.full((rows, samples, columns + 1), -1, dtype=np.int64)
    grid[:, :, :columns] = flat.transpose(1, 0, 2)
    return grid.reshape(rows, -1)[:, :-1]


def _grid_cell(block: dict) -> tuple[int, int]:
    """(row, column) in :func:`block_grid` of the block's marked cell."""
    shape, cell = block["shape"], block["cell"]
    columns = int(np.prod(shape[2:]))
    offset = int(np.ravel_multi_index(cell[2:], shape[2:])) if len(shape) == 4 else cell[2]
    row = cell[1]
    return row, cell[0] * (columns + 1) + offset


def _edges(labels: np.ndarray, pad: int) -> np.ndarray:
    """Segments ``(k, 2, 2)`` along every cell edge where ``labels`` differs on either side (cells
    are unit squares centred on integer coordinates, as ``imshow`` draws them; outside is ``pad``)."""
    a = np.pad(labels, 1, constant_values=pad)
    i, j = np.nonzero(a[:, 1:] != a[:, :-1])  # between columns j and j+1 of the padded array
    vertical = [[[jj - 0.5, ii - 1.5], [jj - 0.5, ii - 0.5]] for ii, jj in zip(i, j, strict=True)]
    i, j = np.nonzero(a[1:, :] != a[:-1, :])
    horizontal = [[[jj - 1.5, ii - 0.5], [jj - 0.5, ii - 0.5]] for ii, jj in zip(i, j, strict=True)]
    return np.asarray(vertical + horizontal, dtype=float).reshape(-1, 2, 2)


def _colours(grid: np.ndarray, highlight: int) -> np.ndarray:
    """RGBA per cell: its group's colour, pale unless it is ``highlight``; gaps transparent."""
    rgba = _PALETTE[np.maximum(grid, 0) % len(_PALETTE)].copy()
    pale = grid != highlight
    rgba[pale, :3] = PALE * rgba[pale, :3] + (1 - PALE)
    rgba[grid < 0] = 0.0
    return rgba


def _labels(block: dict) -> tuple[str, str]:
    """A block's title (the layer, what it reduces) and x label (how many groups of how many
    cells): short, as drawing text is most of what a redraw costs."""
    return f"{block['layer']}: {block['over']}", f"{block['n_groups']} groups of {block['group_size']} cells"


def _set_labels(ax, block: dict, *, fontsize: float = 9) -> None:
    title, xlabel = _labels(block)
    ax.set_title(title, fontsize=fontsize, y=1.0)  # a fixed y: no title placement to compute in a redraw
    ax.set_xlabel(xlabel, fontsize=fontsize - 1)


def _draw_block(ax, block: dict, *, fontsize: float = 9) -> None:
    """A block's grid on ``ax``: coloured cells, thin cell lines, group boundaries, the highlighted
    group's outline (``gid`` ``"highlight"``) and the marked cell (``gid`` ``"marked cell"``)."""
    grid = block_grid(block["ids"])
    rows, width = grid.shape
    ax.imshow(_colours(grid, block["highlight"]), interpolation="nearest")
    every = np.where(grid >= 0, np.arange(grid.size).reshape(grid.shape), -1)
    ax.add_collection(LineCollection(_edges(every, -1), colors="white", linewidths=0.8, gid="cells"))
    ax.add_collection(LineCollection(_edges(grid, -1), colors="0.25", linewidths=1.4, gid="groups"))
    ax.add_collection(LineCollection(_edges(grid == block["highlight"], False), colors="black",
                                     linewidths=3.0, gid="highlight"))
    row, column = _grid_cell(block)
    ax.plot([column], [row], "o", color="black", markersize=6, markeredgecolor="white", gid="marked cell")
    unit, row_name = BLOCKS["image" if len(block["shape"]) == 4 else "tokens"]
    columns = (width + 1) // block["shape"][0]
    ax.set_xticks([s * columns + (columns - 2) / 2 for s in range(block["shape"][0])])
    ax.set_xticklabels([f"{unit} {s}" for s in range(block["shape"][0])])
    ax.set_yticks([])
    ax.tick_params(length=0, labelsize=fontsize - 1)
    ax.set_ylabel(f"{row_name}s {row_name[0]}0…{row_name[0]}{rows - 1} ↓", fontsize=fontsize)
    for side in ax.spines.values():
        side.set_visible(False)
    _set_labels(ax, block, fontsize=fontsize)


def _update_block(ax, block: dict) -> None:
    """Show a block of the same shape on axes drawn by :func:`_draw_block`."""
    grid = block_grid(block["ids"])
    ax.get_images()[0].set_data(_colours(grid, block["highlight"]))
    collections = {c.get_gid(): c for c in ax.collections}
    collections["groups"].set_segments(_edges(grid, -1))
    collections["highlight"].set_segments(_edges(grid == block["highlight"], False))
    row, column = _grid_cell(block)
    find_line(ax, "marked cell").set_data([column], [row])
    _set_labels(ax, block)


def norm_family_figure(state: dict, *, figsize: tuple[float, float] = (11.0, 3.0), dpi: int = DPI) -> Figure:
    """The statistic groups of one norm on an image batch (left) and on token sequences (right).

    Args:
        state: what :func:`helpers.lessons.norm_family.norm_family_state` returns.

    Returns:
        A Figure with two axes. Each shows its block laid out by :func:`block_grid`, one coloured
        square per cell: same colour, same group; the group of the marked cell in full colour, the
        others pale; grey lines between groups (``LineCollection`` ``gid`` ``"groups"``), a thick
        black outline around the highlighted group (``"highlight"``), a dot on the marked cell
        (line ``gid`` ``"marked cell"``). The title names the block's shape, the layer and what it
        reduces; the x label counts the groups and their cells. (The dashboard's title says what
        the colours mean and gives the shapes: text is what a redraw spends most on.)
    """
    widths = [block_grid(state[name]["ids"]).shape[1] for name in BLOCKS]
    fig, axes = plt.subplots(1, 2, figsize=figsize, dpi=dpi, gridspec_kw={"width_ratios": widths})
    for ax, name in zip(axes, BLOCKS, strict=True):
        _draw_block(ax, state[name])
    fig.tight_layout()
    return fig


def update_norm_family_figure(fig: Figure, state: dict) -> None:
    """Show ``state`` (same shapes) on a figure from :func:`norm_family_figure`."""
    for ax, name in zip(fig.axes, BLOCKS, strict=True):
        _update_block(ax, state[name])


def norm_family_panels_figure(states: list[dict], *, token_norms=("BatchNorm", "LayerNorm", "RMSNorm"),
                              figsize: tuple[float, float] | None = None, dpi: int = DPI) -> Figure:
    """Every norm at once: one column per state, the image block on top and, for the norms in
    ``token_norms``, the token block below (the other columns' lower axes are left empty).

    Args:
        states: from :func:`helpers.lessons.norm_family.norm_family_state`, one per norm.
        token_norms: the norms whose token block is drawn: those Transformers use.

    Returns:
        A Figure with ``2 * len(states)`` axes (row-major); each drawn as in
        :func:`norm_family_figure`, titled with the norm, its layer and what it reduces.
    """
    n = len(states)
    fig, axes = plt.subplots(2, n, figsize=figsize or (3.0 * n, 4.6), dpi=dpi, squeeze=False)
    for column, state in enumerate(states):
        for ax, name in zip(axes[:, column], BLOCKS, strict=True):
            block = state[name]
            if name == "tokens" and state["norm"] not in token_norms:
                ax.axis("off")
                continue
            _draw_block(ax, block, fontsize=8)
            ax.set_title(f"{state['norm']}: {block['layer']}\n{block['over']}", fontsize=8)
    image, tokens = states[0]["image"]["shape"], states[0]["tokens"]["shape"]
    fig.suptitle(f"Top: images (N, C, H, W) = {image}, columns: each sample's H·W pixels. Bottom: the same "
                 f"numbers as tokens (B, T, D) = {tokens}, columns: each sentence's D features.\n"
                 "Same colour = one mean and variance (RMSNorm: one mean square); outlined: the group "
                 "of the marked cell ●", fontsize=9)
    fig.tight_layout()
    return fig
