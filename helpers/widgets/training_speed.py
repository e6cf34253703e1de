"""Notebook 05's dashboard: pick a learning rate, a depth, the variants and what to plot; runs computed once."""

from __future__ import annotations

import ipywidgets as widgets
import pandas as pd

from helpers import plots
from helpers.training_speed import NOISE, THRESHOLD, smooth, steps_to_threshold
from helpers.widgets.core import Dashboard

__all__ = ["SHOW", "WHAT", "prepare_runs", "speed_demo", "speed_state"]

#: Which variants the dashboard can show (the noisy one at its default strength, NOISE).
SHOW = {"no norm vs LayerNorm": ("no norm", "LayerNorm"),
        "no norm only": ("no norm",),
        "LayerNorm only": ("LayerNorm",),
        "LayerNorm vs noisy LayerNorm": ("LayerNorm", "noisy LayerNorm"),
        "all three": ("no norm", "LayerNorm", "noisy LayerNorm")}

#: What the dashboard can plot: label -> column of :func:`helpers.training_speed.rnn_runs`.
WHAT = {"loss": "loss", "tanh input: mean": "pre_mean", "tanh input: std": "pre_std"}


def _one_of(name: str, value, allowed) -> None:
    if value not in allowed:
        raise ValueError(f"speed_state(): argument '{name}' must be one of {sorted(allowed)}, got {value!r}")


def prepare_runs(runs: pd.DataFrame) -> dict:
    """What :func:`speed_state` would compute on every call, computed once for all of ``runs``:
    ``smoothed`` (:func:`helpers.training_speed.smooth` of the loss, per run) and ``reached``
    (:func:`helpers.training_speed.steps_to_threshold`, one row per run). Both are per run, so a
    subset of runs gets the same numbers as computing them on the subset alone."""
    return {"runs": runs, "smoothed": smooth(runs), "reached": steps_to_threshold(runs)}


def speed_state(runs: pd.DataFrame, lr: float, depth: int, show: str, what: str, *,
                prepared: dict | None = None) -> dict:
    """The curves of the runs at learning rate ``lr`` and depth ``depth`` for the variants ``SHOW[show]``.

    Args:
        runs: :func:`helpers.training_speed.rnn_runs` frames, concatenated (one per depth).
        prepared: :func:`prepare_runs` of these same ``runs``, or None; the result is the
            same, but a dashboard redraws without smoothing every run again.

    Returns:
        A dict: ``lr``, ``depth``, ``variants`` (those of ``SHOW[show]`` trained at this depth),
        ``missing`` (those that were not), ``column``, ``curves`` (rows ``step, seed, variant,
        noise, <column>``, the loss smoothed as :func:`helpers.training_speed.smooth` does) and
        ``table`` (steps to :data:`THRESHOLD` per variant: mean, min, max over seeds and the
        number of seeds that reached it).
    """
    _one_of("lr", lr, set(runs["lr"]))
    _one_of("depth", depth, set(runs["depth"]))
    _one_of("show", show, SHOW)
    _one_of("what", what, WHAT)
    column = WHAT[what]
    if prepared is not None and prepared["runs"] is not runs:
        raise ValueError("speed_state(): argument 'prepared' must be prepare_runs() of these runs")

    def select(frame: pd.DataFrame) -> pd.Series:
        return ((frame["lr"] == lr) & (frame["depth"] == depth) & frame["variant"].isin(SHOW[show])
                & frame["noise"].isin((0.0, NOISE)))

    part = runs[select(runs)]
    trained = [v for v in SHOW[show] if v in set(part["variant"])]
    if prepared is None:
        smoothed, per_run = (smooth(part) if column == "loss" else None), steps_to_threshold(part)
    else:
        smoothed, per_run = prepared["smoothed"][part.index], prepared["reached"]
        per_run = per_run[select(per_run)].reset_index(drop=True)
    curves = part.assign(loss=smoothed) if column == "loss" else part
    reached = per_run.groupby("variant", sort=False)["steps"]
    table = reached.agg(["mean", "min", "max", "count"]).rename(columns={"count": "seeds reaching it"})
    return {"lr": lr, "depth": depth, "variants": tuple(trained),
            "missing": tuple(v for v in SHOW[show] if v not in trained), "column": column,
            "curves": curves[["step", "seed", "variant", "noise", column]], "table": table}


def _curves_kwargs(state: dict) -> dict:
    title = f"depth {state['depth']}, learning rate {state['lr']}: mean over seeds, band min to max"
    if state["missing"]:
        title += f"\n(not trained at depth {state['depth']}: {', '.join(state['missing'])})"
    return {"column": state["column"], "threshold": THRESHOLD if state["column"] == "loss" else None,
            "title": title}


def _draw(state: dict):
    return plots.curves_figure(state["curves"], **_curves_kwargs(state))


def _update(fig, state: dict) -> None:
    plots.update_curves_figure(fig, state["curves"], **_curves_kwargs(state))


def speed_demo(runs: pd.DataFrame) -> Dashboard:
    """Learning-rate and depth sliders, a variant choice and a quantity choice over ``runs`` (computed once)."""
    lrs, depths = sorted(set(runs["lr"])), sorted(set(runs["depth"]))
    style = {"description_width": "initial"}
    controls = {
        "lr": widgets.SelectionSlider(options=lrs, value=lrs[0], description="learning rate",
                                      continuous_update=False, style=style),
        "depth": widgets.SelectionSlider(options=depths, value=depths[0], description="RNN layers",
                                         continuous_update=False, style=style),
        "show": widgets.Dropdown(options=list(SHOW), value="no norm vs LayerNorm", description="variants"),
        "what": widgets.ToggleButtons(options=list(WHAT), value="loss"),
    }
    prepared = prepare_runs(runs)  # smoothed once here, not on every move

    def compute(lr, depth, show, what):
        return speed_state(runs, lr, depth, show, what, prepared=prepared)

    return Dashboard(controls, compute, _draw, update=_update,
                     table=lambda state: state["table"].round(1),
                     title="<b>Adding problem, tiny RNNs: steps to the threshold under the figure "
                           "(computed once above; each move only redraws).</b>")
