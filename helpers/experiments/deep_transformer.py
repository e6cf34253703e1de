"""A deeper Transformer on a harder copy task, where the placements of LayerNorm part ways.

``small_transformer`` (4 blocks, ``n`` 8, ``V`` 16) is too easy to tell its arms apart: no norm
reaches the threshold in 30 to 40 steps, the placements tie, and its 40-step warm-up spans the
whole time to the threshold. This module declares ``deep_transformer`` (read by deep dive 13): the
same :class:`~helpers.experiments.small_transformer.StackedDecoder`, training loop
(:func:`~helpers.experiments.small_transformer.copy_runs`), statistics and verdict machinery, on a
regime sized by a probe (see "How it was sized" above the registration) so that Pre-LN needs a few
hundred steps and Post-LN without warm-up fails at rates where Pre-LN trains:

- :data:`BLOCKS` blocks of width :data:`WIDTH`, :data:`HEADS` heads, on the copy task with
  :data:`N_COPY` tokens from :data:`VOCAB`; the threshold halfway between the no-copy level and the
  floor (:data:`LEVELS`), fixed before any run;
- arms (:data:`ARMS`): no norm, Pre-LN, Post-LN, and Post-LN with a linear warm-up of
  :data:`WARMUP` steps;
- each arm's rate tuned on 3 pilot seeds over :data:`RATES` (6 rates, neighbours a factor 10/3 or 3
  apart), reported on 10 fresh seeds at its best rate, held-out loss every :data:`EVAL_EVERY` steps on
  :data:`HELDOUT_SIZE` sequences, a cap of :data:`STEPS` steps;
- the largest stable rate measured on the 10 reported seeds, at the 4 rates of the grid from one
  below each arm's largest stable pilot rate to two above it (the runner's ``"check"`` stage,
  :func:`boundary_rates`), not on the 3 pilot seeds: counts of seeds that end below the threshold at
  the same rate can then be compared between arms (Fisher's exact test).

What could make an answer true by construction, and what was done about it:

- *A grid that stops where one arm would start to train.* The grid reaches down to rates at which
  every arm trains on the probe (Post-LN included), and every arm's best rate is reported with
  whether it is inside the grid.
- *A warm-up that delays the threshold by itself.* The warm-up lasts :data:`WARMUP` steps: against a
  time to the threshold of a few hundred steps, ramping the rate can cost at most about
  ``WARMUP / 2`` steps of progress; it cannot by itself make Post-LN + warm-up look slow, nor its
  rescue of Post-LN look large.
- *Chance pairings.* Every arm of one seed starts from the same weights and sees the same
  minibatches (the stack draws them per seed), so the comparisons are paired by seed; the held-out
  batch is the same for all and drawn from a generator no training seed uses.
- *A tuning that reports its own lucky draws.* Rates are picked on pilot seeds; the reported and
  the stability seeds are fresh.
- *A coarse clock.* Evaluating every 2 steps bounds the error of each run's step count by 2;
  a difference smaller than that is flagged by the verdict.

Caveats that remain:

- Every arm clips its gradient per model to norm 1.0 (as ``small_transformer`` does). Clipping is a
  stabiliser in its own right; it is common to all arms, but the no-norm arm and Post-LN may owe some of
  their range to it.
- "Stable" means "ends the cap below the threshold": at the small end of the grid a run can fail by
  being slow rather than by diverging; the verdict counts the non-finite runs apart.
- The stability check covers the 3 grid rates around the pilot boundary only: where all of them are
  stable on the 10 seeds, the largest stable rate may be larger, and the words say so.
- The tuning scores a rate by the steps to the *first* crossing of the threshold, so a rate at which
  runs get there fast and then blow up can win it: no norm's best rate, 0.01, is one where 3 of the
  10 reported seeds end above the threshold. "learns" and "largest stable rate" show it; the
  comparisons in steps do not.
- The warm-up is 20 steps. On the stored runs it does not let Post-LN train at Pre-LN's best rate
  (0.01: 0 of 10 seeds with or without it); a longer warm-up might, and is not tested here.
- Pre-LN and Post-LN are compared each at its own best rate (0.01 and 0.003): "fewer steps" includes
  that Post-LN cannot use the larger one.
- The floor is an expectation; on the 64 held-out sequences a trained model can score a little
  below it (Pre-LN ends at 2.26 against 2.264), and then the final-loss comparisons on the excess
  over the floor have no ratio and say so ("not compared"); "learns" gives the fraction of the gap
  closed instead.
- One task, one width, one depth, Adam with torch's defaults: the answers are about this regime.
- Pre-LN with warm-up is not run (the budget): whether warm-up is unneeded with Pre-LN rests on
  ``small_transformer`` alone.
"""

