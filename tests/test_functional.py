"""helpers' normalization functions against torch.nn.functional: signatures, outputs,
gradients and running-statistics updates, over shapes, dtypes and options."""

from __future__ import annotations

import doctest
import inspect

import pytest
import torch
import torch.nn.functional as F

import helpers
from helpers import functional as HF

FUNCTIONS = ["layer_norm", "rms_norm", "batch_norm", "group_norm"]
# (input dtype, parameter dtype): torch's CPU kernels also take float32 parameters
# with a half input (mixed precision); both cases are compared.
DTYPES = [
    (torch.float32, torch.float32),
    (torch.float64, torch.float64),
    (torch.float16, torch.float16),
    (torch.bfloat16, torch.bfloat16),
    (torch.float16, torch.float32),
    (torch.bfloat16, torch.float32),
]
DTYPE_IDS = [f"{str(i)[6:]}-{str(p)[6:]}" for i, p in DTYPES]
# Which of weight and bias are given.
AFFINE = [(False, False), (True, False), (True, True), (False, True)]
AFFINE_IDS = ["plain", "weight", "weight+bias", "bias"]
BUFFERS = ("running_mean", "running_var")


def randn(*shape, dtype=torch.float32, seed=0, scale=1.0, offset=0.0):
    """Seeded normal data, drawn in float64 and rounded once to ``dtype``."""
    gen = torch.Generator().manual_seed(seed)
    return (torch.randn(shape, generator=gen, dtype=torch.float64) * scale + offset).to(dtype)


def _run(impl, call, tensors, dtype=None):
    """Call ``call(impl, **copies)`` on fresh leaf copies of ``tensors`` (cast to
    ``dtype`` if given); every floating tensor but the running statistics requires grad."""
    leaves = {}
    for name, t in tensors.items():
        if t is not None:
            t = t.detach().clone() if dtype is None else t.detach().to(dtype)
            t.requires_grad_(t.is_floating_point() and name not in BUFFERS)
        leaves[name] = t
    return call(impl, **leaves), leaves


def compare_with_torch(assert_close, call, tensors, *, grad_scale=10.0):
    """Run ``call(HF, **tensors)`` and ``call(F, **tensors)`` on fresh copies of
    ``tensors``; assert equal outputs, equal in-place updates of the running
    statistics, and equal gradients for every floating tensor.

    For float16/bfloat16 inputs the gradients are compared with a float64 run of
    torch on the same (rounded) values instead: torch's half-precision kernels sum
    dweight and dbias with half-precision rounding, ours in float32, so ours are the
    closer of the two to the exact gradient and torch's are off by many ulps.
    """
    ours, our_leaves = _run(HF, call, tensors)
    theirs, their_leaves = _run(F, call, tensors)
    assert_close(ours, theirs)
    for name in BUFFERS:
        if their_leaves.get(name) is not None:
            assert_close(our_leaves[name], their_leaves[name], msg=f"{name} after the update")
    if not theirs.requires_grad or theirs.numel() == 0:
        return
    grad_output = randn(*theirs.shape, dtype=theirs.dtype, seed=99)
    if theirs.dtype in (torch.float16, torch.bfloat16):
        theirs, their_leaves = _run(F, call, tensors, dtype=torch.float64)
    ours.backward(grad_output)
    theirs.backward(grad_output.to(theirs.dtype))
    for name, leaf in our_leaves.items():
        if leaf is not None and leaf.requires_grad:
            expected = their_leaves[name].grad.to(leaf.grad.dtype)
            assert_close(leaf.grad, expected, scale=grad_scale, msg=f"grad of {name}")


def affine_params(shape, dtype, affine):
    use_weight, use_bias = affine
    weight = randn(*shape, dtype=dtype, seed=1, scale=0.5, offset=1.0) if use_weight else None
    bias = randn(*shape, dtype=dtype, seed=2) if use_bias else None
    return weight, bias


# --- Signatures ---------------------------------------------------------------------


def assert_same_signature(ours, theirs):
    """Same parameter names in the same order, with the same kinds and defaults."""
    ours, theirs = inspect.signature(ours).parameters, inspect.signature(theirs).parameters
    assert list(ours) == list(theirs)
    for param in theirs.values():
        mine = ours[param.name]
        assert (mine.kind, mine.default) == (param.kind, param.default), param.name


