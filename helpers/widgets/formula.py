"""What eps does to a near-constant token: :func:`eps_state`, which deep dive 14 tables."""

from __future__ import annotations

import pandas as pd
import torch

from helpers.functional import layer_norm
from helpers.lessons.group_stats import group_stats


def eps_state(x: torch.Tensor, eps: float) -> dict:
    """LayerNorm of one token with a given ``eps``, and what eps did to its variance.

    Args:
        x: one token, shape ``(dim,)``, whose features may be (nearly) equal.
        eps: LayerNorm's eps, ``>= 0``.

    Returns:
        A dict: ``input`` (``x``), ``output`` (``helpers.layer_norm`` with ``eps``, no
        gamma or beta), ``limit`` (the output with eps = 0: ``x`` exactly standardised, NaN
        if every feature is equal), ``eps``, the token's ``mean`` and biased ``var``, the
        output's biased ``output_var`` and ``output_std`` (measured, float64),
        ``predicted_var`` = ``var / (var + eps)``, and ``table``: one row with those
        numbers, for the readout.
    """
    shape = (x.shape[0],)
    output = layer_norm(x, shape, eps=eps)
    limit = layer_norm(x, shape, eps=0.0)
    stats_in = group_stats(x, 0).iloc[0]
    stats_out = group_stats(output, 0).iloc[0]
    var = stats_in["var"]
    predicted = var / (var + eps) if var + eps > 0 else float("nan")
    table = pd.DataFrame({
        "token var": [var], "eps": [float(eps)], "var / (var + eps)": [predicted],
        "output var (measured)": [stats_out["var"]], "output std": [stats_out["std"]],
    }, index=pd.Index(["token"]))
    return {
        "input": x, "output": output, "limit": limit, "eps": float(eps),
        "mean": stats_in["mean"], "var": var, "output_var": stats_out["var"],
        "output_std": stats_out["std"], "predicted_var": predicted, "table": table,
    }
