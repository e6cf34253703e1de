"""helpers.experiments.deep_transformer: the model and task it declares, that its arms differ only where
they should, the check stage's rates, its verdicts, and the stored result against the declaration."""

from __future__ import annotations

import json
import math

import numpy as np
import pandas as pd
import pytest
import torch

from helpers.evidence import runner, statistics
from helpers.experiments import deep_transformer as dt
from helpers.experiments import small_transformer as st
from helpers.experiments.threshold_runs import steps_to_threshold

#: A few steps of the declared model, for the tests that train it.
KW = {**dt.FIXED, "steps": 3, "eval_every": 1}


def _setup(arm, seeds=(0, 1), lrs=(1e-3,)):
    return st._setup(seeds, lrs, arm, dt.N_COPY, dt.VOCAB, dt.WIDTH, dt.BLOCKS, dt.HEADS)


# ------------------------------------------------------------------ the model, the task, the arms


def test_the_declared_model_and_task_have_their_shapes_and_levels():
    _, model, _, _ = _setup("Pre-LN", seeds=(0, 1), lrs=(1e-3, 1e-2))
    seqs = st.copy_task(5, dt.N_COPY, dt.VOCAB, torch.Generator().manual_seed(0))
    assert seqs.shape == (5, 2 * dt.N_COPY)
    logits = model(seqs[:, :-1].expand(4, 5, 2 * dt.N_COPY - 1))
    assert logits.shape == (4, 5, 2 * dt.N_COPY - 1, dt.VOCAB)
    assert len(model.blocks) == dt.BLOCKS == 6 and model.w_out.shape == (4, dt.WIDTH, dt.VOCAB)
    assert dt.LEVELS.no_copy == pytest.approx(math.log(dt.VOCAB))
    assert dt.LEVELS.floor == pytest.approx(st.copy_floor(dt.N_COPY, dt.VOCAB))
    assert dt.THRESHOLD == statistics.threshold_level(dt.LEVELS.no_copy, dt.LEVELS.floor, 0.5)
    assert st.heldout_batch(dt.N_COPY, dt.VOCAB, dt.HELDOUT_SIZE).shape == (64, 2 * dt.N_COPY)


def test_every_arm_of_a_seed_starts_from_the_same_weights_and_draws_the_same_batches():
    ref_gens, ref, _, _ = _setup("no norm")
    ref_params = dict(ref.named_parameters())
    for arm in dt.ARMS:
        gens, model, _, _ = _setup(arm)
        params = dict(model.named_parameters())
        assert params.keys() == ref_params.keys(), arm
        for name, p in params.items():
            torch.testing.assert_close(p, ref_params[name], rtol=0, atol=0, msg=f"{arm}: {name}")
        for g, r in zip(gens, ref_gens, strict=True):  # so the minibatches drawn next are the same
            assert torch.equal(g.get_state(), r.get_state()), arm
    assert not torch.equal(ref.tok[0], ref.tok[1])  # two seeds, two draws


def test_the_arms_differ_in_where_the_norm_sits_and_the_warm_up_arm_only_in_its_rate():
    assert {a: (st.ARMS[a].placement, st.ARMS[a].warmup, st.ARMS[a].norm) for a in dt.ARMS} == {
        "no norm": ("none", False, "LN"), "Pre-LN": ("pre", False, "LN"), "Post-LN": ("post", False, "LN"),
        "Post-LN + warm-up": ("post", True, "LN")}
    runs = {arm: st.copy_runs(seeds=(0,), lrs=(1e-2,), variant=arm, **KW) for arm in dt.ARMS}
    first = {arm: float(r.loc[r["step"] == 0, "eval_loss"].iloc[0]) for arm, r in runs.items()}
    assert len(set(first.values())) == 3  # three placements, three functions of the same weights
    assert first["Post-LN"] == first["Post-LN + warm-up"]  # the same network ...
    warm, plain = runs["Post-LN + warm-up"], runs["Post-LN"]
    assert warm.loc[warm["step"] == 0, "loss"].item() == plain.loc[plain["step"] == 0, "loss"].item()
    # ... whose first update is the plain arm's at 1/WARMUP of the rate
    slow = st.copy_runs(seeds=(0,), lrs=(1e-2 / dt.WARMUP,), variant="Post-LN", **KW)
    assert warm.loc[warm["step"] == 1, "eval_loss"].item() == slow.loc[slow["step"] == 1, "eval_loss"].item()
    assert warm.loc[warm["step"] == 1, "eval_loss"].item() != plain.loc[plain["step"] == 1, "eval_loss"].item()
    # every evaluation step is recorded, on the declared held-out batch
    assert sorted(plain.loc[plain["eval_loss"].notna(), "step"]) == [0, 1, 2, 3]


