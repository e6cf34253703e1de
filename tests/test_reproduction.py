"""helpers.evidence.reproduction: the differences it measures between re-trained units, checked on hand-made
rows, and the kernel paths it reaches."""

from __future__ import annotations

import dataclasses

import numpy as np
import pandas as pd
import pytest
import runner_toy  # noqa: F401  (registers the toy experiments)
import torch

from helpers.evidence import reproduction, runner


def test_needed_rtol_is_the_smallest_rtol_that_allclose_accepts():
    a, b = np.array([1.0, 2.0, 0.0, -4.0]), np.array([1.1, 2.0, 1e-9, -4.4])
    r = reproduction.needed_rtol(a, b, atol=1e-6)
    assert r == pytest.approx(max((0.1 - 1e-6) / 1.1, (0.4 - 1e-6) / 4.4))
    np.testing.assert_allclose(a, b, rtol=r * (1 + 1e-12), atol=1e-6)
    with pytest.raises(AssertionError):
        np.testing.assert_allclose(a, b, rtol=r * 0.99, atol=1e-6)


def test_needed_rtol_edge_cases():
    assert reproduction.needed_rtol(np.ones(3), np.ones(3), atol=0.0) == 0.0
    assert reproduction.needed_rtol(np.array([1e-7]), np.array([0.0]), atol=1e-6) == 0.0  # within atol
    assert reproduction.needed_rtol(np.array([1e-3]), np.array([0.0]), atol=1e-6) == float("inf")
    assert reproduction.needed_rtol(np.array([np.nan, 1.0]), np.array([np.nan, 1.0]), atol=0.0) == 0.0
    assert reproduction.needed_rtol(np.array([np.nan]), np.array([1.0]), atol=0.0) == float("inf")
    with pytest.raises(ValueError, match="arguments 'a' and 'b' must have one shape"):
        reproduction.needed_rtol(np.ones(2), np.ones(3), atol=0.0)


def _rows(loss, acc):
    return pd.DataFrame({"step": [0, 0, 1, 1], "seed": [0, 1, 0, 1], "loss": loss, "accuracy": acc})


def test_step_table_and_measured_differences_take_the_largest_over_pairs_steps_and_column_groups():
    exp = dataclasses.replace(runner.experiment("toy"), repro_steps=2, repro_atol=0.0,
                              repro_atol_by_column={"acc.*": 0.01})
    runs = {"stored": _rows([1.0, 2.0, 0.5, 0.25], [0.5, 0.5, 0.6, 0.7]),
            "one": _rows([1.0, 2.0 + 1e-6, 0.5, 0.25 + 3e-5], [0.5, 0.5, 0.6, 0.7]),
            "two": _rows([1.0 - 2e-6, 2.0, 0.5, 0.25], [0.5, 0.5, 0.6 + 0.002, 0.7])}
    table = reproduction.step_table(exp, runs)
    assert table.loc[(0, "loss"), "max_abs"] == pytest.approx(2e-6)  # "one" vs "two" at step 0
    assert table.loc[(1, "loss"), "max_abs"] == pytest.approx(3e-5)
    assert table.loc[(1, "loss"), "needed_rtol"] == pytest.approx(3e-5 / 0.25, rel=1e-6)
    assert table.loc[(1, "accuracy"), "needed_rtol"] == 0.0  # 0.002 is within the column's atol
    rest, by_pattern = reproduction.measured_differences(exp, table)
    assert rest == pytest.approx(3e-5) and by_pattern == {"acc.*": pytest.approx(0.002)}
    rest_1, _ = reproduction.measured_differences(exp, table, steps=1)
    assert rest_1 == pytest.approx(2e-6)
    worst = reproduction.worst_by_step(table)
    assert list(worst["column"]) == ["loss", "loss"]


def test_the_kernel_paths_reach_every_capability_below_the_cpus_own_the_blas_path_and_two_threads():
    paths = reproduction.kernel_paths()
    native = torch.backends.cpu.get_cpu_capability()
    assert paths[f"native ({native.lower()})"] == ({}, 1)
    assert paths["MKL_CBWR=COMPATIBLE"] == ({"MKL_CBWR": "COMPATIBLE"}, 1)
    assert paths["2 threads"] == ({}, 2)
    assert ({"ATEN_CPU_CAPABILITY": "default"}, 1) in paths.values() or native == "DEFAULT"


def test_an_experiment_refuses_more_reproduction_steps_than_are_stored():
    with pytest.raises(ValueError, match="'repro_steps' must be in 1..20"):
        dataclasses.replace(runner.experiment("toy"), repro_steps=runner.REPRO_STEPS + 1)
    with pytest.raises(ValueError, match="'repro_measured_by_column' must have the keys"):
        dataclasses.replace(runner.experiment("toy"), repro_measured=0.0, repro_atol_by_column={"x": 1.0})
