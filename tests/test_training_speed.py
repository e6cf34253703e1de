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


@pytest.fixture(scope="module")
def both_depths(runs) -> pd.DataFrame:
    deep = ts.rnn_runs(seeds=(0, 1), lrs=(0.01, 1.0), steps=40, depth=2, variants=("no norm", "LayerNorm"))
    return pd.concat([runs, deep], ignore_index=True)


def test_adding_task_marks_two_positions_one_per_half():
    x, y = ts.adding_task(64, 10, torch.Generator().manual_seed(0))
    marks = x[..., 1]
    assert (marks.sum(1) == 2).all()
    assert (marks[:, :5].sum(1) == 1).all() and (marks[:, 5:].sum(1) == 1).all()
    assert torch.allclose(y, (x[..., 0] * marks).sum(1))
    assert ((x[..., 0] >= 0) & (x[..., 0] < 1)).all()


def _plain_rnn(model: ts.StackedRNN, m: int, x: torch.Tensor, noise=None) -> tuple[torch.Tensor, torch.Tensor]:
    """Model ``m`` of the stack as a plain layer-by-layer, step-by-step loop: (prediction, top layer's pre)."""
    batch, seq_len, _ = x.shape
    normed = m >= model.n_plain
    h = [torch.zeros(batch, model.hidden) for _ in range(model.depth)]
    pres = []
    for t in range(seq_len):
        below = x[:, t]
        for layer in range(model.depth):
            w_in = model.w_x[m] if layer == 0 else model.w_up[m, layer - 1]
            a = below @ w_in + h[layer] @ model.w_h[m, layer]
            if normed:
                a = torch.nn.functional.layer_norm(a, (model.hidden,)) * model.gain[m, layer]
                if noise is not None:
                    a = a * noise[1][m, layer] + noise[0][m, layer]
            pre = a + model.bias[m, layer]
            h[layer] = below = torch.tanh(pre)
        pres.append(pre)
    return (h[-1] @ model.w_o[m] + model.bias_o[m]).squeeze(-1), torch.cat(pres)


@pytest.mark.parametrize("depth", [1, 3])
def test_stacked_rnn_models_match_plain_layer_by_layer_loops(depth):
    """The wavefront computes, for every model, what a plain RNN loop with its weights computes."""
    gens = [torch.Generator().manual_seed(s) for s in (0, 1)]
    model = ts.StackedRNN(2, 1, depth=depth, generators=gens).eval()
    with torch.no_grad():  # give every layer its own gain and bias, so that a mix-up shows
        model.gain.uniform_(0.5, 1.5, generator=torch.Generator().manual_seed(3))
        model.bias.uniform_(-0.5, 0.5, generator=torch.Generator().manual_seed(4))
    x = ts.adding_task(4, 6, torch.Generator().manual_seed(9))[0]
    prediction, pre = model(x.expand(model.n_models, -1, -1, -1))
    assert [v for v, _ in model.arms] == list(ts.VARIANTS) and model.n_plain == 2
    for m in range(model.n_models):
        expected, expected_pre = _plain_rnn(model, m, x)
        torch.testing.assert_close(prediction[m], expected)
        torch.testing.assert_close(pre[m], expected_pre)
    # the same seed starts from the same weights in every variant
    torch.testing.assert_close(model.w_h[0], model.w_h[2])
    torch.testing.assert_close(model.w_h[0], model.w_h[4])
    assert not torch.equal(model.w_h[0], model.w_h[1])
    assert pre.shape == (model.n_models, 4 * 6, 16)


def test_noisy_models_get_their_own_noise_in_training_only():
    gens = [torch.Generator().manual_seed(0)]
    model = ts.StackedRNN(1, 1, noises=(0.1, 0.5), depth=2, generators=gens)
    assert model.arms == [("no norm", 0.0), ("LayerNorm", 0.0), ("noisy LayerNorm", 0.1), ("noisy LayerNorm", 0.5)]
    x = ts.adding_task(4, 6, torch.Generator().manual_seed(1))[0]
    stacked = x.expand(model.n_models, -1, -1, -1)
    prediction, _ = model(stacked, torch.Generator().manual_seed(2))
    # the same draws, by hand: shift then scale, (models, depth, 1, hidden), times each model's strength
    g = torch.Generator().manual_seed(2)
    shape = (model.n_models, 2, 1, 16)
    shift = (torch.rand(shape, generator=g) * 2 - 1) * model.noise
    scale = 1 + torch.rand(shape, generator=g) * 2 * model.noise
    for m in range(model.n_models):
        torch.testing.assert_close(prediction[m], _plain_rnn(model, m, x, (shift, scale))[0])
    spread = (shift.abs().amax((1, 2, 3)), scale.amax((1, 2, 3)))
    assert spread[0][:2].eq(0).all() and spread[1][:2].eq(1).all()  # no noise without the noisy variant
    assert 0 < spread[0][2] <= 0.1 < spread[0][3] <= 0.5
    with torch.no_grad():
        evaluated = model.eval()(stacked)[0]
    torch.testing.assert_close(evaluated[1], evaluated[2])  # in eval mode noisy LN is LN
    torch.testing.assert_close(evaluated[1], evaluated[3])