from __future__ import annotations

import math

import numpy as np
import pandas as pd

from helpers.evidence import runner
from helpers.evidence.statistics import time_to_threshold
from helpers.evidence.verdicts import Verdict
from helpers.experiments import small_transformer as st
from helpers.experiments.small_transformer import copy_levels
from helpers.experiments.threshold_runs import (
    report_rate_words,
    steps_staying_below,
    steps_to_threshold,
    time_words,
)
from helpers.experiments.training import keep_rows
from helpers.experiments.tuning_words import best_rate_words

__all__ = [
    "ARMS",
    "BLOCKS",
    "COMPARISONS",
    "EVAL_EVERY",
    "FIXED",
    "HEADS",
    "HELDOUT_SIZE",
    "LEVELS",
    "N_COPY",
    "PILOT_SEEDS",
    "RATES",
    "SEEDS",
    "STEPS",
    "THRESHOLD",
    "VOCAB",
    "WARMUP",
    "WIDTH",
    "boundary_rates",
    "deep_pilot_scores",
    "deep_transformer_verdicts",
]

#: The model: blocks, width, heads (the MLP has 4 width units, as in ``small_transformer``).
BLOCKS, WIDTH, HEADS = 6, 32, 2

#: The task: ``N_COPY`` random tokens from ``VOCAB``, then the same again.
N_COPY, VOCAB = 8, 128

#: The step cap, the warm-up of the warm-up arm, the evaluation interval and the held-out batch's size.
STEPS, WARMUP, EVAL_EVERY, HELDOUT_SIZE = 600, 20, 2, 64

#: The task's levels (the no-copy level ``ln V``, the floor, the threshold halfway between them) and
#: the evaluation interval, fixed before any run.
LEVELS = copy_levels(N_COPY, VOCAB, EVAL_EVERY)
THRESHOLD = LEVELS.threshold

#: The arms, named as :data:`helpers.experiments.small_transformer.ARMS` names them.
ARMS = ("no norm", "Pre-LN", "Post-LN", "Post-LN + warm-up")

#: The learning-rate grid (Adam): 6 rates, neighbours a factor 10/3 or 3 apart.
RATES = (3e-4, 1e-3, 3e-3, 1e-2, 3e-2, 1e-1)

#: The seeds of the tuning runs and of the reported (and stability) runs: fresh, never a pilot seed.
PILOT_SEEDS = (100, 101, 102)
SEEDS = tuple(range(10))

#: The paired comparisons: (A, B, the claim about A). LN is claimed to speed training up (Ba et al.
#: 2016); Pre-LN to train faster than Post-LN, and without warm-up faster than Post-LN with it (Xiong
#: et al. 2020); warm-up to rescue Post-LN (Liu et al. 2020; Xiong et al. 2020).
#: The pairs whose stability is compared as counts (:func:`_stable_counts`): (A, B), the claim being that
#: A trains at larger rates than B.
STABILITY_PAIRS = (("Pre-LN", "no norm"), ("Pre-LN", "Post-LN"))

COMPARISONS = (("Pre-LN", "no norm", "fewer"), ("Post-LN", "no norm", "fewer"),
               ("Pre-LN", "Post-LN", "fewer"), ("Pre-LN", "Post-LN + warm-up", "fewer"),
               ("Post-LN + warm-up", "Post-LN", "fewer"))


