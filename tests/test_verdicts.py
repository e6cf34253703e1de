"""helpers.evidence.verdicts: a stored verdict is a record of numbers whose words are generated from it.
Every stored record reads back as itself, its stored words and outcome are what its numbers give, and
what it decides (the favoured arm, sameness, the outcome) follows its numbers, never its words."""

from __future__ import annotations

from dataclasses import replace

import pytest

from helpers.evidence import runner
from helpers.evidence.statistics import Interval, verdict
from helpers.evidence.verdicts import Verdict, as_verdict

NAMES = sorted(path.name.removesuffix(".json") for path in runner.RESULTS_DIR.glob("*.json"))


def _records(name):
    return runner.load(name).records.items()


@pytest.mark.parametrize("name", NAMES)
def test_every_stored_record_reads_back_as_itself_and_its_stored_words_are_its_own(name):
    stored = runner.load(name).meta["verdicts"]
    for key, record in _records(name):
        assert Verdict.from_dict(record.to_dict()) == record, key
        assert record.to_dict() == stored[key], key  # words, favoured arm, flags, outcome: as computed now


@pytest.mark.parametrize("name", NAMES)
def test_new_words_keep_what_a_stored_record_decides_and_a_moved_interval_changes_it(name):
    for key, record in _records(name):
        if record.kind == "answer":
            assert replace(record, text="other words").outcome == record.outcome, key
            assert replace(record, answer="no" if record.answer == "yes" else "yes").outcome != record.outcome, key
            continue
        if not record.has_interval:
            continue
        reworded = replace(record, measure="widgets", verb="wants", comparatives=("lower", "higher"),
                           prefix="in short, ", suffix="; and so on", a=record.a, b=record.b)
        assert reworded.words != record.words, key
        decided = (record.favoured, record.same, record.beyond_margin, record.outcome)
        assert (reworded.favoured, reworded.same, reworded.beyond_margin, reworded.outcome) == decided, key
        # the interval mirrored about 0: the other arm comes out better (where one did)
        def mirror(m):
            return replace(m, estimate=-m.estimate, low=-m.high, high=-m.low) if m.has_interval else m

        mirrored = replace(mirror(record), alternates=tuple(mirror(m) for m in record.alternates))
        if record.favoured is not None:
            assert mirrored.favoured == ({record.a, record.b} - {record.favoured}).pop(), key


def test_the_stored_results_hold_every_kind_and_the_claims_kinds_of_comparison():
    kinds = {record.kind for name in NAMES for _, record in _records(name)}
    assert kinds == {"comparison", "answer", "note"}
    outcomes = {record.outcome for name in NAMES for _, record in _records(name) if record.has_interval}
    assert {"supported", "refuted", "undecided", None} <= outcomes


def test_a_record_writes_the_four_kinds_of_sentence_and_decides_from_its_numbers():
    claim = verdict(Interval(0.31, 0.18, 0.41, 10), a="LN", b="no norm", quantity="steps to the threshold")
    assert claim.words == "LN needs 31% fewer steps to the threshold than no norm (95% CI 18% to 41%)"
    assert (claim.direction, claim.favoured, claim.outcome) == ("fewer", "LN", "supported")
    none = verdict(Interval(0.12, -0.05, 0.30, 10), a="LN", b="no norm")
    assert none.words.startswith("no difference detectable with 10 seeds: LN vs no norm, -12%")
    assert (none.direction, none.favoured, none.outcome) == (None, None, "undecided")
    opposite = verdict(Interval(-0.12, -0.20, -0.04, 10), a="LN", b="no norm")
    assert opposite.words.startswith("the opposite of the claim: LN needs 12% more steps")
    assert (opposite.favoured, opposite.outcome) == ("no norm", "refuted")
    same = verdict(Interval(-0.02, -0.06, 0.03, 10), a="A", b="B", claim=None, margin=0.1)
    assert same.words == "the same steps within ±10%: A vs B, +2% (95% CI -3% to 6%)"
    assert (same.same, same.favoured, same.outcome, same.flags) == (True, None, None, ())
    # an end printed as 10% is not inside ±10%, although 0.0996 < 0.1
    edge = verdict(Interval(-0.02, -0.0996, 0.03, 10), a="A", b="B", claim=None, margin=0.1)
    assert not edge.same and edge.flags == (("margin", "not within the ±10% margin"),)


def test_flags_come_from_the_numbers_in_the_words_order():
    record = verdict(Interval(-0.05, -0.12, -0.004, 10, rests_on=("seed 3",)), a="A", b="B", margin=0.1,
                     resolution=(0.06, "one step of the tuning grid"))
    assert [code for code, _ in record.flags] == ["margin", "below resolution", "fragile", "rests on seeds"]
    assert record.words.startswith("the opposite of the claim: A needs 5% more steps than B (95% CI 0% to 12%)")
    assert record.words.endswith("; not within the ±10% margin; smaller than one step of the tuning grid; fragile: "
                                 "an interval end rounds to 0 with 10 seeds; rests on one seed: without seed 3 the "
                                 "interval includes 0")
    wider = replace(record, low=-0.5, high=-0.3, estimate=-0.4)
    assert [code for code, _ in wider.flags] == ["margin", "rests on seeds"]  # beyond: no longer small or fragile
    assert wider.beyond_margin


def test_answers_notes_and_comparisons_without_an_interval():
    assert Verdict.yes_no("yes", "yes: it does").outcome == "supported"
    assert Verdict.yes_no(None, "undecided: it may").outcome == "undecided"
    nothing = Verdict.no_interval("A", "B", "steps", "no run of either arm reaches the threshold within 400 steps")
    assert (nothing.words, nothing.favoured, nothing.outcome, nothing.flags) == (
        "no run of either arm reaches the threshold within 400 steps", None, "undecided", ())
    assert as_verdict("median 40 steps") == Verdict.note("median 40 steps")
    assert Verdict.note("median 40 steps").outcome is None
    assert Verdict.from_dict(nothing.to_dict()) == nothing