def test_deeper_stacks_keep_the_first_layers_weights():
    """A seed's layer-0 and read-out weights do not depend on the depth: depths differ only by the extra layers."""
    one, three = (ts.StackedRNN(1, 1, depth=d, generators=[torch.Generator().manual_seed(0)]) for d in (1, 3))
    torch.testing.assert_close(one.w_x, three.w_x)
    torch.testing.assert_close(one.w_o, three.w_o)
    torch.testing.assert_close(one.w_h[:, 0], three.w_h[:, 0])
    assert one.w_up.shape == (3, 0, 16, 16) and three.w_up.shape == (3, 2, 16, 16)


def test_arms_validate_their_arguments():
    assert ts.arms(("LayerNorm", "no norm")) == [("no norm", 0.0), ("LayerNorm", 0.0)]  # VARIANTS order
    with pytest.raises(ValueError, match="argument 'variants' must be a non-empty selection"):
        ts.arms(("batch norm",))
    with pytest.raises(ValueError, match="argument 'noises' must hold strengths > 0"):
        ts.arms(ts.VARIANTS, (0.0,))
    with pytest.raises(ValueError, match="argument 'depth' must be at least 1, got 0"):
        ts.StackedRNN(1, 1, depth=0, generators=[torch.Generator()])


def test_stacked_models_do_not_share_gradients():
    gens = [torch.Generator().manual_seed(0)]
    model = ts.StackedRNN(1, 1, generators=gens)
    x, y = ts.adding_task(4, 6, torch.Generator().manual_seed(1))
    prediction, _ = model(x.expand(model.n_models, -1, -1, -1), torch.Generator().manual_seed(2))
    ((prediction[1] - y) ** 2).mean().backward()  # only the LayerNorm model's loss
    assert model.w_h.grad[1].abs().sum() > 0
    assert model.w_h.grad[0].abs().sum() == 0 and model.w_h.grad[2].abs().sum() == 0


def test_runs_are_tidy_seeded_and_reproducible(runs):
    assert list(runs.columns) == ["step", "seed", "depth", "variant", "noise", "lr", "loss", "pre_mean", "pre_std"]
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
    assert list(table.index) == ["no norm", "LayerNorm", "noisy LayerNorm 0.25"]
    assert list(table.columns) == [0.01, 1.0]


def test_labels_name_the_noise_and_the_depth_when_they_vary(runs, both_depths):
    assert list(ts.labels(runs).unique()) == ["no norm", "LayerNorm", "noisy LayerNorm 0.25"]
    assert set(ts.labels(both_depths)) == {"no norm, depth 1", "LayerNorm, depth 1", "noisy LayerNorm 0.25, depth 1",
                                           "no norm, depth 2", "LayerNorm, depth 2"}
    assert list(ts.lr_table(both_depths).index)[-1] == "LayerNorm, depth 2"


def test_noise_table_gathers_drift_and_loss_per_strength():
    swept = ts.rnn_runs(seeds=(0, 1), lrs=(0.01,), steps=30, noises=(0.1, 0.5))
    table = ts.noise_table(swept, 0.01)
    assert list(table.index) == [0.0, 0.1, 0.5]
    drift, final = ts.drift_table(swept), ts.lr_table(swept)[0.01]
    assert table.loc[0.5, "largest |mean shift|"] == drift.loc["noisy LayerNorm 0.5", "largest |mean shift|"]
    assert table.loc[0.1, "final loss"] == final["noisy LayerNorm 0.1"]
    assert table.loc[0.0, "final loss"] == final["LayerNorm"]
    # stronger noise moves the tanh input further: shifts are drawn up to the strength itself
    assert table["largest |mean shift|"].is_monotonic_increasing
    with pytest.raises(ValueError, match="argument 'lr'"):
        ts.noise_table(swept, 0.1)


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

    # labels stay readable: dark text on the light (low-loss) cells, white on the dark ones
    texts = {t.get_text(): t.get_color() for t in fig.axes[0].texts}
    assert texts[f"{table.min().min():.3f}"] == "k" and texts[f"{table.max().max():.3f}"] == "w"


def test_noisy_arms_get_distinct_oranges_darker_for_stronger_noise():
    from matplotlib.colors import to_rgb

    colours = [to_rgb(plots.arm_colour("noisy LayerNorm", n)) for n in (0.1, 0.25, 0.5)]
    assert len(set(colours)) == 3
    assert sum(colours[0]) > sum(colours[1]) > sum(colours[2])  # darker with strength
    assert plots.arm_colour("LayerNorm") == plots.VARIANT_COLOURS["LayerNorm"]


