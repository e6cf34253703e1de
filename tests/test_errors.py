"""One test per bad input: helpers raises where torch raises, with torch's exception
type, and a message that names the argument, what was expected and what was got.

The expected exception type is not written down here: each test first makes torch
raise on the same input and requires exactly that type from helpers.
"""

from __future__ import annotations

import pytest
import torch
import torch.nn.functional as F
from torch import nn

import helpers
from helpers import LayerNormFunction
from helpers import functional as HF


def t(*shape, dtype=torch.float32, requires_grad=False):
    return torch.randn(shape).to(dtype).requires_grad_(requires_grad)


def fn(name, *args, **kwargs):
    """The same call to helpers' and torch's function ``name``."""
    return (
        lambda: getattr(HF, name)(*args, **kwargs),
        lambda: getattr(F, name)(*args, **kwargs),
    )


def module(name, args, x, *, train=True):
    """Build helpers' and torch's module ``name(*args)`` and call it on ``x``."""

    def call(lib):
        return lambda: getattr(lib, name)(*args).train(train)(x)

    return call(helpers), call(nn)


def construct(name, *args):
    return lambda: getattr(helpers, name)(*args), lambda: getattr(nn, name)(*args)


def apply(*args):
    """LayerNormFunction.apply against F.layer_norm."""
    return lambda: LayerNormFunction.apply(*args), lambda: F.layer_norm(*args)


x234 = t(2, 3, 4)
x235 = t(2, 6, 5)
rm3, rv3 = torch.zeros(3), torch.ones(3)
x43 = t(4, 3)

