"""The stored experiment results (helpers/evidence/results/) are what their declarations say, reproduce, and
carry verdicts that follow from the stored tables.

For every declared experiment:

- its results are stored and were made under the config it declares today (same hash);
- one unit re-trained for its first steps gives the stored rows: exactly on a machine with the
  stored fingerprint (CPU, torch, kernels, threads), within 1e-5 relative elsewhere (or the
  experiment's own stated tolerance, for counts such as an accuracy);
- the verdicts recomputed from the stored table are the stored words, character for character.
"""

from __future__ import annotations

import itertools

import numpy as np
import pandas as pd
import pytest
import torch

from helpers.evidence import runner

# the set's own experiments (tests may register toy ones too)
NAMES = sorted(n for n, e in runner._discover().items() if e.train.__module__ in runner.TOPIC_MODULES)
RESULTS_BUDGET_BYTES = 5 * 2**20  # all stored results together: a few MB
CORES = 2  # the machine the set is sized for; `make experiments` trains one unit per core


def test_every_experiment_has_a_stated_budget_and_all_fit_in_about_four_hours_on_two_cores():
    # A budget is the units' training times added up. With one unit per core, an experiment of n
    # units takes about budget / min(cores, n) of wall-clock time; a timed one runs alone.
    exps = [runner.experiment(n) for n in NAMES]
    assert all(e.budget_s > 0 for e in exps)
    wall = 0.0
    for exp in exps:
        best = None if exp.tuning is None else dict.fromkeys(itertools.product(*exp.grid.values()), exp.tuning.rates[0])
        jobs = 1 if exp.timed_columns else min(CORES, len(runner.units(exp, best)))
        wall += exp.budget_s / jobs
    assert wall <= 4 * 3600


@pytest.mark.parametrize("name", NAMES)
def test_results_are_stored_for_the_config_declared_today(name):
    stored = runner.load(name)
    exp = runner.experiment(name)
    assert stored.meta["config_hash"] == exp.config_hash(), (
        f"helpers/evidence/results/{name}.* were made for another config: run `make experiments ONLY={name}`")
    assert stored.meta["config"] == runner._jsonable(exp.config())
    assert set(stored.frame["seed"]) >= set(exp.seeds)
    for key in ("torch", "cpu", "threads", "capability"):
        assert key in stored.meta["fingerprint"] or "mixed" in stored.meta["fingerprint"]


def test_the_stored_results_stay_small():
    total = sum(p.stat().st_size for p in runner.RESULTS_DIR.iterdir() if p.is_file())
    assert total < RESULTS_BUDGET_BYTES, f"{total / 2**20:.1f} MB of stored results"


@pytest.mark.parametrize("name", NAMES)
def test_one_unit_reproduces_its_stored_rows(name):
    stored = runner.load(name)
    threads = torch.get_num_threads()
    torch.set_num_threads(1)  # as the runner trains
    try:
        fresh, old = runner.rerun_unit(name)  # the experiment's own repro_unit
        same_machine = runner.fingerprint() == stored.meta["fingerprint"]
    finally:
        torch.set_num_threads(threads)
    assert len(fresh) == len(old) > 0
    pd.testing.assert_frame_equal(fresh.select_dtypes(exclude="number"), old.select_dtypes(exclude="number"))
    exp = runner.experiment(name)
    for column in fresh.select_dtypes("number").columns:
        a, b = fresh[column].to_numpy(float), old[column].to_numpy(float)
        if column in exp.timed_columns:  # a measurement of the machine: only its sign and finiteness
            assert np.isfinite(a).all() and (a > 0).all(), column
            continue
        if same_machine:
            np.testing.assert_array_equal(a, b, err_msg=column)
        else:
            rtol, atol = exp.repro_tolerance(column)
            np.testing.assert_allclose(a, b, rtol=rtol, atol=atol, err_msg=column)


@pytest.mark.parametrize("name", NAMES)
def test_the_stored_verdicts_follow_from_the_stored_table(name):
    stored, exp = runner.load(name), runner.experiment(name)
    if exp.summarize is None:
        assert stored.verdicts == {}
    else:
        assert exp.summarize(stored.frame) == stored.verdicts
