"""helpers.experiments.placement_tuned: the three arrangements, the init gains, the stacking, the data order, the
task's floor, the convergence rule, the depth slope, the verdicts' words and the declarations of
``placement_tuned`` and ``xiong_grad_norms``."""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pytest
import torch
import torch.nn.functional as F

from helpers.evidence import runner, statistics
from helpers.experiments import placement_tuned as pe
from helpers.experiments import small_transformer as st
from helpers.experiments.tuning_words import grid_resolution


def _words(verdicts):
    """The verdicts' records, in words."""
    return {key: str(said) for key, said in verdicts.items()}


def _report_rate_words(frame):
    """``{"<act>, <arr>": words}`` of the ``"best rate on the report seeds, <act>, <arr>"`` verdicts."""
    prefix = "best rate on the report seeds, "
    return {key.removeprefix(prefix): said for key, said in _words(pe.placement_verdicts(frame)).items()
            if key.startswith(prefix)}



def _gens(*seeds):
    return [torch.Generator().manual_seed(s) for s in seeds]


def _model(activation, arrangement, *seeds, n_lrs=1, **kw):
    kw = {"in_features": 5, "width": 6, "depth": 3, **kw}
    return pe.StackedMLP(len(seeds), n_lrs, activation=activation, arrangement=arrangement,
                         generators=_gens(*seeds), **kw)


def _randomize(model, seed=3):
    """Move every bias, gamma and beta off 0, 1 and 0, so that each one is tested."""
    g = torch.Generator().manual_seed(seed)
    with torch.no_grad():
        for name, p in model.named_parameters():
            if not name.startswith("weights") and name != "w_out":
                p.add_(0.3 * torch.randn(p.shape, generator=g))


@pytest.fixture(scope="module")
def small_task():
    return pe.make_task(256, in_features=5, width=16, depth=2)


# ------------------------------------------------------------------ the arrangements


def _standardised(t, dim=-1):
    """Mean 0 and biased variance v / (v + eps) (LN's own output) over ``dim``, in float64."""
    t = t.double()
    return t.mean(dim), t.var(dim, correction=0)


@pytest.mark.parametrize("activation", pe.ACTIVATIONS)
def test_ln_then_act_standardises_the_linear_output_before_the_activation(activation):
    model = _model(activation, "LN -> act", 0, 1)
    x = torch.randn(2, 7, 5, generator=torch.Generator().manual_seed(0))
    h = x
    for k in range(model.depth):
        z, act_in, out = model.layer(k, h)
        torch.testing.assert_close(z, torch.baddbmm(model.biases[k], h, model.weights[k]))
        mean, var = _standardised(act_in)
        v = z.double().var(-1, correction=0)
        torch.testing.assert_close(mean, torch.zeros_like(mean), rtol=0, atol=1e-6)
        torch.testing.assert_close(var, v / (v + 1e-5), rtol=1e-5, atol=1e-6)
        torch.testing.assert_close(out, pe._ACT[activation](act_in), rtol=0, atol=0)
        h = out


@pytest.mark.parametrize("activation", pe.ACTIVATIONS)
def test_act_then_ln_standardises_the_layer_output(activation):
    model = _model(activation, "act -> LN", 0, 1)
    x = torch.randn(2, 7, 5, generator=torch.Generator().manual_seed(1))
    h = x
    for k in range(model.depth):
        z, act_in, out = model.layer(k, h)
        torch.testing.assert_close(act_in, z, rtol=0, atol=0)  # the activation reads the raw Linear output
        a = pe._ACT[activation](z).double()
        v = a.var(-1, correction=0)
        mean, var = _standardised(out)
        torch.testing.assert_close(mean, torch.zeros_like(mean), rtol=0, atol=1e-6)
        torch.testing.assert_close(var, v / (v + 1e-5), rtol=1e-5, atol=1e-6)
        h = out


