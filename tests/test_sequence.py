"""helpers.lessons.sequence: reduced dims, padding, the masked LN, the dependency measures, the causal block."""

from __future__ import annotations

import math

import pytest
import torch
import torch.nn.functional as F
from hypothesis import given, settings
from hypothesis import strategies as st

from helpers.lessons.sequence import (
    CausalBlock,
    dependency_matrix,
    future_leak,
    masked_layer_norm,
    output_change,
    pad_batch,
    reduced_dims,
)


def _randn(*shape, seed=0, dtype=torch.float32):
    return torch.randn(*shape, generator=torch.Generator().manual_seed(seed), dtype=dtype)


def _per_token(x):
    return F.layer_norm(x, x.shape[-1:])


def _per_sentence(x):
    return F.layer_norm(x, x.shape[-2:])


# ---------------------------------------------------------------- reduced_dims


@pytest.mark.parametrize("ndim, shape, dims", [
    (3, 4, (2,)), (3, (4,), (2,)), (3, (3, 4), (1, 2)), (3, (2, 3, 4), (0, 1, 2)),
    (4, (5,), (3,)), (2, [7, 8], (0, 1)), (3, torch.Size([3, 4]), (1, 2)),
])
def test_reduced_dims_are_the_trailing_ones(ndim, shape, dims):
    assert reduced_dims(ndim, shape) == dims


# ---------------------------------------------------------------- pad_batch


def test_pad_batch_pads_at_the_end_and_marks_the_real_tokens():
    a, b = _randn(3, 2, seed=1), _randn(1, 2, seed=2)
    padded, mask = pad_batch([a, b], padding_value=-9.0)
    assert padded.shape == (2, 3, 2) and mask.shape == (2, 3) and mask.dtype == torch.bool
    assert torch.equal(padded[0], a) and torch.equal(padded[1, 0], b[0])
    assert torch.equal(padded[1, 1:], torch.full((2, 2), -9.0))
    assert mask.tolist() == [[True, True, True], [True, False, False]]


# ---------------------------------------------------------------- masked_layer_norm


@settings(max_examples=60, deadline=None)
@given(lengths=st.lists(st.integers(1, 6), min_size=1, max_size=4), dim=st.integers(1, 6),
       pad=st.sampled_from([0.0, 7.0, -3.5]), seed=st.integers(0, 2**16))
def test_masked_ln_is_ln_of_each_sentence_without_its_pads(lengths, dim, pad, seed):
    sentences = [_randn(n, dim, seed=seed + i, dtype=torch.float64) for i, n in enumerate(lengths)]
    padded, mask = pad_batch(sentences, padding_value=pad)
    y = masked_layer_norm(padded, mask)
    for b, (sentence, n) in enumerate(zip(sentences, lengths, strict=True)):
        torch.testing.assert_close(y[b, :n], F.layer_norm(sentence, (n, dim)), atol=1e-9, rtol=1e-9)
        assert torch.equal(y[b, n:], torch.zeros(padded.shape[1] - n, dim, dtype=torch.float64))


def test_masked_ln_pads_are_positive_zero_and_any_mask_pattern_works():
    x = _randn(2, 5, 3, seed=3)
    mask = torch.tensor([[False, True, True, False, True], [True, True, True, True, True]])
    y = masked_layer_norm(x, mask)
    real = x[0, mask[0]]
    torch.testing.assert_close(y[0, mask[0]], F.layer_norm(real, real.shape))
    assert torch.equal(y[0, ~mask[0]], torch.zeros(2, 3)) and not torch.signbit(y[0, ~mask[0]]).any()
    torch.testing.assert_close(y[1], F.layer_norm(x[1], (5, 3)))  # no pad: plain per-sentence LN


def test_plain_per_sentence_ln_is_changed_by_padding_and_masked_ln_is_not():
    sentence = _randn(2, 4, seed=4)
    padded, mask = pad_batch([_randn(3, 4, seed=5), sentence])
    alone = F.layer_norm(sentence, (2, 4))
    assert (F.layer_norm(padded, (3, 4))[1, :2] - alone).abs().max() > 0.1
    torch.testing.assert_close(masked_layer_norm(padded, mask)[1, :2], alone)


