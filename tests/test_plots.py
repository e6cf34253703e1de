"""helpers.plots: builders return a Figure whose artists hold the data (never pictures)."""

from __future__ import annotations

import matplotlib.pyplot as plt
import pytest
import torch

from helpers import plots
from helpers.plots.blocks import block_diagrams_figure, block_steps
from helpers.plots.core import DPI, find_line
from helpers.widgets import other_samples_state

X = torch.randn(4, 8, generator=torch.Generator().manual_seed(0))


@pytest.fixture
def figure():
    """Build a figure for a state (deep dive 11's); close every figure the test made."""
    made = []

    def build(shift=0.0, scale=1.0, sample=0):
        fig = plots.other_samples_figure(other_samples_state(X, shift, scale, sample=sample))
        made.append(fig)
        return fig

    yield build
    for fig in made:
        plt.close(fig)


def test_builders_do_not_show(monkeypatch, figure):
    shown = []
    monkeypatch.setattr(plt, "show", lambda *a, **k: shown.append(1))
    figure()
    assert shown == []


def test_find_line_says_what_is_missing(figure):
    with pytest.raises(LookupError, match=r"expected one line with gid 'sample 9', found 0"):
        find_line(figure().axes[0], "sample 9")


def test_block_diagrams_are_traced_from_the_blocks_code():
    from torch import nn

    class Toy(nn.Module):  # Post-LN-like: LN after the residual addition
        def __init__(self):
            super().__init__()
            self.f, self.norm = nn.Linear(4, 4), nn.LayerNorm(4)

        def forward(self, x):
            return self.norm(x + self.f(x))

    assert block_steps(Toy()) == [("x", "input", []), ("f", "module", [0]), ("+", "add", [0, 1]),
                                        ("norm", "norm", [2]), ("out", "output", [3])]
    fig = block_diagrams_figure({"toy": Toy()})
    labels = [t.get_text() for t in fig.axes[0].texts]
    assert labels == ["x", "f", "+", "norm", "out"] and fig.axes[0].get_title(loc="left") == "toy"
    assert [p.get_gid() for p in fig.axes[0].patches if p.get_gid()] == ["skip 0-2"]
    assert fig.dpi == DPI and fig.get_size_inches()[0] * fig.dpi >= 900
    plt.close(fig)
