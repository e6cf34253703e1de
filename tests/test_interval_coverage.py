"""The interval method in use covers the truth near its nominal 95% at the seed counts the set uses:
read from the stored simulation ``interval_coverage``, which must have been run for that method."""

from __future__ import annotations

import numpy as np
import pytest

from helpers.evidence import runner, statistics
from helpers.experiments import interval_coverage as ic


@pytest.fixture(scope="module")
def stored():
    return runner.load("interval_coverage")


def test_the_stored_simulation_names_the_method_paired_difference_ci_uses(stored):
    # a switch of method without a new simulation fails here
    assert stored.meta["config"]["fixed"]["in_use"] == statistics.INTERVAL_METHOD
    assert statistics.INTERVAL_METHOD in ic.METHODS


def test_the_method_in_use_covers_at_least_93_percent_in_every_scenario_used(stored):
    table = ic.coverage_table(stored.frame)
    used = table[table["use"] == "used"]
    assert set(used.index.get_level_values("scenario")) == {n for n, s in ic.SCENARIOS.items() if s.use == "used"}
    assert set(used.index.get_level_values("n")) == set(ic.SIZES)
    low = used[statistics.INTERVAL_METHOD]
    assert (low >= ic.REQUIRED).all(), low[low < ic.REQUIRED]
    # ... and over-covers by no silly margin: a 95% interval that covered 100% would be too wide to use
    assert (low <= 0.98).all(), low[low > 0.98]


@pytest.mark.parametrize("scenario", [n for n, s in ic.SCENARIOS.items() if s.use == "used"])
def test_the_one_sample_interval_of_a_mean_is_the_simulated_t(scenario, stored):
    # one_sample_ci (one arm's slopes, fractions, errors) is the t-interval the simulation scores, taken
    # on one sample instead of the per-seed differences or log-ratios: its coverage is the stored "t"'s
    spec = ic.SCENARIOS[scenario]
    a, b = spec.draw(np.random.default_rng(11), 10)
    d = np.log(a) - np.log(b) if spec.relative else a - b
    one = statistics.one_sample_ci(d)
    low, high = ic.interval("t", a, b, spec.relative, np.random.default_rng(0))
    expected = (-np.expm1(one.high), -np.expm1(one.low)) if spec.relative else (one.low, one.high)
    assert (low, high) == pytest.approx(expected, rel=1e-12, abs=1e-15)
    coverage = ic.coverage_table(stored.frame).loc[scenario, "t"]
    assert (coverage >= ic.REQUIRED).all(), coverage


def test_every_scenario_and_size_was_simulated_with_enough_repetitions(stored):
    frame = stored.frame
    reps = frame.groupby(["scenario", "n", "method"])["reps"].sum()
    assert (reps >= 2000).all()
    assert set(frame["scenario"]) == set(ic.SCENARIOS)
    # every method applies to a relative scenario; Fieller's ratio of means only there
    for name, scenario in ic.SCENARIOS.items():
        methods = set(frame.loc[frame["scenario"] == name, "method"])
        assert methods == (set(ic.METHODS) if scenario.relative else set(ic.METHODS) - {"Fieller"})


def test_a_unit_counts_what_its_method_covers():
    # the unit's own bookkeeping, on a few repetitions: the t's count is the intervals of
    # paired_difference_ci that hold the scenario's geometric-mean truth
    scenario = "steps, lognormal, spread 0.3"
    rows = ic.coverage_runs(scenario=scenario, n=10, seeds=[7], reps=20)
    truth = ic._truth(scenario)["t"]
    rng = np.random.default_rng([7, list(ic.SCENARIOS).index(scenario), 10])
    covered = 0
    for _ in range(20):
        a, b = ic.SCENARIOS[scenario].draw(rng, 10)
        for method in ("t", "BCa", "Fieller", "studentized bootstrap"):
            low, high = ic.interval(method, a, b, True, rng)
            if method == "t":
                ci = statistics.paired_difference_ci(a, b, relative=True)
                assert (low, high) == (ci.low, ci.high)
                covered += low <= truth <= high
    assert rows.set_index("method").loc["t", "covered"] == covered


def test_the_truths_are_those_of_each_methods_estimand():
    # lognormal arms with the same log-sd: E[log(a / b)] = log(0.7), the t's truth 0.3; the ratio of
    # means equals the ratio of medians too, so every method's truth is 0.3
    truth = ic._truth("steps, lognormal, spread 0.3")
    assert truth["t"] == pytest.approx(0.3, abs=2e-3)
    assert truth["BCa"] == truth["Fieller"] == truth["studentized bootstrap"] == pytest.approx(0.3, abs=2e-3)
    # unequal spreads: the ratio of means moves with B's spread, the geometric mean does not
    truth = ic._truth("losses, spreads 0.2 and 1.7")
    assert truth["t"] == pytest.approx(0.7, abs=3e-3)
    expected = 1 - 0.3 * np.exp(0.2**2 / 2) / np.exp(1.7**2 / 2)
    assert truth["BCa"] == pytest.approx(expected, abs=0.02)
