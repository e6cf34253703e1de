"""helpers' modules as drop-in replacements for torch.nn's: constructor signatures,
repr, parameters and buffers, state_dict both ways, training and evaluation, running
statistics, and a whole model trained with either."""

from __future__ import annotations

import pytest
import torch
from test_functional import assert_same_signature
from torch import nn

import helpers
from helpers import modules as HM

MODULES = [
    "LayerNorm",
    "RMSNorm",
    "BatchNorm1d",
    "BatchNorm2d",
    "GroupNorm",
    "InstanceNorm2d",
]

# (class name, positional args, keyword args, input shape)
CASES = [
    ("LayerNorm", (4,), {}, (3, 5, 4)),
    ("LayerNorm", ((5, 4),), {"eps": 1e-3}, (3, 5, 4)),
    ("LayerNorm", ([5, 4],), {"elementwise_affine": False}, (3, 5, 4)),
    ("LayerNorm", (torch.Size([4]),), {"bias": False}, (2, 4)),
    ("LayerNorm", ((3, 5, 4),), {}, (3, 5, 4)),
    ("RMSNorm", (4,), {}, (3, 5, 4)),
    ("RMSNorm", ((5, 4),), {"eps": 1e-6}, (3, 5, 4)),
    ("RMSNorm", (4,), {"elementwise_affine": False}, (2, 4)),
    ("BatchNorm1d", (3,), {}, (8, 3)),
    ("BatchNorm1d", (3,), {"momentum": 0.5}, (4, 3, 5)),
    ("BatchNorm1d", (3,), {"momentum": None}, (4, 3, 5)),
    ("BatchNorm1d", (3,), {"affine": False}, (8, 3)),
    ("BatchNorm1d", (3,), {"bias": False, "eps": 1e-3}, (8, 3)),
    ("BatchNorm1d", (3,), {"track_running_stats": False}, (4, 3, 5)),
    ("BatchNorm1d", (3, 1e-5, None, False, False), {}, (4, 3, 5)),
    ("GroupNorm", (2, 4), {}, (3, 4, 5)),
    ("GroupNorm", (1, 4), {"affine": False}, (3, 4)),
    ("GroupNorm", (4, 4), {"bias": False}, (3, 4, 2)),
    ("GroupNorm", (3, 6, 1e-3), {}, (2, 6, 3, 3)),
    ("BatchNorm2d", (3,), {}, (4, 3, 5, 5)),
    ("BatchNorm2d", (3,), {"momentum": None}, (4, 3, 2, 3)),
    ("BatchNorm2d", (3,), {"affine": False, "track_running_stats": False}, (4, 3, 2, 3)),
    ("InstanceNorm2d", (3,), {"affine": True}, (4, 3, 7, 2)),
    ("InstanceNorm2d", (3,), {"affine": True, "track_running_stats": True, "momentum": 0.5}, (4, 3, 7, 2)),
    ("InstanceNorm2d", (3,), {}, (2, 3, 4, 5)),
    ("InstanceNorm2d", (3,), {"affine": True, "bias": False}, (2, 3, 4, 5)),
    ("InstanceNorm2d", (3,), {"track_running_stats": True, "momentum": None}, (2, 3, 4, 5)),
    ("InstanceNorm2d", (3, 1e-3, 0.2, True, True), {}, (2, 3, 4, 5)),
    ("InstanceNorm2d", (3,), {"affine": True, "track_running_stats": True}, (3, 4, 5)),
]
CASE_IDS = [f"{name}{args}{kwargs}" for name, args, kwargs, _ in CASES]


def randn(*shape, seed=0, dtype=torch.float32):
    gen = torch.Generator().manual_seed(seed)
    return torch.randn(shape, generator=gen).to(dtype)


def build_twins(name, args, kwargs, **factory):
    """(ours, torch's), the same module from helpers and torch.nn."""
    return getattr(helpers, name)(*args, **kwargs, **factory), getattr(nn, name)(
        *args, **kwargs, **factory
    )


