"""Every norm is as accurate as torch's CPU kernel where accuracy is hard: a large mean.

When a channel's (or a row's) mean is 100 to 10^4 times its spread, the statistics lose
digits in any dtype; what matters is how many. For each norm, dtype and mean, forward and
backward, helpers' largest absolute error against float64 (torch on the same rounded
input, parameters and output gradient, in float64) must be at most 1.5 times torch's own.

Largest ratios of helpers' error to torch's, measured on an AMD EPYC (torch's AVX2 kernels,
1 thread) with the means and seeds below: output, input grad, weight grad, bias grad.

    norm              float32                   bfloat16                  float16
    batch_norm-2d     0.00 0.00 0.00 0.29       0.14 0.83 0.03 1.00       0.03 0.85 0.00 1.00
    batch_norm-1d     0.00 0.00 0.00 0.10       0.08 0.86 0.01 1.00       0.01 0.91 0.00 1.00
    batch_norm-eval   0.39 0.63 0.31 0.29       1.00 1.00 1.00 1.00       1.00 1.00 inf  1.00
    instance_norm     0.00 0.00 0.00 0.48       0.12 0.80 0.04 1.00       0.01 0.87 0.01 1.00
    group_norm        0.60 0.37 0.22 0.59       0.13 0.88 0.03 1.00       0.02 0.15 0.00 1.00
    layer_norm        0.87 0.55 0.78 0.52       0.20 0.53 0.04 0.26       0.02 0.18 0.01 0.20
    rms_norm          1.00 1.27 1.00 -          1.00 1.00 1.00 -          1.00 1.00 1.00 -

Computed in float32 rather than float64, BatchNorm's float32 row would read 1.11 2.39 1.57
1.58, in evaluation 1.23 1.70 0.94 1.58, and instance_norm's 1.46 1.62 1.31 0.87: torch's
kernel sums each channel in double (the last test shows such a failure). The "inf" is both sides overflowing float16 (a weight
gradient summed over 2048 values near 4500), where the check passes only if helpers' is inf too.
A ratio of 1.00 in the half types is the final rounding: both results round to the same
half-precision value, so their errors are equal.
"""

from __future__ import annotations

import pytest
import torch
import torch.nn.functional as F

from helpers import functional as HF

LIMIT = 1.5  # helpers' largest error may be at most this many times torch's
MEANS = (1e2, 1e3, 1e4)  # in units of the spread, which is 1
SEEDS = range(3)
DTYPES = [torch.float32, torch.bfloat16, torch.float16]


def _running_stats(channels, dtype):
    """Running statistics with a large mean, for BatchNorm in evaluation."""
    gen = torch.Generator().manual_seed(5)
    mean = torch.randn(channels, generator=gen, dtype=torch.float64) + 1000
    return mean.to(dtype), torch.full((channels,), 4.0, dtype=dtype)


# name: (input shape, parameter shape, call(impl, x, weight, bias))
NORMS = {
    "batch_norm-2d": (
        (8, 4, 16, 16),
        (4,),
        lambda m, x, w, b: m.batch_norm(x, None, None, w, b, training=True),
    ),
    "batch_norm-1d": (
        (256, 8),
        (8,),
        lambda m, x, w, b: m.batch_norm(x, None, None, w, b, training=True),
    ),
    "batch_norm-eval": (
        (8, 4, 16, 16),
        (4,),
        lambda m, x, w, b: m.batch_norm(x, *_running_stats(4, w.dtype), w, b, training=False),
    ),
    "instance_norm": (
        (4, 3, 16, 16),
        (3,),
        lambda m, x, w, b: m.instance_norm(x, None, None, w, b),
    ),
    "group_norm": ((4, 8, 8, 8), (8,), lambda m, x, w, b: m.group_norm(x, 2, w, b)),
    "layer_norm": ((32, 256), (256,), lambda m, x, w, b: m.layer_norm(x, (256,), w, b)),
    "rms_norm": ((32, 256), (256,), lambda m, x, w, b: m.rms_norm(x, (256,), w)),
}
RESULTS = ("output", "input grad", "weight grad", "bias grad")