@pytest.mark.parametrize("name", FUNCTIONS)
def test_signature_matches_torch(name):
    assert_same_signature(getattr(HF, name), getattr(F, name))


@pytest.mark.parametrize("name", FUNCTIONS)
def test_exported_at_top_level(name):
    assert getattr(helpers, name) is getattr(HF, name)
    assert name in helpers.__all__


# --- layer_norm ---------------------------------------------------------------------

LN_SHAPES = [
    ((4, 8), (8,)),  # last dim
    ((2, 3, 5), (5,)),  # per token
    ((2, 3, 5), (3, 5)),  # per sentence: last two dims
    ((2, 3, 5), (2, 3, 5)),  # all dims
    ((7, 64), (64,)),
    ((3, 1), (1,)),  # one feature: x_hat is 0
]


@pytest.mark.parametrize("affine", AFFINE, ids=AFFINE_IDS)
@pytest.mark.parametrize("dtype,param_dtype", DTYPES, ids=DTYPE_IDS)
@pytest.mark.parametrize("shape,normalized_shape", LN_SHAPES, ids=str)
def test_layer_norm_matches_torch(
    assert_close, shape, normalized_shape, dtype, param_dtype, affine
):
    x = randn(*shape, dtype=dtype, scale=2.0, offset=0.5)
    weight, bias = affine_params(normalized_shape, param_dtype, affine)
    compare_with_torch(
        assert_close,
        lambda impl, x, weight, bias: impl.layer_norm(x, normalized_shape, weight, bias),
        {"x": x, "weight": weight, "bias": bias},
    )


@pytest.mark.parametrize("eps", [0.0, 1e-2, -1e-3, 1])
def test_layer_norm_eps_as_torch(assert_close, eps):
    # torch accepts any eps, even a negative one; it goes inside the square root.
    compare_with_torch(
        assert_close,
        lambda impl, x: impl.layer_norm(x, (6,), eps=eps),
        {"x": randn(4, 6, scale=3.0)},
    )


@pytest.mark.parametrize("normalized_shape", [(4,), [4], torch.Size([4])], ids=type)
def test_layer_norm_accepts_tuple_list_and_size(assert_close, normalized_shape):
    x = randn(3, 4)
    assert_close(HF.layer_norm(x, normalized_shape), F.layer_norm(x, normalized_shape))


def test_layer_norm_non_contiguous_input(assert_close):
    x = randn(5, 4, 3).transpose(0, 2)  # (3, 4, 5), not contiguous
    assert not x.is_contiguous()
    compare_with_torch(
        assert_close,
        lambda impl, x: impl.layer_norm(x, (4, 5)),
        {"x": x},
    )


def test_layer_norm_constant_row_with_zero_eps_is_nan_like_torch(assert_close):
    x = torch.ones(2, 4)
    assert_close(HF.layer_norm(x, (4,), eps=0.0), F.layer_norm(x, (4,), eps=0.0))
    assert HF.layer_norm(x, (4,), eps=0.0).isnan().all()


def test_layer_norm_is_stable_with_a_large_common_offset():
    """A two-pass variance stays accurate when the mean dwarfs the spread; the
    one-pass E[x^2] - E[x]^2 loses every digit of it in float32."""
    x = randn(8, 256, scale=1.0, offset=1e4)  # float32, mean 10^4, spread 1
    expected = F.layer_norm(x.double(), (256,))  # exact statistics of the same input
    ours = HF.layer_norm(x, (256,))
    # float32 cannot hold the mean of values near 1e4 more closely than ~1e-3.
    assert (ours.double() - expected).abs().max() < 5e-3

    one_pass_var = (x * x).mean(-1, keepdim=True) - x.mean(-1, keepdim=True) ** 2
    one_pass = (x - x.mean(-1, keepdim=True)) * torch.rsqrt(one_pass_var + 1e-5)
    # The shortcut is far off, or even takes the square root of a negative variance.
    assert (one_pass.double() - expected).abs().nan_to_num(nan=float("inf")).max() > 0.1


# --- rms_norm -----------------------------------------------------------------------


