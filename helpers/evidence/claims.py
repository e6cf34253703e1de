"""The lesson's claims against the stored verdicts: one plain outcome per claim, and the ledgers.

A :class:`Claim` names the stored verdict that speaks to it (experiment and key), what it claims
(that one arm comes out better, that two are the same, that one is at least as good, or the answer
to a yes / no question) and which arm it favours. :func:`outcome` takes that verdict's record
(:class:`helpers.evidence.verdicts.Verdict`): which arm its interval favours, whether the interval
lies within or beyond the equivalence margin, or the answer the experiment computed; it never reads
the words. It returns ``"supported"``, ``"refuted"`` or ``"undecided"`` (``"not tested"`` when no
stored result holds the key). A record of the wrong kind, or one that does not name the arm the
claim favours, raises: no claim is ever classified silently. It is the one place where a claim
meets its verdict: the deep dives' ledgers (:func:`claims_ledger`, which also correct a ledger's
comparisons for their number: :func:`ledger_outcomes`) and the core path's card
(:mod:`helpers.evidence.card`) both call it.

Deep dives whose claims rest on computations in the notebook itself (an identity checked against
torch, a measured error against its bound) rather than on a stored experiment use
:func:`evidence_ledger`: each row's outcome is :func:`outcome` for a stored verdict, :func:`checked`
for a check evaluated in the notebook (``"supported"`` when it holds, ``"refuted"`` when it does
not, so a changed result changes the word), and ``"not tested"`` for a claim that rests on a
citation alone.

"""

from __future__ import annotations

import math
from collections.abc import Iterable
from dataclasses import dataclass

import pandas as pd

from helpers.evidence import runner
from helpers.evidence.verdicts import Verdict

OUTCOMES = ("supported", "refuted", "undecided", "not tested", "consistent", "assumptions not met")

#: What a claim can say (:class:`Claim`'s ``kind``).
KINDS = ("better", "same", "at least as good", "answer", "level", "bound")

#: The family-wise level of each ledger's correction for multiplicity (:func:`helpers.evidence.statistics.holm`).
ALPHA = 0.05


@dataclass(frozen=True)
class Claim:
    """One claim and the stored verdict that speaks to it.

    Args:
        text: the claim in plain words: a :class:`~helpers.language.Text` (English and Chinese), no
            number, for every claim on the card.
        experiment: the stored experiment's name (:func:`helpers.evidence.runner.load`).
        key: the verdict's key in that experiment.
        favours: the arm the claim says comes out better (for ``"same"``: one of the two arms), as
            the verdict names it; ignored for ``"answer"`` and ``"level"``.
        deep_dive: the notebook that shows the evidence, e.g. ``"13_does_it_speed_up_training.ipynb"``.
        kind: what is claimed, one of :data:`KINDS`:

            - ``"better"`` (the default): ``favours`` comes out better (by the measure's own
              direction, which the record states). Supported when the interval lies on its side of
              0, refuted when it lies on the other side or within the equivalence margin, undecided
              when it holds 0.
            - ``"same"``: the two arms are the same. Supported only when the whole interval lies
              within the equivalence margin fixed before the run; refuted when a difference is
              detected and the interval lies wholly beyond the margin (or no margin was declared);
              undecided otherwise.
            - ``"at least as good"``: ``favours`` is better or the same: supported when it comes out
              better or the two are the same within the margin; refuted as for ``"same"`` when the
              other arm comes out better; undecided otherwise.
            - ``"answer"``: the record answers a yes / no question: supported where its answer is
              ``expects``, refuted where it is the other, undecided where it has none.
            - ``"level"``: the verdict states a level without an interval (e.g. on 3 pilot seeds):
              undecided, whatever it says.
            - ``"bound"``: a theorem's bound, checked by an answer record (does the measurement lie
              within it?): ``"assumptions not met"`` where the model breaks the theorem's
              assumptions (``assumptions_met=False``), whatever the record says; otherwise
              ``"consistent"``, or ``"refuted"`` where the record answers no. A model outside a
              theorem's assumptions never refutes it.

            A detected difference decides a comparison claim only where it survives Holm's correction
            over the ledger's comparisons (:func:`ledger_outcomes`) and carries no weak flag (smaller
            than the experiment resolves, fragile, resting on one seed:
            :data:`helpers.evidence.verdicts.WEAK_FLAGS`); otherwise it is read as no difference.
        expects: the answer an ``"answer"`` claim expects, ``"yes"`` (the default) or ``"no"``.
        assumptions_met: for a ``"bound"``, whether the model meets the theorem's assumptions.
    """

    text: str
    experiment: str
    key: str
    favours: str = ""
    deep_dive: str = ""
    kind: str = "better"
    expects: str = "yes"
    assumptions_met: bool = True

    def __post_init__(self):
        if self.kind not in KINDS:
            raise ValueError(f"Claim(): argument 'kind' must be one of {KINDS}, got {self.kind!r}")
        if self.kind in ("better", "same", "at least as good") and not self.favours:
            raise ValueError(f"Claim(): a {self.kind!r} claim needs the arm it favours (argument 'favours'); "
                             f"{self.text!r} has none")
        if self.expects not in ("yes", "no"):
            raise ValueError(f"Claim(): argument 'expects' must be 'yes' or 'no', got {self.expects!r}")


