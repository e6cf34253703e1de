"""Per token or per sentence: the distribution of each token's values before and after LN.

A sentence of 6 tokens x 256 features from ``rand`` (as the lesson's batch), token 2 scaled by a
slider. With ``normalized_shape=dim`` every token comes out with mean 0 and variance 1, the
scaled one too; with ``normalized_shape=(seq_len, dim)`` the tokens share one mean and variance,
so the scaled token dominates and the others are squeezed.
"""

from __future__ import annotations

import ipywidgets as widgets
import numpy as np
import torch

import helpers
from helpers.plots.histograms import (
    histogram,
    histogram_panels_changing,
    histogram_panels_figure,
    update_histogram_panels_figure,
)
from helpers.widgets.core import Dashboard, slider

SEQ_LEN, DIM, SCALED_TOKEN = 6, 256, 2
#: The choices: label -> normalized_shape.
UNITS = {"per token: normalized_shape=dim": (DIM,), "per sentence: normalized_shape=(seq_len, dim)": (SEQ_LEN, DIM)}
EDGES = np.linspace(-4.0, 4.0, 33)
IN_EDGES = np.linspace(0.0, 8.0, 33)


def token_or_sentence_state(unit: str, scale: float, seed: int = 0) -> dict:
    """Token ``SCALED_TOKEN`` of a seeded sentence scaled by ``scale``, normalized with ``unit``'s
    ``normalized_shape``: each token's input and output histogram, and the tensors."""
    x = torch.rand(SEQ_LEN, DIM, generator=torch.Generator().manual_seed(seed))
    x[SCALED_TOKEN] *= scale
    y = helpers.layer_norm(x, UNITS[unit])

    def curves(values, edges):
        return [{"label": f"token {t}", "values": histogram(values[t], edges),
                 "colour": "C3" if t == SCALED_TOKEN else "0.55", "width": 2.0 if t == SCALED_TOKEN else 1.0}
                for t in range(SEQ_LEN)]

    inputs = {"title": f"input: token {SCALED_TOKEN} (red) scaled by {scale:g}", "xlabel": "value",
              "edges": IN_EDGES, "curves": curves(x, IN_EDGES)}
    stds = y.std(dim=-1, correction=0)
    outputs = {"title": f"output, {unit.split(':')[0]}: std of token {SCALED_TOKEN} {stds[SCALED_TOKEN]:.2f}, "
                        f"others {stds[torch.arange(SEQ_LEN) != SCALED_TOKEN].mean():.2f}",
               "xlabel": "value (grey: the other tokens)", "curves": curves(y, EDGES)}
    return {"edges": EDGES, "panels": [inputs, outputs], "suptitle": "", "x": x, "y": y}


def token_or_sentence_demo(seed: int = 0) -> Dashboard:
    """A dropdown for ``normalized_shape`` and a slider that scales one token."""
    controls = {
        "unit": widgets.Dropdown(options=list(UNITS), value=next(iter(UNITS)), description="normalize",
                                 layout=widgets.Layout(width="420px")),
        "scale": slider(f"scale token {SCALED_TOKEN} by", 1.0, 1.0, 8.0, 0.5),
    }
    return Dashboard(controls, lambda unit, scale: token_or_sentence_state(unit, scale, seed),
                     histogram_panels_figure, update=update_histogram_panels_figure, changing=histogram_panels_changing,
                     title="<b>Each token's values: per token or per sentence.</b>")
