"""Experiments as data: each one declared once, run by one runner, cached per unit, shipped as results.

A notebook that tests a claim needs more runs than its 20 seconds allow, and a verdict that
does not hinge on one seed or one CPU. So the runs happen here, ahead of time, and the
notebooks read what they produced:

- An :class:`Experiment` is declared once, in the topic module of the notebook that reads it:
  its name, the function that trains one *unit*, the grid, the seeds, the step cap and the
  threshold. A unit is one run, or a few runs (about 10 at most) trained together as one
  stacked network.
- :func:`run` trains every unit that is not cached yet, each in turn or ``jobs`` at a time in
  worker processes (one thread each; the results do not depend on it), with a progress bar
  (tqdm, with the time left). A finished unit is written to the cache atomically (a
  temporary file, then a rename), so a run killed at any moment loses only the units in
  flight (one per job), and running again does only what is missing. A cache entry made for another
  config, or that cannot be read, is refused with a message and trained again.
- When every unit is there, the results are written as package data, so that Colab has
  them too: ``helpers/evidence/results/<name>.csv.gz`` (a tidy table, one row per run and recorded
  step) and ``helpers/evidence/results/<name>.json`` (the config and its hash, the seeds, torch's
  version, the CPU, the threads, the commit, the wall time and the verdicts).
- :func:`load` reads them back. Verdicts are computed from the *stored* table by the
  experiment's ``summarize``, so anyone can recompute them and get the same words.

**Protocol for a tuned experiment** (:class:`Tuning`): each arm's learning rate is tuned on
a few *pilot* seeds over a grid of rates; then the reported runs use *fresh* seeds at each
arm's best rate. Tuning and reporting never share a seed, so the reported numbers are not
the lucky draws the tuning picked. Rows carry ``stage`` = ``"pilot"`` or ``"report"``, and
``"check"`` where the tuning re-trains chosen rates on the reported seeds (:class:`Tuning`).

Run it with ``make experiments`` (all) or ``make experiments ONLY=name``; the command line
is ``python -m helpers.evidence.runner --help``.
"""

from __future__ import annotations

import argparse
import hashlib
import importlib
import importlib.resources
import io
import itertools
import json
import math
import os
import pickle
import pkgutil
import platform
import re
import subprocess
import sys
import time
import warnings
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path

import pandas as pd
import torch

from helpers.evidence.verdicts import Verdict, as_verdict

#: The package whose modules declare the set's experiments: each module registers its own when
#: imported, and the runner imports every module of the package to find them, so an experiment is
#: declared in one place only.
EXPERIMENTS_PACKAGE = "helpers.experiments"

#: Where results ship: inside the package, so ``pip install`` carries them.
RESULTS_DIR = Path(__file__).resolve().parent / "results"

#: Where finished units are cached: beside the package in a checkout (ignored by git).
CACHE_DIR = Path(__file__).resolve().parents[2] / ".experiments-cache"

#: Every stored table keeps at least this many first steps of each run, unsubsampled: the
#: reproducibility test re-runs them.
REPRO_STEPS = 20

#: Every declared experiment, by name.
EXPERIMENTS: dict[str, Experiment] = {}


@dataclass(frozen=True)
class Tuning:
    """How a tuned experiment picks each arm's learning rate before the reported runs.

    Args:
        key: the parameter of ``train`` that holds the rate (for example ``"lr"``).
        rates: the grid of rates, at least 5, neighbours at most half a decade apart.
        pilot_seeds: the seeds of the tuning runs; the experiment's ``seeds`` must not reuse them.
        score: ``score(frame) -> DataFrame`` with the arm's grid keys, ``key`` and ``score``,
            one row per (arm, rate), lower is better (aggregated over the pilot seeds).
        learned_below: a best score at or above this means "did not learn at any rate".
        check_rates: ``check_rates(pilot) -> DataFrame`` with the arm's grid keys and ``key``, one
            row per (arm, rate): rates to train again on the reported seeds, in a third stage
            (``"check"``), for a property that a few pilot seeds cannot settle (for example which
            rates around an arm's largest stable pilot rate still train on every seed). An arm's
            best rate is never trained again there: its reported runs are those runs. ``None``
            (the default): no such stage.
    """

    key: str
    rates: tuple[float, ...]
    pilot_seeds: tuple[int, ...]
    score: Callable[[pd.DataFrame], pd.DataFrame]
    learned_below: float
    check_rates: Callable[[pd.DataFrame], pd.DataFrame] | None = None


