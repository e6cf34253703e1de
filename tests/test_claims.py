"""Claims against the stored verdicts: every claim classifies from its stored verdict's record (never
silently), the record's numbers decide the outcome for each kind of claim (its words never do), the
deep dives' ledgers carry that outcome, and a changed stored verdict changes the core path's card. A
check computed in a notebook gives its outcome from its own result, and a claim with no evidence is
"not tested"."""

from __future__ import annotations

import re
from dataclasses import replace

import numpy as np
import pytest
import torch

from helpers.evidence import claims, ledgers, runner
from helpers.evidence.card import CORE_CLAIMS, CORE_ROWS, card_outcome, cells, evidence_card
from helpers.evidence.claims import (
    OUTCOMES,
    Check,
    Claim,
    checked,
    claims_ledger,
    evidence_ledger,
    ledger_outcomes,
    outcome,
)
from helpers.evidence.verdicts import Verdict

STATISTICS_WORDS = ("CI", "interval", "bootstrap", "seed", "censor", "p-value")


ROW_IDS = [row.claim.key for row in CORE_ROWS]


@pytest.mark.parametrize("row", CORE_ROWS, ids=ROW_IDS)
def test_every_card_row_classifies_from_a_stored_verdict_and_says_its_model_and_size(row):
    claim = row.claim
    assert claim.key in runner.load(claim.experiment).verdicts  # none is "not tested" by a typo
    assert outcome(claim) in OUTCOMES[:3]
    said, setting, verdict = cells(row)
    assert said == claim.text and not any(ch.isdigit() for ch in said)
    assert re.search(r"\d+ (?:layers?|blocks) × (?:width )?\d+", setting), setting  # the model's size
    if card_outcome(claim) in ("supported", "refuted"):  # the outcome, then the effect's size, from the record
        assert re.fullmatch(r"(?:yes|the opposite), (?:about \d+% \w+ .+|LN's accuracy about \d+ percentage points \w+|"
                            r"at the largest rate both ran, about \d+ percentage points \w+ runs train)", verdict), verdict
    else:
        assert verdict == "cannot tell"
    for text in (said, setting, verdict):
        assert not any(word in text for word in STATISTICS_WORDS), text


def test_the_card_opens_with_its_scope_and_keeps_every_row_whatever_its_outcome():
    card = evidence_card()
    assert card.startswith("<p>Scope: tiny models") and "CPU" in card.split("</p>")[0]
    assert card.count("<tr>") == len(CORE_ROWS) + 1
    keys = [(c.experiment, c.key) for c in CORE_CLAIMS]
    for kept in [("lstm_adding", "steps"), ("rnn_regimes", "steps, T 10, hidden 64"),
                 ("deep_transformer", "steps, Pre-LN vs no norm"), ("drift", "activation input: largest unit mean drift, every rate"),
                 ("batch_size", "batch 2: BatchNorm vs LayerNorm"),
                 ("placement_tuned", "final loss, tanh, LN -> act vs act -> LN"),
                 ("placement_tuned", "final loss, relu, LN -> act vs act -> LN"),
                 ("deep_transformer", "steps, Pre-LN vs Post-LN"), ("deep_transformer", "stable seeds at the largest rate both ran, Pre-LN vs no norm")]:
        assert kept in keys, kept


def test_the_cards_model_sizes_are_the_experiments_own():
    from helpers.experiments import (
        deep_transformer,
        drift,
        placement_tuned,
        rnn_regimes,
        text_transformer,
    )

    settings = {row.claim.experiment: row.setting for row in CORE_ROWS}
    assert (f"{text_transformer.BLOCKS} blocks × width {text_transformer.WIDTH}, runs of {text_transformer.STEPS} steps; "
            in settings["text_transformer"])
    assert f"{deep_transformer.BLOCKS} blocks × width {deep_transformer.WIDTH}" in settings["deep_transformer"]
    assert f"copying {deep_transformer.N_COPY} tokens" in settings["deep_transformer"]
    assert (f"{drift.DRIFT_SETTINGS['depth']} layers × {drift.DRIFT_SETTINGS['width']} units"
            in settings["drift"])
    assert f"{placement_tuned.DEPTH} layers × {placement_tuned.WIDTH} units" in settings["placement_tuned"]
    assert "64 units" in settings["rnn_regimes"] and 64 in rnn_regimes.HIDDEN and 10 in rnn_regimes.SEQ_LENS
    assert "sequence of 100" in settings["lstm_adding"]
    # the warm-up claims are deep dive 13's: the short warm-ups these runs afford test speed only
    assert not any("warm-up" in row.claim.key for row in CORE_ROWS)


