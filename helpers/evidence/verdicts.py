"""Stored verdicts as records: the numbers a verdict rests on, with its words generated from them.

A verdict is data, never prose read back. :class:`Verdict` holds one of three kinds:

- ``"comparison"``: an interval on "A against B" (:func:`helpers.evidence.statistics.verdict` builds
  it from a paired interval): the arms, the measure, the estimate and interval, the number of seeds,
  the direction the claim takes, whether less is better, the equivalence margin and what can flag it.
  Which arm it favours, whether the two are the same within the margin, its flags and its outcome
  are computed from those numbers, and so are its words. A comparison with no interval (neither arm
  got anywhere, or too few seeds) keeps its arms and its reason, and decides nothing.
- ``"answer"``: a yes / no question the experiment answers from its own numbers (``answer`` is
  ``"yes"``, ``"no"`` or ``None`` for undecided), with the words that say how.
- ``"note"``: words only (a tuned rate, a median, a per-seed list): nothing is decided from them.

Records are stored in each experiment's JSON file (:meth:`Verdict.to_dict`), read back with
:meth:`Verdict.from_dict`; the ledgers and the card (:mod:`helpers.evidence.claims`) take their
outcomes from the record's numbers and print its words.

>>> v = Verdict.comparison(a="LN-LSTM", b="LSTM", measure="steps to the threshold",
...                        estimate=0.45, low=0.30, high=0.58, n=10, claim="fewer")
>>> v.words
'LN-LSTM needs 45% fewer steps to the threshold than LSTM (95% CI 30% to 58%)'
>>> v.favoured, v.outcome
('LN-LSTM', 'supported')
"""

from __future__ import annotations

import dataclasses
import math
from dataclasses import dataclass

#: The kinds of stored verdict.
KINDS = ("comparison", "answer", "note")

#: The fields a record stores; the rest of :meth:`Verdict.to_dict`'s output is computed from them.
_DERIVED = ("words", "favoured", "same", "flags", "outcome", "agree")

#: The flags that make a detected difference too weak to decide a claim: smaller than what the
#: experiment can resolve, an interval end that rounds to 0, or one that a single seed decides.
WEAK_FLAGS = ("below resolution", "fragile", "rests on seeds")