def test_non_finite_pads_stay_out():
    x = _randn(1, 3, 4, seed=6)
    x[0, 2] = torch.tensor([math.nan, math.inf, -math.inf, 1e30])
    mask = torch.tensor([[True, True, False]])
    y = masked_layer_norm(x, mask)
    assert torch.isfinite(y).all()
    torch.testing.assert_close(y[0, :2], F.layer_norm(x[0, :2], (2, 4)))


def test_half_precision_is_accumulated_in_float32_and_returned_as_half():
    x, mask = _randn(2, 4, 8, seed=7) * 3 + 100, torch.tensor([[True] * 4, [True, True, False, False]])
    y = masked_layer_norm(x.half(), mask)
    assert y.dtype == torch.float16
    torch.testing.assert_close(y.float(), masked_layer_norm(x.half().float(), mask), atol=2e-3, rtol=2e-3)


def test_masked_ln_gradient_matches_ln_of_the_unpadded_sentence():
    sentence = _randn(2, 3, seed=8, dtype=torch.float64).requires_grad_()
    padded = torch.cat([sentence, torch.zeros(1, 3, dtype=torch.float64)])[None]
    mask = torch.tensor([[True, True, False]])
    weights = _randn(2, 3, seed=9, dtype=torch.float64)
    (grad_masked,) = torch.autograd.grad((masked_layer_norm(padded, mask)[0, :2] * weights).sum(), sentence)
    (grad_alone,) = torch.autograd.grad((F.layer_norm(sentence, (2, 3)) * weights).sum(), sentence)
    torch.testing.assert_close(grad_masked, grad_alone)
    padded_leaf = padded.detach().requires_grad_()
    assert torch.autograd.gradcheck(lambda t: masked_layer_norm(t, mask), (padded_leaf,))


# ---------------------------------------------------------------- dependency_matrix, future_leak


def test_dependency_matrix_of_a_per_position_linear_map_is_its_norm_on_the_diagonal():
    weight = _randn(4, 4, seed=10, dtype=torch.float64)
    deps = dependency_matrix(lambda x: x @ weight, _randn(3, 4, seed=11, dtype=torch.float64))
    torch.testing.assert_close(deps, torch.eye(3, dtype=torch.float64) * weight.norm())


def test_dependency_matrix_of_a_position_mixing_map_reads_the_mixing_weights():
    mixing = _randn(3, 3, seed=12, dtype=torch.float64)  # out_i = sum_j mixing[i, j] * in_j
    deps = dependency_matrix(lambda x: mixing @ x, _randn(3, 5, seed=13, dtype=torch.float64))
    torch.testing.assert_close(deps, mixing.abs() * math.sqrt(5))  # a scaled identity per block


def test_per_token_ln_depends_on_its_own_token_only_and_per_sentence_on_all():
    sentence = _randn(5, 4, seed=14)
    token, whole = dependency_matrix(_per_token, sentence), dependency_matrix(_per_sentence, sentence)
    off_diagonal = ~torch.eye(5, dtype=torch.bool)
    assert torch.equal(token[off_diagonal], torch.zeros(20)) and (token.diagonal() > 0).all()
    assert (whole > 1e-3).all()
    assert future_leak(token) == 0.0 and future_leak(whole) > 0.1


def test_future_leak_is_the_largest_entry_above_the_diagonal():
    m = torch.tensor([[1.0, 0.2, 0.7], [9.0, 1.0, 0.1], [9.0, 9.0, 1.0]])
    assert future_leak(m) == pytest.approx(0.7)
    assert future_leak(torch.tril(torch.ones(4, 4))) == 0.0
    assert future_leak(torch.ones(1, 1)) == 0.0


# ---------------------------------------------------------------- output_change


def test_replacing_the_last_token_moves_only_it_per_token_and_everything_per_sentence():
    x, new = _randn(2, 4, 3, seed=15), torch.tensor([2.0, -1.0, 0.5])
    token, whole = output_change(_per_token, x, new), output_change(_per_sentence, x, new)
    assert token.shape == whole.shape == (2, 4)
    assert torch.equal(token[:, :-1], torch.zeros(2, 3)) and (token[:, -1] > 0.1).all()
    assert (whole > 1e-3).all()


def test_output_change_takes_a_position_and_one_token_per_sentence():
    x = _randn(2, 4, 3, seed=16)
    new = torch.stack([x[0, 1], x[1, 1] + torch.tensor([1.0, 0.0, 0.0])])  # sentence 0: unchanged
    change = output_change(_per_token, x, new, position=1)
    assert torch.equal(change[0], torch.zeros(4))
    assert change[1, 1] > 0.1 and torch.equal(change[1, [0, 2, 3]], torch.zeros(3))


