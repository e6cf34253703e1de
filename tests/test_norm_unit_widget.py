"""Deep dive 16's dependency_figure, read from data (artists), never from pixels."""

from __future__ import annotations

import matplotlib.pyplot as plt
import pytest
import torch
import torch.nn.functional as F

from helpers import plots
from helpers.lessons.sequence import dependency_matrix
from helpers.plots.core import DPI


def _lesson_batch() -> torch.Tensor:
    """torch.manual_seed(42); torch.rand(2, 3, 4), without touching the global RNG."""
    with torch.random.fork_rng():
        torch.manual_seed(42)
        return torch.rand(2, 3, 4)


X = _lesson_batch()


@pytest.fixture(autouse=True)
def _close_figures():
    yield
    plt.close("all")


def test_dependency_figure_shows_each_matrix_and_hatches_the_future():
    sentence = X[0]
    matrices = {"per token": dependency_matrix(lambda x: F.layer_norm(x, x.shape[-1:]), sentence),
                "per sentence": dependency_matrix(lambda x: F.layer_norm(x, x.shape[-2:]), sentence)}
    fig = plots.dependency_figure(matrices)
    assert len(fig.axes) == 2 and fig.dpi == DPI
    for ax, (name, m) in zip(fig.axes, matrices.items(), strict=True):
        assert ax.get_images()[0].get_array().ravel().tolist() == pytest.approx(m.flatten().tolist())
        future = {tuple(map(int, p.get_gid().split()[1:])) for p in ax.patches}
        assert future == {(0, 1), (0, 2), (1, 2)}
        for p in ax.patches:
            i, j = map(int, p.get_gid().split()[1:])
            assert (p.get_x(), p.get_y()) == (j - 0.5, i - 0.5)
        assert name in ax.get_title()
    assert "largest future dependency: 0\n" in fig.axes[0].get_title() + "\n"
    assert f"{matrices['per sentence'][0, 1:].max().item():.3g}" in fig.axes[1].get_title()