@dataclass(frozen=True)
class Verdict:
    """One stored verdict (see the module's docstring for the kinds).

    Attributes of a comparison (an interval on how A compares with B, as
    :func:`helpers.evidence.statistics.paired_difference_ci` computes it):
        a, b: the arms' names as the words give them.
        measure: what is compared, e.g. ``"steps to the threshold"``.
        relative: True for ``1 - a / b`` (positive when A has less; percentages), False for ``a - b``
            (positive when A has more; numbers written with ``fmt``).
        estimate, low, high: the interval; None for a comparison with no interval.
        n: the seeds (pairs) it rests on; confidence: its level.
        claim: ``"fewer"`` (the claim is that A has less of the measure than B), ``"more"``, or None.
        lower_is_better: whether less of the measure is better (steps, loss, error: True;
            accuracy: False): it decides which arm a difference favours.
        margin: the equivalence margin fixed before the run (interval units), or None.
        resolution: ``(size, what)``: a detected difference whose estimate is below ``size`` is
            flagged as smaller than ``what`` (an evaluation interval, a tuning-grid step); a relative
            one is compared as a factor (``|log(a / b)| < log(1 + size)``).
        rests_on: the seeds without any one of which the interval would include 0.
        p: the two-sided p-value of the test whose interval this is (None where there is none); a
            ledger corrects it for the number of claims it decides (Holm).
        verb, comparatives, fmt, prefix, suffix: how the words say it, e.g.
            ``f"{prefix}{a} {verb} 31% {comparatives[0]} {measure} than {b} (95% CI ...){suffix}"``.
        alternates: the same comparison under the other measures the experiment declared before its
            run (e.g. the steps until a run stays below the threshold, beside the steps to its first
            crossing): a claim is decided only where every measure says the same (:attr:`agree`).
        label: how the words name this measure where it is another's alternate (e.g. ``"staying
            below to the end"``).
    Attributes of an answer: ``answer`` (``"yes"``, ``"no"`` or None) and ``text`` (its words).
    A note has ``text`` only; so does a comparison with no interval (its reason).
    """

    kind: str
    text: str = ""
    answer: str | None = None
    a: str = ""
    b: str = ""
    measure: str = ""
    relative: bool = True
    estimate: float | None = None
    low: float | None = None
    high: float | None = None
    n: int | None = None
    confidence: float = 0.95
    claim: str | None = None
    lower_is_better: bool = True
    margin: float | None = None
    resolution: tuple[float, str] | None = None
    rests_on: tuple[str, ...] = ()
    p: float | None = None
    alternates: tuple[Verdict, ...] = ()
    label: str = ""
    verb: str = "needs"
    comparatives: tuple[str, str] = ("fewer", "more")
    fmt: str = ".3g"
    prefix: str = ""
    suffix: str = ""

    # ----------------------------------------------------------------- constructors

    @classmethod
    def comparison(cls, **fields) -> Verdict:
        """A comparison with an interval (``estimate``, ``low``, ``high``, ``n`` given)."""
        return cls(kind="comparison", **fields)

    @classmethod
    def no_interval(cls, a: str, b: str, measure: str, reason: str) -> Verdict:
        """A comparison of ``a`` and ``b`` that has no interval, for ``reason`` (its words)."""
        return cls(kind="comparison", a=a, b=b, measure=measure, text=reason)

    @classmethod
    def yes_no(cls, answer: str | None, text: str) -> Verdict:
        """An answer: ``"yes"``, ``"no"`` or None (undecided), and its words."""
        return cls(kind="answer", answer=answer, text=text)

    @classmethod
    def note(cls, text: str) -> Verdict:
        """Words that decide nothing."""
        return cls(kind="note", text=text)

    # ----------------------------------------------------------------- what the numbers say

    @property
    def has_interval(self) -> bool:
        return self.kind == "comparison" and self.estimate is not None

    def _more(self) -> tuple[float, float, float]:
        """How much more of the measure A has than B: the estimate and the interval's ends, sorted
        (``a - b``, or ``a / b - 1`` for a relative difference)."""
        sign = -1.0 if self.relative else 1.0
        lo, hi = sorted((sign * self.low, sign * self.high))
        return sign * self.estimate, lo, hi

    @property
    def excess(self) -> float:
        """How much more of the measure A has than B, the estimate: ``a - b``, or ``a / b - 1`` for a
        relative difference (negative where A has less)."""
        return self._more()[0]

    @property
    def direction(self) -> str | None:
        """``"fewer"`` when the whole interval says A has less than B, ``"more"`` when it says A has
        more, None when it holds 0 (or there is no interval)."""
        if not self.has_interval:
            return None
        _, lo, hi = self._more()
        return "more" if lo > 0 else "fewer" if hi < 0 else None

    @property
    def same(self) -> bool:
        """Whether the whole interval lies within ``±margin``, strictly and as printed (an end printed
        as ``-10%`` is not inside ±10%); False without a margin."""
        if not self.has_interval or self.margin is None:
            return False
        _, lo, hi = self._more()
        return (-self.margin < lo and hi < self.margin
                and max(self._printed(lo), self._printed(hi)) < self._printed(self.margin))

    @property
    def beyond_margin(self) -> bool:
        """Whether a margin was declared and the whole interval lies outside it."""
        if not self.has_interval or self.margin is None:
            return False
        _, lo, hi = self._more()
        return lo >= self.margin or hi <= -self.margin

    @property
    def favoured(self) -> str | None:
        """The arm the interval says comes out better (by ``lower_is_better``); None when it holds 0,
        when the two are the same within the margin, when the declared measures disagree
        (:attr:`agree`), or for other kinds."""
        if self.same or self.direction is None or not self.agree:
            return None
        a_has_less = self.direction == "fewer"
        return self.a if a_has_less == self.lower_is_better else self.b

    @property
    def flags(self) -> tuple[tuple[str, str], ...]:
        """``(code, words)`` for each flag that applies to a comparison, in the words' order: ``"margin"``
        (a margin was declared and the interval is not inside it), ``"below resolution"``,
        ``"fragile"`` (an interval end nearer 0 prints as 0) and ``"rests on seeds"``; the last three
        only where a difference is detected."""
        if not self.has_interval or self.same:
            return ()
        out = []
        if self.margin is not None:
            within = f"the ±{self._num(self.margin)} margin"
            out.append(("margin", f"beyond {within}" if self.beyond_margin else f"not within {within}"))
        if self.direction is None:
            return tuple(out)
        more, lo, hi = self._more()
        if self.resolution is not None and self._below(more, self.resolution[0]):
            out.append(("below resolution", f"smaller than {self.resolution[1]}"))
        if self._printed(lo if lo > 0 else hi) == 0:
            out.append(("fragile", f"fragile: an interval end rounds to 0 with {self.n} seeds"))
        if self.rests_on:
            out.append(("rests on seeds", _rests_on_words(self.rests_on)))
        return tuple(out)

    def _below(self, more: float, size: float) -> bool:
        """Whether a difference of ``more`` (``a - b``, or ``a / b - 1``) is smaller than ``size``. A relative
        difference is compared as a factor, on a log scale: "60% fewer" is a factor 2.5, larger than a
        resolution of "+79%" (a factor 1.79), though 0.60 < 0.79."""
        if self.relative:
            return abs(math.log1p(more)) < math.log1p(size)
        return abs(more) < size

    @property
    def weak(self) -> bool:
        """Whether a detected difference carries a flag of :data:`WEAK_FLAGS`, under any of its measures:
        it then decides nothing."""
        return any(code in WEAK_FLAGS for m in (self, *self.alternates) for code, _ in m.flags)

    @property
    def agree(self) -> bool:
        """Whether every declared measure of the comparison (this one and :attr:`alternates`) finds the
        same: the same direction, or none, and sameness within the margin alike. Where they do not,
        the verdict depends on the measure and decides nothing."""
        return all((m.direction, m.same) == (self.direction, self.same) for m in self.alternates)

    @property
    def p_all(self) -> float | None:
        """The p-value of "every measure finds this difference": the largest of the measures' p-values
        (an intersection-union test); None where a measure has none."""
        ps = [m.p for m in (self, *self.alternates)]
        return None if any(p is None for p in ps) else max(ps)

    @property
    def outcome(self) -> str | None:
        """The verdict against its own claim: ``"supported"``, ``"refuted"`` or ``"undecided"`` (also
        where the difference is :attr:`weak`); for an answer, yes / no / undecided as supported /
        refuted / undecided; None for a note and for a comparison that claims nothing."""
        if self.kind == "answer":
            return {"yes": "supported", "no": "refuted"}.get(self.answer, "undecided")
        if self.kind == "note" or self.claim is None and self.has_interval:
            return None
        if self.direction is None or self.same or self.weak or not self.agree:
            return "undecided"
        return "supported" if self.direction == self.claim else "refuted"

    # ----------------------------------------------------------------- words

    def _num(self, value: float, signed: bool = False) -> str:
        if self.relative:
            pct = int(round(value * 100)) + 0  # + 0: no "-0"
            return f"{pct:+d}%" if signed else f"{pct}%"
        return f"{value:+{self.fmt}}" if signed else f"{value:{self.fmt}}"

    def _printed(self, value: float) -> float:
        """The number as the words print it: 0.098 is 10 (%)."""
        return abs(float(self._num(value).rstrip("%")))

    @property
    def words(self) -> str:
        """The verdict in words, generated from the record (one sentence, no final full stop)."""
        if not self.has_interval:
            return self.text
        depends = "" if self.agree else "depends on the measure: "
        others = "".join(f"; {m.label}: {m.words}" if m.label else f"; {m.words}" for m in self.alternates)
        return f"{self.prefix}{depends}{self._said()}{''.join(f'; {w}' for _, w in self.flags)}{self.suffix}{others}"

    def _said(self) -> str:
        more, lo, hi = self._more()
        ci = f"({self.confidence * 100:g}% CI"
        if self.same:
            return (f"the same {self.measure} within ±{self._num(self.margin)}: {self.a} vs {self.b}, "
                    f"{self._num(more, True)} {ci} {self._num(lo)} to {self._num(hi)})")
        if self.direction is None:
            return (f"no difference detectable with {self.n} seeds: {self.a} vs {self.b}, {self._num(more, True)} "
                    f"{ci} {self._num(lo)} to {self._num(hi)})")
        if self.direction == "more":
            said = (f"{self.a} {self.verb} {self._num(more)} {self.comparatives[1]} {self.measure} than {self.b} "
                    f"{ci} {self._num(lo)} to {self._num(hi)})")
        else:
            said = (f"{self.a} {self.verb} {self._num(-more)} {self.comparatives[0]} {self.measure} than {self.b} "
                    f"{ci} {self._num(-hi)} to {self._num(-lo)})")
        return said if self.claim in (self.direction, None) else f"the opposite of the claim: {said}"

    def __str__(self) -> str:
        return self.words

    # ----------------------------------------------------------------- storage

    def to_dict(self) -> dict:
        """The record as JSON-ready data: the fields that differ from their defaults, then what is
        computed from them (words, favoured arm, sameness, flag codes, outcome), for a reader of the
        file; :meth:`from_dict` reads the fields and recomputes the rest."""
        out = {"kind": self.kind}
        for field in dataclasses.fields(self):
            value = getattr(self, field.name)
            if field.name == "alternates" and value:
                out[field.name] = [m.to_dict() for m in value]
            elif field.name != "kind" and value != field.default:
                out[field.name] = list(value) if isinstance(value, tuple) else value
        out["words"] = self.words
        if self.kind == "comparison":
            out.update(favoured=self.favoured, same=self.same, flags=[code for code, _ in self.flags])
            if self.alternates:
                out["agree"] = self.agree
        out["outcome"] = self.outcome
        return out

    @classmethod
    def from_dict(cls, data: dict) -> Verdict:
        """The record :meth:`to_dict` wrote (its computed entries are recomputed, not read)."""
        fields = {k: v for k, v in data.items() if k not in _DERIVED}
        for name in ("resolution", "rests_on", "comparatives"):
            if fields.get(name) is not None:
                fields[name] = tuple(fields[name])
        fields["alternates"] = tuple(cls.from_dict(m) for m in fields.get("alternates", ()))
        return cls(**fields)


def as_verdict(value: Verdict | str) -> Verdict:
    """``value`` as a record: a :class:`Verdict` as it is, plain words as a note."""
    return value if isinstance(value, Verdict) else Verdict.note(value)


def _rests_on_words(rests_on: tuple[str, ...]) -> str:
    """The leave-one-out flag for ``rests_on`` (non-empty), e.g. ``"rests on one seed: without seed 7
    the interval includes 0"``."""
    if len(rests_on) == 1:
        return f"rests on one seed: without {rests_on[0]} the interval includes 0"
    parts = [name.split(" ", 1) for name in rests_on]
    if all(len(part) == 2 for part in parts) and len({kind for kind, _ in parts}) == 1:
        # one kind ("seed 1", "seed 5"): "seeds 1 or 5"
        labels = [label for _, label in parts]
        listed = f"{parts[0][0]}s {', '.join(labels[:-1])} or {labels[-1]}"
    else:
        listed = f"{', '.join(rests_on[:-1])} or {rests_on[-1]}"
    return f"rests on single seeds: without any one of {listed} the interval includes 0"

