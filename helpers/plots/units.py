"""Which outputs depend on which inputs (deep dive 16)."""

from __future__ import annotations

import matplotlib.pyplot as plt
import torch
from matplotlib.figure import Figure

from helpers.plots.core import DPI


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