def test_an_unreadable_verdict_or_an_unnamed_arm_raises(monkeypatch):
    claim = Claim("x", "small_transformer", "steps, Pre-LN vs no norm", "Post-LN", "12_where_the_norm_goes.ipynb")
    with pytest.raises(ValueError, match="does not compare"):
        outcome(claim)
    claim = Claim("x", "step_times", "time per step, Transformer, Pre-LN", "Pre-LN", "12_where_the_norm_goes.ipynb")
    with pytest.raises(ValueError, match="is a note, not a comparison"):  # "Pre-LN takes 1.22x the time per step"
        outcome(claim)
    claim = Claim("x", "small_transformer", "steps, Pre-LN vs no norm", kind="answer")
    with pytest.raises(ValueError, match="is a comparison, not an answer"):
        outcome(claim)


def test_a_missing_result_is_not_tested():
    assert outcome(Claim("x", "small_transformer", "no such key", "A", "10_how_a_claim_is_tested.ipynb")) == "not tested"
    assert outcome(Claim("x", "no_such_experiment", "k", "A", "10_how_a_claim_is_tested.ipynb")) == "not tested"


def _plant(monkeypatch, experiment: str | None, key: str, record: Verdict) -> None:
    """Make ``record`` the stored verdict ``key`` of ``experiment``, beside its other stored ones (of
    every experiment, where ``experiment`` is None: then it is all they store)."""
    real = runner.records

    def records(name, *args, **kwargs):
        if experiment is None:
            return {key: record}
        stored = real(name, *args, **kwargs)
        return {**stored, key: record} if name == experiment else stored

    monkeypatch.setattr(claims.runner, "records", records)


def _flipped(record: Verdict, claim: Claim, said: str | None = None) -> Verdict:
    """``record`` with its interval moved so that ``claim``'s outcome (``said``; default its outcome on
    the card) changes, its words unchanged but for the numbers: no difference where the claim was
    supported, else a clear difference for it."""
    if record.kind == "answer":
        return replace(record, answer={"yes": None, "no": "yes", None: "no"}[record.answer])
    favours_a = claim.favours == record.a
    supported = (card_outcome(claim) if said is None else said) == "supported"
    # a clear difference for the favoured arm: "a has less" (positive relative, negative absolute)
    # where less is better and the claim favours a; unflagged, and far below any Holm threshold
    sign = (1 if record.relative else -1) * (1 if favours_a == record.lower_is_better else -1)
    scale = 1 if record.relative else 100  # an absolute one in points: 20 points, as its words print it

    def moved(measure: Verdict) -> Verdict:  # every declared measure moves alike
        if supported:
            return replace(measure, estimate=0.01 * scale, low=-0.02 * scale, high=0.04 * scale, p=0.5)
        return replace(measure, estimate=sign * 0.2 * scale, low=sign * 0.1 * scale, high=sign * 0.3 * scale,
                       margin=None, p=1e-9, rests_on=(), resolution=None)

    return replace(moved(record), alternates=tuple(moved(m) for m in record.alternates))


DECIDABLE = [row for row in CORE_ROWS if row.claim.kind != "level"]  # a level stays undecided, whatever it says


@pytest.mark.parametrize("row", DECIDABLE, ids=[row.claim.key for row in DECIDABLE])
def test_changing_one_stored_verdict_changes_its_row_on_the_card(monkeypatch, row):
    claim = row.claim
    before_card, before = evidence_card(), cells(row)
    _plant(monkeypatch, claim.experiment, claim.key, _flipped(runner.records(claim.experiment)[claim.key], claim))
    after = cells(row)
    assert after[2] != before[2] and after[0] == claim.text
    card = evidence_card()
    assert card != before_card and after[2] in card


@pytest.mark.parametrize("claim", [row.claim for row in DECIDABLE], ids=[row.claim.key for row in DECIDABLE])
def test_changing_a_verdicts_words_keeps_its_outcome_and_its_interval_decides_it(monkeypatch, claim):
    """No outcome is read from prose: new words on the same numbers keep the outcome; new numbers
    under the same words change it (as its deep dive's ledger decides it, and on its own)."""
    record = runner.records(claim.experiment)[claim.key]
    before = card_outcome(claim), outcome(claim)

    def planted(new):
        _plant(monkeypatch, claim.experiment, claim.key, new)
        return card_outcome(claim), outcome(claim)

    reworded = (replace(record, text="anything at all") if record.kind == "answer" else
                replace(record, measure="widgets", verb="wants", comparatives=("lower", "higher"),
                        prefix="in other words, ", suffix="; and so on"))
    assert reworded.words != record.words
    assert planted(reworded) == before
    assert planted(_flipped(record, claim))[0] != before[0]


