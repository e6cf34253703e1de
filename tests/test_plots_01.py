"""Notebook 01's figures of experiments (drift, gamma/beta fit), asserted on their artists' data."""

from __future__ import annotations

import matplotlib.pyplot as plt
import numpy as np
import pytest

from helpers import plots
from helpers.experiments import drift_runs, fit_gamma_beta


@pytest.fixture(scope="module")
def runs():
    return drift_runs(steps=10)


@pytest.fixture(autouse=True)
def close_figures():
    yield
    plt.close("all")


def _band(ax, gid):
    """The (step, low, high) of a fill_between band, read from its polygon."""
    (band,) = [c for c in ax.collections if c.get_gid() == gid]
    vertices = band.get_paths()[0].vertices
    return vertices


def test_drift_figure_has_one_axis_per_model_and_a_ratio_axis(runs):
    fig = plots.drift_figure(runs)
    assert len(fig.axes) == 3 and fig.dpi == plots.DPI
    ax_no, ax_ln, ax_ratio = fig.axes
    assert ax_no.get_title().startswith("no norm: std ") and ax_ln.get_title().startswith("LayerNorm")
    assert ax_no.get_ylim() == ax_ln.get_ylim()  # one scale for both models


@pytest.mark.parametrize("k, model", [(0, "no norm"), (1, "LayerNorm")])
def test_drift_figure_draws_each_models_percentiles(runs, k, model):
    ax = plots.drift_figure(runs).axes[k]
    run = runs[runs["model"] == model]
    median = plots.find_line(ax, "p50")
    assert median.get_xdata().tolist() == list(range(11))
    assert median.get_ydata().tolist() == pytest.approx(run["p50"].tolist())
    for gid, low, high in (("p05-p95", "p05", "p95"), ("p25-p75", "p25", "p75")):
        ys = _band(ax, gid)[:, 1]
        assert ys.min() == pytest.approx(run[low].min()) and ys.max() == pytest.approx(run[high].max())
    std = run["std"].tolist()
    assert ax.get_title() == f"{model}: std {std[0]:.2f} → {std[-1]:.2f}"


def test_drift_figure_ratio_lines_start_at_one(runs):
    ax = plots.drift_figure(runs).axes[2]
    for model in ("no norm", "LayerNorm"):
        run = runs[runs["model"] == model]
        ratio = plots.find_line(ax, model).get_ydata()
        assert ratio[0] == 1.0
        assert ratio.tolist() == pytest.approx((run["std"] / run["std"].iloc[0]).tolist())


def test_gamma_beta_fit_figure_draws_every_feature_and_the_loss():
    frame = fit_gamma_beta(steps=5)
    fig = plots.gamma_beta_fit_figure(frame, targets={"gamma": 3.0, "beta": 2.0})
    ax_p, ax_loss = fig.axes
    for j in range(4):
        feature = frame[frame["feature"] == j]
        assert plots.find_line(ax_p, f"gamma[{j}]").get_ydata().tolist() == pytest.approx(feature["gamma"].tolist())
        assert plots.find_line(ax_p, f"beta[{j}]").get_ydata().tolist() == pytest.approx(feature["beta"].tolist())
    assert plots.find_line(ax_p, "gamma target").get_ydata()[0] == 3.0
    assert plots.find_line(ax_p, "beta target").get_ydata()[0] == 2.0
    loss = plots.find_line(ax_loss, "loss")
    assert np.array_equal(loss.get_xdata(), np.arange(6))
    assert loss.get_ydata().tolist() == pytest.approx(frame.groupby("step")["loss"].first().tolist())
    assert ax_loss.get_yscale() == "log"


def test_gamma_beta_fit_figure_without_targets_draws_none():
    ax_p = plots.gamma_beta_fit_figure(fit_gamma_beta(steps=2)).axes[0]
    assert not [line for line in ax_p.get_lines() if "target" in str(line.get_gid())]
