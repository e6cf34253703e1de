"""helpers.lessons.group_stats.group_stats: float64 references, LayerNorm's promise, labels and errors."""

from __future__ import annotations

import pandas as pd
import pytest
import torch
import torch.nn.functional as F
from hypothesis import given, settings
from hypothesis import strategies as st

import helpers
from helpers.lessons.group_stats import group_stats, rounded

NAMES = ("sample", "token", "feature")


def _lesson_inputs() -> torch.Tensor:
    """The lesson's batch: torch.manual_seed(42); torch.rand(2, 3, 4)."""
    torch.manual_seed(42)
    return torch.rand(2, 3, 4)


def test_per_token_stats_match_the_lessons_printout():
    table = group_stats(_lesson_inputs(), -1, names=NAMES)
    # The lesson prints: 均值 [[0.7849, 0.5104, 0.6505], [0.6519, 0.5883, 0.4599]]
    #                    方差 [[0.0546, 0.0418, 0.1090], [0.0280, 0.0484, 0.0503]]
    assert table["mean"].unstack().round(4).values.tolist() == [
        [0.7849, 0.5104, 0.6505], [0.6519, 0.5883, 0.4599]]
    assert table["var"].unstack().round(4).values.tolist() == [
        [0.0546, 0.0418, 0.1090], [0.0280, 0.0484, 0.0503]]


def test_per_sentence_stats_match_the_lessons_printout():
    table = group_stats(_lesson_inputs(), (1, 2), names=NAMES)
    # 均值: tensor([0.6486, 0.5667]) 方差: tensor([0.0810, 0.0486])
    assert table["mean"].round(4).tolist() == [0.6486, 0.5667]
    assert table["var"].round(4).tolist() == [0.0810, 0.0486]
    assert table["count"].tolist() == [12, 12]


@pytest.mark.parametrize("dims", [-1, 2, (1, 2), (0, 1), (0, 2), 0, (0, 1, 2), (2, 0)])
def test_matches_float64_torch_reference(dims):
    x = torch.randn(3, 4, 5, generator=torch.Generator().manual_seed(1)) * 3 + 2
    table = group_stats(x, dims)
    x64 = x.double()
    mean = x64.mean(dim=dims)
    var = x64.var(dim=dims, unbiased=False)
    assert table["mean"].to_numpy().tolist() == pytest.approx(mean.flatten().tolist(), abs=1e-12)
    assert table["var"].to_numpy().tolist() == pytest.approx(var.flatten().tolist(), abs=1e-12)
    assert table["std"].to_numpy().tolist() == pytest.approx(var.sqrt().flatten().tolist(), abs=1e-12)
    reduced = (dims,) if isinstance(dims, int) else dims
    per_group = 1
    for d in reduced:
        per_group *= x.shape[d]
    assert (table["count"] == per_group).all()
    assert len(table) == x.numel() // per_group


def test_two_pass_survives_a_large_offset():
    # E[x^2] - E[x]^2 in float64 loses every digit here; centring first does not.
    x = torch.tensor([[1e9 + 1.0, 1e9 + 2.0, 1e9 + 3.0, 1e9 + 4.0]], dtype=torch.float64)
    assert group_stats(x, -1)["var"].item() == 1.25


def test_float16_input_is_read_in_float64():
    x = torch.tensor([[0.1, 0.2, 0.3, 0.4]], dtype=torch.float16)
    expected = x.double().var(unbiased=False).item()
    assert group_stats(x, -1)["var"].item() == pytest.approx(expected, rel=1e-12)


@pytest.mark.parametrize("normalized_shape, dims", [((4,), -1), ((3, 4), (1, 2))])
@pytest.mark.parametrize("layer_norm", [helpers.layer_norm, F.layer_norm], ids=["helpers", "torch"])
def test_after_layer_norm_every_group_has_mean_0_and_variance_1(layer_norm, normalized_shape, dims):
    x = _lesson_inputs()
    table = group_stats(layer_norm(x, normalized_shape), dims, names=NAMES)
    assert table["mean"].abs().max() < 1e-6
    # Not exactly 1: the output's variance is var / (var + eps).
    expected = group_stats(x, dims)["var"].to_numpy()
    expected = expected / (expected + 1e-5)
    assert table["var"].to_numpy() == pytest.approx(expected, abs=1e-5)
    assert table["var"].between(0.999, 1.0 + 1e-6).all()


@settings(max_examples=50, deadline=None)
@given(
    shape=st.lists(st.integers(1, 5), min_size=1, max_size=4),
    data=st.data(),
)
def test_every_entry_lands_in_exactly_one_group(shape, data):
    ndim = len(shape)
    dims = data.draw(st.lists(st.integers(-ndim, ndim - 1), min_size=1, max_size=ndim,
                              unique_by=lambda d: d % ndim))
    x = torch.arange(float(torch.Size(shape).numel())).reshape(shape)
    table = group_stats(x, tuple(dims))
    assert table["count"].sum() == x.numel()
    # The mean of group means is the overall mean (every group has the same size).
    assert table["mean"].mean() == pytest.approx(x.double().mean().item())
    assert (table["var"] >= 0).all()


def test_labels_one_row_per_token():
    table = group_stats(_lesson_inputs(), -1, names=NAMES)
    assert isinstance(table.index, pd.MultiIndex)
    assert list(table.index.names) == ["sample", "token"]
    assert table.index.tolist() == [(0, 0), (0, 1), (0, 2), (1, 0), (1, 1), (1, 2)]
    assert list(table.columns) == ["count", "mean", "var", "std"]
    # Rows can be picked by label: sample 1, token 2.
    assert table.loc[(1, 2), "mean"] == pytest.approx(_lesson_inputs()[1, 2].double().mean().item())


def test_labels_one_row_per_sentence_and_per_feature():
    x = _lesson_inputs()
    per_sentence = group_stats(x, (1, 2), names=NAMES)
    assert per_sentence.index.name == "sample" and per_sentence.index.tolist() == [0, 1]
    per_feature = group_stats(x, (0, 1), names=NAMES)
    assert per_feature.index.name == "feature" and per_feature.index.tolist() == [0, 1, 2, 3]


def test_default_names_and_everything_reduced():
    x = torch.ones(2, 3)
    assert group_stats(x, 1).index.name == "dim0"
    assert group_stats(x, 0).index.name == "dim1"
    everything = group_stats(x, (0, 1))
    assert everything.index.tolist() == ["all"] and everything["count"].item() == 6


def test_reads_a_tensor_that_requires_grad_without_changing_it():
    x = torch.randn(2, 4, requires_grad=True)
    before = x.detach().clone()
    table = group_stats(x, -1)
    assert table["mean"].tolist() == pytest.approx(before.double().mean(-1).tolist())
    assert torch.equal(x.detach(), before) and x.grad is None


def test_rounded_rounds_floats_only_and_drops_the_minus_from_zero():
    frame = pd.DataFrame({"count": [4, 4], "mean": [-3e-8, 1.23456789], "name": ["a", "b"]})
    out = rounded(frame, 4)
    assert out["count"].dtype == frame["count"].dtype and out["name"].tolist() == ["a", "b"]
    assert out["mean"].tolist() == [0.0, 1.2346]
    assert str(out.loc[0, "mean"]) == "0.0"  # not "-0.0"
    assert frame.loc[0, "mean"] == -3e-8  # the input is not changed
    both = rounded(pd.concat({"x": frame, "y": frame}, axis=1), 2)
    assert both[("y", "mean")].tolist() == [0.0, 1.23] and both[("x", "count")].tolist() == [4, 4]