@dataclass(frozen=True)
class Experiment:
    r"""One experiment, declared once.

    Args:
        name: how ``make experiments ONLY=name`` and :func:`load` call it.
        notebook: the notebook that reads its results.
        train: trains one unit: ``train(**params, seeds=[...], steps=n)`` returns a tidy
            DataFrame with a ``step`` column and one row per (run, step).
        grid: ``{parameter: values}``; the runs are the product of the values and the seeds.
        seeds: the seeds of the reported runs.
        steps: the step cap. A run that has not reached ``threshold`` by then is censored.
        threshold: what counts as "reached" (``None`` where the experiment has no threshold).
        stack: the grid parameters whose values one unit trains together (passed to
            ``train`` as a tuple under the same name); the others are one value per unit.
        seeds_per_unit: how many seeds one unit trains together.
        fixed: more keyword arguments for ``train``, the same for every unit.
        summarize: ``summarize(stored_frame) -> {name: verdict}``: the verdicts, computed from
            the stored table, each a :class:`~helpers.evidence.verdicts.Verdict` record (plain words
            are stored as a note, which decides nothing).
        keep: ``keep(frame) -> frame``: the rows to store (subsampling long curves); it must keep
            the first :data:`REPRO_STEPS` steps of every run.
        tuning: the learning-rate protocol (:class:`Tuning`), or ``None`` for a fixed grid.
        budget_s: the stated time budget on 2 cores, in seconds.
        version: bump it when ``train`` (or the tuning's ``score``) changes what it computes: it
            changes the config hash, so the cache is refused and every unit runs again. Moving
            the code to another module changes nothing.
        repro_rtol, repro_atol: how close a unit re-trained on *another* machine must come to the
            stored rows in its first ``repro_steps`` steps (on the machine that made them:
            exactly): ``|fresh - stored| <= repro_atol + repro_rtol * |stored|``. The set's own
            experiments use an absolute bound (``repro_rtol=0``), 10 times what was measured
            (``repro_measured``): a column's values share one scale over a few first steps.
        repro_atol_by_column: ``{regex: atol}`` for the columns whose full name matches ``regex``
            (for example histogram counts, where one value can cross a bin edge).
        timed_columns: columns that hold wall-clock measurements: a property of the machine that
            made them (its fingerprint is stored), so the reproducibility test checks that they are
            positive and finite, never their values.
        repro_unit: which unit the reproducibility test re-trains (an index into :func:`units`,
            negative from the end): a cheap one whose first steps are not chaotic, so that a
            last-bit difference on another CPU stays a last-bit difference.
        repro_steps: how many first steps the reproducibility test re-trains (at most
            :data:`REPRO_STEPS`, which every stored run keeps): fewer where a last-bit difference
            grows too fast in every unit for :data:`REPRO_STEPS` steps to stay comparable. An
            experiment with ``timed_columns`` and no ``step`` column is re-run whole, with
            ``repro_steps`` as its step cap.
        repro_measured, repro_measured_by_column: the largest absolute difference measured
            between re-trainings of ``repro_unit`` on every kernel path one machine reaches and
            the stored rows (``python -m
            helpers.evidence.reproduction NAME``), over the columns under
            ``repro_atol`` and over those of each pattern of ``repro_atol_by_column`` (the same
            keys). Each absolute tolerance is at least 10 times its measured difference; ``None``
            only for an experiment not yet measured (a test refuses that for the set's own).
    """

    name: str
    notebook: str
    train: Callable[..., pd.DataFrame]
    grid: Mapping[str, Sequence]
    seeds: tuple[int, ...]
    steps: int
    threshold: float | None = None
    stack: tuple[str, ...] = ()
    seeds_per_unit: int = 1
    fixed: Mapping[str, object] = field(default_factory=dict)
    summarize: Callable[[pd.DataFrame], dict[str, str]] | None = None
    keep: Callable[[pd.DataFrame], pd.DataFrame] | None = None
    tuning: Tuning | None = None
    budget_s: float = 600.0
    version: int = 1
    repro_rtol: float = 1e-5
    repro_atol: float = 1e-6
    repro_atol_by_column: Mapping[str, float] = field(default_factory=dict)
    timed_columns: tuple[str, ...] = ()
    repro_unit: int = 0
    repro_steps: int = REPRO_STEPS
    repro_measured: float | None = None
    repro_measured_by_column: Mapping[str, float] = field(default_factory=dict)

    def repro_tolerance(self, column: str) -> tuple[float, float]:
        """``(rtol, atol)`` for ``column`` when a unit is re-trained on another machine."""
        for pattern, atol in self.repro_atol_by_column.items():
            if re.fullmatch(pattern, column):
                return self.repro_rtol, atol
        return self.repro_rtol, self.repro_atol

    def __post_init__(self):
        where = f"Experiment({self.name!r})"
        unknown = [k for k in self.stack if k not in self.grid]
        if unknown:
            raise ValueError(f"{where}: argument 'stack' must name grid parameters {list(self.grid)}, got {unknown}")
        if set(self.repro_measured_by_column) != set(self.repro_atol_by_column) and self.repro_measured is not None:
            raise ValueError(f"{where}: 'repro_measured_by_column' must have the keys of 'repro_atol_by_column' "
                             f"{sorted(self.repro_atol_by_column)}, got {sorted(self.repro_measured_by_column)}")
        if not 1 <= self.repro_steps <= REPRO_STEPS:
            raise ValueError(f"{where}: 'repro_steps' must be in 1..{REPRO_STEPS} (the steps every stored run "
                             f"keeps), got {self.repro_steps}")
        if not self.seeds or self.seeds_per_unit < 1 or self.steps < 1:
            raise ValueError(f"{where}: 'seeds' must be non-empty, 'seeds_per_unit' and 'steps' at least 1, "
                             f"got {self.seeds!r}, {self.seeds_per_unit}, {self.steps}")
        if self.tuning is not None:
            shared = sorted(set(self.tuning.pilot_seeds) & set(self.seeds))
            if shared:
                raise ValueError(f"{where}: the reported 'seeds' must be fresh, but {shared} are pilot seeds too")
            if self.tuning.key in self.grid:
                raise ValueError(f"{where}: the tuned parameter {self.tuning.key!r} must not be in 'grid' too")

    def config(self) -> dict:
        """Everything that decides the results, as plain JSON-able data.

        What is computed is named by the experiment's ``name`` and ``version`` (bumped when
        ``train`` or the tuning's ``score`` changes what it computes), never by where that code
        lives: moving a module changes no hash, so it forces no re-run.
        """
        tuning = None if self.tuning is None else {
            "key": self.tuning.key, "rates": list(self.tuning.rates), "pilot_seeds": list(self.tuning.pilot_seeds),
            "learned_below": self.tuning.learned_below}
        if self.tuning is not None and self.tuning.check_rates is not None:
            tuning["check_stage"] = True  # only where there is one: the other experiments' hashes stay
        return {"name": self.name, "version": self.version,
                "grid": {k: list(v) for k, v in self.grid.items()}, "seeds": list(self.seeds), "steps": self.steps,
                "threshold": self.threshold, "stack": list(self.stack), "seeds_per_unit": self.seeds_per_unit,
                "fixed": dict(self.fixed), "tuning": tuning}

    def config_hash(self) -> str:
        """A short SHA-256 of :meth:`config`: a cache entry made under another hash is refused."""
        return hashlib.sha256(json.dumps(self.config(), sort_keys=True, default=str).encode()).hexdigest()[:16]