def _record(claim: Claim) -> Verdict | None:
    """The stored record for ``claim``, or None when no stored result holds it."""
    try:
        return runner.records(claim.experiment).get(claim.key)
    except FileNotFoundError:
        return None


def outcome(claim: Claim) -> str:
    """``claim``'s outcome against its stored verdict, on its own (see :class:`Claim` for each kind):
    ``"not tested"`` when no stored result holds it. In a ledger, :func:`ledger_outcomes` corrects a
    comparison for the others. Raises ValueError when the record is not of the kind the claim needs,
    or does not name the arm the claim favours."""
    record = _record(claim)
    return "not tested" if record is None else decide(claim, record)


def decide(claim: Claim, record: Verdict, holds: bool = True) -> str:
    """``claim``'s outcome on ``record``, from the record's numbers alone (never its words). ``holds``:
    whether the record's difference survives the ledger's correction for multiplicity."""
    if claim.kind == "level":
        return "undecided"
    if claim.kind in ("answer", "bound"):
        if record.kind != "answer":
            raise ValueError(f"outcome(): {claim.experiment}: {claim.key!r} is a {record.kind}, not an answer")
        if claim.kind == "bound":
            if not claim.assumptions_met:
                return "assumptions not met"
            return "refuted" if record.answer == "no" else "consistent"
        if record.answer is None:
            return "undecided"
        return "supported" if record.answer == claim.expects else "refuted"
    if record.kind != "comparison":
        raise ValueError(f"outcome(): {claim.experiment}: {claim.key!r} is a {record.kind}, not a comparison: "
                         f"{record.words!r}")
    if claim.favours not in (record.a, record.b):
        raise ValueError(f"outcome(): the claim favours {claim.favours!r}, which the verdict for "
                         f"{claim.experiment}: {claim.key!r} does not compare: {record.a!r} vs {record.b!r}")
    if not record.agree:
        return "undecided"  # the declared measures disagree: it depends on the measure
    if record.same:
        return "refuted" if claim.kind == "better" else "supported"
    if record.favoured is None or record.weak or not holds:
        return "undecided"  # nothing detected (or too weakly, or not after the correction), or no interval
    if claim.kind == "better":
        return "supported" if record.favoured == claim.favours else "refuted"
    if claim.kind == "at least as good" and record.favoured == claim.favours:
        return "supported"
    # a difference, against the claim of sameness: refuted only where it lies wholly beyond the margin
    return "refuted" if record.beyond_margin or record.margin is None else "undecided"


def _stored(claim: Claim) -> Verdict:
    """``claim``'s stored record. Raises KeyError when no stored result holds the key (a ledger row is
    never silently "not tested" by a typo)."""
    record = _record(claim)
    if record is None:
        stored = runner.records(claim.experiment)
        raise KeyError(f"experiment {claim.experiment!r} stores no verdict {claim.key!r}; it stores "
                       f"{len(stored)}, e.g. {sorted(stored)[:3]}")
    return record


def _in_family(claim: Claim, record: Verdict) -> bool:
    """Whether ``claim`` is one of its ledger's tests of a difference: a comparison with a p-value
    (under every measure it declares)."""
    return claim.kind in ("better", "same", "at least as good") and record.p_all is not None


def ledger_outcomes(claims: Iterable[Claim]) -> list[tuple[str, bool | None]]:
    """Each claim's outcome within its ledger, and whether its difference holds after Holm's correction
    over the ledger's comparisons (the family: every claim whose record is a comparison with a
    p-value; :func:`helpers.evidence.statistics.holm` at :data:`ALPHA`); None for a claim outside the
    family. A claim's outcome takes its difference as detected only where it holds."""
    from helpers.evidence.statistics import holm

    claims = list(claims)
    records = [_stored(claim) for claim in claims]
    members = [i for i, (c, r) in enumerate(zip(claims, records, strict=True)) if _in_family(c, r)]
    rejected = dict(zip(members, holm([records[i].p_all for i in members], ALPHA), strict=True))
    return [(decide(c, r, rejected.get(i, True)), bool(rejected[i]) if i in rejected else None)
            for i, (c, r) in enumerate(zip(claims, records, strict=True))]


def _holm_words(record: Verdict, holds: bool | None) -> str:
    """The Holm column of a ledger row: a member's difference, detected or not after the correction."""
    if holds is None:
        return ""
    if record.direction is None:
        return "no difference at 95%"
    return "holds" if holds else "does not hold"


def _holm_column(n: int) -> str:
    return f"difference after Holm ({n} test{'' if n == 1 else 's'})"