CASES = {
    # --- layer_norm: normalized_shape ---
    "layer_norm/normalized_shape-mismatch": (
        fn("layer_norm", x234, (5,)),
        r"normalized_shape=\[5\].*\[\*, 5\].*input of shape \[2, 3, 4\]",
    ),
    "layer_norm/normalized_shape-longer-than-input": (
        fn("layer_norm", x234, (1, 2, 3, 4)),
        r"normalized_shape=\[1, 2, 3, 4\].*\[\*, 1, 2, 3, 4\].*input of shape \[2, 3, 4\]",
    ),
    "layer_norm/normalized_shape-empty": (
        fn("layer_norm", x234, ()),
        r"normalized_shape to have at least one dimension.*normalized_shape=\[\]",
    ),
    "layer_norm/normalized_shape-int": (
        fn("layer_norm", x234, 4),
        r"'normalized_shape' must be a tuple, list or torch.Size of ints.*got int 4",
    ),
    "layer_norm/normalized_shape-None": (
        fn("layer_norm", x234, None),
        r"'normalized_shape' must be a tuple.*got NoneType None",
    ),
    "layer_norm/normalized_shape-float-element": (
        fn("layer_norm", x234, (4.0,)),
        r"'normalized_shape' must contain only ints.*got \[4\.0\]",
    ),
    "layer_norm/normalized_shape-bool-element": (
        fn("layer_norm", x234, (True,)),
        r"'normalized_shape' must contain only ints.*got \[True\]",
    ),
    # --- layer_norm: weight and bias never broadcast ---
    "layer_norm/weight-(1,)": (
        fn("layer_norm", x234, (4,), torch.ones(1)),
        r"weight to have the same shape as normalized_shape=\[4\].*weight of shape \[1\]",
    ),
    "layer_norm/weight-(1,4)": (
        fn("layer_norm", x234, (4,), torch.ones(1, 4)),
        r"weight to have the same shape as normalized_shape=\[4\].*weight of shape \[1, 4\]",
    ),
    "layer_norm/weight-(3,)": (
        fn("layer_norm", x234, (4,), torch.ones(3)),
        r"weight .*normalized_shape=\[4\].*weight of shape \[3\]",
    ),
    "layer_norm/weight-for-other-normalized_shape": (
        fn("layer_norm", x234, (3, 4), torch.ones(4)),
        r"weight .*normalized_shape=\[3, 4\].*weight of shape \[4\]",
    ),
    "layer_norm/bias-(3,)": (
        fn("layer_norm", x234, (4,), torch.ones(4), torch.ones(3)),
        r"bias to have the same shape as normalized_shape=\[4\].*bias of shape \[3\]",
    ),
    # --- layer_norm: dtypes ---
    "layer_norm/int-input": (
        fn("layer_norm", torch.ones(2, 4, dtype=torch.long), (4,)),
        r"input to be a floating-point tensor.*got input of dtype torch.int64",
    ),
    "layer_norm/bool-input": (
        fn("layer_norm", torch.ones(2, 4, dtype=torch.bool), (4,)),
        r"input to be a floating-point tensor.*got input of dtype torch.bool",
    ),
    "layer_norm/complex-input": (
        fn("layer_norm", torch.ones(2, 4, dtype=torch.complex64), (4,)),
        r"input to be a floating-point tensor.*got input of dtype torch.complex64",
    ),
    "layer_norm/float64-weight-for-float32-input": (
        fn("layer_norm", x234, (4,), torch.ones(4, dtype=torch.float64)),
        r"weight to have dtype torch.float32 for an input of dtype torch.float32.*"
        r"got weight of dtype torch.float64",
    ),
    "layer_norm/float32-weight-for-float64-input": (
        fn("layer_norm", x234.double(), (4,), torch.ones(4)),
        r"weight to have dtype torch.float64 .*got weight of dtype torch.float32",
    ),
    "layer_norm/bfloat16-weight-for-float16-input": (
        fn("layer_norm", x234.half(), (4,), torch.ones(4, dtype=torch.bfloat16)),
        r"weight to have dtype torch.float16 or torch.float32 .*torch.float16.*"
        r"got weight of dtype torch.bfloat16",
    ),
    "layer_norm/float16-weight-float32-bias": (
        fn("layer_norm", x234.half(), (4,), torch.ones(4).half(), torch.ones(4)),
        r"weight and bias to have the same dtype.*weight of dtype torch.float16 and bias of "
        r"dtype torch.float32",
    ),
    "layer_norm/float-weight-for-int-input": (
        fn("layer_norm", torch.ones(2, 4, dtype=torch.long), (4,), torch.ones(4)),
        r"weight to have dtype torch.int64 .*got weight of dtype torch.float32",
    ),
    # --- LayerNormFunction raises as F.layer_norm does ---
    "LayerNormFunction/normalized_shape-mismatch": (
        apply(x234, (5,), None, None, 1e-5),
        r"normalized_shape=\[5\].*input of shape \[2, 3, 4\]",
    ),
    "LayerNormFunction/weight-(1,)": (
        apply(x234, (4,), torch.ones(1), None, 1e-5),
        r"weight .*normalized_shape=\[4\].*weight of shape \[1\]",
    ),
    "LayerNormFunction/int-input": (
        apply(torch.ones(2, 4, dtype=torch.int32), (4,), None, None, 1e-5),
        r"input to be a floating-point tensor.*torch.int32",
    ),
    # --- rms_norm ---
    "rms_norm/normalized_shape-mismatch": (
        fn("rms_norm", x234, (5,)),
        r"normalized_shape=\[5\].*\[\*, 5\].*input of shape \[2, 3, 4\]",
    ),
    "rms_norm/normalized_shape-empty": (
        fn("rms_norm", x234, []),
        r"normalized_shape to have at least one dimension.*normalized_shape=\[\]",
    ),
    "rms_norm/normalized_shape-int": (
        fn("rms_norm", x234, 4),
        r"'normalized_shape' must be a tuple.*got int 4",
    ),
    "rms_norm/weight-(1,)": (
        fn("rms_norm", x234, (4,), torch.ones(1)),
        r"weight to have the same shape as normalized_shape=\[4\].*weight of shape \[1\]",
    ),
    "rms_norm/int-input": (
        fn("rms_norm", torch.ones(2, 4, dtype=torch.int16), (4,)),
        r"input to be a floating-point or complex tensor.*got input of dtype torch.int16",
    ),
    # --- batch_norm: torch's Python-level checks ---
    "batch_norm/one-value-per-channel-2d": (
        fn("batch_norm", t(1, 3), rm3, rv3, training=True),
        r"Expected more than 1 value per channel when training, got input size "
        r"torch.Size\(\[1, 3\]\)",
    ),
    "batch_norm/one-value-per-channel-3d": (
        fn("batch_norm", t(1, 3, 1), None, None, training=True),
        r"more than 1 value per channel.*torch.Size\(\[1, 3, 1\]\)",
    ),
    "batch_norm/one-value-1d": (
        fn("batch_norm", t(1), None, None, training=True),
        r"more than 1 value per channel.*torch.Size\(\[1\]\)",
    ),
    "batch_norm/eps-zero-in-training": (
        fn("batch_norm", x43, None, None, training=True, eps=0.0),
        r"eps must be positive during training, but got 0\.0",
    ),
    "batch_norm/eps-negative-in-eval": (
        fn("batch_norm", x43, rm3, rv3, eps=-1e-5),
        r"eps must be non-negative, but got -1e-05",
    ),
    "batch_norm/momentum-None": (
        fn("batch_norm", x43, rm3, rv3, training=True, momentum=None),
        r"'momentum' must be float, but got None",
    ),
    # --- batch_norm: running statistics ---
    "batch_norm/only-running_mean-in-training": (
        fn("batch_norm", x43, rm3, None, training=True),
        r"running_mean and running_var must either both be None or neither be None.*"
        r"running_mean=a tensor of shape \[3\] and running_var=None",
    ),
    "batch_norm/no-running_mean-in-eval": (
        fn("batch_norm", x43, None, rv3),
        r"running_mean must be defined in evaluation mode.*got running_mean=None",
    ),
    "batch_norm/no-running_var-in-eval": (
        fn("batch_norm", x43, rm3, None),
        r"running_var must be defined in evaluation mode.*got running_var=None",
    ),
    "batch_norm/running_mean-wrong-size": (
        fn("batch_norm", x43, torch.zeros(4), rv3, training=True),
        r"running_mean to be a 1-D tensor of 3 elements.*got running_mean of shape \[4\]",
    ),
    "batch_norm/running_var-wrong-size-in-eval": (
        fn("batch_norm", x43, rm3, torch.ones(2)),
        r"running_var to be a 1-D tensor of 3 elements.*got running_var of shape \[2\]",
    ),
    "batch_norm/running_mean-(1,3)": (
        fn("batch_norm", x43, torch.zeros(1, 3), torch.ones(1, 3), training=True),
        r"running_mean to be a 1-D tensor of 3 elements.*got running_mean of shape \[1, 3\]",
    ),
    "batch_norm/running_mean-float64-for-float32-input": (
        fn("batch_norm", x43, rm3.double(), rv3.double()),
        r"to have dtype torch.float32 .*got running_mean of dtype torch.float64",
    ),
    "batch_norm/running_mean-float16-weight-float32": (
        fn("batch_norm", x43.half(), rm3.half(), rv3.half(), torch.ones(3), training=True),
        r"weight and running_mean to have the same dtype.*torch.float32.*torch.float16",
    ),
    "batch_norm/running_mean-requires-grad": (
        fn("batch_norm", x43, torch.zeros(3, requires_grad=True), rv3, training=True),
        r"running_mean not to require grad.*got running_mean with requires_grad=True",
    ),
    # --- batch_norm: weight, bias, input ---
    "batch_norm/weight-wrong-size": (
        fn("batch_norm", x43, rm3, rv3, torch.ones(4), training=True),
        r"weight to be a tensor with 3 elements.*got weight of shape \[4\]",
    ),
    "batch_norm/bias-(1,)": (
        fn("batch_norm", x43, rm3, rv3, None, torch.ones(1)),
        r"bias to be a tensor with 3 elements.*got bias of shape \[1\]",
    ),
    "batch_norm/int-input": (
        fn("batch_norm", torch.ones(4, 3, dtype=torch.long), None, None, training=True),
        r"input to be a floating-point tensor.*got input of dtype torch.int64",
    ),
    "batch_norm/1d-input": (
        fn("batch_norm", t(3), None, None, training=True),
        r"input of shape \(N, C, \*\) with at least 2 dimensions.*input of shape \[3\]",
    ),
    "batch_norm/1d-input-with-running-stats": (
        fn("batch_norm", t(3), rm3, rv3),
        r"running_mean to be a 1-D tensor of 0 elements.*running_mean of shape \[3\]",
    ),
    # --- BatchNorm1d ---
    "BatchNorm1d/1d-input": (
        module("BatchNorm1d", (3,), t(3)),
        r"expected 2D or 3D input \(got 1D input\)",
    ),
    "BatchNorm1d/4d-input": (
        module("BatchNorm1d", (3,), t(2, 3, 4, 5)),
        r"expected 2D or 3D input \(got 4D input\)",
    ),
    "BatchNorm1d/one-sample-in-training": (
        module("BatchNorm1d", (3,), t(1, 3)),
        r"more than 1 value per channel when training.*\[1, 3\]",
    ),
    "BatchNorm1d/wrong-number-of-channels": (
        module("BatchNorm1d", (3,), t(8, 4)),
        r"weight to be a tensor with 4 elements.*got weight of shape \[3\]",
    ),
    "BatchNorm1d/wrong-number-of-channels-in-eval-without-affine": (
        module("BatchNorm1d", (3, 1e-5, 0.1, False), t(8, 4), train=False),
        r"running_mean to be a 1-D tensor of 4 elements.*got running_mean of shape \[3\]",
    ),
    # --- group_norm ---
    "group_norm/channels-not-divisible": (
        fn("group_norm", x235, 4),
        r"num_groups to be a positive divisor of the number of channels 6.*num_groups=4.*"
        r"input of shape \[2, 6, 5\]",
    ),
    "group_norm/more-groups-than-channels": (
        fn("group_norm", x235, 12),
        r"positive divisor of the number of channels 6.*num_groups=12",
    ),
    "group_norm/zero-groups": (
        fn("group_norm", x235, 0),
        r"num_groups to be a positive divisor of the 6 channels.*num_groups=0",
    ),
    "group_norm/negative-groups": (
        fn("group_norm", x235, -3),
        r"positive divisor of the number of channels 6.*num_groups=-3",
    ),
    "group_norm/float-groups": (
        fn("group_norm", x235, 3.0),
        r"'num_groups' must be int, but got float 3\.0",
    ),
    "group_norm/1d-input": (
        fn("group_norm", t(6), 3),
        r"input of shape \(N, C, \*\) with at least 2 dimensions.*input of shape \[6\]",
    ),
    "group_norm/one-value-per-group": (
        fn("group_norm", t(1, 6), 6),
        r"Expected more than 1 value per channel when training, got input size \[1, 6\]",
    ),
    "group_norm/weight-wrong-size": (
        fn("group_norm", x235, 3, torch.ones(5)),
        r"weight to be a 1-D tensor of 6 elements.*got weight of shape \[5\]",
    ),
    "group_norm/weight-(1,)": (
        fn("group_norm", x235, 3, torch.ones(1)),
        r"weight to be a 1-D tensor of 6 elements.*got weight of shape \[1\]",
    ),
    "group_norm/weight-(1,6)": (
        fn("group_norm", x235, 3, torch.ones(1, 6)),
        r"weight to be a 1-D tensor of 6 elements.*got weight of shape \[1, 6\]",
    ),
    "group_norm/bias-wrong-size": (
        fn("group_norm", x235, 3, None, torch.ones(5)),
        r"bias to be a 1-D tensor of 6 elements.*got bias of shape \[5\]",
    ),
    "group_norm/int-input": (
        fn("group_norm", torch.ones(2, 6, dtype=torch.int32), 3),
        r"input to be a floating-point tensor.*got input of dtype torch.int32",
    ),
    "group_norm/float64-weight-for-float32-input": (
        fn("group_norm", x235, 3, torch.ones(6, dtype=torch.float64)),
        r"weight to have dtype torch.float32 .*got weight of dtype torch.float64",
    ),
    # --- GroupNorm ---
    "GroupNorm/channels-not-divisible": (
        construct("GroupNorm", 4, 6),
        r"num_channels \(6\) must be divisible by num_groups \(4\)",
    ),
    "GroupNorm/zero-groups": (
        construct("GroupNorm", 0, 6),
        r"num_groups must be a positive divisor of num_channels \(6\), but got num_groups=0",
    ),
    "GroupNorm/wrong-number-of-channels": (
        module("GroupNorm", (2, 4), t(3, 6, 2)),
        r"weight to be a 1-D tensor of 6 elements.*got weight of shape \[4\]",
    ),
    # --- LayerNorm and RMSNorm modules ---
    "LayerNorm/wrong-feature-size": (
        module("LayerNorm", (5,), x234),
        r"normalized_shape=\[5\].*input of shape \[2, 3, 4\]",
    ),
    "RMSNorm/wrong-feature-size": (
        module("RMSNorm", ((3, 5),), x234),
        r"normalized_shape=\[3, 5\].*input of shape \[2, 3, 4\]",
    ),
}


