"""helpers.speed.compiled: LayerNorm and RMSNorm with compiled forward and backward kernels.

Compiling takes seconds per graph, so the tests share a few small shapes: one width per
dtype, each compiled once for this module. Nothing here is skipped where torch.compile
fails: ``test_the_kernels_are_compiled_here`` fails instead, and the eager fallback is
tested on its own, on purpose.
"""

from __future__ import annotations

import warnings

import pytest
import torch
import torch.nn.functional as F

import helpers
from helpers.lessons.param_grad_reduction import two_stage_column_sum
from helpers.speed import compiled
from helpers.speed.compiled import (
    CompiledLayerNormFunction,
    CompiledRMSNormFunction,
    blocked_column_sum,
    layer_norm_backward,
    rows_per_block,
)

# torch.compile's own internals warn while they compile; nothing of this module's.
pytestmark = pytest.mark.filterwarnings("ignore:`torch.jit.script_method` is deprecated:DeprecationWarning")

def compiled_layer_norm(x, normalized_shape, weight=None, bias=None, eps=1e-5):
    """``F.layer_norm``'s call, through the compiled Function."""
    return CompiledLayerNormFunction.apply(x, normalized_shape, weight, bias, eps)


def compiled_rms_norm(x, normalized_shape, weight=None, eps=None):
    """``F.rms_norm``'s call, through the compiled Function."""
    return CompiledRMSNormFunction.apply(x, normalized_shape, weight, eps)


SHAPE, NORMALIZED = (5, 7, 2, 12), (2, 12)  # 35 rows of 24 features: fewer than a block (341 rows)
WIDE = (3, 300, 24)  # 900 rows of 24: two whole blocks of 341 rows and a short one


def leaves(*tensors):
    return [None if t is None else t.detach().clone().requires_grad_() for t in tensors]


def inputs(shape, normalized, dtype, seed=0):
    g = torch.Generator().manual_seed(seed)
    x = (3 + 2 * torch.randn(shape, generator=g, dtype=torch.float64)).to(dtype)
    w = torch.randn(normalized, generator=g, dtype=torch.float64).to(dtype)
    b = torch.randn(normalized, generator=g, dtype=torch.float64).to(dtype)
    dy = torch.randn(shape, generator=g, dtype=torch.float64).to(dtype)
    return x, w, b, dy


def forward_backward(fn, x, normalized, w, b, dy):
    x, w, b = leaves(x, w, b)
    y = fn(x, normalized, w, b, 1e-5)
    y.backward(dy)
    return y.detach(), x.grad, None if w is None else w.grad, None if b is None else b.grad


def test_the_kernels_are_compiled_here():
    """A C++ compiler is part of this project's environment: no silent eager fallback."""
    x, w, b, dy = inputs(SHAPE, NORMALIZED, torch.float32)
    with warnings.catch_warnings():
        warnings.simplefilter("error", RuntimeWarning)
        forward_backward(CompiledLayerNormFunction.apply, x, NORMALIZED, w, b, dy)
        layer_norm_backward(dy, x, NORMALIZED, *torch.ops.aten.native_layer_norm(x, NORMALIZED, w, b, 1e-5)[1:], w,
                            kernel="split")
    assert compiled.compile_status() == "compiled"
    assert all(compiled._KERNELS[name].compiled is not None for name in ("_layer_norm_forward", "_layer_norm_backward"))


@pytest.mark.parametrize("weight,bias", [(True, True), (True, False), (False, True), (False, False)])
@pytest.mark.parametrize("shape", [SHAPE, WIDE])
def test_equals_torch_forward_and_gradients_in_float32(weight, bias, shape):
    normalized = shape[-2:] if shape == SHAPE else shape[-1:]
    x, w, b, dy = inputs(shape, normalized, torch.float32)
    w, b = (w if weight else None), (b if bias else None)
    ours = forward_backward(CompiledLayerNormFunction.apply, x, normalized, w, b, dy)
    theirs = forward_backward(F.layer_norm, x, normalized, w, b, dy)
    for mine, ref in zip(ours, theirs, strict=True):
        if ref is None:
            assert mine is None
        else:
            torch.testing.assert_close(mine, ref, rtol=1e-5, atol=5e-5)
    assert compiled.compile_status() == "compiled"


