"""helpers never calls torch's own normalization kernels, nor its variance helpers.

Two nets: every Python entry point to a norm op, a variance or a standard deviation
is monkeypatched to raise; and a TorchDispatchMode watches every ATen operation that
actually runs (forward and backward), so a kernel reached by any other path fails too.
"""

from __future__ import annotations

import re

import pytest
import torch
import torch.nn.functional as F
from torch.utils._python_dispatch import TorchDispatchMode

import helpers

FORBIDDEN_ENTRY_POINTS = [
    (torch, "layer_norm"),
    (torch, "native_layer_norm"),
    (torch, "rms_norm"),
    (torch, "batch_norm"),
    (torch, "native_batch_norm"),
    (torch, "group_norm"),
    (torch, "native_group_norm"),
    (torch, "instance_norm"),
    (torch, "var"),
    (torch, "var_mean"),
    (torch, "std"),
    (torch, "std_mean"),
    (torch, "norm"),
    (torch.Tensor, "var"),
    (torch.Tensor, "std"),
    (torch.Tensor, "norm"),
    (F, "layer_norm"),
    (F, "rms_norm"),
    (F, "batch_norm"),
    (F, "group_norm"),
    (F, "instance_norm"),
    (F, "normalize"),
]
# ATen operators whose name says norm, variance or standard deviation: native_layer_norm,
# native_batch_norm, _native_batch_norm_legit, native_group_norm, _fused_rms_norm,
# linalg_vector_norm, var, var_mean, std, std_mean and their backward ops.
FORBIDDEN_OP = re.compile(r"norm|^var|^std")


class ForbidNormKernels(TorchDispatchMode):
    """Records every ATen op that runs whose name matches :data:`FORBIDDEN_OP`."""

    def __init__(self):
        super().__init__()
        self.seen = []

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        name = func._overloadpacket.__name__
        if FORBIDDEN_OP.search(name):
            self.seen.append(name)
        return func(*args, **(kwargs or {}))


@pytest.fixture
def no_torch_norms(monkeypatch):
    def refuse(name):
        def forbidden(*args, **kwargs):
            raise AssertionError(f"helpers called torch's {name}")

        return forbidden

    for owner, name in FORBIDDEN_ENTRY_POINTS:
        monkeypatch.setattr(owner, name, refuse(f"{getattr(owner, '__name__', owner)}.{name}"))


def leaf(*shape, dtype=torch.float32):
    return torch.randn(shape).to(dtype).requires_grad_()


def run_all(dtype):
    """Forward and backward through every function and module of helpers."""
    # A bfloat16 input runs with float32 parameters (mixed precision), as torch allows.
    p = torch.float32 if dtype == torch.bfloat16 else dtype
    x = leaf(4, 6, 5, dtype=dtype)
    w6, b6 = leaf(6, dtype=p), leaf(6, dtype=p)
    w5, b5 = leaf(5, dtype=p), leaf(5, dtype=p)
    stats = {"dtype": p}
    outputs = [
        helpers.layer_norm(x, (5,), w5, b5),
        helpers.layer_norm(x, (6, 5)),
        helpers.rms_norm(x, (5,), w5),
        helpers.rms_norm(x, (6, 5)),
        helpers.group_norm(x, 3, w6, b6),
        helpers.batch_norm(x, torch.zeros(6, **stats), torch.ones(6, **stats), w6, b6, True),
        helpers.batch_norm(x, torch.zeros(6, **stats), torch.ones(6, **stats), w6, b6, False),
        helpers.batch_norm(x, None, None, training=True),
        helpers.LayerNormFunction.apply(x, (5,), w5, b5, 1e-5),
        helpers.LayerNorm(5, **stats)(x),
        helpers.RMSNorm((6, 5), **stats)(x),
        helpers.GroupNorm(2, 6, **stats)(x),
    ]
    for momentum in (0.1, None):
        bn = helpers.BatchNorm1d(6, momentum=momentum, **stats)
        outputs += [bn(x), bn(x), bn.eval()(x)]
    # The modules subclass torch's: each forward that runs must still be helpers' own.
    bn2d = helpers.BatchNorm2d(6, **stats)
    outputs += [bn2d(x.unsqueeze(-1)), bn2d.eval()(x.unsqueeze(-1))]
    for instance_norm, batch in (  # a batch of (6, 5, 1) images; x itself as one (4, 6, 5) image
        (
            helpers.InstanceNorm2d(6, affine=True, track_running_stats=True, **stats),
            x.unsqueeze(-1),
        ),
        (helpers.InstanceNorm2d(4, **stats), x),
    ):
        outputs += [instance_norm(batch), instance_norm.eval()(batch)]
    sum(out.float().sum() for out in outputs).backward()
    return x.grad, w6.grad, w5.grad


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64, torch.bfloat16])
def test_no_torch_norm_kernel_runs_forward_or_backward(no_torch_norms, dtype):
    with ForbidNormKernels() as mode:
        grads = run_all(dtype)
    assert mode.seen == []
    assert all(g is not None and g.abs().sum() > 0 for g in grads)


def test_the_nets_catch_torch_norms(no_torch_norms):
    """The checks above can fail: torch's own functions trip both nets."""
    x = torch.randn(3, 4)
    with pytest.raises(AssertionError, match="layer_norm"):
        F.layer_norm(x, (4,))
    with pytest.raises(AssertionError, match="var"):
        x.var(-1)
    with ForbidNormKernels() as mode:
        torch.ops.aten.native_layer_norm(x, [4], None, None, 1e-5)
        torch.ops.aten.var_mean(x, [1])
    assert mode.seen == ["native_layer_norm", "var_mean"]
