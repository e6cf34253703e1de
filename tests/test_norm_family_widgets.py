"""Deep dive 15's pieces without a kernel: which cells share a statistic (against torch's ops and
helpers'), the parameter table (against torch.nn's modules), LayerNorm's geometry (against
layer_norm and rms_norm in float64), their figures, and every control of both dashboards."""

from __future__ import annotations

import math

import matplotlib.pyplot as plt
import numpy as np
import pytest
import torch
import torch.nn.functional as F
from hypothesis import given, settings
from hypothesis import strategies as st
from matplotlib.figure import Figure

import helpers
from helpers import plots
from helpers.lessons.geometry import (
    GEOMETRY_POINTS,
    ln_geometry,
    ln_geometry_state,
    ln_geometry_table,
    plane_circle,
)
from helpers.lessons.norm_family import (
    NORMS,
    divisors,
    norm_family_state,
    parameter_table,
    statistic_groups,
)
from helpers.plots.core import find_line
from helpers.plots.geometry import GEOMETRY_VIEWS
from helpers.plots.norm_family import block_grid
from helpers.widgets import (
    ln_geometry_demo,
    ln_geometry_static,
    norm_family_demo,
    norm_family_static,
)
from helpers.widgets.core import Dashboard
from helpers.widgets.norm_family import norm_family_table

SETTINGS = settings(max_examples=25, deadline=None)
EPS = 1e-5


@pytest.fixture(autouse=True)
def _close_figures():
    yield
    plt.close("all")


# --- statistic_groups: the ids are exactly the cells each op takes one statistic over ----------


def _norm_op(norm: str, x: torch.Tensor, groups: int, lib) -> torch.Tensor:
    """``norm`` applied by ``lib`` (torch.nn.functional or helpers, same signatures) as the
    family's docstring says: on (N, C, H, W) directly; on (B, T, D) with D as the channels."""
    if x.ndim == 4:
        ops = {
            "BatchNorm": lambda: lib.batch_norm(x, None, None, training=True, eps=EPS),
            "LayerNorm": lambda: lib.layer_norm(x, x.shape[1:], eps=EPS),
            "InstanceNorm": lambda: lib.instance_norm(x, eps=EPS),
            "GroupNorm": lambda: lib.group_norm(x, groups, eps=EPS),
            "RMSNorm": lambda: lib.rms_norm(x, x.shape[1:], eps=EPS),
        }
        return ops[norm]()
    b, t, d = x.shape
    channels_first = x.transpose(1, 2)  # (B, D, T), as InstanceNorm1d and GroupNorm expect
    ops = {
        "BatchNorm": lambda: lib.batch_norm(x.reshape(b * t, d), None, None, training=True,
                                            eps=EPS).reshape(x.shape),
        "LayerNorm": lambda: lib.layer_norm(x, (d,), eps=EPS),
        "InstanceNorm": lambda: lib.instance_norm(channels_first, eps=EPS).transpose(1, 2),
        "GroupNorm": lambda: lib.group_norm(channels_first, groups, eps=EPS).transpose(1, 2),
        "RMSNorm": lambda: lib.rms_norm(x, (d,), eps=EPS),
    }
    return ops[norm]()


def _normalize_by_ids(x: torch.Tensor, ids: np.ndarray, *, rms: bool) -> torch.Tensor:
    """Each group of cells with one id standardized by its own mean and (biased) variance, or
    divided by its own root mean square."""
    ids = torch.as_tensor(ids)
    out = torch.empty_like(x)
    for k in range(int(ids.max()) + 1):
        cells = x[ids == k]
        if rms:
            out[ids == k] = cells / torch.sqrt(cells.pow(2).mean() + EPS)
        else:
            out[ids == k] = (cells - cells.mean()) / torch.sqrt(cells.var(unbiased=False) + EPS)
    return out