def test_no_norm_uses_no_layer_norm_and_the_others_use_theirs(monkeypatch):
    x = torch.randn(1, 4, 5)
    calls = []
    real = pe.layer_norm
    monkeypatch.setattr(pe, "layer_norm", lambda *a, **k: calls.append(1) or real(*a, **k))
    for arrangement in pe.ARRANGEMENTS:
        calls.clear()
        model = _model("tanh", arrangement, 0)
        model(x)
        assert len(calls) == (0 if arrangement == "no norm" else model.depth), arrangement


@pytest.mark.parametrize("arrangement", pe.ARRANGEMENTS)
@pytest.mark.parametrize("activation", pe.ACTIVATIONS)
def test_the_forward_equals_a_per_model_loop_with_torch_ops(activation, arrangement):
    model = _model(activation, arrangement, 4, 5, n_lrs=2)
    _randomize(model)
    x = torch.randn(4, 6, 5, generator=torch.Generator().manual_seed(2))
    act = {"tanh": torch.tanh, "relu": F.relu, "gelu": F.gelu}[activation]
    out = model(x)
    with torch.no_grad():
        for m in range(4):
            h = x[m]
            for k in range(model.depth):
                z = F.linear(h, model.weights[k][m].T, model.biases[k][m, 0])
                g, b = model.gammas[k][m, 0], model.betas[k][m, 0]
                if arrangement == "LN -> act":
                    h = act(F.layer_norm(z, (model.width,), g, b))
                elif arrangement == "act -> LN":
                    h = F.layer_norm(act(z), (model.width,), g, b)
                else:
                    h = act(z)
            expected = F.linear(h, model.w_out[m].T, model.b_out[m, 0]).squeeze(-1)
            torch.testing.assert_close(out[m], expected, rtol=1e-5, atol=1e-6)


# ------------------------------------------------------------------ the initialisation


def test_standard_gains_are_torchs_and_gelu_gets_relus():
    assert pe.standard_gain("tanh") == torch.nn.init.calculate_gain("tanh")
    assert pe.standard_gain("relu") == torch.nn.init.calculate_gain("relu")
    assert pe.standard_gain("gelu") == torch.nn.init.calculate_gain("relu")
    for act in pe.ACTIVATIONS:
        assert pe.init_gain(act, "no norm") == pe.standard_gain(act)
        assert pe.init_gain(act, "LN -> act") == pe.init_gain(act, "act -> LN") == 1.0


@pytest.mark.parametrize("activation", pe.ACTIVATIONS)
def test_every_arrangement_scales_the_same_draws_by_its_gain(activation):
    models = {arr: _model(activation, arr, 7, 8) for arr in pe.ARRANGEMENTS}
    ref = models["LN -> act"]
    for arr, model in models.items():
        ratio = pe.init_gain(activation, arr) / pe.init_gain(activation, "LN -> act")
        for w, w_ref in zip(model.weights, ref.weights, strict=True):
            torch.testing.assert_close(w, w_ref * ratio, rtol=1e-6, atol=0)
        torch.testing.assert_close(model.w_out, ref.w_out, rtol=0, atol=0)  # the read-out: gain 1 everywhere
        for p in (*model.biases, model.b_out, *model.betas):
            assert not p.detach().any()
        for p in model.gammas:
            assert (p.detach() == 1).all()
    # the draws are standard normal over sqrt(fan_in): the read-out's column of seed 7
    g = torch.Generator().manual_seed(7)
    draws = [torch.randn(i, o, generator=g) / math.sqrt(i) for i, o in ((5, 6), (6, 6), (6, 6), (6, 1))]
    torch.testing.assert_close(ref.w_out[0], draws[-1], rtol=0, atol=0)