def claims_ledger(rows: Iterable[Claim | tuple]) -> pd.DataFrame:
    """A notebook's claims ledger: for each claim of ``rows`` (a :class:`Claim`, or a tuple of its
    first arguments, ``(text, experiment, key, favours)``), its outcome within the ledger
    (:func:`ledger_outcomes`), the stored verdict word for word, whether its difference holds after
    Holm's correction over the ledger's comparisons (the column names their number), and where it is
    stored. Returns one row per claim, indexed by ``claim``, columns ``outcome``, ``verdict``, the Holm
    column and ``stored result`` (``experiment: "key"``). A key that no stored result holds raises (a
    ledger row is never silently "not tested" by a typo)."""
    claims = [row if isinstance(row, Claim) else Claim(*row) for row in rows]
    decided = ledger_outcomes(claims)
    holm_column = _holm_column(sum(holds is not None for _, holds in decided))
    out = [{"claim": claim.text, "outcome": said, "verdict": _stored(claim).words,
            holm_column: _holm_words(_stored(claim), holds), "stored result": f'{claim.experiment}: "{claim.key}"'}
           for claim, (said, holds) in zip(claims, decided, strict=True)]
    return pd.DataFrame(out, columns=["claim", "outcome", "verdict", holm_column, "stored result"]).set_index("claim")


@dataclass(frozen=True)
class Check:
    """A claim's check, computed in the notebook: whether it holds, and what was measured.

    Args:
        holds: the check's result: a bool, a NumPy bool or a one-element bool tensor, computed
            in the cell from the notebook's own results (never typed in).
        measured: the measured number(s) the check read, in words (e.g. ``"ratio 0.98 to 1.03"``),
            shown beside the outcome; may be empty.
    """

    holds: object
    measured: str = ""


def checked(holds) -> str:
    """``"supported"`` when a check computed in the notebook holds, ``"refuted"`` when it does not.

    ``holds`` is a bool, a NumPy bool or a one-element bool tensor (``torch.equal(...)``,
    ``(errors < bound).all()``). Anything else raises TypeError: a number, a string or a
    many-element tensor is not the result of a check, and reading its truth would hide that."""
    if isinstance(holds, Check):
        holds = holds.holds
    if hasattr(holds, "dtype") and hasattr(holds, "shape"):  # a NumPy scalar or array, a torch tensor
        if str(holds.dtype) not in ("bool", "torch.bool") or math.prod(holds.shape) != 1:
            raise TypeError(f"checked(): argument 'holds' must be a bool or a one-element bool array or tensor, "
                            f"got dtype {holds.dtype} of shape {tuple(holds.shape)}")
        holds = bool(holds.item())
    if not isinstance(holds, bool):
        raise TypeError(f"checked(): argument 'holds' must be a bool (the result of a check), "
                        f"got {type(holds).__name__} {holds!r}")
    return "supported" if holds else "refuted"


def evidence_ledger(rows: Iterable[tuple]) -> pd.DataFrame:
    """A deep dive's claims ledger when its evidence is of three kinds: stored verdicts,
    computations in the notebook, and citations.

    Each row of ``rows`` is ``(claim, evidence, shown in)``: the claim in words, its evidence, and
    where the notebook (or a cited source) shows it. The evidence decides the outcome:

    - a :class:`Claim`: its stored verdict, decided within the ledger's stored claims as
      :func:`claims_ledger` decides it (Holm's correction over them; a key that no stored result holds
      raises); the evidence column gives the verdict's words and, for a comparison, whether its
      difference holds after the correction;
    - a :class:`Check`, or the bare result of a check: :func:`checked`; the evidence column gives
      what was measured;
    - ``None``: nothing here tests the claim (it rests on a citation): ``"not tested"``.

    Returns one row per claim, indexed by ``claim``, columns ``outcome``, ``evidence`` and
    ``shown in``."""
    rows = list(rows)
    for row in rows:
        if not isinstance(row, tuple) or len(row) != 3:
            raise ValueError(f"evidence_ledger(): each row must be a tuple (claim, evidence, shown in), got {row!r}")
    stored = [evidence for _, evidence, _ in rows if isinstance(evidence, Claim)]
    decided = dict(zip(map(id, stored), ledger_outcomes(stored), strict=True))
    tests = sum(holds is not None for _, holds in decided.values())
    out = []
    for text, evidence, shown_in in rows:
        if isinstance(evidence, Claim):
            said, holds = decided[id(evidence)]
            record = _stored(evidence)
            after = f" ({_holm_column(tests)}: {_holm_words(record, holds)})" if holds is not None else ""
            words = f'{evidence.experiment}: "{evidence.key}": {record.words}{after}'
        elif evidence is None:
            said, words = "not tested", ""
        else:
            check = evidence if isinstance(evidence, Check) else Check(evidence)
            said, words = checked(check.holds), check.measured or "computed in this notebook"
        out.append({"claim": text, "outcome": said, "evidence": words, "shown in": shown_in})
    return pd.DataFrame(out, columns=["claim", "outcome", "evidence", "shown in"]).set_index("claim")
