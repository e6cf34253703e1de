"""Deep dive 11's data: helpers.lessons.bn_vs_ln (statistics, pooling groups, running statistics,
padding, invariances, exercises), helpers.experiments.batch_size (the batch-size experiment) and
their figures, read from their data."""

from __future__ import annotations

import matplotlib.pyplot as plt
import pandas as pd
import pytest
import torch
import torch.nn.functional as F
from torch import nn

from helpers import plots
from helpers.evidence import runner
from helpers.experiments import batch_size
from helpers.experiments.batch_size import (
    NORMS,
    StackedMLP,
    batch_size_runs,
    batch_size_summary,
    make_task,
)
from helpers.lessons import bn_vs_ln
from helpers.lessons.bn_vs_ln import (
    PAPER_TABLE,
    batch_mean_noise,
    check_batch_norm_train,
    check_running_var_update,
    invariance_table,
    padding_pollution,
    pooling_groups,
)
from helpers.plots.core import find_line


@pytest.fixture(autouse=True)
def _close_figures():
    yield
    plt.close("all")


# ---------------------------------------------------------------- statistics and groups


@pytest.mark.parametrize("shape", [(4, 3), (2, 3, 4), (3, 7, 2)])
def test_pooling_groups_match_what_each_norm_normalizes_together(shape):
    x = torch.randn(shape, generator=torch.Generator().manual_seed(0), dtype=torch.float64)
    # BN's channels are the features: (batch, [seq_len,] features) -> (batch, features, [seq_len])
    bn_out = F.batch_norm(x.movedim(-1, 1), None, None, training=True, eps=1e-12).movedim(1, -1)
    ln_out = F.layer_norm(x, x.shape[-1:], eps=1e-12)
    for norm, out in (("BatchNorm", bn_out), ("LayerNorm", ln_out)):
        labels = pooling_groups(shape, norm)
        assert labels.shape == torch.Size(shape)
        for g in labels.unique():  # each group is standardized on its own: mean 0, variance 1
            members = out[labels == g]
            assert members.mean().abs() < 1e-9 and (members.var(unbiased=False) - 1).abs() < 1e-9
        # and the labels are not trivially one group: a wrong grouping fails the check above
        assert labels.unique().numel() > 1


def test_pooling_groups_sizes():
    assert torch.bincount(pooling_groups((2, 3, 4), "BatchNorm").flatten()).tolist() == [6] * 4
    assert torch.bincount(pooling_groups((2, 3, 4), "LayerNorm").flatten()).tolist() == [4] * 6


def test_pooling_figure_shows_each_groups_labels():
    groups = {(n, len(s)): pooling_groups(s, n) for n in ("BatchNorm", "LayerNorm") for s in [(4, 3), (2, 3, 4)]}
    fig = plots.pooling_figure(groups)
    by_gid = {ax.get_gid(): ax for ax in fig.axes}
    assert set(by_gid) == {"BatchNorm 2d", "LayerNorm 2d", "BatchNorm 3d sample 0", "BatchNorm 3d sample 1",
                           "LayerNorm 3d sample 0", "LayerNorm 3d sample 1"}
    assert (by_gid["LayerNorm 2d"].images[0].get_array() == groups[("LayerNorm", 2)].numpy()).all()
    assert (by_gid["BatchNorm 3d sample 1"].images[0].get_array() == groups[("BatchNorm", 3)][1].numpy()).all()
    assert (by_gid["LayerNorm 3d sample 1"].images[0].get_array() == groups[("LayerNorm", 3)][1].numpy()).all()


# ---------------------------------------------------------------- batch size


def test_batch_mean_noise_follows_one_over_sqrt_b():
    frame = batch_mean_noise((1, 4, 64), trials=4000, seed=1)
    assert frame["batch_size"].tolist() == [1, 4, 64]
    assert (frame["std_of_batch_mean"] / frame["theory"]).between(0.93, 1.07).all()
    fig = plots.batch_noise_figure(frame)
    assert list(find_line(fig.axes[0], "measured").get_ydata()) == frame["std_of_batch_mean"].tolist()
    assert list(find_line(fig.axes[0], "theory").get_ydata()) == pytest.approx([1, 0.5, 0.125])


