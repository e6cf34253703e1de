"""Deep dive 13's evidence in one table: every stored run of its experiments, scored the same way.

Four stored experiments answer "does LN speed up training?" (see their modules for what each
trains): ``lstm_adding`` (:mod:`helpers.experiments.lstm_adding`, Ba et al.'s LSTM vs LN-LSTM at T = 100),
``rnn_regimes`` and ``rnn_mechanism`` (:mod:`helpers.experiments.rnn_regimes`, tiny tanh RNNs) and
``small_transformer`` (:mod:`helpers.experiments.small_transformer`, a 4-block decoder on a copy task).
All of them score each run on a fixed held-out batch at regular steps, so one long table
(:func:`evidence_table`) holds them all, and one function (:func:`evidence_state`) selects what
the notebook's dashboard shows: a *setting* (an experiment and its regime), a rate, an arm, a
noise strength and a measure.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
import pandas as pd

from helpers.evidence import runner

#: What can be plotted: label -> column of :func:`evidence_table`.
MEASURES = {"held-out loss": "eval_loss", "drift of unit means": "drift_mean", "drift of unit stds": "drift_std",
            "ICS (Santurkar)": "ics"}


@dataclass(frozen=True)
class Setting:
    """One setting of the evidence: an experiment, the part of it that is one regime, and its levels.

    Args:
        label: how the dashboard names it.
        experiment: the stored experiment.
        where: ``(column, value)`` pairs that select the regime's rows; a tuple ``value`` selects
            the rows whose ``column`` is any of its values.
        learned_nothing: the held-out loss of a model that learned nothing.
        floor: the lowest loss the task allows.
        threshold: "reached", fixed before any run.
        loss: what the loss is (for the axis).
        log: whether the loss axis is logarithmic.
    """

    label: str
    experiment: str
    where: tuple[tuple[str, object], ...]
    learned_nothing: float
    floor: float
    threshold: float
    loss: str
    log: bool


def settings() -> list[Setting]:
    """The settings of the stored experiments, in the order the notebook discusses them."""
    from helpers.experiments import lstm_adding, small_transformer
    from helpers.experiments import rnn_regimes as rr
    from helpers.experiments.rnn_models import LEARNED_NOTHING

    mse = dict(learned_nothing=LEARNED_NOTHING, floor=0.0, threshold=rr.THRESHOLD, loss="held-out MSE", log=True)
    out = [Setting("LSTM vs LN-LSTM, T 100, hidden 64", "lstm_adding", (), **{**mse, "threshold": lstm_adding.THRESHOLD})]
    for t in rr.SEQ_LENS:
        for h in rr.HIDDEN:
            out.append(Setting(f"tiny RNN, T {t}, hidden {h}", "rnn_regimes", (("seq_len", t), ("hidden", h)), **mse))
    out.append(Setting("3-layer RNN, T 10, hidden 64 (why)", "rnn_mechanism", (), **mse))
    out.append(Setting("4-block Transformer, copy task", "small_transformer",
                       (("variant", small_transformer.PLACEMENT_ARMS),),
                       learned_nothing=small_transformer.NO_COPY, floor=small_transformer.FLOOR,
                       threshold=small_transformer.THRESHOLD, loss="held-out cross-entropy (nats)", log=False))
    return out


def evidence_table() -> pd.DataFrame:
    """Every evaluation of every stored run of :func:`settings`, one row each.

    Returns:
        Columns ``setting`` (its label), ``stage`` (``"pilot"``, ``"report"``, or ``"fixed"`` for
        an untuned experiment), ``variant``, ``noise`` (0 but for noisy LN), ``arm`` (the variant,
        with the strength when noisy), ``lr``, ``seed``, ``step`` and the measures of
        :data:`MEASURES` (NaN where the experiment does not measure one).
    """
    from helpers.experiments.rnn_models import arm_label

    columns = ["setting", "stage", "variant", "noise", "lr", "seed", "step", *MEASURES.values()]
    parts, loaded = {c: [] for c in columns}, {}
    for s in settings():
        if s.experiment not in loaded:
            loaded[s.experiment] = runner.load(s.experiment).frame
        frame = loaded[s.experiment]
        frame = frame[frame["eval_loss"].notna()]
        for column, value in s.where:
            frame = frame[frame[column].isin(value) if isinstance(value, tuple) else frame[column] == value]
        defaults = {"setting": s.label, "stage": "fixed", "noise": 0.0}
        for column in columns:  # column by column: a measure an experiment lacks is NaN, not a dtype guess
            if column in frame:
                parts[column].append(frame[column].to_numpy())
            else:
                fill = defaults.get(column, math.nan)
                parts[column].append(np.full(len(frame), fill, dtype=object if isinstance(fill, str) else float))
    table = pd.DataFrame({c: np.concatenate(v) for c, v in parts.items()})
    return table.assign(arm=[arm_label(v, n) for v, n in zip(table["variant"], table["noise"], strict=True)])


def evidence_state(table: pd.DataFrame, setting: str, rate, arm: str, noise: float, measure: str) -> dict:
    """What the dashboard shows for one choice of its controls.

    Args:
        table: :func:`evidence_table`.
        setting: a label of :func:`settings`.
        rate: ``"tuned"`` (the reported runs, each arm at its tuned rate) or a learning rate of
            the pilot grid (the pilot runs at that rate) or, for an untuned setting, of its grid.
        arm: ``"all arms"`` or one variant.
        noise: the noisy arm's strength to show (0: none), where the setting has one.
        measure: a key of :data:`MEASURES`.

    Returns:
        A dict: ``setting`` (the :class:`Setting`), ``column``, ``curves`` (rows ``arm, lr, seed,
        step, <column>``), ``table`` (per arm: rates, seeds, how many reached the threshold, the
        Kaplan-Meier median steps, the median final held-out loss) and ``notes`` (what the
        choice could not show, in words).
    """
    from helpers.evidence.statistics import time_to_threshold
    from helpers.experiments.threshold_runs import steps_to_threshold

    chosen = {s.label: s for s in settings()}
    s, column, notes = chosen[setting], MEASURES[measure], []
    part = table[table["setting"] == setting]
    tuned = (part["stage"] == "report").any()
    if rate == "tuned":
        if tuned:
            part = part[part["stage"] == "report"]
        else:
            rate = 0.01 if (part["lr"] == 0.01).any() else float(part["lr"].min())
            notes.append(f"not tuned (fixed rates): showing {rate:g}")
    if rate != "tuned":
        if not (part["lr"] == rate).any():
            notes.append(f"no runs at rate {rate:g} here")
        part = part[part["lr"] == rate]
        if tuned:
            notes.append("pilot seeds")
    has_noise = (part["noise"] > 0).any()
    if has_noise:
        part = part[(part["noise"] == 0) | (part["noise"] == noise)]
        if not noise:
            notes.append("noisy LN hidden (strength 0)")
    elif noise:
        notes.append("no noisy arm in this setting")
    if arm != "all arms":
        if not (part["variant"] == arm).any():
            notes.append(f"no {arm} arm here")
        part = part[part["variant"] == arm]
    if not part.empty and part[column].isna().all():
        notes.append(f"{measure} not measured here")
    rows = []
    for name, runs in part.groupby("arm", sort=False):
        cap = int(runs["step"].max())
        steps = steps_to_threshold(runs, s.threshold)["steps"]  # NaN where a run never got there: censored
        km = time_to_threshold(steps.to_numpy(), max(cap, 1))
        final = runs[runs["step"] == cap]["eval_loss"]
        rows.append({"arm": name, "lr": ", ".join(f"{r:g}" for r in sorted(runs["lr"].unique())),
                     "seeds": runs["seed"].nunique(), "reached": f"{int(steps.notna().sum())}/{len(steps)}",
                     "median steps (KM)": "not reached" if km.median is None else f"{km.median:.0f}",
                     "median final loss": f"{final.median():.3g}"})
    summary = pd.DataFrame(rows, columns=["arm", "lr", "seeds", "reached", "median steps (KM)",
                                          "median final loss"]).set_index("arm")
    return {"setting": s, "column": column, "measure": measure, "rate": rate,
            "curves": part[["arm", "variant", "noise", "lr", "seed", "step", column]], "table": summary,
            "notes": notes}


def tuning_table(table: pd.DataFrame) -> pd.DataFrame:
    """The tuning behind every tuned setting: per (setting, arm, rate), the pilot runs' restricted
    mean steps to the setting's threshold (a run that never got there counts as the cap), as the
    runner scored them when it picked each arm's rate.

    Returns:
        Columns ``setting``, ``arm``, ``lr``, ``score``, ``cap`` and ``best`` (whether this is the
        arm's best rate: the lowest score, the smaller rate on a tie, as
        :func:`helpers.evidence.statistics.best_rates` picks it).
    """
    from helpers.experiments.rnn_models import arm_label
    from helpers.experiments.threshold_runs import restricted_mean_steps

    rows = []
    for s in settings():
        pilot = table[(table["setting"] == s.label) & (table["stage"] == "pilot")]
        if pilot.empty:
            continue
        cap = int(pilot["step"].max())
        for r in restricted_mean_steps(pilot, s.threshold, arm_keys=("variant", "noise")).itertuples():
            rows.append({"setting": s.label, "arm": arm_label(r.variant, r.noise), "lr": r.lr, "cap": cap,
                         "score": r.score})
    scores = pd.DataFrame(rows)
    best = scores.sort_values(["score", "lr"]).groupby(["setting", "arm"], sort=False).head(1).index
    return scores.assign(best=scores.index.isin(best))
