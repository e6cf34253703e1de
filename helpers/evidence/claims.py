"""The lesson's claims against the stored verdicts: one plain outcome per claim, and the card.

A :class:`Claim` names the stored verdict that speaks to it (experiment and key) and which arm
the claim says comes out better. :func:`outcome` reads that verdict's words, the words
:func:`helpers.evidence.statistics.verdict` writes ("A needs 31% fewer steps than B (95% CI
...)", "no difference detectable with N seeds: ...", "the opposite of the claim: ..."), finds the
arm that comes out better, and returns ``"supported"``, ``"refuted"`` or ``"undecided"``
(``"not tested"`` when no stored result holds the key). A verdict it cannot read raises: no
claim is ever classified silently.

:func:`evidence_card` renders the core path's closing card (HTML): one plain sentence per claim, with
no number and no statistics word of its own, each linked to its deep dive. It speaks the language
set by :func:`helpers.set_language`: under ``"zh"`` (the Chinese edition, in ``notebooks/zh/``)
the sentences are Chinese and the links lead one folder up, to the deep dives.
"""

from __future__ import annotations

import html
import re
from dataclasses import dataclass

from helpers.evidence import runner
from helpers.language import Text, get_language, say

__all__ = ["CORE_CLAIMS", "OUTCOMES", "Claim", "better_arm", "evidence_card", "outcome", "sentence"]

OUTCOMES = ("supported", "refuted", "undecided", "not tested")

#: "A <verb> 31% fewer <quantity> than B (95% CI ...)": the subject, the comparative, the other arm.
_COMPARISON = re.compile(
    r"^(?P<a>.+?) (?:needs|ends with|has|takes|drifts) [\d.]+(?:%| points)? "
    r"(?P<word>fewer|less|lower|more|higher) .*? than (?P<b>.+?)(?:'s)? \((?:95% )?CI")
_UNDECIDED = ("no difference detectable", "no run of either")
_LOWER = {"fewer", "less", "lower"}


@dataclass(frozen=True)
class Claim:
    """One lesson claim and the stored verdict that speaks to it.

    Args:
        text: the claim in plain words, no number: a :class:`~helpers.language.Text` (English and
            Chinese) for every claim on the card.
        experiment: the stored experiment's name (:func:`helpers.evidence.runner.load`).
        key: the verdict's key in that experiment.
        favours: the arm the claim says comes out better, as the verdict names it.
        deep_dive: the notebook that shows the evidence, e.g. ``"13_does_it_speed_up_training.ipynb"``.
        lower_is_better: whether less of the verdict's quantity is better (steps, loss, error,
            drift: True; accuracy: False).
    """

    text: str
    experiment: str
    key: str
    favours: str
    deep_dive: str
    lower_is_better: bool = True


def better_arm(words: str, lower_is_better: bool = True) -> str | None:
    """The arm a verdict's words say comes out better; None when they find no difference.

    Raises ValueError when the words are neither a comparison nor "no difference".
    """
    said = words.removeprefix("the opposite of the claim: ")
    said = re.sub(r"^at batch \d+, ", "", said)
    if said.startswith(_UNDECIDED):
        return None
    match = _COMPARISON.match(said)
    if match is None:
        raise ValueError(f"better_arm(): cannot read which arm is better in {words!r}")
    a, b = match["a"], match["b"]
    a_has_less = match["word"] in _LOWER
    return a if a_has_less == lower_is_better else b


def outcome(claim: Claim) -> str:
    """``"supported"``, ``"refuted"``, ``"undecided"`` or ``"not tested"``: ``claim`` against its
    stored verdict. Raises ValueError when the verdict names neither the favoured arm nor a
    difference the claim can be read against."""
    try:
        verdicts = runner.load(claim.experiment).verdicts
    except FileNotFoundError:
        return "not tested"
    if claim.key not in verdicts:
        return "not tested"
    words = verdicts[claim.key]
    if claim.favours not in words:
        raise ValueError(f"outcome(): the claim favours {claim.favours!r}, which the verdict for "
                         f"{claim.experiment}: {claim.key!r} does not name: {words!r}")
    winner = better_arm(words, claim.lower_is_better)
    if winner is None:
        return "undecided"
    return "supported" if winner == claim.favours else "refuted"


