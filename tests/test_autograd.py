"""LayerNormFunction: the hand-derived backward against torch's kernel and autograd."""

from __future__ import annotations

import pytest
import torch
import torch.nn.functional as F
from test_functional import AFFINE, AFFINE_IDS, DTYPE_IDS, DTYPES, LN_SHAPES, randn

import helpers
from helpers import LayerNormFunction


def ln_function(x, normalized_shape, weight=None, bias=None, eps=1e-5):
    return LayerNormFunction.apply(x, normalized_shape, weight, bias, eps)


def forward_backward(fn, x, normalized_shape, weight, bias, grad_output, dtype=None):
    """Output and gradients of ``fn`` on leaf copies (cast to ``dtype`` if given)."""
    leaves = [
        None if t is None else t.detach().to(dtype).requires_grad_() for t in (x, weight, bias)
    ]
    y = fn(leaves[0], normalized_shape, leaves[1], leaves[2])
    y.backward(grad_output.to(y.dtype))
    return y, [None if t is None else t.grad for t in leaves]


@pytest.mark.parametrize("affine", AFFINE, ids=AFFINE_IDS)
@pytest.mark.parametrize("dtype,param_dtype", DTYPES, ids=DTYPE_IDS)
@pytest.mark.parametrize("shape,normalized_shape", LN_SHAPES, ids=str)
def test_matches_torch(assert_close, shape, normalized_shape, dtype, param_dtype, affine):
    x = randn(*shape, dtype=dtype, scale=2.0, offset=0.5)
    weight = randn(*normalized_shape, dtype=param_dtype, seed=1) if affine[0] else None
    bias = randn(*normalized_shape, dtype=param_dtype, seed=2) if affine[1] else None
    grad_output = randn(*shape, dtype=dtype, seed=3)

    ours, our_grads = forward_backward(ln_function, x, normalized_shape, weight, bias, grad_output)
    theirs = F.layer_norm(x, normalized_shape, weight, bias)
    assert_close(ours, theirs)
    # Gradients against torch's own kernel; for half inputs against a float64 run,
    # since torch's half kernel sums dweight and dbias with half-precision rounding.
    reference_dtype = torch.float64 if dtype in (torch.float16, torch.bfloat16) else None
    _, their_grads = forward_backward(
        F.layer_norm, x, normalized_shape, weight, bias, grad_output, reference_dtype
    )
    for name, mine, their in zip(("input", "weight", "bias"), our_grads, their_grads, strict=True):
        if their is None:
            assert mine is None
        else:
            assert_close(mine, their.to(mine.dtype), scale=10, msg=f"grad of {name}")


@pytest.mark.parametrize("affine", AFFINE, ids=AFFINE_IDS)
@pytest.mark.parametrize("normalized_shape", [(5,), (3, 5)], ids=str)
def test_gradcheck(normalized_shape, affine):
    x = randn(2, 3, 5, dtype=torch.float64).requires_grad_()
    weight = randn(*normalized_shape, dtype=torch.float64, seed=1).requires_grad_()
    bias = randn(*normalized_shape, dtype=torch.float64, seed=2).requires_grad_()
    inputs = (x, normalized_shape, weight if affine[0] else None, bias if affine[1] else None, 1e-5)
    assert torch.autograd.gradcheck(LayerNormFunction.apply, inputs)


def test_agrees_with_autograd_of_the_composition(assert_close):
    """The hand-derived backward equals what autograd derives from helpers.layer_norm."""
    x = randn(4, 7, 16, dtype=torch.float64, scale=3.0)
    weight = randn(16, dtype=torch.float64, seed=1)
    bias = randn(16, dtype=torch.float64, seed=2)
    grad_output = randn(4, 7, 16, dtype=torch.float64, seed=3)
    ours = forward_backward(ln_function, x, (16,), weight, bias, grad_output)
    composed = forward_backward(helpers.layer_norm, x, (16,), weight, bias, grad_output)
    assert_close(ours[0], composed[0])
    for mine, their in zip(ours[1], composed[1], strict=True):
        assert_close(mine, their)


