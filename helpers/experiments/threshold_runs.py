"""Runs scored by the steps they take to a held-out loss threshold, shared by the stored experiments
that ask whether a norm speeds up training (:mod:`~helpers.experiments.lstm_adding`,
:mod:`~helpers.experiments.rnn_regimes`, :mod:`~helpers.experiments.small_transformer`,
:mod:`~helpers.experiments.deep_transformer`, :mod:`~helpers.experiments.step_times`).

- :func:`steps_to_threshold`: each run's first evaluation step below the threshold (NaN where it
  never got there: censored at the step cap); :func:`steps_staying_below`: the evaluation step from
  which it stays below to the end (NaN where it ends at or above it). The two measures a claim of
  "fewer steps" is decided on: a run that crosses the threshold and then blows up counts as
  reaching it under the first, never under the second.
- :func:`restricted_mean_steps`: the tuning's score, per arm and rate, over the pilot seeds;
  :func:`helpers.experiments.tuning_words.grid_resolution` (imported here): how finely that tuning
  resolves a comparison of two arms.
- :func:`report_rate_words`, :func:`time_words`: whether each arm's best rate trains on the report
  seeds, and the report runs' steps to the threshold, in words.
"""

from __future__ import annotations

import pandas as pd

from helpers.experiments.tuning_words import grid_resolution as grid_resolution

#: The columns that can name one run of a stored table, in order (those a frame has).
RUN_KEYS = ("stage", "seq_len", "hidden", "depth", "variant", "noise", "lr", "seed")


def steps_to_threshold(frame: pd.DataFrame, threshold: float) -> pd.DataFrame:
    """The first evaluation step at which each run's held-out loss is below ``threshold``.

    Returns:
        One row per run: its keys (those of :data:`RUN_KEYS` that ``frame`` has)
        and ``steps`` (NaN where it never got there: censored at the step cap).
    """
    evals = frame[frame["eval_loss"].notna()]
    keys = [k for k in RUN_KEYS if k in evals]
    first = evals[evals["eval_loss"] < threshold].groupby(keys, sort=False)["step"].min()
    runs = evals[keys].drop_duplicates().set_index(keys)
    return runs.assign(steps=first.astype("float64")).reset_index()


def steps_staying_below(frame: pd.DataFrame, threshold: float) -> pd.DataFrame:
    """The evaluation step from which each run's held-out loss stays below ``threshold`` to the end:
    the first evaluation after its last one at or above the threshold (or not finite), or its first
    evaluation where none is. A run whose last evaluation is at or above the threshold never stays
    below it: NaN, censored at the step cap.

    Returns:
        One row per run, as :func:`steps_to_threshold`: its keys and ``steps``.
    """
    evals = frame[frame["eval_loss"].notna()]
    keys = [k for k in RUN_KEYS if k in evals]
    above = ~(evals["eval_loss"] < threshold)  # NaN and inf count as above
    last_above = evals["step"].where(above).groupby([evals[k] for k in keys], sort=False).max()
    after = evals.join(last_above.rename("last_above"), on=keys)
    stays = after[after["last_above"].isna() | (after["step"] > after["last_above"])]
    first = stays.groupby(keys, sort=False)["step"].min()
    runs = evals[keys].drop_duplicates().set_index(keys)
    return runs.assign(steps=first.astype("float64")).reset_index()


def restricted_mean_steps(frame: pd.DataFrame, threshold: float, arm_keys=("variant",)) -> pd.DataFrame:
    """The tuning's score: per arm (the columns ``arm_keys``) and rate, the restricted mean steps to
    ``threshold`` over the seeds in ``frame``, a run that never gets there counting as the step cap
    (the last step of ``frame``). Lower is better; the cap itself means that no seed got there.

    Beside it, ``stable``: whether every run at that rate *ends* below the threshold
    (:func:`steps_staying_below` is not NaN). The tuning never picks a rate where one does not
    (:func:`helpers.evidence.statistics.best_rates`' ``stable``): a run that reaches the threshold early
    and then blows up scores well on the first crossing alone."""
    from helpers.evidence.statistics import time_to_threshold

    cap = int(frame["step"].max())
    reached = steps_to_threshold(frame, threshold)
    ends_below = steps_staying_below(frame, threshold)["steps"].notna().to_numpy()
    reached = reached.assign(ends_below=ends_below)  # both tables list the runs in the same order
    keys = [*arm_keys, "lr"]
    rows = [{**dict(zip(keys, key, strict=True)), "score": time_to_threshold(run["steps"], cap).restricted_mean,
             "stable": bool(run["ends_below"].all())}
            for key, run in reached.groupby(keys, sort=False)]
    return pd.DataFrame(rows, columns=[*keys, "score", "stable"])


def report_rate_words(frame: pd.DataFrame, cap: int, threshold: float, arm_of=None) -> dict[str, str]:
    """``{arm: words}``: whether each arm's best rate trains on the report seeds
    (:func:`helpers.evidence.statistics.best_rate_check`): how many report seeds never reached
    ``threshold`` before the step cap ``cap`` (the tuning's learned-nothing definition: a restricted mean
    of ``cap`` steps), against the pilot runs at the neighbouring rates.

    Args:
        frame: the stored table, pilot and report rows (``stage``).
        cap: the step cap (the tuning's ``learned_below``).
        threshold: the loss threshold.
        arm_of: ``arm_of(runs) -> Series`` of arm names, one per run of
            :func:`steps_to_threshold`'s table; default its ``variant``.
    """
    from helpers.experiments.tuning_words import report_seed_words

    reached = steps_to_threshold(frame, threshold)
    arms = reached["variant"] if arm_of is None else arm_of(reached)
    return report_seed_words(reached.assign(arm=arms, value=reached["steps"]), learned_below=cap,
                             stuck=f"did not reach the threshold before step {cap}")


def time_words(reached: pd.DataFrame, cap: int, variants) -> dict[str, str]:
    """``{variant: words}``: the runs' steps to the threshold (:func:`steps_to_threshold`'s
    table) as :func:`helpers.evidence.statistics.time_to_threshold` says them, and the rates they ran at."""
    from helpers.evidence.statistics import time_to_threshold

    out = {}
    for variant in variants:
        at = reached[reached["variant"] == variant]
        rates = ", ".join(f"{r:g}" for r in sorted(at["lr"].unique()))
        out[variant] = f"{time_to_threshold(at['steps'], cap)} at lr {rates}"
    return out
