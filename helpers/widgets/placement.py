"""Deep dive 12's dashboard: activation, placement and depth -> per-layer histograms and read-outs."""

from __future__ import annotations

import ipywidgets as widgets
import pandas as pd

from helpers import plots
from helpers.experiments.placement_tuned import ACTIVATIONS
from helpers.lessons.placement import PLACEMENTS, placement_state
from helpers.plots.core import curves_changing
from helpers.plots.placement import layer_histograms_changing
from helpers.widgets.core import Dashboard

#: The depths the dashboard offers.
DEPTHS = (4, 8, 12, 16)


def placement_table(state: dict) -> pd.DataFrame:
    """Per layer (columns), rounded for display: % saturated (tanh only), % dead (ReLU only) and the
    gradient norm of the layer's weights. GELU gets neither count: it is never flat like tanh's
    tails and never exactly 0 like ReLU, so it has nothing to count."""
    rows = {}
    if state["activation"] == "tanh":
        rows["% saturated (|tanh| > 0.97)"] = [100 * v for v in state["saturated"]]
    if state["activation"] == "relu":
        rows["% dead (0 on every sample)"] = [100 * v for v in state["dead"]]
    rows["weight-gradient norm"] = state["grad_norm"]
    frame = pd.DataFrame(rows, index=pd.RangeIndex(1, state["depth"] + 1, name="layer"))
    return frame.round(3).T


def placement_demo(activation: str = "tanh", placement: str = "LN -> act", depth: int = 8) -> Dashboard:
    """Dropdowns for the activation, the placement and the depth, on a freshly initialised MLP
    (:func:`helpers.lessons.placement.placement_state`, with the stored ``placement_tuned`` experiment's init)."""
    controls = {
        "activation": widgets.Dropdown(options=list(ACTIVATIONS), value=activation, description="activation"),
        "placement": widgets.Dropdown(options=list(PLACEMENTS), value=placement, description="placement"),
        "depth": widgets.Dropdown(options=list(DEPTHS), value=depth, description="depth"),
    }
    return Dashboard(controls, placement_state, plots.layer_histograms_figure,
                     update=plots.update_layer_histograms_figure, changing=layer_histograms_changing,
                     table=placement_table,
                     title="<b>At initialisation: per-layer activations and gradient norms.</b>")


def stored_runs_demo(frame: pd.DataFrame) -> Dashboard:
    """The stored ``placement_tuned`` runs: an activation, one arrangement or all, and a rate (each
    arrangement's tuned one, or one of the pilot grid) -> every seed's curve and a table."""
    from helpers.experiments.placement_tuned import ARRANGEMENTS, stored_runs_state

    rates = sorted(set(frame.loc[frame["stage"] == "pilot", "lr"]))
    style = {"description_width": "initial"}
    controls = {
        "activation": widgets.Dropdown(options=list(ACTIVATIONS), value=ACTIVATIONS[0], description="activation"),
        "arrangement": widgets.Dropdown(options=["all", *ARRANGEMENTS], value="all", description="arrangement"),
        "rate": widgets.SelectionSlider(options=[("tuned", "tuned"), *((f"{r:g}", r) for r in rates)],
                                        value="tuned", description="learning rate", continuous_update=False,
                                        style=style),
    }

    def compute(activation, arrangement, rate):
        return stored_runs_state(frame, activation, arrangement, rate)

    return Dashboard(controls, compute, plots.stored_runs_figure, update=plots.update_stored_runs_figure,
                     changing=curves_changing, table=lambda state: state["table"],
                     title="<b>The stored runs: thin lines are seeds, bold the median.</b>")