@pytest.mark.parametrize("weight,bias", [(True, True), (False, False)])
def test_gradcheck_in_float64(weight, bias):
    x, w, b, _ = inputs((4, 6), (6,), torch.float64)
    x, w, b = leaves(x, w if weight else None, b if bias else None)
    assert torch.autograd.gradcheck(CompiledLayerNormFunction.apply, (x, (6,), w, b, 1e-5))
    assert compiled.compile_status() == "compiled"


def test_frozen_parameters_or_input_take_the_one_gradient_they_need():
    x, w, b, dy = inputs(SHAPE, NORMALIZED, torch.float32)
    expected = forward_backward(F.layer_norm, x, NORMALIZED, w, b, dy)
    x_leaf = x.clone().requires_grad_()
    y = compiled_layer_norm(x_leaf, NORMALIZED, w, b)  # w, b do not require grad: dx alone
    y.backward(dy)
    torch.testing.assert_close(y, expected[0], rtol=1e-5, atol=5e-5)
    torch.testing.assert_close(x_leaf.grad, expected[1], rtol=1e-5, atol=5e-5)
    w_leaf, b_leaf = leaves(w, b)
    compiled_layer_norm(x, NORMALIZED, w_leaf, b_leaf).backward(dy)  # x does not: dgamma, dbeta alone
    torch.testing.assert_close(w_leaf.grad, expected[2], rtol=1e-5, atol=5e-5)
    torch.testing.assert_close(b_leaf.grad, expected[3], rtol=1e-5, atol=5e-5)
    w_leaf = w.clone().requires_grad_()
    compiled_rms_norm(x, NORMALIZED, w_leaf).backward(dy)
    w_ref = w.clone().requires_grad_()
    F.rms_norm(x, NORMALIZED, w_ref).backward(dy)
    torch.testing.assert_close(w_leaf.grad, w_ref.grad, rtol=1e-5, atol=5e-5)


def test_bfloat16_is_accumulated_in_float32_and_as_close_to_float64_as_torch():
    x, w, b, dy = inputs(SHAPE, NORMALIZED, torch.bfloat16)
    w32, b32 = w.float(), b.float()  # mixed precision: float32 parameters with a bfloat16 input
    ours = forward_backward(CompiledLayerNormFunction.apply, x, NORMALIZED, w32, b32, dy)
    theirs = forward_backward(F.layer_norm, x, NORMALIZED, w32, b32, dy)
    exact = forward_backward(F.layer_norm, x.double(), NORMALIZED, w32.double(), b32.double(), dy.double())
    assert [t.dtype for t in ours] == [t.dtype for t in theirs] == [torch.bfloat16, torch.bfloat16,
                                                                     torch.float32, torch.float32]
    for mine, ref, truth in zip(ours, theirs, exact, strict=True):
        assert (mine.double() - truth).abs().max() <= 2 * (ref.double() - truth).abs().max() + 1e-2


def test_empty_input_gives_empty_output_and_zero_parameter_gradients():
    x = torch.empty(0, 24, requires_grad=True)
    w, b = torch.ones(24, requires_grad=True), torch.zeros(24, requires_grad=True)
    y = compiled_layer_norm(x, (24,), w, b)
    y.sum().backward()
    assert y.shape == (0, 24) and x.grad.shape == (0, 24)
    assert torch.equal(w.grad, torch.zeros(24)) and torch.equal(b.grad, torch.zeros(24))


def _error(call):
    try:
        call()
    except Exception as error:  # noqa: BLE001
        return type(error), str(error)
    return None


@pytest.mark.parametrize("args", [
    lambda: (torch.randn(3, 4), 4, None, None),  # a bare int normalized_shape
    lambda: (torch.randn(3, 4), (5,), None, None),  # shape mismatch
    lambda: (torch.randn(3, 4), (4,), torch.randn(5), None),  # weight shape
    lambda: (torch.randn(3, 4), (4,), None, torch.randn(1)),  # bias shape
    lambda: (torch.randn(3, 4), (4,), torch.randn(4, dtype=torch.float64), None),  # weight dtype
    lambda: (torch.randint(0, 5, (3, 4)), (4,), None, None),  # integer input
    lambda: (torch.randn(3, 4), (), None, None),  # empty normalized_shape
])
def test_argument_errors_are_helpers_layer_norms(args):
    input, shape, weight, bias = args()
    ours = _error(lambda: compiled_layer_norm(input, shape, weight, bias))
    reference = _error(lambda: helpers.layer_norm(input, shape, weight, bias))
    assert reference is not None and ours == reference


