"""helpers.experiments.ln_input_output: the line and tanh fits, the verdicts' words, and the stored experiment's rate."""

import numpy as np
import pandas as pd
import pytest

from helpers.evidence import runner
from helpers.experiments import ln_input_output as nf


def test_a_line_is_fitted_exactly_and_a_tanh_removes_nothing_from_it():
    x = np.linspace(-3, 3, 200)
    fit = nf.fit_s_shape(x, 0.7 * x - 0.2)
    assert (fit["slope"], fit["intercept"]) == pytest.approx((0.7, -0.2))
    assert fit["r2_linear"] == pytest.approx(1.0)
    assert fit["removed"] == 0.0


def test_a_tanh_cloud_is_fitted_by_the_tanh_and_not_by_the_line():
    rng = np.random.default_rng(0)
    x = rng.normal(0, 2, 3000)
    y = 1.5 * np.tanh(0.8 * x + 0.1) - 0.3 + rng.normal(0, 0.05, x.size)
    fit = nf.fit_s_shape(x, y)
    assert fit["r2_tanh"] > 0.99 > fit["r2_linear"]
    assert fit["removed"] > 0.8
    assert (fit["a"], fit["b"], fit["d"], fit["c"]) == pytest.approx((1.5, 0.8, 0.1, -0.3), abs=0.05)


def test_the_tanh_fit_is_never_worse_than_the_line():
    rng = np.random.default_rng(1)
    x = rng.normal(size=500)
    y = x ** 3 + rng.normal(size=500)  # neither a line nor a tanh: an anti-S
    fit = nf.fit_s_shape(x, y)
    assert fit["r2_tanh"] >= fit["r2_linear"] and 0 <= fit["removed"] <= 1


def test_layer_names_follow_the_models_norm_order():
    assert nf.layer_names(2) == ["block 1, attention", "block 1, MLP", "block 2, attention", "block 2, MLP",
                                 "final"]


def test_a_short_run_fits_every_ln_at_both_moments_and_samples_its_points():
    frame = nf.ln_input_output((5, 6), steps=3, blocks=2, points=7, point_seeds=(6,))
    fits, points = frame[frame["kind"] == "fit"], frame[frame["kind"] == "point"]
    assert len(fits) == 2 * 2 * 5 and set(fits["moment"]) == {"init", "trained"}
    assert len(points) == 2 * 5 * 7 and set(points["seed"]) == {6}
    # LN's outputs: each token is standardized over 32 units, so no element exceeds sqrt(31)
    assert points["y"].abs().max() < np.sqrt(31)
    assert fits[["r2_linear", "r2_tanh", "removed"]].notna().all().all()


def _frame(removed_by_layer):
    rows = [{"kind": "fit", "seed": s, "moment": m, "layer": layer, "removed": r + 0.01 * s, "r2_linear": 0.9,
             "r2_tanh": 0.95}
            for m in ("init", "trained") for layer, r in removed_by_layer.items() for s in range(10)]
    return pd.DataFrame(rows)


def test_the_verdict_words_follow_the_interval():
    out = nf.s_shape_verdicts(_frame({"a": 0.30, "b": 0.0, "c": 0.05}))
    assert out["map, trained, a"].startswith("S-shaped")
    assert out["map, trained, b"].startswith("close to a line")
    assert out["map, trained, c"].startswith("undecided")
    assert out["S-shaped LNs, trained"].startswith("1 of 3")


def test_the_experiment_trains_at_pre_ln_s_tuned_rate():
    best = {r["arm"]: r["best_lr"] for r in runner.load("small_transformer").meta["best_rates"]}
    assert best['["Pre-LN"]'] == nf.S_LR
    assert runner.experiment("ln_input_output").fixed["lr"] == nf.S_LR