@st.composite
def _shapes_and_groups(draw):
    """A small (N, C, H, W) or (B, T, D), every statistic over at least 2 cells, and G | C."""
    if draw(st.booleans()):
        shape = (draw(st.integers(1, 3)), draw(st.integers(1, 6)), draw(st.integers(1, 3)), draw(st.integers(2, 3)))
        channels = shape[1]
    else:
        shape = (draw(st.integers(1, 3)), draw(st.integers(2, 4)), draw(st.integers(2, 6)))
        channels = shape[2]
    return shape, draw(st.sampled_from(divisors(channels)))


@pytest.mark.parametrize("lib", [F, helpers], ids=["torch", "helpers"])
@pytest.mark.parametrize("norm", NORMS)
@SETTINGS
@given(shape_groups=_shapes_and_groups(), seed=st.integers(0, 2**16))
def test_cells_with_one_id_are_exactly_those_the_op_takes_one_statistic_over(lib, norm, shape_groups, seed):
    shape, groups = shape_groups
    x = torch.randn(shape, generator=torch.Generator().manual_seed(seed), dtype=torch.float64) * 3 + 1
    ids = statistic_groups(norm, shape, groups)
    assert ids.shape == shape and ids.dtype == np.int64
    assert sorted(set(ids.flatten().tolist())) == list(range(int(ids.max()) + 1))  # 0..k-1, none skipped
    # Normalizing each id's cells on their own gives the op's output: a coarser or finer grouping
    # would take other means and variances and give other numbers.
    y = _norm_op(norm, x, groups, lib)
    torch.testing.assert_close(y, _normalize_by_ids(x, ids, rms=norm == "RMSNorm"), atol=1e-9, rtol=1e-9)
    for k in range(int(ids.max()) + 1):  # and, readably: per group mean 0 and variance 1 but for eps,
        group = torch.as_tensor(ids == k)  # var / (var + eps) (RMSNorm: mean square ms / (ms + eps))
        inputs, cells = x[group], y[group]
        if norm == "RMSNorm":
            before, after = inputs.pow(2).mean().item(), cells.pow(2).mean().item()
        else:
            before, after = inputs.var(unbiased=False).item(), cells.var(unbiased=False).item()
            assert abs(cells.mean().item()) < 1e-9
        assert after == pytest.approx(before / (before + EPS), rel=1e-9)


def test_another_norms_ids_do_not_reproduce_an_op():
    x = torch.randn(2, 4, 2, 3, generator=torch.Generator().manual_seed(0), dtype=torch.float64)
    wrong = _normalize_by_ids(x, statistic_groups("LayerNorm", x.shape), rms=False)
    assert not torch.allclose(F.batch_norm(x, None, None, training=True, eps=EPS), wrong)
    assert not torch.allclose(F.group_norm(x, 2, eps=EPS), wrong)


def test_the_groups_on_one_image_and_token_batch_read_as_the_lesson_says():
    image, tokens = (2, 4, 1, 2), (2, 3, 4)
    assert statistic_groups("BatchNorm", image)[:, 1].flatten().tolist() == [1] * 4  # one per channel
    assert statistic_groups("LayerNorm", image)[1].flatten().tolist() == [1] * 8  # one per sample
    assert statistic_groups("InstanceNorm", image)[1, 2].tolist() == [[6, 6]]  # per sample and channel
    assert statistic_groups("GroupNorm", image, 2)[1, :, 0, 0].tolist() == [2, 2, 3, 3]
    assert (statistic_groups("GroupNorm", image, 1) == statistic_groups("LayerNorm", image)).all()
    assert (statistic_groups("GroupNorm", image, 4) == statistic_groups("InstanceNorm", image)).all()
    assert statistic_groups("LayerNorm", tokens)[1].tolist() == [[3] * 4, [4] * 4, [5] * 4]  # per token
    assert statistic_groups("BatchNorm", tokens)[:, :, 2].flatten().tolist() == [2] * 6  # per feature
    assert (statistic_groups("RMSNorm", tokens) == statistic_groups("LayerNorm", tokens)).all()


def test_divisors():
    assert divisors(6) == [1, 2, 3, 6] and divisors(1) == [1] and divisors(7) == [1, 7]