@pytest.mark.parametrize("case", list(CASES))
def test_raises_like_torch(case):
    (ours, theirs), match = CASES[case]
    with pytest.raises(Exception) as torch_error:
        theirs()
    with pytest.raises(torch_error.type, match=match) as our_error:
        ours()
    assert type(our_error.value) is torch_error.type, (
        f"torch raised {torch_error.type.__name__}, helpers {type(our_error.value).__name__}"
    )


# --- Inputs torch accepts must not be refused --------------------------------------------

ACCEPTED = {
    "layer_norm/eps-zero": fn("layer_norm", x234, (4,), eps=0.0),
    "layer_norm/eps-negative": fn("layer_norm", x234, (4,), eps=-1.0),
    "layer_norm/half-input-float32-params": fn(
        "layer_norm", x234.half(), (4,), torch.ones(4), torch.zeros(4)
    ),
    "layer_norm/normalized_shape-0d-tensor-elements": fn("layer_norm", x234, (torch.tensor(4),)),
    "rms_norm/eps-negative": fn("rms_norm", x234, (4,), eps=-1e-3),
    "rms_norm/float64-weight-for-float32-input": fn("rms_norm", x234, (4,), torch.ones(4).double()),
    "group_norm/eps-zero": fn("group_norm", x235, 3, eps=0.0),
    "group_norm/eps-negative": fn("group_norm", x235, 3, eps=-1e-3),
    "group_norm/two-samples-one-value-per-group": fn("group_norm", t(2, 6), 6),
    "batch_norm/eps-zero-in-eval": fn("batch_norm", x43, rm3, rv3, eps=0.0),
    "batch_norm/weight-(1,3)": fn("batch_norm", x43, None, None, torch.ones(1, 3), training=True),
    "batch_norm/momentum-out-of-range": fn(
        "batch_norm", x43, rm3.clone(), rv3.clone(), training=True, momentum=2.0
    ),
    "batch_norm/one-sample-in-eval": fn("batch_norm", t(1, 3), rm3, rv3),
    "batch_norm/running_mean-requires-grad-under-no_grad": (
        lambda: torch.no_grad()(HF.batch_norm)(x43, torch.zeros(3, requires_grad=True), rv3),
        lambda: torch.no_grad()(F.batch_norm)(x43, torch.zeros(3, requires_grad=True), rv3),
    ),
}


@pytest.mark.filterwarnings("ignore:Mismatch dtype between input and weight")
@pytest.mark.parametrize("case", list(ACCEPTED))
def test_accepts_what_torch_accepts(case):
    ours, theirs = ACCEPTED[case]
    expected = theirs()  # torch accepts it ...
    result = ours()  # ... so helpers must too
    assert result.shape == expected.shape and result.dtype == expected.dtype