def randomize(module, seed=1):
    """Random parameters and running statistics, so that equal results mean something."""
    with torch.no_grad():
        for i, p in enumerate(module.parameters()):
            p.copy_(randn(*p.shape, seed=seed + i))
        if getattr(module, "running_var", None) is not None:
            module.running_mean.copy_(randn(*module.running_mean.shape, seed=seed + 10))
            module.running_var.copy_(randn(*module.running_var.shape, seed=seed + 11).abs() + 0.5)
            module.num_batches_tracked.fill_(7)


def step(assert_close, ours, theirs, x, seed):
    """One forward and backward through both; outputs and all gradients must agree."""
    x_ours, x_theirs = x.clone().requires_grad_(), x.clone().requires_grad_()
    y_ours, y_theirs = ours(x_ours), theirs(x_theirs)
    assert_close(y_ours, y_theirs)
    grad_output = randn(*y_theirs.shape, seed=seed)
    y_ours.backward(grad_output)
    y_theirs.backward(grad_output)
    assert_close(x_ours.grad, x_theirs.grad, scale=10)
    for (name, p), (name_t, p_t) in zip(
        ours.named_parameters(), theirs.named_parameters(), strict=True
    ):
        assert name == name_t
        assert_close(p.grad, p_t.grad, scale=10, msg=f"grad of {name}")


def assert_same_state(assert_close, ours, theirs):
    ours_state, theirs_state = ours.state_dict(), theirs.state_dict()
    assert list(ours_state) == list(theirs_state)
    for key, value in theirs_state.items():
        if value.is_floating_point():
            assert_close(ours_state[key], value, msg=key)
        else:  # num_batches_tracked: an exact count
            assert torch.equal(ours_state[key], value), key


# --- The constructor, repr, parameters and buffers -----------------------------------


@pytest.mark.parametrize("name", MODULES)
def test_constructor_signature_matches_torch(name):
    assert_same_signature(getattr(helpers, name).__init__, getattr(nn, name).__init__)


# torch's private bases that library code checks for (convert_sync_batchnorm asks for
# _BatchNorm; initialisation schemes ask for _NormBase).
TORCH_BASES = {
    "BatchNorm1d": (nn.modules.batchnorm._BatchNorm, nn.modules.batchnorm._NormBase),
    "BatchNorm2d": (nn.modules.batchnorm._BatchNorm, nn.modules.batchnorm._NormBase),
    "InstanceNorm2d": (nn.modules.instancenorm._InstanceNorm, nn.modules.batchnorm._NormBase),
}


@pytest.mark.parametrize("name", MODULES)
def test_subclasses_torchs_class_and_overrides_forward(name):
    cls, theirs = getattr(helpers, name), getattr(nn, name)
    assert cls is getattr(HM, name)
    assert issubclass(cls, theirs) and isinstance(cls.__new__(cls), theirs)
    for base in TORCH_BASES.get(name, ()):
        assert issubclass(cls, base), base
    # forward is helpers' own, defined in helpers.modules; everything else may be torch's
    assert cls.forward is not theirs.forward
    assert cls.forward.__module__ == "helpers.modules"
    assert cls.__constants__ == theirs.__constants__


@pytest.mark.parametrize("name,args,kwargs,shape", CASES, ids=CASE_IDS)
def test_repr_matches_torch(name, args, kwargs, shape):
    ours, theirs = build_twins(name, args, kwargs)
    assert repr(ours) == repr(theirs)


@pytest.mark.parametrize("name,args,kwargs,shape", CASES, ids=CASE_IDS)
def test_fresh_parameters_and_buffers_match_torch(name, args, kwargs, shape):
    ours, theirs = build_twins(name, args, kwargs)
    for mine, their in [
        (ours.named_parameters(), theirs.named_parameters()),
        (ours.named_buffers(), theirs.named_buffers()),
    ]:
        mine, their = dict(mine), dict(their)
        assert list(mine) == list(their)
        for key, value in their.items():
            assert mine[key].dtype == value.dtype, key
            assert torch.equal(mine[key], value), key
    for attr in ("weight", "bias", "running_mean", "running_var", "num_batches_tracked"):
        assert (getattr(ours, attr, None) is None) == (getattr(theirs, attr, None) is None), attr
    assert ours.state_dict()._metadata[""] == theirs.state_dict()._metadata[""]