@pytest.mark.parametrize("args", [
    lambda: (torch.randn(3, 4), (5,), None),
    lambda: (torch.randn(3, 4), (4,), torch.randn(3)),
    lambda: (torch.randint(0, 5, (3, 4)), (4,), None),
])
def test_rms_argument_errors_are_helpers_rms_norms(args):
    input, shape, weight = args()
    ours = _error(lambda: compiled_rms_norm(input, shape, weight))
    reference = _error(lambda: helpers.rms_norm(input, shape, weight))
    assert reference is not None and ours == reference


@pytest.mark.parametrize("weight", [True, False])
def test_rms_norm_equals_torch_and_passes_gradcheck(weight):
    x, w, _, dy = inputs(WIDE, (24,), torch.float32)
    w = w if weight else None
    ours = forward_backward(lambda x, s, w, b, eps: compiled_rms_norm(x, s, w), x, (24,), w, None, dy)
    theirs = forward_backward(lambda x, s, w, b, eps: F.rms_norm(x, s, w), x, (24,), w, None, dy)
    for mine, ref in zip(ours, theirs, strict=True):
        if ref is not None:
            torch.testing.assert_close(mine, ref, rtol=1e-5, atol=5e-5)
    x64, w64 = leaves(x[:2, :3].double(), None if w is None else w.double())
    assert torch.autograd.gradcheck(CompiledRMSNormFunction.apply, (x64, (24,), w64, 1e-6))


@pytest.mark.parametrize("kernel", compiled.BACKWARD_KERNELS)
def test_layer_norm_backward_kernels_equal_torchs_kernel(kernel):
    x, w, b, dy = inputs(WIDE, (24,), torch.float64)
    _, mean, rstd = torch.ops.aten.native_layer_norm(x, [24], w, b, 1e-5)
    expected = torch.ops.aten.native_layer_norm_backward(dy, x, [24], mean, rstd, w, b, [True, True, True])
    got = layer_norm_backward(dy, x, (24,), mean, rstd, w, kernel=kernel)
    for mine, ref in zip(got, expected, strict=True):
        torch.testing.assert_close(mine, ref)
    with pytest.raises(RuntimeError, match="mean"):
        layer_norm_backward(dy, x, (24,), mean[:1], rstd, w)
    with pytest.raises(ValueError, match="kernel.*'two-pass'"):
        layer_norm_backward(dy, x, (24,), mean, rstd, w, kernel="two-pass")


def test_training_backward_takes_the_one_pass_kernel_and_the_split_one_without_numba(monkeypatch):
    """With weight and bias to train, float32/float64 go to helpers.speed.one_pass; without Numba (or in
    bfloat16) to the split Inductor graph; both give torch's gradients."""
    calls = []
    real = compiled.one_pass.layer_norm_backward
    monkeypatch.setattr(compiled.one_pass, "layer_norm_backward", lambda *a: calls.append(1) or real(*a))
    x, w, b, dy = inputs(WIDE, (24,), torch.float32)
    expected = forward_backward(lambda *a: F.layer_norm(*a), x, (24,), w, b, dy)
    torch.testing.assert_close(forward_backward(CompiledLayerNormFunction.apply, x, (24,), w, b, dy), expected,
                               rtol=1e-5, atol=5e-5)
    assert calls == [1]
    monkeypatch.setattr(compiled.one_pass, "HAVE_NUMBA", False)
    torch.testing.assert_close(forward_backward(CompiledLayerNormFunction.apply, x, (24,), w, b, dy), expected,
                               rtol=1e-5, atol=5e-5)
    assert calls == [1]  # the split graph ran


