"""Deep dive 11's dashboard: move one sample; BN's output for the others moves, LN's does not."""

from __future__ import annotations

import pandas as pd
import torch

from helpers import plots
from helpers.functional import batch_norm, layer_norm
from helpers.lessons.group_stats import rounded
from helpers.widgets.core import Dashboard, shift_scale_sliders


def _bn(x: torch.Tensor) -> torch.Tensor:
    return batch_norm(x, None, None, training=True)


def _ln(x: torch.Tensor) -> torch.Tensor:
    return layer_norm(x, (x.shape[-1],))


def other_samples_state(x: torch.Tensor, shift: float, scale: float, *, sample: int = 0) -> dict:
    """Replace sample ``sample`` of ``x`` by ``scale * x + shift``; normalize the batch with BN and LN.

    BN runs in training mode (the batch's own statistics, no gamma/beta), LN over each
    sample's features.

    Returns:
        A dict: ``inputs``, ``sample``, ``shift``, ``scale``; ``BatchNorm`` and ``LayerNorm``
        (outputs now) and ``BatchNorm before``/``LayerNorm before`` (outputs of ``x``);
        ``table``: per norm, the largest change of the other samples' outputs and of the
        moved sample's.
    """
    moved = x.clone()
    moved[sample] = x[sample] * scale + shift
    others = torch.arange(x.shape[0]) != sample
    state = {"inputs": moved, "sample": sample, "shift": float(shift), "scale": float(scale)}
    rows = {}
    for name, fn in (("BatchNorm", _bn), ("LayerNorm", _ln)):
        state[name], state[f"{name} before"] = fn(moved), fn(x)
        change = (state[name] - state[f"{name} before"]).abs()
        rows[name] = {"other samples: max change": change[others].max().item(),
                      "moved sample: max change": change[sample].max().item()}
    state["table"] = pd.DataFrame.from_dict(rows, orient="index")
    return state


def other_samples_demo(seed: int = 0, *, n_samples: int = 4, n_features: int = 6) -> Dashboard:
    """Sliders that shift and scale sample 0 of a seeded ``randn`` batch; BN and LN outputs side by side."""
    x = torch.randn(n_samples, n_features, generator=torch.Generator().manual_seed(seed))
    return Dashboard(
        shift_scale_sliders(sample=0),
        lambda shift, scale: other_samples_state(x, shift, scale),
        plots.other_samples_figure,
        update=plots.update_other_samples_figure,
        table=lambda state: rounded(state["table"], 4),
        title="<b>Move sample 0: BatchNorm's output for the OTHER samples moves; LayerNorm's does not.</b>",
    )