def test_the_scale_of_w_is_irrelevant_to_ln_then_act_at_initialisation():
    x = torch.randn(1, 32, 5, generator=torch.Generator().manual_seed(3))
    model = _model("tanh", "LN -> act", 0)
    before = model(x)
    with torch.no_grad():
        for w in model.weights:
            w.mul_(5 / 3)
    torch.testing.assert_close(model(x), before, rtol=1e-4, atol=1e-5)  # equal up to eps


def test_with_gain_1_act_then_ln_feeds_its_activation_inputs_of_unit_second_moment():
    """The layers after the first read LN's output (second moment 1 per sample): with gain 1 the
    activation's input has E[z^2] = mean over units of |w_j|^2, exactly as for gain 1 on unit inputs."""
    model = _model("tanh", "act -> LN", 0, width=64, depth=3, in_features=64)
    x = torch.randn(1, 4096, 64, generator=torch.Generator().manual_seed(4))
    z1, _, h1 = model.layer(0, x)
    z2, _, _ = model.layer(1, h1)
    second = (h1.double() ** 2).mean(-1)
    torch.testing.assert_close(second, torch.ones_like(second), rtol=0, atol=1e-4)
    expected = (model.weights[1][0].double() ** 2).sum(0).mean()  # E over unit-second-moment inputs
    assert abs((z2.double() ** 2).mean() / expected - 1) < 0.1


# ------------------------------------------------------------------ stacking, seeds and data order


def test_a_model_in_a_stack_equals_the_same_seed_alone():
    x = torch.randn(6, 5, 5, generator=torch.Generator().manual_seed(5))
    for arrangement in pe.ARRANGEMENTS:
        stacked = _model("gelu", arrangement, 10, 11, 12, n_lrs=2)
        _randomize(stacked)
        out = stacked(x)
        for m in range(6):
            alone = _model("gelu", arrangement, (10, 11, 12)[m % 3])
            with torch.no_grad():
                for (_, p), (_, q) in zip(alone.named_parameters(), stacked.named_parameters(), strict=True):
                    p.copy_(q[m:m + 1])
            torch.testing.assert_close(alone(x[m:m + 1]), out[m:m + 1], rtol=1e-6, atol=1e-6)


def test_training_a_model_alone_or_stacked_gives_the_same_run(small_task):
    kw = {"activation": "tanh", "arrangement": "act -> LN", "steps": 6, "width": 8, "depth": 3, "batch": 64,
          "eval_every": 2, "task": small_task}
    stacked = pe.mlp_runs(seeds=(0, 1), lrs=(1e-3, 3e-2), **kw)
    alone = pe.mlp_runs(seeds=(1,), lrs=(3e-2,), **kw)
    part = stacked[(stacked["seed"] == 1) & (stacked["lr"] == 3e-2)].reset_index(drop=True)
    for column in ("loss", "eval_loss"):
        np.testing.assert_allclose(part[column], alone[column], rtol=1e-5, err_msg=column)
    assert sorted(part.loc[part["eval_loss"].notna(), "step"]) == [0, 2, 4, 6]


def test_each_seed_draws_its_own_fresh_data_the_same_for_every_arm(small_task):
    drawn = {}
    for arrangement in pe.ARRANGEMENTS:
        for act in ("tanh", "relu"):
            gens, model, seed_of, _ = pe._setup((0, 1), (1e-3, 1e-2), act, arrangement, 8, 3, small_task)
            drawn[act, arrangement] = pe.draw(gens, 16, small_task)
    x, y = drawn["tanh", "no norm"]
    assert x.shape == (2, 16, 5) and y.shape == (2, 16)
    for xa, ya in drawn.values():  # paired: every arm of a seed sees the same minibatch
        torch.testing.assert_close(xa, x, rtol=0, atol=0)
        torch.testing.assert_close(ya, y, rtol=0, atol=0)
    assert not torch.equal(x[0], x[1])  # the seeds differ in their data, not only in their weights
    torch.testing.assert_close(y, small_task.teacher(x), rtol=0, atol=0)
    # a seed alone draws what it draws in a stack, and every step draws fresh inputs
    gens, _, _, _ = pe._setup((1,), (1e-3,), "gelu", "act -> LN", 8, 3, small_task)
    first, _ = pe.draw(gens, 16, small_task)
    second, _ = pe.draw(gens, 16, small_task)
    torch.testing.assert_close(first[0], x[1], rtol=0, atol=0)
    assert not torch.equal(first, second)
    # no input of the evaluation sample is drawn for training (a new generator, another seed)
    assert torch.cdist(second[0], small_task.x_eval).min() > 0


