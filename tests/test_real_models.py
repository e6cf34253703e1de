"""helpers' norms swapped into models this project did not write, built from small configs.

Hugging Face's GPT-2 and BERT, torch's own Transformer encoder and decoder layers (Post-LN
and Pre-LN), a CNN with BatchNorm2d and one with GroupNorm: every one of torch's norms is
rebuilt as helpers' class of the same name from its own arguments, as a learner swaps one in,
the original's state dict is loaded strictly, and then nothing a training script depends on
may change: outputs, gradients,
the parameters and BatchNorm statistics after a few optimizer steps, evaluation outputs,
the weight-decay groups Hugging Face's Trainer builds with ``isinstance``,
``nn.SyncBatchNorm.convert_sync_batchnorm``, ``torch.fx`` tracing and ``torch.compile``.
Nothing is downloaded: each model is built from a config with random weights.
"""

from __future__ import annotations

import copy

import pytest
import torch
from torch import nn
from transformers import BertConfig, BertForMaskedLM, GPT2Config, GPT2LMHeadModel, Trainer

import helpers

VOCAB, SEQ, BATCH = 64, 8, 4
# torch's norm classes, which helpers' twins replace (exactly these types)
TORCH_NORMS = (nn.LayerNorm, nn.RMSNorm, nn.GroupNorm, nn.BatchNorm1d, nn.BatchNorm2d)


def gpt2():
    config = GPT2Config(
        vocab_size=VOCAB, n_positions=16, n_embd=16, n_layer=2, n_head=2, bos_token_id=1,
        eos_token_id=2, resid_pdrop=0.0, embd_pdrop=0.0, attn_pdrop=0.0,
    )
    return GPT2LMHeadModel(config)


def bert():
    config = BertConfig(
        vocab_size=VOCAB, hidden_size=16, num_hidden_layers=2, num_attention_heads=2,
        intermediate_size=32, max_position_embeddings=16, hidden_dropout_prob=0.0,
        attention_probs_dropout_prob=0.0,
    )
    return BertForMaskedLM(config)


class TorchTransformer(nn.Module):
    """torch's encoder layer then decoder layer (each with two or three LayerNorms)."""

    def __init__(self, norm_first: bool):
        super().__init__()
        kwargs = {"dim_feedforward": 32, "dropout": 0.0, "batch_first": True, "norm_first": norm_first}
        self.embed = nn.Embedding(VOCAB, 16)
        self.encoder = nn.TransformerEncoderLayer(16, 2, **kwargs)
        self.decoder = nn.TransformerDecoderLayer(16, 2, **kwargs)
        self.head = nn.Linear(16, VOCAB)

    def forward(self, ids):
        x = self.embed(ids)
        return self.head(self.decoder(x, self.encoder(x)))


def cnn(norm: str):
    """A small ResNet-style stem: conv, norm, ReLU, twice, then a linear head."""
    def make(channels):
        return nn.BatchNorm2d(channels) if norm == "batch" else nn.GroupNorm(4, channels)

    return nn.Sequential(
        nn.Conv2d(3, 8, 3, padding=1), make(8), nn.ReLU(),
        nn.Conv2d(8, 16, 3, stride=2, padding=1), make(16), nn.ReLU(),
        nn.AdaptiveAvgPool2d(1), nn.Flatten(), nn.Linear(16, 10),
    )


MODELS = {
    "gpt2": gpt2,
    "bert": bert,
    "torch-transformer-post-ln": lambda: TorchTransformer(norm_first=False),
    "torch-transformer-pre-ln": lambda: TorchTransformer(norm_first=True),
    "cnn-batch-norm": lambda: cnn("batch"),
    "cnn-group-norm": lambda: cnn("group"),
}


def inputs(name, seed):
    gen = torch.Generator().manual_seed(seed)
    if name.startswith("cnn"):
        return torch.randn(BATCH, 3, 8, 8, generator=gen) * 2 + 1
    return torch.randint(0, VOCAB, (BATCH, SEQ), generator=gen)


def output(model, x):
    out = model(x)
    return getattr(out, "logits", out)  # Hugging Face models return a ModelOutput


def helpers_twin(norm: nn.Module) -> nn.Module:
    """helpers' class of the same name as ``norm``, built from ``norm``'s own arguments."""
    cls, bias = getattr(helpers, type(norm).__name__), getattr(norm, "bias", None) is not None
    if isinstance(norm, nn.LayerNorm):
        return cls(norm.normalized_shape, norm.eps, norm.elementwise_affine, bias=bias)
    if isinstance(norm, nn.RMSNorm):
        return cls(norm.normalized_shape, norm.eps, norm.elementwise_affine)
    if isinstance(norm, nn.GroupNorm):
        return cls(norm.num_groups, norm.num_channels, norm.eps, norm.affine, bias=bias)
    return cls(norm.num_features, norm.eps, norm.momentum, norm.affine, norm.track_running_stats, bias=bias)


def swap_norms(model: nn.Module) -> nn.Module:
    """``model`` with each of its norms of :data:`TORCH_NORMS` replaced, in place, by :func:`helpers_twin`."""
    for name, child in model.named_children():
        model.add_module(name, helpers_twin(child) if type(child) in TORCH_NORMS else swap_norms(child))
    return model