def test_speed_state_every_control_changes_what_is_shown(both_depths):
    base = speed_state(both_depths, 0.01, 1, "no norm vs LayerNorm", "loss")
    other_lr = speed_state(both_depths, 1.0, 1, "no norm vs LayerNorm", "loss")
    deeper = speed_state(both_depths, 0.01, 2, "no norm vs LayerNorm", "loss")
    assert not base["curves"]["loss"].equals(other_lr["curves"]["loss"])
    assert not base["curves"]["loss"].reset_index(drop=True).equals(deeper["curves"]["loss"].reset_index(drop=True))
    for show, variants in SHOW.items():
        state = speed_state(both_depths, 0.01, 1, show, "loss")
        assert set(state["curves"]["variant"]) == set(variants) and not state["missing"]
    for what, column in WHAT.items():
        assert speed_state(both_depths, 0.01, 1, "all three", what)["column"] == column
    # only the default noise strength is shown
    assert set(base["curves"]["noise"]) == {0.0}
    assert set(speed_state(both_depths, 0.01, 1, "all three", "loss")["curves"]["noise"]) == {0.0, ts.NOISE}


def test_speed_state_names_what_was_not_trained_and_refuses_what_does_not_exist(both_depths):
    state = speed_state(both_depths, 0.01, 2, "all three", "loss")
    assert state["variants"] == ("no norm", "LayerNorm") and state["missing"] == ("noisy LayerNorm",)
    assert (state["curves"]["seed"].groupby(state["curves"]["variant"]).nunique() == 2).all()
    with pytest.raises(ValueError, match="'lr' must be one of"):
        speed_state(both_depths, 0.5, 1, "all three", "loss")
    with pytest.raises(ValueError, match="'depth' must be one of"):
        speed_state(both_depths, 0.01, 4, "all three", "loss")


def test_speed_demo_redraws_on_each_control(both_depths):
    demo = speed_demo(both_depths)
    assert demo.controls["lr"].value == 0.01 and demo.controls["depth"].value == 1
    seen = {bytes(demo.image.value)}
    for name, value in (("lr", 1.0), ("depth", 2), ("show", "all three"), ("what", "tanh input: std")):
        demo.controls[name].value = value
        seen.add(bytes(demo.image.value))
    assert len(seen) == 5
    assert len(demo.figure.axes[0].get_lines()) == 2  # noisy LN was not trained at depth 2
    assert "not trained at depth 2: noisy LayerNorm" in demo.figure.axes[0].get_title()
    demo.controls["depth"].value = 1
    assert len(demo.figure.axes[0].get_lines()) == 3


def test_exercises_accept_the_reference_and_name_the_mistakes():
    assert check("first_step_below", ts._first_below)
    last = check("first_step_below", lambda loss, t: torch.nonzero(loss < t)[-1, 0] if (loss < t).any() else torch.tensor(-1))
    assert not last and "LAST" in last.message
    assert "hands in the answer" in ts.check_noisy_layer_norm(ts._noisy_reference).message

    def by_hand(a, shift, scale):
        mean = a.mean(-1, keepdim=True)
        return (a - mean) / torch.sqrt(((a - mean) ** 2).mean(-1, keepdim=True) + 1e-5) * scale + shift

    assert ts.check_noisy_layer_norm(by_hand)
    wrong = ts.check_noisy_layer_norm(lambda a, shift, scale: a * scale + shift)
    assert not wrong and "normalize first" in wrong.message


def test_transformer_runs_are_tidy_and_variants_differ_only_by_ln():
    gens = [torch.Generator().manual_seed(0)]
    model = ts.StackedTransformer(1, 2, generators=gens)
    assert model.wq.shape[0] == 4  # (no norm, LN) x 2 rates x 1 seed
    torch.testing.assert_close(model.wq[0], model.wq[3])  # same seed, same weights
    x = ts.adding_task(3, 10, torch.Generator().manual_seed(1))[0].expand(4, -1, -1, -1)
    with torch.no_grad():
        model.normed.fill_(False)  # with LN switched off, all models are the same network
        out = model(x)
    torch.testing.assert_close(out[0], out[3])
    runs = ts.transformer_runs(seeds=(0, 1), lrs=(0.01, 0.03), steps=30)
    assert list(runs.columns) == ["step", "seed", "variant", "lr", "loss"]
    assert (runs.groupby(["variant", "lr", "seed"]).size() == 30).all()
    first = runs[runs["step"] == 0].set_index(["variant", "lr", "seed"])["loss"]
    assert first.xs(0.01, level="lr").equals(first.xs(0.03, level="lr"))  # rates differ only after step 0
    later = runs[runs["step"] == 5].set_index(["variant", "lr", "seed"])["loss"]
    assert not later.xs(0.01, level="lr").equals(later.xs(0.03, level="lr"))
    start = runs[runs["step"] < 3].groupby("variant")["loss"].mean()
    end = runs[runs["step"] >= 27].groupby("variant")["loss"].mean()
    assert (end < start).all()