# torch warns that a float32 weight with a half input takes its slower, unfused path.
@pytest.mark.filterwarnings("ignore:Mismatch dtype between input and weight")
@pytest.mark.parametrize("eps", [None, 1e-6, 0.0])
@pytest.mark.parametrize("use_weight", [False, True], ids=["plain", "weight"])
@pytest.mark.parametrize("dtype,param_dtype", DTYPES, ids=DTYPE_IDS)
@pytest.mark.parametrize("shape,normalized_shape", LN_SHAPES, ids=str)
def test_rms_norm_matches_torch(
    assert_close, shape, normalized_shape, dtype, param_dtype, use_weight, eps
):
    x = randn(*shape, dtype=dtype, scale=2.0, offset=0.5)
    weight, _ = affine_params(normalized_shape, param_dtype, (use_weight, False))
    compare_with_torch(
        assert_close,
        lambda impl, x, weight: impl.rms_norm(x, normalized_shape, weight, eps),
        {"x": x, "weight": weight},
    )


@pytest.mark.parametrize(
    "dtype,expected_eps",
    [
        (torch.float16, torch.finfo(torch.float32).eps),
        (torch.bfloat16, torch.finfo(torch.float32).eps),
        (torch.float32, torch.finfo(torch.float32).eps),
        (torch.float64, torch.finfo(torch.float64).eps),
    ],
)
def test_rms_norm_default_eps_is_the_computation_dtype_epsilon(assert_close, dtype, expected_eps):
    # A tiny input makes eps dominate the mean square, so the default shows.
    x = torch.full((2, 4), 1e-4 if dtype != torch.float64 else 1e-8, dtype=dtype)
    assert_close(HF.rms_norm(x, (4,)), F.rms_norm(x, (4,)))
    assert_close(HF.rms_norm(x, (4,)), HF.rms_norm(x, (4,), eps=expected_eps))
    assert not torch.equal(HF.rms_norm(x, (4,)), HF.rms_norm(x, (4,), eps=10 * expected_eps))


@pytest.mark.filterwarnings("ignore:Mismatch dtype between input and weight")
@pytest.mark.parametrize("weight_dtype", [torch.float64, torch.float16, torch.int64])
def test_rms_norm_casts_any_weight_dtype_like_torch(assert_close, weight_dtype):
    x = randn(3, 5)
    weight = torch.arange(1, 6).to(weight_dtype)
    assert_close(HF.rms_norm(x, (5,), weight), F.rms_norm(x, (5,), weight))


def test_rms_norm_complex_input_like_torch(assert_close):
    x = torch.complex(randn(3, 4, seed=1), randn(3, 4, seed=2))
    ours, theirs = HF.rms_norm(x, (4,)), F.rms_norm(x, (4,))
    torch.testing.assert_close(ours, theirs, atol=1e-5, rtol=1e-5)


# --- group_norm ---------------------------------------------------------------------

GN_SHAPES = [
    ((4, 6), 3),
    ((2, 6, 5), 1),  # one group: LayerNorm over (C, L)
    ((2, 6, 5), 2),
    ((2, 6, 5), 6),  # one channel per group: InstanceNorm
    ((2, 4, 3, 3), 2),
    ((3, 8, 7), 4),
]


@pytest.mark.parametrize("affine", AFFINE, ids=AFFINE_IDS)
@pytest.mark.parametrize("dtype,param_dtype", DTYPES, ids=DTYPE_IDS)
@pytest.mark.parametrize("shape,num_groups", GN_SHAPES, ids=str)
def test_group_norm_matches_torch(assert_close, shape, num_groups, dtype, param_dtype, affine):
    x = randn(*shape, dtype=dtype, scale=2.0, offset=-1.0)
    weight, bias = affine_params((shape[1],), param_dtype, affine)

    def call(impl, x, weight, bias):
        if impl is F and weight is None and bias is not None:
            # torch 2.13's group_norm backward fails for a bias without a weight
            # ("tensor does not have a device"); weight=1 is the same function.
            weight = torch.ones_like(bias)
        return impl.group_norm(x, num_groups, weight, bias)

    compare_with_torch(assert_close, call, {"x": x, "weight": weight, "bias": bias})


@pytest.mark.parametrize("eps", [0.0, -1e-3, 0.5])
def test_group_norm_eps_as_torch(assert_close, eps):
    compare_with_torch(
        assert_close,
        lambda impl, x: impl.group_norm(x, 2, eps=eps),
        {"x": randn(3, 4, 5, scale=3.0)},
    )


# --- batch_norm ---------------------------------------------------------------------

BN_SHAPES = [(8, 3), (4, 3, 5), (2, 3, 2, 2)]


