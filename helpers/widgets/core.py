"""The machinery every dashboard shares: :class:`Dashboard`, sliders, PNG rendering."""

from __future__ import annotations

import io
from collections.abc import Callable, Mapping

import ipywidgets as widgets
import matplotlib.pyplot as plt
import pandas as pd
from matplotlib.figure import Figure

__all__ = ["Dashboard", "log_slider", "png_bytes", "shift_scale_sliders", "slider"]

_TABLE_STYLE = ("<style>.ln-table {border-collapse: collapse; font-size: 12px}"
                ".ln-table th, .ln-table td {padding: 2px 10px; text-align: right}</style>")


def png_bytes(fig: Figure) -> bytes:
    """``fig`` as PNG bytes, at the figure's own dpi (what the inline backend shows)."""
    buffer = io.BytesIO()
    fig.savefig(buffer, format="png", dpi=fig.dpi)
    return buffer.getvalue()


class Dashboard(widgets.VBox):
    """A title, a row of controls, a figure and (optionally) a table, redrawn on every change.

    Args:
        controls: ``name -> widget``; each widget's ``value`` is passed to ``compute``
            as the keyword ``name``.
        compute: ``compute(**values) -> state``, a plain function.
        draw: ``draw(state) -> Figure``, a builder from :mod:`helpers.plots`.
        table: ``table(state) -> DataFrame`` shown under the figure, or None.
        title: an HTML line above the controls.

    After every change, ``dashboard.state`` holds the latest state, ``dashboard.figure``
    the latest (closed) figure and ``dashboard.controls`` the controls by name; tests use
    them without a kernel.
    """

    def __init__(self, controls: Mapping[str, widgets.Widget], compute: Callable[..., object],
                 draw: Callable[[object], Figure], *,
                 table: Callable[[object], pd.DataFrame] | None = None, title: str = ""):
        self.image = widgets.Image(format="png")
        self.table = widgets.HTML()
        children = [widgets.HBox(list(controls.values())), self.image]
        if table is not None:
            children.append(self.table)
        if title:
            children.insert(0, widgets.HTML(title))
        super().__init__(children=children)
        self.controls = dict(controls)
        self._compute, self._draw, self._table = compute, draw, table
        self.state = self.figure = None
        for control in self.controls.values():
            control.observe(self.refresh, names="value")
        self.refresh()

    def refresh(self, change=None) -> None:
        """Recompute the state from the controls' values and redraw."""
        self.state = self._compute(**{name: c.value for name, c in self.controls.items()})
        self.figure = self._draw(self.state)
        plt.close(self.figure)  # shown through the Image widget, never by pyplot
        self.image.value = png_bytes(self.figure)
        if self._table is not None:
            frame = self._table(self.state)
            self.table.value = _TABLE_STYLE + frame.to_html(classes="ln-table", border=0)


def slider(description: str, value: float, low: float, high: float, step: float) -> widgets.FloatSlider:
    """A FloatSlider that redraws on release and shows its whole description."""
    return widgets.FloatSlider(
        value=value, min=low, max=high, step=step, description=description,
        continuous_update=False, style={"description_width": "initial"},
        layout=widgets.Layout(width="360px"),
    )


def log_slider(description: str, value: float, low_exponent: float, high_exponent: float,
               step: float, *, base: float = 10.0) -> widgets.FloatLogSlider:
    """A FloatLogSlider from ``base**low_exponent`` to ``base**high_exponent`` that redraws on release.

    ``step`` moves the exponent: with ``step=0.5`` each notch multiplies the value by
    ``sqrt(base)``. (FloatLogSlider exists in ipywidgets 7.7 and 8.)
    """
    return widgets.FloatLogSlider(
        value=value, base=base, min=low_exponent, max=high_exponent, step=step,
        description=description, readout_format=".1e", continuous_update=False,
        style={"description_width": "initial"}, layout=widgets.Layout(width="360px"),
    )


def shift_scale_sliders(sample: int = 0) -> dict[str, widgets.FloatSlider]:
    """The two controls that move one sample: ``scale`` (positive, 0.25 to 4), then ``shift`` (-5 to 5)."""
    return {
        "shift": slider(f"shift sample {sample} by", 0.0, -5.0, 5.0, 0.5),
        "scale": slider(f"scale sample {sample} by", 1.0, 0.25, 4.0, 0.25),
    }