def register(exp: Experiment) -> Experiment:
    """Add ``exp`` to :data:`EXPERIMENTS` (a module re-imported re-registers the same name)."""
    EXPERIMENTS[exp.name] = exp
    return exp


def experiment_modules() -> list[str]:
    """Every module of :data:`EXPERIMENTS_PACKAGE`, by name."""
    package = importlib.import_module(EXPERIMENTS_PACKAGE)
    return [f"{EXPERIMENTS_PACKAGE}.{info.name}" for info in pkgutil.iter_modules(package.__path__)]


def _discover(extra_modules: Sequence[str] = ()) -> dict[str, Experiment]:
    for module in (*experiment_modules(), *extra_modules):
        importlib.import_module(module)
    return EXPERIMENTS


def experiment(name: str) -> Experiment:
    """The experiment called ``name``; an unknown name gets an error that lists the known ones."""
    known = _discover()
    if name not in known:
        raise ValueError(f"unknown experiment {name!r}; the known ones are: {', '.join(sorted(known))}")
    return known[name]


# ------------------------------------------------------------------ units


def _grid_units(exp: Experiment, grid: Mapping[str, Sequence], seeds: Sequence[int], stack: Sequence[str],
                stage: str) -> list[dict]:
    """The product of ``grid`` and ``seeds``, split into units: stacked parameters and
    ``seeds_per_unit`` seeds go together, every other parameter is one value per unit."""
    singles = [k for k in grid if k not in stack]
    chunks = [list(seeds[i:i + exp.seeds_per_unit]) for i in range(0, len(seeds), exp.seeds_per_unit)]
    out = []
    for values in itertools.product(*(grid[k] for k in singles)):
        for chunk in chunks:
            params = dict(zip(singles, values, strict=True))
            params.update({k: tuple(grid[k]) for k in stack})
            out.append({"stage": stage, "params": params, "seeds": chunk})
    return out


def units(exp: Experiment, best: Mapping[tuple, float] | None = None,
          checks: Mapping[tuple, Sequence[float]] | None = None) -> list[dict]:
    """The units of ``exp``, in the order they run: ``{"stage", "params", "seeds"}`` each.

    A fixed-grid experiment has only ``"report"`` units. A tuned one has ``"pilot"`` units
    (every rate, pilot seeds) and, once ``best`` (``{arm: rate}``, an arm being a tuple of
    the grid's values in ``grid`` order) is known, ``"report"`` units: each arm at its rate,
    fresh seeds, arms not stacked (each has its own rate). Where the tuning has ``check_rates``
    and ``checks`` (``{arm: rates}``, from them) is known, ``"check"`` units follow: each arm at
    its check rates other than its best, stacked, on the reported seeds.
    """
    if exp.tuning is None:
        return _grid_units(exp, exp.grid, exp.seeds, exp.stack, "report")
    key = exp.tuning.key
    pilot = _grid_units(exp, {**exp.grid, key: exp.tuning.rates}, exp.tuning.pilot_seeds, (*exp.stack, key), "pilot")
    if best is None:
        return pilot
    report = []
    for arm in itertools.product(*exp.grid.values()):
        one = {k: (v,) for k, v in zip(exp.grid, arm, strict=True)}
        for u in _grid_units(exp, {**one, key: (best[arm],)}, exp.seeds, (), "report"):
            report.append(u)
    check = []
    for arm in itertools.product(*exp.grid.values()) if checks is not None else ():
        rates = tuple(r for r in checks.get(arm, ()) if r != best[arm])
        if rates:
            one = {k: (v,) for k, v in zip(exp.grid, arm, strict=True)}
            check.extend(_grid_units(exp, {**one, key: rates}, exp.seeds, (key,), "check"))
    return pilot + report + check


def _unit_id(exp: Experiment, unit: dict) -> str:
    text = json.dumps(unit, sort_keys=True, default=str)
    return hashlib.sha256(text.encode()).hexdigest()[:20]


