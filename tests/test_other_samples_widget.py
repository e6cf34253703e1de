"""Deep dive 11's widget without a kernel: other_samples_state, its figure and table, every control."""

from __future__ import annotations

import matplotlib.pyplot as plt
import pytest
import torch
import torch.nn.functional as F

from helpers import plots
from helpers.plots.core import find_line
from helpers.widgets import other_samples_demo, other_samples_state
from helpers.widgets.core import Dashboard

X = torch.randn(4, 6, generator=torch.Generator().manual_seed(0))


@pytest.fixture(autouse=True)
def _close_figures():
    yield
    plt.close("all")


def test_at_rest_nothing_moves_and_outputs_match_torch():
    state = other_samples_state(X, 0.0, 1.0)
    torch.testing.assert_close(state["BatchNorm"], F.batch_norm(X, None, None, training=True))
    torch.testing.assert_close(state["LayerNorm"], F.layer_norm(X, (6,)))
    assert (state["table"] == 0).all().all()


@pytest.mark.parametrize("shift, scale", [(2.0, 1.0), (0.0, 3.0), (-4.0, 0.5)])
def test_moving_one_sample_moves_the_others_under_bn_only(shift, scale):
    state = other_samples_state(X, shift, scale, sample=0)
    assert torch.allclose(state["inputs"][0], X[0] * scale + shift)
    assert torch.equal(state["inputs"][1:], X[1:])
    table = state["table"]
    assert table.loc["BatchNorm", "other samples: max change"] > 0.1
    assert table.loc["LayerNorm", "other samples: max change"] == 0.0
    assert table.loc["LayerNorm", "moved sample: max change"] < 1e-4  # LN undoes its own shift/scale
    bn_change = (state["BatchNorm"] - state["BatchNorm before"]).abs()[1:].max().item()
    assert table.loc["BatchNorm", "other samples: max change"] == pytest.approx(bn_change)


def test_another_sample_can_be_moved():
    state = other_samples_state(X, 1.0, 1.0, sample=2)
    assert torch.equal(state["inputs"][0], X[0]) and torch.allclose(state["inputs"][2], X[2] + 1)


def test_the_figure_draws_each_sample_now_and_before():
    state = other_samples_state(X, 2.0, 1.0)
    fig = plots.other_samples_figure(state)
    for ax, norm in zip(fig.axes, ("BatchNorm", "LayerNorm"), strict=True):
        for i in range(4):
            assert list(find_line(ax, f"sample {i}").get_ydata()) == pytest.approx(state[norm][i].tolist())
            assert list(find_line(ax, f"sample {i} before").get_ydata()) == pytest.approx(
                state[f"{norm} before"][i].tolist())
        assert norm in ax.get_title()
    assert "1.574" in fig.axes[0].get_title() and "0.000" in fig.axes[1].get_title()


@pytest.fixture
def demo():
    return other_samples_demo(seed=0)


def test_the_demo_has_two_release_sliders_a_figure_and_a_table(demo):
    assert isinstance(demo, Dashboard)
    assert set(demo.controls) == {"shift", "scale"}
    assert all(not c.continuous_update for c in demo.controls.values())
    assert torch.equal(demo.state["inputs"], X)  # the demo's batch is the notebook's
    assert demo.image.value and "other samples: max change" in demo.table.value


@pytest.mark.parametrize("name, value", [("shift", 0.5), ("shift", -0.5), ("scale", 1.25), ("scale", 0.75)])
def test_every_control_changes_the_state_the_picture_and_the_table(demo, name, value):
    before_png, before_table = demo.image.value, demo.table.value
    before_bn = demo.state["BatchNorm"].clone()
    demo.controls[name].value = value
    assert demo.state[name] == value
    assert not torch.equal(demo.state["BatchNorm"][1:], before_bn[1:])  # the others move under BN
    assert demo.image.value != before_png and demo.table.value != before_table
