"""A Pre-LN Transformer stack: the residual stream grows, what each sub-layer sees does not.

Eight Pre-LN blocks, ``x = x + attention(norm(x))`` then ``x = x + mlp(norm(x))`` (one causal
attention head, a GELU MLP), with fixed seeded weights; the output projections of both
branches are scaled by a slider. Left: the residual stream entering each block. Right: what the
norm hands to each block's attention: with LayerNorm or RMSNorm every token comes out with the
same spread whatever the stream's, with no norm it is the stream itself. The weights are drawn with
variance ``1 / n_in`` (three times PyTorch's default for ``nn.Linear``), so that without a norm each
sub-layer adds about as much as it reads and the stream grows by orders of magnitude: then both
panels use a symlog axis (linear within ±1, logarithmic beyond), on which all of it stays in view.
"""

from __future__ import annotations

import functools

import ipywidgets as widgets
import numpy as np
import torch
import torch.nn.functional as F
from matplotlib.scale import SymmetricalLogTransform

import helpers
from helpers.language import Text, say
from helpers.plots.histograms import (
    SYMLOG,
    histogram,
    histogram_panels_changing,
    histogram_panels_figure,
    update_histogram_panels_figure,
)
from helpers.plots.placement import layer_colours
from helpers.widgets.core import Dashboard, slider

__all__ = ["BLOCKS", "NORMS", "residual_stream_demo", "residual_stream_state"]

BLOCKS, D_MODEL, SEQ_LEN, BATCH = 8, 64, 16, 16
NORMS = ("LayerNorm", "RMSNorm", "no norm")
EDGES = np.linspace(-6.0, 6.0, 61)
#: With no norm: bins of equal width on the symlog axis out to ±1e7, past the stream's largest value
#: at the largest branch scale (3.6e6); counted on the axis's own scale (``_SYMLOG_SCALED``).
_SYMLOG = SymmetricalLogTransform(**SYMLOG)
_SYMLOG_SCALED = np.linspace(-1, 1, 81) * _SYMLOG.transform_non_affine(np.array([1e7]))[0]
SYMLOG_EDGES = _SYMLOG.inverted().transform_non_affine(_SYMLOG_SCALED)


def _histogram(values: torch.Tensor, symlog: bool) -> np.ndarray:
    if not symlog:
        return histogram(values, EDGES)
    return histogram(torch.from_numpy(_SYMLOG.transform_non_affine(values.double().flatten().numpy())), _SYMLOG_SCALED)


@functools.lru_cache(maxsize=4)
def _weights(seed: int) -> tuple[torch.Tensor, list[dict]]:
    g = torch.Generator().manual_seed(seed)

    def w(n_in, n_out):
        return torch.randn(n_in, n_out, generator=g) / n_in**0.5

    x = torch.randn(BATCH, SEQ_LEN, D_MODEL, generator=g)
    return x, [{"qkv": w(D_MODEL, 3 * D_MODEL), "proj": w(D_MODEL, D_MODEL),
                "fc": w(D_MODEL, 4 * D_MODEL), "out": w(4 * D_MODEL, D_MODEL)} for _ in range(BLOCKS)]


def _norm(name: str, x: torch.Tensor) -> torch.Tensor:
    if name == "LayerNorm":
        return helpers.layer_norm(x, (D_MODEL,))
    if name == "RMSNorm":
        return helpers.rms_norm(x, (D_MODEL,), eps=1e-5)
    return x


def residual_stream_state(norm: str, branch_scale: float, seed: int = 0) -> dict:
    """The stream entering each block and what ``norm`` hands to its attention, as histogram
    panels; the tensors too (``"stream"``, ``"attention input"``: one per block)."""
    x, blocks = _weights(seed)
    causal = torch.ones(SEQ_LEN, SEQ_LEN).tril().bool()
    stream, seen = [], []
    for p in blocks:
        stream.append(x)
        h = _norm(norm, x)
        seen.append(h)
        q, k, v = (h @ p["qkv"]).split(D_MODEL, dim=-1)
        scores = (q @ k.transpose(-2, -1) / D_MODEL**0.5).masked_fill(~causal, float("-inf"))
        x = x + branch_scale * (scores.softmax(-1) @ v) @ p["proj"]
        x = x + branch_scale * F.gelu(_norm(norm, x) @ p["fc"]) @ p["out"]
    colours = layer_colours(BLOCKS)
    symlog = norm == "no norm"
    edges = SYMLOG_EDGES if symlog else EDGES

    def panel(title, values):
        return {"title": f"{title}\nblock 1: std {values[0].std():,.2f};  block {BLOCKS}: std {values[-1].std():,.2f}",
                "xlabel": "value (symlog axis: linear within ±1, logarithmic beyond)" if symlog else "value",
                "edges": edges, "xscale": "symlog" if symlog else "linear",
                "curves": [{"label": f"block {i + 1}", "values": _histogram(v, symlog), "colour": colours[i]}
                           for i, v in enumerate(values)]}

    return {"edges": EDGES, "panels": [panel("residual stream entering the block", stream),
                                       panel(f"what attention sees ({norm})", seen)],
            "suptitle": f"branch outputs scaled by {branch_scale:g}", "colorbar": "block",
            "stream": stream, "attention input": seen}


_TITLE = Text("<b>Eight Pre-LN blocks: the residual stream and what attention sees.</b>",
              "<b>八个 Pre-LN 块里的残差流，以及注意力层的输入。</b>")
#: The dropdown's label of a norm where it is not the norm's own name.
_NORM_LABELS = {"no norm": Text("no norm", "不加归一化")}


def residual_stream_demo(seed: int = 0) -> Dashboard:
    """A dropdown for the norm and a slider for the branches' scale."""
    controls = {
        "norm": widgets.Dropdown(options=[(say(_NORM_LABELS.get(norm, norm)), norm) for norm in NORMS],
                                 value="LayerNorm", description=say(Text("norm", "归一化层"))),
        "branch_scale": slider(say(Text("branch output scale", "子层输出的缩放")), 1.0, 0.5, 3.0, 0.5),
    }
    return Dashboard(controls, lambda norm, branch_scale: residual_stream_state(norm, branch_scale, seed),
                     histogram_panels_figure, update=update_histogram_panels_figure, changing=histogram_panels_changing,
                     title=say(_TITLE))