def _train_unit(exp: Experiment, unit: dict, steps: int | None = None,
                fixed: Mapping[str, object] | None = None) -> pd.DataFrame:
    """Train one unit (with ``fixed`` in place of ``exp.fixed`` when given); its rows get ``stage``
    (tuned experiments only)."""
    fixed = exp.fixed if fixed is None else fixed
    frame = exp.train(**unit["params"], **fixed, seeds=list(unit["seeds"]), steps=steps or exp.steps)
    if not isinstance(frame, pd.DataFrame) or "seed" not in frame:
        raise ValueError(f"experiment {exp.name!r}: train() must return a DataFrame with a 'seed' column, "
                         f"got {type(frame).__name__} {list(getattr(frame, 'columns', []))}")
    return frame.assign(stage=unit["stage"]) if exp.tuning is not None else frame


# ------------------------------------------------------------------ cache


def _cache_path(exp: Experiment, unit: dict, cache_dir: Path) -> Path:
    return cache_dir / exp.name / f"{_unit_id(exp, unit)}.pkl"


def _write_atomic(path: Path, data: bytes) -> None:
    """Write ``data`` to a temporary file beside ``path``, then rename it: a kill mid-write
    leaves no half-file under the final name."""
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    with open(tmp, "wb") as f:
        f.write(data)
        f.flush()
        os.fsync(f.fileno())
    os.replace(tmp, path)


def _read_cached(exp: Experiment, unit: dict, path: Path, log: Callable[[str], None]) -> dict | None:
    """The cached entry of ``unit``, or ``None`` (with a message) when it is missing, unreadable
    or made for another config."""
    if not path.exists():
        return None
    try:
        with open(path, "rb") as f:
            entry = pickle.load(f)
        if not isinstance(entry, dict) or not isinstance(entry.get("frame"), pd.DataFrame):
            raise ValueError("not a cache entry")
    except Exception as err:  # a damaged file is as good as none: say so and train the unit again
        log(f"{exp.name}: cache entry {path.name} cannot be read ({type(err).__name__}: {err}); running it again")
        return None
    if entry.get("config_hash") != exp.config_hash() or entry.get("unit") != unit:
        log(f"{exp.name}: cache entry {path.name} was made for config {entry.get('config_hash')}, "
            f"not {exp.config_hash()}; running it again")
        return None
    return entry


# ------------------------------------------------------------------ metadata


def _cpu_model() -> str:
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith(("model name", "Model")):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or platform.machine()


def fingerprint() -> dict:
    """What decides the last bits of a run on this machine: torch's version and CPU kernels,
    the CPU, the threads, and the environment variables that change the code paths."""
    return {
        "torch": torch.__version__,
        "cpu": _cpu_model(),
        "machine": platform.machine(),
        "capability": torch.backends.cpu.get_cpu_capability(),
        "threads": torch.get_num_threads(),
        "env": {k: os.environ.get(k) for k in ("ATEN_CPU_CAPABILITY", "MKL_CBWR", "OMP_NUM_THREADS")},
    }


def _git_commit(exp: Experiment) -> str:
    """The checkout's commit, with ``+changes`` when the code that made ``exp`` (its topic module,
    this runner, the statistics) differs from it."""
    root = Path(__file__).resolve().parents[2]
    sources = {Path(sys.modules[exp.train.__module__].__file__), Path(__file__),
               Path(__file__).with_name("statistics.py")}
    try:
        commit = subprocess.run(["git", "rev-parse", "HEAD"], cwd=root, capture_output=True, text=True,
                                check=True).stdout.strip()
        dirty = subprocess.run(["git", "status", "--porcelain", "--", *map(str, sources)], cwd=root,
                               capture_output=True, text=True, check=True).stdout.strip()
    except (OSError, subprocess.CalledProcessError):
        return "unknown"
    return commit + ("+changes" if dirty else "")


# ------------------------------------------------------------------ running


def _best_rates(exp: Experiment, pilot: pd.DataFrame) -> tuple[dict, pd.DataFrame]:
    """``{arm: best rate}`` from the pilot rows, and the table behind it (stored in the metadata).

    An arm whose every pilot run diverged has no best rate; its reported runs use the smallest
    rate of the grid, and the table's note says it did not learn at any rate. Where the score has a
    ``stable`` column, a rate at which it is false wins only where no rate is stable.
    """
    from helpers.evidence.statistics import best_rates

    tuning, arm_keys = exp.tuning, list(exp.grid)
    scores = tuning.score(pilot)
    arm_col = scores[arm_keys].apply(lambda r: json.dumps([_plain(v) for v in r]), axis=1)
    table = best_rates(scores.drop(columns=arm_keys).assign(arm=arm_col).rename(columns={tuning.key: "lr"}),
                       arm="arm", lr="lr", score="score", learned_below=tuning.learned_below,
                       stable="stable" if "stable" in scores else None)
    best = {tuple(json.loads(a)): float(r) if math.isfinite(r) else min(tuning.rates)
            for a, r in zip(table["arm"], table["best_lr"], strict=True)}
    return best, table


def _check_rates(exp: Experiment, pilot: pd.DataFrame) -> dict[tuple, tuple[float, ...]]:
    """``{arm: rates}``: the tuning's ``check_rates`` on the pilot rows, each arm's rates sorted."""
    table, arm_keys = exp.tuning.check_rates(pilot), list(exp.grid)
    out: dict[tuple, list[float]] = {}
    for row in table.to_dict("records"):
        out.setdefault(tuple(_plain(row[k]) for k in arm_keys), []).append(float(row[exp.tuning.key]))
    return {arm: tuple(sorted(set(rates))) for arm, rates in out.items()}


