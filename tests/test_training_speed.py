"""Notebook 05's helpers: the adding task, the stacked RNN, the summaries, figures, widget, exercises."""

from __future__ import annotations

import math

import pandas as pd
import pytest
import torch

from helpers import plots
from helpers import training_speed as ts
from helpers.checks import check
from helpers.plots import find_line
from helpers.widgets.training_speed import SHOW, WHAT, speed_demo, speed_state


@pytest.fixture(scope="module")
def runs() -> pd.DataFrame:
    return ts.rnn_runs(seeds=(0, 1), lrs=(0.01, 1.0), steps=40)


def test_adding_task_marks_two_positions_one_per_half():
    x, y = ts.adding_task(64, 10, torch.Generator().manual_seed(0))
    marks = x[..., 1]
    assert (marks.sum(1) == 2).all()
    assert (marks[:, :5].sum(1) == 1).all() and (marks[:, 5:].sum(1) == 1).all()
    assert torch.allclose(y, (x[..., 0] * marks).sum(1))
    assert ((x[..., 0] >= 0) & (x[..., 0] < 1)).all()


def test_stacked_rnn_models_match_single_unstacked_models():
    """Model m of the stack computes exactly what a plain RNN with its weights computes."""
    gens = [torch.Generator().manual_seed(s) for s in (0, 1)]
    model = ts.StackedRNN(2, 1, generators=gens).eval()
    x = ts.adding_task(4, 6, torch.Generator().manual_seed(9))[0].expand(model.n_models, -1, -1, -1)
    prediction, pre = model(x)
    for m, variant in enumerate(v for v in ts.VARIANTS for _ in range(2)):
        h = torch.zeros(4, 16)
        for t in range(6):
            a = x[m, :, t] @ model.w_x[m] + h @ model.w_h[m]
            if variant != "no norm":
                a = torch.nn.functional.layer_norm(a, (16,)) * model.gain[m]
            h = torch.tanh(a + model.bias[m])
        torch.testing.assert_close(prediction[m], (h @ model.w_o[m] + model.bias_o[m]).squeeze(-1))
    # the same seed starts from the same weights in every variant
    torch.testing.assert_close(model.w_h[0], model.w_h[2])
    torch.testing.assert_close(model.w_h[0], model.w_h[4])
    assert not torch.equal(model.w_h[0], model.w_h[1])
    assert pre.shape == (model.n_models, 4 * 6, 16)


def test_stacked_models_do_not_share_gradients():
    gens = [torch.Generator().manual_seed(0)]
    model = ts.StackedRNN(1, 1, generators=gens)
    x, y = ts.adding_task(4, 6, torch.Generator().manual_seed(1))
    prediction, _ = model(x.expand(model.n_models, -1, -1, -1), torch.Generator().manual_seed(2))
    ((prediction[1] - y) ** 2).mean().backward()  # only the LayerNorm model's loss
    assert model.w_h.grad[1].abs().sum() > 0
    assert model.w_h.grad[0].abs().sum() == 0 and model.w_h.grad[2].abs().sum() == 0


def test_runs_are_tidy_seeded_and_reproducible(runs):
    assert list(runs.columns) == ["step", "seed", "variant", "lr", "loss", "pre_mean", "pre_std"]
    assert len(runs) == 40 * 3 * 2 * 2
    assert (runs.groupby(["variant", "lr", "seed"]).size() == 40).all()
    again = ts.rnn_runs(seeds=(0, 1), lrs=(0.01, 1.0), steps=40)
    pd.testing.assert_frame_equal(runs, again)


def test_layer_norm_input_starts_standardized_and_no_norm_does_not(runs):
    first = runs[(runs["step"] == 0)].groupby("variant")
    # LN's tanh input is LN(a) * 1 + 0 at step 0: mean 0 and std 1 per token, so overall too
    assert first["pre_mean"].apply(lambda s: s.abs().max())["LayerNorm"] < 1e-5
    assert first["pre_std"].apply(lambda s: (s - 1).abs().max())["LayerNorm"] < 1e-3
    assert first["pre_std"].apply(lambda s: (s - 1).abs().max())["no norm"] > 0.05


def test_training_lowers_the_loss_at_a_small_rate(runs):
    part = runs[runs["lr"] == 0.01]
    start = part[part["step"] < 5].groupby("variant")["loss"].mean()
    end = part[part["step"] >= 35].groupby("variant")["loss"].mean()
    assert (end < start).all()


def test_steps_to_threshold_is_the_first_smoothed_crossing():
    frame = pd.DataFrame({"step": range(6), "seed": 0, "variant": "no norm", "lr": 0.1,
                          "loss": [1.0, 0.5, 0.2, 0.04, 0.3, 0.01]})
    assert ts.steps_to_threshold(frame, threshold=0.05, window=1)["steps"].item() == 3
    assert ts.steps_to_threshold(frame, threshold=0.2, window=2)["steps"].item() == 3  # (0.2+0.04)/2
    assert math.isnan(ts.steps_to_threshold(frame, threshold=0.001, window=1)["steps"].item())