def test_evaluation_draws_nothing_and_its_losses_are_the_full_set_mean(small_task):
    kw = {"seeds": (0, 1), "lrs": (1e-2,), "activation": "relu", "arrangement": "LN -> act", "steps": 6,
          "width": 8, "depth": 3, "batch": 64, "task": small_task}
    a, b = pe.mlp_runs(eval_every=2, **kw), pe.mlp_runs(eval_every=3, **kw)
    pd.testing.assert_series_equal(a["loss"], b["loss"])
    gens, model, _, _ = pe._setup((0, 1), (1e-2,), "relu", "LN -> act", 8, 3, small_task)
    with torch.no_grad():
        pred = model(small_task.x_eval.expand(2, -1, -1)).double()
    expected = ((pred - small_task.y_eval.double()) ** 2).mean(1)
    np.testing.assert_allclose(a.loc[a["step"] == 0, "eval_loss"], expected.numpy(), rtol=1e-6)


def test_a_runs_first_steps_do_not_depend_on_the_cap_for_a_given_decay(small_task):
    kw = {"seeds": (0,), "lrs": (1e-2,), "activation": "tanh", "arrangement": "LN -> act", "width": 8, "depth": 2,
          "batch": 64, "eval_every": 100, "task": small_task}
    short, full = pe.mlp_runs(steps=5, decay=12, **kw), pe.mlp_runs(steps=12, **kw)
    np.testing.assert_array_equal(short["loss"][:5], full["loss"][:5])


def test_the_cosine_schedule_runs_from_1_down_towards_0():
    factors = [pe.cosine_factor(s, 100) for s in range(100)]
    assert factors[0] == 1.0 and all(a > b for a, b in zip(factors, factors[1:], strict=False))
    assert 0 < factors[-1] < 1e-3
    assert pe.cosine_factor(50, 100) == pytest.approx(0.5)


# ------------------------------------------------------------------ the task's levels


def test_the_targets_are_the_teacher_normalised_and_the_floor_is_what_the_teacher_scores():
    task = pe.make_task(512, in_features=4, width=8, depth=2)
    y = task.y_eval.double()
    assert abs(y.mean()) < 1e-6 and abs(y.var(correction=0) - 1) < 1e-6
    levels = pe.task_levels(task)
    teacher_mse = float(((task.teacher(task.x_eval).double() - y) ** 2).mean())
    assert levels["floor"] == teacher_mse == 0.0  # no noise: the teacher scores the floor
    assert levels["nothing"] == pytest.approx(float(np.var(task.y_eval.numpy().astype(np.float64))), rel=1e-12)
    again = pe.make_task(512, in_features=4, width=8, depth=2)
    torch.testing.assert_close(again.x_eval, task.x_eval, rtol=0, atol=0)
    torch.testing.assert_close(again.teacher(task.x_eval[:7] * 2), task.teacher(task.x_eval[:7] * 2), rtol=0, atol=0)
    # a constant prediction scores at best the variance: the mean is the best constant
    for c in (-0.1, 0.0, 0.1):
        assert float(((y - c) ** 2).mean()) >= levels["nothing"] - 1e-12
    # the targets are a function of x: the same inputs, the same targets, in any batch
    x = torch.randn(3, 4)
    torch.testing.assert_close(task.teacher(torch.cat([x, x])), torch.cat([task.teacher(x)] * 2))


