"""How far a re-trained unit can land from its stored rows: measured on every kernel path one
machine reaches, so that each experiment's reproduction tolerance is derived, not guessed.

The reproducibility test (``tests/test_stored_results.py``) re-trains one unit of every stored
experiment for its first steps and compares the rows with the stored ones: exactly on the machine
that made them, within ``(repro_rtol, repro_atol)`` elsewhere. Another CPU sums in another order
(AVX-512, AVX2 or plain SSE in PyTorch's kernels; Intel's or AMD's path in the BLAS; one thread
or two), so the last bits differ, and training carries them forward. How far they get in a few
steps is a property of the computation, and it can be measured on one machine:

- PyTorch's CPU kernels take the vectorisation path named by ``ATEN_CPU_CAPABILITY``
  (``default``, ``avx2``, ``avx512``: any at or below the CPU's own);
- ``MKL_CBWR=COMPATIBLE`` puts the BLAS on its conditional-reproducibility code path, the one
  another vendor's CPU gets;
- one thread or two changes the order of the parallel reductions.

:func:`measure` re-trains the experiment's ``repro_unit`` once per path (each in its own Python,
since the environment is read when torch loads) and compares every pair among those runs and the
stored rows. The largest absolute difference over the first ``repro_steps`` steps is what
``Experiment.repro_measured`` records (and ``repro_measured_by_column`` for the columns that have
a bound of their own); each bound is at least 10 times it. By step, it shows whether a unit's
first steps are calm (a difference that stays near the last bit) or chaotic (one that grows by
orders of magnitude), which decides ``repro_unit`` and ``repro_steps``.

Run it as ``python -m helpers.evidence.reproduction NAME [NAME ...]``.
"""

from __future__ import annotations

import argparse
import itertools
import os
import pickle
import re
import subprocess
import sys
import tempfile
from collections.abc import Sequence
from pathlib import Path

import numpy as np
import pandas as pd
import torch

from helpers.evidence import runner

#: PyTorch's CPU capabilities, lowest first; a process can be put on any at or below its CPU's own.
_CAPABILITIES = ("DEFAULT", "AVX2", "AVX512")


def kernel_paths() -> dict[str, tuple[dict[str, str], int]]:
    """The kernel paths this machine reaches: ``{label: (environment, threads)}``.

    The CPU's own capability with one thread (how the runner trains), each lower capability,
    the BLAS's compatible path, and two threads.
    """
    native = torch.backends.cpu.get_cpu_capability()
    lower = _CAPABILITIES[:_CAPABILITIES.index(native)] if native in _CAPABILITIES else ("DEFAULT",)
    paths: dict[str, tuple[dict[str, str], int]] = {f"native ({native.lower()})": ({}, 1)}
    for cap in lower:
        paths[cap.lower()] = ({"ATEN_CPU_CAPABILITY": cap.lower()}, 1)
    paths["MKL_CBWR=COMPATIBLE"] = ({"MKL_CBWR": "COMPATIBLE"}, 1)
    paths["2 threads"] = ({}, 2)
    return paths


def needed_rtol(a: np.ndarray, b: np.ndarray, atol: float) -> float:
    """The smallest ``rtol`` for which ``|a - b| <= atol + rtol * |b|`` holds everywhere (as
    ``numpy.testing.assert_allclose`` checks): ``max(max(0, |a - b| - atol) / |b|)``.

    0 when ``a`` and ``b`` agree within ``atol``; ``inf`` when they differ by more than ``atol``
    where ``b`` is 0. NaNs must sit in the same places (else ``inf``).
    """
    a, b = np.asarray(a, float), np.asarray(b, float)
    if a.shape != b.shape:
        raise ValueError(f"needed_rtol(): arguments 'a' and 'b' must have one shape, got {a.shape} and {b.shape}")
    nan_a, nan_b = np.isnan(a), np.isnan(b)
    if (nan_a != nan_b).any():
        return float("inf")
    a, b = a[~nan_a], b[~nan_b]
    excess = np.maximum(np.abs(a - b) - atol, 0.0)
    if not excess.any():
        return 0.0
    with np.errstate(divide="ignore", invalid="ignore"):
        ratio = np.where(excess > 0, excess / np.abs(b), 0.0)
    return float(np.max(ratio))


