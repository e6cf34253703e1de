"""Dashboards of the formula: eps on a near-constant token, and gamma and beta. No notebook shows
them now; deep dive 14 tables :func:`eps_state`."""

from __future__ import annotations

import ipywidgets as widgets
import pandas as pd
import torch

from helpers import plots
from helpers.functional import layer_norm
from helpers.lessons.group_stats import group_stats, rounded
from helpers.plots.formula import AFFINE_YLIM
from helpers.widgets.core import Dashboard, log_slider, slider

__all__ = ["AFFINE_YLIM", "affine_demo", "affine_state", "eps_demo", "eps_state"]


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
    if not isinstance(x, torch.Tensor) or x.ndim != 1:
        got = tuple(x.shape) if isinstance(x, torch.Tensor) else type(x).__name__
        raise ValueError(f"eps_state(): argument 'x' must be one token, a 1-D tensor, got {got}")
    if not eps >= 0:
        raise ValueError(f"eps_state(): argument 'eps' must be >= 0, got {eps}")
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


def _eps_table(state: dict) -> pd.DataFrame:
    return state["table"].map("{:.3e}".format)  # eps and variances span many decades


def eps_demo(seed: int = 0, *, n_features: int = 8, mean: float = 1.0,
             spread: float = 0.003) -> Dashboard:
    """A log-scale eps slider on one near-constant token: ``mean + spread * randn(n_features)``.

    With the default spread the token's variance is about 1e-5, LayerNorm's default eps:
    sliding eps from 1e-9 to 1e-1 takes the output from fully standardised (std 1) to
    nearly flattened (std near 0). The pale band is the eps = 0 output.
    """
    x = mean + spread * torch.randn(n_features, generator=torch.Generator().manual_seed(seed))
    controls = {"eps": log_slider("eps", 1e-5, -9.0, -1.0, 0.5)}
    return Dashboard(
        controls,
        lambda eps: eps_state(x, eps),
        plots.eps_figure,
        update=plots.update_eps_figure,
        table=_eps_table,
        title="<b>A token whose features barely differ: how much does eps flatten it?</b>",
    )


def affine_state(x: torch.Tensor, feature: int, gamma: float, beta: float, *, eps: float = 1e-5) -> dict:
    """LayerNorm of ``(n_tokens, dim)`` tokens with feature ``feature``'s gamma and beta set, the others 1 and 0.

    gamma and beta are vectors with one entry per feature, shared by every token: setting
    entry ``feature`` rescales and shifts that feature of *every* token, and no other.

    Args:
        x: the tokens, shape ``(n_tokens, dim)``.
        feature: which entry of gamma and beta the sliders set, ``0 <= feature < dim``.
        gamma, beta: its values; every other entry of gamma is 1 and of beta 0.
        eps: LayerNorm's eps.

    Returns:
        A dict: ``input`` (``x``), ``normalised`` (LayerNorm without gamma and beta: x̂),
        ``output`` (``helpers.layer_norm`` with ``weight`` and ``bias``), ``weight`` and ``bias``
        (the vectors), ``feature``, ``gamma``, ``beta``; over the tokens, in float64, the
        chosen feature's output ``mean`` and biased ``std`` and the largest change of any
        other feature (``others_max_change``, ``|y - x̂|``); and ``table``: the mean and std
        over the tokens of x̂ and y at the chosen feature, and ``γ · mean(x̂) + β`` and
        ``|γ| · std(x̂)``, what y's must be.
    """
    if not isinstance(x, torch.Tensor) or x.ndim != 2:
        got = tuple(x.shape) if isinstance(x, torch.Tensor) else type(x).__name__
        raise ValueError(f"affine_state(): argument 'x' must be a 2-D tensor (tokens, features), "
                         f"got {got}")
    dim = x.shape[1]
    if not 0 <= feature < dim:
        raise ValueError(f"affine_state(): argument 'feature' must be in [0, {dim - 1}], got {feature}")
    weight, bias = torch.ones(dim), torch.zeros(dim)
    weight[feature], bias[feature] = float(gamma), float(beta)
    normalised = layer_norm(x, (dim,), eps=eps)
    output = layer_norm(x, (dim,), weight, bias, eps=eps)
    column_hat = group_stats(normalised[:, feature], 0).iloc[0]
    column_out = group_stats(output[:, feature], 0).iloc[0]
    others = [j for j in range(dim) if j != feature]
    table = pd.DataFrame(
        {"mean over tokens": [column_hat["mean"], column_out["mean"], float(gamma) * column_hat["mean"] + float(beta)],
         "std over tokens": [column_hat["std"], column_out["std"], abs(float(gamma)) * column_hat["std"]]},
        index=pd.Index([f"x̂, feature {feature}", f"y, feature {feature}", "γ · x̂ + β: what y must have"]),
    )
    return {
        "input": x, "normalised": normalised, "output": output, "weight": weight, "bias": bias,
        "feature": int(feature), "gamma": float(gamma), "beta": float(beta),
        "mean": column_out["mean"], "std": column_out["std"],
        "others_max_change": (output[:, others] - normalised[:, others]).abs().max().item(),
        "table": table,
    }


def _affine_table(state: dict) -> pd.DataFrame:
    return rounded(state["table"], 4)


def affine_demo(seed: int = 0, *, n_tokens: int = 64, dim: int = 16) -> Dashboard:
    """A feature selector and its gamma and beta, over LayerNorm's output of seeded tokens ``5 + 2 * randn``.

    Grey dots: x̂, every token's value at every feature; blue dots: ``y = gamma * x̂ + beta``
    with the chosen feature's gamma and beta from the sliders and every other feature's at
    1 and 0. The chosen feature's column of every token stretches and moves; the others stay.
    Starts at feature 3, gamma 2.5, beta 3, so that y and x̂ differ from the first picture.
    """
    x = 5.0 + 2.0 * torch.randn(n_tokens, dim, generator=torch.Generator().manual_seed(seed))
    controls = {
        "feature": widgets.IntSlider(value=3, min=0, max=dim - 1, step=1, description="feature j",
                                     continuous_update=False, style={"description_width": "initial"}),
        "gamma": slider("γ_j (its weight)", 2.5, 0.0, 3.0, 0.25),
        "beta": slider("β_j (its bias)", 3.0, -3.0, 3.0, 0.25),
    }
    return Dashboard(
        controls,
        lambda feature, gamma, beta: affine_state(x, feature, gamma, beta),
        plots.affine_figure,
        update=plots.update_affine_figure,
        table=_affine_table,
        title="<b>γ and β have one entry per feature, shared by every token.</b>",
    )