def test_the_card_links_each_claim_to_its_deep_dive():
    card = evidence_card()
    for claim in CORE_CLAIMS:
        assert f'<a href="{claim.deep_dive}">' in card
        assert claim.deep_dive[:2] in {"10", "11", "12", "13", "14", "15", "16"}


def _outcome_of(monkeypatch, record, **claim):
    _plant(monkeypatch, None, "k", record)
    return outcome(Claim("claim", "any", "k", **claim))


def _ab(estimate, low, high, margin=0.1, measure="steps", verb="needs", claim="fewer", **more):
    """A relative comparison of A with B (``1 - a / b``: positive where A has less)."""
    return Verdict.comparison(a="A", b="B", measure=measure, estimate=estimate, low=low, high=high, n=10,
                              margin=margin, verb=verb, claim=claim, **more)


# The same names as the words each record writes (what a ledger prints).
SAME = "the same steps within ±10%: A vs B, +2% (95% CI -3% to 6%)"
NONE = "no difference detectable with 10 seeds: A vs B, -2% (95% CI -12% to 5%); not within the ±10% margin"
A_BEYOND = "A needs 30% fewer steps than B (95% CI 20% to 40%); beyond the ±10% margin"
A_NEAR = "A needs 8% fewer steps than B (95% CI 5% to 12%); not within the ±10% margin"
B_BEYOND = "the opposite of the claim: A needs 30% more steps than B (95% CI 20% to 40%); beyond the ±10% margin"
B_NEAR = "B ends with 8% lower loss than A (95% CI 5% to 12%); not within the ±10% margin"
A_NO_MARGIN = "A needs 3% fewer steps than B (95% CI 1% to 5%)"
B_NO_MARGIN = "B needs 3% fewer steps than A (95% CI 1% to 5%)"
RECORDS = {
    SAME: _ab(-0.02, -0.06, 0.03),
    NONE: _ab(0.02, -0.05, 0.12),
    A_BEYOND: _ab(0.30, 0.20, 0.40),
    A_NEAR: _ab(0.08, 0.05, 0.12),
    B_BEYOND: _ab(-0.30, -0.40, -0.20),
    B_NEAR: replace(_ab(0.08, 0.05, 0.12, measure="loss", verb="ends with", comparatives=("lower", "higher")),
                    a="B", b="A"),
    A_NO_MARGIN: _ab(0.03, 0.01, 0.05, margin=None),
    B_NO_MARGIN: replace(_ab(0.03, 0.01, 0.05, margin=None), a="B", b="A"),
}


def test_the_planted_records_write_the_words_they_stand_for():
    for words, record in RECORDS.items():
        assert record.words == words


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
    assert _outcome_of(monkeypatch, RECORDS[words], favours="A", kind=kind) == expected


def test_higher_is_better_favours_the_arm_with_more():
    accuracy = Verdict.comparison(a="BatchNorm", b="LayerNorm", measure="test accuracy", relative=False,
                                  estimate=-36.0, low=-39.0, high=-33.1, n=10, claim=None, lower_is_better=False,
                                  verb="has", comparatives=("points lower", "points higher"), fmt=".1f")
    assert accuracy.words == "BatchNorm has 36.0 points lower test accuracy than LayerNorm (95% CI 33.1 to 39.0)"
    assert accuracy.favoured == "LayerNorm" and replace(accuracy, lower_is_better=True).favoured == "BatchNorm"


ONE_SEED = "; rests on one seed: without seed 7 the interval includes 0"
SEVERAL = "; rests on single seeds: without any one of seeds 1, 4 or 8 the interval includes 0"
FRAGILE = "; fragile: an interval end rounds to 0 with 10 seeds"
_FLAGGED = {ONE_SEED: {"rests_on": ("seed 7",)}, SEVERAL: {"rests_on": ("seed 1", "seed 4", "seed 8")},
            FRAGILE + ONE_SEED: {"rests_on": ("seed 7",), "low": 0.004}}


