"""Deep dive 14's dashboard: how far each variance algorithm's LayerNorm is from float64."""

from __future__ import annotations

import ipywidgets as widgets
import pandas as pd
import torch

from helpers.lessons.variance import ALGORITHMS, layer_norm_error, two_pass_var
from helpers.plots.memory_and_speed import stability_figure, update_stability_figure
from helpers.widgets.core import Dashboard, log_slider

DTYPES = {"float32": torch.float32, "float16": torch.float16, "bfloat16": torch.bfloat16, "float64": torch.float64}


def stability_state(offset: float = 1e4, scale: float = 1e-2, dtype: str = "float32", eps: float = 1e-5,
                    rows: int = 8, width: int = 256, seed: int = 0) -> dict:
    """Rows ``offset + scale * z`` (float64, seeded), rounded to ``dtype``; per algorithm, the
    variance it computes and the max error of the LayerNorm built on it, against float64."""
    g = torch.Generator().manual_seed(seed)
    x64 = offset + scale * torch.randn(rows, width, generator=g, dtype=torch.float64)
    _, true_var = two_pass_var(x64)
    variance, ln_error = {}, {}
    for name, algorithm in ALGORITHMS.items():
        _, var = algorithm(x64.to(DTYPES[dtype]))
        variance[name] = float(var.double().mean())
        ln_error[name] = float(layer_norm_error(x64, DTYPES[dtype], eps, name).max())
    return {"offset": offset, "scale": scale, "dtype": dtype, "eps": eps,
            "true variance": float(true_var.mean()), "variance": variance, "ln_error": ln_error}


def _table(state: dict) -> pd.DataFrame:
    return pd.DataFrame({"mean variance computed": state["variance"], "max LN error": state["ln_error"]}).assign(
        **{"true variance (float64)": state["true variance"]}).map(lambda v: f"{v:.3e}")


def stability_demo() -> Dashboard:
    """Offset, scale, dtype and eps controls; bars of each algorithm's LN error, and a table."""
    controls = {
        "offset": log_slider("offset (mean)", 1e4, 0, 6, 0.5),
        "scale": log_slider("scale (std)", 1e-2, -4, 1, 0.5),
        "dtype": widgets.Dropdown(options=list(DTYPES), value="float32", description="dtype"),
        "eps": log_slider("eps", 1e-5, -12, -1, 1),
    }
    return Dashboard(controls, stability_state, stability_figure, update=update_stability_figure, table=_table,
                     title="<b>Variance algorithms against float64</b>: move the mean away from 0")