def test_make_task_follows_its_rule():
    x, label = make_task(500, torch.Generator().manual_seed(0))
    rule = (x[:, 0] * x[:, 1] + 0.5 * torch.sin(3 * x[:, 2]) > 0).float()
    assert x.shape == (500, 8) and torch.equal(label, rule)
    assert 0.35 < label.mean() < 0.65


def test_stacked_mlp_starts_every_norm_from_the_same_weights_and_matches_nn_modules():
    gens = [torch.Generator().manual_seed(s) for s in (0, 1)]
    model = StackedMLP(2, generators=gens, width=8)
    w0 = model.weights[0]
    assert torch.equal(w0[0], w0[2]) and torch.equal(w0[0], w0[4]) and not torch.equal(w0[0], w0[1])
    x = torch.randn(6, 5, 8, generator=torch.Generator().manual_seed(3))
    out = model(x)
    assert out.shape == (6, 5)
    for m, norm in enumerate(["BatchNorm"] * 2 + ["LayerNorm"] * 2 + ["no norm"] * 2):
        h = x[m]
        for layer in range(2):
            h = h @ model.weights[layer][m] + model.biases[layer][m]
            if norm == "BatchNorm":
                h = F.batch_norm(h, None, None, training=True)
            elif norm == "LayerNorm":
                h = F.layer_norm(h, (8,))
            h = torch.relu(h)
        expected = (h @ model.weights[2][m] + model.biases[2][m]).squeeze(-1)
        torch.testing.assert_close(out[m], expected)
    # one training forward updated each BN model's running statistics, separately
    assert not torch.equal(model.running_mean0[:8], model.running_mean0[8:])


def test_gamma_and_beta_scale_and_shift_each_normalized_unit_and_leave_no_norm_alone():
    gens = lambda: [torch.Generator().manual_seed(s) for s in (0, 1)]  # noqa: E731
    model = StackedMLP(2, generators=gens(), width=8)
    assert len(list(model.parameters())) == 10
    x = torch.randn(6, 5, 8, generator=torch.Generator().manual_seed(3))
    before = model(x)  # gamma 1, beta 0 at the start
    with torch.no_grad():
        for p in (*model.gammas, *model.betas):
            p.add_(torch.randn(p.shape, generator=torch.Generator().manual_seed(4)))
    h = x[2] @ model.weights[0][2] + model.biases[0][2]  # model 2: LayerNorm, seed 0, first layer
    expected = torch.relu(F.layer_norm(h, (8,)) * model.gammas[0][2] + model.betas[0][2])
    inner = torch.relu(model._norm(torch.baddbmm(model.biases[0], x, model.weights[0]), 0))
    torch.testing.assert_close(inner[2], expected)
    torch.testing.assert_close(model(x)[4:], before[4:])  # no norm: gamma and beta unused
    model(x)[4:].sum().backward()
    assert all(p.grad is None or (p.grad == 0).all() for p in (*model.gammas, *model.betas))


def test_stacked_models_gradients_are_independent():
    gens = [torch.Generator().manual_seed(s) for s in (0, 1)]
    model = StackedMLP(2, generators=gens, width=8)
    x = torch.randn(6, 4, 8, generator=torch.Generator().manual_seed(3))
    model(x)[3].sum().backward()  # only model 3 (LayerNorm, seed 1) in the loss
    grads = model.weights[0].grad.abs().sum(dim=(1, 2))
    assert grads[3] > 0 and (grads[[0, 1, 2, 4, 5]] == 0).all()