def _plain(v):
    return v.item() if hasattr(v, "item") else v


def _train_and_cache(exp: Experiment, unit: dict, path: Path) -> dict:
    """Train ``unit`` on one thread and write its cache entry (atomically); returns the entry."""
    torch.set_num_threads(1)  # one thread: the same reduction order on every run of this machine
    t0 = time.perf_counter()
    frame = _train_unit(exp, unit)
    entry = {"config_hash": exp.config_hash(), "unit": unit, "frame": frame,
             "wall_s": time.perf_counter() - t0, "fingerprint": fingerprint()}
    _write_atomic(path, pickle.dumps(entry))
    return entry


def _worker(name: str, modules: Sequence[str], unit: dict, path: str) -> None:
    """A worker process's job (:func:`run` with ``jobs > 1``): find ``name``, train ``unit``, cache it.
    Nothing is returned: the parent reads the cache.

    ``modules`` lead with the module of the experiment's ``train`` (where every experiment here is
    declared): importing it alone spares a worker importing every other experiment (and SciPy); the
    others are searched only where it declares no ``name``.
    """
    for module in modules:
        importlib.import_module(module)
    _train_and_cache(EXPERIMENTS[name] if name in EXPERIMENTS else experiment(name), unit, Path(path))


def _train_in_parallel(exp: Experiment, todo: list[dict], cache_dir: Path, jobs: int, modules: Sequence[str],
                       log: Callable[[str], None], bar) -> int:
    """Train the units of ``todo`` that are not cached yet, ``jobs`` at a time, each in its own process
    on one thread; returns how many were trained.

    Units are independent (each draws from its own seeded generators), so a unit trained in a worker
    gives the same rows as in the parent; the parent then reads every unit back from the cache in
    order, so the stored results do not depend on ``jobs``. Workers are spawned, not forked: a fork
    of a process whose torch thread pools have started can hang.
    """
    import multiprocessing
    from concurrent.futures import ProcessPoolExecutor, as_completed

    missing = [u for u in todo if _read_cached(exp, u, _cache_path(exp, u, cache_dir), log) is None]
    if not missing:
        return 0
    ctx = multiprocessing.get_context("spawn")
    with ProcessPoolExecutor(max_workers=min(jobs, len(missing)), mp_context=ctx) as pool:
        futures = [pool.submit(_worker, exp.name, (exp.train.__module__, *modules), u, str(_cache_path(exp, u, cache_dir)))
                   for u in missing]
        for future in as_completed(futures):
            future.result()  # a unit that failed stops the run, with its error
            if bar is not None:
                bar.update(1)
    return len(missing)


def _stored_plan(exp: Experiment, meta: dict) -> tuple[dict | None, dict | None]:
    """``(best, checks)`` as :func:`units` takes them, from stored metadata: the rates the stored units ran at."""
    best = None
    if exp.tuning is not None:
        best = {tuple(json.loads(r["arm"])): min(exp.tuning.rates) if r["best_lr"] is None else r["best_lr"]
                for r in meta["best_rates"]}
    checks = None
    if "check_rates" in meta:
        checks = {tuple(json.loads(r["arm"])): tuple(r["rates"]) for r in meta["check_rates"]}
    return best, checks


def _stored_units(exp: Experiment, results_dir: Path, log: Callable[[str], None]) -> list[tuple[dict, pd.DataFrame, float]]:
    """The units of ``exp``'s stored results, ``(unit, rows, training seconds)`` each, in the order they ran.

    A clone has no cache, but its stored table holds every unit's rows (column ``unit``): a rerun that
    changes only how rates are chosen (the tuning's score on the pilot rows) or what is summarised
    needs to train only the units that are not stored. Nothing is taken where the table was made
    under another config, or where the experiment's ``keep`` would drop stored rows (the stored rows
    of a unit must be what ``keep`` keeps of it, as they are for every unit trained anew). Where the
    metadata predates per-unit times, each unit gets an equal share of the stored total.
    """
    meta_file, table = results_dir / f"{exp.name}.json", results_dir / f"{exp.name}.csv.gz"
    if not (meta_file.is_file() and table.is_file()):
        return []
    meta = json.loads(meta_file.read_text(encoding="utf-8"))
    if meta["config_hash"] != exp.config_hash():
        log(f"{exp.name}: the stored results were made for config {meta['config_hash']}; none of them is reused")
        return []
    every, frame = units(exp, *_stored_plan(exp, meta)), _read_back(table, meta)
    walls = meta.get("unit_wall_s") or [meta["wall_s"] / meta["units"]] * meta["units"]
    out = []
    for index, unit in enumerate(every):
        rows = frame[frame["unit"] == index].drop(columns="unit").reset_index(drop=True)
        if rows.empty or (exp.keep is not None and len(exp.keep(rows)) != len(rows)):
            log(f"{exp.name}: stored unit {index} cannot stand for a trained one; none of the stored units is reused")
            return []
        out.append((unit, rows, walls[index]))
    return out


