"""Widgets: small dashboards whose logic is plain functions.

Each dashboard is three parts:

- a *state* function (e.g. :func:`other_samples_state`): control values in, everything
  to show out, as plain data; no widgets, no drawing, tested without a kernel;
- a figure builder in :mod:`helpers.plots` and its ``update_...`` twin, which shows a new
  state on the figure the builder made (and, if wanted, a table), also tested without a
  kernel;
- :class:`Dashboard`, which wires controls to the two: it builds the figure once (kept,
  closed, in ``dashboard.figure``); on every change it recomputes the state (kept in
  ``dashboard.state``), updates that figure's artists and shows it as a PNG in an ``Image``
  widget, with the table in an ``HTML`` widget below. A redraw takes well under 100 ms
  (``benchmarks/widgets.py`` measures every dashboard); ``dashboard.snapshot(**values)``
  draws a new figure at chosen values, for the static copy under a widget.

Why an ``Image`` and not ``plt.show()`` inside an ``Output`` widget: when a notebook is
executed headless (``jupyter nbconvert --execute``, ``nbclient``), every output captured
by an ``Output`` widget makes the executor send a message on the shell channel while it
waits there for the cell's reply, and it sometimes misses that reply: the cell then
stalls until the timeout, or forever without one (jupyter/nbclient#312). ``Image`` and
``HTML`` values travel only from the kernel to the front end, so that cannot happen.
The PNG is what the inline backend would show.

Only API common to ipywidgets 7.7 (Google Colab) and 8.x is used. Sliders redraw
when released (``continuous_update=False``).

The shared machinery is in :mod:`helpers.widgets.core`; each notebook's dashboards are
in a module named for what they show. What the notebooks use is importable from here.
"""

from helpers.widgets.bn_vs_ln import other_samples_demo, other_samples_state
from helpers.widgets.formula import eps_state
from helpers.widgets.norm_family import (
    ln_geometry_demo,
    ln_geometry_static,
    norm_family_demo,
    norm_family_static,
)
from helpers.widgets.numerics import stability_demo
from helpers.widgets.placement import placement_demo, stored_runs_demo
from helpers.widgets.training_speed import speed_demo

__all__ = [
    "eps_state",
    "ln_geometry_demo",
    "ln_geometry_static",
    "norm_family_demo",
    "norm_family_static",
    "other_samples_demo",
    "other_samples_state",
    "placement_demo",
    "speed_demo",
    "stability_demo",
    "stored_runs_demo",
]