# ------------------------------------------------------------------ the convergence rule


def test_the_convergence_rule_on_hand_made_curves():
    steps = np.arange(0, 101, 10)
    flat = np.r_[np.linspace(1.0, 0.2, 8), [0.2, 0.2, 0.2]]  # evaluations at 0..70, then 80, 90, 100
    ok, change = pe.converged(steps, flat, 100)
    assert ok and change == 0.0
    falling = flat.copy()
    falling[-3:] = [0.204, 0.202, 0.2]  # 2% above the final value at the window's start
    ok, change = pe.converged(steps, falling, 100)
    assert not ok and change == pytest.approx(0.02)
    just = flat.copy()
    just[-3:] = [0.2019, 0.201, 0.2]
    ok, change = pe.converged(steps, just, 100)
    assert ok and change == pytest.approx(0.0095)
    spike = flat.copy()
    spike[-2] = 0.3  # up and back down inside the window: not converged
    assert not pe.converged(steps, spike, 100)[0]
    before = flat.copy()
    before[7] = 5.0  # outside the window (step 70): irrelevant
    assert pe.converged(steps, before, 100)[0]
    diverged = flat.copy()
    diverged[-1] = math.inf
    assert pe.converged(steps, diverged, 100) == (False, math.inf)
    assert pe.converged(np.arange(0, 101, 25), np.full(5, 0.2), 100) == (False, math.inf)  # nothing at 80


def test_the_stored_runs_carry_the_flag_in_their_last_row_only(small_task):
    frame = pe.mlp_runs(seeds=(0,), lrs=(1e-2, 1e-3), activation="gelu", arrangement="act -> LN", steps=10,
                        width=8, depth=2, batch=64, eval_every=2, task=small_task)
    last = frame[frame["step"] == 10]
    assert frame.loc[frame["step"] < 10, "converged"].isna().all()
    assert frame.loc[frame["step"] < 10, "change"].isna().all()
    for _, row in last.iterrows():
        run = frame[(frame["lr"] == row["lr"]) & frame["eval_loss"].notna()]
        flag, change = pe.converged(run["step"], run["eval_loss"], 10)
        assert bool(row["converged"]) == flag and row["change"] == pytest.approx(change, rel=1e-6)
    kept = runner.experiment("placement_tuned").keep(frame)
    assert set(kept["step"]) == set(range(10)) | {10}  # the first REPRO_STEPS steps and the evaluations


# ------------------------------------------------------------------ summaries


def _fake_frame(final_a, final_b, final_none, converged_b=None, cap=20):
    """A stored-like table: pilot rows (3 seeds at 6 rates, the best in the middle) and report rows
    (10 seeds) for one activation, each run's step 0 and step ``cap``."""
    rows = []

    def run(stage, arr, lr, seed, final, conv):
        for step, value in ((0, 1.5), (cap, final)):
            rows.append({"stage": stage, "activation": "tanh", "arrangement": arr, "lr": lr, "seed": seed, "step": step,
                         "eval_loss": value, "change": 0.0 if step == cap else math.nan,
                         "converged": conv if step == cap else None})

    for arr in pe.ARRANGEMENTS:
        for lr in (1e-4, 3e-4, 1e-3, 3e-3, 1e-2, 3e-2):
            for seed in (100, 101, 102):
                run("pilot", arr, lr, seed, 0.5 if lr == 1e-3 else 0.8, True)
        finals = {"LN -> act": final_a, "act -> LN": final_b, "no norm": final_none}[arr]
        for seed, final in enumerate(finals):
            run("report", arr, 1e-3, seed, final, True if converged_b is None or arr != "act -> LN" else converged_b[seed])
    return pd.DataFrame(rows).astype({"converged": "boolean"})


