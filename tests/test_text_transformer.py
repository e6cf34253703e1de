"""helpers.experiments.text_transformer: the model's arms on real text, the probe's sizing and rule, and the
declaration it fixed."""

from __future__ import annotations

import dataclasses
import math

import numpy as np
import pandas as pd
import pytest
import torch

from helpers.evidence import runner
from helpers.experiments import small_transformer as st
from helpers.experiments import text_corpus as tc
from helpers.experiments import text_transformer as tt

# ------------------------------------------------------------------ the model on real text


def test_every_arm_trains_a_few_steps_on_text_with_finite_losses_in_bits():
    kw = {"steps": 3, "blocks": 2, "eval_every": 1, "warmup": 2, "heldout_size": 4}
    first = {}
    for arm in tt.ARMS:
        runs = tt.text_runs((0, 1), (1e-3, 1e-2), variant=arm, **kw)
        assert len(runs) == 4 * 4 and set(runs["variant"]) == {arm}
        assert np.isfinite(runs.loc[runs["step"] < 3, "loss"]).all() and np.isfinite(runs["eval_loss"]).all()
        assert (runs.groupby(["seed", "lr"])["loss"].first() > 0).all()
        first[arm] = runs.loc[(runs["step"] == 0) & (runs["seed"] == 0), "eval_loss"].iloc[0]
    # the placements and norms are different functions of the same weights; warm-up only scales the rate
    assert len({first[a] for a in tt.ARMS if a != "Post-LN + warm-up"}) == len(tt.ARMS) - 1
    assert first["Post-LN + warm-up"] == first["Post-LN"]


def test_the_losses_are_the_decoders_in_bits_per_character():
    task = tc.text_source(tt.CONTEXT, 4)
    model, nats = st.trained_decoder((5,), (3e-3,), variant="Pre-LN", steps=2, width=tt.WIDTH, blocks=2,
                                     heads=tt.HEADS, batch=tt.BATCH, eval_every=1, task=task)
    bits = tt.text_runs((5,), (3e-3,), variant="Pre-LN", steps=2, blocks=2, eval_every=1, heldout_size=4)
    np.testing.assert_allclose(bits["eval_loss"], nats["eval_loss"] / math.log(2), rtol=1e-12)
    np.testing.assert_allclose(bits["loss"], nats["loss"] / math.log(2), rtol=1e-12)
    # the held-out loss is the model's mean next-character cross-entropy on the held-out windows
    seqs = task.heldout
    with torch.no_grad():
        logits = model(seqs[:, :-1].expand(1, *seqs[:, :-1].shape))
    expected = torch.nn.functional.cross_entropy(logits[0].flatten(0, 1).double(), seqs[:, 1:].flatten())
    assert bits["eval_loss"].iloc[-1] == pytest.approx(float(expected) / math.log(2), rel=1e-5)


def test_the_arms_of_a_seed_see_the_same_text():
    draws = {}
    for arm in tt.ARMS:
        gens, _, _, _ = st._setup((0,), (1e-3,), arm, 0, len(tc.vocabulary()), tt.WIDTH, 2, tt.HEADS, tt.CONTEXT)
        draws[arm] = tc.text_source(tt.CONTEXT, 4).draw(tt.BATCH, gens[0])
    for arm, batch in draws.items():
        assert torch.equal(batch, draws["no norm"]), arm


# ------------------------------------------------------------------ the probe


def test_each_depth_gets_the_same_block_steps_about_two_dozen_evaluations_and_a_fifth_of_warm_up():
    for blocks in tt.PROBE_BLOCKS:
        size = tt.sized(blocks)
        assert size["steps"] == tt.BLOCK_STEPS // blocks and size["blocks"] == blocks
        assert 20 <= size["steps"] / size["eval_every"] <= 24
        assert size["warmup"] == size["steps"] // 5 >= size["steps"] / 10
    assert tt.PROBE_SEED not in range(10) and tt.PROBE_SEED not in (100, 101, 102)
    assert set(tt.PROBE_ARMS) <= set(tt.ARMS) and len(tt.PROBE_RATES) == 3