def _compared_columns(exp: runner.Experiment, frame: pd.DataFrame) -> list[str]:
    """The numeric columns the reproducibility test compares (not the timed ones)."""
    return [c for c in frame.select_dtypes("number").columns if c not in exp.timed_columns and c != "step"]


def step_table(exp: runner.Experiment, runs: dict[str, pd.DataFrame]) -> pd.DataFrame:
    """The largest differences between any two of ``runs`` (``{label: rows}``, the same rows in the
    same order) over the first steps, column by column.

    Returns one row per (step ``k``, column), over the rows with ``step <= k`` (a single step
    ``"all"`` for an experiment without steps): ``needed_rtol`` (:func:`needed_rtol` at the
    column's declared ``atol``, the largest over pairs), ``pair`` (where it is) and ``max_abs``
    (the largest absolute difference over pairs).
    """
    frames = list(runs.values())
    steps = sorted(frames[0]["step"].unique()) if "step" in frames[0] else [None]
    out = []
    for k in steps:
        for column in _compared_columns(exp, frames[0]):
            _, atol = exp.repro_tolerance(column)
            row = {"step": "all" if k is None else int(k), "column": column, "needed_rtol": 0.0, "pair": "",
                   "max_abs": 0.0}
            for (la, fa), (lb, fb) in itertools.combinations(runs.items(), 2):
                mask = np.ones(len(fb), bool) if k is None else (fb["step"] <= k).to_numpy()
                a, b = fa[column].to_numpy(float)[mask], fb[column].to_numpy(float)[mask]
                r = needed_rtol(a, b, atol)
                if r > row["needed_rtol"]:
                    row.update(needed_rtol=r, pair=f"{la} vs {lb}")
                both = ~(np.isnan(a) | np.isnan(b))
                if both.any():
                    row["max_abs"] = max(row["max_abs"], float(np.max(np.abs(a[both] - b[both]))))
            out.append(row)
    return pd.DataFrame(out).set_index(["step", "column"])


def worst_by_step(table: pd.DataFrame) -> pd.DataFrame:
    """:func:`step_table` reduced to one row per step: the largest ``needed_rtol`` (and its column
    and pair) and the largest ``max_abs`` (and its column)."""
    rows = []
    for step, part in table.groupby(level="step", sort=False):
        part = part.droplevel("step")
        r, a = part["needed_rtol"].idxmax(), part["max_abs"].idxmax()
        rows.append({"step": step, "needed_rtol": part.at[r, "needed_rtol"], "column": r,
                     "pair": part.at[r, "pair"], "max_abs": part.at[a, "max_abs"], "max_abs column": a})
    return pd.DataFrame(rows).set_index("step")


def measured_differences(exp: runner.Experiment, table: pd.DataFrame,
                         steps: int | None = None) -> tuple[float, dict[str, float]]:
    """What ``Experiment.repro_measured`` and ``repro_measured_by_column`` record, from
    :func:`step_table`: the largest absolute difference over the first ``steps`` steps (default:
    the experiment's ``repro_steps``), over the columns under ``repro_atol`` and over those of each
    pattern of ``repro_atol_by_column``."""
    steps = exp.repro_steps if steps is None else steps
    levels = table.index.get_level_values("step")
    last = "all" if "all" in set(levels) else max(s for s in levels if s < steps)
    part = table.xs(last, level="step")["max_abs"]
    by_pattern = {p: 0.0 for p in exp.repro_atol_by_column}
    rest = 0.0
    for column, value in part.items():
        pattern = next((p for p in exp.repro_atol_by_column if re.fullmatch(p, column)), None)
        if pattern is None:
            rest = max(rest, value)
        else:
            by_pattern[pattern] = max(by_pattern[pattern], value)
    return rest, by_pattern