@pytest.mark.parametrize("words", [A_BEYOND, A_NEAR, A_NO_MARGIN, B_BEYOND, B_NEAR, B_NO_MARGIN])
@pytest.mark.parametrize("flag", [ONE_SEED, SEVERAL, FRAGILE + ONE_SEED])
@pytest.mark.parametrize("kind", ["better", "same", "at least as good"])
def test_a_verdict_flagged_as_resting_on_a_seed_is_undecided(monkeypatch, words, flag, kind):
    """A difference that one seed decides (or whose interval end rounds to 0) decides no claim."""
    record = RECORDS[words]
    fields = dict(_FLAGGED[flag])
    if "low" in fields and record.low < 0:  # the end nearer 0 of an interval below it
        fields.pop("low")
        fields["high"] = -0.004
    flagged = replace(record, **fields)
    assert flag.split("; ")[-1] in flagged.words
    assert flagged.weak and _outcome_of(monkeypatch, flagged, favours="A", kind=kind) == "undecided"
    unflagged = replace(record, rests_on=())  # the interval as it was, no seed deciding it
    assert _outcome_of(monkeypatch, unflagged, favours="A", kind=kind) == \
        _outcome_of(monkeypatch, record, favours="A", kind=kind)


def test_every_stored_verdict_that_rests_on_a_seed_still_reads():
    stored = sorted(path.name.removesuffix(".json") for path in runner.RESULTS_DIR.glob("*.json"))
    flagged = {(name, key): record for name in stored
               for key, record in runner.load(name).records.items()
               if "rests on seeds" in dict(record.flags)}
    assert flagged  # the stored results hold some
    for (name, key), record in flagged.items():
        assert "; rests on " in record.words
        assert record.favoured == replace(record, rests_on=()).favoured, (name, key)


def test_answers_levels_and_empty_comparisons(monkeypatch):
    assert _outcome_of(monkeypatch, Verdict.yes_no("yes", "yes, at lr 0.01: it closes 99% of the gap"),
                       kind="answer") == "supported"
    assert _outcome_of(monkeypatch, Verdict.yes_no("no", "no, at lr 0.01: it closes 9% of the gap"),
                       kind="answer") == "refuted"
    assert _outcome_of(monkeypatch, Verdict.yes_no(None, "undecided with 10 seeds at lr 0.01"),
                       kind="answer") == "undecided"
    no = Verdict.yes_no("no", "no: of the 7 LNs after block 1, 0 S-shaped")
    assert _outcome_of(monkeypatch, no, kind="answer", expects="no") == "supported"
    assert _outcome_of(monkeypatch, Verdict.note("0.03 on 3 pilot seeds: the largest rate"), kind="level") == "undecided"
    nothing = Verdict.no_interval("A", "B", "steps", "no run of either arm reaches the threshold within 400 steps")
    assert _outcome_of(monkeypatch, nothing, favours="A") == "undecided"


def test_a_claim_must_say_what_it_favours():
    with pytest.raises(ValueError, match="'kind' must be one of"):
        Claim("x", "e", "k", "A", kind="roughly")
    with pytest.raises(ValueError, match="needs the arm it favours"):
        Claim("x", "e", "k", kind="same")
    with pytest.raises(ValueError, match="'expects' must be 'yes' or 'no'"):
        Claim("x", "e", "k", kind="answer", expects="maybe")


def test_the_ledger_gives_each_claim_its_outcome_and_the_stored_words():
    stored = runner.load("small_transformer").verdicts
    key = "steps, Pre-LN vs no norm"
    rows = [("LN speeds a Transformer up", "small_transformer", key, "Pre-LN"),
            Claim("... and it learns", "small_transformer", "learns, Pre-LN", kind="answer")]
    ledger = claims_ledger(rows)
    assert list(ledger.index) == ["LN speeds a Transformer up", "... and it learns"]
    assert list(ledger.columns) == ["outcome", "verdict", "difference after Holm (1 test)", "stored result"]
    assert ledger["verdict"].tolist() == [stored[key], stored["learns, Pre-LN"]]
    assert ledger["difference after Holm (1 test)"].tolist() == ["holds", ""]  # a family of one: p < 0.05
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
    assert ledger["evidence"].tolist() == [
        f'small_transformer: "{key}": {stored[key]} (difference after Holm (1 test): holds)', "largest 3e-07",
        "computed in this notebook", ""]
    assert ledger["shown in"].tolist() == [r[2] for r in rows]
    with pytest.raises(KeyError, match="stores no verdict 'nope'"):
        evidence_ledger([("a claim", Claim("x", "small_transformer", "nope", "A"), "here")])
    with pytest.raises(ValueError, match=r"\(claim, evidence, shown in\)"):
        evidence_ledger([("a claim", True)])


