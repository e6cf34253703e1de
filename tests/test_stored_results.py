"""The stored experiment results (helpers/evidence/results/) are what their declarations say, reproduce, and
carry verdicts that follow from the stored tables.

For every declared experiment:

- its results are stored and were made under the config it declares today (same hash);
- one unit re-trained for its first steps gives the stored rows: exactly on a machine with the
  stored fingerprint (CPU, torch, kernels, threads), elsewhere within the experiment's stated
  tolerance, which is 10 times the largest difference measured across the kernel paths one
  machine reaches (``python -m helpers.evidence.reproduction``), and still catches a planted change
  (the learning rate times 1.01);
- the verdicts recomputed from the stored table are the stored words, character for character.
"""

from __future__ import annotations

import itertools
import json

import numpy as np
import pandas as pd
import pytest
import torch

from helpers.evidence import runner

# the set's own experiments (tests may register toy ones too)
NAMES = sorted(n for n, e in runner._discover().items() if e.train.__module__ in runner.experiment_modules())
RESULTS_BUDGET_BYTES = 5 * 2**20  # all stored results together: a few MB
CORES = 2  # the machine the set is sized for; `make experiments` trains one unit per core


def test_every_experiment_has_a_stated_budget_and_all_fit_in_eight_hours_on_two_cores():
    # A budget is the units' training times added up. With one unit per core, an experiment of n
    # units takes about budget / min(cores, n) of wall-clock time; a timed one runs alone. The
    # budgets were measured with other work sharing the 2 cores (load averages of 3 to 7), so on an
    # idle machine the whole set takes less than this bound, by how much is not measured; the bound
    # was 4 hours before the per-batch tuning of norm_family_cnn and the 6-block Transformer, and 5 before
    # the 6-block Transformer's check stage counted 4 rates and the Transformer on text (5 core-hours
    # of its own) came in (DESIGN.md: about 8 hours).
    exps = [runner.experiment(n) for n in NAMES]
    assert all(e.budget_s > 0 for e in exps)
    wall = 0.0
    for exp in exps:
        best = None if exp.tuning is None else dict.fromkeys(itertools.product(*exp.grid.values()), exp.tuning.rates[0])
        jobs = 1 if exp.timed_columns else min(CORES, len(runner.units(exp, best)))
        wall += exp.budget_s / jobs
    assert wall <= 8 * 3600


@pytest.mark.parametrize("name", NAMES)
def test_results_are_stored_for_the_config_declared_today(name):
    stored = runner.load(name)
    exp = runner.experiment(name)
    assert stored.meta["config_hash"] == exp.config_hash(), (
        f"helpers/evidence/results/{name}.* were made for another config: run `make experiments ONLY={name}`")
    assert stored.meta["config"] == json.loads(json.dumps(exp.config(), default=str))  # as stored
    assert set(stored.frame["seed"]) >= set(exp.seeds)
    for key in ("torch", "cpu", "threads", "capability"):
        assert key in stored.meta["fingerprint"] or "mixed" in stored.meta["fingerprint"]


TUNED = [n for n in NAMES if runner.experiment(n).tuning is not None]


@pytest.mark.parametrize("name", TUNED)
def test_the_stored_rates_are_what_todays_tuning_picks_from_the_stored_pilot_rows(name):
    # The tuning's score is not in the config hash (it changes no unit), so nothing else would notice
    # results made under an older score: the rates must be chosen again (`make experiments ONLY=name`
    # trains only the units that are missing).
    stored, exp = runner.load(name), runner.experiment(name)
    pilot = stored.frame[stored.frame["stage"] == "pilot"].drop(columns="unit")
    best, table = runner._best_rates(exp, pilot)
    assert json.loads(table.to_json(orient="records")) == stored.meta["best_rates"], (
        f"{name}: run `make experiments ONLY={name}`")
    if exp.tuning.check_rates is not None:
        checks = runner._check_rates(exp, pilot)
        assert {json.dumps(list(arm)): list(rates) for arm, rates in checks.items()} == {
            r["arm"]: r["rates"] for r in stored.meta["check_rates"]}
    assert stored.meta["units"] == len(runner.units(exp, best, checks if exp.tuning.check_rates else None))


@pytest.mark.parametrize("name", NAMES)
def test_each_stored_training_time_is_within_its_declared_budget(name):
    stored, exp = runner.load(name), runner.experiment(name)
    assert 0 < stored.meta["wall_s"] <= exp.budget_s, (name, stored.meta["wall_s"], exp.budget_s)