def _cache_stored_units(exp: Experiment, cache_dir: Path, results_dir: Path, log: Callable[[str], None]) -> int:
    """Write a cache entry for every stored unit (:func:`_stored_units`) that has none; returns how many."""
    stored = _stored_units(exp, results_dir, log)
    if not stored:
        return 0
    fingerprint = json.loads((results_dir / f"{exp.name}.json").read_text(encoding="utf-8"))["fingerprint"]
    written = 0
    for unit, rows, wall in stored:
        path = _cache_path(exp, unit, cache_dir)
        if path.exists():
            continue
        entry = {"config_hash": exp.config_hash(), "unit": unit, "frame": rows, "wall_s": wall,
                 "fingerprint": fingerprint, "from_stored": True}
        _write_atomic(path, pickle.dumps(entry))
        written += 1
    if written:
        log(f"{exp.name}: {written} units taken from the stored results")
    return written


def run(name: str, *, cache_dir: Path = CACHE_DIR, results_dir: Path = RESULTS_DIR, progress: bool = True,
        log: Callable[[str], None] = print, jobs: int = 1, modules: Sequence[str] = ()) -> dict:
    """Train what is missing of experiment ``name``, then write its results. Returns the metadata.

    A second call finds every unit cached and only rewrites the results (identical bytes).
    ``jobs`` units train at a time, each in its own process on one thread (``modules``: extra
    modules the workers import to find ``name``, as ``--module``); the results are the same for
    any ``jobs``. An experiment with ``timed_columns`` runs one unit at a time whatever ``jobs``
    says. The stored ``wall_s`` is the sum of the units' training times, whatever ``jobs``.
    """
    if not isinstance(jobs, int) or jobs < 1:
        raise ValueError(f"run(): argument 'jobs' must be a positive int, got {jobs!r}")
    exp = experiment(name)
    if exp.timed_columns:
        jobs = 1  # a wall-clock measurement must not share the cores with another unit
    torch.set_num_threads(1)  # one thread: the same reduction order on every run of this machine
    started = time.perf_counter()
    _cache_stored_units(exp, cache_dir, results_dir, log)
    frames, trained, walls, prints = [], 0, [], []

    def do(todo: list[dict], bar) -> None:
        nonlocal trained
        if jobs > 1:
            in_pool = _train_in_parallel(exp, todo, cache_dir, jobs, modules, log, bar)
            trained += in_pool
            if bar is not None:
                bar.update(len(todo) - in_pool)  # the units found in the cache
        for unit in todo:
            path = _cache_path(exp, unit, cache_dir)
            entry = _read_cached(exp, unit, path, log)
            if entry is None:
                entry = _train_and_cache(exp, unit, path)
                trained += 1
            walls.append(entry["wall_s"])
            prints.extend(entry["fingerprint"].get("mixed", [entry["fingerprint"]]))
            frames.append(entry["frame"].assign(unit=len(frames)))
            if bar is not None and jobs == 1:
                bar.update(1)

    first = units(exp)
    n_report = 0
    if exp.tuning is not None:
        n_report = math.prod(len(v) for v in exp.grid.values()) * math.ceil(len(exp.seeds) / exp.seeds_per_unit)
    bar = None
    if progress:
        from tqdm.auto import tqdm

        bar = tqdm(total=len(first) + n_report, desc=exp.name, unit="unit")
    do(first, bar)
    best_table, checks = None, None
    if exp.tuning is not None:
        pilot = pd.concat(frames, ignore_index=True)
        best, best_table = _best_rates(exp, pilot)
        so_far = units(exp, best)
        do(so_far[len(first):], bar)
        if exp.tuning.check_rates is not None:
            checks = _check_rates(exp, pilot)
            todo = units(exp, best, checks)[len(so_far):]
            if bar is not None:
                bar.total += len(todo)
            do(todo, bar)
    if bar is not None:
        bar.close()

    frame, wall = pd.concat(frames, ignore_index=True), sum(walls)
    if exp.keep is not None:
        frame = exp.keep(frame).reset_index(drop=True)
    meta = {
        "name": exp.name, "notebook": exp.notebook, "config": exp.config(), "config_hash": exp.config_hash(),
        "seeds": list(exp.seeds), "units": len(frames), "rows": len(frame),
        "fingerprint": _one_fingerprint(prints), "commit": _git_commit(exp),
        "wall_s": round(wall, 1), "unit_wall_s": [round(w, 1) for w in walls], "budget_s": exp.budget_s,
        "dtypes": {c: str(t) for c, t in frame.dtypes.items()},
        "best_rates": None if best_table is None else json.loads(best_table.to_json(orient="records")),
    }
    if checks is not None:
        meta["check_rates"] = [{"arm": json.dumps([_plain(v) for v in arm]), "rates": list(rates)}
                               for arm, rates in checks.items()]
    table = _write_frame(frame, results_dir, exp.name)
    # verdicts from the table as stored (read back), so that anyone recomputes the same records
    meta["verdicts"] = summary(exp, _read_back(table, meta))
    _write_atomic(results_dir / f"{exp.name}.json", (json.dumps(meta, indent=1, sort_keys=True, default=str)
                                                     + "\n").encode())
    log(f"{exp.name}: {len(frames)} units ({trained} trained now, {len(frames) - trained} from the cache), "
        f"{meta['wall_s']:.0f} s of training in all (budget {exp.budget_s:.0f} s); "
        f"this call took {time.perf_counter() - started:.0f} s")
    if wall > exp.budget_s:
        warnings.warn(f"{exp.name}: {wall:.0f} s of training, over its budget of {exp.budget_s:.0f} s", stacklevel=2)
    return meta