def twins(name):
    """(torch's model, the same model with helpers' norms and the original's state dict)."""
    torch.manual_seed(0)
    original = MODELS[name]()
    swapped = swap_norms(copy.deepcopy(original))
    swapped.load_state_dict(original.state_dict(), strict=True)
    return original, swapped


def norm_types(model):
    return [type(m) for m in model.modules() if isinstance(m, TORCH_NORMS)]


@pytest.mark.parametrize("name", list(MODELS))
def test_swapping_every_norm_changes_nothing_in_training(assert_close, name):
    original, swapped = twins(name)
    before, after = norm_types(original), norm_types(swapped)
    assert before and len(after) == len(before)
    assert all(t.__module__ == "helpers.modules" and t.__name__ == b.__name__
               for t, b in zip(after, before, strict=True))
    assert list(swapped.state_dict()) == list(original.state_dict())

    # SGD, not Adam: a conv bias before BatchNorm has a gradient of exactly 0 but for
    # rounding, which Adam would scale up to a full step of either sign
    optimizers = [torch.optim.SGD(m.parameters(), lr=0.1, momentum=0.9) for m in (original, swapped)]
    for step in range(3):
        x = inputs(name, seed=step)
        outputs = []
        for model, optimizer in zip((original, swapped), optimizers, strict=True):
            optimizer.zero_grad()
            outputs.append(output(model, x))
            outputs[-1].square().mean().backward()
        assert_close(outputs[1], outputs[0], scale=10 ** step, msg=f"output at step {step}")
        for (key, p), q in zip(original.named_parameters(), swapped.parameters(), strict=True):
            assert_close(q.grad, p.grad, scale=10 * 10 ** step, msg=f"grad of {key} at step {step}")
        for optimizer in optimizers:
            optimizer.step()
    # parameters, BatchNorm's running statistics and num_batches_tracked after 3 steps
    theirs = original.state_dict()
    for key, value in swapped.state_dict().items():
        if value.is_floating_point():
            assert_close(value, theirs[key], scale=100, msg=key)
        else:
            assert torch.equal(value, theirs[key]), key
    for model in (original, swapped):
        model.eval()
    x = inputs(name, seed=10)
    assert_close(output(swapped, x), output(original, x), scale=100)


@pytest.mark.parametrize("name", list(MODELS))
def test_weight_decay_groups_are_the_same(name):
    # Trainer.get_decay_parameter_names leaves out nn.LayerNorm's parameters by isinstance
    # (and others by name); it does not use the Trainer itself.
    original, swapped = twins(name)
    decayed = Trainer.get_decay_parameter_names(None, swapped)
    assert decayed == Trainer.get_decay_parameter_names(None, original)
    assert len(decayed) < len(list(swapped.parameters()))


def test_gpt2_layer_norms_are_left_out_of_weight_decay_by_type():
    """GPT-2's norms are named ln_1, ln_2, ln_f: no name pattern catches them, only isinstance."""
    _, swapped = twins("gpt2")
    decayed = Trainer.get_decay_parameter_names(None, swapped)
    assert "transformer.h.0.ln_1.weight" not in decayed
    assert "transformer.h.0.attn.c_attn.weight" in decayed


def test_convert_sync_batchnorm_converts_the_swapped_batch_norms(assert_close):
    original, swapped = twins("cnn-batch-norm")
    theirs = nn.SyncBatchNorm.convert_sync_batchnorm(original)
    ours = nn.SyncBatchNorm.convert_sync_batchnorm(swapped)
    assert [type(m) for m in ours.modules()] == [type(m) for m in theirs.modules()]
    assert sum(type(m) is nn.SyncBatchNorm for m in ours.modules()) == 2
    for key, value in theirs.state_dict().items():
        assert torch.equal(ours.state_dict()[key], value), key


@pytest.mark.parametrize("name", ["cnn-batch-norm", "cnn-group-norm"])
@pytest.mark.parametrize("mode", ["train", "eval"])
def test_fx_symbolic_trace(assert_close, name, mode):
    original, swapped = twins(name)
    original.train(mode == "train")
    traced = torch.fx.symbolic_trace(swapped.train(mode == "train"))
    for seed in range(2):  # in training, each run of the graph updates its BatchNorm statistics
        x = inputs(name, seed)
        assert_close(output(traced, x), output(original, x))
    theirs = original.state_dict()
    for key, value in traced.state_dict().items():
        if value.is_floating_point():
            assert_close(value, theirs[key], msg=key)
        else:  # num_batches_tracked
            assert torch.equal(value, theirs[key]), key


@pytest.mark.filterwarnings("ignore::UserWarning")  # torch.compile's own, while it compiles
def test_torch_compile_fullgraph_gpt2(assert_close):
    # fullgraph=True is Dynamo's verdict (one graph, no break); the eager backend skips the
    # code generation that would only slow this test down.
    original, swapped = twins("gpt2")
    compiled = torch.compile(swapped, fullgraph=True, backend="eager")
    x = inputs("gpt2", seed=0)
    assert_close(output(compiled, x), output(original, x))