#: Everything a unit is trained with besides its arm, rate and seeds.
FIXED = {"n": N_COPY, "vocab": VOCAB, "width": WIDTH, "blocks": BLOCKS, "heads": HEADS, "batch": 32, "clip": 1.0,
         "warmup": WARMUP, "eval_every": EVAL_EVERY, "heldout_size": HELDOUT_SIZE}


# ------------------------------------------------------------------ tuning and the check stage


def deep_pilot_scores(frame: pd.DataFrame) -> pd.DataFrame:
    """The tuning's score (:func:`helpers.experiments.small_transformer.pilot_scores` at this task's
    :data:`THRESHOLD`): per (variant, lr), the restricted mean steps to the threshold over the seeds."""
    return st.pilot_scores(frame, THRESHOLD)


def _ends_below(frame: pd.DataFrame, cap: int, threshold: float = THRESHOLD) -> pd.DataFrame:
    """Per run of ``frame``: its ``final`` held-out loss (``inf`` where it diverged) and ``below``,
    whether it ends the cap below ``threshold`` (default :data:`THRESHOLD`; the check stage and the
    verdicts below take another task's the same way)."""
    finals = st._finals(frame, cap)
    return finals.assign(below=finals["final"] < threshold)


def boundary_rates(pilot: pd.DataFrame, threshold: float = THRESHOLD) -> pd.DataFrame:
    """The rates the check stage trains on the reported seeds: per arm, 4 neighbouring rates of the
    grid, from one below its largest stable pilot rate (the largest at which every pilot seed ends
    below ``threshold``, default :data:`THRESHOLD`) to two above it, so that each arm is counted on 10 seeds at rates where
    another arm may still be stable; at the grid's ends, the 4 rates at that end (the lowest 4 where
    no rate is stable on every pilot seed).

    Returns:
        One row per (arm, rate): ``variant``, ``lr``.
    """
    cap = int(pilot["step"].max())
    rows = []
    for arm, runs in _ends_below(pilot, cap, threshold).groupby("variant", sort=False):
        grid = sorted(runs["lr"].unique())
        ok = [lr for lr in grid if runs.loc[runs["lr"] == lr, "below"].all()]
        middle = grid.index(ok[-1]) if ok else 0
        start = min(max(middle - 1, 0), max(len(grid) - 4, 0))
        rows.extend({"variant": arm, "lr": lr} for lr in grid[start:start + 4])
    return pd.DataFrame(rows, columns=["variant", "lr"])


# ------------------------------------------------------------------ verdicts


def _steps_text(steps: float, cap: int) -> str:
    return f">{cap}" if math.isnan(steps) else f"{steps:.0f}"


def _per_seed_words(reached: pd.DataFrame, cap: int, arm: str) -> str:
    """One arm's steps to the threshold seed by seed (``>cap`` where it never got there), with the
    Kaplan-Meier median and the restricted mean (a censored run counting as the cap) beside them."""
    runs = reached[reached["variant"] == arm].sort_values("seed")
    t = time_to_threshold(runs["steps"], cap)
    seeds = ", ".join(f"{s}: {_steps_text(v, cap)}" for s, v in zip(runs["seed"], runs["steps"], strict=True))
    median = f"Kaplan-Meier median {t.median:.0f} steps" if t.median is not None else "Kaplan-Meier median not reached"
    return (f"steps by seed {seeds}; {median}, restricted mean {t.restricted_mean:.0f} steps "
            f"(a run that never gets there counting as {cap}); {t.reached}/{t.n} reached")


def _paired_per_seed(reached: pd.DataFrame, cap: int, a: str, b: str) -> str:
    """``a`` against ``b`` seed by seed: on how many seeds each needs fewer steps, and both medians."""
    runs = reached[reached["variant"].isin((a, b))].assign(steps=lambda f: f["steps"].fillna(cap))
    wide = runs.pivot(index="seed", columns="variant", values="steps").dropna()
    fewer, more = int((wide[a] < wide[b]).sum()), int((wide[a] > wide[b]).sum())
    return (f"{a} needs fewer steps on {fewer} of {len(wide)} seeds, more on {more}, as many on "
            f"{len(wide) - fewer - more}; sample medians {wide[a].median():.0f} and {wide[b].median():.0f} steps "
            f"(a run that never gets there counting as {cap})")


