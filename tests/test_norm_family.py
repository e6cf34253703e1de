"""The rest of the normalization family: instance_norm and InstanceNorm2d, BatchNorm2d,
the general ``normalize`` every norm reduces to, and DyT.

Against torch where torch has the op (outputs, gradients, running statistics,
state_dict, signatures, errors); with float64 properties where it does not.
"""

from __future__ import annotations

import math
import warnings
from collections import OrderedDict

import numpy as np
import pytest
import torch
import torch.nn.functional as F
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp
from test_functional import assert_same_signature
from test_modules import randn
from torch import nn

import helpers
from helpers import functional as HF
from helpers import modules as HM

SETTINGS = settings(max_examples=30, deadline=None)

# --- instance_norm against F.instance_norm ---------------------------------------------


def test_instance_norm_signature_and_export():
    assert_same_signature(HF.instance_norm, F.instance_norm)
    assert helpers.instance_norm is HF.instance_norm


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64])
@pytest.mark.parametrize("shape", [(4, 3, 7), (2, 3, 5, 6), (1, 3, 2, 2, 3)])
@pytest.mark.parametrize("affine", [False, True])
# evaluation (use_input_stats=False) needs running statistics: the error cases test that
@pytest.mark.parametrize("running,use_input_stats", [(False, True), (True, True), (True, False)])
def test_instance_norm_matches_torch(assert_close, dtype, shape, affine, running, use_input_stats):
    x = randn(*shape, seed=0, dtype=dtype) * 3 + 2
    c = shape[1]
    weight = randn(c, seed=1, dtype=dtype) if affine else None
    bias = randn(c, seed=2, dtype=dtype) if affine else None
    stats = (randn(c, seed=3, dtype=dtype), randn(c, seed=4, dtype=dtype).abs() + 0.5)
    ours_stats = tuple(s.clone() for s in stats) if running else (None, None)
    theirs_stats = tuple(s.clone() for s in stats) if running else (None, None)
    kwargs = {"use_input_stats": use_input_stats, "momentum": 0.3, "eps": 1e-3}
    y_ours = HF.instance_norm(x, *ours_stats, weight, bias, **kwargs)
    y_theirs = F.instance_norm(x, *theirs_stats, weight, bias, **kwargs)
    assert_close(y_ours, y_theirs)
    if running:  # updated in place exactly as torch updates them (unchanged in evaluation)
        assert_close(ours_stats[0], theirs_stats[0], msg="running_mean")
        assert_close(ours_stats[1], theirs_stats[1], msg="running_var")


@pytest.mark.parametrize("dtype", [torch.float16, torch.bfloat16])
def test_instance_norm_half_inputs_match_torch(assert_close, dtype):
    x = randn(2, 3, 16, dtype=dtype)
    assert_close(HF.instance_norm(x), F.instance_norm(x))


@pytest.mark.parametrize("use_input_stats", [True, False])
@pytest.mark.parametrize("affine", [False, True])
def test_instance_norm_gradcheck(use_input_stats, affine):
    x = randn(2, 3, 5, dtype=torch.float64).requires_grad_()
    params = (
        (
            randn(3, seed=1, dtype=torch.float64).requires_grad_(),
            randn(3, seed=2, dtype=torch.float64).requires_grad_(),
        )
        if affine
        else ()
    )
    rm, rv = torch.zeros(3, dtype=torch.float64), torch.ones(3, dtype=torch.float64)

    def fn(x, *p):
        w, b = p if p else (None, None)
        # fresh copies: the function updates the running statistics in place
        return HF.instance_norm(x, rm.clone(), rv.clone(), w, b, use_input_stats)

    assert torch.autograd.gradcheck(fn, (x, *params))


def test_instance_norm_gradients_match_torch(assert_close):
    x = randn(3, 4, 6, dtype=torch.float64)
    w, b = randn(4, seed=1, dtype=torch.float64), randn(4, seed=2, dtype=torch.float64)
    grad_out = randn(3, 4, 6, seed=5, dtype=torch.float64)
    grads = []
    for f in (HF.instance_norm, F.instance_norm):
        inputs = [t.clone().requires_grad_() for t in (x, w, b)]
        f(inputs[0], weight=inputs[1], bias=inputs[2]).backward(grad_out)
        grads.append([t.grad for t in inputs])
    for ours, theirs in zip(*grads, strict=True):
        assert_close(ours, theirs)


# --- The modules: BatchNorm2d, InstanceNorm2d --------------------------------------------

