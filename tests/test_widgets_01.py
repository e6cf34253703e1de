"""Notebook 01's widgets without a kernel: the eps slider and the gamma/beta sliders, their
state functions and their figures, asserted on data."""

from __future__ import annotations

import math
import re

import ipywidgets as widgets
import matplotlib.pyplot as plt
import pytest
import torch
import torch.nn.functional as F

from helpers import plots
from helpers.widgets import (
    AFFINE_EDGES,
    Dashboard,
    affine_demo,
    affine_state,
    eps_demo,
    eps_state,
    log_slider,
    png_bytes,
)

TOKEN = 1.0 + 0.003 * torch.randn(8, generator=torch.Generator().manual_seed(0))  # eps_demo's
TOKENS = 5.0 + 2.0 * torch.randn(64, 16, generator=torch.Generator().manual_seed(0))  # affine_demo's


@pytest.fixture(autouse=True)
def close_figures():
    yield
    plt.close("all")


# ---------------------------------------------------------------- eps: the state


@pytest.mark.parametrize("eps", [0.0, 1e-9, 1e-5, 1e-3, 1e-1])
def test_output_variance_is_var_over_var_plus_eps(eps):
    state = eps_state(TOKEN, eps)
    var = TOKEN.double().var(unbiased=False).item()
    assert state["var"] == pytest.approx(var, rel=1e-9)
    assert state["predicted_var"] == pytest.approx(var / (var + eps), rel=1e-12)
    assert state["output_var"] == pytest.approx(var / (var + eps), rel=1e-4)
    assert state["output_std"] == pytest.approx(math.sqrt(var / (var + eps)), rel=1e-4)
    assert torch.allclose(state["output"], F.layer_norm(TOKEN, (8,), eps=eps), atol=1e-5)
    row = state["table"].iloc[0]
    assert row["eps"] == eps and row["output var (measured)"] == state["output_var"]


def test_the_demo_token_has_a_variance_near_the_default_eps():
    var = eps_state(TOKEN, 1e-5)["var"]
    assert 5e-6 < var < 2e-5  # measured: 1.26e-5, so eps = 1e-5 halves the output's variance


def test_a_larger_eps_flattens_the_output_more():
    stds = [eps_state(TOKEN, 10.0**e)["output_std"] for e in range(-9, 0)]
    assert all(a > b for a, b in zip(stds, stds[1:], strict=False))
    assert stds[0] > 0.999 and stds[-1] < 0.02


def test_the_eps_0_limit_is_the_token_exactly_standardised():
    limit = eps_state(TOKEN, 1e-3)["limit"].double()
    # float32 centring of values near 1.0 that differ by 0.003: exact to about 1e-4
    assert abs(limit.mean().item()) < 1e-4
    assert limit.std(unbiased=False).item() == pytest.approx(1, abs=1e-4)


def test_a_constant_token_gives_nan_without_eps_and_zeros_with_it():
    constant = torch.full((4,), 2.5)
    assert eps_state(constant, 0.0)["output"].isnan().all()  # 0 / 0
    assert math.isnan(eps_state(constant, 0.0)["predicted_var"])
    with_eps = eps_state(constant, 1e-5)
    assert torch.equal(with_eps["output"], torch.zeros(4)) and with_eps["output_var"] == 0.0


@pytest.mark.parametrize("x, eps, match", [
    (torch.zeros(2, 4), 1e-5, r"argument 'x' must be one token, a 1-D tensor, got \(2, 4\)"),
    (TOKEN, -1e-5, r"argument 'eps' must be >= 0, got -1e-05"),
])
def test_eps_state_bad_arguments(x, eps, match):
    with pytest.raises(ValueError, match=match):
        eps_state(x, eps)


# ---------------------------------------------------------------- eps: figure and dashboard


