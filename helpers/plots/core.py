"""What every figure builder shares: sizes, colours, and finding a tagged line."""

from __future__ import annotations

__all__ = ["DPI", "HIGHLIGHT", "OTHER", "find_line"]

DPI = 80
HIGHLIGHT = "C0"  # the sample a widget moves
OTHER = "0.7"  # every other sample: light grey


def find_line(ax, gid: str):
    """The line on ``ax`` whose ``gid`` is ``gid`` (builders tag their lines this way)."""
    lines = [line for line in ax.get_lines() if line.get_gid() == gid]
    if len(lines) != 1:
        raise LookupError(f"find_line(): expected one line with gid {gid!r}, found {len(lines)}")
    return lines[0]
