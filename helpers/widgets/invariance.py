"""A dashboard that shifts and rescales one sample, whose LN output stays put; no notebook shows
it now."""

from __future__ import annotations

import pandas as pd
import torch

from helpers import plots
from helpers.functional import layer_norm
from helpers.lessons.group_stats import group_stats, rounded
from helpers.widgets.core import Dashboard, shift_scale_sliders

__all__ = ["shift_scale_demo", "shift_scale_state"]


def shift_scale_state(x: torch.Tensor, shift: float, scale: float, *, sample: int = 0,
                      eps: float = 1e-5) -> dict:
    """Move one sample of a batch by ``scale * x + shift``; LayerNorm every sample.

    Args:
        x: a batch of shape ``(n_samples, n_features)``.
        shift: added to every feature of sample ``sample`` (after scaling).
        scale: multiplies every feature of sample ``sample``; must be positive.
        sample: which sample moves.
        eps: LayerNorm's eps.

    Returns:
        A dict: ``inputs`` (the batch after the move), ``outputs`` (``helpers.layer_norm``
        over the features), ``original_inputs``/``original_outputs`` (before the move),
        ``sample``, ``shift``, ``scale``, ``input_ylim`` (limits that hold the inputs both
        before and after, with a margin) and ``table``: per sample, the mean and standard
        deviation (biased) of its input and of its output.
    """
    if not isinstance(x, torch.Tensor) or x.ndim != 2:
        got = tuple(x.shape) if isinstance(x, torch.Tensor) else type(x).__name__
        raise ValueError(f"shift_scale_state(): argument 'x' must be a 2-D tensor "
                         f"(samples, features), got {got}")
    if not scale > 0:
        raise ValueError(f"shift_scale_state(): argument 'scale' must be positive, got {scale}")
    if not 0 <= sample < x.shape[0]:
        raise ValueError(f"shift_scale_state(): argument 'sample' must be in [0, {x.shape[0] - 1}], "
                         f"got {sample}")
    moved = x.clone()
    moved[sample] = x[sample] * scale + shift
    shape = (x.shape[1],)
    outputs = layer_norm(moved, shape, eps=eps)
    both = torch.cat([x, moved])
    low, high = both.min().item(), both.max().item()
    pad = 0.1 * (high - low) + 1e-3
    stats_in = group_stats(moved, -1, names=("sample", "feature"))
    stats_out = group_stats(outputs, -1, names=("sample", "feature"))
    table = pd.DataFrame({
        "input mean": stats_in["mean"], "input std": stats_in["std"],
        "output mean": stats_out["mean"], "output std": stats_out["std"],
    })
    return {
        "inputs": moved, "outputs": outputs,
        "original_inputs": x, "original_outputs": layer_norm(x, shape, eps=eps),
        "sample": sample, "shift": float(shift), "scale": float(scale),
        "input_ylim": (low - pad, high + pad), "table": table,
    }


def _shift_scale_table(state: dict) -> pd.DataFrame:
    return rounded(state["table"], 3)


def shift_scale_demo(seed: int = 0, *, n_samples: int = 4, n_features: int = 8) -> Dashboard:
    """Sliders that shift and scale sample 0 of a seeded ``randn`` batch; LN's output stays put.

    The left panel shows the inputs (sample 0 moves; a pale band marks where it was), the right
    panel LayerNorm's outputs (sample 0's line stays on its old one), and the table each
    sample's mean and standard deviation before and after LayerNorm.
    """
    x = torch.randn(n_samples, n_features, generator=torch.Generator().manual_seed(seed))
    return Dashboard(
        shift_scale_sliders(sample=0),
        lambda shift, scale: shift_scale_state(x, shift, scale),
        plots.shift_scale_figure,
        update=plots.update_shift_scale_figure,
        table=_shift_scale_table,
        title="<b>Move sample 0: its input changes, its LayerNorm output does not.</b>",
    )