@pytest.mark.parametrize("rows,block_rows", [(1, 4), (7, 3), (64, 8), (65, 8), (10, 100)])
def test_blocked_column_sum_is_the_two_stage_sum(rows, block_rows):
    values = torch.randn(rows, 5, dtype=torch.float64)
    got = blocked_column_sum(lambda v: v, values, block_rows=block_rows)
    torch.testing.assert_close(got, two_stage_column_sum(values, block_rows), rtol=1e-12, atol=1e-12)
    torch.testing.assert_close(got, values.sum(0), rtol=1e-12, atol=1e-12)


def test_blocked_column_sum_combines_several_inputs_and_per_row_columns():
    x, dy, scale = torch.randn(37, 6), torch.randn(37, 6), torch.rand(37, 1)
    got = blocked_column_sum(lambda x, dy, s: x * dy * s, x, dy, scale, block_rows=8)
    torch.testing.assert_close(got, (x * dy * scale).sum(0))


def test_rows_per_block_fills_about_32_kib_and_at_least_8_rows():
    assert rows_per_block(1024) == 8 and rows_per_block(64) == 128 and rows_per_block(8192) == 8
    assert all(rows_per_block(n) >= 8 for n in (1, 3, 100, 10**6))


def _forget_compiled_kernels() -> None:
    """As at import: nothing compiled yet, and no failure to compile seen."""
    compiled._fallback = None
    for kernel in compiled._KERNELS.values():
        kernel.compiled = None
        kernel.seen.clear()


def test_eager_fallback_warns_once_and_gives_the_same_results(monkeypatch):
    """Where torch.compile fails (no C++ compiler, say), the same tensor code runs eagerly."""
    x, w, b, dy = inputs(SHAPE, NORMALIZED, torch.float32)
    expected = forward_backward(CompiledLayerNormFunction.apply, x, NORMALIZED, w, b, dy)

    def no_compiler(*args, **kwargs):
        raise RuntimeError("no C++ compiler found")

    kernels = {name: (kernel.compiled, set(kernel.seen)) for name, kernel in compiled._KERNELS.items()}
    _forget_compiled_kernels()
    monkeypatch.setattr(torch, "compile", no_compiler)
    try:
        with pytest.warns(RuntimeWarning, match="no C\\+\\+ compiler found") as record:
            got = forward_backward(CompiledLayerNormFunction.apply, x, NORMALIZED, w, b, dy)
            forward_backward(CompiledLayerNormFunction.apply, x, NORMALIZED, w, b, dy)
        assert len([r for r in record if r.category is RuntimeWarning]) == 1
        assert compiled.compile_status() == "eager: RuntimeError: no C++ compiler found"
        assert all(kernel.compiled is None for kernel in compiled._KERNELS.values())
    finally:  # compiling again for the other tests, with what was compiled before
        _forget_compiled_kernels()
        for name, (fn, seen) in kernels.items():
            compiled._KERNELS[name].compiled, compiled._KERNELS[name].seen = fn, seen
    for mine, ref in zip(got, expected, strict=True):
        torch.testing.assert_close(mine, ref, rtol=1e-5, atol=5e-5)


def test_no_torch_norm_kernel_compiled_or_eager(monkeypatch):
    """From scratch: neither the traced code nor the eager fallback reaches torch's norm kernels."""
    import test_from_scratch as scratch

    x, w, b, dy = inputs(SHAPE, NORMALIZED, torch.float32)
    for owner, name in scratch.FORBIDDEN_ENTRY_POINTS:
        monkeypatch.setattr(owner, name, lambda *a, _name=name, **k: pytest.fail(f"called torch's {_name}"))
    forward_backward(CompiledLayerNormFunction.apply, x, NORMALIZED, w, b, dy)  # traced and compiled
    forward_backward(lambda x, s, w, b, eps: compiled_rms_norm(x, s, w), x, NORMALIZED, w, None, dy)
    assert compiled.compile_status() == "compiled"
    with scratch.ForbidNormKernels() as mode:  # under a dispatch mode the same code runs eagerly
        forward_backward(CompiledLayerNormFunction.apply, x, NORMALIZED, w, b, dy)
        forward_backward(lambda x, s, w, b, eps: compiled_rms_norm(x, s, w), x, NORMALIZED, w, None, dy)
    assert mode.seen == []