def test_a_stacked_mlp_of_one_norm_is_that_norms_slice_of_the_full_one():
    gens = lambda: [torch.Generator().manual_seed(s) for s in (0, 1)]  # noqa: E731
    full, bn_only = StackedMLP(2, generators=gens(), width=8), StackedMLP(2, generators=gens(), width=8,
                                                                         norms=("BatchNorm",))
    x = torch.randn(6, 5, 8, generator=torch.Generator().manual_seed(3))
    torch.testing.assert_close(bn_only(x[:2]), full(x)[:2])
    ln_only = StackedMLP(2, generators=gens(), width=8, norms=("LayerNorm",))
    torch.testing.assert_close(ln_only(x[2:4]), full(x)[2:4])


def test_grouped_forward_is_training_mode_bn_on_each_group_and_leaves_the_buffers_alone():
    gens = [torch.Generator().manual_seed(s) for s in (0, 1)]
    model = StackedMLP(2, generators=gens, width=8, norms=("BatchNorm",)).eval()
    x = torch.randn(2, 12, 8, generator=torch.Generator().manual_seed(4))
    buffers = {k: v.clone() for k, v in model.named_buffers()}
    out = model(x, group=4)
    for k, v in model.named_buffers():
        assert torch.equal(v, buffers[k])
    expected = torch.cat([StackedMLP(2, generators=[torch.Generator().manual_seed(s) for s in (0, 1)], width=8,
                                     norms=("BatchNorm",)).train()(x[:, 4 * i:4 * i + 4]) for i in range(3)], dim=1)
    torch.testing.assert_close(out, expected)


def test_with_two_samples_each_bn_unit_fires_for_exactly_one_of_them():
    gens = [torch.Generator().manual_seed(0)]
    model = StackedMLP(1, generators=gens, width=16, norms=("BatchNorm",))
    h = torch.randn(1, 2, 16, generator=torch.Generator().manual_seed(1))
    fired = torch.relu(model._batch_norm(h, 0, group=2)) > 0.5
    assert (fired.sum(dim=1) == 1).all()  # every unit: one sample at ~1, the other at 0


def test_precise_statistics_are_each_bn_inputs_population_statistics_layer_by_layer():
    gens = [torch.Generator().manual_seed(s) for s in (0, 1)]
    model = StackedMLP(2, generators=gens, width=8, norms=("BatchNorm", "no norm"))
    x = torch.randn(4, 300, 8, generator=torch.Generator().manual_seed(5))
    model.train()(x[:, :16])  # one update: running statistics far from the population's
    model.set_precise_statistics(x)
    assert model.training  # the mode is restored
    pre0 = torch.baddbmm(model.biases[0], x, model.weights[0])[:2]  # (seeds, n, width), BN models
    torch.testing.assert_close(model.running_mean0, pre0.mean(1).reshape(-1))
    torch.testing.assert_close(model.running_var0, pre0.var(1, unbiased=True).reshape(-1))
    h = torch.relu(F.batch_norm(pre0.transpose(0, 1).reshape(300, 16), model.running_mean0, model.running_var0))
    pre1 = torch.baddbmm(model.biases[1][:2], h.reshape(300, 2, 8).transpose(0, 1), model.weights[1][:2])
    torch.testing.assert_close(model.running_mean1, pre1.mean(1).reshape(-1), atol=1e-5, rtol=1e-5)
    torch.testing.assert_close(model.running_var1, pre1.var(1, unbiased=True).reshape(-1), atol=1e-5, rtol=1e-5)


@pytest.fixture(scope="module")
def small_runs():
    # 3,200 samples: 1,600 steps at batch 2, enough for BN to stay at chance there while the other
    # arms learn (the result the last tests below read), in half the time 6,400 took
    return batch_size_runs(batch_sizes=(2, 64), seeds=(0, 1, 2), samples=3200, lr=0.03, lr_batch=64)


