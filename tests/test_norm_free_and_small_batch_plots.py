"""Deep dive 15's figures on normalization-free Transformers and on the CNN at small batches,
drawn from hand-made tables."""

import numpy as np
import pandas as pd

from helpers import plots
from helpers.plots.core import find_line


def _runs():
    rows = [{"stage": "report", "variant": arm, "seed": s, "lr": 0.01, "step": step,
             "eval_loss": 2.7 - 0.001 * step * (k + 1) + 0.01 * s}
            for k, arm in enumerate(("Pre-LN", "no norm")) for s in range(3) for step in range(0, 101, 10)]
    return pd.DataFrame(rows)


def test_the_curves_figure_draws_each_arm_s_median_and_the_levels():
    fig = plots.norm_free_curves_figure(_runs(), {"one": ["Pre-LN", "no norm"]}, levels={"no copy": 2.7, "floor": 1.3})
    ax = fig.axes[0]
    median = find_line(ax, "Pre-LN, lr 0.01")
    np.testing.assert_allclose(median.get_ydata(), 2.7 - 0.001 * np.arange(0, 101, 10) + 0.01)
    assert find_line(ax, "floor").get_ydata()[0] == 1.3


def _maps():
    x = np.linspace(-3, 3, 50)
    rows = []
    for moment in ("init", "trained"):
        rows.append({"kind": "fit", "seed": 0, "moment": moment, "layer": "final", "r2_linear": 0.9, "r2_tanh": 0.95,
                     "slope": 0.5, "intercept": 0.1, "a": 2.0, "b": 0.5, "d": 0.0, "c": 0.0})
        rows += [{"kind": "point", "seed": 0, "moment": moment, "layer": "final", "x": v, "y": np.tanh(v)} for v in x]
    return pd.DataFrame(rows)


def test_the_s_shape_figure_draws_the_stored_fits():
    fig = plots.s_shape_figure(_maps(), ["final"])
    assert len(fig.axes) == 2
    ax = fig.axes[1]
    line, tanh = find_line(ax, "line"), find_line(ax, "tanh")
    grid = line.get_xdata()
    np.testing.assert_allclose(line.get_ydata(), 0.5 * grid + 0.1)
    np.testing.assert_allclose(tanh.get_ydata(), 2.0 * np.tanh(0.5 * grid))
    assert "trained" in ax.get_title()


def test_the_small_batch_figure_draws_each_norm_s_mean_error_in_percent():
    table = pd.DataFrame([{"norm": n, "batch_size": b, "error": e, "error_low": e - 0.01, "error_high": e + 0.02,
                           "train_mode_error": 0.5 if n == "BatchNorm" else np.nan}
                          for n, base in (("BatchNorm", 0.2), ("GroupNorm", 0.1)) for b, e in ((2, base + 0.1),
                                                                                              (32, base))])
    finals = pd.DataFrame([{"norm": "GroupNorm", "batch_size": 2, "error": 0.2}])
    fig = plots.small_batch_figure(table, finals, chance=5 / 6)
    ax = fig.axes[0]
    gn = [c for c in ax.containers if c.lines[0].get_gid() == "GroupNorm"][0]
    np.testing.assert_allclose(gn.lines[0].get_ydata(), [20.0, 10.0])
    assert find_line(ax, "BatchNorm, train() mode").get_ydata().tolist() == [50.0, 50.0]
    assert [t.get_text() for t in ax.get_xticklabels()] == ["2", "32"]


def test_the_examples_figure_has_one_titled_panel_per_image():
    examples = pd.DataFrame({"name": ["a", "b"], "image": [np.zeros((4, 4)), np.ones((4, 4))]})
    fig = plots.class_examples_figure(examples)
    assert [ax.get_title() for ax in fig.axes] == ["a", "b"]
