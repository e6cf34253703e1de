"""helpers.widgets without a kernel: the Dashboard calls its state function with every control's
value and draws each state."""

from __future__ import annotations

import ipywidgets as widgets
import matplotlib.pyplot as plt

from helpers.widgets.core import Dashboard


def test_dashboard_calls_compute_with_every_controls_value_and_draws_each_state():
    calls, drawn = [], []
    a = widgets.IntSlider(value=1, min=0, max=5)
    b = widgets.Dropdown(options=["x", "y"], value="x")

    def compute(a, b):
        calls.append((a, b))
        return f"{b}{a}"

    def draw(state):
        drawn.append(state)
        fig, ax = plt.subplots(figsize=(1, 1), dpi=20)
        ax.set_title(state)
        return fig

    box = Dashboard({"a": a, "b": b}, compute, draw, title="<b>t</b>")
    a.value = 3
    b.value = "y"
    assert calls == [(1, "x"), (3, "x"), (3, "y")]
    assert drawn == ["x1", "x3", "y3"] and box.state == "y3"
    assert box.figure.axes[0].get_title() == "y3"
    assert isinstance(box.children[0], widgets.HTML) and box.children[0].value == "<b>t</b>"
    assert box.table not in box.children  # no table asked for
    plt.close("all")
