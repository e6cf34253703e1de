"""The per-token / per-sentence / per-batch dashboard without a kernel (no notebook shows it now):
norm_unit_state, its figure and table, every control; and deep dive 16's dependency_figure.
Everything is read from data (artists, tables), never from pixels."""

from __future__ import annotations

import ipywidgets as widgets
import matplotlib.pyplot as plt
import pytest
import torch
import torch.nn.functional as F
from matplotlib.image import AxesImage
from matplotlib.patches import Rectangle

from helpers import plots
from helpers.lessons.sequence import dependency_matrix
from helpers.widgets import NORM_UNITS, Dashboard, norm_unit_demo, norm_unit_state, png_bytes


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


# ---------------------------------------------------------------- the state function


@pytest.mark.parametrize("n, shape, dims, groups", [
    (1, (4,), (2,), [(r, 1) for r in range(6)]),
    (2, (3, 4), (1, 2), [(0, 3), (3, 3)]),
    (3, (2, 3, 4), (0, 1, 2), [(0, 6)]),
])
def test_the_state_names_the_unit_its_dims_and_its_groups(n, shape, dims, groups):
    state = norm_unit_state(X, n)
    assert state["normalized_shape"] == shape and state["reduced_dims"] == dims
    assert state["unit"] == NORM_UNITS[n] and state["groups"] == groups
    torch.testing.assert_close(state["outputs"], F.layer_norm(X, shape))
    assert torch.equal(state["inputs"], X) and not state["changed"].any()


@pytest.mark.parametrize("n", [1, 2, 3])
def test_the_table_holds_each_groups_statistics(n):
    state = norm_unit_state(X, n, scale=3.0)
    table = state["table"]
    assert list(table.columns) == ["count", "input mean", "input var", "output mean", "output var"]
    dims = state["reduced_dims"]
    x64 = state["inputs"].double()
    mean = x64.mean(dim=dims).flatten()
    var = x64.var(dim=dims, unbiased=False).flatten()
    assert table["input mean"].tolist() == pytest.approx(mean.tolist(), abs=1e-12)
    assert table["input var"].tolist() == pytest.approx(var.tolist(), abs=1e-12)
    assert table["count"].iloc[0] == torch.Size(state["normalized_shape"]).numel()
    assert table["output mean"].abs().max() < 1e-6
    assert table["output var"].tolist() == pytest.approx((var / (var + 1e-5)).tolist(), abs=1e-5)


@pytest.mark.parametrize("scale", [1.5, 4.0, 10.0])
def test_a_scaled_token_moves_no_output_per_token_its_sentence_per_sentence_all_per_batch(scale):
    token, sentence, batch = (norm_unit_state(X, n, scale=scale) for n in (1, 2, 3))
    for state in (token, sentence, batch):
        assert torch.allclose(state["inputs"][0, 2], X[0, 2] * scale)
        assert torch.equal(state["inputs"][1], X[1]) and state["scale"] == scale
    assert not token["changed"].any()
    assert sentence["changed"].tolist() == [[True, True, True], [False, False, False]]
    assert batch["changed"].all()
    # "moved" is measured against scale 1: per token, LN(scale * x) == LN(x) but for eps
    assert (token["outputs"] - F.layer_norm(X, (4,))).abs().max() < 1e-4


def test_another_token_can_be_chosen():
    state = norm_unit_state(X, 2, scale=4.0, token=(1, 0))
    assert state["token"] == (1, 0) and torch.equal(state["inputs"][0], X[0])
    assert state["changed"].tolist() == [[False, False, False], [True, True, True]]


@pytest.mark.parametrize("kwargs, match", [
    ({"x": torch.zeros(2, 3)}, r"'x' must be a 3-D tensor \(batch, seq_len, dim\), got \(2, 3\)"),
    ({"n_trailing": 0}, r"'n_trailing' must be one of \[1, 2, 3\], got 0"),
    ({"token": (2, 0)}, r"'token' must be a \(sentence, position\) in \[0, 1\] x \[0, 2\], got \(2, 0\)"),
])
def test_bad_arguments_say_what_was_expected(kwargs, match):
    args = {"x": X, "n_trailing": 1, **kwargs}
    with pytest.raises(ValueError, match=match):
        norm_unit_state(**args)


# ---------------------------------------------------------------- the figure


def _groups(ax) -> list[tuple[float, float, float, float]]:
    rects = sorted((p for p in ax.patches if str(p.get_gid()).startswith("group ")),
                   key=lambda p: int(p.get_gid().split()[1]))
    return [(r.get_x(), r.get_y(), r.get_width(), r.get_height()) for r in rects]


@pytest.mark.parametrize("n, expected", [
    (1, [(-0.5, r - 0.5, 4, 1) for r in range(6)]),
    (2, [(-0.5, -0.5, 4, 3), (-0.5, 2.5, 4, 3)]),
    (3, [(-0.5, -0.5, 4, 6)]),
])
def test_the_figure_outlines_each_group_on_both_heatmaps(n, expected):
    fig = plots.norm_unit_figure(norm_unit_state(X, n))
    ax_in, ax_out = fig.axes[:2]
    assert _groups(ax_in) == expected and _groups(ax_out) == expected
    assert all(isinstance(p, Rectangle) and not p.get_fill() for p in ax_in.patches)
    assert str(tuple(X.shape[-n:])) in ax_out.get_title()


