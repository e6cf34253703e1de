"""The core path's closing card: each of the lesson's claims in one plain sentence, with what the
stored runs say of it, as its deep dive's ledger decides it, and a link to that deep dive.

:func:`evidence_card` renders it (HTML) with no number and no statistics word of its own. A row's
outcome is the one its deep dive's ledger gives it (:data:`helpers.evidence.ledgers.LEDGERS`, which
must hold a claim on the same stored verdict): there, a difference counts only where it survives
Holm's correction over the ledger's comparisons, so the card and the ledger never disagree. It speaks
the language set by :func:`helpers.set_language`: under ``"zh"`` (the Chinese edition, in
``notebooks/zh/``) the sentences are Chinese and the links lead one folder up, to the deep dives.
"""

from __future__ import annotations

import html

from helpers.evidence.claims import Claim, ledger_outcomes
from helpers.evidence.ledgers import LEDGERS
from helpers.language import Text, get_language, say

__all__ = ["CORE_CLAIMS", "card_outcome", "evidence_card", "sentence"]

_SAYS = {
    "supported": Text("the runs agree", "实验结果支持"),
    "refuted": Text("the runs show the opposite", "实验结果恰恰相反"),
    "undecided": Text("the runs cannot tell", "实验结果分不出高下"),
    "not tested": Text("not tested here", "这里没有检验"),
}


def card_outcome(claim: Claim) -> str:
    """``claim``'s outcome as its deep dive's ledger decides it: within the stored claims of that
    ledger (:data:`helpers.evidence.ledgers.LEDGERS`), which must hold it (same experiment and key)."""
    family = LEDGERS[claim.deep_dive]
    same = [i for i, member in enumerate(family) if (member.experiment, member.key) == (claim.experiment, claim.key)]
    if not same:
        raise KeyError(f"card_outcome(): the ledger of {claim.deep_dive} holds no claim on "
                       f"{claim.experiment}: {claim.key!r}")
    return ledger_outcomes(family)[same[0]][0]


def sentence(claim: Claim) -> str:
    """The card's plain sentence for ``claim``: the claim, then what the stored runs say, as its deep
    dive's ledger decides it (:func:`card_outcome`)."""
    said = card_outcome(claim)
    if get_language() == "zh":
        return f"{say(claim.text)}：{say(_SAYS[said])}。"
    return f"{claim.text}: {_SAYS[said]}."


#: The lesson's claims that the stored verdicts speak to, in the lesson's order.
CORE_CLAIMS = (
    Claim(Text("With LN, an LSTM needs fewer steps", "加了层归一化，LSTM 需要的训练步数更少"),
          "lstm_adding", "steps", "LN-LSTM", "13_does_it_speed_up_training.ipynb"),
    Claim(Text("With LN, a small RNN needs fewer steps", "加了层归一化，小型 RNN 需要的训练步数更少"),
          "rnn_regimes", "steps, T 10, hidden 64", "LayerNorm", "13_does_it_speed_up_training.ipynb"),
    # The Transformer rows read the six-block regime (deep_transformer), sized so that the arms can be told apart
    Claim(Text("With Pre-LN, a six-block Transformer needs fewer steps than with no norm",
               "用 Pre-LN 的六层 Transformer 比不加归一化时需要的训练步数更少"),
          "deep_transformer", "steps, Pre-LN vs no norm", "Pre-LN", "13_does_it_speed_up_training.ipynb"),
    # Per unit, each in its own spread: the spread of LN's whole output is fixed by LN itself, so a
    # measure of it would favour LN by construction.
    Claim(Text("With LN, each unit of what enters an activation moves less in training, measured against its own spread",
               "加了层归一化，训练中进入激活函数的每个单元移动得更少（以该单元自身的分散程度为尺度）"),
          "drift", "activation input: largest unit mean drift", "LayerNorm's activation input",
          "13_does_it_speed_up_training.ipynb"),
    Claim(Text("At tiny batches, LN does better than BN", "批量极小时，层归一化比批量归一化效果更好"),
          "batch_size", "batch 2: BatchNorm vs LayerNorm", "LayerNorm", "11_batchnorm_in_depth.ipynb"),
    Claim(Text("LN before tanh ends lower than LN after it", "LN 放在 tanh 之前，最终损失比放在之后更低"),
          "placement_tuned", "final loss, tanh, LN -> act vs act -> LN", "LN -> act", "12_where_the_norm_goes.ipynb"),
    Claim(Text("LN before ReLU ends lower than LN after it", "LN 放在 ReLU 之前，最终损失比放在之后更低"),
          "placement_tuned", "final loss, relu, LN -> act vs act -> LN", "LN -> act", "12_where_the_norm_goes.ipynb"),
    Claim(Text("A warm-up speeds up a Post-LN Transformer", "学习率预热（warm-up）能让 Post-LN Transformer 训练得更快"),
          "deep_transformer", "steps, Post-LN + warm-up vs Post-LN", "Post-LN + warm-up",
          "13_does_it_speed_up_training.ipynb"),
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