# ---------------------------------------------------------------- CausalBlock


@pytest.mark.parametrize("seq_len, seed", [(3, 0), (6, 1), (9, 2)])
def test_a_causal_block_with_per_token_ln_is_causal_and_with_per_sentence_ln_is_not(seq_len, seed):
    sentence = _randn(seq_len, 8, seed=seed)
    token = dependency_matrix(CausalBlock(8, seq_len, "token", seed=seed), sentence)
    whole = dependency_matrix(CausalBlock(8, seq_len, "sentence", seed=seed), sentence)
    assert future_leak(token) == 0.0 and (token.diagonal() > 0).all()
    assert future_leak(whole) > 1e-2
    assert (torch.tril(token, -1)[1:, 0] > 0).all()  # and the past does reach it


def test_without_the_mask_even_per_token_would_leak():
    block = CausalBlock(4, 3, "token")

    def unmasked(x):  # CausalBlock.forward without its causal mask
        q, k, v = block.qkv(block.norm(x)).chunk(3, dim=-1)
        return x + block.proj((q @ k.transpose(-2, -1) / math.sqrt(4)).softmax(dim=-1) @ v)

    sentence = _randn(3, 4, seed=3)
    assert future_leak(dependency_matrix(unmasked, sentence)) > 1e-3
    assert future_leak(dependency_matrix(block, sentence)) == 0.0


def test_per_token_block_outputs_of_a_prefix_do_not_change_when_a_token_is_appended():
    block, x = CausalBlock(4, 5, "token", seed=4), _randn(2, 5, 4, seed=5)
    torch.testing.assert_close(block(x[:, :3]), block(x)[:, :3], atol=1e-6, rtol=0)
    with pytest.raises(RuntimeError):
        CausalBlock(4, 5, "sentence")(x[:, :3])  # a (5, 4) LayerNorm refuses 3 tokens


def test_blocks_share_weights_by_seed_and_leave_the_global_rng_alone():
    state = torch.random.get_rng_state()
    a, b = CausalBlock(4, 3, "token", seed=7), CausalBlock(4, 3, "sentence", seed=7)
    assert torch.equal(torch.random.get_rng_state(), state)
    assert torch.equal(a.qkv.weight, b.qkv.weight) and torch.equal(a.proj.bias, b.proj.bias)
    assert not torch.equal(a.qkv.weight, CausalBlock(4, 3, "token", seed=8).qkv.weight)
    assert a.norm.normalized_shape == (4,) and b.norm.normalized_shape == (3, 4)


# ---------------------------------------------------------------- the closed-form Jacobian norm


@pytest.mark.parametrize("n, scale, eps", [(4, 1.0, 1e-5), (4, 0.003, 1e-5), (7, 0.3, 1e-5), (16, 2.0, 0.1)])
def test_token_jacobian_norm_is_the_diagonal_of_the_autograd_dependency_matrix(n, scale, eps):
    from helpers.lessons.sequence import dependency_matrix, token_jacobian_norm

    sentence = torch.randn(5, n, generator=torch.Generator().manual_seed(n), dtype=torch.float64) * scale + 1
    deps = dependency_matrix(lambda x: F.layer_norm(x, (n,), eps=eps), sentence)
    assert torch.allclose(token_jacobian_norm(sentence, eps), deps.diagonal(), rtol=1e-9)
    assert torch.equal(deps - torch.diag(deps.diagonal()), torch.zeros(5, 5, dtype=torch.float64))


def test_token_jacobian_norm_tends_to_sqrt_n_minus_2_over_sigma():
    from helpers.lessons.sequence import token_jacobian_norm

    x = torch.randn(3, 8, generator=torch.Generator().manual_seed(0), dtype=torch.float64) * 5
    var = x.var(-1, unbiased=False)
    assert torch.allclose(token_jacobian_norm(x), math.sqrt(6) / torch.sqrt(var + 1e-5), rtol=1e-9)
    constant = torch.full((1, 4), 3.0, dtype=torch.float64)  # var 0, r = 0: sqrt(n - 1) / sqrt(eps)
    assert token_jacobian_norm(constant).item() == pytest.approx(math.sqrt(3) / math.sqrt(1e-5))