def test_batch_size_runs_see_the_same_samples_at_every_batch_size_with_a_scaled_rate(small_runs):
    assert len(small_runs) == 2 * 3 * 3
    assert set(small_runs["norm"]) == set(NORMS) and set(small_runs["batch_size"]) == {2, 64}
    assert (small_runs["samples_seen"] == 3200).all()
    assert small_runs.groupby("batch_size")["step"].first().to_dict() == {2: 1599, 64: 49}
    rates = small_runs.groupby("batch_size")["lr"].first()
    assert rates[64] == 0.03 and rates[2] == pytest.approx(0.03 * (2 / 64) ** 0.5)
    for column in ("test_accuracy", "train_mode_accuracy", "precise_accuracy"):
        assert small_runs[column].between(0, 1).all()
    # without BN, the three ways of measuring are one
    others = small_runs[small_runs["norm"] != "BatchNorm"]
    assert (others["train_mode_accuracy"] == others["test_accuracy"]).all()
    assert (others["precise_accuracy"] == others["test_accuracy"]).all()


def test_batch_size_runs_are_seeded_and_a_step_cap_trains_the_same_first_steps(small_runs):
    again = batch_size_runs(batch_sizes=(64,), seeds=(0, 1, 2), samples=3200, lr=0.03, lr_batch=64)
    pd.testing.assert_frame_equal(again, small_runs[small_runs["batch_size"] == 64].reset_index(drop=True))
    capped = batch_size_runs(batch_sizes=(64,), seeds=(0, 1, 2), samples=3200, lr=0.03, lr_batch=64, steps=50,
                             record=range(0, 50, 7))
    assert sorted(capped["step"].unique()) == list(range(0, 50, 7))
    pd.testing.assert_frame_equal(capped[capped["step"] == 49].reset_index(drop=True), again)


def test_bn_fails_at_batch_2_in_every_mode_and_learns_at_batch_64(small_runs):
    arms = batch_size.arm_accuracy(small_runs).groupby(level="batch_size").mean()
    assert arms.loc[2, "BatchNorm"] < arms.loc[2, "LayerNorm"] - 0.05
    assert arms.loc[2, "BatchNorm, train mode"] < 0.55 and arms.loc[2, "BatchNorm, precise statistics"] < 0.6
    assert arms.loc[64, "BatchNorm"] > 0.7


def test_batch_size_summary_and_figure(small_runs):
    summary = batch_size_summary(small_runs)
    assert list(summary.columns.get_level_values(0).unique()) == list(batch_size.ARMS)
    assert summary.index.tolist() == [2, 64]
    ln = small_runs[small_runs["norm"] == "LayerNorm"].groupby("batch_size")["test_accuracy"]
    assert summary[("LayerNorm", "mean")].tolist() == pytest.approx(ln.mean().tolist())
    assert summary[("LayerNorm", "min")].tolist() == pytest.approx(ln.min().tolist())
    bn = small_runs[small_runs["norm"] == "BatchNorm"].groupby("batch_size")["precise_accuracy"]
    assert summary[("BatchNorm, precise statistics", "max")].tolist() == pytest.approx(bn.max().tolist())
    fig = plots.batch_size_figure(summary, seeds=3, samples=3200)
    ax = fig.axes[0]
    for arm in batch_size.ARMS:
        assert list(find_line(ax, arm).get_ydata()) == pytest.approx(summary[(arm, "mean")].tolist())
    assert list(find_line(ax, "chance").get_ydata()) == [0.5, 0.5]
    assert ax.get_title().startswith("3 seeds, 3200 training samples each")


def test_recorded_steps_cover_the_first_20_and_the_last():
    from helpers.experiments.batch_size import _recorded_steps

    steps = _recorded_steps(6400)
    assert steps[:20] == list(range(20)) and steps[-1] == 6399 and len(steps) <= 32
    assert _recorded_steps(100)[-1] == 99 and _recorded_steps(10) == list(range(10))


def _gap_frame(bn, ln, none=None):
    """A stored-experiment-like table at batch 2: one row per (norm, seed) at the last step."""
    none = ln if none is None else none
    rows = [{"norm": norm, "batch_size": 2, "seed": s, "step": 99, "test_accuracy": acc,
             "train_mode_accuracy": acc, "precise_accuracy": acc}
            for norm, accs in (("BatchNorm", bn), ("LayerNorm", ln), ("no norm", none))
            for s, acc in enumerate(accs)]
    early = [{**r, "step": 0, "test_accuracy": 0.5} for r in rows]  # earlier steps are ignored
    return pd.DataFrame(early + rows)