# ------------------------------------------------------------------ the check stage and the verdicts


def _ends(table, variant="Pre-LN", stage="pilot", cap=10):
    """A frame whose runs end at the given held-out losses: ``{lr: [final per seed]}``."""
    rows = []
    for lr, finals in table.items():
        for seed, final in enumerate(finals):
            for step, value in ((0, dt.LEVELS.no_copy), (cap, final)):
                rows.append({"step": step, "seed": seed, "variant": variant, "lr": lr, "loss": 1.0,
                             "eval_loss": value, "stage": stage})
    return pd.DataFrame(rows)


@pytest.mark.parametrize(("stable", "window"), [
    (dt.RATES[:3], dt.RATES[1:5]),       # the boundary inside: one rate below, two above
    (dt.RATES[:1], dt.RATES[:4]),        # at the bottom: the lowest four
    (dt.RATES[:5], dt.RATES[-4:]),       # near the top: the highest four
    (dt.RATES, dt.RATES[-4:]),           # at the top: the highest four
    ((), dt.RATES[:4]),                  # nowhere: the lowest four
])
def test_the_check_stage_trains_four_rates_from_below_the_pilot_boundary_to_two_above(stable, window):
    good, bad = dt.LEVELS.floor + 0.1, dt.LEVELS.no_copy
    pilot = _ends({lr: [good, good, good] if lr in stable else [good, bad, good] for lr in dt.RATES})
    rates = dt.boundary_rates(pilot)
    assert rates["variant"].unique().tolist() == ["Pre-LN"]
    assert tuple(rates["lr"]) == window


def test_the_largest_stable_rate_is_read_on_every_seed_at_every_rate_checked():
    good, bad = dt.LEVELS.floor + 0.1, math.inf
    runs = _ends({1e-3: [good] * 10, 3e-3: [good] * 10, 1e-2: [good] * 9 + [bad]}, stage="check")
    words = dt._stable_words(runs, 10)
    assert words.startswith("0.003 on 10 seeds") and "0.01: 9/10 (1 non-finite)" in words
    words = dt._stable_words(runs[runs["lr"] < 1e-2], 10)
    assert words.startswith("0.003 on 10 seeds") and "a larger one may be stable too" in words
    pilot = _ends({1e-2: [good, bad, bad], 3e-2: [bad] * 3})
    words = dt._stable_words(runs[runs["lr"] < 1e-2], 10, pilot)
    assert words.endswith("at the next rate, 0.01, 1 of 3 pilot seeds end below the threshold")
    assert dt._stable_words(runs[runs["lr"] == 1e-2], 10).startswith("none of the rates checked")


def test_per_seed_words_give_each_seeds_steps_the_median_and_the_restricted_mean():
    reached = pd.DataFrame({"variant": ["A"] * 4 + ["B"] * 4, "seed": [0, 1, 2, 3] * 2,
                            "steps": [10, 20, np.nan, 30, 20, 20, 40, 60], "lr": 1e-3})
    words = dt._per_seed_words(reached, 100, "A")
    assert "0: 10, 1: 20, 2: >100, 3: 30" in words and "Kaplan-Meier median 20 steps" in words  # Kaplan-Meier: S(20) = 2/4
    assert "restricted mean 40 steps" in words and "3/4 reached" in words  # (10 + 20 + 30 + 100) / 4
    words = dt._paired_per_seed(reached, 100, "A", "B")
    assert words.startswith("A needs fewer steps on 2 of 4 seeds, more on 1, as many on 1")
    assert "sample medians 25 and 30 steps" in words


# ------------------------------------------------------------------ the declaration and the stored result