def running_stats(num_channels, dtype):
    mean = randn(num_channels, dtype=dtype, seed=5)
    var = randn(num_channels, dtype=torch.float64, seed=6).abs().to(dtype) + 0.5
    return mean, var


@pytest.mark.parametrize("affine", AFFINE, ids=AFFINE_IDS)
@pytest.mark.parametrize("dtype,param_dtype", DTYPES, ids=DTYPE_IDS)
@pytest.mark.parametrize("momentum", [0.1, 0.5])
@pytest.mark.parametrize(
    "training,tracked",
    [(True, True), (True, False), (False, True)],
    ids=["train", "train-untracked", "eval"],
)
@pytest.mark.parametrize("shape", BN_SHAPES, ids=str)
def test_batch_norm_matches_torch(
    assert_close, shape, training, tracked, momentum, dtype, param_dtype, affine
):
    x = randn(*shape, dtype=dtype, scale=2.0, offset=1.0)
    weight, bias = affine_params((shape[1],), param_dtype, affine)
    running_mean, running_var = running_stats(shape[1], param_dtype) if tracked else (None, None)
    compare_with_torch(
        assert_close,
        lambda impl, x, weight, bias, running_mean, running_var: impl.batch_norm(
            x, running_mean, running_var, weight, bias, training, momentum
        ),
        {
            "x": x,
            "weight": weight,
            "bias": bias,
            "running_mean": running_mean,
            "running_var": running_var,
        },
    )


def test_batch_norm_running_var_is_unbiased_and_normalisation_biased():
    x = randn(5, 2, dtype=torch.float64, scale=3.0)
    running_mean, running_var = torch.zeros(2).double(), torch.ones(2).double()
    y = HF.batch_norm(x, running_mean, running_var, training=True, momentum=1.0)
    # momentum=1 replaces the running statistics by the batch's.
    torch.testing.assert_close(running_mean, x.mean(0))
    torch.testing.assert_close(running_var, x.var(0, correction=1))
    torch.testing.assert_close(y, (x - x.mean(0)) / (x.var(0, correction=0) + 1e-5).sqrt())


@pytest.mark.parametrize("momentum", [0.0, 1.0, 2.0, -0.5, 1])
def test_batch_norm_accepts_any_momentum_like_torch(assert_close, momentum):
    compare_with_torch(
        assert_close,
        lambda impl, x, running_mean, running_var: impl.batch_norm(
            x, running_mean, running_var, training=True, momentum=momentum
        ),
        {"x": randn(6, 3), "running_mean": torch.zeros(3), "running_var": torch.ones(3)},
    )


def test_batch_norm_eval_eps_zero_allowed_like_torch(assert_close):
    compare_with_torch(
        assert_close,
        lambda impl, x, running_mean, running_var: impl.batch_norm(
            x, running_mean, running_var, training=False, eps=0.0
        ),
        {"x": randn(4, 3), "running_mean": torch.zeros(3), "running_var": torch.ones(3)},
    )


def test_batch_norm_weight_with_channel_count_but_other_shape_like_torch(assert_close):
    # torch only counts the weight's elements: a (1, C) weight is accepted.
    x, weight = randn(4, 3), randn(1, 3, seed=3)
    assert_close(
        HF.batch_norm(x, None, None, weight, training=True),
        F.batch_norm(x, None, None, weight, training=True),
    )


# --- Empty and one-element inputs ----------------------------------------------------

