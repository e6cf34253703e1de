"""The machinery every dashboard shares: :class:`Dashboard`, sliders, PNG rendering.

A redraw must stay under 100 ms (compute, draw, PNG), so a dashboard keeps ONE figure: the
builder from :mod:`helpers.plots` makes it, and lays it out, once; after that, on every change,
an *update* function sets the data of its artists (``set_ydata``, ``set_height``,
``set_text``, axis limits), and :func:`png_bytes` renders it with the Agg canvas into a
reused buffer. Building a new figure would cost a new figure, a ``tight_layout`` (which draws
it once more) and a ``savefig``: two to six times the budget.

Most of a full draw is text (tick labels, axis labels), which an update rarely changes. A
dashboard that names its *changing* artists (lines, titles, legends, an axis whose limits
follow the data) is drawn by :class:`PartialRedraw`: the rest is drawn once per layout and kept
as a picture, and each change draws only the changing artists over it (about half the time of a
full draw, measured on the core path's histogram dashboards; pixels differ from a full draw
only where a line crosses a spine, drawn in another order).
"""

from __future__ import annotations

import contextlib
import io
from collections.abc import Callable, Iterator, Mapping

import ipywidgets as widgets
import matplotlib.pyplot as plt
import pandas as pd
import torch
from matplotlib.artist import Artist
from matplotlib.backends.backend_agg import FigureCanvasAgg
from matplotlib.figure import Figure
from PIL import Image

_TABLE_STYLE = ("<style>.ln-table {border-collapse: collapse; font-size: 12px}"
                ".ln-table th, .ln-table td {padding: 2px 10px; text-align: right}</style>")


#: zlib level of the PNGs a dashboard sends: 1 encodes faster than the default 6 (measured:
#: 5 ms against 8 ms) and, for these flat-coloured figures, the files are as small (35-55 KiB).
PNG_COMPRESS_LEVEL = 1


def png_bytes(fig: Figure, buffer: io.BytesIO | None = None) -> bytes:
    """``fig`` as PNG bytes, at the figure's own dpi and layout (what the inline backend shows).

    Drawn by the Agg canvas (given to ``fig`` if it has another one) straight into ``buffer``
    (emptied first; a new one if None): no ``savefig`` bookkeeping, no ``bbox_inches``.
    """
    canvas = fig.canvas if isinstance(fig.canvas, FigureCanvasAgg) else FigureCanvasAgg(fig)
    buffer = io.BytesIO() if buffer is None else buffer
    buffer.seek(0)
    buffer.truncate()
    canvas.print_png(buffer, pil_kwargs={"compress_level": PNG_COMPRESS_LEVEL})
    return buffer.getvalue()


class PartialRedraw:
    """PNGs of a figure whose changes touch only the artists that ``changing(figure)`` returns.

    The figure's *layout key* (each axes' x limits, x label and scales) names what moves the
    static artists. At a key it has not kept a picture for, it draws the figure without the
    changing artists (``set_animated``) and keeps that picture, one per key for the last
    :data:`KEPT_LAYOUTS` keys; at a key it has one for, it restores it. Then it draws the
    changing artists over it (``draw_artist``) and encodes the canvas as PNG. So going back to a
    layout seen before (another activation and back, say) costs a partial draw, not a whole one.
    The figure itself is left as a plain figure: :func:`png_bytes` still draws it whole.
    """

    #: Pictures kept, one per layout key, the least recently used dropped first: a dashboard's
    #: figure of 800 x 300 pixels takes about 1 MB each.
    KEPT_LAYOUTS = 8

    def __init__(self, figure: Figure, changing: Callable[[Figure], list[Artist]]):
        self.figure, self.changing = figure, changing
        self.canvas = figure.canvas if isinstance(figure.canvas, FigureCanvasAgg) else FigureCanvasAgg(figure)
        self._backgrounds: dict[tuple, object] = {}  # layout key -> picture, the most recent last

    def _layout_key(self) -> tuple:
        return tuple((ax.get_xlim(), ax.get_xlabel(), ax.get_xscale(), ax.get_yscale())
                     for ax in self.figure.axes)

    def png(self, buffer: io.BytesIO | None = None) -> bytes:
        """The figure as PNG bytes, into ``buffer`` (emptied first; a new one if None)."""
        artists = self.changing(self.figure)
        key = self._layout_key()
        background = self._backgrounds.pop(key, None)
        if background is None:
            for artist in artists:
                artist.set_animated(True)  # left out of the kept picture
            self.canvas.draw()
            background = self.canvas.copy_from_bbox(self.figure.bbox)
            for artist in artists:
                artist.set_animated(False)
            while self._backgrounds and len(self._backgrounds) >= self.KEPT_LAYOUTS:
                del self._backgrounds[next(iter(self._backgrounds))]  # the least recently used
        else:
            self.canvas.restore_region(background)
        self._backgrounds[key] = background
        for artist in artists:
            (artist.axes or self.figure).draw_artist(artist)  # a suptitle belongs to no axes
        buffer = io.BytesIO() if buffer is None else buffer
        buffer.seek(0)
        buffer.truncate()
        width, height = self.canvas.get_width_height(physical=True)
        Image.frombuffer("RGBA", (width, height), self.canvas.buffer_rgba(), "raw", "RGBA", 0, 1).save(
            buffer, format="png", compress_level=PNG_COMPRESS_LEVEL)
        return buffer.getvalue()