def test_the_verdicts_follow_the_paired_intervals():
    rng = np.random.default_rng(0)
    b = 0.4 + 0.05 * rng.random(10)
    a = 0.8 * b * (1 + 0.01 * rng.random(10))
    conv = [True] * 7 + [False] * 3
    out = _words(pe.placement_verdicts(_fake_frame(a, b, b, converged_b=conv)))
    assert out["best rate, tanh, LN -> act"].startswith("0.001, inside the grid (0.0001 to 0.03)")
    ci = statistics.paired_difference_ci(a, b, relative=True)
    # the pilot's neighbouring rates score 0.8 against the best rate's 0.5: one step of the grid moves
    # a pilot loss by 60% (a factor 1.6), more than the 20% between the arms (a factor 1.25), so the
    # words flag it
    grid = (0.6, "one step of the tuning grid (a neighbouring rate moves LN -> act's pilot loss by 60.0%)")
    expected = statistics.verdict(ci, a="LN -> act", b="act -> LN", quantity="final loss", claim="fewer",
                                 verb="ends with", words=("lower", "higher"), resolution=grid).words
    assert out["final loss, tanh, LN -> act vs act -> LN"] == expected
    assert expected.startswith("LN -> act ends with 20% lower final loss")
    assert expected.endswith("; smaller than " + grid[1])
    ci7 = statistics.paired_difference_ci(a[:7], b[:7], relative=True)
    words = statistics.verdict(ci7, a="LN -> act", b="act -> LN", quantity="loss at convergence",
                              claim="fewer", verb="ends with", words=("lower", "higher"), resolution=grid).words
    assert out["at convergence, tanh, LN -> act vs act -> LN"] == f"{words}; on the 7 of 10 seeds where both runs converged"
    assert out["runs, tanh, act -> LN"].startswith("at lr 0.001: 7/10 converged")
    # with fewer seeds than MIN_CONVERGED_SEEDS where both converged, no interval: it says so
    few = [True] * (pe.MIN_CONVERGED_SEEDS - 1) + [False] * (11 - pe.MIN_CONVERGED_SEEDS)
    out = _words(pe.placement_verdicts(_fake_frame(a, b, b, converged_b=few)))
    assert out["at convergence, tanh, LN -> act vs act -> LN"].startswith(
        f"not testable: both runs converged on only {pe.MIN_CONVERGED_SEEDS - 1} of 10 seeds")
    # the opposite way round, and a diverged run counted as having learned nothing
    worse = b * 1.5
    worse[0] = math.inf
    out = _words(pe.placement_verdicts(_fake_frame(worse, b, b)))
    assert out["final loss, tanh, LN -> act vs act -> LN"].startswith("the opposite of the claim")
    capped = np.minimum(worse, pe.NOTHING)
    ci = statistics.paired_difference_ci(capped, b, relative=True)
    assert f"{-ci.estimate * 100:.0f}% higher" in out["final loss, tanh, LN -> act vs act -> LN"]


def test_a_report_seed_stuck_at_the_best_rate_is_said_plainly():
    # ReLU act -> LN, whose best rate (0.1) sits next to a rate where pilot seeds learned nothing: on the
    # stored runs every report seed learned; one planted stuck report seed turns the check around
    frame = runner.load("placement_tuned").frame
    key = "relu, act -> LN"
    stored = runner.load("placement_tuned").verdicts[f"best rate on the report seeds, {key}"]
    assert _report_rate_words(frame)[key] == stored
    assert stored.startswith("holds: 0 of 10 report seeds ended at or above the learned-nothing loss (1) at 0.1; ")
    at = ((frame["stage"] == "report") & (frame["activation"] == "relu") & (frame["arrangement"] == "act -> LN")
          & (frame["seed"] == 3) & (frame["step"] == frame["step"].max()))
    assert at.sum() == 1
    said = _report_rate_words(frame.assign(eval_loss=frame["eval_loss"].where(~at, pe.NOTHING)))[key]
    pilot = stored.split("; ", 1)[1]  # the neighbouring rates' pilot runs, as stored
    assert said == f"does not hold: 1 of 10 report seeds ended at or above the learned-nothing loss (1) at 0.1; {pilot}"
    # on the stored runs no arm has a report seed stuck
    assert all(words.startswith("holds: 0 of 10") for words in _report_rate_words(frame).values())