def test_the_experiment_is_declared_as_the_design_says():
    exp = runner.experiment("deep_transformer")
    assert exp.notebook == "13_does_it_speed_up_training" and exp.train.__module__ == dt.__name__
    assert dt.__name__ in runner.experiment_modules()
    rates = np.array(sorted(exp.tuning.rates))
    assert len(rates) == 6 and (rates[1:] / rates[:-1] <= 10 / 3 * (1 + 1e-9)).all()
    assert exp.tuning.pilot_seeds == dt.PILOT_SEEDS and len(exp.tuning.pilot_seeds) == 3
    assert len(exp.seeds) == 10 and not set(exp.seeds) & set(exp.tuning.pilot_seeds)
    assert exp.tuning.check_rates is dt.boundary_rates and exp.tuning.learned_below == exp.steps
    assert exp.steps == 600 and exp.fixed["eval_every"] == 2 and exp.fixed["heldout_size"] == 64
    assert 4 <= exp.fixed["blocks"] <= 8 and exp.threshold == dt.THRESHOLD
    assert exp.fixed["warmup"] <= exp.steps // 20  # short against the time to the threshold
    assert exp.grid == {"variant": dt.ARMS}
    assert exp.repro_measured is not None and exp.repro_atol >= 10 * exp.repro_measured


@pytest.fixture(scope="module")
def stored():
    return runner.load("deep_transformer")


def test_the_stored_result_is_the_declared_experiment_and_its_verdicts_recompute(stored):
    exp = runner.experiment("deep_transformer")
    assert stored.meta["config_hash"] == exp.config_hash()
    assert stored.meta["config"] == json.loads(json.dumps(exp.config(), default=str))  # as stored
    assert stored.meta["verdicts"] == runner.summary(runner.experiment("deep_transformer"), stored.frame)


def test_the_stored_stages_hold_the_seeds_and_rates_the_protocol_says(stored):
    frame, exp = stored.frame, runner.experiment("deep_transformer")
    pilot, report, check = (frame[frame["stage"] == s] for s in ("pilot", "report", "check"))
    assert set(pilot["seed"]) == set(exp.tuning.pilot_seeds) and set(pilot["lr"]) == set(exp.tuning.rates)
    best = {tuple(json.loads(r["arm"])): r["best_lr"] for r in stored.meta["best_rates"]}
    checks = {tuple(json.loads(r["arm"])): r["rates"] for r in stored.meta["check_rates"]}
    wanted = dt.boundary_rates(pilot)
    for arm in dt.ARMS:
        runs = report[report["variant"] == arm]
        assert set(runs["seed"]) == set(exp.seeds) and runs["lr"].unique().tolist() == [best[(arm,)]]
        assert checks[(arm,)] == sorted(wanted.loc[wanted["variant"] == arm, "lr"])
        at = check[check["variant"] == arm]
        assert set(at["lr"]) == set(checks[(arm,)]) - {best[(arm,)]}
        assert at.groupby("lr")["seed"].nunique().eq(len(exp.seeds)).all()
    evals = sorted(report.loc[report["eval_loss"].notna(), "step"].unique())
    assert evals[:3] == [0, 2, 4] and evals[-1] == exp.steps


def test_pre_ln_needs_over_a_hundred_steps_and_post_ln_fails_where_pre_ln_trains(stored):
    # the regime the experiment was sized for, on the reported seeds: the answers are not free
    frame = stored.frame
    reached = steps_to_threshold(frame[frame["stage"] == "report"], dt.THRESHOLD)
    pre = reached[reached["variant"] == "Pre-LN"]["steps"]
    assert 100 <= pre.median() <= 400
    checked = frame[frame["stage"].isin(("report", "check"))]
    ends = dt._ends_below(checked, int(frame["step"].max()))
    pre_ok = ends[(ends["variant"] == "Pre-LN")].groupby("lr")["below"].all()
    post_ok = ends[(ends["variant"] == "Post-LN")].groupby("lr")["below"].mean()
    shared = [lr for lr in pre_ok.index if pre_ok[lr] and lr in post_ok.index]
    assert any(post_ok[lr] < 1 for lr in shared) or max(pre_ok[pre_ok].index) > max(post_ok.index)