def _rerun_in_subprocess(name: str, env: dict[str, str], threads: int, steps: int,
                         unit: int | None) -> tuple[pd.DataFrame, pd.DataFrame, str]:
    """Re-train ``name``'s unit in a fresh Python with ``env`` added and ``threads`` threads."""
    with tempfile.TemporaryDirectory() as tmp:
        out = Path(tmp) / "rows.pkl"
        cmd = [sys.executable, "-m", "helpers.evidence.reproduction", "--worker", name, "--threads", str(threads),
               "--steps", str(steps), "--out", str(out)]
        if unit is not None:
            cmd += ["--unit", str(unit)]
        clean = {k: v for k, v in os.environ.items() if k not in ("ATEN_CPU_CAPABILITY", "MKL_CBWR")}
        subprocess.run(cmd, env={**clean, **env}, check=True)
        with open(out, "rb") as f:
            return pickle.load(f)


def measure(name: str, steps: int = runner.REPRO_STEPS, unit: int | None = None,
            log=print) -> tuple[pd.DataFrame, dict[str, pd.DataFrame]]:
    """Re-train ``name``'s ``repro_unit`` (or ``unit``) for ``steps`` steps on every path of
    :func:`kernel_paths`; returns :func:`step_table` over those runs and the stored rows, and the
    runs themselves (``{label: rows}``, the stored rows under ``"stored"``)."""
    exp = runner.experiment(name)
    runs: dict[str, pd.DataFrame] = {}
    for label, (env, threads) in kernel_paths().items():
        fresh, old, capability = _rerun_in_subprocess(name, env, threads, steps, unit)
        log(f"{name}: re-trained on {label} (torch reports {capability})")
        runs.setdefault("stored", old)
        runs[label] = fresh
    return step_table(exp, runs), runs


def _worker(name: str, threads: int, steps: int, unit: int | None, out: Path) -> None:
    torch.set_num_threads(threads)
    fresh, old = runner.rerun_unit(name, unit_index=unit, steps=steps)
    with open(out, "wb") as f:
        pickle.dump((fresh, old, torch.backends.cpu.get_cpu_capability()), f)


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m helpers.evidence.reproduction", description=__doc__.split("\n\n")[0])
    parser.add_argument("names", nargs="*", metavar="NAME", help="experiments to measure (default: all)")
    parser.add_argument("--steps", type=int, default=runner.REPRO_STEPS, help="first steps to re-train")
    parser.add_argument("--unit", type=int, default=None, help="unit index (default: the experiment's repro_unit)")
    parser.add_argument("--save", type=Path, default=None, help="also write each experiment's runs here (pickle)")
    parser.add_argument("--worker", metavar="NAME", help=argparse.SUPPRESS)
    parser.add_argument("--threads", type=int, default=1, help=argparse.SUPPRESS)
    parser.add_argument("--out", type=Path, help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.worker:
        _worker(args.worker, args.threads, args.steps, args.unit, args.out)
        return 0
    names = args.names or sorted(runner._discover())
    for name in names:
        exp = runner.experiment(name)
        table, runs = measure(name, steps=min(args.steps, runner.REPRO_STEPS), unit=args.unit)
        if args.save is not None:
            args.save.mkdir(parents=True, exist_ok=True)
            with open(args.save / f"{name}.pkl", "wb") as f:
                pickle.dump(runs, f)
        with pd.option_context("display.width", 200, "display.max_columns", 10):
            print(f"\n{name} (unit {exp.repro_unit if args.unit is None else args.unit}; declared atol "
                  f"{exp.repro_atol:g} over {exp.repro_steps} steps, measured {exp.repro_measured}):")
            print(worst_by_step(table).to_string(float_format=lambda v: f"{v:.3g}"))
            rest, by_pattern = measured_differences(exp, table)
            print(f"over the first {exp.repro_steps} steps: repro_measured={rest:.3g}, "
                  f"repro_measured_by_column={ {p: float(f'{v:.3g}') for p, v in by_pattern.items()} }")
    return 0


if __name__ == "__main__":
    sys.exit(main())