def test_one_step_of_the_grid_is_the_smallest_change_from_the_best_rate_to_a_neighbour():
    def grid_step(scores):  # as placement_tuned's verdicts flag against it: relu, act -> LN's step
        said = grid_resolution(scores.assign(arm="relu, act -> LN"), ["relu, act -> LN"], lambda arm, step: "")
        return math.inf if said is None else said[0]

    scores = pd.DataFrame({"activation": "relu", "arrangement": "act -> LN", "lr": [1e-3, 3e-3, 1e-2, 3e-2, 0.1],
                           "score": [0.40, 0.321, 0.317, 0.306, math.inf]})  # best at 0.03, its right neighbour diverged
    assert grid_step(scores) == pytest.approx(0.317 / 0.306 - 1)
    edge = scores.assign(score=[0.30, 0.31, 0.35, 0.4, 0.5])  # best on the edge: its one neighbour
    assert grid_step(edge) == pytest.approx(0.31 / 0.30 - 1)
    assert grid_step(scores.assign(score=math.inf)) == math.inf


def test_pilot_scores_are_medians_of_final_training_losses():
    frame = _fake_frame(np.full(10, 0.3), np.full(10, 0.3), np.full(10, 0.3))
    frame.loc[(frame["stage"] == "pilot") & (frame["seed"] == 100) & (frame["step"] == 20), "eval_loss"] = math.inf
    scores = pe.pilot_scores(frame[frame["stage"] == "pilot"])
    assert len(scores) == 3 * 6 and set(scores.columns) == {"activation", "arrangement", "lr", "score"}
    assert (scores.loc[scores["lr"] == 1e-3, "score"] == 0.5).all()  # one diverged seed of three: the median holds


# ------------------------------------------------------------------ Xiong et al.'s slope


def _synthetic(slope, seeds=20, noise=0.05, seed=0):
    rng = np.random.default_rng(seed)
    rows = []
    for s in range(seeds):
        level = rng.lognormal(0, 0.3)
        for depth in pe.XIONG_DEPTHS:
            rows.append({"seed": s, "blocks": depth, "grad_norm": level * depth ** slope * rng.lognormal(0, noise)})
    return pd.DataFrame(rows)


@pytest.mark.parametrize("slope", [-0.5, 0.0, 0.3])
def test_the_depth_slope_recovers_a_known_slope_and_is_the_pooled_least_squares_fit(slope):
    table = _synthetic(slope)
    ci = pe.depth_slope(table)
    assert ci.low <= slope <= ci.high and ci.high - ci.low < 0.1 and ci.n == 20
    pooled = np.polyfit(np.log(table["blocks"]), np.log(table["grad_norm"]), 1)[0]
    assert ci.estimate == pytest.approx(pooled, rel=1e-9, abs=1e-12)


def test_xiong_gradients_are_each_models_own_and_both_forms_share_weights_and_batch():
    frame = pe.xiong_grad_norms(depths=(2, 3), seeds=(5, 6), n=3, vocab=5, width=8, heads=2, batch=4)
    assert len(frame) == 2 * (2 + 3) * 2 * 2
    assert set(frame["weight"]) == {"W_1", "W_2"}
    for form, (placement, _) in pe.FORMS.items():
        # seed 6 alone, by hand: its weights, then its batch, from its own generator
        g = torch.Generator().manual_seed(6)
        model = st.StackedDecoder(1, 1, placement=placement, vocab=5, seq_len=5, width=8, blocks=3, heads=2,
                                  generators=[g])
        seqs = st.copy_task(4, 3, 5, g)[None]
        model.loss(seqs).sum().backward()
        got = frame[(frame["form"] == form) & (frame["blocks"] == 3) & (frame["seed"] == 6)]
        for k, block in enumerate(model.blocks):
            for weight, p in (("W_1", block.w_1), ("W_2", block.w_2)):
                value = got.loc[(got["block"] == k + 1) & (got["weight"] == weight), "grad_norm"].item()
                assert value == pytest.approx(p.grad[0].double().norm().item(), rel=1e-5)
        with torch.no_grad():
            ms = model.stream(seqs[..., :-1]).double().pow(2).mean().item()
        assert got["stream_ms"].iloc[0] == pytest.approx(ms, rel=1e-5)


