"""The formula's dashboards without a kernel (helpers.widgets.formula, which no notebook shows now;
deep dive 14 tables eps_state): the eps slider and the gamma/beta sliders, their state functions
and their figures, asserted on data."""

from __future__ import annotations

import math

import ipywidgets as widgets
import matplotlib.pyplot as plt
import pytest
import torch
import torch.nn.functional as F

from helpers import plots
from helpers.widgets import (
    AFFINE_YLIM,
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


@pytest.mark.parametrize("feature, gamma, beta", [(0, 1.0, 0.0), (3, 2.5, -1.5), (15, 0.25, 3.0), (7, 0.0, 1.0)])
def test_only_the_chosen_feature_of_every_token_is_rescaled_and_shifted(feature, gamma, beta):
    state = affine_state(TOKENS, feature, gamma, beta)
    weight, bias = torch.ones(16), torch.zeros(16)
    weight[feature], bias[feature] = gamma, beta
    assert torch.equal(state["weight"], weight) and torch.equal(state["bias"], bias)
    assert torch.allclose(state["output"], F.layer_norm(TOKENS, (16,), weight, bias), atol=1e-5)
    assert torch.allclose(state["normalised"], F.layer_norm(TOKENS, (16,)), atol=1e-6)
    # every token: y_j = gamma * x_hat_j + beta at the chosen feature, y = x_hat elsewhere
    x_hat = F.layer_norm(TOKENS.double(), (16,))
    assert torch.allclose(state["output"][:, feature].double(), gamma * x_hat[:, feature] + beta, atol=1e-5)
    assert state["others_max_change"] < 1e-6
    column = state["output"][:, feature].double()
    assert state["mean"] == pytest.approx(column.mean().item(), abs=1e-9)
    assert state["std"] == pytest.approx(column.std(unbiased=False).item(), rel=1e-9)


@pytest.mark.parametrize("feature, gamma, beta", [(2, 2.5, -1.5), (9, 0.5, 3.0)])
def test_the_readout_is_what_gamma_and_beta_predict(feature, gamma, beta):
    table = affine_state(TOKENS, feature, gamma, beta)["table"]
    x_hat = F.layer_norm(TOKENS.double(), (16,))[:, feature]
    assert table.index.tolist() == [f"x̂, feature {feature}", f"y, feature {feature}", "γ · x̂ + β: what y must have"]
    assert table.iloc[0].tolist() == pytest.approx([x_hat.mean().item(), x_hat.std(unbiased=False).item()], abs=1e-6)
    assert table.iloc[2].tolist() == pytest.approx([gamma * x_hat.mean().item() + beta,
                                                    gamma * x_hat.std(unbiased=False).item()], abs=1e-5)
    assert table.iloc[1].tolist() == pytest.approx(table.iloc[2].tolist(), abs=1e-5)


@pytest.mark.parametrize("args, match", [
    ((TOKENS[0], 0, 1.0, 0.0), r"argument 'x' must be a 2-D tensor \(tokens, features\), got \(16,\)"),
    ((TOKENS, 16, 1.0, 0.0), r"argument 'feature' must be in \[0, 15\], got 16"),
    ((TOKENS, -1, 1.0, 0.0), r"argument 'feature' must be in \[0, 15\], got -1"),
])
def test_affine_state_bad_arguments(args, match):
    with pytest.raises(ValueError, match=match):
        affine_state(*args)


# ---------------------------------------------------------------- gamma, beta: figure and dashboard


def test_affine_figure_draws_every_token_at_every_feature():
    state = affine_state(TOKENS, 5, 2.0, -1.0)
    ax = plots.affine_figure(state).axes[0]
    dots = {c.get_gid(): c.get_offsets() for c in ax.collections}
    for gid, values, offset in (("normalised", state["normalised"], -0.2), ("output", state["output"], 0.2)):
        points = dots[gid]
        assert points.shape == (64 * 16, 2)
        assert points[:, 1].tolist() == pytest.approx(values.reshape(-1).tolist())
        assert points[:16, 0].tolist() == pytest.approx([j + offset for j in range(16)])
    assert plots.find_line(ax, "token 0").get_ydata() == pytest.approx(state["output"][0].tolist())
    (band,) = [p for p in ax.patches if p.get_gid() == "feature"]
    assert band.get_x() == pytest.approx(4.55)
    assert ax.get_ylim() == AFFINE_YLIM
    assert ax.get_title().startswith("feature 5: γ = 2, β = -1 for every token")


@pytest.fixture
def affine_dashboard():
    return affine_demo(seed=0)


def test_affine_demo_has_three_release_controls_and_starts_where_y_and_x_hat_differ(affine_dashboard):
    assert list(affine_dashboard.controls) == ["feature", "gamma", "beta"]
    for control in affine_dashboard.controls.values():
        assert isinstance(control, (widgets.FloatSlider, widgets.IntSlider)) and control.continuous_update is False
    assert isinstance(affine_dashboard.controls["feature"], widgets.IntSlider)
    assert (affine_dashboard.controls["feature"].min, affine_dashboard.controls["feature"].max) == (0, 15)
    state = affine_dashboard.state
    assert torch.equal(state["input"], TOKENS)
    assert (state["output"] - state["normalised"]).abs().max() > 1.0  # the first picture shows both


@pytest.mark.parametrize("name, value", [("feature", 11), ("gamma", 0.5), ("beta", -2.0)])
def test_each_affine_control_changes_what_is_shown(affine_dashboard, name, value):
    fig, before_png = affine_dashboard.figure, affine_dashboard.image.value
    before_html, title = affine_dashboard.table.value, fig.axes[0].get_title()
    output_before = {c.get_gid(): c for c in fig.axes[0].collections}["output"].get_offsets().copy()
    affine_dashboard.controls[name].value = value
    state = affine_dashboard.state
    assert state[name] == value and affine_dashboard.figure is fig
    assert affine_dashboard.image.value != before_png and affine_dashboard.table.value != before_html
    assert fig.axes[0].get_title() != title
    output_after = {c.get_gid(): c for c in fig.axes[0].collections}["output"].get_offsets()
    assert abs(output_after - output_before).max() > 0.1
    expected = affine_state(TOKENS, **{k: c.value for k, c in affine_dashboard.controls.items()})
    assert torch.equal(state["output"], expected["output"])
    # x̂ does not move: only y does
    assert torch.equal(state["normalised"], affine_state(TOKENS, 0, 1.0, 0.0)["normalised"])