def _forward_backward(impl, call, x, weight, bias, grad_output):
    """The output and the gradients of input, weight and bias (None where unused)."""
    x, weight, bias = (t.detach().clone().requires_grad_() for t in (x, weight, bias))
    y = call(impl, x, weight, bias)
    y.backward(grad_output)
    return y.detach(), x.grad, weight.grad, bias.grad


def _inputs(shape, param_shape, dtype, mean, seed):
    """Input, weight, bias and output gradient, drawn in float64 and rounded once to dtype."""
    gen = torch.Generator().manual_seed(seed)
    x = torch.randn(shape, generator=gen, dtype=torch.float64) + mean
    weight = torch.randn(param_shape, generator=gen, dtype=torch.float64) * 0.5 + 1
    bias = torch.randn(param_shape, generator=gen, dtype=torch.float64)
    grad_output = torch.randn(shape, generator=gen, dtype=torch.float64)
    return [t.to(dtype) for t in (x, weight, bias, grad_output)]


def largest_errors(name, dtype):
    """{result: (helpers' largest error, torch's)} against float64, over MEANS and SEEDS."""
    shape, param_shape, call = NORMS[name]
    worst = {result: (0.0, 0.0) for result in RESULTS}
    for mean in MEANS:
        for seed in SEEDS:
            tensors = _inputs(shape, param_shape, dtype, mean, seed)
            exact = _forward_backward(F, call, *(t.double() for t in tensors))
            ours = _forward_backward(HF, call, *tensors)
            theirs = _forward_backward(F, call, *tensors)
            for result, e, o, t in zip(RESULTS, exact, ours, theirs, strict=True):
                if e is None:  # rms_norm has no bias
                    continue
                ours_error = (o.double() - e).abs().max().item()
                their_error = (t.double() - e).abs().max().item()
                worst[result] = (max(worst[result][0], ours_error), max(worst[result][1], their_error))
    return worst


@pytest.mark.parametrize("dtype", DTYPES, ids=lambda d: str(d)[6:])
@pytest.mark.parametrize("name", list(NORMS))
def test_as_accurate_as_torch_at_a_large_mean(name, dtype):
    errors = largest_errors(name, dtype)
    for result, (ours, theirs) in errors.items():
        assert ours <= LIMIT * theirs, (
            f"{name} {dtype} {result}: helpers' largest error {ours:.3g} is "
            f"{ours / theirs if theirs else float('inf'):.2f}x torch's {theirs:.3g}"
        )


def test_float32_batch_norm_in_float32_would_fail_the_check():
    """The check can fail: BatchNorm summed in float32, as before, is over 1.5x torch's error."""
    shape, param_shape, call = NORMS["batch_norm-2d"]
    x, weight, bias, grad_output = _inputs(shape, param_shape, torch.float32, 1e3, seed=0)

    def batch_norm_in_float32(x, weight, bias):
        mean = x.mean((0, 2, 3), keepdim=True)
        centred = x - mean
        var = (centred * centred).mean((0, 2, 3), keepdim=True)
        return centred * torch.rsqrt(var + 1e-5) * weight.view(1, -1, 1, 1) + bias.view(1, -1, 1, 1)

    exact = _forward_backward(F, call, *(t.double() for t in (x, weight, bias, grad_output)))
    theirs = _forward_backward(F, call, x, weight, bias, grad_output)
    leaves = [t.clone().requires_grad_() for t in (x, weight, bias)]
    batch_norm_in_float32(*leaves).backward(grad_output)
    ours_error = (leaves[0].grad.double() - exact[1]).abs().max()
    their_error = (theirs[1].double() - exact[1]).abs().max()
    assert ours_error > LIMIT * their_error