@pytest.mark.parametrize("name,args,kwargs,shape", CASES, ids=CASE_IDS)
def test_factory_kwargs_create_parameters_in_dtype(name, args, kwargs, shape):
    ours, theirs = build_twins(name, args, kwargs, device="cpu", dtype=torch.float64)
    assert [(k, v.dtype) for k, v in ours.state_dict().items()] == [
        (k, v.dtype) for k, v in theirs.state_dict().items()
    ]


def test_layer_norm_keeps_no_running_statistics():
    # The lesson's point 7: unlike BatchNorm, LayerNorm has no buffers at all.
    assert list(helpers.LayerNorm(4).named_buffers()) == []
    assert list(helpers.BatchNorm1d(4).named_buffers()) != []


# --- Training and evaluation ------------------------------------------------------------


@pytest.mark.parametrize("name,args,kwargs,shape", CASES, ids=CASE_IDS)
def test_training_steps_then_eval_match_torch(assert_close, name, args, kwargs, shape):
    ours, theirs = build_twins(name, args, kwargs)
    randomize(theirs)
    ours.load_state_dict(theirs.state_dict())
    for seed in range(3):  # running statistics evolve over several batches
        step(assert_close, ours, theirs, randn(*shape, seed=100 + seed) * 2 + 1, seed)
        assert_same_state(assert_close, ours, theirs)
    ours.eval()
    theirs.eval()
    step(assert_close, ours, theirs, randn(*shape, seed=200) * 2 + 1, seed=5)
    assert_same_state(assert_close, ours, theirs)  # evaluation changes no statistics


@pytest.mark.parametrize("momentum", [0.1, 0.5, None])
def test_batch_norm_running_statistics_over_many_batches(assert_close, momentum):
    ours, theirs = build_twins("BatchNorm1d", (3,), {"momentum": momentum})
    batches = [randn(6, 3, 4, seed=s) * (s + 1) + s for s in range(6)]
    for x in batches:
        ours(x)
        theirs(x)
    assert_same_state(assert_close, ours, theirs)
    assert ours.num_batches_tracked.item() == len(batches)
    if momentum is None:  # a cumulative average: every batch weighs the same
        means = torch.stack([x.mean((0, 2)) for x in batches]).mean(0)
        variances = torch.stack([x.transpose(0, 1).flatten(1).var(1) for x in batches]).mean(0)
        assert_close(ours.running_mean, means)
        assert_close(ours.running_var, variances)


def test_batch_norm_eval_counts_no_batches():
    bn = helpers.BatchNorm1d(3)
    bn(randn(4, 3))
    bn.eval()
    before = {k: v.clone() for k, v in bn.state_dict().items()}
    bn(randn(4, 3, seed=1))
    assert all(torch.equal(v, before[k]) for k, v in bn.state_dict().items())
    assert bn.num_batches_tracked.item() == 1


def test_batch_norm_without_running_stats_uses_batch_statistics_in_eval(assert_close):
    bn = helpers.BatchNorm1d(3, track_running_stats=False).eval()
    x = randn(16, 3) * 5 + 2
    y = bn(x)
    assert_close(y.mean(0), torch.zeros(3), scale=10)
    assert_close(bn.train()(x), y)


def test_batch_norm_training_with_tracking_switched_off_after_construction(assert_close):
    # torch passes no buffers when training with track_running_stats=False, even if
    # buffers exist: they must stay untouched, and eval must then use them.
    ours, theirs = build_twins("BatchNorm1d", (3,), {})
    ours.track_running_stats = theirs.track_running_stats = False
    x = randn(8, 3) * 3 + 1
    assert_close(ours(x), theirs(x))
    assert_same_state(assert_close, ours, theirs)
    assert ours.num_batches_tracked.item() == 0
    ours.eval()
    theirs.eval()
    assert_close(ours(x), theirs(x))


# --- state_dict and load_state_dict, both ways ---------------------------------------