def test_the_stored_results_stay_small():
    total = sum(p.stat().st_size for p in runner.RESULTS_DIR.iterdir() if p.is_file())
    assert total < RESULTS_BUDGET_BYTES, f"{total / 2**20:.1f} MB of stored results"


def _rerun(name, **kwargs):
    threads = torch.get_num_threads()
    torch.set_num_threads(1)  # as the runner trains
    try:
        return runner.rerun_unit(name, **kwargs)  # the experiment's own repro_unit and repro_steps
    finally:
        torch.set_num_threads(threads)


def _mismatches(exp, fresh, old, same_machine: bool) -> list[str]:
    """The numeric columns where ``fresh`` is not ``old``: exactly on the machine that made them,
    within the experiment's reproduction tolerance elsewhere (timed columns: positive and finite)."""
    out = []
    for column in fresh.select_dtypes("number").columns:
        a, b = fresh[column].to_numpy(float), old[column].to_numpy(float)
        if column in exp.timed_columns:  # a measurement of the machine: only its sign and finiteness
            ok = np.isfinite(a).all() and (a > 0).all()
        elif same_machine:
            ok = np.array_equal(a, b, equal_nan=True)
        else:
            rtol, atol = exp.repro_tolerance(column)
            ok = np.allclose(a, b, rtol=rtol, atol=atol, equal_nan=True)
        if not ok:
            diff = np.abs(a - b)
            out.append(f"{column} (largest difference {np.nanmax(diff):.3g}, rtol {exp.repro_tolerance(column)[0]:g})")
    return out


@pytest.mark.parametrize("name", NAMES)
def test_one_unit_reproduces_its_stored_rows(name):
    stored, exp = runner.load(name), runner.experiment(name)
    fresh, old = _rerun(name)
    assert len(fresh) == len(old) > 0
    pd.testing.assert_frame_equal(fresh.select_dtypes(exclude="number"), old.select_dtypes(exclude="number"))
    same_machine = runner.fingerprint() == stored.meta["fingerprint"]
    assert _mismatches(exp, fresh, old, same_machine) == []


@pytest.mark.parametrize("name", NAMES)
def test_every_reproduction_tolerance_is_ten_times_its_measured_difference(name):
    exp = runner.experiment(name)
    assert exp.repro_measured is not None, f"{name}: measure it with `python -m helpers.evidence.reproduction {name}`"
    assert exp.repro_atol >= 10 * exp.repro_measured, (name, exp.repro_atol, exp.repro_measured)
    assert exp.repro_measured_by_column.keys() == exp.repro_atol_by_column.keys()
    for pattern, atol in exp.repro_atol_by_column.items():
        assert atol >= 10 * exp.repro_measured_by_column[pattern], (name, pattern, atol)


def _rate_key(exp) -> str | None:
    """The parameter that holds ``exp``'s learning rate, if it has one."""
    if exp.tuning is not None:
        return exp.tuning.key
    return "lr" if "lr" in exp.grid or "lr" in exp.fixed else None


#: Experiments whose compared rows no rate reaches, and why.
RATE_UNSEEN = {"ln_input_output": "its compared rows are the fits at initialisation, before any update"}
PLANTED = [n for n in NAMES if _rate_key(runner.experiment(n)) is not None and not runner.experiment(n).timed_columns
           and n not in RATE_UNSEEN]


def test_the_planted_change_is_tried_on_the_training_experiments():
    assert {"rnn_mechanism", "lstm_adding", "small_transformer", "placement_tuned"} <= set(PLANTED)


@pytest.mark.parametrize("name", PLANTED)
def test_the_reproduction_tolerance_catches_a_rate_one_percent_off(name):
    # As if on another machine (the tolerance, not exact equality), with the rate x1.01: the rows must
    # differ beyond the tolerance in some column other than the rate itself.
    exp = runner.experiment(name)
    key = _rate_key(exp)
    fresh, old = _rerun(name, change={key: lambda v: tuple(x * 1.01 for x in v) if isinstance(v, tuple) else v * 1.01})
    fresh, old = fresh.drop(columns=key, errors="ignore"), old.drop(columns=key, errors="ignore")
    assert _mismatches(exp, fresh, old, same_machine=False) != []


@pytest.mark.parametrize("name", NAMES)
def test_the_stored_verdicts_follow_from_the_stored_table(name):
    stored, exp = runner.load(name), runner.experiment(name)
    if exp.summarize is None:
        assert stored.verdicts == {}
    else:
        assert runner.summary(exp, stored.frame) == stored.meta["verdicts"]