def test_saves_only_input_weight_mean_and_rstd():
    x = randn(6, 5, 8).requires_grad_()
    weight = randn(8, seed=1).requires_grad_()
    bias = randn(8, seed=2).requires_grad_()
    y = ln_function(x, (8,), weight, bias)
    saved = y.grad_fn.saved_tensors
    assert len(saved) == 4
    assert saved[0] is x or torch.equal(saved[0], x)
    assert torch.equal(saved[1], weight)
    mean, rstd = saved[2], saved[3]
    assert mean.numel() == rstd.numel() == 30  # one per row, not one per element
    rows = x.detach().reshape(30, 8)
    torch.testing.assert_close(mean.flatten(), rows.mean(1))
    torch.testing.assert_close(rstd.flatten(), (rows.var(1, correction=0) + 1e-5).rsqrt())


def test_input_gradient_sums_to_zero_per_row():
    x = randn(5, 32, scale=4.0, offset=3.0).requires_grad_()
    weight = randn(32, seed=1)
    ln_function(x, (32,), weight).backward(randn(5, 32, seed=2))
    assert x.grad.sum(-1).abs().max() < 1e-5
    assert x.grad.abs().max() > 1e-2  # not trivially zero


def test_only_requested_gradients_are_computed():
    x = randn(3, 4).requires_grad_()
    weight, bias = randn(4, seed=1), randn(4, seed=2).requires_grad_()  # weight is frozen
    ln_function(x, (4,), weight, bias).sum().backward()
    assert weight.grad is None
    assert x.grad is not None and bias.grad is not None


def test_no_input_gradient_when_only_parameters_train(assert_close):
    x = randn(3, 4)
    weight = randn(4, seed=1).requires_grad_()
    ln_function(x, (4,), weight).backward(torch.ones(3, 4))
    expected = F.layer_norm(x, (4,)).sum(0)  # d/dweight of sum(x_hat * weight)
    assert_close(weight.grad, expected)


@pytest.mark.parametrize("dtype", [torch.float16, torch.bfloat16])
def test_half_precision_gradients_keep_each_tensors_dtype(dtype):
    x = randn(4, 8, dtype=dtype).requires_grad_()
    weight = randn(8, seed=1).requires_grad_()  # float32 master weight
    bias = randn(8, seed=2).requires_grad_()
    y = ln_function(x, (8,), weight, bias)
    assert y.dtype == dtype
    y.backward(torch.ones_like(y))
    assert (x.grad.dtype, weight.grad.dtype, bias.grad.dtype) == (
        dtype,
        torch.float32,
        torch.float32,
    )


def test_second_derivative_raises_rather_than_being_wrong():
    x = randn(3, 4, dtype=torch.float64).requires_grad_()
    (grad,) = torch.autograd.grad(ln_function(x, (4,)).pow(2).sum(), x, create_graph=True)
    with pytest.raises(RuntimeError, match="once_differentiable|does not require grad"):
        grad.sum().backward()


@pytest.mark.parametrize("shape,normalized_shape", [((0, 4), (4,)), ((3, 0), (0,))], ids=str)
def test_empty_inputs_like_torch(assert_close, shape, normalized_shape):
    x = randn(*shape).requires_grad_()
    y = ln_function(x, normalized_shape)
    assert_close(y, F.layer_norm(x, normalized_shape))
    y.sum().backward()
    assert x.grad.shape == x.shape


def test_non_contiguous_input(assert_close):
    x = randn(5, 4, 3).transpose(0, 2).requires_grad_()
    x_ref = x.detach().clone().requires_grad_()
    grad_output = randn(3, 4, 5, seed=1)
    ln_function(x, (4, 5)).backward(grad_output)
    F.layer_norm(x_ref, (4, 5)).backward(grad_output)
    assert_close(x.grad, x_ref.grad, scale=10)