def test_a_changed_result_changes_the_evidence_ledgers_word(monkeypatch):
    claim = Claim("x", "small_transformer", "steps, Pre-LN vs no norm", "Pre-LN")
    before = evidence_ledger([("c", claim, "s")])["outcome"].iloc[0]
    record = _flipped(runner.records("small_transformer")[claim.key], claim, before)
    _plant(monkeypatch, None, "k", record)
    after = evidence_ledger([("c", Claim("x", "any", "k", "Pre-LN"), "s")])["outcome"].iloc[0]
    assert after != before
    measured = torch.tensor([0.5, 2.0])
    assert evidence_ledger([("c", (measured < 1).all(), "s")])["outcome"].iloc[0] == "refuted"
    assert evidence_ledger([("c", (measured < 3).all(), "s")])["outcome"].iloc[0] == "supported"


def test_a_ledger_corrects_its_comparisons_with_holm(monkeypatch):
    # three differences, each detected at 95%: p 0.01 <= 0.05/3 holds; p 0.03 > 0.05/2 stops the rest
    planted = {f"k{i}": replace(RECORDS[A_NO_MARGIN], p=p) for i, p in enumerate((0.03, 0.01, 0.04))}
    planted["same"] = replace(RECORDS[SAME], p=0.6)
    planted["answer"] = Verdict.yes_no("yes", "yes")
    monkeypatch.setattr(claims.runner, "records", lambda name, *a, **k: planted)
    rows = [Claim(key, "any", key, "A") for key in ("k0", "k1", "k2")]
    rows += [Claim("same", "any", "same", "A", kind="same"), Claim("answer", "any", "answer", kind="answer")]
    assert [outcome(c) for c in rows] == ["supported"] * 3 + ["supported"] * 2  # each on its own
    assert ledger_outcomes(rows) == [("undecided", False), ("supported", True), ("undecided", False),
                                     ("supported", False), ("supported", None)]
    ledger = claims_ledger(rows)
    column = "difference after Holm (4 tests)"  # the answer is no test of a difference
    assert ledger[column].tolist() == ["does not hold", "holds", "does not hold", "no difference at 95%", ""]
    assert ledger["outcome"].tolist() == ["undecided", "supported", "undecided", "supported", "supported"]
    # alone in its ledger, each difference holds
    assert ledger_outcomes(rows[:1]) == [("supported", True)]


def test_a_weak_difference_decides_nothing_and_a_theorems_bound_is_never_refuted_outside_its_assumptions(
        monkeypatch):
    small = replace(RECORDS[A_NO_MARGIN], resolution=(0.05, "one step of the tuning grid"), p=1e-6)
    assert small.weak and small.outcome == "undecided"
    assert _outcome_of(monkeypatch, small, favours="A") == "undecided"
    assert _outcome_of(monkeypatch, replace(small, resolution=None), favours="A") == "supported"
    outside = Verdict.yes_no("no", "not consistent with 0 (the interval lies above it)")
    assert _outcome_of(monkeypatch, outside, kind="bound", assumptions_met=False) == "assumptions not met"
    assert _outcome_of(monkeypatch, outside, kind="bound") == "refuted"
    assert _outcome_of(monkeypatch, Verdict.yes_no(None, "consistent with 0"), kind="bound") == "consistent"


def test_every_card_row_is_decided_as_its_deep_dives_ledger_decides_it():
    for claim in CORE_CLAIMS:
        family = ledgers.LEDGERS[claim.deep_dive]
        ledger = claims_ledger(family)
        member = next(m for m in family if (m.experiment, m.key) == (claim.experiment, claim.key))
        assert card_outcome(claim) == ledger.loc[member.text, "outcome"], claim.key


def test_the_ledgers_run_over_the_experiments_own_grids():
    from helpers.experiments import (
        batch_size,
        placement_tuned,
        rnn_regimes,
        small_transformer,
        text_transformer,
    )

    assert ledgers._ACTIVATIONS == placement_tuned.ACTIVATIONS
    assert (ledgers._SEQ_LENS, ledgers._HIDDEN) == (rnn_regimes.SEQ_LENS, rnn_regimes.HIDDEN)
    assert ledgers._DYT_ALPHAS == small_transformer.DYT_ALPHAS
    assert [f"DyT, alpha0 {a:g}" for a in ledgers._TEXT_DYT_ALPHAS] == [a for a in text_transformer.ARMS if "DyT" in a]
    assert ledgers._BATCH_SIZES == batch_size.BATCH_SIZES
    for deep_dive, family in ledgers.LEDGERS.items():
        assert all(claim.deep_dive == deep_dive for claim in family)
        assert claims_ledger(family)["verdict"].str.len().gt(0).all()  # every key is stored
