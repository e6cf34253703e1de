"""LN before or after the activation: what enters tanh, ReLU or GELU, and what leaves.

Pre-activations ``z`` (512 tokens x 64 features) whose centre and spread the sliders move, as a
layer's weights would during training. Left, LN then the activation: the activation always sees
standardised tokens. Right, the activation then LN: it sees ``z`` as it comes, and LN then
standardises whatever the activation left of it.
"""

from __future__ import annotations

import ipywidgets as widgets
import numpy as np
import torch
import torch.nn.functional as F

import helpers
from helpers.language import Text, say
from helpers.plots.histograms import (
    histogram,
    histogram_panels_changing,
    histogram_panels_figure,
    update_histogram_panels_figure,
)
from helpers.widgets.core import Dashboard, slider

__all__ = ["ACTIVATIONS", "activation_input_demo", "activation_input_state"]

ACTIVATIONS = {"tanh": torch.tanh, "ReLU": torch.relu, "GELU": F.gelu}
EDGES = np.linspace(-5.0, 5.0, 81)
ENTERS, LEAVES = "C0", "C3"


def _flat_share(activation: str, entering: torch.Tensor, leaving: torch.Tensor) -> str:
    """How much of what the activation sees lands where it is flat or zero (tanh's flat tails,
    ReLU zero, GELU below -3 where it is almost 0), as a phrase."""
    if activation == "tanh":
        return f"{100 * (leaving.abs() > 0.97).double().mean():.0f}% on the flat tails (|tanh| > 0.97)"
    if activation == "ReLU":
        return f"{100 * (leaving == 0).double().mean():.0f}% set to 0"
    return f"{100 * (entering < -3).double().mean():.0f}% below -3 (GELU almost 0)"


def activation_input_state(activation: str, shift: float, scale: float, seed: int = 0) -> dict:
    """Both orders on the same pre-activations ``z = scale * randn + shift``: what enters the
    activation and what leaves the pair, as histogram panels; the tensors too."""
    act = ACTIVATIONS[activation]
    z = torch.randn(512, 64, generator=torch.Generator().manual_seed(seed)) * scale + shift
    before_in = helpers.layer_norm(z, (64,))
    before_out = act(before_in)
    after_out = helpers.layer_norm(act(z), (64,))
    panels = []
    for title, entering, leaving, output in [
        (f"LN -> {activation}", before_in, before_out, before_out),
        (f"{activation} -> LN", z, act(z), after_out),
    ]:
        panels.append({
            "title": f"{title}: {_flat_share(activation, entering, leaving)}",
            "xlabel": "value",
            "curves": [{"label": f"what enters {activation}", "values": histogram(entering, EDGES), "colour": ENTERS},
                       {"label": "what leaves the pair", "values": histogram(output, EDGES), "colour": LEAVES}],
        })
    return {"edges": EDGES, "panels": panels,
            "suptitle": f"pre-activations z: mean {shift:g}, std {scale:g}",
            "z": z, "LN first": before_out, "LN last": after_out}


_TITLE = Text("<b>LN before the activation (left) or after it (right).</b>",
              "<b>LN 放在激活函数之前（左图）或之后（右图）。</b>")


def activation_input_demo(seed: int = 0) -> Dashboard:
    """A dropdown for the activation and sliders for the pre-activations' centre and spread."""
    controls = {
        "activation": widgets.Dropdown(options=list(ACTIVATIONS), value="tanh",
                                       description=say(Text("activation", "激活函数"))),
        "shift": slider(say(Text("centre of z", "z 的均值")), 0.0, -3.0, 3.0, 0.5),
        "scale": slider(say(Text("spread of z", "z 的标准差")), 1.0, 0.25, 4.0, 0.25),
    }
    return Dashboard(controls, lambda activation, shift, scale: activation_input_state(activation, shift, scale, seed),
                     histogram_panels_figure, update=update_histogram_panels_figure, changing=histogram_panels_changing,
                     title=say(_TITLE))