def test_the_heatmaps_hold_the_inputs_and_outputs_one_row_per_token():
    state = norm_unit_state(X, 2, scale=2.0)
    fig = plots.norm_unit_figure(state)
    (image_in,), (image_out,) = (ax.get_images() for ax in fig.axes[:2])
    assert isinstance(image_in, AxesImage)
    assert image_in.get_array().shape == image_out.get_array().shape == (6, 4)
    assert image_in.get_array().ravel().tolist() == pytest.approx(state["inputs"].flatten().tolist())
    assert image_out.get_array().ravel().tolist() == pytest.approx(state["outputs"].flatten().tolist())
    assert image_out.get_clim() == (-2.5, 2.5)
    labels = [t.get_text() for t in fig.axes[0].get_yticklabels()]
    assert labels == ["s0 t0", "s0 t1", "s0 t2", "s1 t0", "s1 t1", "s1 t2"]
    texts = [t.get_text() for t in fig.axes[1].texts if t.get_gid() is None]
    assert texts[:4] == [f"{v:.2f}" for v in state["outputs"][0, 0].tolist()]  # each value written


@pytest.mark.parametrize("n", [1, 2, 3])
def test_the_moved_outputs_are_flagged_row_by_row(n):
    state = norm_unit_state(X, n, scale=6.0)
    fig = plots.norm_unit_figure(state)
    flagged = sorted(int(t.get_gid().split()[1]) for t in fig.axes[1].texts
                     if str(t.get_gid()).startswith("changed "))
    assert flagged == state["changed"].flatten().nonzero().flatten().tolist()
    assert flagged == {1: [], 2: [0, 1, 2], 3: [0, 1, 2, 3, 4, 5]}[n]


def test_the_title_says_how_many_groups_and_the_shape_of_gamma():
    assert "6 groups of 4 values" in plots.norm_unit_figure(norm_unit_state(X, 1))._suptitle.get_text()
    title = plots.norm_unit_figure(norm_unit_state(X, 3))._suptitle.get_text()
    assert "1 group of 24 values" in title and "γ and β have shape (2, 3, 4)" in title


def test_dependency_figure_shows_each_matrix_and_hatches_the_future():
    sentence = X[0]
    matrices = {"per token": dependency_matrix(lambda x: F.layer_norm(x, x.shape[-1:]), sentence),
                "per sentence": dependency_matrix(lambda x: F.layer_norm(x, x.shape[-2:]), sentence)}
    fig = plots.dependency_figure(matrices)
    assert len(fig.axes) == 2 and fig.dpi == plots.DPI
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


# ---------------------------------------------------------------- the dashboard, no kernel


@pytest.fixture
def demo():
    return norm_unit_demo(X)


def test_the_demo_has_a_unit_chooser_a_release_slider_a_figure_and_a_table(demo):
    assert isinstance(demo, Dashboard)
    unit, scale = demo.controls["n_trailing"], demo.controls["scale"]
    assert isinstance(unit, widgets.ToggleButtons) and isinstance(scale, widgets.FloatSlider)
    assert [value for _, value in unit.options] == [1, 2, 3] and unit.value == 1
    assert [label.split(" ·")[0] for label, _ in unit.options] == ["token", "sentence", "whole batch"]
    assert scale.continuous_update is False and scale.min == 1.0 and scale.value == 1.0
    assert demo.image.value == png_bytes(demo.figure)
    assert "input mean" in demo.table.value and "output var" in demo.table.value


def test_the_default_demo_uses_the_lessons_batch():
    assert torch.equal(norm_unit_demo().state["inputs"], X)


@pytest.mark.parametrize("value", [2, 3])
def test_choosing_the_unit_changes_the_groups_the_outputs_and_the_table(demo, value):
    before_png, before_html, fig = demo.image.value, demo.table.value, demo.figure
    groups_before = _groups(fig.axes[0])
    out_before = fig.axes[1].get_images()[0].get_array().copy()
    demo.controls["n_trailing"].value = value
    assert demo.state["normalized_shape"] == tuple(X.shape[-value:]) and demo.figure is fig
    assert _groups(fig.axes[0]) != groups_before
    out_after = fig.axes[1].get_images()[0].get_array()
    assert abs(out_after - out_before).max() > 0.1
    assert demo.image.value != before_png and demo.table.value != before_html
    assert len(demo.state["table"]) == {2: 2, 3: 1}[value]


def test_the_slider_changes_the_input_the_table_and_per_sentence_the_outputs(demo):
    before_png, before_html, fig = demo.image.value, demo.table.value, demo.figure
    row_before = fig.axes[0].get_images()[0].get_array()[2].copy()
    demo.controls["scale"].value = 5.0
    row = fig.axes[0].get_images()[0].get_array()[2]
    assert row.tolist() == pytest.approx((X[0, 2] * 5).tolist()) and demo.figure is fig
    assert demo.image.value != before_png and demo.table.value != before_html
    assert f"{demo.state['table'].loc[(0, 2), 'input mean']:.4f}" in demo.table.value
    assert abs(row_before - row).max() > 1
    demo.controls["n_trailing"].value = 2
    flagged = [t.get_gid() for t in demo.figure.axes[1].texts if str(t.get_gid()).startswith("changed")]
    assert flagged == ["changed 0", "changed 1", "changed 2"]
