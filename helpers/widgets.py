"""Widgets: small dashboards whose logic is plain functions.

Each dashboard is three parts:

- a *state* function (here :func:`shift_scale_state`): control values in, everything
  to show out, as plain data; no widgets, no drawing, tested without a kernel;
- a figure builder in :mod:`helpers.plots` (and, if wanted, a table), also tested
  without a kernel;
- :class:`Dashboard`, which wires controls to the two: on every change it recomputes
  the state (kept in ``dashboard.state``), draws the figure (kept, closed, in
  ``dashboard.figure``) and shows it as a PNG in an ``Image`` widget, with the table in
  an ``HTML`` widget below.

Why an ``Image`` and not ``plt.show()`` inside an ``Output`` widget: when a notebook is
executed headless (``jupyter nbconvert --execute``, ``nbclient``), every output captured
by an ``Output`` widget makes the executor send a message on the shell channel while it
waits there for the cell's reply, and it sometimes misses that reply: the cell then
stalls until the timeout, or forever without one (jupyter/nbclient#312). ``Image`` and
``HTML`` values travel only from the kernel to the front end, so that cannot happen.
The PNG is what the inline backend would show.

Only API common to ipywidgets 7.7 (Google Colab) and 8.x is used. Sliders redraw
when released (``continuous_update=False``).
"""

from __future__ import annotations

import io
from collections.abc import Callable, Mapping

import ipywidgets as widgets
import matplotlib.pyplot as plt
import pandas as pd
import torch
from matplotlib.figure import Figure

from helpers import plots
from helpers.functional import layer_norm
from helpers.stats import group_stats, rounded

__all__ = ["Dashboard", "png_bytes", "shift_scale_demo", "shift_scale_state", "slider"]

_TABLE_STYLE = ("<style>.ln-table {border-collapse: collapse; font-size: 12px}"
                ".ln-table th, .ln-table td {padding: 2px 10px; text-align: right}</style>")


def png_bytes(fig: Figure) -> bytes:
    """``fig`` as PNG bytes, at the figure's own dpi (what the inline backend shows)."""
    buffer = io.BytesIO()
    fig.savefig(buffer, format="png", dpi=fig.dpi)
    return buffer.getvalue()


class Dashboard(widgets.VBox):
    """A title, a row of controls, a figure and (optionally) a table, redrawn on every change.

    Args:
        controls: ``name -> widget``; each widget's ``value`` is passed to ``compute``
            as the keyword ``name``.
        compute: ``compute(**values) -> state``, a plain function.
        draw: ``draw(state) -> Figure``, a builder from :mod:`helpers.plots`.
        table: ``table(state) -> DataFrame`` shown under the figure, or None.
        title: an HTML line above the controls.

    After every change, ``dashboard.state`` holds the latest state, ``dashboard.figure``
    the latest (closed) figure and ``dashboard.controls`` the controls by name; tests use
    them without a kernel.
    """

    def __init__(self, controls: Mapping[str, widgets.Widget], compute: Callable[..., object],
                 draw: Callable[[object], Figure], *,
                 table: Callable[[object], pd.DataFrame] | None = None, title: str = ""):
        self.image = widgets.Image(format="png")
        self.table = widgets.HTML()
        children = [widgets.HBox(list(controls.values())), self.image]
        if table is not None:
            children.append(self.table)
        if title:
            children.insert(0, widgets.HTML(title))
        super().__init__(children=children)
        self.controls = dict(controls)
        self._compute, self._draw, self._table = compute, draw, table
        self.state = self.figure = None
        for control in self.controls.values():
            control.observe(self.refresh, names="value")
        self.refresh()

    def refresh(self, change=None) -> None:
        """Recompute the state from the controls' values and redraw."""
        self.state = self._compute(**{name: c.value for name, c in self.controls.items()})
        self.figure = self._draw(self.state)
        plt.close(self.figure)  # shown through the Image widget, never by pyplot
        self.image.value = png_bytes(self.figure)
        if self._table is not None:
            frame = self._table(self.state)
            self.table.value = _TABLE_STYLE + frame.to_html(classes="ln-table", border=0)


def slider(description: str, value: float, low: float, high: float, step: float) -> widgets.FloatSlider:
    """A FloatSlider that redraws on release and shows its whole description."""
    return widgets.FloatSlider(
        value=value, min=low, max=high, step=step, description=description,
        continuous_update=False, style={"description_width": "initial"},
        layout=widgets.Layout(width="360px"),
    )


# ------------------------------------------------ notebook 00: shift and scale one sample


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
    controls = {
        "shift": slider("shift sample 0 by", 0.0, -5.0, 5.0, 0.5),
        "scale": slider("scale sample 0 by", 1.0, 0.25, 4.0, 0.25),
    }
    return Dashboard(
        controls,
        lambda shift, scale: shift_scale_state(x, shift, scale),
        plots.shift_scale_figure,
        table=_shift_scale_table,
        title="<b>Move sample 0: its input changes, its LayerNorm output does not.</b>",
    )


# ------------------------------------------------ notebook 02: per token, per sentence, per batch

__all__ += ["NORM_UNITS", "norm_unit_demo", "norm_unit_state"]

# What LayerNorm normalizes over, by the number of trailing dims of (batch, seq_len, dim).
NORM_UNITS = {1: "token", 2: "sentence", 3: "whole batch"}
SEQUENCE_NAMES = ("sentence", "token", "feature")


