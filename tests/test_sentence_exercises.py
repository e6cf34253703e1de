"""LayerNorm per sentence by hand (core notebook 01) and masked over a padded batch (deep dive 16):
the right answers pass, each known slip gets its own hint."""

from __future__ import annotations

import pytest
import torch

from helpers.exercises import checking
from helpers.exercises.layer_norm import check_sentence_layer_norm
from helpers.lessons.sequence import check_masked_sentence_layer_norm, masked_layer_norm

SENTENCE = checking._REGISTRY["sentence_layer_norm"]
MASKED = checking._REGISTRY["masked_sentence_layer_norm"]


def test_both_exercises_are_registered():
    assert {"sentence_layer_norm", "masked_sentence_layer_norm"} <= set(sorted(checking._REGISTRY))


# ---------------------------------------------------------------- per-sentence LN


def test_a_right_sentence_layer_norm_passes_every_case():
    def mine(x, eps=1e-5):
        mean = x.mean(dim=(1, 2), keepdim=True)
        var = ((x - mean) ** 2).mean(dim=(1, 2), keepdim=True)
        return (x - mean) / torch.sqrt(var + eps)

    verdict = check_sentence_layer_norm(mine)
    assert verdict and verdict.message.startswith("✅")
    assert verdict.table["ok"].all() and len(verdict.table) == len(SENTENCE.cases) == 5


def test_the_cases_vary_batch_length_and_dim():
    shapes = [tuple(args[0].shape) for args in SENTENCE.inputs()]
    assert shapes == [(2, 3, 4), (3, 5, 8), (1, 7, 4), (2, 4, 8), (2, 3, 4)]


@pytest.mark.parametrize("hint", list(SENTENCE.mistakes))
def test_each_known_slip_gets_its_hint(hint):
    verdict = check_sentence_layer_norm(SENTENCE.mistakes[hint])
    assert not verdict and hint in verdict.message


def test_a_hard_coded_eps_fails_on_the_case_that_passes_eps_and_says_so():
    def fixed(x, eps=1e-5):
        mean = x.mean(dim=(1, 2), keepdim=True)
        var = ((x - mean) ** 2).mean(dim=(1, 2), keepdim=True)
        return (x - mean) / torch.sqrt(var + 1e-5)  # the argument ignored

    verdict = check_sentence_layer_norm(fixed)
    assert not verdict and "eps = 0.1 passed in" in verdict.message and "whatever eps is passed" in verdict.message
    assert verdict.table["ok"].tolist() == [True, True, True, True, False]


def test_the_lessons_hard_coded_view_fails_on_a_batch_of_three_and_says_what_to_try():
    def lesson(x):
        mean = torch.mean(x, dim=(1, 2))
        var = torch.var(x, dim=(1, 2), unbiased=False)
        return (x - mean.view(2, 1, 1)) / torch.sqrt(var.view(2, 1, 1) + 1e-5)

    verdict = check_sentence_layer_norm(lesson)
    assert not verdict
    assert "case '3 sentences of 5 tokens" in verdict.message and "raised RuntimeError" in verdict.message
    assert "`torch.rand(3, 5, 4)`" in verdict.message
    assert verdict.table["ok"].tolist() == [True, False, False, True, False]  # right on batches of 2, but eps fixed


# ---------------------------------------------------------------- masked per-sentence LN


def test_the_reference_and_a_hand_written_masked_ln_pass():
    def mine(x, mask, eps=1e-5):
        real = mask[..., None]
        count = real.sum(dim=(1, 2), keepdim=True) * x.shape[-1]
        mean = torch.where(real, x, 0.0).sum(dim=(1, 2), keepdim=True) / count
        centred = torch.where(real, x - mean, 0.0)
        var = (centred ** 2).sum(dim=(1, 2), keepdim=True) / count
        return centred / torch.sqrt(var + eps)

    assert "hands in the answer" in check_masked_sentence_layer_norm(masked_layer_norm).message
    verdict = check_masked_sentence_layer_norm(mine)
    assert verdict and len(verdict.table) == 4


def test_the_masked_cases_have_pads_of_zero_and_of_seven_and_one_has_none():
    inputs = MASKED.inputs()
    masks = [mask for _, mask in inputs]
    assert [m.sum(dim=1).tolist() for m in masks] == [[3, 2], [5, 1, 3], [2, 4], [3, 3]]
    x, mask = inputs[2]
    assert torch.equal(x[~mask], torch.full_like(x[~mask], 7.0))
    assert masks[3].all()


@pytest.mark.parametrize("hint", list(MASKED.mistakes))
def test_each_masked_slip_gets_its_hint(hint):
    from test_solutions import _replaying  # the slip written by hand: F.layer_norm refuses to run

    verdict = check_masked_sentence_layer_norm(_replaying(MASKED, MASKED.mistakes[hint]))
    assert not verdict and hint in verdict.message


def test_ignoring_the_mask_is_wrong_even_where_it_looks_right():
    # Without pads, plain per-sentence LN is right: the checker must still fail it elsewhere.
    def per_sentence(x, mask):
        mean = x.mean(dim=(1, 2), keepdim=True)
        return (x - mean) / torch.sqrt(((x - mean) ** 2).mean(dim=(1, 2), keepdim=True) + 1e-5)

    verdict = check_masked_sentence_layer_norm(per_sentence)
    assert verdict.table["ok"].tolist() == [False, False, False, True]


def test_changing_the_inputs_in_place_cannot_spoil_the_check_and_fails_it_with_its_hint():
    reference = masked_layer_norm  # kept before the check: the name itself refuses to run inside it

    def vandal(x, mask):
        y = reference(x, mask)
        x.zero_()
        mask.fill_(True)
        return y

    verdict = check_masked_sentence_layer_norm(vandal)
    assert not verdict and "changed its argument 1 in place" in verdict.message and "x -= mean" in verdict.message
    assert verdict.table["close"].all()  # every output right: the check's own inputs were not spoiled
