"""Deep dive 12: the placement MLP at initialisation, the dashboard and its figure, the
exercises and the table of where well-known models put the norm."""


import matplotlib.pyplot as plt
import pytest
import torch

from helpers import layer_norm, plots, widgets
from helpers.experiments.placement_tuned import ACTIVATIONS
from helpers.lessons import placement
from helpers.plots.core import find_line
from helpers.plots.placement import layer_colours
from helpers.widgets.placement import placement_table


@pytest.fixture(autouse=True)
def _close_figures():
    yield
    plt.close("all")


def test_saturated_and_dead_fractions_on_known_values():
    t = torch.tensor([[0.99, -0.98, 0.5, 0.0]])
    assert placement.saturated_fraction(t).item() == 0.5
    a = torch.tensor([[0.0, 1.0, 0.0], [0.0, 0.0, 2.0]])  # unit 0 is 0 on both samples
    assert placement.dead_fraction(a).item() == pytest.approx(1 / 3)


def test_placement_state_and_every_widget_control_changes_the_figure():
    state = placement.placement_state("tanh", "act -> LN", 8)
    assert len(state["saturated"]) == len(state["grad_norm"]) == 8
    torch.testing.assert_close(state["hist"].sum(1), torch.ones(8))
    # with gain 1 after LN, tanh's inputs have unit variance: few saturate (the standard 5/3 gave about 21%)
    assert sum(state["saturated"]) / 8 < 0.1
    demo = widgets.placement_demo()
    for name, value in (("activation", "relu"), ("placement", "no norm"), ("depth", 16)):
        before = [find_line(demo.figure.axes[0], "layer 1").get_ydata().tolist(),
                  find_line(demo.figure.axes[1], "grad_norm").get_ydata().tolist()]
        demo.controls[name].value = value
        after = [find_line(demo.figure.axes[0], "layer 1").get_ydata().tolist(),
                 find_line(demo.figure.axes[1], "grad_norm").get_ydata().tolist()]
        assert before != after, name
    assert len(demo.figure.axes[1].get_lines()[0].get_xdata()) == 16
    assert "relu" in demo.figure.get_suptitle()


@pytest.mark.parametrize("activation", ACTIVATIONS)
def test_histogram_range_fits_the_activation_and_layers_are_coloured_by_depth(activation):
    depth = 8
    state = placement.placement_state(activation, "no norm", depth)
    edges = placement.BINS[activation]
    assert state["hist"].shape == (depth, len(edges) - 1)
    expected = (-1.0, 1.0) if activation == "tanh" else (-0.3, 4.1)
    assert edges[0] >= expected[0] and edges[-1] <= expected[1]
    if activation == "tanh":
        assert (edges[0], edges[-1]) == (-1.0, 1.0)
    else:  # ReLU's exact zeros get a bin centred on 0
        assert ((edges[:-1] + edges[1:]) / 2).abs().min() < 1e-6
    fig = plots.layer_histograms_figure(state)
    hist, grad, bar = fig.axes
    assert hist.get_xlim() == pytest.approx((edges[0].item(), edges[-1].item()))
    colours = [find_line(hist, f"layer {i}").get_color() for i in range(1, depth + 1)]
    assert colours == layer_colours(depth) and len(set(colours)) == depth
    luminance = [0.2126 * r + 0.7152 * g + 0.0722 * b for r, g, b, _ in colours]
    assert luminance == sorted(luminance)  # sequential: the first layer darkest, the last lightest
    assert bar.get_ylim() == pytest.approx((0.5, depth + 0.5)) and "layer" in bar.get_ylabel()
    values = find_line(grad, "grad_norm").get_ydata()
    low, high = grad.get_ylim()
    assert grad.get_yscale() == "log" and "log" in grad.get_ylabel() and "gradient" in grad.get_ylabel()
    assert low < values.min() and values.max() < high and high / low >= 10


def test_the_table_shows_the_count_of_its_activation_only():
    expected = {"tanh": ["% saturated (|tanh| > 0.97)", "weight-gradient norm"],
                "relu": ["% dead (0 on every sample)", "weight-gradient norm"],
                "gelu": ["weight-gradient norm"]}
    for activation, rows in expected.items():
        table = placement_table(placement.placement_state(activation, "LN -> act", 4))
        assert list(table.index) == rows and list(table.columns) == [1, 2, 3, 4], activation


def test_exercises_accept_the_reference_and_hint_the_mistakes():
    assert "hands in the answer" in repr(placement.check_saturated_fraction(placement.saturated_fraction))
    assert placement.check_saturated_fraction(lambda t: (t.abs() > 0.97).float().mean())
    verdict = placement.check_saturated_fraction(lambda t: (t > 0.97).float().mean())
    assert not verdict and "-1 too" in repr(verdict)
    assert "hands in the answer" in repr(placement.check_dead_fraction(placement.dead_fraction))
    assert placement.check_dead_fraction(lambda a: 1.0 - (a.reshape(-1, a.shape[-1]) > 0).any(dim=0).float().mean())
    assert "EVERY sample" in repr(placement.check_dead_fraction(lambda a: (a == 0).float().mean()))
    def ln(h):
        m = h.mean(-1, keepdim=True)
        return (h - m) / torch.sqrt(((h - m) ** 2).mean(-1, keepdim=True) + 1e-5)

    assert "hands in the answer" in repr(placement.check_pre_ln_residual(lambda x, w: x + layer_norm(x, (x.shape[-1],)) @ w))
    assert placement.check_pre_ln_residual(lambda x, w: x + ln(x) @ w)
    verdict = placement.check_pre_ln_residual(lambda x, w: ln(x + x @ w))
    assert "Post-LN" in repr(verdict)


def test_norm_placement_table_has_a_reference_per_row():
    table = placement.NORM_PLACEMENT
    assert {"Transformer (2017)", "BERT (2018)", "GPT-2 (2019)", "LLaMA (2023)"} <= set(table.index)
    assert table.reference.str.contains(r"\b(?:19|20)\d\d\b").all()
    assert table["why there"].str.len().gt(0).all() and set(table["final norm"]) <= {"yes", "no"}