@pytest.mark.parametrize("direction", ["torch->helpers", "helpers->torch"])
@pytest.mark.parametrize("name,args,kwargs,shape", CASES, ids=CASE_IDS)
def test_load_state_dict_both_ways(assert_close, name, args, kwargs, shape, direction):
    ours, theirs = build_twins(name, args, kwargs)
    source, target = (theirs, ours) if direction == "torch->helpers" else (ours, theirs)
    randomize(source, seed=3)
    assert source.state_dict().keys() == target.state_dict().keys()
    result = target.load_state_dict(source.state_dict())
    assert result.missing_keys == [] and result.unexpected_keys == []
    assert_same_state(assert_close, ours, theirs)
    ours.eval()
    theirs.eval()
    x = randn(*shape, seed=4)
    assert_close(ours(x), theirs(x))


def test_batch_norm_loads_a_checkpoint_from_before_num_batches_tracked():
    theirs = nn.BatchNorm1d(3)
    state = theirs.state_dict()
    del state["num_batches_tracked"]
    state._metadata[""]["version"] = 1  # as saved by torch < 0.4.1
    ours = helpers.BatchNorm1d(3)
    ours.num_batches_tracked.fill_(5)
    result = ours.load_state_dict(state)
    assert result.missing_keys == []
    assert ours.num_batches_tracked.item() == 5
    with pytest.raises(RuntimeError, match="num_batches_tracked"):  # version 2 needs it
        state._metadata[""]["version"] = 2
        ours.load_state_dict(state)


# --- Resetting -------------------------------------------------------------------------


@pytest.mark.parametrize("name,args,kwargs,shape", CASES, ids=CASE_IDS)
def test_reset_parameters_restores_a_fresh_module(name, args, kwargs, shape):
    ours, theirs = build_twins(name, args, kwargs)
    randomize(ours)
    ours.reset_parameters()
    for key, value in theirs.state_dict().items():
        assert torch.equal(ours.state_dict()[key], value), key


def test_batch_norm_reset_running_stats_keeps_parameters():
    bn = helpers.BatchNorm1d(3)
    randomize(bn)
    weight = bn.weight.detach().clone()
    bn.reset_running_stats()
    assert torch.equal(bn.running_mean, torch.zeros(3))
    assert torch.equal(bn.running_var, torch.ones(3))
    assert bn.num_batches_tracked.item() == 0
    assert torch.equal(bn.weight, weight)


# --- Half precision ----------------------------------------------------------------------


@pytest.mark.parametrize("dtype", [torch.float16, torch.bfloat16])
@pytest.mark.parametrize("name,args,kwargs,shape", CASES[::3], ids=CASE_IDS[::3])
def test_half_precision_modules_match_torch(assert_close, name, args, kwargs, shape, dtype):
    ours, theirs = build_twins(name, args, kwargs)
    randomize(theirs)
    ours.load_state_dict(theirs.state_dict())
    ours.to(dtype)
    theirs.to(dtype)
    x = (randn(*shape) * 2 + 1).to(dtype)
    assert_close(ours(x), theirs(x))
    assert_same_state(assert_close, ours, theirs)


# --- A whole model, swapped -------------------------------------------------------------


def make_model(lib, seed):
    torch.manual_seed(seed)
    return nn.Sequential(
        nn.Linear(6, 8),
        lib.BatchNorm1d(8),
        nn.ReLU(),
        nn.Linear(8, 12),
        nn.Unflatten(1, (3, 4)),
        lib.LayerNorm(4),
        lib.GroupNorm(3, 3),
        nn.Flatten(),
        lib.RMSNorm(12),
        nn.Linear(12, 1),
    )


def test_a_model_trains_identically_with_either_library(assert_close):
    ours, theirs = make_model(helpers, seed=0), make_model(nn, seed=0)
    assert list(ours.state_dict()) == list(theirs.state_dict())
    optimizers = [torch.optim.SGD(m.parameters(), lr=0.1, momentum=0.9) for m in (ours, theirs)]
    gen = torch.Generator().manual_seed(0)
    for _ in range(5):
        x, target = torch.randn(16, 6, generator=gen), torch.randn(16, 1, generator=gen)
        losses = []
        for model, optimizer in zip((ours, theirs), optimizers, strict=True):
            optimizer.zero_grad()
            loss = nn.functional.mse_loss(model(x), target)
            loss.backward()
            optimizer.step()
            losses.append(loss)
        assert_close(losses[0], losses[1], scale=10)
    for key, value in theirs.state_dict().items():
        if value.is_floating_point():
            assert_close(ours.state_dict()[key], value, scale=100, msg=key)
    ours.eval()
    theirs.eval()
    x = torch.randn(4, 6, generator=gen)
    assert_close(ours(x), theirs(x), scale=100)


