"""The core path's dashboards (deep stack, activation input, residual stream) and deep dive 16's
token-or-sentence dashboard, without a kernel: each state function says what its notebook claims.
That every control changes the picture, and that the kept figure equals a freshly drawn one after
any change, is tested with every other dashboard in tests/test_widgets_redraw.py."""

from __future__ import annotations

import matplotlib.pyplot as plt
import numpy as np
import pytest
import torch
import torch.nn.functional as F

import helpers
from helpers.plots.histograms import histogram, histogram_panels_figure
from helpers.widgets.activation_input import activation_input_state
from helpers.widgets.deep_stack import DEPTH, deep_stack_state
from helpers.widgets.residual_stream import BLOCKS, residual_stream_state
from helpers.widgets.token_or_sentence import UNITS, token_or_sentence_state

PER_SENTENCE = list(UNITS)[1]

@pytest.fixture(autouse=True)
def _close_figures():
    yield
    plt.close("all")


def test_histogram_counts_fractions_of_all_values_and_leaves_out_what_lies_beyond_the_edges():
    edges = np.linspace(-1.0, 1.0, 5)
    h = histogram(torch.tensor([-5.0, -0.75, 0.1, 0.2, 9.0]), edges)
    assert h.tolist() == pytest.approx([0.2, 0.0, 0.4, 0.0])


def test_each_panel_says_what_lies_beyond_its_axis_and_the_figures_are_900_pixels_wide():
    stream = residual_stream_state("LayerNorm", 2.0)
    fig = histogram_panels_figure(stream)
    assert fig.get_size_inches()[0] * fig.dpi >= 900
    beyond = [t.get_text() for ax in fig.axes for t in ax.texts if t.get_gid() == "outside"]
    share = (stream["stream"][-1].abs() > 6).double().mean()
    assert beyond == [f"beyond the axis: {share:.0%} of block {BLOCKS}", ""]  # attention's input: all inside
    colorbar = [ax for ax in fig.axes if ax.get_label() == "colorbar"]
    assert len(colorbar) == 1 and colorbar[0].get_ylabel() == "block"
    # with no norm, a symlog axis holds the whole stream, however far it grows
    plain = residual_stream_state("no norm", 3.0)
    for panel in plain["panels"]:
        assert panel["xscale"] == "symlog" and sum(c["values"].sum() for c in panel["curves"]) == pytest.approx(BLOCKS)
    assert histogram_panels_figure(activation_input_state("tanh", 2.0, 3.0)).get_size_inches()[0] * fig.dpi >= 900


def test_deep_stack_without_ln_vanishes_and_with_ln_is_gamma_and_beta():
    state = deep_stack_state(gain=0.5, gamma=2.0, beta=0.5)
    assert len(state["no norm"]) == len(state["LayerNorm"]) == DEPTH
    assert state["no norm"][-1].std() < 0.01 < 0.3 < state["no norm"][0].std()
    for z in state["LayerNorm"]:
        torch.testing.assert_close(z.mean(-1), torch.full((z.shape[0],), 0.5), atol=1e-4, rtol=0)
        torch.testing.assert_close(z.std(-1, correction=0), torch.full((z.shape[0],), 2.0), atol=1e-3, rtol=0)
    assert deep_stack_state(2.0, 1.0, 0.0)["no norm"][-1].std() > 1.0  # large weights: it spreads instead


def test_activation_input_ln_first_is_invariant_ln_last_saturates():
    rest = activation_input_state("tanh", 0.0, 1.0)
    moved = activation_input_state("tanh", -3.0, 0.5)
    torch.testing.assert_close(moved["LN first"], rest["LN first"], atol=1e-3, rtol=0)
    assert (torch.tanh(moved["z"]).abs() > 0.97).float().mean() > 0.9
    torch.testing.assert_close(moved["LN last"], F.layer_norm(torch.tanh(moved["z"]), (64,)), atol=1e-4, rtol=0)
    assert "% set to 0" in activation_input_state("ReLU", 0.0, 1.0)["panels"][0]["title"]
    assert "% on the flat tails (|tanh| > 0.97)" in moved["panels"][1]["title"]


def test_token_or_sentence_matches_layer_norm_and_scaling_one_token_matters_per_sentence_only():
    token = token_or_sentence_state(list(UNITS)[0], 5.0)
    sentence = token_or_sentence_state(PER_SENTENCE, 5.0)
    torch.testing.assert_close(token["y"], F.layer_norm(token["x"], token["x"].shape[-1:]))
    torch.testing.assert_close(sentence["y"], F.layer_norm(sentence["x"], sentence["x"].shape))
    std_token, std_sentence = token["y"].std(-1, correction=0), sentence["y"].std(-1, correction=0)
    assert torch.allclose(std_token, torch.ones_like(std_token), atol=1e-3)
    assert std_sentence[2] > 1.2 and (std_sentence[[0, 1, 3, 4, 5]] < 0.5).all()


def test_residual_stream_grows_and_the_norm_hands_attention_one_scale():
    for norm in ("LayerNorm", "RMSNorm"):
        state = residual_stream_state(norm, 2.0)
        assert len(state["stream"]) == BLOCKS
        assert state["stream"][-1].std() > 2 * state["stream"][0].std()
        rms = state["attention input"][-1].pow(2).mean(-1).sqrt()
        assert torch.allclose(rms, torch.ones_like(rms), atol=1e-3)  # LN: std 1 and mean 0; RMSNorm: rms 1
    plain = residual_stream_state("no norm", 2.0)
    assert all(torch.equal(s, h) for s, h in zip(plain["stream"], plain["attention input"], strict=True))
    x = plain["stream"][3]
    torch.testing.assert_close(residual_stream_state("LayerNorm", 2.0)["attention input"][0],
                               helpers.layer_norm(plain["stream"][0], (x.shape[-1],)))