# Constructors, repr, buffers, state_dict, training and evaluation against torch: these
# modules are cases of tests/test_modules.py, which runs every module through them.


def test_instance_norm_module_warns_like_torch_on_channel_mismatch():
    x = randn(2, 4, 5, 5)
    with pytest.warns(UserWarning, match="does not match num_features"):
        nn.InstanceNorm2d(3)(x)
    with pytest.warns(UserWarning, match="does not match num_features"):
        helpers.InstanceNorm2d(3)(x)


# --- Errors: the type torch raises, a message naming the argument ---------------------

x235 = randn(2, 3, 5)
ERRORS = {
    "weight-wrong-size": (
        lambda f: f(x235, weight=torch.ones(4)),
        r"weight.*3 elements.*shape \[4\]",
    ),
    "bias-2d": (lambda f: f(x235, bias=torch.ones(1, 3)), r"bias.*1-D.*shape \[1, 3\]"),
    "running_mean-wrong-size": (
        lambda f: f(x235, torch.zeros(4), torch.ones(4)),
        r"running_mean.*3 elements.*shape \[4\]",
    ),
    "running_var-missing": (lambda f: f(x235, torch.zeros(3), None), r"running_var=None"),
    "eval-without-running-stats": (
        lambda f: f(x235, use_input_stats=False),
        r"use_input_stats=False.*running_mean=None",
    ),
    "one-spatial-element": (lambda f: f(randn(2, 3, 1)), r"more than 1 spatial element"),
    "2d-input": (lambda f: f(randn(2, 3)), r"more than 1 spatial element"),
    "1d-input-in-eval": (
        lambda f: f(randn(3), torch.zeros(3), torch.ones(3), use_input_stats=False),
        r"at least 2 dimensions.*shape \[3\]",
    ),
    "integer-input": (lambda f: f(torch.ones(2, 3, 4, dtype=torch.long)), r"dtype torch.int64"),
    "float64-weight-float32-input": (
        lambda f: f(x235, weight=torch.ones(3, dtype=torch.float64)),
        r"weight.*torch.float32.*torch.float64",
    ),
    "running_mean-requires-grad": (
        lambda f: f(x235, torch.zeros(3, requires_grad=True), torch.ones(3)),
        r"running_mean.*requires_grad=True",
    ),
    "momentum-None": (
        lambda f: f(x235, torch.zeros(3), torch.ones(3), momentum=None),
        r"momentum",
    ),
}


@pytest.mark.parametrize("case", list(ERRORS))
def test_instance_norm_raises_like_torch(case):
    call, match = ERRORS[case]
    with pytest.raises(Exception) as torch_error:
        call(F.instance_norm)
    with pytest.raises(torch_error.type, match=match) as our_error:
        call(HF.instance_norm)
    assert type(our_error.value) is torch_error.type


MODULE_ERRORS = {
    "InstanceNorm2d-2d": (("InstanceNorm2d", 3), randn(2, 3), r"3D or 4D.*got 2D"),
    "InstanceNorm2d-affine-mismatch": (
        ("InstanceNorm2d", 4, 1e-5, 0.1, True),
        randn(2, 3, 5, 5),
        r"num_features \(4\), but got: 3",
    ),
    "BatchNorm2d-3d": (("BatchNorm2d", 3), randn(2, 3, 5), r"4D.*got 3D"),
    "BatchNorm2d-one-value": (("BatchNorm2d", 3), randn(1, 3, 1, 1), r"more than 1 value"),
}


@pytest.mark.parametrize("case", list(MODULE_ERRORS))
def test_modules_raise_like_torch(case):
    (name, *args), x, match = MODULE_ERRORS[case]
    with pytest.raises(Exception) as torch_error:
        getattr(nn, name)(*args)(x)
    with pytest.raises(torch_error.type, match=match) as our_error:
        getattr(helpers, name)(*args)(x)
    assert type(our_error.value) is torch_error.type


@pytest.mark.parametrize("eps", [0.0, -1e-3])
def test_instance_norm_accepts_the_eps_torch_accepts(assert_close, eps):
    x = randn(2, 3, 5, dtype=torch.float64)
    assert_close(HF.instance_norm(x, eps=eps), F.instance_norm(x, eps=eps))


# --- normalize: the one idea ----------------------------------------------------------


