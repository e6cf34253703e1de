"""What eps does to a near-constant token (helpers.widgets.formula's eps_state, which deep dive 14
tables), and the log-scale slider of deep dive 14's and 15's dashboards."""

from __future__ import annotations

import math

import ipywidgets as widgets
import pytest
import torch
import torch.nn.functional as F

from helpers.widgets import eps_state
from helpers.widgets.core import log_slider

TOKEN = 1.0 + 0.003 * torch.randn(8, generator=torch.Generator().manual_seed(0))  # deep dive 14's demo_token


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


# ---------------------------------------------------------------- the log-scale slider


def test_log_slider_spans_decades_and_redraws_on_release():
    s = log_slider("eps", 1e-5, -9, -1, 0.5)
    assert isinstance(s, widgets.FloatLogSlider)
    assert (s.base, s.min, s.max, s.step, s.value) == (10.0, -9, -1, 0.5, 1e-5)
    assert s.continuous_update is False