def norm_unit_state(x: torch.Tensor, n_trailing: int, scale: float = 1.0, *,
                    token: tuple[int, int] = (0, 2), eps: float = 1e-5) -> dict:
    """LayerNorm a ``(batch, seq_len, dim)`` batch over its last ``n_trailing`` dims.

    Args:
        x: the batch, ``(batch, seq_len, dim)``.
        n_trailing: 1 (per token: ``normalized_shape=(dim,)``), 2 (per sentence:
            ``(seq_len, dim)``) or 3 (the whole batch as one group: ``(batch, seq_len, dim)``).
        scale: multiplies every feature of the token ``token`` first; 1 leaves ``x`` as is.
        token: ``(sentence, position)`` of the token that ``scale`` acts on.
        eps: LayerNorm's eps.

    Returns:
        A dict: ``inputs`` (``x`` after scaling), ``outputs`` (``helpers.layer_norm``),
        ``normalized_shape``, ``reduced_dims``, ``unit`` (its name in :data:`NORM_UNITS`),
        ``groups`` (per group of values that share a mean and variance, its
        ``(first_row, n_rows)`` with the tokens as rows ``sentence * seq_len + position``),
        ``changed`` (bool, ``(batch, seq_len)``: whose output moved by more than 1e-4 compared
        with ``scale=1``), ``token``, ``scale`` and ``table``: per group, its ``count`` and the
        mean and (biased) variance of its input and of its output, from
        :func:`helpers.stats.group_stats`.
    """
    from helpers.sequence import reduced_dims

    if not isinstance(x, torch.Tensor) or x.ndim != 3:
        got = tuple(x.shape) if isinstance(x, torch.Tensor) else type(x).__name__
        raise ValueError(f"norm_unit_state(): argument 'x' must be a 3-D tensor "
                         f"(batch, seq_len, dim), got {got}")
    if n_trailing not in NORM_UNITS:
        raise ValueError(f"norm_unit_state(): argument 'n_trailing' must be one of "
                         f"{sorted(NORM_UNITS)}, got {n_trailing!r}")
    batch, seq_len, _ = x.shape
    b, t = token
    if not (0 <= b < batch and 0 <= t < seq_len):
        raise ValueError(f"norm_unit_state(): argument 'token' must be a (sentence, position) "
                         f"in [0, {batch - 1}] x [0, {seq_len - 1}], got {token}")
    shape = tuple(x.shape[-n_trailing:])
    scaled = x.clone()
    scaled[b, t] = x[b, t] * scale
    outputs = layer_norm(scaled, shape, eps=eps)
    original = layer_norm(x, shape, eps=eps)
    dims = reduced_dims(3, shape)
    stats_in = group_stats(scaled, dims, names=SEQUENCE_NAMES)
    stats_out = group_stats(outputs, dims, names=SEQUENCE_NAMES)
    rows_per_group = batch * seq_len // len(stats_in)  # 1 token, a sentence's, or every token
    groups = [(first, rows_per_group) for first in range(0, batch * seq_len, rows_per_group)]
    table = pd.DataFrame({
        "count": stats_in["count"],
        "input mean": stats_in["mean"], "input var": stats_in["var"],
        "output mean": stats_out["mean"], "output var": stats_out["var"],
    })
    return {
        "inputs": scaled, "outputs": outputs, "normalized_shape": shape,
        "reduced_dims": dims, "unit": NORM_UNITS[n_trailing], "groups": groups,
        "changed": (outputs - original).abs().amax(dim=-1) > 1e-4,
        "token": (b, t), "scale": float(scale), "table": table,
    }


def _norm_unit_table(state: dict) -> pd.DataFrame:
    return rounded(state["table"], 4)


def norm_unit_demo(x: torch.Tensor | None = None) -> Dashboard:
    """Pick what LayerNorm normalizes over (token, sentence, whole batch) and scale one token.

    ``x`` defaults to the lesson's batch: ``torch.manual_seed(42)``, then
    ``torch.rand(2, 3, 4)``. The figure outlines the groups that share a mean and variance and
    flags the outputs that move when token (0, 2) is scaled; the table has each group's
    statistics.
    """
    if x is None:
        x = torch.rand(2, 3, 4, generator=torch.Generator().manual_seed(42))
    options = [(f"{name} · normalized_shape={tuple(x.shape[-n:])}", n) for n, name in NORM_UNITS.items()]
    controls = {
        "n_trailing": widgets.ToggleButtons(options=options, value=1, description="normalize per",
                                            style={"description_width": "initial",
                                                   "button_width": "auto"}),
        "scale": slider("scale token s0 t2 by", 1.0, 1.0, 10.0, 0.5),
    }
    return Dashboard(
        controls,
        lambda n_trailing, scale: norm_unit_state(x, n_trailing, scale),
        plots.norm_unit_figure,
        table=_norm_unit_table,
        title="<b>Which values share one mean and variance? Choose the unit, then make one token "
              "louder.</b>",
    )


# ------------------------------------------------ notebook 01: eps, and gamma and beta

__all__ += ["affine_demo", "affine_state", "eps_demo", "eps_state", "log_slider"]


def log_slider(description: str, value: float, low_exponent: float, high_exponent: float,
               step: float, *, base: float = 10.0) -> widgets.FloatLogSlider:
    """A FloatLogSlider from ``base**low_exponent`` to ``base**high_exponent`` that redraws on release.

    ``step`` moves the exponent: with ``step=0.5`` each notch multiplies the value by
    ``sqrt(base)``. (FloatLogSlider exists in ipywidgets 7.7 and 8.)
    """
    return widgets.FloatLogSlider(
        value=value, base=base, min=low_exponent, max=high_exponent, step=step,
        description=description, readout_format=".1e", continuous_update=False,
        style={"description_width": "initial"}, layout=widgets.Layout(width="360px"),
    )


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
        table=_affine_table,
        title="<b>γ rescales and β shifts LayerNorm's standardised output.</b>",
    )