def test_diverged_runs_stay_inf_and_lr_table_shape(runs):
    assert not runs["loss"].isna().any()
    diverged = runs[runs["loss"] == math.inf]
    for _, run in diverged.groupby(["variant", "lr", "seed"]):
        last = runs[(runs["variant"] == run["variant"].iloc[0]) & (runs["lr"] == run["lr"].iloc[0])
                    & (runs["seed"] == run["seed"].iloc[0]) & (runs["step"] > run["step"].min())]
        assert (last["loss"] == math.inf).all()
    table = ts.lr_table(runs)
    assert list(table.index) == list(ts.VARIANTS) and list(table.columns) == [0.01, 1.0]


def test_drift_table_on_hand_made_data():
    frame = pd.DataFrame({"step": [0, 1, 2] * 2, "seed": [0] * 3 + [1] * 3, "variant": "v",
                          "pre_mean": [0.0, 0.5, -1.0, 1.0, 1.0, 1.0], "pre_std": [1.0, 2.0, 1.5, 2.0, 2.0, 1.0]})
    row = ts.drift_table(frame).loc["v"]
    assert row["largest |mean shift|"] == pytest.approx((1.0 + 0.0) / 2)
    assert row["largest std ratio"] == pytest.approx((2.0 + 1.0) / 2)
    assert row["std at the end"] == pytest.approx((1.5 + 1.0) / 2)


def test_curves_figure_plots_the_mean_over_seeds(runs):
    part = runs[runs["lr"] == 0.01]
    fig = plots.curves_figure(part, column="pre_std", threshold=0.5)
    ax = fig.axes[0]
    expected = part[part["variant"] == "LayerNorm"].groupby("step")["pre_std"].mean().to_numpy()
    assert find_line(ax, "LayerNorm").get_ydata() == pytest.approx(expected)
    assert find_line(ax, "threshold").get_ydata()[0] == 0.5
    assert ax.get_yscale() == "linear"
    assert plots.curves_figure(part).axes[0].get_yscale() == "log"


def test_lr_heatmap_holds_log_of_the_table(runs):
    table = ts.lr_table(runs[runs["loss"] < math.inf])
    fig = plots.lr_heatmap_figure(table)
    data = fig.axes[0].get_images()[0].get_array()
    assert data.shape == table.shape
    assert data[0, 0] == pytest.approx(math.log10(table.iloc[0, 0]))


def test_speed_state_every_control_changes_what_is_shown(runs):
    base = speed_state(runs, 0.01, "no norm vs LayerNorm", "loss")
    other_lr = speed_state(runs, 1.0, "no norm vs LayerNorm", "loss")
    assert not base["curves"]["loss"].equals(other_lr["curves"]["loss"])
    for show, variants in SHOW.items():
        assert set(speed_state(runs, 0.01, show, "loss")["curves"]["variant"]) == set(variants)
    for what, column in WHAT.items():
        assert speed_state(runs, 0.01, "all three", what)["column"] == column
    with pytest.raises(ValueError, match="'lr' must be one of"):
        speed_state(runs, 0.5, "all three", "loss")


def test_speed_demo_redraws_on_each_control(runs):
    demo = speed_demo(runs)
    assert demo.controls["lr"].value == 1.0  # the second rate
    seen = {bytes(demo.image.value)}
    for name, value in (("lr", 0.01), ("show", "all three"), ("what", "tanh input: std")):
        demo.controls[name].value = value
        seen.add(bytes(demo.image.value))
    assert len(seen) == 4
    assert len(demo.figure.axes[0].get_lines()) == 3


def test_exercises_accept_the_reference_and_name_the_mistakes():
    assert check("first_step_below", ts._first_below)
    last = check("first_step_below", lambda loss, t: torch.nonzero(loss < t)[-1, 0] if (loss < t).any() else torch.tensor(-1))
    assert not last and "LAST" in last.message
    assert ts.check_noisy_layer_norm(ts._noisy_reference)
    wrong = ts.check_noisy_layer_norm(lambda a, shift, scale: a * scale + shift)
    assert not wrong and "normalize first" in wrong.message


def test_transformer_runs_are_tidy_and_variants_differ_only_by_ln():
    gens = [torch.Generator().manual_seed(0)]
    model = ts.StackedTransformer(1, generators=gens)
    torch.testing.assert_close(model.wq[0], model.wq[1])  # same seed, same weights
    x = ts.adding_task(3, 10, torch.Generator().manual_seed(1))[0].expand(2, -1, -1, -1)
    with torch.no_grad():
        model.normed.fill_(False)  # with LN switched off, both models are the same network
        out = model(x)
    torch.testing.assert_close(out[0], out[1])
    runs = ts.transformer_runs(seeds=(0, 1), steps=30)
    assert list(runs.columns) == ["step", "seed", "variant", "lr", "loss"]
    assert (runs.groupby(["variant", "seed"]).size() == 30).all()
    start = runs[runs["step"] < 3].groupby("variant")["loss"].mean()
    end = runs[runs["step"] >= 27].groupby("variant")["loss"].mean()
    assert (end < start).all()