# --- the parameter table, read off the modules ---------------------------------------------------


@pytest.mark.parametrize("channels, groups, spatial", [(6, 2, (2, 2)), (4, 4, (3, 5)), (8, 1, (1, 1))])
def test_the_parameter_table_is_the_same_for_torch_nn_and_follows_the_shapes(channels, groups, spatial):
    ours = parameter_table(channels, groups, spatial)
    assert ours.equals(parameter_table(channels, groups, spatial, namespace=torch.nn))
    c, image = f"({channels},)", str((channels, *spatial))
    row = ours.loc[f"BatchNorm2d({channels})"]
    assert (row["weight (γ)"], row["bias (β)"], row["running statistics"]) == (c, c, "yes")
    assert row["buffers"] == f"running_mean {c}, running_var {c}, num_batches_tracked ()"
    row = ours.loc[f"LayerNorm({image})"]
    assert (row["weight (γ)"], row["bias (β)"], row["buffers"], row["running statistics"]) == (image, image, "-", "no")
    row = ours.loc[f"InstanceNorm2d({channels})"]  # torch's default: no affine, no running statistics
    assert (row["weight (γ)"], row["bias (β)"], row["buffers"], row["running statistics"]) == ("-", "-", "-", "no")
    row = ours.loc[f"InstanceNorm2d({channels}, affine=True, track_running_stats=True)"]
    assert (row["weight (γ)"], row["running statistics"]) == (c, "yes")
    row = ours.loc[f"GroupNorm({groups}, {channels})"]
    assert (row["weight (γ)"], row["bias (β)"], row["buffers"], row["running statistics"]) == (c, c, "-", "no")
    for name, shape in ((f"RMSNorm({image})", image), (f"RMSNorm({channels})", c)):  # a weight only
        assert (ours.loc[name, "weight (γ)"], ours.loc[name, "bias (β)"], ours.loc[name, "buffers"]) == (shape, "-", "-")
    assert set(ours.loc[ours["running statistics"] == "yes", "norm"]) == {"BatchNorm", "InstanceNorm"}


def test_the_parameter_table_reads_the_modules_it_is_given():
    class Namespace:  # torch.nn's classes, with a BatchNorm2d that keeps no running statistics
        def __getattr__(self, name):
            if name == "BatchNorm2d":
                return lambda c: torch.nn.BatchNorm2d(c, track_running_stats=False, affine=False)
            return getattr(torch.nn, name)

    row = parameter_table(namespace=Namespace()).loc["BatchNorm2d(6)"]
    assert (row["weight (γ)"], row["buffers"], row["running statistics"]) == ("-", "-", "no")


# --- the family dashboard's state and figures ----------------------------------------------------


def test_the_state_marks_one_cell_in_each_block_and_highlights_its_group():
    state = norm_family_state("GroupNorm", 3, sample=1, channel=4, position=3)
    image, tokens = state["image"], state["tokens"]
    assert image["shape"] == (3, 6, 2, 2) and tokens["shape"] == (3, 4, 6)  # (N, H * W, C)
    assert image["cell"] == (1, 4, 1, 1) and tokens["cell"] == (1, 3, 4)
    assert image["highlight"] == 1 * 3 + 4 // 2 and tokens["highlight"] == 1 * 3 + 4 // 2
    assert (image["n_groups"], image["group_size"]) == (9, 8)
    assert image["layer"] == "GroupNorm(3, C)" and "transpose" in tokens["layer"]


def test_block_grid_lays_samples_side_by_side_with_a_gap():
    ids = statistic_groups("InstanceNorm", (2, 3, 1, 2))
    grid = block_grid(ids)
    assert grid.shape == (3, 2 * 2 + 1)
    assert grid[:, 2].tolist() == [-1, -1, -1]
    assert grid[:, :2].tolist() == [[0, 0], [1, 1], [2, 2]] and grid[:, 3:].tolist() == [[3, 3], [4, 4], [5, 5]]