# --- What real code does with a module: isinstance, tracing, compiling -------------------


def test_convert_sync_batchnorm_converts_helpers_batch_norms_to_torchs(assert_close):
    ours = make_model(helpers, seed=0)
    randomize(ours[1], seed=2)
    converted = nn.SyncBatchNorm.convert_sync_batchnorm(ours)
    assert type(converted[1]) is nn.SyncBatchNorm
    # the other norms are left as they are, as torch leaves its own
    assert [type(m) for i, m in enumerate(converted) if i != 1] == [
        type(m) for i, m in enumerate(make_model(helpers, seed=0)) if i != 1
    ]
    # with the BatchNorm's parameters and running statistics
    assert_same_state(assert_close, converted[1], ours[1])


def test_fuse_modules_needs_torchs_exact_type():
    # torch.ao.quantization looks up type(module) in a table of torch's classes
    from torch.ao.quantization import fuse_modules

    theirs = nn.Sequential(nn.Conv2d(3, 4, 3), nn.BatchNorm2d(4)).eval()
    assert type(fuse_modules(theirs, [["0", "1"]])[1]) is nn.Identity  # folded into the conv
    ours = nn.Sequential(nn.Conv2d(3, 4, 3), helpers.BatchNorm2d(4)).eval()
    with pytest.raises(AssertionError, match="did not find fuser method"):
        fuse_modules(ours, [["0", "1"]])


def test_transformer_fast_path_skips_forward_until_turned_off(assert_close, monkeypatch):
    """nn.TransformerEncoderLayer in evaluation under no_grad reads norm1's and norm2's
    weights into one fused kernel; torch.backends.mha.set_fastpath_enabled(False) turns it off."""
    torch.manual_seed(0)
    layer = nn.TransformerEncoderLayer(8, 2, 16, dropout=0.0, batch_first=True).eval()
    for name in ("norm1", "norm2"):
        theirs, ours = getattr(layer, name), helpers.LayerNorm(8)
        randomize(theirs)
        ours.load_state_dict(theirs.state_dict())
        setattr(layer, name, ours)
    calls = []
    layer_norm = helpers.functional.layer_norm
    monkeypatch.setattr(
        helpers.functional, "layer_norm", lambda *a, **k: calls.append(1) or layer_norm(*a, **k)
    )
    x = randn(2, 5, 8)
    with torch.no_grad():
        fused = layer(x)
    assert calls == []  # the fused kernel never called helpers' forward
    enabled = torch.backends.mha.get_fastpath_enabled()
    torch.backends.mha.set_fastpath_enabled(False)
    try:
        with torch.no_grad():
            unfused = layer(x)
    finally:
        torch.backends.mha.set_fastpath_enabled(enabled)
    assert len(calls) == 2
    assert_close(unfused, fused)


@pytest.mark.filterwarnings("ignore:`torch.jit.script` is deprecated:DeprecationWarning")
def test_torchscript_is_not_supported():
    # The README says why: the readable checks use Python that TorchScript cannot compile.
    with pytest.raises(Exception, match="LayerNorm.forward|check_layer_norm_args"):
        torch.jit.script(helpers.LayerNorm(4))


def _qualified_name(target) -> str:
    return f"{getattr(target, '__module__', '')}.{getattr(target, '__name__', target)}"


