"""helpers.plots: builders return a Figure whose artists hold the data (never pictures)."""

from __future__ import annotations

import matplotlib.pyplot as plt
import pytest
import torch

from helpers import plots
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
        plots.find_line(figure().axes[0], "sample 9")