def _collection(ax, gid):
    return next(c for c in ax.collections if c.get_gid() == gid)


def test_the_figure_colours_the_groups_outlines_the_highlighted_one_and_marks_the_cell():
    state = norm_family_state("LayerNorm", sample=2, channel=1, position=2)
    fig = plots.norm_family_figure(state)
    assert isinstance(fig, Figure) and len(fig.axes) == 2
    image_ax, token_ax = fig.axes
    # LayerNorm over (C, H, W): sample 2's whole 6 x 4 grid, outlined by 2 * (6 + 4) unit edges
    assert len(_collection(image_ax, "highlight").get_segments()) == 2 * (6 + 4)
    # per token: one row of D = 6 cells
    assert len(_collection(token_ax, "highlight").get_segments()) == 2 * (6 + 1)
    rgba = image_ax.get_images()[0].get_array()
    grid = block_grid(state["image"]["ids"])
    assert np.allclose(rgba[grid == 2][:, 3], 1) and (rgba[grid < 0][:, 3] == 0).all()
    strong, pale = rgba[grid == 2][0, :3], rgba[grid == 0][0, :3]
    assert pale.min() > strong.min()  # the others are paler
    marked = find_line(image_ax, "marked cell")
    assert (marked.get_xdata()[0], marked.get_ydata()[0]) == (2 * 5 + 2, 1)
    assert "LayerNorm((C, H, W))" in image_ax.get_title() and "3 groups of 24 cells" in image_ax.get_xlabel()
    assert "per token" in token_ax.get_title() and "12 groups of 6 cells" in token_ax.get_xlabel()


def test_the_panels_figure_draws_every_norm_and_the_token_block_of_three():
    fig = norm_family_static(groups=3)
    assert isinstance(fig, Figure) and len(fig.axes) == 10
    titles = [ax.get_title() for ax in fig.axes]
    assert [t.split(":")[0] for t in titles[:5]] == list(NORMS)
    drawn = [ax.get_title().split(":")[0] for ax in fig.axes[5:] if ax.axison]
    assert drawn == ["BatchNorm", "LayerNorm", "RMSNorm"]
    assert "GroupNorm(3, C)" in titles[3]


# --- LayerNorm's geometry against layer_norm and rms_norm ----------------------------------------

points_3d = st.lists(st.floats(-5, 5, allow_nan=False), min_size=3, max_size=3).filter(
    lambda p: np.var(p) > 1e-2 and np.mean(np.square(p)) > 1e-2)


@SETTINGS
@given(point=points_3d, eps=st.sampled_from([0.0, 1e-5, 0.1, 1.0]))
def test_the_geometry_is_layer_norm_and_rms_norm(point, eps):
    g = ln_geometry([point], eps)
    x = torch.tensor([point], dtype=torch.float64)
    for layer_norm in (F.layer_norm, helpers.layer_norm):
        torch.testing.assert_close(torch.from_numpy(g["ln"]), layer_norm(x, (3,), eps=eps), atol=1e-12, rtol=1e-12)
    for rms_norm in (F.rms_norm, helpers.rms_norm):
        torch.testing.assert_close(torch.from_numpy(g["rms"]), rms_norm(x, (3,), eps=eps), atol=1e-12, rtol=1e-12)
    assert g["projection"].sum() == pytest.approx(0, abs=1e-12)  # on the plane x + y + z = 0
    assert g["ln"].sum() == pytest.approx(0, abs=1e-12)
    var, ms = np.var(point), np.mean(np.square(point))
    assert np.linalg.norm(g["ln"]) == pytest.approx(math.sqrt(3 * var / (var + eps)), rel=1e-12)
    assert g["ln_radius"][0] == pytest.approx(np.linalg.norm(g["ln"]), rel=1e-12)
    assert np.linalg.norm(g["rms"]) == pytest.approx(math.sqrt(3 * ms / (ms + eps)), rel=1e-12)
    assert g["rms_radius"][0] == pytest.approx(np.linalg.norm(g["rms"]), rel=1e-12)


