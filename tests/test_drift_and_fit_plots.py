"""Figures of experiments, asserted on their artists' data: drift (deep dive 13) and the gamma/beta
fit (deep dive 14)."""

from __future__ import annotations

import matplotlib.pyplot as plt
import numpy as np
import pytest

from helpers import plots
from helpers.experiments.drift import drift_runs, fit_gamma_beta
from helpers.plots.core import DPI, find_line
from helpers.plots.formula import DRIFT_PANELS


@pytest.fixture(scope="module")
def runs():
    return drift_runs(steps=30, dense_until=10, every=5)


@pytest.fixture(autouse=True)
def close_figures():
    yield
    plt.close("all")


def _band(ax, gid):
    """The (step, low, high) of a fill_between band, read from its polygon."""
    (band,) = [c for c in ax.collections if c.get_gid() == gid]
    vertices = band.get_paths()[0].vertices
    return vertices


def _run(runs, key):
    return runs[(runs["model"] == key[0]) & (runs["site"] == key[1])]


def test_drift_figure_has_three_distribution_axes_and_three_below(runs):
    fig = plots.drift_figure(runs)
    assert len(fig.axes) == 6 and fig.dpi == DPI
    titles = [ax.get_title().split("\n")[0] for ax in fig.axes[:3]]
    assert titles == list(DRIFT_PANELS.values())
    assert fig.axes[0].get_ylim() == fig.axes[1].get_ylim() == fig.axes[2].get_ylim()  # one scale
    assert all(ax.get_xscale() == "symlog" for ax in fig.axes)


@pytest.mark.parametrize("k", [0, 1, 2])
def test_drift_figure_draws_each_runs_percentiles(runs, k):
    key, title = list(DRIFT_PANELS.items())[k]
    ax = plots.drift_figure(runs).axes[k]
    run = _run(runs, key)
    median = find_line(ax, "p50")
    assert median.get_xdata().tolist() == run["step"].tolist() == [*range(11), 15, 20, 25, 30]
    assert median.get_ydata().tolist() == pytest.approx(run["p50"].tolist())
    for gid, low, high in (("p05-p95", "p05", "p95"), ("p25-p75", "p25", "p75")):
        ys = _band(ax, gid)[:, 1]
        assert ys.min() == pytest.approx(run[low].min()) and ys.max() == pytest.approx(run[high].max())
    std = run["std"].tolist()
    assert ax.get_title() == f"{title}\nstd {std[0]:.2f} → {std[-1]:.2f}"


def test_drift_figure_ratio_and_token_lines(runs):
    fig = plots.drift_figure(runs)
    for key, title in DRIFT_PANELS.items():
        run = _run(runs, key)
        ratio = find_line(fig.axes[3], title).get_ydata()
        assert ratio[0] == 1.0
        assert ratio.tolist() == pytest.approx((run["std"] / run["std"].iloc[0]).tolist())
        tokens = find_line(fig.axes[5], title).get_ydata()
        assert tokens.tolist() == pytest.approx(run["token_mean_absmax"].tolist())


def test_drift_figure_plots_both_losses_and_the_level_of_answering_the_mean(runs):
    ax = plots.drift_figure(runs).axes[4]
    assert ax.get_yscale() == "log"
    for model in ("no norm", "LayerNorm"):
        run = runs[runs["model"] == model].drop_duplicates("step")
        assert find_line(ax, model).get_ydata().tolist() == pytest.approx(run["loss"].tolist())
    level = find_line(ax, "loss of the mean").get_ydata()
    assert list(level) == pytest.approx([runs["loss_of_mean"].iloc[0]] * 2)


def test_drift_figure_without_layer_norm_runs_hides_the_empty_panels(runs):
    fig = plots.drift_figure(runs[runs["model"] == "no norm"])
    assert [ax.get_visible() for ax in fig.axes[:3]] == [True, False, False]


def test_gamma_beta_fit_figure_draws_every_feature_and_the_loss():
    frame = fit_gamma_beta(steps=5)
    fig = plots.gamma_beta_fit_figure(frame, targets={"gamma": 3.0, "beta": 2.0})
    ax_p, ax_loss = fig.axes
    for j in range(4):
        feature = frame[frame["feature"] == j]
        assert find_line(ax_p, f"gamma[{j}]").get_ydata().tolist() == pytest.approx(feature["gamma"].tolist())
        assert find_line(ax_p, f"beta[{j}]").get_ydata().tolist() == pytest.approx(feature["beta"].tolist())
    assert find_line(ax_p, "gamma target").get_ydata()[0] == 3.0
    assert find_line(ax_p, "beta target").get_ydata()[0] == 2.0
    loss = find_line(ax_loss, "loss")
    assert np.array_equal(loss.get_xdata(), np.arange(6))
    assert loss.get_ydata().tolist() == pytest.approx(frame.groupby("step")["loss"].first().tolist())
    assert ax_loss.get_yscale() == "log"


def test_gamma_beta_fit_figure_without_targets_draws_none():
    ax_p = plots.gamma_beta_fit_figure(fit_gamma_beta(steps=2)).axes[0]
    assert not [line for line in ax_p.get_lines() if "target" in str(line.get_gid())]