def _run_both(assert_close, model, traced, shape, seed):
    """One forward and backward through ``model`` and its traced copy ``traced`` (which
    share nothing but their starting state): outputs, parameter gradients and buffers agree."""
    x = randn(*shape, seed=seed)
    outputs = [m(x) for m in (model, traced)]
    assert_close(outputs[1], outputs[0])
    if outputs[0].requires_grad:
        for out in outputs:
            out.square().sum().backward()
    # torch.compile's wrapper keeps the model as _orig_mod; a GraphModule lists its
    # parameters in the order the graph first reads them
    traced = getattr(traced, "_orig_mod", traced)
    if outputs[0].requires_grad:
        traced_parameters = dict(traced.named_parameters())
        assert traced_parameters.keys() == dict(model.named_parameters()).keys()
        for name, p in model.named_parameters():
            assert_close(traced_parameters[name].grad, p.grad, scale=10, msg=f"grad of {name}")
    # A GraphModule keeps only what its graph reads: not the num_batches_tracked that
    # InstanceNorm registers (as torch's does) and never uses.
    state, traced_state = model.state_dict(), traced.state_dict()
    unread = {key for key in state.keys() - traced_state.keys() if key.endswith("num_batches_tracked")}
    assert traced_state.keys() == state.keys() - unread
    for key, value in traced_state.items():
        if value.is_floating_point():
            assert_close(value, state[key], msg=key)
        else:  # num_batches_tracked: an exact count
            assert torch.equal(value, state[key]), key


@pytest.mark.parametrize("mode", ["train", "eval"])
def test_fx_symbolic_trace_of_a_model(assert_close, mode):
    model = make_model(helpers, seed=0).train(mode == "train")
    twin = make_model(helpers, seed=0).train(mode == "train")
    traced = torch.fx.symbolic_trace(twin)
    # each norm is one recorded call to helpers' code, never torch's
    targets = {node.target for node in traced.graph.nodes if node.op == "call_function"}
    assert {_qualified_name(t) for t in targets} >= {
        "helpers.modules._batch_norm_forward",
        "helpers.functional.layer_norm",
        "helpers.functional.group_norm",
        "helpers.functional.rms_norm",
    }
    assert not any("torch.nn.functional" in _qualified_name(t) for t in targets)
    for seed in range(2):  # the traced graph counts batches and updates statistics each run
        _run_both(assert_close, model, traced, (16, 6), seed)


@pytest.mark.parametrize("shape", [(4, 3, 5, 2), (3, 5, 2)], ids=["batched", "unbatched"])
def test_fx_symbolic_trace_of_instance_norm_cumulative_batch_norm_and_dyt(assert_close, shape):
    def model():
        torch.manual_seed(0)
        return nn.Sequential(
            helpers.InstanceNorm2d(3, affine=True, track_running_stats=True),
            *([helpers.BatchNorm2d(3, momentum=None)] if len(shape) == 4 else []),
            helpers.DyT(2),
        )

    eager, traced = model(), torch.fx.symbolic_trace(model())
    for seed in range(2):  # the second run sees the running statistics the first updated
        _run_both(assert_close, eager, traced, shape, seed)


def test_a_traced_model_raises_the_eager_error():
    traced = torch.fx.symbolic_trace(nn.Sequential(helpers.LayerNorm(4), helpers.BatchNorm1d(4)))
    with pytest.raises(RuntimeError, match=r"normalized_shape=\[4\].*input of shape \[2, 5\]"):
        traced(randn(2, 5))
    traced = torch.fx.symbolic_trace(nn.Sequential(nn.Identity(), helpers.BatchNorm2d(4)))
    with pytest.raises(ValueError, match=r"expected 4D input \(got 3D input\)"):
        traced(randn(2, 4, 5))


@pytest.mark.filterwarnings("ignore::UserWarning")  # torch.compile's own, while it compiles
def test_torch_compile_fullgraph_on_a_model(assert_close):
    # fullgraph=True is Dynamo's verdict (one graph, no break); aot_eager then also runs
    # AOTAutograd over the in-place running-statistics updates, without Inductor's C++ build.
    model = make_model(helpers, seed=0)
    compiled = torch.compile(make_model(helpers, seed=0), fullgraph=True, backend="aot_eager")
    _run_both(assert_close, model, compiled, (16, 6), seed=0)


@pytest.mark.parametrize("mode", ["train", "eval"])
def test_torch_export_of_a_model(assert_close, mode):
    model = make_model(helpers, seed=0).train(mode == "train")
    exported = torch.export.export(make_model(helpers, seed=0).train(mode == "train"), (randn(16, 6),))
    x = randn(16, 6, seed=1)
    assert_close(exported.module()(x), model(x))
