"""helpers.plots: builders return a Figure whose artists hold the data (never pictures)."""

from __future__ import annotations

import matplotlib.pyplot as plt
import pytest
import torch
from matplotlib.figure import Figure

from helpers import plots
from helpers.widgets import shift_scale_state

X = torch.randn(4, 8, generator=torch.Generator().manual_seed(0))


@pytest.fixture
def figure():
    """Build a figure for a state; close every figure the test made."""
    made = []

    def build(shift=0.0, scale=1.0, sample=0):
        fig = plots.shift_scale_figure(shift_scale_state(X, shift, scale, sample=sample))
        made.append(fig)
        return fig

    yield build
    for fig in made:
        plt.close(fig)


def test_returns_a_small_figure_with_an_input_and_an_output_axis(figure):
    fig = figure()
    assert isinstance(fig, Figure)
    assert len(fig.axes) == 2
    assert fig.dpi == plots.DPI
    ax_in, ax_out = fig.axes
    assert ax_in.get_xlabel() == ax_out.get_xlabel() == "feature"
    assert "LayerNorm" in ax_out.get_title()


def test_every_sample_is_drawn_on_both_axes_with_its_values(figure):
    fig = figure(shift=2.0, scale=3.0)
    ax_in, ax_out = fig.axes
    state = shift_scale_state(X, 2.0, 3.0)
    for i in range(4):
        assert plots.find_line(ax_in, f"sample {i}").get_ydata().tolist() == pytest.approx(
            state["inputs"][i].tolist())
        assert plots.find_line(ax_out, f"sample {i}").get_ydata().tolist() == pytest.approx(
            state["outputs"][i].tolist())
    assert plots.find_line(ax_in, "sample 0").get_xdata().tolist() == list(range(8))


def test_the_moved_sample_is_highlighted_over_a_band_where_it_was(figure):
    ax_in, _ = figure(shift=-1.5).axes
    now, before = plots.find_line(ax_in, "sample 0"), plots.find_line(ax_in, "sample 0 before")
    other = plots.find_line(ax_in, "sample 1")
    assert now.get_color() == plots.HIGHLIGHT and other.get_color() == plots.OTHER
    assert before.get_color() == plots.HIGHLIGHT and before.get_linewidth() > now.get_linewidth()
    assert before.get_ydata().tolist() == pytest.approx(X[0].tolist())
    assert now.get_ydata().tolist() == pytest.approx((X[0] - 1.5).tolist())


def test_shift_moves_the_input_line_and_limits_but_not_the_output_line(figure):
    base, moved = figure(), figure(shift=4.0)
    in0, out0 = (plots.find_line(ax, "sample 0").get_ydata() for ax in base.axes)
    in1, out1 = (plots.find_line(ax, "sample 0").get_ydata() for ax in moved.axes)
    assert (in1 - in0).tolist() == pytest.approx([4.0] * 8)
    assert moved.axes[0].get_ylim()[1] > base.axes[0].get_ylim()[1] + 3.0
    assert out1.tolist() == pytest.approx(out0.tolist(), abs=1e-5)
    assert moved.axes[1].get_ylim() == base.axes[1].get_ylim() == (-3.0, 3.0)


def test_scale_moves_the_input_line_and_its_title_says_so(figure):
    base, scaled = figure(), figure(scale=2.5, shift=-1.0)
    in0 = plots.find_line(base.axes[0], "sample 0").get_ydata()
    in1 = plots.find_line(scaled.axes[0], "sample 0").get_ydata()
    assert in1.tolist() == pytest.approx((in0 * 2.5 - 1.0).tolist(), rel=1e-6)
    assert scaled.axes[0].get_title() == "input: sample 0 becomes 2.5 · x - 1"
    assert base.axes[0].get_title() == "input: sample 0 becomes 1 · x + 0"


def test_the_input_limits_hold_every_point_before_and_after(figure):
    for shift, scale in [(0.0, 1.0), (5.0, 4.0), (-5.0, 0.25)]:
        ax_in = figure(shift, scale).axes[0]
        low, high = ax_in.get_ylim()
        for line in ax_in.get_lines():
            assert low < line.get_ydata().min() and line.get_ydata().max() < high


def test_another_sample_can_be_the_moved_one(figure):
    ax_in, _ = figure(shift=1.0, sample=2).axes
    assert plots.find_line(ax_in, "sample 2").get_color() == plots.HIGHLIGHT
    assert plots.find_line(ax_in, "sample 0").get_color() == plots.OTHER
    assert plots.find_line(ax_in, "sample 2 before").get_ydata().tolist() == pytest.approx(X[2].tolist())


def test_builders_do_not_show(monkeypatch, figure):
    shown = []
    monkeypatch.setattr(plt, "show", lambda *a, **k: shown.append(1))
    figure()
    assert shown == []


def test_find_line_says_what_is_missing(figure):
    with pytest.raises(LookupError, match=r"expected one line with gid 'sample 9', found 0"):
        plots.find_line(figure().axes[0], "sample 9")


def test_block_diagrams_are_traced_from_the_blocks_code():
    from torch import nn

    class Toy(nn.Module):  # Post-LN-like: LN after the residual addition
        def __init__(self):
            super().__init__()
            self.f, self.norm = nn.Linear(4, 4), nn.LayerNorm(4)

        def forward(self, x):
            return self.norm(x + self.f(x))

    assert plots.block_steps(Toy()) == [("x", "input", []), ("f", "module", [0]), ("+", "add", [0, 1]),
                                        ("norm", "norm", [2]), ("out", "output", [3])]
    fig = plots.block_diagrams_figure({"toy": Toy()})
    labels = [t.get_text() for t in fig.axes[0].texts]
    assert labels == ["x", "f", "+", "norm", "out"] and fig.axes[0].get_title(loc="left") == "toy"
    assert [p.get_gid() for p in fig.axes[0].patches if p.get_gid()] == ["skip 0-2"]
    assert fig.dpi == plots.DPI and fig.get_size_inches()[0] * fig.dpi >= 900
    plt.close(fig)