@SETTINGS
@given(point=points_3d, shift=st.floats(-3, 3), scale=st.floats(0.2, 5))
def test_a_shift_along_ones_and_a_positive_scale_leave_the_ln_image_but_a_shift_moves_rms(point, shift, scale):
    p = np.asarray(point)
    at_zero_eps = ln_geometry([p, p + shift, scale * p, -scale * p], eps=0.0)["ln"]
    assert np.allclose(at_zero_eps[1], at_zero_eps[0], atol=1e-9)
    assert np.allclose(at_zero_eps[2], at_zero_eps[0], atol=1e-9)
    assert np.allclose(at_zero_eps[3], -at_zero_eps[0], atol=1e-9)  # a negative scale: the antipode
    g = ln_geometry([p, p + shift], eps=EPS)
    assert np.allclose(g["ln"][1], g["ln"][0], atol=1e-12)  # the shift is exact at any eps
    if abs(shift) > 0.1:
        assert not np.allclose(g["rms"][1], g["rms"][0], atol=1e-3)


def test_eps_pulls_a_low_variance_point_inside_the_circle():
    g = ln_geometry([[0.05, 0.0, -0.05], [10.0, 0.0, -10.0]], eps=1e-2)
    assert g["ln_radius"][0] < 0.5 * math.sqrt(3) and g["ln_radius"][1] == pytest.approx(math.sqrt(3), rel=1e-4)


def test_weight_and_bias_stretch_and_shift_the_images():
    g = ln_geometry([[1.0, 2.0, 4.0]], weight=[2.0, 1.0, 1.0], bias=[0.0, 0.0, 1.0])
    assert np.allclose(g["affine"], g["ln"] * [2, 1, 1] + [0, 0, 1])


def test_the_geometry_state_moves_p_and_keeps_its_unmoved_images():
    state = ln_geometry_state(x=0.5, scale=2.0, offset=1.0, gamma=1.5, eps=1e-5)
    base = np.array([0.5, *GEOMETRY_POINTS[0, 1:]])
    assert np.allclose(state["points"][0], 2 * base + 1)
    assert np.allclose(state["points"][1:], GEOMETRY_POINTS[1:])
    assert np.allclose(state["unmoved"]["ln"], state["affine"][0], atol=1e-5)
    assert not np.allclose(state["unmoved"]["rms"], state["rms"][0], atol=1e-2)
    assert np.allclose(state["ellipse"], math.sqrt(3) * plane_circle() * [[1.5], [1], [1]])
    assert np.allclose(plane_circle().sum(axis=0), 0) and np.allclose(np.linalg.norm(plane_circle(), axis=0), 1)


def test_the_geometry_table_gives_p_and_its_images():
    state = ln_geometry_state(scale=2.0, offset=1.5)
    table = ln_geometry_table(state)
    assert list(table.columns) == ["x₁", "x₂", "x₃", "sum", "length"]
    assert table.loc["P − mean(P)", "sum"] == 0 and table.loc["LN(P)", "sum"] == 0
    assert table.loc["LN(P)", "length"] == pytest.approx(state["ln_radius"][0], abs=1e-6)
    assert table.loc["LN(P)", "length"] == pytest.approx(table.loc["LN(P) before the move", "length"], abs=1e-4)
    assert table.loc["RMSNorm(P)", "length"] == pytest.approx(state["rms_radius"][0], abs=1e-6)