def summary(exp: Experiment, frame: pd.DataFrame) -> dict[str, dict]:
    """``exp``'s verdicts on ``frame`` as stored: ``{key: record}``, each record
    :meth:`~helpers.evidence.verdicts.Verdict.to_dict`'s."""
    if exp.summarize is None:
        return {}
    return {key: as_verdict(value).to_dict() for key, value in exp.summarize(frame).items()}


def _one_fingerprint(prints: list[dict]) -> dict:
    """The fingerprint the units were trained under; ``"mixed"`` lists them all if they differ."""
    seen = [p for i, p in enumerate(prints) if p not in prints[:i]]
    return seen[0] if len(seen) == 1 else {"mixed": seen}


def _write_frame(frame: pd.DataFrame, results_dir: Path, name: str) -> Path:
    """The tidy table as gzip-compressed CSV, byte for byte the same for the same rows (no timestamp)."""
    path = results_dir / f"{name}.csv.gz"
    buf = io.BytesIO()
    frame.to_csv(buf, index=False, compression={"method": "gzip", "mtime": 0})
    _write_atomic(path, buf.getvalue())
    return path


def _read_back(path: Path, meta: dict) -> pd.DataFrame:
    with open(path, "rb") as f:
        return _parse(f, meta)


def _parse(f, meta: dict) -> pd.DataFrame:
    return pd.read_csv(f, compression="gzip", dtype=meta["dtypes"])


# ------------------------------------------------------------------ reading


@dataclass(frozen=True)
class StoredResult:
    """An experiment's stored table and metadata (:func:`load`)."""

    frame: pd.DataFrame
    meta: dict

    @property
    def records(self) -> dict[str, Verdict]:
        """The stored verdicts, ``{key: record}``."""
        return {key: Verdict.from_dict(data) for key, data in self.meta.get("verdicts", {}).items()}

    @property
    def verdicts(self) -> dict[str, str]:
        """The stored verdicts' words, ``{key: words}``, generated from the records."""
        return {key: record.words for key, record in self.records.items()}


def load(name: str, results_dir: Path | None = None) -> StoredResult:
    """The stored results of experiment ``name``: read from the installed package (Colab too).

    Raises ``FileNotFoundError`` naming ``make experiments ONLY=name`` when they are missing.
    """
    if results_dir is None:
        base = importlib.resources.files("helpers.evidence") / "results"
    else:
        base = results_dir
    table, meta_file = base / f"{name}.csv.gz", base / f"{name}.json"
    if not (table.is_file() and meta_file.is_file()):
        known = sorted(p.name[:-5] for p in base.iterdir() if p.name.endswith(".json")) if base.is_dir() else []
        raise FileNotFoundError(f"no stored results for experiment {name!r} (stored: {', '.join(known) or 'none'}); "
                                f"make them with `make experiments ONLY={name}`")
    meta = json.loads(meta_file.read_text(encoding="utf-8"))
    with table.open("rb") as f:
        return StoredResult(_parse(f, meta), meta)


def records(name: str, results_dir: Path | None = None) -> dict[str, Verdict]:
    """The stored verdicts of experiment ``name``, ``{key: record}``, read from its metadata alone (what
    a ledger needs: :func:`load` reads the table too). Raises ``FileNotFoundError`` as :func:`load` does."""
    base = importlib.resources.files("helpers.evidence") / "results" if results_dir is None else results_dir
    meta_file = base / f"{name}.json"
    if not meta_file.is_file():
        return load(name, results_dir).records  # raises, naming what is stored
    meta = json.loads(meta_file.read_text(encoding="utf-8"))
    return {key: Verdict.from_dict(data) for key, data in meta.get("verdicts", {}).items()}


def resummarize(name: str, results_dir: Path | None = None, log: Callable[[str], None] = print) -> dict:
    """Recompute the stored verdicts of experiment ``name`` from its stored table, without training,
    and rewrite its JSON file if they changed (``python -m helpers.evidence.runner --resummarize``).

    For reworded verdicts (a changed ``summarize``): the cache that made the table is not in a
    clone, and retraining for new words would be a waste. The table must have been made under the
    config declared today (same hash), or the words would describe another experiment.

    Returns:
        ``{key: (old words or None, new words or None)}`` for every verdict whose words changed; a
        record whose words stay but whose data changed (a field added) is rewritten too.
    """
    exp = experiment(name)
    results_dir = RESULTS_DIR if results_dir is None else results_dir
    meta_file, table = results_dir / f"{name}.json", results_dir / f"{name}.csv.gz"
    if not (meta_file.is_file() and table.is_file()):
        raise FileNotFoundError(f"no stored results for experiment {name!r} in {results_dir}; "
                                f"make them with `make experiments ONLY={name}`")
    meta = json.loads(meta_file.read_text(encoding="utf-8"))
    if meta["config_hash"] != exp.config_hash():
        raise ValueError(f"the stored results of {name!r} were made for config {meta['config_hash']}, not today's "
                         f"{exp.config_hash()}: retrain with `make experiments ONLY={name}`")
    old = meta.get("verdicts", {})
    new = summary(exp, _read_back(table, meta))

    def words(record):  # records, or the plain words of results stored before records
        return record if record is None or isinstance(record, str) else record["words"]

    changed = {k: (words(old.get(k)), words(new.get(k))) for k in sorted(set(old) | set(new))
               if words(old.get(k)) != words(new.get(k))}
    if new != old:
        meta["verdicts"] = new
        _write_atomic(meta_file, (json.dumps(meta, indent=1, sort_keys=True, default=str) + "\n").encode())
    log(f"{name}: the words of {len(changed)} of {len(new)} verdicts changed")
    return changed