@contextlib.contextmanager
def one_thread() -> Iterator[None]:
    """Run torch on one thread inside the block, then restore the thread count.

    A dashboard's tensors are tiny: a second thread gains little, and on cores shared with other
    work each op waits for it, for a whole scheduler slice when it lost its core (measured on 2
    busy cores: 30-70 ms for deep dive 12's placement state on one thread, 0.2-3 s on two).
    """
    threads = torch.get_num_threads()
    if threads == 1:
        yield
        return
    torch.set_num_threads(1)
    try:
        yield
    finally:
        torch.set_num_threads(threads)


class Dashboard(widgets.VBox):
    """A title, a row of controls, a figure and (optionally) a table, redrawn on every change.

    Args:
        controls: ``name -> widget``; each widget's ``value`` is passed to ``compute``
            as the keyword ``name``.
        compute: ``compute(**values) -> state``, a plain function.
        draw: ``draw(state) -> Figure``, a builder from :mod:`helpers.plots`.
        update: ``update(figure, state)``, which sets the artists of a figure that ``draw``
            built to show ``state`` (same data as ``draw(state)``, layout kept). With it the
            dashboard builds its figure once and updates it on every change; without it,
            every change builds a new figure (slow: only for small or rare figures).
        changing: ``changing(figure) -> artists`` that ``update`` changes (lines, titles, legends,
            an axis whose limits follow the data); with it, redraws are :class:`PartialRedraw`'s.
            Needs ``update``. Anything else ``update`` changes must change the x limits,
            x label or scales, which redraw the whole figure.
        table: ``table(state) -> DataFrame`` shown under the figure, or None.
        title: an HTML line above the controls.

    After every change, ``dashboard.state`` holds the latest state, ``dashboard.figure``
    the (closed) figure that shows it, the same object on every change when ``update`` is
    given, and ``dashboard.controls`` the controls by name; tests use them without a kernel.
    :meth:`snapshot` draws a new figure at chosen control values, for a static copy.
    """

    def __init__(self, controls: Mapping[str, widgets.Widget], compute: Callable[..., object],
                 draw: Callable[[object], Figure], *,
                 update: Callable[[Figure, object], None] | None = None,
                 changing: Callable[[Figure], list[Artist]] | None = None,
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
        self._compute, self._draw, self._update, self._table = compute, draw, update, table
        self._changing, self._partial = changing, None
        self._buffer = io.BytesIO()
        self.state = self.figure = None
        for control in self.controls.values():
            control.observe(self.refresh, names="value")
        self.refresh()

    def refresh(self, change=None) -> None:
        """Recompute the state from the controls' values and redraw."""
        with one_thread():
            self.state = self._compute(**{name: c.value for name, c in self.controls.items()})
        if self.figure is not None and self._update is not None:
            self._update(self.figure, self.state)
        else:
            self.figure = self._draw(self.state)
            plt.close(self.figure)  # shown through the Image widget, never by pyplot
            FigureCanvasAgg(self.figure)  # rendered by Agg whatever pyplot's backend
            if self._changing is not None:
                self._partial = PartialRedraw(self.figure, self._changing)
        if self._partial is not None:
            self.image.value = self._partial.png(self._buffer)
        else:
            self.image.value = png_bytes(self.figure, self._buffer)
        if self._table is not None:
            frame = self._table(self.state)
            self.table.value = _TABLE_STYLE + frame.to_html(classes="ln-table", border=0)

    def snapshot(self, **values) -> Figure:
        """A new figure (from ``draw``) at the current control values, changed by ``values``.

        For the static copy under a widget, readable where no kernel runs:
        ``demo.snapshot(shift=3.5, scale=2.5)``. The controls do not move; the figure is
        left open, so a notebook cell that ends with it shows it.
        """
        current = {name: c.value for name, c in self.controls.items()}
        with one_thread():
            state = self._compute(**{**current, **values})
        return self._draw(state)


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