def test_the_3d_figure_holds_the_points_their_images_and_the_camera():
    state = ln_geometry_state(azimuth=30.0, elevation=10.0, scale=1.5, offset=-1.0, gamma=0.5)
    fig = plots.ln_geometry_figure(state)
    assert isinstance(fig, Figure) and fig.axes[0].name == "3d"
    ax = fig.axes[0]
    assert (ax.azim, ax.elev) == (30.0, 10.0)
    assert np.allclose(np.array(find_line(ax, "P").get_data_3d()).T, state["points"][:1])
    assert np.allclose(np.array(find_line(ax, "inputs").get_data_3d()).T, state["points"][1:])
    assert np.allclose(np.array(find_line(ax, "projections").get_data_3d()).T, state["projection"][1:])
    assert np.allclose(np.array(find_line(ax, "LN(P)").get_data_3d()).T, state["affine"][:1])
    assert np.allclose(np.array(find_line(ax, "RMS images").get_data_3d()).T, state["rms"][1:])
    assert np.allclose(np.array(find_line(ax, "γ ⊙ circle").get_data_3d()), state["ellipse"])
    to_plane = next(c for c in ax.collections if c.get_gid() == "to plane")
    assert np.allclose(np.asarray(to_plane._segments3d)[:, 1], state["projection"])


def test_the_views_figure_shows_one_scene_from_three_cameras():
    fig = ln_geometry_static()
    assert isinstance(fig, Figure) and len(fig.axes) == 3
    cameras = [(ax.elev, ax.azim) for ax in fig.axes]
    assert cameras == [tuple(v) for v in GEOMETRY_VIEWS.values()]
    assert all(ax.get_title() in GEOMETRY_VIEWS for ax in fig.axes)


# --- the dashboards: every control changes what is shown ------------------------------------------


@pytest.fixture
def family():
    return norm_family_demo()


def test_the_family_demo_has_its_controls_a_figure_and_the_parameter_table(family):
    assert isinstance(family, Dashboard)
    assert set(family.controls) == {"norm", "groups", "sample", "channel", "position"}
    assert list(family.controls["norm"].options) == list(NORMS)
    assert list(family.controls["groups"].options) == [1, 2, 3, 6]
    assert all(not c.continuous_update for name, c in family.controls.items() if name in ("sample", "channel", "position"))
    assert family.image.value[:8] == b"\x89PNG\r\n\x1a\n"
    assert "running statistics" in family.table.value and "RMSNorm(6)" in family.table.value


def test_choosing_a_group_count_shows_groupnorm_whatever_norm_was_shown(family):
    assert family.controls["norm"].value == "LayerNorm" and not family.controls["groups"].disabled
    before = family.image.value
    family.controls["groups"].value = 3
    assert family.controls["norm"].value == "GroupNorm" and family.state["norm"] == "GroupNorm"
    assert family.state["groups"] == 3 and family.image.value != before
    assert "GroupNorm(3, C)" in family.figure.axes[0].get_title()


@pytest.mark.parametrize("moves", [
    [("norm", "BatchNorm")], [("norm", "InstanceNorm")], [("norm", "RMSNorm")],
    [("norm", "GroupNorm"), ("groups", 3)], [("norm", "GroupNorm"), ("groups", 6)],
    [("sample", 2)], [("channel", 5)], [("position", 3)],
])
def test_every_family_control_changes_the_state_and_the_picture(family, moves):
    for control, value in moves:
        before_png = family.image.value
        before = [(family.state[b]["layer"], family.state[b]["cell"]) for b in ("image", "tokens")]
        before_ids = family.state["image"]["ids"].copy()
        family.controls[control].value = value
        assert family.image.value != before_png, (control, value)
        for block, (layer, cell) in zip(("image", "tokens"), before, strict=True):
            if control in ("norm", "groups"):
                assert family.state[block]["layer"] != layer
            else:
                assert family.state[block]["cell"] != cell
        if control == "groups" or value in ("BatchNorm", "InstanceNorm"):  # RMSNorm groups as LayerNorm
            assert not np.array_equal(family.state["image"]["ids"], before_ids)


def test_the_family_table_marks_the_norm_shown(family):
    family.controls["norm"].value = "GroupNorm"
    family.controls["groups"].value = 3
    table = norm_family_table(family.state)
    assert table.loc[table["shown"] == "◀", "norm"].eq("GroupNorm").all()
    assert "GroupNorm(3, 6)" in table.index and "GroupNorm(3, 6)" in family.table.value


