"""Widgets: small dashboards whose logic is plain functions.

Each dashboard is three parts:

- a *state* function (here :func:`shift_scale_state`): control values in, everything
  to show out, as plain data; no widgets, no drawing, tested without a kernel;
- a figure builder in :mod:`helpers.plots`, also tested without a kernel;
- :class:`Dashboard`, which wires controls to the two: on every change it recomputes
  the state, keeps it in ``dashboard.state`` and redraws into an ``Output``.

Only API common to ipywidgets 7.7 (Google Colab) and 8.x is used. Sliders redraw
when released (``continuous_update=False``).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping

import ipywidgets as widgets
import matplotlib.pyplot as plt
import pandas as pd
import torch
from IPython.display import display

from helpers import plots
from helpers.stats import group_stats

__all__ = ["Dashboard", "shift_scale_demo", "shift_scale_state", "slider"]


class Dashboard(widgets.VBox):
    """A title, a row of controls and an ``Output`` that ``render(state)`` draws into.

    Args:
        controls: ``name -> widget``; each widget's ``value`` is passed to ``compute``
            as the keyword ``name``.
        compute: ``compute(**values) -> state``, a plain function.
        render: ``render(state)`` displays the state (shows figures, displays tables);
            it runs inside the ``Output``.
        title: an HTML line above the controls.

    After every change, ``dashboard.state`` holds the latest state and
    ``dashboard.controls`` the controls by name; tests use both without a kernel.
    """

    def __init__(self, controls: Mapping[str, widgets.Widget], compute: Callable[..., object],
                 render: Callable[[object], None], *, title: str = ""):
        self.output = widgets.Output()
        children = [widgets.HBox(list(controls.values())), self.output]
        if title:
            children.insert(0, widgets.HTML(title))
        super().__init__(children=children)
        self.controls = dict(controls)
        self._compute, self._render = compute, render
        self.state = None
        for control in self.controls.values():
            control.observe(self.refresh, names="value")
        self.refresh()

    def refresh(self, change=None) -> None:
        """Recompute the state from the controls' values and redraw."""
        self.state = self._compute(**{name: c.value for name, c in self.controls.items()})
        with self.output:
            self.output.clear_output(wait=True)
            self._render(self.state)


def slider(description: str, value: float, low: float, high: float, step: float) -> widgets.FloatSlider:
    """A FloatSlider that redraws on release and shows its whole description."""
    return widgets.FloatSlider(
        value=value, min=low, max=high, step=step, description=description,
        continuous_update=False, style={"description_width": "initial"},
        layout=widgets.Layout(width="360px"),
    )


# ------------------------------------------------ notebook 00: shift and scale one sample


def shift_scale_state(x: torch.Tensor, shift: float, scale: float, *, sample: int = 0,
                      eps: float = 1e-5) -> dict:
    """Move one sample of a batch by ``scale * x + shift``; LayerNorm every sample.

    Args:
        x: a batch of shape ``(n_samples, n_features)``.
        shift: added to every feature of sample ``sample`` (after scaling).
        scale: multiplies every feature of sample ``sample``; must be positive.
        sample: which sample moves.
        eps: LayerNorm's eps.

    Returns:
        A dict: ``inputs`` (the batch after the move), ``outputs`` (``helpers.layer_norm``
        over the features), ``original_inputs``/``original_outputs`` (before the move),
        ``sample``, ``shift``, ``scale``, ``input_ylim`` (limits that hold the inputs both
        before and after, with a margin) and ``table``: per sample, the mean and standard
        deviation (biased) of its input and of its output.
    """
    from helpers import layer_norm  # the set's own LayerNorm, imported when first needed

    if not isinstance(x, torch.Tensor) or x.ndim != 2:
        got = tuple(x.shape) if isinstance(x, torch.Tensor) else type(x).__name__
        raise ValueError(f"shift_scale_state(): argument 'x' must be a 2-D tensor "
                         f"(samples, features), got {got}")
    if not scale > 0:
        raise ValueError(f"shift_scale_state(): argument 'scale' must be positive, got {scale}")
    if not -x.shape[0] <= sample < x.shape[0]:
        raise ValueError(f"shift_scale_state(): argument 'sample' must be in [0, {x.shape[0] - 1}], "
                         f"got {sample}")
    sample %= x.shape[0]
    moved = x.clone()
    moved[sample] = x[sample] * scale + shift
    shape = (x.shape[1],)
    outputs = layer_norm(moved, shape, eps=eps)
    both = torch.cat([x, moved])
    low, high = both.min().item(), both.max().item()
    pad = 0.1 * (high - low) + 1e-3
    stats_in = group_stats(moved, -1, names=("sample", "feature"))
    stats_out = group_stats(outputs, -1, names=("sample", "feature"))
    table = pd.DataFrame({
        "input mean": stats_in["mean"], "input std": stats_in["std"],
        "output mean": stats_out["mean"], "output std": stats_out["std"],
    })
    return {
        "inputs": moved, "outputs": outputs,
        "original_inputs": x, "original_outputs": layer_norm(x, shape, eps=eps),
        "sample": sample, "shift": float(shift), "scale": float(scale),
        "input_ylim": (low - pad, high + pad), "table": table,
    }


def _show_shift_scale(state: dict) -> None:
    fig = plots.shift_scale_figure(state)
    plt.show()
    plt.close(fig)
    display(state["table"].round(3) + 0.0)  # + 0.0 turns -0.0 into 0.0


def shift_scale_demo(seed: int = 0, *, n_samples: int = 4, n_features: int = 8) -> Dashboard:
    """Sliders that shift and scale sample 0 of a seeded ``randn`` batch; LN's output stays put.

    The left panel shows the inputs (sample 0 moves; a pale band marks where it was), the right
    panel LayerNorm's outputs (sample 0's line stays on its old one), and the table each
    sample's mean and standard deviation before and after LayerNorm.
    """
    x = torch.randn(n_samples, n_features, generator=torch.Generator().manual_seed(seed))
    controls = {
        "shift": slider("shift sample 0 by", 0.0, -5.0, 5.0, 0.5),
        "scale": slider("scale sample 0 by", 1.0, 0.25, 4.0, 0.25),
    }
    return Dashboard(
        controls,
        lambda shift, scale: shift_scale_state(x, shift, scale),
        _show_shift_scale,
        title="<b>Move sample 0: its input changes, its LayerNorm output does not.</b>",
    )
