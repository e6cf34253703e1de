"""A deep stack with and without LayerNorm: the distribution entering each layer's activation.

A stack of ``Linear(64 -> 64) -> [LayerNorm] -> tanh`` layers, fixed seeded weights scaled by
``gain``, on 512 tokens. Without LN, what enters each tanh depends on every weight before it: it
shrinks or spreads with depth as the weights change (``gain``). With LN, every layer's tanh sees
``gamma * x_hat + beta``, whatever the weights: each token standardised, then rescaled and shifted.
"""

from __future__ import annotations

import numpy as np
import torch

import helpers
from helpers.language import Text, say
from helpers.plots.histograms import (
    histogram,
    histogram_panels_changing,
    histogram_panels_figure,
    update_histogram_panels_figure,
)
from helpers.plots.placement import layer_colours
from helpers.widgets.core import Dashboard, slider

__all__ = ["DEPTH", "deep_stack_demo", "deep_stack_state"]

DEPTH, WIDTH, TOKENS = 8, 64, 512
EDGES = np.linspace(-5.0, 5.0, 81)


def _weights(seed: int) -> tuple[torch.Tensor, list[torch.Tensor]]:
    g = torch.Generator().manual_seed(seed)
    tokens = torch.randn(TOKENS, WIDTH, generator=g)
    return tokens, [torch.randn(WIDTH, WIDTH, generator=g) / WIDTH**0.5 for _ in range(DEPTH)]


def _r(value: torch.Tensor) -> str:
    """Two decimals, never "-0.00"."""
    return f"{round(float(value), 2) + 0.0:.2f}"


def deep_stack_state(gain: float, gamma: float, beta: float, seed: int = 0) -> dict:
    """What enters each layer's tanh, without LN and with LN (gamma and beta the same for every
    feature), as histogram panels; also each layer's values (``"no norm"``, ``"LayerNorm"``)."""
    tokens, weights = _weights(seed)
    entering = {"no norm": [], "LayerNorm": []}
    for name in entering:
        h = tokens
        for w in weights:
            z = h @ (gain * w).T
            if name == "LayerNorm":
                z = helpers.layer_norm(z, (WIDTH,)) * gamma + beta
            entering[name].append(z)
            h = torch.tanh(z)
    colours = layer_colours(DEPTH)
    panels = []
    for name, label in [("no norm", "without LN"), ("LayerNorm", f"with LN (gamma {gamma:g}, beta {beta:g})")]:
        first, last = entering[name][0], entering[name][-1]
        panels.append({
            "title": f"{label}\nlayer 1: mean {_r(first.mean())}, std {_r(first.std())};  "
                     f"layer {DEPTH}: mean {_r(last.mean())}, std {_r(last.std())}",
            "xlabel": "value entering tanh",
            "curves": [{"label": f"layer {i + 1}", "values": histogram(z, EDGES), "colour": colours[i]}
                       for i, z in enumerate(entering[name])],
        })
    return {"edges": EDGES, "panels": panels, "suptitle": f"weights scaled by {gain:g}", "colorbar": "layer",
            **entering}


_TITLE = Text("<b>What enters each layer's tanh, in an 8-layer stack: without LN and with LN.</b>",
              "<b>8 层网络里进入每一层 tanh 的值，左图不加 LN，右图加 LN。</b>")


def deep_stack_demo(seed: int = 0) -> Dashboard:
    """Sliders for the weights' scale, gamma and beta; the two panels redraw on release."""
    controls = {
        "gain": slider(say(Text("weight scale", "权重缩放")), 1.0, 0.5, 2.0, 0.25),
        "gamma": slider(say(Text("LN's gamma", "LN 的 gamma")), 1.0, 0.5, 2.0, 0.25),
        "beta": slider(say(Text("LN's beta", "LN 的 beta")), 0.0, -1.0, 1.0, 0.25),
    }
    return Dashboard(controls, lambda gain, gamma, beta: deep_stack_state(gain, gamma, beta, seed),
                     histogram_panels_figure, update=update_histogram_panels_figure, changing=histogram_panels_changing,
                     title=say(_TITLE))