_SAYS = {
    "supported": Text("the runs agree", "实验结果支持"),
    "refuted": Text("the runs show the opposite", "实验结果恰恰相反"),
    "undecided": Text("the runs cannot tell", "实验结果分不出高下"),
    "not tested": Text("not tested here", "这里没有检验"),
}


def sentence(claim: Claim) -> str:
    """The card's plain sentence for ``claim``: the claim, then what the stored runs say."""
    if get_language() == "zh":
        return f"{say(claim.text)}：{say(_SAYS[outcome(claim)])}。"
    return f"{claim.text}: {_SAYS[outcome(claim)]}."


#: The lesson's claims that the stored verdicts speak to, in the lesson's order.
CORE_CLAIMS = (
    Claim(Text("With LN, an LSTM needs fewer steps", "加了层归一化，LSTM 需要的训练步数更少"),
          "lstm_adding", "steps", "LN-LSTM", "13_does_it_speed_up_training.ipynb"),
    Claim(Text("With LN, a small RNN needs fewer steps", "加了层归一化，小型 RNN 需要的训练步数更少"),
          "rnn_regimes", "steps, T 10, hidden 64", "LayerNorm", "13_does_it_speed_up_training.ipynb"),
    Claim(Text("With Pre-LN, a small Transformer needs fewer steps than with no norm",
               "用 Pre-LN 的小型 Transformer 比不加归一化时需要的训练步数更少"),
          "small_transformer", "steps, Pre-LN vs no norm", "Pre-LN", "13_does_it_speed_up_training.ipynb"),
    Claim(Text("With LN, what enters each activation drifts less in training",
               "加了层归一化，训练中进入每个激活函数的值漂移得更少"),
          "drift", "activation input: largest std change", "LayerNorm's activation input",
          "13_does_it_speed_up_training.ipynb"),
    Claim(Text("At tiny batches, LN does better than BN", "批量极小时，层归一化比批量归一化效果更好"),
          "batch_size", "batch 2: BatchNorm vs LayerNorm", "LayerNorm", "11_batchnorm_in_depth.ipynb",
          lower_is_better=False),
    Claim(Text("LN before tanh ends lower than LN after it", "LN 放在 tanh 之前，最终损失比放在之后更低"),
          "placement_tuned", "final loss, tanh, LN -> act vs act -> LN", "LN -> act", "12_where_the_norm_goes.ipynb"),
    Claim(Text("LN before ReLU ends lower than LN after it", "LN 放在 ReLU 之前，最终损失比放在之后更低"),
          "placement_tuned", "final loss, relu, LN -> act vs act -> LN", "LN -> act", "12_where_the_norm_goes.ipynb"),
    Claim(Text("A warm-up speeds up a Post-LN Transformer", "学习率预热（warm-up）能让 Post-LN Transformer 训练得更快"),
          "small_transformer", "steps, Post-LN + warm-up vs Post-LN", "Post-LN + warm-up",
          "12_where_the_norm_goes.ipynb"),
)


_HEADER = (Text("what the stored runs say", "存储的实验结果怎么说"), Text("deep dive", "深入专题"))


def evidence_card(claims=CORE_CLAIMS) -> str:
    """The card as an HTML table: one row per claim, its plain sentence and a link to its deep dive.

    In Chinese (``helpers.set_language("zh")``) the card is read in ``notebooks/zh/``, one folder
    below the deep dives, so each link starts with ``../``."""
    folder = "../" if get_language() == "zh" else ""
    rows = "".join(
        f'<tr><td style="text-align: left">{html.escape(sentence(claim))}</td>'
        f'<td><a href="{folder}{claim.deep_dive}">{claim.deep_dive[:2]}</a></td></tr>'
        for claim in claims)
    said, dive = (html.escape(say(t)) for t in _HEADER)
    return (f'<table><thead><tr><th style="text-align: left">{said}</th><th>{dive}</th>'
            f"</tr></thead><tbody>{rows}</tbody></table>")