def _stable_words(runs: pd.DataFrame, cap: int, pilot: pd.DataFrame | None = None,
                  threshold: float = THRESHOLD) -> str:
    """The largest rate at which every one of ``runs``' seeds ends below ``threshold`` (default
    :data:`THRESHOLD`), among the rates they were trained at (one arm's reported and check runs), with
    each rate's count; where that is the largest rate checked, what the same arm's ``pilot`` runs did
    at the next rate of the grid."""
    ends = _ends_below(runs, cap, threshold)
    grid = sorted(ends["lr"].unique())
    n_seeds = ends["seed"].nunique()
    counts = []
    for lr in grid:
        at = ends[ends["lr"] == lr]
        diverged = int((~np.isfinite(at["final"])).sum())
        counts.append(f"{lr:g}: {int(at['below'].sum())}/{len(at)}" + (f" ({diverged} non-finite)" if diverged else ""))
    stable = [lr for lr in grid if ends.loc[ends["lr"] == lr, "below"].all()]
    per_rate = f"seeds ending below the threshold ({threshold:.3f}) per rate: {', '.join(counts)}"
    if not stable:
        return f"none of the rates checked on {n_seeds} seeds; {per_rate}"
    said = f"{stable[-1]:g} on {n_seeds} seeds (the reported ones); {per_rate}"
    if stable[-1] != grid[-1]:
        return said
    above = [] if pilot is None else sorted(r for r in pilot["lr"].unique() if r > grid[-1])
    if not above:
        return said + "; it is the largest rate checked, so a larger one may be stable too"
    at = _ends_below(pilot[pilot["lr"] == above[0]], cap, threshold)
    return (said + f"; it is the largest rate checked; at the next rate, {above[0]:g}, {int(at['below'].sum())} of "
            f"{len(at)} pilot seeds end below the threshold")


def _stable_counts(checked: pd.DataFrame, cap: int, a: str, b: str, threshold: float = THRESHOLD) -> Verdict:
    """Whether ``a`` trains at larger rates than ``b``, as counts: at the largest rate at which both
    ran on the 10 reported seeds (report and check stages), how many of each arm's seeds end below
    ``threshold`` (default :data:`THRESHOLD`).

    The estimate is the difference in the share of seeds, in percentage points (``a - b``); the 95%
    interval is Agresti and Caffo's (2000: one success and one failure added to each arm, then the
    normal interval, clipped to ±100), which keeps its coverage near 95% at 10 seeds and at 0 or 10
    of 10, where the plain normal interval has none; the p-value is Fisher's exact test (two-sided).
    The rate is fixed by which rates were trained, never by the counts.
    """
    from scipy import stats

    ends = _ends_below(checked[checked["variant"].isin((a, b))], cap, threshold)
    seeds = ends.groupby(["variant", "lr"])["seed"].nunique().unstack(0)
    shared = seeds[(seeds[a] == seeds[a].max()) & (seeds[b] == seeds[b].max())].index
    if shared.empty:
        return Verdict.no_interval(a, b, "seeds ending below the threshold", "no rate both arms ran on every seed")
    lr = float(shared.max())
    at = ends[np.isclose(ends["lr"], lr)]
    k = {arm: int(at.loc[at["variant"] == arm, "below"].sum()) for arm in (a, b)}
    n = {arm: int((at["variant"] == arm).sum()) for arm in (a, b)}
    share = {arm: (k[arm] + 1) / (n[arm] + 2) for arm in (a, b)}
    half = 1.959964 * math.sqrt(sum(share[arm] * (1 - share[arm]) / (n[arm] + 2) for arm in (a, b)))
    centre = share[a] - share[b]
    p = stats.fisher_exact([[k[a], n[a] - k[a]], [k[b], n[b] - k[b]]]).pvalue
    return Verdict.comparison(
        a=a, b=b, measure="percentage points of its seeds ending below the threshold", relative=False,
        estimate=100 * (k[a] / n[a] - k[b] / n[b]), low=100 * max(centre - half, -1.0), high=100 * min(centre + half, 1.0),
        n=min(n.values()), claim="more", lower_is_better=False, p=float(p), verb="has", fmt=".0f",
        prefix=f"at lr {lr:g}, {k[a]}/{n[a]} {a} and {k[b]}/{n[b]} {b} seeds end below the threshold: ",
        suffix=f"; Fisher's exact test p = {p:.2g}")