@st.composite
def nchw(draw):
    """A float64 (N, C, H, W) tensor, with C divisible by a drawn number of groups."""
    groups = draw(st.integers(1, 3))
    shape = (
        draw(st.integers(2, 3)),
        groups * draw(st.integers(1, 3)),
        draw(st.integers(2, 4)),
        draw(st.integers(1, 4)),
    )
    elements = st.floats(-50, 50, allow_nan=False, width=64)
    return torch.from_numpy(draw(hnp.arrays(np.float64, shape, elements=elements))), groups


def close(a, b):
    # Same float64 arithmetic on the same values: only summation order differs, and
    # eps=1e-5 bounds 1/std by 1/sqrt(eps), so |error| <= ~1e-10 * max|x| / sqrt(eps).
    torch.testing.assert_close(a, b, atol=1e-9, rtol=1e-9)


@SETTINGS
@given(nchw())
def test_normalize_is_every_norm_on_its_dims(case):
    x, groups = case
    n, c, h, w = x.shape
    close(HF.normalize(x, (0, 2, 3)), F.batch_norm(x, None, None, training=True))
    close(HF.normalize(x, (1, 2, 3)), F.layer_norm(x, (c, h, w)))
    close(HF.normalize(x, (-3, -2, -1)), F.layer_norm(x, (c, h, w)))
    if h * w > 1:
        close(HF.normalize(x, (2, 3)), F.instance_norm(x))
    grouped = x.reshape(n, groups, c // groups, h, w)
    close(HF.normalize(grouped, (2, 3, 4)).reshape(x.shape), F.group_norm(x, groups))
    close(HF.normalize(x, 3), F.layer_norm(x, (w,)))


@SETTINGS
@given(nchw())
def test_normalize_matches_helpers_norms(case):
    x, groups = case
    n, c, h, w = x.shape
    close(HF.normalize(x, (0, 2, 3)), helpers.batch_norm(x, None, None, training=True))
    close(HF.normalize(x, (1, 2, 3)), helpers.layer_norm(x, (c, h, w)))
    grouped = x.reshape(n, groups, c // groups, h, w)
    close(HF.normalize(grouped, (2, 3, 4)).reshape(x.shape), helpers.group_norm(x, groups))
    if h * w > 1:
        close(HF.normalize(x, (2, 3)), helpers.instance_norm(x))


def test_normalize_rms_free_variant_is_rms_norm_of_the_centred_input(assert_close):
    """RMSNorm does not centre; given a centred input it is normalize on the same dims."""
    x = randn(4, 8, dtype=torch.float64) * 3 + 5
    centred = x - x.mean(-1, keepdim=True)
    assert_close(HF.normalize(x, -1), F.rms_norm(centred, (8,), eps=1e-5))


@pytest.mark.parametrize("dtype", [torch.float16, torch.bfloat16, torch.float32])
def test_normalize_keeps_dtype_and_accumulates_half_in_float32(assert_close, dtype):
    x = randn(3, 64, dtype=dtype) * 4 + 100
    y = HF.normalize(x, -1)
    assert y.dtype == dtype
    assert_close(y, F.layer_norm(x, (64,)))


def test_normalize_gradcheck():
    x = randn(2, 3, 4, dtype=torch.float64).requires_grad_()
    assert torch.autograd.gradcheck(lambda t: HF.normalize(t, (0, 2)), (x,))


NORMALIZE_ERRORS = {
    "dims-float": ((1.0,), TypeError, r"'dims'.*\(1.0,\)"),
    "dims-bool": (True, TypeError, r"'dims'.*bool"),
    "dims-empty": ((), ValueError, r"at least one dimension"),
    "dims-out-of-range": ((3,), IndexError, r"\[-3, 2\].*shape \[2, 3, 4\].*dims=\(3,\)"),
    "dims-repeated": ((1, -2), ValueError, r"distinct.*\[1, 1\]"),
}


@pytest.mark.parametrize("case", list(NORMALIZE_ERRORS))
def test_normalize_names_the_bad_dims(case):
    dims, error, match = NORMALIZE_ERRORS[case]
    with pytest.raises(error, match=match):
        HF.normalize(randn(2, 3, 4), dims)


def test_normalize_refuses_integer_input():
    with pytest.raises(NotImplementedError, match="normalize.*torch.int64"):
        HF.normalize(torch.ones(2, 3, dtype=torch.long), -1)


# --- GroupNorm's two extremes ----------------------------------------------------------


@SETTINGS
@given(nchw())
def test_group_norm_extremes_are_layer_norm_and_instance_norm(case):
    """With identity gamma/beta: GroupNorm(1, C) is LayerNorm over (C, H, W), and
    GroupNorm(C, C) is InstanceNorm. (Their affine parameters differ: per channel for
    GroupNorm, per element for LayerNorm.)"""
    x, _ = case
    c, h, w = x.shape[1:]
    for group_norm in (F.group_norm, helpers.group_norm):
        close(group_norm(x, 1), helpers.layer_norm(x, (c, h, w)))
        if h * w > 1:
            close(group_norm(x, c), helpers.instance_norm(x))
    ones, zeros = torch.ones(c, dtype=x.dtype), torch.zeros(c, dtype=x.dtype)
    close(helpers.GroupNorm(1, c).double()(x), F.layer_norm(x, (c, h, w)))
    close(helpers.group_norm(x, c, ones, zeros), F.instance_norm(x) if h * w > 1 else x * 0)


# --- DyT ------------------------------------------------------------------------------


def test_dyt_parameters_and_defaults():
    dyt = helpers.DyT((3, 4))
    assert helpers.DyT is HM.DyT
    assert dict(dyt.named_parameters()).keys() == {"alpha", "weight", "bias"}
    assert list(dyt.state_dict()) == ["alpha", "weight", "bias"]
    assert dyt.alpha.shape == (1,) and dyt.alpha.item() == 0.5  # Zhu et al. 2025's default
    assert torch.equal(dyt.weight, torch.ones(3, 4)) and torch.equal(dyt.bias, torch.zeros(3, 4))
    assert helpers.DyT(4, alpha_init_value=2.0).alpha.item() == 2.0
    assert helpers.DyT(4, dtype=torch.float64).weight.dtype == torch.float64


def test_dyt_forward_and_gradients_match_the_formula(assert_close):
    dyt = helpers.DyT(5, alpha_init_value=0.7, dtype=torch.float64)
    assert dyt.alpha.item() == 0.7
    with torch.no_grad():
        dyt.weight.copy_(randn(5, seed=1, dtype=torch.float64))
        dyt.bias.copy_(randn(5, seed=2, dtype=torch.float64))
    x = randn(2, 3, 5, dtype=torch.float64)
    assert_close(dyt(x), dyt.weight * torch.tanh(dyt.alpha * x) + dyt.bias)
    inputs = (x.clone().requires_grad_(), dyt.alpha, dyt.weight, dyt.bias)

    def fn(x, alpha, weight, bias):
        return torch.func.functional_call(
            dyt, {"alpha": alpha, "weight": weight, "bias": bias}, (x,)
        )

    assert torch.autograd.gradcheck(fn, inputs)


@SETTINGS
@given(
    hnp.arrays(np.float64, (3, 4), elements=st.floats(-1e6, 1e6, allow_nan=False, width=64)),
    hnp.arrays(np.float64, (4,), elements=st.floats(-10, 10, allow_nan=False, width=64)),
    hnp.arrays(np.float64, (4,), elements=st.floats(-10, 10, allow_nan=False, width=64)),
    st.floats(-20, 20, allow_nan=False),
)
def test_dyt_is_bounded_and_odd_without_bias(x, weight, bias, alpha):
    dyt = helpers.DyT(4, alpha_init_value=alpha).double()
    x = torch.from_numpy(x)
    with torch.no_grad():
        dyt.weight.copy_(torch.from_numpy(weight))
        dyt.bias.copy_(torch.from_numpy(bias))
        y = dyt(x)
        bound = dyt.weight.abs() + dyt.bias.abs()
        assert bool((y.abs() <= bound * (1 + 1e-15)).all())
        dyt.bias.zero_()
        torch.testing.assert_close(dyt(-x), -dyt(x), atol=0, rtol=0)


DYT_ERRORS = {
    "normalized_shape-zero": (lambda: helpers.DyT(0), ValueError, r"normalized_shape.*0"),
    "normalized_shape-empty": (lambda: helpers.DyT(()), ValueError, r"normalized_shape.*\(\)"),
    "normalized_shape-float": (lambda: helpers.DyT((2.5,)), ValueError, r"normalized_shape.*2.5"),
    "alpha-nan": (lambda: helpers.DyT(4, math.nan), ValueError, r"alpha_init_value.*nan"),
    "alpha-string": (lambda: helpers.DyT(4, "0.5"), ValueError, r"alpha_init_value.*'0.5'"),
    "input-shape": (
        lambda: helpers.DyT((3, 4))(randn(2, 4, 3)),
        RuntimeError,
        r"normalized_shape=\[3, 4\].*\[\*, 3, 4\].*shape \[2, 4, 3\]",
    ),
}


@pytest.mark.parametrize("case", list(DYT_ERRORS))
def test_dyt_errors_name_the_argument(case):
    call, error, match = DYT_ERRORS[case]
    with pytest.raises(error, match=match):
        call()


def test_dyt_repr():
    assert repr(helpers.DyT(4)) == "DyT((4,), alpha_init_value=0.5)"


def test_no_warnings_from_matching_modules():
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        helpers.InstanceNorm2d(3)(randn(2, 3, 4, 4))
        helpers.BatchNorm2d(3)(randn(2, 3, 4, 4))


# --- PyTorch's own sample inputs for instance_norm (OpInfo's sample_inputs_instance_norm) --

S = 5
TORCH_SAMPLES = [
    ((S, S, S), {"momentum": 0.5, "eps": 0.6}, True, True),
    ((S, S, S), {"momentum": 0.5, "eps": 0.6, "use_input_stats": True}, True, True),
    ((3, 2, 4), {"momentum": -1.2}, True, True),
    ((3, 2, 4), {"momentum": 0.0}, True, True),
    ((3, 2, 3, 4), {"momentum": -1.0, "eps": 0.5}, True, True),
    ((3, 2, 3, 4), {}, True, False),  # weight without bias
    ((3, 2, 3, 4), {}, False, False),
    ((1, 2, 3), None, False, False),  # no optional arguments at all
]


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64])
@pytest.mark.parametrize("sample", range(len(TORCH_SAMPLES)))
def test_instance_norm_on_pytorchs_sample_inputs(assert_close, sample, dtype):
    shape, kwargs, has_weight, has_bias = TORCH_SAMPLES[sample]
    gen = torch.Generator().manual_seed(sample)
    make = lambda *s, low=None: torch.testing.make_tensor(  # noqa: E731
        s, dtype=dtype, device="cpu", low=low
    ).copy_(torch.empty(s).uniform_(-9 if low is None else low, 9, generator=gen))
    channels = shape[1]
    x = make(*shape)
    weight = make(channels) if has_weight else None
    bias = make(channels) if has_bias else None
    if kwargs is None:
        assert_close(HF.instance_norm(x), F.instance_norm(x))
        return
    stats = make(channels, low=0), make(channels, low=0)
    ours, theirs = [s.clone() for s in stats], [s.clone() for s in stats]
    y_ours = HF.instance_norm(x, *ours, weight=weight, bias=bias, **kwargs)
    y_theirs = F.instance_norm(x, *theirs, weight=weight, bias=bias, **kwargs)
    assert_close(y_ours, y_theirs)
    assert_close(ours[0], theirs[0], msg="running_mean")
    assert_close(ours[1], theirs[1], msg="running_var")


