"""Notebook 07's figures on normalization-free Transformers, drawn from hand-made tables."""

import numpy as np
import pandas as pd
import pytest

from helpers import plots


def _runs():
    rows = [{"stage": "report", "variant": arm, "seed": s, "lr": 0.01, "step": step,
             "eval_loss": 2.7 - 0.001 * step * (k + 1) + 0.01 * s}
            for k, arm in enumerate(("Pre-LN", "no norm")) for s in range(3) for step in range(0, 101, 10)]
    return pd.DataFrame(rows)


def test_the_curves_figure_draws_each_arm_s_median_and_the_levels():
    fig = plots.norm_free_curves_figure(_runs(), {"one": ["Pre-LN", "no norm"]}, levels={"no copy": 2.7, "floor": 1.3})
    ax = fig.axes[0]
    median = plots.find_line(ax, "Pre-LN, lr 0.01")
    np.testing.assert_allclose(median.get_ydata(), 2.7 - 0.001 * np.arange(0, 101, 10) + 0.01)
    assert plots.find_line(ax, "floor").get_ydata()[0] == 1.3
    with pytest.raises(ValueError, match="no reported runs of arm 'DyT'"):
        plots.norm_free_curves_figure(_runs(), {"one": ["DyT"]}, levels={})


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
    line, tanh = plots.find_line(ax, "line"), plots.find_line(ax, "tanh")
    grid = line.get_xdata()
    np.testing.assert_allclose(line.get_ydata(), 0.5 * grid + 0.1)
    np.testing.assert_allclose(tanh.get_ydata(), 2.0 * np.tanh(0.5 * grid))
    assert "trained" in ax.get_title()
    with pytest.raises(ValueError, match="'seed'"):
        plots.s_shape_figure(_maps(), ["final"], seed=3)