def print_verdicts(name: str, *keys: str) -> None:
    """Print the stored verdicts of experiment ``name`` named ``keys``, word for word, one per line
    (``key: words``), as a notebook shows them."""
    verdicts = load(name).verdicts
    for key in keys:
        print(f"{key}: {_verdict(name, verdicts, key)}")


def _verdict(name: str, verdicts: Mapping[str, str], key: str) -> str:
    if key not in verdicts:
        raise KeyError(f"experiment {name!r} stores no verdict {key!r}; it stores {len(verdicts)}, e.g. "
                       f"{sorted(verdicts)[:3]}")
    return verdicts[key]


def rerun_unit(name: str, unit_index: int | None = None, steps: int | None = None,
               results_dir: Path | None = None,
               change: Mapping[str, Callable[[object], object]] | None = None) -> tuple[pd.DataFrame, pd.DataFrame]:
    """Re-train stored unit ``unit_index`` (default: the experiment's ``repro_unit``) for its first
    ``steps`` steps (default: the experiment's ``repro_steps``): ``(fresh, stored)`` rows.

    For the reproducibility test: on the machine that made the results (same :func:`fingerprint`)
    the two agree exactly; elsewhere to rounding. An experiment without a ``step`` column is
    re-run whole (a timed one with ``steps`` as its step cap). ``change`` (``{parameter: function
    of its value}``, a unit's parameter or a ``fixed`` one) plants a change, to show that the test
    catches it.
    """
    exp, stored = experiment(name), load(name, results_dir)
    steps = exp.repro_steps if steps is None else steps
    unit_index = exp.repro_unit if unit_index is None else unit_index
    every = units(exp, *_stored_plan(exp, stored.meta))
    unit_index %= len(every)  # a negative index counts from the end
    unit, fixed = every[unit_index], dict(exp.fixed)
    for key, fn in (change or {}).items():
        where = unit["params"] if key in unit["params"] else fixed
        if key not in where:
            raise ValueError(f"rerun_unit(): argument 'change' names {key!r}, which is neither a parameter of "
                             f"the unit {sorted(unit['params'])} nor a fixed one {sorted(fixed)}")
        if where is unit["params"]:
            unit = {**unit, "params": {**unit["params"]}}
            where = unit["params"]
        where[key] = fn(where[key])
    old = stored.frame[stored.frame["unit"] == unit_index].drop(columns="unit")
    if "step" in old:
        # rows recorded after the last step (a final state at step == steps) are not in the stored
        # first steps: compare the steps both have
        fresh = _train_unit(exp, unit, steps=steps, fixed=fixed)
        fresh, old = fresh[fresh["step"] < steps], old[old["step"] < steps]
    else:
        # Re-run whole. A timed experiment's runs are its step cap long: re-timed at ``steps``, its
        # bookkeeping is compared exactly and its times checked positive, in a fraction of the time.
        fresh = _train_unit(exp, unit, steps=steps if exp.timed_columns else None, fixed=fixed)
    return fresh.astype(old.dtypes.to_dict()).reset_index(drop=True), old.reset_index(drop=True)


# ------------------------------------------------------------------ command line


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m helpers.evidence.runner", description=__doc__.split("\n\n")[0])
    parser.add_argument("--only", action="append", metavar="NAME", help="run only this experiment (repeatable)")
    parser.add_argument("--list", action="store_true", help="list the experiments and their budgets, then stop")
    parser.add_argument("--module", action="append", default=[], help=argparse.SUPPRESS)  # tests' own experiments
    parser.add_argument("--cache", type=Path, default=CACHE_DIR, help=f"cache folder (default {CACHE_DIR})")
    parser.add_argument("--results", type=Path, default=RESULTS_DIR, help=f"results folder (default {RESULTS_DIR})")
    parser.add_argument("--jobs", type=int, default=1, metavar="N",
                        help="train N units at a time, each in its own process on one thread (default 1)")
    parser.add_argument("--resummarize", action="store_true",
                        help="recompute the stored verdicts from the stored tables, training nothing")
    args = parser.parse_args(argv)
    known = _discover(args.module)
    if args.list:
        for exp in known.values():
            print(f"{exp.name:32s} {exp.notebook:36s} budget {exp.budget_s:6.0f} s")
        return 0
    names = args.only or list(known)
    try:
        for name in names:
            experiment(name)  # every name checked before anything runs
    except ValueError as err:
        print(f"error: {err}", file=sys.stderr)
        return 2
    for name in names:
        if args.resummarize:
            for key, (before, after) in resummarize(name, results_dir=args.results).items():
                print(f"  {key}:\n    was: {before}\n    now: {after}")
        else:
            run(name, cache_dir=args.cache, results_dir=args.results, jobs=args.jobs, modules=args.module)
    return 0


if __name__ == "__main__":
    # Run as `python -m helpers.evidence.runner`, this file is `__main__`, a second copy of the module;
    # the topic modules register into `helpers.evidence.runner`, so its main() must do the work.
    from helpers.evidence import runner as _registry

    sys.exit(_registry.main())