def test_eps_figure_draws_the_states_data():
    state = eps_state(TOKEN, 1e-4)
    fig = plots.eps_figure(state)
    ax_in, ax_out = fig.axes
    assert plots.find_line(ax_in, "input").get_ydata().tolist() == pytest.approx(TOKEN.tolist())
    assert plots.find_line(ax_out, "output").get_ydata().tolist() == pytest.approx(state["output"].tolist())
    assert plots.find_line(ax_out, "eps = 0").get_ydata().tolist() == pytest.approx(state["limit"].tolist())
    assert ax_out.get_ylim() == (-2.5, 2.5)
    assert "eps = 1e-04" in ax_out.get_title() and f"{state['output_std']:.3f}" in ax_out.get_title()


def test_log_slider_spans_decades_and_redraws_on_release():
    s = log_slider("eps", 1e-5, -9, -1, 0.5)
    assert isinstance(s, widgets.FloatLogSlider)
    assert (s.base, s.min, s.max, s.step, s.value) == (10.0, -9, -1, 0.5, 1e-5)
    assert s.continuous_update is False


@pytest.fixture
def eps_dashboard():
    return eps_demo(seed=0)


def test_eps_demo_uses_its_token_and_one_log_slider(eps_dashboard):
    assert isinstance(eps_dashboard, Dashboard) and set(eps_dashboard.controls) == {"eps"}
    assert isinstance(eps_dashboard.controls["eps"], widgets.FloatLogSlider)
    assert torch.equal(eps_dashboard.state["input"], TOKEN)
    assert eps_dashboard.image.value == png_bytes(eps_dashboard.figure)


@pytest.mark.parametrize("value", [1e-9, 1e-3])
def test_the_eps_slider_changes_what_is_shown(eps_dashboard, value):
    before_state, fig = eps_dashboard.state, eps_dashboard.figure
    before_png, before_html = eps_dashboard.image.value, eps_dashboard.table.value
    y_before = plots.find_line(fig.axes[1], "output").get_ydata().copy()
    title_before = fig.axes[1].get_title()
    eps_dashboard.controls["eps"].value = value
    state = eps_dashboard.state
    assert state["eps"] == value and eps_dashboard.figure is fig
    assert eps_dashboard.image.value != before_png and eps_dashboard.table.value != before_html
    y_after = plots.find_line(fig.axes[1], "output").get_ydata()
    assert abs(y_after - y_before).max() > 0.1
    assert fig.axes[1].get_title() != title_before
    assert f"{state['output_std']:.3e}" in eps_dashboard.table.value
    # The input does not move: only eps does.
    assert torch.equal(state["input"], before_state["input"])


# ---------------------------------------------------------------- gamma, beta: the state


@pytest.mark.parametrize("gamma, beta", [(1.0, 0.0), (2.5, -1.5), (0.25, 3.0), (3.0, -3.0), (0.0, 1.0)])
def test_the_readout_equals_gamma_and_beta(gamma, beta):
    state = affine_state(TOKENS, gamma, beta)
    # y = gamma * x_hat + beta: mean beta; std |gamma| * sqrt(mean var / (var + eps)), about 1e-6 under.
    assert state["mean"] == pytest.approx(beta, abs=1e-5)
    assert state["std"] == pytest.approx(abs(gamma), abs=1e-5 + 1e-5 * abs(gamma))
    table = state["table"]
    assert table.loc["y = γ·x̂ + β", "mean"] == state["mean"]
    assert table.loc["sliders: β and |γ|"].tolist() == [beta, abs(gamma)]
    assert table.loc["x̂ (normalised)", "std"] == pytest.approx(1.0, abs=1e-5)


def test_output_is_layer_norm_with_weight_and_bias():
    state = affine_state(TOKENS, 1.75, 0.5)
    weight, bias = torch.full((16,), 1.75), torch.full((16,), 0.5)
    assert torch.allclose(state["output"], F.layer_norm(TOKENS, (16,), weight, bias), atol=1e-5)
    assert torch.allclose(state["normalised"], F.layer_norm(TOKENS, (16,)), atol=1e-6)