def test_accuracy_gaps_pair_seeds_and_let_the_interval_pick_the_words():
    ln = [0.60, 0.70, 0.65, 0.75, 0.62]
    gaps = batch_size.accuracy_gaps(_gap_frame([a - 0.1 for a in ln], ln)).set_index(["a", "b"])
    lower = gaps.loc[("BatchNorm", "LayerNorm")]
    # every seed 10 points lower: a paired difference without spread, despite the spread over seeds
    assert lower["estimate"] == pytest.approx(-10) and lower["high"] == pytest.approx(-10)
    assert lower["outcome"] == "a lower" and lower["n_seeds"] == 5
    assert lower["verdict"].words == "BatchNorm has 10.0 points lower test accuracy than LayerNorm (95% CI 10.0 to 10.0)"
    assert gaps.loc[("BatchNorm, precise statistics", "LayerNorm"), "estimate"] == pytest.approx(-10)
    same = gaps.loc[("LayerNorm", "no norm")]
    assert same["outcome"] == "no difference detectable" and same["estimate"] == 0  # identical arms
    noisy = batch_size.accuracy_gaps(_gap_frame([a + d for a, d in zip(ln, [0.01, -0.01, 0.02, -0.02, 0.0], strict=True)], ln))
    row = noisy.set_index(["a", "b"]).loc[("BatchNorm", "LayerNorm")]
    assert row["low"] < 0 < row["high"] and row["outcome"] == "no difference detectable"
    assert row["verdict"].words.startswith("no difference detectable with 5 seeds: BatchNorm vs LayerNorm, +0.0 (95% CI")
    above = batch_size.accuracy_gaps(_gap_frame([a + 0.1 + d for a, d in zip(ln, [0.01, -0.01, 0.02, -0.02, 0], strict=True)], ln))
    row = above.set_index(["a", "b"]).loc[("BatchNorm", "LayerNorm")]
    assert row["outcome"] == "a higher" and row["verdict"].words.startswith("BatchNorm has 10.0 points higher test accuracy than LayerNorm (95% CI")
    assert 8 < row["low"] < 10 < row["high"] < 12


def _pilot_rows(norm, accuracies, losses):
    """Pilot rows at batch 2, one per rate of a 5-rate grid and seed 100, at their last step."""
    rates = (0.001, 0.003, 0.01, 0.03, 0.1)
    return [{"stage": "pilot", "norm": norm, "batch_size": 2, "seed": 100, "lr": lr, "step": 99,
             "test_loss": loss, "test_accuracy": acc} for lr, acc, loss in zip(rates, accuracies, losses, strict=True)]


def test_a_gap_smaller_than_one_step_of_the_tuning_grid_is_flagged():
    ln = [0.60, 0.70, 0.65, 0.75, 0.62]
    report = _gap_frame([a - 0.1 + d for a, d in zip(ln, [0.01, -0.01, 0.02, -0.02, 0.0], strict=True)], ln)
    report = report.assign(stage="report", lr=0.01)
    # BN's best rate by loss is 0.01 (accuracy 0.70); its neighbours move the accuracy by 12 and 15 points
    coarse = _pilot_rows("BatchNorm", [0.40, 0.55, 0.70, 0.58, 0.3], [1.0, 0.8, 0.5, 0.7, float("nan")])
    fine = _pilot_rows("BatchNorm", [0.40, 0.69, 0.70, 0.695, 0.3], [1.0, 0.8, 0.5, 0.7, float("nan")])
    assert batch_size.pilot_accuracy_steps(pd.DataFrame(coarse)) == {("BatchNorm", 2): pytest.approx(12.0)}
    flagged = batch_size.accuracy_gaps(pd.concat([pd.DataFrame(coarse), report])).set_index(["a", "b"])
    assert flagged.loc[("BatchNorm", "LayerNorm"), "verdict"].words.endswith(
        "smaller than one step of the tuning grid (a neighbouring rate moves BatchNorm's pilot accuracy at batch 2 "
        "by 12.0 points)")
    kept = batch_size.accuracy_gaps(pd.concat([pd.DataFrame(fine), report])).set_index(["a", "b"])
    assert "tuning grid" not in kept.loc[("BatchNorm", "LayerNorm"), "verdict"].words
    assert batch_size.pilot_accuracy_steps(report) == {}  # no pilot rows: nothing to flag against