EDGE_CASES = {
    "ln-empty-batch": lambda impl, x: impl.layer_norm(x, (4,)),
    "ln-no-features": lambda impl, x: impl.layer_norm(x, (0,)),
    "ln-one-element": lambda impl, x: impl.layer_norm(x, (1,)),
    "rms-empty-batch": lambda impl, x: impl.rms_norm(x, (4,)),
    "rms-one-element": lambda impl, x: impl.rms_norm(x, (1,)),
    "gn-empty-batch": lambda impl, x: impl.group_norm(x, 2),
    "gn-empty-length": lambda impl, x: impl.group_norm(x, 2),
    "bn-train-empty-batch": lambda impl, x: impl.batch_norm(
        x, torch.zeros(4), torch.ones(4), training=True
    ),
    "bn-train-empty-length": lambda impl, x: impl.batch_norm(
        x, torch.zeros(4), torch.ones(4), training=True
    ),
    "bn-eval-one-sample": lambda impl, x: impl.batch_norm(
        x, torch.full((4,), 0.5), torch.full((4,), 2.0)
    ),
    # torch's kernel returns a copy of an empty input before any other check, a 1-D one too,
    # scaled and shifted by the first gamma and beta (4 of PyTorch's own sample inputs)
    "bn-train-empty-1d": lambda impl, x: impl.batch_norm(x, None, None, training=True),
    "bn-eval-empty-1d-no-stats": lambda impl, x: impl.batch_norm(x, None, None),
    "bn-train-empty-1d-stats": lambda impl, x: impl.batch_norm(
        x, torch.zeros(2), torch.ones(2), training=True
    ),
    "bn-empty-1d-affine": lambda impl, x: impl.batch_norm(
        x, None, None, torch.full((2,), 3.0), torch.full((2,), 0.5), training=True
    ),
}
EDGE_SHAPES = {
    "ln-empty-batch": (0, 4),
    "ln-no-features": (3, 0),
    "ln-one-element": (1, 1),
    "rms-empty-batch": (0, 3, 4),
    "rms-one-element": (1,),
    "gn-empty-batch": (0, 4, 3),
    "gn-empty-length": (2, 4, 0),
    "bn-train-empty-batch": (0, 4),
    "bn-train-empty-length": (3, 4, 0),
    "bn-eval-one-sample": (1, 4),
    "bn-train-empty-1d": (0,),
    "bn-eval-empty-1d-no-stats": (0,),
    "bn-train-empty-1d-stats": (0,),
    "bn-empty-1d-affine": (0,),
}


@pytest.mark.parametrize("case", list(EDGE_CASES))
def test_empty_and_one_element_inputs_like_torch(assert_close, case):
    compare_with_torch(assert_close, EDGE_CASES[case], {"x": randn(*EDGE_SHAPES[case])})


def test_batch_norm_empty_batch_leaves_running_stats_alone():
    running_mean, running_var = torch.full((3,), 0.25), torch.full((3,), 4.0)
    HF.batch_norm(torch.empty(0, 3), running_mean, running_var, training=True)
    assert torch.equal(running_mean, torch.full((3,), 0.25))
    assert torch.equal(running_var, torch.full((3,), 4.0))


# --- Gradient checks in float64 -----------------------------------------------------


def _double(*shape, seed=0):
    return randn(*shape, dtype=torch.float64, seed=seed).requires_grad_()


GRADCHECK_CASES = {
    "layer_norm": (
        lambda x, w, b: HF.layer_norm(x, (3, 4), w, b),
        lambda: (_double(2, 3, 4), _double(3, 4, seed=1), _double(3, 4, seed=2)),
    ),
    "rms_norm": (
        lambda x, w: HF.rms_norm(x, (4,), w),
        lambda: (_double(3, 4), _double(4, seed=1)),
    ),
    "group_norm": (
        lambda x, w, b: HF.group_norm(x, 2, w, b),
        lambda: (_double(2, 4, 3), _double(4, seed=1), _double(4, seed=2)),
    ),
    "batch_norm-train": (
        lambda x, w, b: HF.batch_norm(x, None, None, w, b, training=True),
        lambda: (_double(4, 3, 2), _double(3, seed=1), _double(3, seed=2)),
    ),
    "batch_norm-eval": (
        lambda x, w, b: HF.batch_norm(
            x, torch.zeros(3).double(), torch.full((3,), 2.0).double(), w, b
        ),
        lambda: (_double(4, 3, 2), _double(3, seed=1), _double(3, seed=2)),
    ),
}


@pytest.mark.parametrize("case", list(GRADCHECK_CASES))
def test_gradcheck(case):
    fn, make_inputs = GRADCHECK_CASES[case]
    assert torch.autograd.gradcheck(fn, make_inputs())


@pytest.mark.parametrize("case", list(GRADCHECK_CASES))
def test_gradgradcheck(case):
    fn, make_inputs = GRADCHECK_CASES[case]
    assert torch.autograd.gradgradcheck(fn, make_inputs())


# --- Docstring examples ---------------------------------------------------------------


@pytest.mark.parametrize("module", ["helpers.functional", "helpers.modules", "helpers.autograd"])
def test_docstring_examples_run(module):
    mod = __import__(module, fromlist=["_"])
    torch.manual_seed(0)
    result = doctest.testmod(mod, extraglobs={"torch": torch}, optionflags=doctest.ELLIPSIS)
    assert result.attempted > 0
    assert result.failed == 0