def test_xiong_verdicts_say_which_prediction_the_interval_holds():
    frames = []
    for form, slope in (("Pre-LN", -0.5), ("Post-LN", 0.2)):
        t = _synthetic(slope)
        frames.append(t.assign(form=form, block=t["blocks"], weight="W_2", stream_ms=t["blocks"].astype(float)))
    out = _words(pe.xiong_verdicts(pd.concat(frames, ignore_index=True)))
    assert "consistent with -1/2" in out["slope, Pre-LN, W_2"] and "not" not in out["slope, Pre-LN, W_2"]
    assert "not consistent with 0 (the interval lies above it)" in out["slope, Post-LN, W_2"]
    assert out["slope, Pre-LN, W_2"].startswith(f"Pre-LN: slope {pe.depth_slope(frames[0]).format('.2f')}")


# ------------------------------------------------------------------ the declarations


def test_the_experiments_are_registered_in_a_topic_module():
    assert "helpers.experiments.placement_tuned" in runner.experiment_modules()
    for name in ("placement_tuned", "xiong_grad_norms"):
        exp = runner.experiment(name)
        assert exp.notebook == "12_where_the_norm_goes" and exp.train.__module__ == "helpers.experiments.placement_tuned"


def test_placement_tuned_is_declared_as_tuned_on_fresh_seeds_with_a_checkable_cap():
    exp = runner.experiment("placement_tuned")
    assert exp.tuning is not None and exp.tuning.key == "lr"
    rates = np.array(sorted(exp.tuning.rates))
    assert len(rates) >= 6 and (rates[1:] / rates[:-1] <= 10 / 3 * (1 + 1e-9)).all()
    assert exp.tuning.pilot_seeds == (100, 101, 102) and exp.seeds == tuple(range(10))
    assert not set(exp.tuning.pilot_seeds) & set(exp.seeds)
    assert exp.tuning.learned_below == pe.NOTHING == pytest.approx(pe.task_levels(pe.make_task())["nothing"])
    assert set(exp.grid) == {"activation", "arrangement"}
    assert set(exp.grid["activation"]) == set(pe.ACTIVATIONS) and set(exp.grid["arrangement"]) == set(pe.ARRANGEMENTS)
    # the window of the convergence rule starts on an evaluation, and holds several
    window = round(pe.CONVERGED_WINDOW * exp.steps)
    assert window % exp.fixed["eval_every"] == 0 and window // exp.fixed["eval_every"] >= 4
    best = {arm: rates[3] for arm in [(a, r) for a in pe.ACTIVATIONS for r in pe.ARRANGEMENTS]}
    for unit in runner.units(exp, best):
        lrs = unit["params"]["lr"]
        assert len(lrs if isinstance(lrs, tuple) else (lrs,)) * len(unit["seeds"]) <= 21


def test_xiong_grad_norms_is_declared_over_the_depths_with_enough_seeds():
    exp = runner.experiment("xiong_grad_norms")
    assert tuple(exp.grid["blocks"]) == (2, 4, 6, 8, 12, 16, 24) and len(exp.seeds) >= 10
    assert set(exp.grid["form"]) == set(pe.FORMS) and exp.tuning is None
