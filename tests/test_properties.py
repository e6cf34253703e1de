"""Properties that hold for any input (hypothesis): invariances, standardized
statistics, gradient identities, and agreement with torch on arbitrary shapes.

All computations are in float64 so that the only deviation from an exact identity
is the eps inside the square root; each tolerance is derived from that bound.
"""

from __future__ import annotations

import math

import numpy as np
import torch
import torch.nn.functional as F
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

import helpers
from helpers import LayerNormFunction

EPS = 1e-5
SETTINGS = settings(max_examples=40, deadline=None)
values = st.floats(-100, 100, allow_nan=False, allow_infinity=False, width=64)


@st.composite
def spread_rows(draw, max_rows=4, max_features=12, min_features=2):
    """A float64 ``(rows, features)`` tensor whose every row has a spread: feature 1
    is at least 1 away from feature 0, so each row's variance is >= 1 / (2 n)."""
    rows = draw(st.integers(1, max_rows))
    features = draw(st.integers(min_features, max_features))
    x = draw(hnp.arrays(np.float64, (rows, features), elements=values))
    x[:, 1] = x[:, 0] + 1.0 + np.abs(x[:, 1] - x[:, 0])
    return torch.from_numpy(x)


def eps_tolerance(x: torch.Tensor, dims) -> float:
    """How far eps can move a standardized value: |x_hat| <= sqrt(n) and
    |1 - sqrt(v / (v + eps))| <= eps / (2 v), with v the smallest variance."""
    n = math.prod(x.shape[d] for d in dims)
    min_var = x.var(dim=dims, correction=0).min().item()
    return math.sqrt(n) * EPS / (2 * min_var) + 1e-9


@SETTINGS
@given(
    x=spread_rows(),
    shift=st.floats(-1e3, 1e3),
    log_scale=st.floats(-2, 2),
)
def test_layer_norm_ignores_per_sample_shift_and_positive_scale(x, shift, log_scale):
    # A different shift and scale for each sample: LN only sees each row's shape.
    rows = x.shape[0]
    shifts = shift * torch.linspace(-1, 1, rows, dtype=torch.float64).unsqueeze(1)
    scales = (10.0**log_scale) * torch.linspace(1, 2, rows, dtype=torch.float64).unsqueeze(1)
    moved = x * scales + shifts
    tolerance = eps_tolerance(x, (1,)) + eps_tolerance(moved, (1,))
    difference = helpers.layer_norm(moved, (x.shape[1],)) - helpers.layer_norm(x, (x.shape[1],))
    assert difference.abs().max().item() <= tolerance


@SETTINGS
@given(x=spread_rows(max_features=16, min_features=4), split=st.sampled_from([1, 2]))
def test_layer_norm_output_has_mean_0_and_variance_1_per_sample(x, split):
    # split=2 normalizes over the last two dims, as per-sentence LN does.
    x = x.reshape(x.shape[0], 2, -1) if split == 2 and x.shape[1] % 2 == 0 else x
    dims = tuple(range(-split, 0)) if x.dim() == 3 else (-1,)
    y = helpers.layer_norm(x, tuple(x.shape[d] for d in dims))
    input_var = x.var(dim=dims, correction=0)
    torch.testing.assert_close(y.mean(dim=dims), torch.zeros_like(input_var), atol=1e-9, rtol=0)
    # Exactly var / (var + eps): 1 up to the eps inside the square root.
    torch.testing.assert_close(
        y.var(dim=dims, correction=0), input_var / (input_var + EPS), atol=1e-9, rtol=1e-9
    )
    assert (y.var(dim=dims, correction=0) - 1).abs().max() <= EPS / input_var.min() + 1e-9


@SETTINGS
@given(x=spread_rows(max_rows=3, max_features=6), groups=st.sampled_from([1, 2]))
def test_group_norm_output_has_mean_0_and_variance_1_per_group(x, groups):
    # (N, C=2*features) where each group of channels carries one spread row.
    x = torch.cat([x, x.flip(-1) * 2 + 3], dim=1).unsqueeze(-1)  # (N, 2F, 1)
    y = helpers.group_norm(x, groups)
    grouped_x = x.reshape(x.shape[0], groups, -1)
    grouped_y = y.reshape(x.shape[0], groups, -1)
    input_var = grouped_x.var(dim=-1, correction=0)
    torch.testing.assert_close(grouped_y.mean(-1), torch.zeros_like(input_var), atol=1e-9, rtol=0)
    torch.testing.assert_close(
        grouped_y.var(dim=-1, correction=0), input_var / (input_var + EPS), atol=1e-9, rtol=1e-9
    )


@SETTINGS
@given(x=spread_rows(max_rows=5, max_features=6))
def test_batch_norm_training_output_has_mean_0_and_variance_1_per_channel(x):
    # Transposed, each spread row becomes a channel: (batch=features, channels=rows).
    x = x.T.contiguous()
    y = helpers.batch_norm(x, None, None, training=True)
    input_var = x.var(dim=0, correction=0)
    torch.testing.assert_close(y.mean(0), torch.zeros_like(input_var), atol=1e-9, rtol=0)
    torch.testing.assert_close(
        y.var(dim=0, correction=0), input_var / (input_var + EPS), atol=1e-9, rtol=1e-9
    )