def test_the_family_snapshot_is_a_new_figure():
    demo = norm_family_demo()
    fig = demo.snapshot(norm="GroupNorm", groups=3, channel=2)
    assert fig is not demo.figure and "GroupNorm(3, C)" in fig.axes[0].get_title()


@pytest.fixture
def geometry():
    return ln_geometry_demo()


def test_the_geometry_demo_has_seven_release_sliders_and_a_table(geometry):
    assert set(geometry.controls) == {"azimuth", "elevation", "x", "scale", "offset", "gamma", "eps"}
    assert all(not c.continuous_update for c in geometry.controls.values())
    assert "LN(P) before the move" in geometry.table.value


@pytest.mark.parametrize("control, value", [("azimuth", 40.0), ("elevation", -30.0), ("x", -1.0), ("scale", 2.0),
                                            ("offset", 1.5), ("gamma", 1.5), ("eps", 1.0)])
def test_every_geometry_control_changes_the_picture(geometry, control, value):
    before_png, before_table = geometry.image.value, geometry.table.value
    geometry.controls[control].value = value
    assert geometry.image.value != before_png
    assert geometry.state[control] == pytest.approx(value)
    if control not in ("azimuth", "elevation"):
        assert geometry.table.value != before_table


@pytest.mark.parametrize("control, value", [("scale", 2.0), ("scale", 0.25), ("offset", 1.5), ("offset", -1.5)])
def test_moving_p_by_scale_or_shift_leaves_its_ln_image_in_its_ring(geometry, control, value):
    ax = geometry.figure.axes[0]
    before_p = np.array(find_line(ax, "P").get_data_3d())
    before_ln = np.array(find_line(ax, "LN(P)").get_data_3d())
    before_rms = np.array(find_line(ax, "RMS(P)").get_data_3d())
    geometry.controls[control].value = value
    assert not np.allclose(np.array(find_line(ax, "P").get_data_3d()), before_p)
    # unmoved but for eps (1e-5 against P's variance of 0.04 at scale 0.25: a shift of 1.4e-4)
    assert np.allclose(np.array(find_line(ax, "LN(P)").get_data_3d()), before_ln, atol=5e-4)
    assert np.allclose(np.array(find_line(ax, "LN(P) before").get_data_3d()), before_ln, atol=5e-4)
    moved_rms = not np.allclose(np.array(find_line(ax, "RMS(P)").get_data_3d()), before_rms, atol=1e-3)
    assert moved_rms == (control == "offset")  # RMSNorm keeps a scale, not a shift


def test_the_camera_sliders_turn_the_view(geometry):
    geometry.controls["azimuth"].value = 60.0
    geometry.controls["elevation"].value = 35.0
    ax = geometry.figure.axes[0]
    assert (ax.azim, ax.elev) == (60.0, 35.0)


def _segments(fig) -> list:
    """Every line collection's segments (3-D ones as set, not as projected) and every camera."""
    shown = []
    for ax in fig.axes:
        for c in ax.collections:
            if hasattr(c, "get_segments"):
                segments = c._segments3d if hasattr(c, "_segments3d") else c.get_segments()
                shown.append((c.get_gid(), [np.round(np.asarray(s, dtype=float), 9).tolist() for s in segments]))
        shown.append((getattr(ax, "elev", None), getattr(ax, "azim", None)))
    return shown


@pytest.mark.parametrize("build, moves", [
    (norm_family_demo, [("norm", "GroupNorm"), ("groups", 3), ("channel", 5), ("norm", "BatchNorm"), ("sample", 1)]),
    (ln_geometry_demo, [("azimuth", 80.0), ("offset", 1.0), ("x", 0.0), ("elevation", 5.0), ("gamma", 0.5)]),
])
def test_the_updated_segments_and_camera_are_a_new_figures(build, moves):
    demo = build()
    for control, value in moves:
        demo.controls[control].value = value
        fresh = demo._draw(demo.state)
        assert _segments(demo.figure) == _segments(fresh), (control, value)
        plt.close(fresh)
