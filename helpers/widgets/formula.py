"""Notebook 01's dashboards: eps on a near-constant token, and gamma and beta."""

from __future__ import annotations

import pandas as pd
import torch

from helpers import plots
from helpers.functional import layer_norm
from helpers.stats import group_stats, rounded
from helpers.widgets.core import Dashboard, log_slider, slider

__all__ = ["AFFINE_EDGES", "affine_demo", "affine_state", "eps_demo", "eps_state"]


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


AFFINE_EDGES = torch.linspace(-14.0, 14.0, 57)  # histogram bins of width 0.5


def affine_state(x: torch.Tensor, gamma: float, beta: float, *, eps: float = 1e-5,
                 edges: torch.Tensor = AFFINE_EDGES) -> dict:
    """LayerNorm ``(n_tokens, dim)`` tokens with every gamma set to ``gamma``, every beta to ``beta``.

    Args:
        x: the tokens, shape ``(n_tokens, dim)``.
        gamma, beta: the value of every entry of LayerNorm's weight and bias.
        eps: LayerNorm's eps.
        edges: the histogram's bin edges (fixed, so the axis never moves).

    Returns:
        A dict: ``input`` (``x``), ``normalised`` (LayerNorm without gamma and beta: x̂), ``output``
        (``gamma * x̂ + beta``, via ``helpers.layer_norm`` with weight and bias), ``gamma``,
        ``beta``, ``edges``, ``normalised_counts`` and ``output_counts`` (histograms over
        ``edges``), the output's ``mean`` and biased ``std`` over all its values (float64),
        and ``table``: the mean and std of x̂ and of y next to the sliders' beta and gamma.
    """
    if not isinstance(x, torch.Tensor) or x.ndim != 2:
        got = tuple(x.shape) if isinstance(x, torch.Tensor) else type(x).__name__
        raise ValueError(f"affine_state(): argument 'x' must be a 2-D tensor (tokens, features), "
                         f"got {got}")
    shape = (x.shape[1],)
    normalised = layer_norm(x, shape, eps=eps)
    output = layer_norm(x, shape, torch.full(shape, float(gamma)), torch.full(shape, float(beta)),
                        eps=eps)
    stats_hat = group_stats(normalised, (0, 1)).iloc[0]
    stats_out = group_stats(output, (0, 1)).iloc[0]
    table = pd.DataFrame(
        {"mean": [stats_hat["mean"], stats_out["mean"], float(beta)],
         "std": [stats_hat["std"], stats_out["std"], abs(float(gamma))]},
        index=pd.Index(["x̂ (normalised)", "y = γ·x̂ + β", "sliders: β and |γ|"]),
    )

    def counts(values: torch.Tensor) -> torch.Tensor:
        return torch.histogram(values.flatten().double(), edges.double()).hist

    return {
        "input": x, "normalised": normalised, "output": output,
        "gamma": float(gamma), "beta": float(beta),
        "edges": edges, "normalised_counts": counts(normalised), "output_counts": counts(output),
        "mean": stats_out["mean"], "std": stats_out["std"], "table": table,
    }


def _affine_table(state: dict) -> pd.DataFrame:
    return rounded(state["table"], 4)


def affine_demo(seed: int = 0, *, n_tokens: int = 64, dim: int = 16) -> Dashboard:
    """Sliders for gamma and beta over LayerNorm's output of seeded tokens ``5 + 2 * randn``.

    The grey histogram is x̂ (mean 0, std 1), the blue one ``gamma * x̂ + beta``; the
    table reads the blue one's mean and std, which follow beta and |gamma|.
    """
    x = 5.0 + 2.0 * torch.randn(n_tokens, dim, generator=torch.Generator().manual_seed(seed))
    controls = {
        "gamma": slider("γ (every weight)", 1.0, 0.0, 3.0, 0.25),
        "beta": slider("β (every bias)", 0.0, -3.0, 3.0, 0.25),
    }
    return Dashboard(
        controls,
        lambda gamma, beta: affine_state(x, gamma, beta),
        plots.affine_figure,
        update=plots.update_affine_figure,
        table=_affine_table,
        title="<b>γ rescales and β shifts LayerNorm's standardised output.</b>",
    )
