"""helpers.evidence.runner: units, the cache (atomic, refused when stale or damaged), the tuned protocol,
stored results read back, and a run killed mid-way that resumes losing only the unit in flight."""

from __future__ import annotations

import json
import os
import pickle
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import pandas as pd
import pytest
import runner_toy  # noqa: F401  (registers the toy experiments)

from helpers.evidence import runner

ROOT = Path(__file__).resolve().parents[1]
TESTS = Path(__file__).resolve().parent


@pytest.fixture
def dirs(tmp_path, monkeypatch):
    log = tmp_path / "units.log"
    monkeypatch.setenv("RUNNER_TOY_LOG", str(log))
    monkeypatch.setenv("RUNNER_TOY_SLEEP", "0")
    (tmp_path / "results").mkdir()
    return {"cache_dir": tmp_path / "cache", "results_dir": tmp_path / "results", "log": log}


def _run(name, dirs, messages=None, jobs=1):
    return runner.run(name, cache_dir=dirs["cache_dir"], results_dir=dirs["results_dir"], progress=False,
                      log=(messages.append if messages is not None else lambda m: None), jobs=jobs)


def _trained(dirs) -> int:
    return len(dirs["log"].read_text().splitlines()) if dirs["log"].exists() else 0


def test_units_split_the_grid_and_the_seeds():
    exp = runner.experiment("toy")  # 3 rates, 4 seeds, 2 seeds per unit
    units = runner.units(exp)
    assert len(units) == 3 * 2
    assert [u["seeds"] for u in units[:2]] == [[0, 1], [2, 3]]
    assert {u["params"]["lr"] for u in units} == {0.1, 0.2, 0.3}
    stacked = runner.units(runner.experiment("toy_stacked"))
    assert len(stacked) == 3 and all(u["params"]["lr"] == (0.1, 0.2) for u in stacked)


def test_the_config_hash_names_what_is_computed_not_where_the_code_lives():
    import dataclasses

    exp = runner.experiment("toy")

    def moved(**kwargs):  # the same computation, from another module and under another name
        return exp.train(**kwargs)

    moved.__module__, moved.__qualname__ = "somewhere.else", "renamed"
    assert dataclasses.replace(exp, train=moved).config_hash() == exp.config_hash()
    assert "somewhere.else" not in str(dataclasses.replace(exp, train=moved).config())
    # what is computed does change it: the version, the grid, the steps
    for change in ({"version": exp.version + 1}, {"steps": exp.steps + 1}, {"seeds": (*exp.seeds, 99)}):
        assert dataclasses.replace(exp, **change).config_hash() != exp.config_hash(), change


def test_resummarize_rewrites_the_verdicts_from_the_stored_table_and_trains_nothing(dirs, monkeypatch):
    import dataclasses

    _run("toy", dirs)
    trained = _trained(dirs)
    meta_file = dirs["results_dir"] / "toy.json"
    assert runner.resummarize("toy", results_dir=dirs["results_dir"], log=lambda m: None) == {}
    exp = runner.experiment("toy")
    reworded = dataclasses.replace(exp, summarize=lambda frame: {"rows": f"{len(frame)} rows, reworded"})
    monkeypatch.setitem(runner.EXPERIMENTS, "toy", reworded)
    changed = runner.resummarize("toy", results_dir=dirs["results_dir"], log=lambda m: None)
    assert changed and all(new is None or new.endswith("reworded") for _, new in changed.values())
    assert runner.load("toy", dirs["results_dir"]).verdicts == {"rows": f"{3 * 4 * 30} rows, reworded"}
    assert _trained(dirs) == trained  # nothing trained
    stale = dataclasses.replace(exp, version=exp.version + 1)
    monkeypatch.setitem(runner.EXPERIMENTS, "toy", stale)
    with pytest.raises(ValueError, match="made for config .* retrain with `make experiments ONLY=toy`"):
        runner.resummarize("toy", results_dir=dirs["results_dir"])
    assert "reworded" in meta_file.read_text()


