"""How a stored experiment says each arm's tuned learning rate: :func:`best_rate_words`."""

from __future__ import annotations

import pandas as pd

__all__ = ["best_rate_words"]


def best_rate_words(scores: pd.DataFrame, cap: int, pilot: pd.DataFrame) -> dict[str, str]:
    """``{arm: words}``: each arm's best rate on the pilot grid, as the runner picked it from
    ``scores`` (columns ``arm``, ``lr``, ``score``: restricted mean steps,
    :func:`helpers.experiments.threshold_runs.restricted_mean_steps`), and whether it is inside the
    grid; ``pilot`` is the pilot rows, for the seeds they name."""
    from helpers.evidence.statistics import best_rates

    grid = sorted(scores["lr"].unique())
    seeds = ", ".join(str(s) for s in sorted(pilot["seed"].unique()))
    out = {}
    for row in best_rates(scores, learned_below=cap).itertuples():
        if not row.learned:
            out[row.arm] = f"none: no pilot run reached the threshold within {cap} steps at any rate"
            continue
        where = "on the grid's edge: a better rate may lie beyond it" if row.on_edge else "inside the grid"
        out[row.arm] = (f"{row.best_lr:g}, {where} ({grid[0]:g} to {grid[-1]:g}); restricted mean "
                        f"{row.best_score:.0f} steps to the threshold over pilot seeds {seeds}")
    return out