@pytest.mark.parametrize("shape", [(0, 3, 4), (2, 3, 0)], ids=["empty-batch", "empty-length"])
@pytest.mark.parametrize("affine", [False, True])
def test_instance_norm_empty_inputs_like_torch(assert_close, shape, affine):
    x = randn(*shape).requires_grad_()
    w, b = (torch.full((3,), 3.0), torch.full((3,), 0.5)) if affine else (None, None)
    try:
        expected = F.instance_norm(x, weight=w, bias=b)
    except IndexError:  # torch indexes the first of the N * C = 0 repeated weights
        with pytest.raises(IndexError, match=r"weight and bias.*shape \[0, 3, 4\]"):
            HF.instance_norm(x, weight=w, bias=b)
        return
    result = HF.instance_norm(x, weight=w, bias=b)
    assert_close(result, expected)
    assert result.requires_grad == expected.requires_grad


@pytest.mark.parametrize("name", ["InstanceNorm2d"])
def test_instance_norm_refuses_running_stats_of_a_checkpoint_from_before_0_4(name):
    """A checkpoint without version metadata that holds running statistics an
    InstanceNorm without them cannot use: torch reports the keys, and so do we."""
    old = OrderedDict(running_mean=torch.zeros(3), running_var=torch.ones(3))
    old._metadata = OrderedDict()  # no "version": saved before BatchNorm's version 2
    messages = []
    for lib in (nn, helpers):
        with pytest.raises(RuntimeError) as error:
            getattr(lib, name)(3).load_state_dict(old.copy())
        messages.append(str(error.value))
    assert "Unexpected running stats buffer(s)" in messages[1]
    assert messages[1] == messages[0]