def test_a_run_stores_a_table_and_its_metadata_and_a_second_run_trains_nothing(dirs):
    meta = _run("toy", dirs)
    assert _trained(dirs) == 6
    table = dirs["results_dir"] / "toy.csv.gz"
    first_bytes = table.read_bytes()
    stored = runner.load("toy", dirs["results_dir"])
    assert len(stored.frame) == 3 * 4 * 30 and set(stored.frame["unit"]) == set(range(6))
    for key in ("config", "config_hash", "seeds", "fingerprint", "commit", "wall_s", "budget_s", "verdicts"):
        assert key in stored.meta, key
    assert stored.meta["fingerprint"]["torch"] and stored.meta["fingerprint"]["cpu"]
    assert stored.verdicts == runner_toy.summarize(stored.frame)
    assert meta["verdicts"] == runner.summary(runner.experiment("toy"), stored.frame)

    _run("toy", dirs)
    assert _trained(dirs) == 6  # everything came from the cache
    assert table.read_bytes() == first_bytes  # and the results are byte for byte the same
    # the stored dtypes come back exactly: the values are the ones trained
    fresh = runner_toy.train(lr=0.1, seeds=[0, 1], steps=30)
    assert stored.frame[stored.frame["unit"] == 0].drop(columns="unit").reset_index(drop=True).equals(fresh)


def test_a_damaged_cache_entry_is_refused_with_a_message_and_run_again(dirs):
    _run("toy", dirs)
    victim = sorted((dirs["cache_dir"] / "toy").glob("*.pkl"))[0]
    victim.write_bytes(b"half a pick")
    messages = []
    _run("toy", dirs, messages)
    assert _trained(dirs) == 7
    assert any("cannot be read" in m and victim.name in m for m in messages)


def test_a_cache_entry_made_for_another_config_is_refused(dirs):
    _run("toy", dirs)
    victim = sorted((dirs["cache_dir"] / "toy").glob("*.pkl"))[0]
    entry = pickle.loads(victim.read_bytes())
    victim.write_bytes(pickle.dumps({**entry, "config_hash": "0123456789abcdef"}))
    messages = []
    _run("toy", dirs, messages)
    assert _trained(dirs) == 7
    assert any("made for config 0123456789abcdef" in m for m in messages)


def test_an_unknown_name_lists_the_known_ones(dirs, capsys):
    with pytest.raises(ValueError, match=r"unknown experiment 'nope'; the known ones are: .*toy.*toy_tuned"):
        runner.run("nope", **{k: v for k, v in dirs.items() if k != "log"})
    # The command line's own path (`python -m helpers.evidence.runner` exits with what main() returns;
    # test_a_killed_run_resumes... runs it as a command), here without a second Python importing
    # every experiment module.
    assert runner.main(["--only", "nope"]) == 2
    stderr = capsys.readouterr().err
    assert "unknown experiment 'nope'" in stderr and "the known ones are" in stderr


def test_a_declaration_with_shared_pilot_seeds_or_an_unknown_stack_is_refused():
    with pytest.raises(ValueError, match=r"'stack' must name grid parameters \['lr'\], got \['depth'\]"):
        runner.Experiment(name="x", notebook="-", train=runner_toy.train, grid={"lr": (1,)}, seeds=(0,), steps=1,
                          stack=("depth",))
    tuning = runner.Tuning(key="lr", rates=(1, 2), pilot_seeds=(0, 1), score=runner_toy.final_loss_score,
                           learned_below=1)
    with pytest.raises(ValueError, match=r"fresh, but \[1\] are pilot seeds too"):
        runner.Experiment(name="x", notebook="-", train=runner_toy.train, grid={"arm": ("a",)}, seeds=(1, 2),
                          steps=1, tuning=tuning)


def test_the_tuned_protocol_picks_each_arms_rate_on_pilot_seeds_then_reports_fresh_seeds(dirs):
    meta = _run("toy_tuned", dirs)
    frame = runner.load("toy_tuned", dirs["results_dir"]).frame
    pilot, report = frame[frame["stage"] == "pilot"], frame[frame["stage"] == "report"]
    assert set(pilot["seed"]) == {0, 1, 2} and set(report["seed"]) == {10, 11, 12}
    assert set(pilot["lr"]) == {0.01, 0.03, 0.1, 0.3, 1.0}
    best = {r["arm"]: r["best_lr"] for r in meta["best_rates"]}
    assert best == {'["fast"]': 0.3, '["slow"]': 0.03}
    assert report.groupby("arm")["lr"].unique().map(list).to_dict() == {"fast": [0.3], "slow": [0.03]}
    # a reported unit re-runs from the stored best rate, to the same rows
    fresh, stored = runner.rerun_unit("toy_tuned", meta["units"] - 1, results_dir=dirs["results_dir"])
    assert len(fresh) == 20 and set(fresh["stage"]) == {"report"}
    pd.testing.assert_frame_equal(fresh, stored)


