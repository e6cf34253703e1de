"""What every figure builder shares: sizes, colours, finding a tagged line, and training curves."""

from __future__ import annotations

DPI = 80
HIGHLIGHT = "C0"  # the sample a widget moves
OTHER = "0.7"  # every other sample: light grey

#: An axes title's height, given (``ax.set_title(..., y=TITLE_Y)``): matplotlib then leaves the
#: title there, instead of measuring the figure's axes at every draw to see whether ticks on top
#: or an axis's offset text are in its way (measured: a third of the draw of deep dive 12's
#: dashboard figure).
#: Where nothing is, the title lands where matplotlib would have put it, pixel for pixel.
TITLE_Y = 1.0


def find_line(ax, gid: str):
    """The line on ``ax`` whose ``gid`` is ``gid`` (builders tag their lines this way)."""
    lines = [line for line in ax.get_lines() if line.get_gid() == gid]
    if len(lines) != 1:
        raise LookupError(f"find_line(): expected one line with gid {gid!r}, found {len(lines)}")
    return lines[0]


def curves_figure(update, state, *, figsize: tuple[float, float], dpi: int):
    """A one-axes figure of training curves (x: training step, a light grid), drawn by
    ``update(fig, state)`` so that a dashboard can redraw it in place with the same function."""
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=figsize, dpi=dpi)
    ax.set_xlabel("training step")
    ax.grid(alpha=0.3)
    update(fig, state)
    fig.tight_layout()
    return fig


def clear_curves(ax) -> None:
    """Remove what a curves update drew (lines, bands, texts, the legend) and forget its extent."""
    for artist in [*ax.get_lines(), *ax.collections, *ax.texts]:
        artist.remove()
    if ax.get_legend() is not None:
        ax.get_legend().remove()
    ax.relim()


def curves_changing(fig) -> list:
    """The artists a curves update changes without moving anything else: per axes its collections,
    y axis (its limits follow the data; its grid lines with it), lines, texts, title and legend, in
    the order a full draw puts them; and the spines, which a full draw puts over the grid lines
    (a grid line at a y limit would hide the spine otherwise). (The x limits follow the data too: a
    dashboard redraws the whole figure when they change.)"""
    artists = []
    for ax in fig.axes:
        artists += [*ax.collections, ax.yaxis, *ax.get_lines(), *ax.spines.values(), *ax.texts, ax.title]
        if ax.get_legend() is not None:
            artists.append(ax.get_legend())
    return artists


def seed_curves(ax, runs, column: str, *, colour, label: str, by=("seed",)) -> None:
    """One thin line per run of ``runs`` (a frame with ``step`` and ``column``; runs told apart by
    the columns ``by``) and their median over runs at each step in bold, ``gid`` and legend ``label``.

    The thin lines are made as ``Line2D`` and added (half the time of ``ax.plot`` for each, which a
    dashboard redraw pays for every run); the median's ``ax.plot`` asks for the limits to follow."""
    from matplotlib.lines import Line2D

    for _, run in runs.groupby(list(by)):
        ax.add_line(Line2D(run["step"].to_numpy(), run[column].to_numpy(), color=colour, lw=0.6, alpha=0.35))
    median = runs.groupby("step")[column].median()
    ax.plot(median.index.to_numpy(), median.to_numpy(), color=colour, lw=2.2, gid=label, label=f"{label} (median)")