def test_the_stored_batch_size_experiment_is_the_notebooks_and_its_verdicts_follow_from_its_rows():
    stored = runner.load("batch_size")
    exp = runner.experiment("batch_size")
    config = stored.meta["config"]
    assert config["steps"] == batch_size.BATCH_SIZE_SAMPLES // 2 and len(exp.seeds) >= 10
    assert config["tuning"]["pilot_seeds"] == [100, 101, 102] and len(config["tuning"]["rates"]) >= 5
    final = batch_size.final_accuracy(stored.frame)
    assert len(final) == len(exp.seeds) * len(batch_size.BATCH_SIZES) * 3
    assert (final["samples_seen"] == batch_size.BATCH_SIZE_SAMPLES).all()
    assert final.groupby(["batch_size", "norm"]).size().eq(len(exp.seeds)).all()
    assert stored.meta["verdicts"] == runner.summary(exp, stored.frame)
    for row in stored.meta["best_rates"]:  # each norm's best rate strictly inside the grid
        assert min(batch_size.BATCH_SIZE_RATES) < row["best_lr"] < max(batch_size.BATCH_SIZE_RATES)
    report = stored.frame[stored.frame["stage"] == "report"]
    assert report.groupby(["norm", "batch_size", "seed"])["step"].apply(lambda s: set(range(20)) <= set(s)).all()


def _report_rate_words(frame):
    """``{"<norm>, batch <b>": words}`` of the ``"best rate on the report seeds, <norm>, batch <b>"`` verdicts."""
    prefix = "best rate on the report seeds, "
    return {key.removeprefix(prefix): str(said) for key, said in batch_size._summarize_batch_size(frame).items()
            if key.startswith(prefix)}


def test_the_best_rate_check_says_where_report_seeds_stay_at_chance():
    frame = runner.load("batch_size").frame
    words = _report_rate_words(frame)
    assert set(words) == {f"{n}, batch {b}" for n in NORMS for b in batch_size.BATCH_SIZES}
    # BN at batch 2: most report seeds stay at chance, more than at a neighbouring rate's pilot runs
    assert words["BatchNorm, batch 2"].startswith("does not hold: 9 of 10 report seeds ended with a test loss at or "
                                                  "above chance (0.693) at 0.01; ")
    # LN at batch 2 trains on every report seed; one planted seed at chance turns it around
    held = words["LayerNorm, batch 2"]
    assert held.startswith("holds: 0 of 10 report seeds ended with a test loss at or above chance (0.693) at 0.01; ")
    last = frame.groupby(["stage", "norm", "batch_size", "lr", "seed"])["step"].transform("max") == frame["step"]
    at = last & (frame["stage"] == "report") & (frame["norm"] == "LayerNorm") & (frame["batch_size"] == 2) \
        & (frame["seed"] == 4)
    assert at.sum() == 1
    said = _report_rate_words(frame.assign(test_loss=frame["test_loss"].where(~at, batch_size.CHANCE_LOSS)))
    assert said["LayerNorm, batch 2"] == "does not hold: 1" + held.removeprefix("holds: 0")


# ---------------------------------------------------------------- padding, invariances