def test_tuning_never_picks_a_rate_at_which_a_pilot_run_reaches_the_threshold_and_then_blows_up(dirs):
    meta = _run("toy_blowup", dirs)
    pilot = runner.load("toy_blowup", dirs["results_dir"]).frame.query("stage == 'pilot'")
    scores = runner_toy.blowup_score(pilot.drop(columns="unit")).set_index("lr")
    assert scores["score"].idxmin() == 1.0 and not scores.loc[1.0, "stable"]  # first to cross, then above
    (row,) = meta["best_rates"]
    assert row["best_lr"] == 0.3 and row["stable"] and row["note"] == ""


def test_a_rerun_without_a_cache_takes_the_stored_units_and_trains_only_those_missing(dirs, tmp_path):
    _run("toy_tuned", dirs)
    results = dirs["results_dir"] / "toy_tuned.csv.gz"
    before = results.read_bytes()
    shutil.rmtree(dirs["cache_dir"])  # a clone: the stored results and no cache
    assert _trained(dirs) == 6 + 6  # 2 arms x 3 pilot seeds, then 2 arms x 3 reported seeds
    _run("toy_tuned", dirs)
    assert _trained(dirs) == 12 and results.read_bytes() == before  # nothing trained, the same bytes
    # results stored under another choice of rate for "slow" (as an older score made them): the
    # rates are chosen again from the stored pilot rows, and only "slow" at its rate is trained (a unit a seed)
    meta_file = dirs["results_dir"] / "toy_tuned.json"
    meta = json.loads(meta_file.read_text())
    meta["best_rates"] = [{**r, "best_lr": 0.1} if r["arm"] == '["slow"]' else r for r in meta["best_rates"]]
    meta_file.write_text(json.dumps(meta))
    shutil.rmtree(dirs["cache_dir"])
    messages = []
    _run("toy_tuned", dirs, messages)
    assert _trained(dirs) == 12 + 3 and "12 units taken from the stored results" in messages[0]
    assert results.read_bytes() == before  # the units at 0.03, trained again, give the same rows


def test_a_check_stage_retrains_the_chosen_rates_on_the_reported_seeds_but_not_the_best(dirs):
    meta = _run("toy_checked", dirs)
    frame = runner.load("toy_checked", dirs["results_dir"]).frame
    pilot = frame[frame["stage"] == "pilot"]
    chosen = runner_toy.three_best_rates(pilot.drop(columns="unit"))
    check = frame[frame["stage"] == "check"]
    assert set(check["seed"]) == {10, 11, 12}
    best = {json.loads(r["arm"])[0]: r["best_lr"] for r in meta["best_rates"]}
    for arm in ("fast", "slow"):
        want = set(chosen.loc[chosen["arm"] == arm, "lr"]) - {best[arm]}
        assert len(want) == 2 and set(check.loc[check["arm"] == arm, "lr"]) == want
        assert {r["arm"]: r["rates"] for r in meta["check_rates"]}[f'["{arm}"]'] == sorted(want | {best[arm]})
    assert meta["config"]["tuning"]["check_stage"] is True
    assert "check_stage" not in runner.experiment("toy_tuned").config()["tuning"]  # other hashes unchanged
    # a check unit re-runs from the stored check rates, to the same rows
    fresh, stored = runner.rerun_unit("toy_checked", meta["units"] - 1, results_dir=dirs["results_dir"])
    assert set(fresh["stage"]) == {"check"} and len(fresh) > 0
    pd.testing.assert_frame_equal(fresh, stored)


