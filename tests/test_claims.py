"""Claims against the stored verdicts: every claim classifies from its stored verdict (never
silently), the words decide the outcome for each kind of claim, the deep dives' ledgers carry that
outcome, and a changed stored verdict changes the core path's card. A check computed in a notebook
gives its outcome from its own result, and a claim with no evidence is "not tested"."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from helpers.evidence import claims, runner
from helpers.evidence.claims import (
    CORE_CLAIMS,
    OUTCOMES,
    Check,
    Claim,
    better_arm,
    checked,
    claims_ledger,
    evidence_card,
    evidence_ledger,
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


class _Words:
    """A stand-in for runner.load whose every experiment stores ``{"k": words}``."""

    def __init__(self, words):
        self.verdicts = {"k": words}


def _outcome_of(monkeypatch, words, **claim):
    monkeypatch.setattr(claims.runner, "load", lambda name, *a, **k: _Words(words))
    return outcome(Claim("claim", "any", "k", **claim))


SAME = "the same steps within ±10%: A vs B, +2% (95% CI -3% to 6%)"
NONE = "no difference detectable with 10 seeds: A vs B, -2% (95% CI -12% to 5%); not within the ±10% margin"
A_BEYOND = "A needs 30% fewer steps than B (95% CI 20% to 40%); beyond the ±10% margin"
A_NEAR = "A needs 8% fewer steps than B (95% CI 5% to 12%); not within the ±10% margin"
B_BEYOND = "the opposite of the claim: A needs 30% more steps than B (95% CI 20% to 40%); beyond the ±10% margin"
B_NEAR = "B ends with 8% lower loss than A (95% CI 5% to 12%); not within the ±10% margin"
A_NO_MARGIN = "A needs 3% fewer steps than B (95% CI 1% to 5%)"
B_NO_MARGIN = "B needs 3% fewer steps than A (95% CI 1% to 5%)"


@pytest.mark.parametrize("words, kind, expected", [
    # better: the side of 0 decides; "the same" refutes a claimed difference
    (A_BEYOND, "better", "supported"), (A_NEAR, "better", "supported"), (A_NO_MARGIN, "better", "supported"),
    (B_BEYOND, "better", "refuted"), (B_NO_MARGIN, "better", "refuted"), (NONE, "better", "undecided"),
    (SAME, "better", "refuted"),
    # same: only inside the margin; refuted only wholly beyond it (or with no margin declared)
    (SAME, "same", "supported"), (NONE, "same", "undecided"), (A_NEAR, "same", "undecided"),
    (B_NEAR, "same", "undecided"), (A_BEYOND, "same", "refuted"), (B_BEYOND, "same", "refuted"),
    (A_NO_MARGIN, "same", "refuted"),
    # at least as good: better or the same supports; the other arm better refutes as for "same"
    (SAME, "at least as good", "supported"), (A_NEAR, "at least as good", "supported"),
    (A_NO_MARGIN, "at least as good", "supported"), (NONE, "at least as good", "undecided"),
    (B_NEAR, "at least as good", "undecided"), (B_BEYOND, "at least as good", "refuted"),
    (B_NO_MARGIN, "at least as good", "refuted"),
])
def test_each_kind_of_claim_reads_the_interval_against_its_direction(monkeypatch, words, kind, expected):
    assert _outcome_of(monkeypatch, words, favours="A", kind=kind) == expected


ONE_SEED = "; rests on one seed: without seed 7 the interval includes 0"
SEVERAL = "; rests on single seeds: without any one of seeds 1, 4 or 8 the interval includes 0"
FRAGILE = "; fragile: an interval end rounds to 0 with 10 seeds"


@pytest.mark.parametrize("words", [A_BEYOND, A_NEAR, A_NO_MARGIN, B_BEYOND, B_NEAR, B_NO_MARGIN])
@pytest.mark.parametrize("flag", [ONE_SEED, SEVERAL, FRAGILE + ONE_SEED])
@pytest.mark.parametrize("kind", ["better", "same", "at least as good"])
def test_a_verdict_flagged_as_resting_on_a_seed_keeps_its_outcome(monkeypatch, words, flag, kind):
    assert _outcome_of(monkeypatch, words + flag, favours="A", kind=kind) == \
        _outcome_of(monkeypatch, words, favours="A", kind=kind)


def test_every_stored_verdict_that_rests_on_a_seed_still_reads():
    stored = sorted(path.name.removesuffix(".json") for path in runner.RESULTS_DIR.glob("*.json"))
    flagged = {(name, key): words for name in stored
               for key, words in runner.load(name).verdicts.items() if "; rests on " in words}
    assert flagged  # the stored results hold some
    for (name, key), words in flagged.items():
        unflagged = words.split("; rests on ")[0]
        assert better_arm(words) == better_arm(unflagged), (name, key)


def test_answers_levels_and_empty_comparisons(monkeypatch):
    assert _outcome_of(monkeypatch, "yes, at lr 0.01: it closes 99% of the gap", kind="answer") == "supported"
    assert _outcome_of(monkeypatch, "no, at lr 0.01: it closes 9% of the gap", kind="answer") == "refuted"
    assert _outcome_of(monkeypatch, "undecided with 10 seeds at lr 0.01", kind="answer") == "undecided"
    slope = "Post-LN: slope 0.17 (95% CI 0.13 to 0.22) ...: not consistent with 0 (the interval lies above it)"
    assert _outcome_of(monkeypatch, slope, kind="answer", supports="^$", refutes="not consistent with 0") == "refuted"
    assert _outcome_of(monkeypatch, "no: of the 7 LNs after block 1, 0 S-shaped", kind="answer", supports=r"^no\b",
                       refutes=r"^yes\b") == "supported"
    assert _outcome_of(monkeypatch, "0.03 on 3 pilot seeds: the largest rate", kind="level") == "undecided"
    assert _outcome_of(monkeypatch, "no run of either arm reaches the threshold within 400 steps",
                       favours="A") == "undecided"


def test_a_claim_must_say_what_it_favours():
    with pytest.raises(ValueError, match="'kind' must be one of"):
        Claim("x", "e", "k", "A", kind="roughly")
    with pytest.raises(ValueError, match="needs the arm it favours"):
        Claim("x", "e", "k", kind="same")


def test_the_ledger_gives_each_claim_its_outcome_and_the_stored_words():
    stored = runner.load("small_transformer").verdicts
    key = "steps, Pre-LN vs no norm"
    rows = [("LN speeds a Transformer up", "small_transformer", key, "Pre-LN"),
            Claim("... and it learns", "small_transformer", "learns, Pre-LN", kind="answer")]
    ledger = claims_ledger(rows)
    assert list(ledger.index) == ["LN speeds a Transformer up", "... and it learns"]
    assert list(ledger.columns) == ["outcome", "verdict", "stored result"]
    assert ledger["verdict"].tolist() == [stored[key], stored["learns, Pre-LN"]]
    assert ledger["outcome"].tolist() == [outcome(Claim(*rows[0])), outcome(rows[1])]
    assert ledger["stored result"].iloc[0] == f'small_transformer: "{key}"'
    with pytest.raises(KeyError, match="stores no verdict 'nope'"):
        claims_ledger([("a claim", "small_transformer", "nope", "A")])


@pytest.mark.parametrize("holds, expected", [
    (True, "supported"), (False, "refuted"), (np.bool_(True), "supported"), (np.array([False]), "refuted"),
    (torch.tensor(True), "supported"), (torch.tensor([[False]]), "refuted"),
    (torch.equal(torch.zeros(2), torch.zeros(2)), "supported"), ((torch.arange(3) > 1).all(), "refuted"),
    (Check(np.float64(0.5) < 1, "0.5"), "supported"), (Check(False), "refuted"),
])
def test_a_check_gives_supported_when_it_holds_and_refuted_when_not(holds, expected):
    assert checked(holds) == expected


@pytest.mark.parametrize("holds", [1, 0.0, "yes", None, torch.tensor([True, False]), torch.tensor(1.0),
                                   np.array([1, 0])])
def test_anything_but_the_result_of_a_check_raises(holds):
    with pytest.raises(TypeError, match="argument 'holds' must be a bool"):
        checked(holds)


def test_the_evidence_ledger_reads_each_kind_of_evidence():
    stored = runner.load("small_transformer").verdicts
    key = "steps, Pre-LN vs no norm"
    claim = Claim("x", "small_transformer", key, "Pre-LN")
    errors = torch.tensor([1e-7, 3e-7])
    rows = [("Pre-LN speeds a Transformer up", claim, "section 2"),
            ("the errors stay below 1e-6", Check((errors < 1e-6).all(), f"largest {errors.max():.0e}"), "a cell"),
            ("... and below 1e-7", (errors < 1e-7).all(), "the same cell"),
            ("a cited claim", None, "Ba et al. 2016")]
    ledger = evidence_ledger(rows)
    assert list(ledger.columns) == ["outcome", "evidence", "shown in"]
    assert list(ledger.index) == [r[0] for r in rows]
    assert ledger["outcome"].tolist() == [outcome(claim), "supported", "refuted", "not tested"]
    assert ledger["evidence"].tolist() == [f'small_transformer: "{key}": {stored[key]}', "largest 3e-07",
                                           "computed in this notebook", ""]
    assert ledger["shown in"].tolist() == [r[2] for r in rows]
    with pytest.raises(KeyError, match="stores no verdict 'nope'"):
        evidence_ledger([("a claim", Claim("x", "small_transformer", "nope", "A"), "here")])
    with pytest.raises(ValueError, match=r"\(claim, evidence, shown in\)"):
        evidence_ledger([("a claim", True)])


def test_a_changed_result_changes_the_evidence_ledgers_word(monkeypatch):
    claim = Claim("x", "small_transformer", "steps, Pre-LN vs no norm", "Pre-LN")
    before = evidence_ledger([("c", claim, "s")])["outcome"].iloc[0]
    words = {"supported": "no difference detectable with 10 seeds: Pre-LN vs no norm, +1% (95% CI -2% to 4%)",
             "refuted": "Pre-LN needs 20% fewer steps to the threshold than no norm (95% CI 10% to 30%)",
             "undecided": "Pre-LN needs 20% fewer steps to the threshold than no norm (95% CI 10% to 30%)"}[before]
    monkeypatch.setattr(claims.runner, "load", lambda name, *a, **k: _Words(words))
    after = evidence_ledger([("c", Claim("x", "any", "k", "Pre-LN"), "s")])["outcome"].iloc[0]
    assert after != before
    measured = torch.tensor([0.5, 2.0])
    assert evidence_ledger([("c", (measured < 1).all(), "s")])["outcome"].iloc[0] == "refuted"
    assert evidence_ledger([("c", (measured < 3).all(), "s")])["outcome"].iloc[0] == "supported"
