"""Notebook 05's dashboard: pick a learning rate, the variants and what to plot; runs computed once."""

from __future__ import annotations

import ipywidgets as widgets
import pandas as pd

from helpers import plots
from helpers.training_speed import THRESHOLD, smooth, steps_to_threshold
from helpers.widgets.core import Dashboard

__all__ = ["SHOW", "WHAT", "speed_demo", "speed_state"]

#: Which variants the dashboard can show.
SHOW = {"no norm vs LayerNorm": ("no norm", "LayerNorm"),
        "LayerNorm vs noisy LayerNorm": ("LayerNorm", "noisy LayerNorm"),
        "all three": ("no norm", "LayerNorm", "noisy LayerNorm")}

#: What the dashboard can plot: label -> column of :func:`helpers.training_speed.rnn_runs`.
WHAT = {"loss": "loss", "tanh input: mean": "pre_mean", "tanh input: std": "pre_std"}


def speed_state(runs: pd.DataFrame, lr: float, show: str, what: str) -> dict:
    """The curves of the runs at learning rate ``lr`` for the variants ``SHOW[show]``.

    Returns:
        A dict: ``lr``, ``variants``, ``column``, ``curves`` (rows ``step, seed, variant,
        <column>``, the loss smoothed as :func:`helpers.training_speed.smooth` does) and
        ``table`` (steps to :data:`THRESHOLD` per variant: mean, min, max over seeds and the
        number of seeds that reached it).
    """
    if lr not in set(runs["lr"]):
        raise ValueError(f"speed_state(): argument 'lr' must be one of {sorted(set(runs['lr']))}, got {lr}")
    variants, column = SHOW[show], WHAT[what]
    part = runs[(runs["lr"] == lr) & runs["variant"].isin(variants)]
    curves = part.assign(loss=smooth(part)) if column == "loss" else part
    reached = steps_to_threshold(part).groupby("variant", sort=False)["steps"]
    table = reached.agg(["mean", "min", "max", "count"]).rename(columns={"count": "seeds reaching it"})
    return {"lr": lr, "variants": variants, "column": column,
            "curves": curves[["step", "seed", "variant", column]], "table": table}


def _draw(state: dict):
    return plots.curves_figure(state["curves"], column=state["column"],
                               threshold=THRESHOLD if state["column"] == "loss" else None,
                               title=f"learning rate {state['lr']}: mean over seeds, band min to max")


def speed_demo(runs: pd.DataFrame) -> Dashboard:
    """A learning-rate slider, a variant choice and a quantity choice over ``runs`` (computed once)."""
    lrs = sorted(set(runs["lr"]))
    controls = {
        "lr": widgets.SelectionSlider(options=lrs, value=lrs[1], description="learning rate",
                                      continuous_update=False, style={"description_width": "initial"}),
        "show": widgets.Dropdown(options=list(SHOW), value="no norm vs LayerNorm", description="variants"),
        "what": widgets.ToggleButtons(options=list(WHAT), value="loss"),
    }
    return Dashboard(controls, lambda lr, show, what: speed_state(runs, lr, show, what), _draw,
                     table=lambda state: state["table"].round(1),
                     title="<b>Adding problem, tiny RNN: steps to the threshold under the figure "
                           "(computed once above; each move only redraws).</b>")