@pytest.mark.parametrize("gamma, beta", [(3.0, 3.0), (3.0, -3.0), (1.0, 0.0)])
def test_the_histograms_hold_every_value_over_the_slider_range(gamma, beta):
    state = affine_state(TOKENS, gamma, beta)
    assert state["output_counts"].sum().item() == TOKENS.numel()
    assert state["normalised_counts"].sum().item() == TOKENS.numel()
    assert torch.equal(state["edges"], AFFINE_EDGES)


def test_affine_state_bad_argument():
    with pytest.raises(ValueError, match=r"argument 'x' must be a 2-D tensor \(tokens, features\), got \(16,\)"):
        affine_state(TOKENS[0], 1.0, 0.0)


# ---------------------------------------------------------------- gamma, beta: figure and dashboard


def test_affine_figure_draws_the_histograms_and_the_mean_and_std():
    state = affine_state(TOKENS, 2.0, -1.0)
    ax = plots.affine_figure(state).axes[0]
    patches = {p.get_gid(): p for p in ax.patches}
    values, edges, _ = patches["output"].get_data()
    assert values.tolist() == state["output_counts"].tolist()
    assert edges.tolist() == pytest.approx(AFFINE_EDGES.tolist())
    assert patches["normalised"].get_data()[0].tolist() == state["normalised_counts"].tolist()
    assert plots.find_line(ax, "mean").get_xdata()[0] == pytest.approx(-1.0, abs=1e-5)
    assert plots.find_line(ax, "mean + std").get_xdata()[0] == pytest.approx(1.0, abs=1e-4)
    assert plots.find_line(ax, "mean - std").get_xdata()[0] == pytest.approx(-3.0, abs=1e-4)
    assert ax.get_xlim() == (-14.0, 14.0)


def _table_row(html: str, label: str) -> dict:
    """The numbers in the ``mean`` and ``std`` cells of the row ``label`` of the readout's HTML."""
    match = re.search(rf"<th>{re.escape(label)}</th>\s*<td>([^<]+)</td>\s*<td>([^<]+)</td>", html)
    assert match, f"no row {label!r} in the readout"
    return {"mean": float(match.group(1)), "std": float(match.group(2))}


@pytest.fixture
def affine_dashboard():
    return affine_demo(seed=0)


def test_affine_demo_has_two_release_sliders_starting_at_one_and_zero(affine_dashboard):
    assert set(affine_dashboard.controls) == {"gamma", "beta"}
    for control in affine_dashboard.controls.values():
        assert isinstance(control, widgets.FloatSlider) and control.continuous_update is False
    assert affine_dashboard.controls["gamma"].value == 1.0
    assert affine_dashboard.controls["beta"].value == 0.0
    assert torch.equal(affine_dashboard.state["output"], affine_dashboard.state["normalised"])


@pytest.mark.parametrize("name, value, column", [("gamma", 2.25, "std"), ("beta", -2.0, "mean")])
def test_each_affine_slider_changes_what_is_shown(affine_dashboard, name, value, column):
    fig, before_png = affine_dashboard.figure, affine_dashboard.image.value
    before_html = affine_dashboard.table.value
    counts_before = {p.get_gid(): p for p in fig.axes[0].patches}["output"].get_data()[0].copy()
    affine_dashboard.controls[name].value = value
    state = affine_dashboard.state
    assert state[name] == value and affine_dashboard.figure is fig
    assert affine_dashboard.image.value != before_png and affine_dashboard.table.value != before_html
    counts_after = {p.get_gid(): p for p in fig.axes[0].patches}["output"].get_data()[0]
    assert (counts_before != counts_after).any()
    # The readout follows the slider: std = gamma, mean = beta.
    assert state[column] == pytest.approx(value, abs=1e-4)
    shown = _table_row(affine_dashboard.table.value, "y = γ·x̂ + β")
    assert shown[column] == pytest.approx(value, abs=1e-4)
    # The normalised histogram does not move.
    assert torch.equal(state["normalised_counts"],
                       affine_state(TOKENS, 1.0, 0.0)["normalised_counts"])