def _fails_at(frame: pd.DataFrame, cap: int, arm: str, lr: float, threshold: float = THRESHOLD) -> Verdict:
    """Whether ``arm`` fails at ``lr``: how many of its runs there end below ``threshold`` (default
    :data:`THRESHOLD`), by stage. Yes where none of the reported seeds does, no where at least half of
    them do, undecided in between (or where it was not run at ``lr``)."""
    ends = _ends_below(frame[(frame["variant"] == arm) & np.isclose(frame["lr"], lr)], cap, threshold)
    if ends.empty:
        return Verdict.yes_no(None, f"not run at {lr:g}")
    parts = []
    for stage in ("pilot", "report", "check"):
        at = ends[ends["stage"] == stage]
        if len(at):
            kind = "pilot" if stage == "pilot" else "reported"
            parts.append(f"{int(at['below'].sum())}/{len(at)} {kind} seeds")
    diverged = int((~np.isfinite(ends["final"])).sum())
    reported = ends[ends["stage"] != "pilot"]  # the report seeds, at their own rate or checked at this one
    below = int(reported["below"].sum())
    answer = None if reported.empty else "yes" if below == 0 else "no" if 2 * below >= len(reported) else None
    return Verdict.yes_no(answer, f"at lr {lr:g}, {' and '.join(parts)} end below the threshold ({threshold:.3f})"
                          + (f"; {diverged} of {len(ends)} runs end non-finite" if diverged else ""))


def deep_transformer_verdicts(frame: pd.DataFrame) -> dict[str, str]:
    """The verdicts of ``deep_transformer``, in words, from the stored table.

    Per arm:

    - ``"best rate, <arm>"``: its best rate on the pilot grid, and whether it is inside the grid;
    - ``"best rate on the report seeds, <arm>"``: whether that rate trains on the reported seeds
      (:func:`helpers.experiments.threshold_runs.report_rate_words`);
    - ``"largest stable rate, <arm>"``: the largest rate at which every one of the 10 reported seeds
      ends below :data:`THRESHOLD`, among the 4 checked around its pilot boundary (and its best
      rate), with each rate's count of seeds;
    - ``"time, <arm>"``: the reported runs' steps to the threshold (Kaplan-Meier median, how many got
      there); ``"steps per seed, <arm>"``: each seed's steps, the median and the restricted mean;
    - ``"learns, <arm>"``: whether it closes at least half the gap between the no-copy level and the
      floor (the mean fraction over the reported seeds, by its interval);
    - ``"at Pre-LN's best rate, <arm>"``: whether it fails at the rate Pre-LN trains best at: how many
      of its seeds end below the threshold there.

    For each pair of :data:`STABILITY_PAIRS`, ``"stable seeds at the largest rate both ran, A vs B"``:
    the counts of seeds ending below the threshold at one rate, compared (:func:`_stable_counts`).

    Paired by seed, for each of :data:`COMPARISONS`: ``"steps, A vs B"`` and ``"final loss, A vs B"``
    (the excess over the floor), 95% t-intervals over the seeds on the per-seed log-ratios, and
    ``"steps per seed, A vs B"``: on how many seeds A needs fewer steps, and both medians.
    """
    cap = int(frame["step"].max())
    pilot, report = frame[frame["stage"] == "pilot"], frame[frame["stage"] == "report"]
    arms = [a for a in ARMS if a in set(frame["variant"])]
    scores = deep_pilot_scores(pilot).rename(columns={"variant": "arm"})
    out = {f"best rate, {arm}": words for arm, words in best_rate_words(scores, pilot, learned_below=cap).items()}
    tuned = frame[frame["stage"].isin(("pilot", "report"))]
    out.update({f"best rate on the report seeds, {arm}": words
                for arm, words in report_rate_words(tuned, cap, THRESHOLD).items()})
    checked = frame[frame["stage"].isin(("report", "check"))]
    for arm in arms:
        out[f"largest stable rate, {arm}"] = _stable_words(checked[checked["variant"] == arm], cap,
                                                           pilot[pilot["variant"] == arm])
    reached, finals = steps_to_threshold(report, THRESHOLD), st._finals(report, cap)
    staying = steps_staying_below(report, THRESHOLD)
    out.update({f"time, {arm}": words for arm, words in time_words(reached, cap, arms).items()})
    for arm in arms:
        out[f"steps per seed, {arm}"] = _per_seed_words(reached, cap, arm)
        out[f"learns, {arm}"] = st._learns(finals[finals["variant"] == arm], LEVELS)
    if "Pre-LN" in arms:
        pre_best = float(report.loc[report["variant"] == "Pre-LN", "lr"].iloc[0])
        for arm in arms:
            if arm != "Pre-LN":
                out[f"at Pre-LN's best rate, {arm}"] = _fails_at(frame, cap, arm, pre_best)
    for a, b in STABILITY_PAIRS:
        if a in arms and b in arms:
            out[f"stable seeds at the largest rate both ran, {a} vs {b}"] = _stable_counts(checked, cap, a, b)
    for a, b, claim in COMPARISONS:
        if a in arms and b in arms:
            for what, words in st._paired_verdicts(reached, finals, cap, a, b, claim, LEVELS, staying,
                                                             scores).items():
                out[f"{what}, {a} vs {b}"] = words
            out[f"steps per seed, {a} vs {b}"] = _paired_per_seed(reached, cap, a, b)
    return out