@SETTINGS
@given(x=spread_rows(), log_scale=st.floats(-2, 2))
def test_rms_norm_ignores_positive_scale(x, log_scale):
    scale = 10.0**log_scale
    features = x.shape[1]
    y, y_scaled = (helpers.rms_norm(t, (features,), eps=EPS) for t in (x, x * scale))
    mean_square = min(x.pow(2).mean(-1).min().item(), (x * scale).pow(2).mean(-1).min().item())
    tolerance = math.sqrt(features) * EPS / (2 * mean_square) + 1e-9
    assert (y_scaled - y).abs().max().item() <= tolerance


@SETTINGS
@given(
    x=spread_rows(max_features=10),
    data=st.data(),
    use_function=st.booleans(),
)
def test_layer_norm_input_gradients_sum_to_zero(x, data, use_function):
    features = x.shape[1]
    weight = torch.from_numpy(data.draw(hnp.arrays(np.float64, (features,), elements=values)))
    grad_output = torch.from_numpy(data.draw(hnp.arrays(np.float64, x.shape, elements=values)))
    x = x.clone().requires_grad_()
    if use_function:
        y = LayerNormFunction.apply(x, (features,), weight, None, EPS)
    else:
        y = helpers.layer_norm(x, (features,), weight)
    y.backward(grad_output)
    # A shift of a row cannot change the output, so the gradient has no component along it.
    scale = (grad_output.abs().max() * weight.abs().max()).item() + 1
    bound = 1e-9 * scale / x.detach().var(-1, correction=0).min().sqrt().item()
    assert x.grad.sum(-1).abs().max().item() <= bound


@st.composite
def shapes_and_dims(draw):
    shape = draw(st.lists(st.integers(1, 4), min_size=1, max_size=4))
    normalized_dims = draw(st.integers(1, len(shape)))
    return tuple(shape), tuple(shape[-normalized_dims:])


@SETTINGS
@given(case=shapes_and_dims(), seed=st.integers(0, 2**16), affine=st.booleans())
def test_layer_norm_matches_torch_on_any_shape(case, seed, affine):
    shape, normalized_shape = case
    gen = torch.Generator().manual_seed(seed)
    x = torch.randn(shape, generator=gen, dtype=torch.float64) * 3 + 1
    weight = torch.randn(normalized_shape, generator=gen, dtype=torch.float64) if affine else None
    bias = torch.randn(normalized_shape, generator=gen, dtype=torch.float64) if affine else None
    expected = F.layer_norm(x, normalized_shape, weight, bias)
    pairs = [
        (helpers.layer_norm(x, normalized_shape, weight, bias), expected),
        (LayerNormFunction.apply(x, normalized_shape, weight, bias, EPS), expected),
        (helpers.rms_norm(x, normalized_shape, weight), F.rms_norm(x, normalized_shape, weight)),
    ]
    for ours, theirs in pairs:
        torch.testing.assert_close(ours, theirs, atol=1e-9, rtol=1e-9)


@SETTINGS
@given(
    batch=st.integers(1, 3),
    groups=st.integers(1, 3),
    per_group=st.integers(1, 3),
    spatial=st.lists(st.integers(1, 3), max_size=2),
    seed=st.integers(0, 2**16),
)
def test_group_norm_and_batch_norm_match_torch_on_any_shape(
    batch, groups, per_group, spatial, seed
):
    channels = groups * per_group
    shape = (batch, channels, *spatial)
    gen = torch.Generator().manual_seed(seed)
    x = torch.randn(shape, generator=gen, dtype=torch.float64) * 2 - 1
    weight = torch.randn(channels, generator=gen, dtype=torch.float64)
    bias = torch.randn(channels, generator=gen, dtype=torch.float64)
    values_per_group = per_group * math.prod(spatial)
    if values_per_group > 1:  # torch refuses a single value per group
        torch.testing.assert_close(
            helpers.group_norm(x, groups, weight, bias),
            F.group_norm(x, groups, weight, bias),
            atol=1e-9,
            rtol=1e-9,
        )
    if batch * math.prod(spatial) > 1:  # and a single value per channel in training
        stats = [(torch.zeros(channels).double(), torch.ones(channels).double()) for _ in "ab"]
        torch.testing.assert_close(
            helpers.batch_norm(x, *stats[0], weight, bias, training=True),
            F.batch_norm(x, *stats[1], weight, bias, training=True),
            atol=1e-9,
            rtol=1e-9,
        )
        torch.testing.assert_close(stats[0], stats[1], atol=1e-12, rtol=1e-12)


@SETTINGS
@given(x=spread_rows(max_rows=3, max_features=8))
def test_group_norm_with_one_group_is_layer_norm_over_channels_and_length(x):
    x = x.unsqueeze(-1).expand(-1, -1, 3) + torch.arange(3.0, dtype=x.dtype)  # (N, C, 3)
    torch.testing.assert_close(
        helpers.group_norm(x, 1), helpers.layer_norm(x, tuple(x.shape[1:])), atol=1e-12, rtol=0
    )
