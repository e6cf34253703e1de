"""helpers.experiments.step_times: the arms timed round-robin with the load recorded, the seconds per
step from each round, and the wall-clock interval that carries the timing's spread."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from helpers.evidence import runner, statistics
from helpers.experiments import step_times as stt


def test_the_arms_are_timed_round_robin_each_round_starting_one_arm_later():
    arms = ("tiny RNN, T 10, hidden 16 | no norm", "tiny RNN, T 10, hidden 16 | LayerNorm",
            "tiny RNN, T 10, hidden 64 | no norm")
    frame = pd.concat([stt.time_arms(rotation=r, arms=arms, seeds=(0,), steps=stt.LONG) for r in range(3)])
    assert len(frame) == 9 and list(frame["round"]) == [0, 0, 0, 1, 1, 1, 2, 2, 2]
    order = frame.groupby("round")["arm"].apply(list).tolist()
    assert order == [list(arms), [*arms[1:], arms[0]], [arms[2], *arms[:2]]]
    # times only positive: on shared cores a 5-step run can take longer than a 25-step one
    assert (frame["load_1m"] >= 0).all() and (frame[["seconds_short", "seconds_long"]] > 0).all().all()
    per = stt.round_seconds(frame)
    assert sorted(per.columns) == sorted(arms) and per.shape == (3, 3)
    first = frame[(frame["round"] == 0) & (frame["arm"] == arms[0])].iloc[0]
    assert per.loc[0, arms[0]] == (first["seconds_long"] - first["seconds_short"]) / (stt.LONG - stt.SHORT)
    pd.testing.assert_series_equal(stt.seconds_per_step(frame), per.median())


def test_the_wall_clock_interval_is_the_seeds_interval_when_the_timing_has_no_spread_and_wider_with_it():
    rng = np.random.default_rng(0)
    a, b = rng.integers(100, 200, 10).astype(float), rng.integers(150, 300, 10).astype(float)
    ratio = np.log(1.5)
    ci = stt.wall_clock_ci(a, b, np.full(5, ratio))
    ref = statistics.paired_difference_ci(a * 1.5, b, relative=True)
    assert ci.estimate == pytest.approx(ref.estimate) and ci.low == pytest.approx(ref.low)
    assert ci.high == pytest.approx(ref.high)
    spread = stt.wall_clock_ci(a, b, ratio + np.array([-0.2, -0.1, 0.0, 0.1, 0.2]))
    assert spread.estimate == pytest.approx(ref.estimate)
    assert spread.low < ref.low and spread.high > ref.high and "5 interleaved rounds" in spread.note


def test_the_experiment_times_every_arm_in_one_unit_and_records_the_load():
    exp = runner.experiment("step_times")
    assert len(runner.units(exp)) == stt.ROUNDS >= 5 and exp.fixed["arms"] == (*stt.TIMED, stt.FROM_SCRATCH)
    assert [u["params"]["rotation"] for u in runner.units(exp)] == list(range(stt.ROUNDS))
    assert {"Deep Transformer | Pre-LN", "Deep Transformer | Post-LN", "Deep Transformer | no norm"} <= set(stt.TIMED)
    assert "load_1m" in exp.timed_columns


def test_the_deep_transformer_is_timed_as_its_experiment_trains_it():
    from helpers.experiments import deep_transformer as dt

    run = stt._trainer("Deep Transformer | Pre-LN")(1)
    assert set(run["variant"]) == {"Pre-LN"} and len(run) == 2  # steps 0 and 1, one model
    same = dt.st.copy_runs(seeds=(0,), lrs=(1e-3,), variant="Pre-LN", steps=1, eval_every=10**6,
                           **{k: v for k, v in dt.FIXED.items() if k != "eval_every"})
    pd.testing.assert_frame_equal(run, same)


def test_the_timed_arms_normalise_with_torchs_kernels_and_one_lstm_with_the_sets_own(monkeypatch):
    import torch.nn.functional as F

    calls, real = [], F.layer_norm
    monkeypatch.setattr(F, "layer_norm", lambda *args, **kw: calls.append(1) or real(*args, **kw))
    for arm in ("LSTM, T 100, hidden 64 | LN-LSTM", "tiny RNN, T 10, hidden 16 | LayerNorm", "Transformer | Pre-LN"):
        calls.clear()
        stt._trainer(arm)(1)
        assert calls, arm
    calls.clear()
    stt._trainer(stt.FROM_SCRATCH)(1)
    assert not calls
    from helpers import functional
    from helpers.experiments import lstm_adding

    assert lstm_adding.layer_norm is functional.layer_norm  # the timing swaps the models' calls back
