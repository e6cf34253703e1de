"""How a stored experiment says each arm's tuned learning rate (:func:`best_rate_words`), whether it
trains on the report seeds (:func:`report_seed_words`), and how finely the tuning grid resolves a
comparison of two arms (:func:`grid_resolution`)."""

from __future__ import annotations

from collections.abc import Callable

import pandas as pd


def best_rate_words(scores: pd.DataFrame, pilot: pd.DataFrame, *, learned_below: float,
                    score: str = "restricted mean {:.0f} steps to the threshold",
                    none: str = "none: no pilot run reached the threshold within {cap} steps at any rate",
                    rate: Callable[[str, float], str] | None = None,
                    best: Callable[[str, float], str] | None = None) -> dict[str, str]:
    """``{arm: words}``: each arm's best rate on the pilot grid, as the runner picked it from
    ``scores`` (:func:`helpers.evidence.statistics.best_rates`), and whether it is inside the grid,
    e.g. ``"0.01, inside the grid (0.001 to 0.1); restricted mean 250 steps to the threshold over
    pilot seeds 100, 101, 102"``.

    Args:
        scores: columns ``arm``, ``lr`` and ``score`` (lower is better, aggregated over the pilot
            seeds), one row per arm and rate, and ``stable`` where the score has one (a rate at which
            a pilot run ends at or above the threshold is picked only where no rate is stable, and
            the words say so).
        pilot: the pilot rows, for the seeds they name.
        learned_below: the tuning's learned-nothing level: a best score not below it learned nothing.
        score: the best score in words, a format string for it. The default is for the restricted
            mean steps to a threshold (:func:`helpers.experiments.threshold_runs.restricted_mean_steps`).
        none: the words for an arm that learned nothing at any rate; ``{grid}`` is the grid's span
            and ``{cap}`` the ``learned_below`` level.
        rate: ``rate(arm, lr) -> words``, how a rate of the grid is written for ``arm`` (default
            ``f"{lr:g}"``): the grid's span is written with it.
        best: the same for the best rate (default ``rate``).
    """
    from helpers.evidence.statistics import best_rates

    rate = rate or (lambda arm, lr: f"{lr:g}")
    best = best or rate
    grid = sorted(scores["lr"].unique())
    seeds = ", ".join(str(s) for s in sorted(pilot["seed"].unique()))
    out = {}
    stable = "stable" if "stable" in scores else None
    columns = ["arm", "lr", "score", *([stable] if stable else [])]
    for row in best_rates(scores[columns], learned_below=learned_below, stable=stable).itertuples():
        span = f"{rate(row.arm, grid[0])} to {rate(row.arm, grid[-1])}"
        if not row.learned:
            out[row.arm] = none.format(grid=span, cap=learned_below)
            continue
        where = "on the grid's edge: a better rate may lie beyond it" if row.on_edge else "inside the grid"
        unstable = "" if getattr(row, "stable", True) else (
            "; at no rate of the grid does every pilot run end below the threshold, so this is the rate that "
            "reaches it soonest")
        out[row.arm] = (f"{best(row.arm, row.best_lr)}, {where} ({span}); {score.format(row.best_score)} "
                        f"over pilot seeds {seeds}{unstable}")
    return out


def report_seed_words(runs: pd.DataFrame, *, learned_below: float, stuck: str) -> dict[str, str]:
    """``{arm: words}``: whether each arm's best rate trains on the report seeds
    (:func:`helpers.evidence.statistics.best_rate_check`): how many report seeds are ``stuck`` (their
    ``value`` not below ``learned_below``, the tuning's learned-nothing level, or NaN), against the pilot
    runs at the neighbouring rates. ``runs``: one row per run, pilot and report, with columns ``arm``,
    ``stage``, ``lr``, ``seed`` and ``value``; ``stuck``: what a stuck run did, in words."""
    from helpers.evidence.statistics import best_rate_check

    table = best_rate_check(runs, learned_below=learned_below, stuck=stuck)
    return dict(zip(table["arm"], table["words"], strict=True))


def grid_resolution(scores: pd.DataFrame, arms, moves: Callable[[str, float], str] | None = None
                    ) -> tuple[float, str] | None:
    """The coarser tuning grid of ``arms`` in the pilot's scores, as ``(relative step, words)`` for
    :func:`helpers.evidence.statistics.verdict`'s ``resolution``; ``None`` where no arm has a finite step.

    ``scores``: columns ``arm``, ``lr``, ``score`` and, where the tuning has it, ``stable``
    (:func:`helpers.experiments.threshold_runs.restricted_mean_steps`). Each arm's step is
    :func:`helpers.evidence.statistics.grid_step` (the smaller change of its score from its best rate
    to a neighbouring one), with the rates the tuning may not pick (not ``stable``) left out, as the
    tuning leaves them out; an arm with no stable rate is taken as it is. ``moves(arm, step)``: what
    one step moves, in words (:func:`helpers.evidence.statistics.grid_resolution`); the default is
    for the restricted mean steps to a threshold."""
    from helpers.evidence.statistics import grid_resolution as coarser
    from helpers.evidence.statistics import grid_step

    steps = {}
    for arm in arms:
        at = scores[scores["arm"] == arm]
        stable = "stable" in at and at["stable"].any()
        steps[arm] = grid_step(at["lr"], at["score"].where(at["stable"], float("inf")) if stable else at["score"])
    return coarser(steps, moves or (lambda arm, step: f"{arm}'s pilot restricted mean steps by {step:.0%}"))


def rate_verdicts(scores: pd.DataFrame, pilot: pd.DataFrame, runs: pd.DataFrame, *, learned_below: float,
                  stuck: str, **words) -> dict[str, str]:
    """The two verdicts a tuned experiment stores of each arm's rate: ``"best rate, <arm>"``
    (:func:`best_rate_words` of ``scores`` and ``pilot``, worded by ``words``) and ``"best rate on the
    report seeds, <arm>"`` (:func:`report_seed_words` of ``runs``), at the same learned-nothing level."""
    out = {f"best rate, {arm}": said
           for arm, said in best_rate_words(scores, pilot, learned_below=learned_below, **words).items()}
    checked = report_seed_words(runs, learned_below=learned_below, stuck=stuck)
    return out | {f"best rate on the report seeds, {arm}": said for arm, said in checked.items()}