# ------------------------------------------------------------------ the stored experiment (make experiments)


def _deep_transformer_unit(*, variant: str, lr, seeds, steps: int, **fixed) -> pd.DataFrame:
    """One unit of ``deep_transformer``: one arm at every rate of ``lr`` (a tuple in the pilot and
    the check stage, one rate in the reported runs), for ``seeds``, stacked."""
    return st._small_transformer_unit(variant=variant, lr=lr, seeds=seeds, steps=steps, **fixed)


# How it was sized. A probe on seeds 900 and 901 (neither pilot nor reported), 6 blocks, Pre-LN and
# Post-LN without warm-up at rates 0.001 to 0.03: at vocabularies V = 16, 64 and 256, Post-LN stayed at
# the no-copy level on both seeds at 0.01, where Pre-LN trains best, and Pre-LN at its best rate needed
# about 50, 100 and 150 steps. So depth alone (6 blocks against 4) already makes Post-LN fail at the
# rates where Pre-LN trains best, and the vocabulary sets how long the copy takes. V = 128 is the
# largest vocabulary the budget allows: Pre-LN should need about 125 steps at its best rate, well
# above the warm-up of 20 steps and 60 times the evaluation interval. Rates 0.0003 to 0.1: Post-LN
# trains at the low end on the probe and Pre-LN slows down by 0.03, so every arm's best rate should
# lie inside.
runner.register(runner.Experiment(
    name="deep_transformer", notebook="13_does_it_speed_up_training", train=_deep_transformer_unit,
    grid={"variant": ARMS}, seeds=SEEDS, steps=STEPS, threshold=THRESHOLD, seeds_per_unit=10,
    fixed=FIXED,
    summarize=deep_transformer_verdicts, keep=keep_rows,
    tuning=runner.Tuning(key="lr", rates=RATES, pilot_seeds=PILOT_SEEDS, score=deep_pilot_scores,
                         learned_below=STEPS, check_rates=boundary_rates),
    budget_s=5600,
    # The reproducibility check re-trains unit 7, Post-LN + warm-up's reported seeds at its best rate
    # (0.003): its first 20 steps are inside the warm-up, where a last-bit difference stays small.
    repro_rtol=0.0,
    repro_atol=1e-5,
    repro_measured=9.54e-7,
    repro_unit=7))