def _table(finals: dict[int, dict[str, tuple[float, float, float]]]) -> pd.DataFrame:
    rows = [{"blocks": b, "steps": tt.BLOCK_STEPS // b, "variant": arm, "lr": lr, "seed": tt.PROBE_SEED, "final": f}
            for b, arms in finals.items() for arm, values in arms.items()
            for lr, f in zip(tt.PROBE_RATES, values, strict=True)]
    return pd.DataFrame(rows)


def test_the_probe_rule_separates_where_post_ln_fails_at_pre_lns_best_rate_and_no_norm_somewhere():
    unigram = 4.0
    table = _table({
        4: {"Pre-LN": (3.0, 2.5, 2.0), "Post-LN": (2.9, 2.6, 3.2), "no norm": (2.8, 2.6, 2.4)},   # no norm fine
        8: {"Pre-LN": (3.0, 2.2, 2.5), "Post-LN": (2.9, 3.1, 4.0), "no norm": (3.2, 2.6, math.inf)},
        12: {"Pre-LN": (3.0, 2.0, 2.5), "Post-LN": (2.9, 3.0, 4.0), "no norm": (2.8, 2.6, 2.4)},  # no norm fine
    })
    levels = tt.probe_levels(table, unigram).set_index("blocks")
    assert levels.loc[4, "reference"] == 2.0 and levels.loc[4, "threshold"] == 3.0
    assert levels.loc[8, "reference"] == 2.2 and levels.loc[8, "threshold"] == pytest.approx(3.1)
    assert levels.loc[8, "pre_ln_best"] == 3e-3 and levels.loc[8, "post_ln_there"] == 3.1
    assert levels.loc[8, "no_norm_worst"] == math.inf
    # depth 4: Post-LN ends at 3.2 >= 3.0 at Pre-LN's best (0.01), but no norm never ends at or above 3.0
    assert list(levels["separates"]) == [False, True, False]
    assert tt.chosen_blocks(levels.reset_index()) == 8
    # ties at the threshold count as failing; no depth separating: the deepest
    assert tt.chosen_blocks(levels.reset_index().assign(separates=False)) == 12
    assert tt.chosen_blocks(levels.reset_index().assign(separates=True)) == 4


def test_the_shipped_probe_is_the_declared_grid():
    table = tt.probe_table()
    assert len(table) == len(tt.PROBE_BLOCKS) * len(tt.PROBE_ARMS) * len(tt.PROBE_RATES)
    assert set(table["seed"]) == {tt.PROBE_SEED}
    for (blocks, arm), runs in table.groupby(["blocks", "variant"]):
        assert blocks in tt.PROBE_BLOCKS and arm in tt.PROBE_ARMS
        assert sorted(runs["lr"]) == list(tt.PROBE_RATES)
        assert (runs["steps"] == tt.sized(blocks)["steps"]).all()
        assert (runs["eval_every"] == tt.sized(blocks)["eval_every"]).all()
        assert (runs["lowest"] <= runs["final"]).all() and (runs["unit_wall_s"] > 0).all()


# ------------------------------------------------------------------ the declaration


def test_the_declared_size_and_threshold_follow_from_the_probe_by_its_rule():
    unigram = tc.unigram_level(tc.text_source(tt.CONTEXT, tt.HELDOUT_SIZE).heldout)
    assert tt.UNIGRAM == pytest.approx(unigram, abs=5e-5)
    levels = tt.probe_levels(tt.probe_table(), unigram)
    assert tt.BLOCKS == tt.chosen_blocks(levels)
    at = levels.set_index("blocks").loc[tt.BLOCKS]
    assert tt.THRESHOLD == pytest.approx(at["threshold"], abs=5e-5)
    assert tt.THRESHOLD == pytest.approx((unigram + at["reference"]) / 2, abs=5e-5)
    assert (tt.STEPS, tt.EVAL_EVERY, tt.WARMUP) == tuple(tt.sized(tt.BLOCKS)[k] for k in ("steps", "eval_every",
                                                                                          "warmup"))


def test_the_experiment_is_declared_as_the_design_says():
    exp = runner.experiment("text_transformer")
    assert exp.notebook == "13_does_it_speed_up_training" and exp.train.__module__ == tt.__name__
    assert exp.grid == {"variant": tt.ARMS} and set(tt.ARMS) <= set(st.ARMS)
    assert {st.ARMS[a].alpha for a in tt.ARMS if st.ARMS[a].norm == "DyT"} == {0.5, 2.0}
    rates = np.array(sorted(exp.tuning.rates))
    assert len(rates) >= 5 and (rates[1:] / rates[:-1] <= 10 / 3 * (1 + 1e-9)).all()
    assert exp.tuning.pilot_seeds == tt.PILOT_SEEDS and len(tt.PILOT_SEEDS) == 3
    assert len(exp.seeds) == 10 and not set(exp.seeds) & set(tt.PILOT_SEEDS) and tt.PROBE_SEED not in exp.seeds
    assert exp.tuning.check_rates is tt.text_check_rates and exp.tuning.learned_below == exp.steps
    assert exp.tuning.score is tt.text_pilot_scores and exp.threshold == tt.THRESHOLD
    assert exp.fixed["corpus"] == tc.CORPUS_SHA256 and exp.config()["fixed"]["corpus"] == tc.CORPUS_SHA256
    assert exp.fixed["warmup"] >= exp.steps / 10  # the warm-up covers at least a tenth of the steps
    assert (exp.fixed["width"], exp.fixed["context"], exp.fixed["batch"]) == (64, 64, 16)
    assert exp.fixed["blocks"] * exp.steps <= tt.BLOCK_STEPS


def test_the_budget_is_at_most_five_core_hours_and_covers_the_protocol_at_the_probes_pace():
    exp = runner.experiment("text_transformer")
    assert exp.budget_s <= 5 * 3600
    # every run of the protocol, with every arm checking 4 rates other than its best
    pilot = len(tt.ARMS) * len(tt.RATES) * len(tt.PILOT_SEEDS)
    most = pilot + len(tt.ARMS) * len(tt.SEEDS) * (1 + 4)
    table = tt.probe_table()
    per_run = (table.loc[table["blocks"] == tt.BLOCKS, "unit_wall_s"] / len(tt.PROBE_RATES)).max()
    assert exp.budget_s >= 2 * most * per_run  # twice the probe's pace: room for a busier machine


def test_a_unit_refuses_another_corpus():
    exp = runner.experiment("text_transformer")
    with pytest.raises(ValueError, match="argument 'corpus' must be"):
        exp.train(variant="Pre-LN", lr=1e-3, seeds=[0], steps=1, **{**exp.fixed, "corpus": "0" * 64})


def test_the_units_stack_an_arms_rates_and_five_seeds():
    exp = runner.experiment("text_transformer")
    pilot = runner.units(exp)
    assert len(pilot) == len(tt.ARMS)
    assert all(u["params"]["lr"] == tt.RATES and u["seeds"] == list(tt.PILOT_SEEDS) for u in pilot)
    best = {(arm,): 1e-3 for arm in tt.ARMS}
    checks = {(arm,): (1e-3, 3e-3, 1e-2, 3e-2) for arm in tt.ARMS}
    every = runner.units(exp, best, checks)
    assert len(every) == len(tt.ARMS) * (1 + 2 + 2)  # pilot; report and check, 5 seeds a unit
    assert every[exp.repro_unit]["params"] == {"variant": "Post-LN + warm-up", "lr": 1e-3}
    assert every[exp.repro_unit]["seeds"] == [0, 1, 2, 3, 4] and every[exp.repro_unit]["stage"] == "report"


# ------------------------------------------------------------------ the protocol end to end, small


@pytest.fixture
def tiny(monkeypatch):
    """``text_transformer`` at 1 block, 6 steps, 2 pilot seeds, 2 reported seeds, 5 rates, and a threshold
    these runs can cross (the verdicts read the module's), registered under another name."""
    exp = runner.experiment("text_transformer")
    monkeypatch.setattr(tt, "THRESHOLD", 6.0)
    monkeypatch.setattr(tt, "UNIGRAM", 6.5)
    small = dataclasses.replace(
        exp, name="text_transformer_tiny", steps=6, seeds=(0, 1), seeds_per_unit=2,
        fixed={**exp.fixed, "blocks": 1, "eval_every": 2, "warmup": 2, "heldout_size": 4},
        tuning=dataclasses.replace(exp.tuning, rates=(1e-3, 3e-3, 1e-2, 3e-2, 1e-1), pilot_seeds=(100, 101),
                                   learned_below=6))
    runner.register(small)
    yield small
    del runner.EXPERIMENTS[small.name]


def test_the_protocol_runs_end_to_end_and_every_verdict_is_said(tiny, tmp_path):
    meta = runner.run(tiny.name, cache_dir=tmp_path / "cache", results_dir=tmp_path, progress=False, log=lambda m: None)
    stored = runner.load(tiny.name, tmp_path)
    frame = stored.frame
    assert set(frame["stage"]) == {"pilot", "report", "check"}
    assert set(frame["variant"]) == set(tt.ARMS) and meta["config"]["fixed"]["corpus"] == tc.CORPUS_SHA256
    words = stored.verdicts
    for arm in tt.ARMS:
        for key in ("best rate", "best rate on the report seeds", "largest stable rate", "time", "steps per seed",
                    "final loss"):
            assert f"{key}, {arm}" in words, (key, arm)
        assert "bits per character" in words[f"final loss, {arm}"]
    for a, b in tt.STABILITY_PAIRS:
        assert f"stable seeds at the largest rate both ran, {a} vs {b}" in words
    for a, b, _ in tt.COMPARISONS:
        assert {f"steps, {a} vs {b}", f"final loss, {a} vs {b}", f"steps per seed, {a} vs {b}"} <= set(words)
    assert {f"at Pre-LN's best rate, {a}" for a in tt.ARMS if a != "Pre-LN"} <= set(words)
    assert "(6.000)" in words["largest stable rate, Pre-LN"]  # the module's threshold, not deep_transformer's
    # the check stage trains each arm's 4 rates around its pilot boundary, its best rate left out
    checks = tt.text_check_rates(frame[frame["stage"] == "pilot"])
    for arm, rates in checks.groupby("variant")["lr"]:
        best = frame.loc[(frame["stage"] == "report") & (frame["variant"] == arm), "lr"].iloc[0]
        trained = set(frame.loc[(frame["stage"] == "check") & (frame["variant"] == arm), "lr"])
        assert trained == set(rates) - {best} and len(rates) == 4