def test_padding_moves_real_tokens_under_bn_not_under_ln():
    table = padding_pollution(lengths=(5, 2), dim=4, seed=0, extra_pads=3)
    assert table.loc["BatchNorm over (batch, seq_len)", "real_token_max_change"] > 0.1
    assert table.loc["LayerNorm per token", "real_token_max_change"] == 0.0
    assert table["pad_share"].tolist() == ["0.30 -> 0.56"] * 2
    # no padding difference, no change
    same = padding_pollution(lengths=(3, 3), dim=4, extra_pads=0)
    assert (same["real_token_max_change"] == 0).all()


def test_invariance_table_matches_the_papers_for_every_norm():
    table = invariance_table()
    assert table.index.tolist() == PAPER_TABLE.index.tolist()
    assert list(PAPER_TABLE) == ["BatchNorm", "WeightNorm", "LayerNorm", "RMSNorm"]
    for norm in PAPER_TABLE:
        assert (table[norm] == table[f"paper {norm}"]).all(), norm
    assert table["RMSNorm"].tolist() == [True, False, False, True, False, True]
    # "not invariant" is not a borderline call: the output moves by a lot
    for norm in PAPER_TABLE:
        moved = table.loc[~table[norm], f"{norm} max change"]
        kept = table.loc[table[norm], f"{norm} max change"]
        assert (moved > 0.1).all() and (kept < 1e-8).all()


def test_weight_norm_divides_each_units_weight_vector_by_its_length():
    g = torch.Generator().manual_seed(5)
    x = torch.randn(7, 4, generator=g, dtype=torch.float64)
    w = torch.randn(3, 4, generator=g, dtype=torch.float64)
    fn = bn_vs_ln._INVARIANCE_NORMS["WeightNorm"]
    # torch's own weight normalization (g = 1): the same summed inputs
    linear = nn.Linear(4, 3, bias=False).double()
    with torch.no_grad():
        linear.weight.copy_(w)
    wn = torch.nn.utils.parametrizations.weight_norm(linear)
    with torch.no_grad():
        wn.parametrizations.weight.original0.fill_(1.0)
        torch.testing.assert_close(fn(x, w, 1e-10), wn(x))


@pytest.mark.parametrize("seed", [1, 2])
def test_invariance_table_holds_for_other_seeds(seed):
    table = invariance_table(seed=seed, cases=8, in_features=4, units=6)
    for norm in PAPER_TABLE:
        assert (table[norm] == table[f"paper {norm}"]).all(), norm


# ---------------------------------------------------------------- exercises


def _bn(x, eps=1e-5, dim=0, unbiased=False):
    mean = x.mean(dim=dim, keepdim=True)
    return (x - mean) / torch.sqrt(x.var(dim=dim, unbiased=unbiased, keepdim=True) + eps)


def test_batch_norm_exercise_accepts_the_answer_and_names_the_slips():
    assert check_batch_norm_train(_bn)
    verdict = check_batch_norm_train(lambda x: _bn(x, dim=1))
    assert not verdict and "that is LayerNorm" in verdict.message
    verdict = check_batch_norm_train(lambda x: _bn(x, unbiased=True))
    assert not verdict and "biased variance" in verdict.message
    assert not check_batch_norm_train(lambda x: x)


def test_running_var_exercise_accepts_the_answer_and_names_the_slips():
    assert check_running_var_update(lambda rv, x: 0.9 * rv + 0.1 * x.var(dim=0, unbiased=True))
    verdict = check_running_var_update(lambda rv, x: 0.9 * rv + 0.1 * x.var(dim=0, unbiased=False))
    assert not verdict and "UNBIASED" in verdict.message
    verdict = check_running_var_update(lambda rv, x: 0.1 * rv + 0.9 * x.var(dim=0))
    assert not verdict and "momentum" in verdict.message
    verdict = check_running_var_update(lambda rv, x: x.var())
    assert not verdict and "one value per feature" in verdict.message


def test_exercises_are_registered():
    from helpers.exercises.checking import _REGISTRY

    assert {"batch_norm_train", "running_var_update"} <= set(_REGISTRY)
    assert bn_vs_ln.check_batch_norm_train is check_batch_norm_train
