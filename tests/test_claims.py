"""The core path's evidence card: every claim classifies from its stored verdict (never
silently), the words decide the outcome, and a changed stored verdict changes the card."""

from __future__ import annotations

import pytest

from helpers.evidence import claims, runner
from helpers.evidence.claims import (
    CORE_CLAIMS,
    OUTCOMES,
    Claim,
    better_arm,
    evidence_card,
    outcome,
    sentence,
)

STATISTICS_WORDS = ("CI", "interval", "bootstrap", "seed", "censor", "%")


@pytest.mark.parametrize("claim", CORE_CLAIMS, ids=[c.key for c in CORE_CLAIMS])
def test_every_core_claim_classifies_from_a_stored_verdict(claim):
    assert claim.key in runner.load(claim.experiment).verdicts  # none is "not tested" by a typo
    assert outcome(claim) in OUTCOMES[:3]
    said = sentence(claim)
    assert said.startswith(claim.text) and not any(ch.isdigit() for ch in said)
    assert not any(word in said for word in STATISTICS_WORDS)


@pytest.mark.parametrize("words, lower_is_better, arm", [
    ("LN-LSTM needs 88% fewer steps to the threshold than LSTM (95% CI 85% to 90%)", True, "LN-LSTM"),
    ("the opposite of the claim: LayerNorm needs 40% more steps to the threshold than no norm (95% CI 20% to 56%)",
     True, "no norm"),
    ("BatchNorm has 35.7 points lower test accuracy than LayerNorm (95% CI 34.0 to 37.8)", False, "LayerNorm"),
    ("LayerNorm's activation input drifts 92% less in its spread than no norm's (95% CI 89% to 95%), over 17",
     True, "LayerNorm's activation input"),
    ("at batch 2, GroupNorm has 22% lower test error than BatchNorm (95% CI 19% to 27%); means", True, "GroupNorm"),
    ("no difference detectable with 10 seeds: Pre-RMSNorm vs Pre-LN, -3% (95% CI -10% to 6%)", True, None),
])
def test_better_arm_reads_the_verdicts_words(words, lower_is_better, arm):
    assert better_arm(words, lower_is_better) == arm


def test_an_unreadable_verdict_or_an_unnamed_arm_raises(monkeypatch):
    with pytest.raises(ValueError, match="cannot read"):
        better_arm("median 40 steps, 10/10 reached at lr 0.01")
    claim = Claim("x", "small_transformer", "steps, Pre-LN vs no norm", "Post-LN", "12_where_the_norm_goes.ipynb")
    with pytest.raises(ValueError, match="does not name"):
        outcome(claim)
    claim = Claim("x", "step_times", "time per step, Transformer, Pre-LN", "Pre-LN", "12_where_the_norm_goes.ipynb")
    with pytest.raises(ValueError, match="cannot read"):  # "Pre-LN takes 1.22x the time per step of no norm"
        outcome(claim)


def test_a_missing_result_is_not_tested():
    assert outcome(Claim("x", "small_transformer", "no such key", "A", "10_how_a_claim_is_tested.ipynb")) == "not tested"
    assert outcome(Claim("x", "no_such_experiment", "k", "A", "10_how_a_claim_is_tested.ipynb")) == "not tested"


class _Stored:
    def __init__(self, verdicts):
        self.verdicts = verdicts


@pytest.mark.parametrize("claim", CORE_CLAIMS, ids=[c.key for c in CORE_CLAIMS])
def test_changing_one_stored_verdict_changes_its_sentence_on_the_card(monkeypatch, claim):
    before_card, before = evidence_card(), sentence(claim)
    real_load = runner.load
    other = "no norm" if claim.favours != "no norm" else "LayerNorm"
    flipped = {  # a verdict with the other outcome, in the words verdict() writes
        "supported": f"no difference detectable with 10 seeds: {claim.favours} vs {other}, +1% (95% CI -2% to 4%)",
        "undecided": f"{claim.favours} needs 20% {'fewer' if claim.lower_is_better else 'more'} steps than "
                     f"{other} (95% CI 10% to 30%)",
        "refuted": f"{claim.favours} needs 20% {'fewer' if claim.lower_is_better else 'more'} steps than "
                   f"{other} (95% CI 10% to 30%)",
    }[outcome(claim)]

    def load(name, *args, **kwargs):
        stored = real_load(name, *args, **kwargs)
        if name != claim.experiment:
            return stored
        return _Stored({**stored.verdicts, claim.key: flipped})

    monkeypatch.setattr(claims.runner, "load", load)
    after = sentence(claim)
    assert after != before and after.startswith(claim.text)
    card = evidence_card()
    assert card != before_card and after.replace("'", "&#x27;") in card


def test_the_card_links_each_claim_to_its_deep_dive():
    card = evidence_card()
    for claim in CORE_CLAIMS:
        assert f'<a href="{claim.deep_dive}">' in card
        assert claim.deep_dive[:2] in {"10", "11", "12", "13", "14", "15", "16"}
