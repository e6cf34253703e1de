"""helpers.widgets without a kernel: the state function, and every control of the dashboard."""

from __future__ import annotations

import ipywidgets as widgets
import matplotlib.pyplot as plt
import pytest
import torch
import torch.nn.functional as F

from helpers import plots
from helpers.widgets import Dashboard, png_bytes, shift_scale_demo, shift_scale_state

X = torch.randn(4, 8, generator=torch.Generator().manual_seed(0))


# ---------------------------------------------------------------- the state function


def test_only_the_chosen_sample_moves():
    state = shift_scale_state(X, 1.5, 2.0)
    assert torch.allclose(state["inputs"][0], X[0] * 2.0 + 1.5)
    assert torch.equal(state["inputs"][1:], X[1:])
    assert torch.equal(state["original_inputs"], X)
    assert state["shift"] == 1.5 and state["scale"] == 2.0 and state["sample"] == 0


def test_outputs_are_layer_norm_over_the_features():
    state = shift_scale_state(X, -3.0, 0.5)
    assert torch.allclose(state["outputs"], F.layer_norm(state["inputs"], (8,)), atol=1e-6)
    assert torch.allclose(state["original_outputs"], F.layer_norm(X, (8,)), atol=1e-6)


@pytest.mark.parametrize("shift", [-5.0, -0.5, 0.0, 2.5, 5.0])
@pytest.mark.parametrize("scale", [0.25, 1.0, 1.75, 4.0])
def test_layer_norm_output_is_invariant_under_shift_and_positive_scale(shift, scale):
    state = shift_scale_state(X, shift, scale)
    # Invariant but for eps: LN(scale * x + shift, eps) == LN(x, eps / scale**2) ...
    exact = F.layer_norm(X[0].double(), (8,), eps=1e-5 / scale**2).float()
    assert torch.allclose(state["outputs"][0], exact, atol=2e-5)
    # ... which over the sliders' range moves no output by more than a thousandth.
    assert torch.allclose(state["outputs"], state["original_outputs"], atol=1e-3)
    assert torch.equal(state["outputs"][1:], state["original_outputs"][1:])


def test_a_scale_tiny_next_to_eps_breaks_the_invariance():
    state = shift_scale_state(X, 0.0, 1e-3)
    assert (state["outputs"][0] - state["original_outputs"][0]).abs().max() > 0.5


def test_the_table_reads_every_samples_mean_and_std():
    state = shift_scale_state(X, 2.0, 3.0)
    table = state["table"]
    assert list(table.columns) == ["input mean", "input std", "output mean", "output std"]
    assert table.index.tolist() == [0, 1, 2, 3] and table.index.name == "sample"
    x0 = X[0].double()
    assert table.loc[0, "input mean"] == pytest.approx(x0.mean().item() * 3 + 2, rel=1e-6)
    assert table.loc[0, "input std"] == pytest.approx(x0.std(unbiased=False).item() * 3, rel=1e-6)
    assert table["output mean"].abs().max() < 1e-6
    assert table["output std"].tolist() == pytest.approx([1.0] * 4, abs=1e-4)
    assert table.loc[1, "input mean"] == pytest.approx(X[1].double().mean().item(), rel=1e-6)


def test_input_limits_follow_the_data():
    still, moved = shift_scale_state(X, 0.0, 1.0), shift_scale_state(X, 5.0, 4.0)
    assert moved["input_ylim"][1] > still["input_ylim"][1] + 5
    both = torch.cat([X, moved["inputs"]])
    assert moved["input_ylim"][0] < both.min().item() and both.max().item() < moved["input_ylim"][1]


@pytest.mark.parametrize("kwargs, match", [
    ({"scale": 0.0}, r"argument 'scale' must be positive, got 0.0"),
    ({"scale": -1.0}, r"argument 'scale' must be positive, got -1.0"),
    ({"sample": 4}, r"argument 'sample' must be in \[0, 3\], got 4"),
    ({"x": torch.zeros(2, 3, 4)}, r"argument 'x' must be a 2-D tensor \(samples, features\), got \(2, 3, 4\)"),
])
def test_bad_arguments_say_what_was_expected(kwargs, match):
    args = {"x": X, "shift": 0.0, "scale": 1.0, **kwargs}
    with pytest.raises(ValueError, match=match):
        shift_scale_state(**args)


# ---------------------------------------------------------------- the dashboard, no kernel


@pytest.fixture
def demo():
    """The shift-and-scale dashboard (no notebook shows it now), built at seed 0."""
    yield shift_scale_demo(seed=0)
    plt.close("all")


def test_the_demo_is_a_vbox_with_two_release_sliders_a_figure_and_a_table(demo):
    assert isinstance(demo, widgets.VBox) and isinstance(demo, Dashboard)
    assert set(demo.controls) == {"shift", "scale"}
    for control in demo.controls.values():
        assert isinstance(control, widgets.FloatSlider)
        assert control.continuous_update is False
    assert demo.controls["scale"].min > 0
    assert demo.image in demo.children and demo.table in demo.children
    assert demo.image.value[:8] == b"\x89PNG\r\n\x1a\n"  # drawn once when built
    assert demo.image.value == png_bytes(demo.figure)
    assert "input mean" in demo.table.value and "<table" in demo.table.value


def test_the_demo_uses_the_seeded_batch(demo):
    assert torch.equal(demo.state["original_inputs"], X)


def test_the_figure_is_closed_so_pyplot_never_shows_it_twice(demo):
    assert demo.figure.number not in plt.get_fignums()


@pytest.mark.parametrize("name, value", [("shift", 3.5), ("scale", 2.75)])
def test_every_control_changes_what_is_shown(demo, name, value):
    before_state, fig = demo.state, demo.figure
    before_png, before_html = demo.image.value, demo.table.value
    ax_in, ax_out = fig.axes
    y_before = plots.find_line(ax_in, "sample 0").get_ydata().copy()
    ylim_before, title_before = ax_in.get_ylim(), ax_in.get_title()
    out_before = plots.find_line(ax_out, "sample 0").get_ydata().copy()
    demo.controls[name].value = value
    assert demo.state is not before_state and demo.state[name] == value
    assert demo.figure is fig  # one figure, updated in place
    assert demo.image.value != before_png and demo.table.value != before_html
    # The input panel changes: sample 0's points, the axis limits and the title.
    y_after = plots.find_line(ax_in, "sample 0").get_ydata()
    assert (abs(y_after - y_before)).max() > 0.5
    assert ax_in.get_ylim() != ylim_before
    assert ax_in.get_title() != title_before
    # The readout changes: sample 0's input mean (shift) or std (scale), and the HTML shows it.
    column = "input mean" if name == "shift" else "input std"
    new = demo.state["table"].loc[0, column]
    assert new != pytest.approx(before_state["table"].loc[0, column])
    assert f"{new:.3f}" in demo.table.value
    # The output panel does not: that is the lesson.
    out_after = plots.find_line(ax_out, "sample 0").get_ydata()
    assert out_after.tolist() == pytest.approx(out_before.tolist(), abs=1e-4)


def test_both_controls_together(demo):
    demo.controls["shift"].value = -4.0
    demo.controls["scale"].value = 0.25
    state = demo.state
    assert torch.allclose(state["inputs"][0], X[0] * 0.25 - 4.0)
    assert torch.allclose(state["outputs"][0], state["original_outputs"][0], atol=1e-3)


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