def test_a_killed_run_resumes_and_loses_only_the_unit_in_flight(tmp_path):
    log = tmp_path / "units.log"
    env = {**os.environ, "RUNNER_TOY_LOG": str(log), "RUNNER_TOY_SLEEP": "0.4", "PYTHONPATH": str(TESTS)}
    cmd = [sys.executable, "-m", "helpers.evidence.runner", "--module", "runner_toy", "--only", "toy",
           "--cache", str(tmp_path / "cache"), "--results", str(tmp_path / "results")]
    (tmp_path / "results").mkdir()
    proc = subprocess.Popen(cmd, cwd=ROOT, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    deadline = time.monotonic() + 60
    while len(list((tmp_path / "cache" / "toy").glob("*.pkl"))) < 2 and time.monotonic() < deadline:
        time.sleep(0.05)
    proc.send_signal(signal.SIGKILL)
    proc.wait()
    done_before = len(list((tmp_path / "cache" / "toy").glob("*.pkl")))
    assert 2 <= done_before < 6, "the kill came too late to test a resume"
    assert not (tmp_path / "results" / "toy.csv.gz").exists()
    started_before = len(log.read_text().splitlines())
    assert started_before <= done_before + 1  # at most one unit was in flight

    subprocess.run(cmd, cwd=ROOT, env=env, check=True, capture_output=True)
    started = log.read_text().splitlines()
    assert len(started) - started_before == 6 - done_before  # only what was missing ran again
    assert len(started) <= 6 + 1  # in all, at most the one unit in flight was lost
    assert not list((tmp_path / "cache" / "toy").glob("*.tmp"))
    assert len(runner.load("toy", tmp_path / "results").frame) == 3 * 4 * 30


def test_load_names_the_command_when_results_are_missing(tmp_path):
    with pytest.raises(FileNotFoundError, match=r"make experiments ONLY=nothing_here"):
        runner.load("nothing_here", tmp_path)


def test_print_verdicts_reads_the_stored_words(capsys):
    stored = runner.load("small_transformer").verdicts
    key = "steps, Pre-LN vs no norm"
    runner.print_verdicts("small_transformer", key)
    assert capsys.readouterr().out == f"{key}: {stored[key]}\n"
    with pytest.raises(KeyError, match="stores no verdict 'nope'"):
        runner.print_verdicts("small_transformer", "nope")


def test_units_trained_in_worker_processes_store_the_same_bytes_as_one_after_another(tmp_path, monkeypatch):
    monkeypatch.setenv("RUNNER_TOY_SLEEP", "0")
    monkeypatch.setenv("PYTHONPATH", os.pathsep.join([str(TESTS), os.environ.get("PYTHONPATH", "")]))
    tables = {}
    for jobs in (1, 2):
        log = tmp_path / f"units{jobs}.log"
        monkeypatch.setenv("RUNNER_TOY_LOG", str(log))
        (tmp_path / f"results{jobs}").mkdir()
        meta = runner.run("toy_tuned", cache_dir=tmp_path / f"cache{jobs}", results_dir=tmp_path / f"results{jobs}",
                          progress=False, log=lambda m: None, jobs=jobs, modules=("runner_toy",))
        assert len(log.read_text().splitlines()) == meta["units"]  # every unit trained once, in a worker or not
        tables[jobs] = (tmp_path / f"results{jobs}" / "toy_tuned.csv.gz").read_bytes()
    assert tables[1] == tables[2]


def test_jobs_must_be_a_positive_int(dirs):
    with pytest.raises(ValueError, match="argument 'jobs' must be a positive int, got 0"):
        _run("toy", dirs, jobs=0)


def test_a_timed_experiment_trains_one_unit_at_a_time_whatever_jobs_says(dirs, monkeypatch):
    runner.register(runner.Experiment(
        name="toy_timed", notebook="none", train=runner_toy.train, grid={"lr": (0.1, 0.2)}, seeds=(0, 1),
        steps=5, seeds_per_unit=2, budget_s=10, timed_columns=("loss",)))

    def refuse(*args, **kwargs):
        raise AssertionError("a timed experiment went to the worker pool")

    monkeypatch.setattr(runner, "_train_in_parallel", refuse)
    meta = _run("toy_timed", dirs, jobs=2)
    assert meta["units"] == 2 and _trained(dirs) == 2


def test_every_experiment_is_found_by_importing_its_package_with_no_list_kept_by_hand():
    modules = runner.experiment_modules()
    assert "helpers.experiments.lstm_adding" in modules and "helpers.experiments.rnn_models" in modules
    found = {name: exp for name, exp in runner._discover().items() if exp.train.__module__ in modules}
    stored = {path.name.removesuffix(".json") for path in runner.RESULTS_DIR.glob("*.json")}
    assert stored == set(found)  # every stored result has its declaration, and every declaration its result
