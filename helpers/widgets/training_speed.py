"""Deep dive 13's dashboard: every stored run of its experiments, one control per factor."""

from __future__ import annotations

import ipywidgets as widgets
import pandas as pd

from helpers import plots
from helpers.experiments.training_speed_table import MEASURES, evidence_state, settings
from helpers.plots.core import curves_changing
from helpers.widgets.core import Dashboard


def speed_demo(table: pd.DataFrame) -> Dashboard:
    """A setting (experiment and regime), a rate (each arm's tuned one, or one of the grid), an arm,
    a noise strength and a measure, over ``table`` (:func:`helpers.experiments.training_speed_table.evidence_table`)."""
    rates = sorted(set(table["lr"]))
    noises = sorted(set(table["noise"]))
    style = {"description_width": "initial"}
    labels = [s.label for s in settings()]
    controls = {
        "setting": widgets.Dropdown(options=labels, value=labels[0], description="setting", style=style),
        "rate": widgets.SelectionSlider(options=[("tuned", "tuned"), *((f"{r:g}", r) for r in rates)],
                                        value="tuned", description="learning rate", continuous_update=False,
                                        style=style),
        "arm": widgets.Dropdown(options=["all arms", *dict.fromkeys(table["variant"])], value="all arms",
                                description="arm", style=style),
        "noise": widgets.SelectionSlider(options=noises, value=noises[0], description="noise strength",
                                         continuous_update=False, style=style),
        "measure": widgets.ToggleButtons(options=list(MEASURES), value="held-out loss"),
    }

    # Each setting's rows, picked out once: the same rows evidence_state picks from the whole table
    # (a comparison of strings over all of it, about 2 ms at every change).
    by_setting = {label: table[table["setting"] == label] for label in labels}

    def compute(setting, rate, arm, noise, measure):
        return evidence_state(by_setting[setting], setting, rate, arm, noise, measure)

    return Dashboard(controls, compute, plots.evidence_figure, update=plots.update_evidence_figure,
                     changing=curves_changing, table=lambda state: state["table"],
                     title="<b>Every stored run of this notebook: thin lines are seeds, bold the median; "
                           "steps to the threshold under the figure.</b>")
