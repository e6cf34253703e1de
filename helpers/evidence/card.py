"""The core path's closing card: each of the lesson's claims in one plain sentence, the model and task
that tested it (with the model's size), what the stored runs found, as its deep dive's ledger
decides it, and a link to that deep dive.

:func:`evidence_card` renders it (HTML), with no statistics word of its own. It opens with a scope
line (tiny models, synthetic tasks, a CPU). A row's outcome is the one its deep dive's ledger gives it
(:data:`helpers.evidence.ledgers.LEDGERS`, which must hold a claim on the same stored verdict): there, a
difference counts only where it survives Holm's correction over the ledger's comparisons, so the card
and the ledger never disagree. One cell says what the runs found: where the outcome is decided, "yes"
or "the opposite" with the effect's size in plain words, computed from the stored record ("yes, about
61% fewer steps with Pre-LN"); where it is not, "cannot tell". Every row is kept whatever its outcome. It speaks the language set by
:func:`helpers.set_language`: under ``"zh"`` (the Chinese edition, in ``notebooks/zh/``) the sentences
are Chinese and the links lead one folder up, to the deep dives.

The models' sizes in :data:`CORE_ROWS` are the stored experiments' (a test checks them against the
experiments' own constants).
"""

from __future__ import annotations

import html
from dataclasses import dataclass

from helpers.evidence import runner
from helpers.evidence.claims import Claim, ledger_outcomes
from helpers.evidence.ledgers import LEDGERS
from helpers.language import Text, get_language, say

__all__ = ["CORE_CLAIMS", "CORE_ROWS", "Row", "card_outcome", "cells", "effect", "evidence_card", "found"]

_SAYS = {
    "supported": Text("yes", "是"),
    "refuted": Text("the opposite", "恰恰相反"),
    "undecided": Text("cannot tell", "分不出"),
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


@dataclass(frozen=True)
class Row:
    """One row of the card.

    Args:
        claim: the claim and the stored verdict that speaks to it.
        setting: the model, its size and the task, in plain words.
        less: the effect in words when the verdict's first arm has less of the measure than the
            second, with ``{}`` for the amount ("about {} fewer steps with LN"); None for a claim
            whose record has no estimate (a level).
        more: the same when the first arm has more.
    """

    claim: Claim
    setting: Text
    less: Text | None = None
    more: Text | None = None


def effect(row: Row) -> str | None:
    """The effect's size in plain words, computed from the stored record, where the row's outcome is
    decided (supported or refuted) and the row has words for it; None otherwise."""
    if card_outcome(row.claim) not in ("supported", "refuted") or row.less is None:
        return None
    record = runner.records(row.claim.experiment)[row.claim.key]
    more = record.excess
    amount = f"{round(abs(more) * 100)}%" if record.relative else f"{abs(more):.0f}"
    return say(row.less if more < 0 else row.more).format(amount)


def found(row: Row) -> str:
    """What the runs found, in the language set: the outcome (as its deep dive's ledger decides it:
    :func:`card_outcome`), then, where decided, the effect's size (:func:`effect`)."""
    said, size = say(_SAYS[card_outcome(row.claim)]), effect(row)
    return said if size is None else f"{said}{say(Text(', ', '，'))}{size}"


def cells(row: Row) -> tuple[str, str, str]:
    """The row's three cells, in the language set: the claim, its model and task, and what the runs
    found (:func:`found`)."""
    return say(row.claim.text), say(row.setting), found(row)


_LSTM = Text("an LSTM, 1 layer × 64 units; add two marked numbers in a sequence of 100",
             "LSTM，1 层 × 64 个单元；把长度为 100 的序列里两个标记的数相加")
_RNN = Text("a tanh RNN, 1 layer × 64 units; the same task, on sequences of 10, not 100",
            "tanh RNN，1 层 × 64 个单元；同一个任务，但序列长度是 10，不是 100")
_DEEP = Text("a Transformer, 6 blocks × width 32, copying 8 tokens",
             "Transformer（6 个块，宽度 32），任务：原样复制 8 个 token")
_TEXT = Text("12 blocks × width 64, runs of 60 steps; the next character",
             "12 个块 × 宽度 64，每次训练 60 步；预测下一个字符")
_DRIFT = Text("an MLP, 8 layers × 32 units, 3 rates; fit a smooth function",
              "MLP，8 层 × 32 个单元，3 种学习率；拟合一个固定的光滑函数")
_BATCH = Text("an MLP, 2 layers × 32 units, batches of 2; sort points into two classes",
              "MLP，2 层 × 32 个单元，每批 2 个样本；把点分成两类")
_PLACE = Text("an MLP, 8 layers × 16 units; fit a fixed random network",
              "MLP，8 层 × 16 个单元；拟合一个固定的随机网络")


#: A steps row's effect: the row's claim says which arm it speaks of, so the amount needs no arm.
_STEPS = (Text("about {} fewer steps", "训练步数约少 {}"), Text("about {} more steps", "训练步数约多 {}"))


#: A stability row's effect: the difference in the share of runs that train, at the largest rate both arms ran.
_RUNS_TRAIN = (Text("at the largest rate both ran, about {} percentage points fewer runs train",
                    "在两者都试过的最大学习率下，训练成功的比例约低 {} 个百分点"),
               Text("at the largest rate both ran, about {} percentage points more runs train",
                    "在两者都试过的最大学习率下，训练成功的比例约高 {} 个百分点"))

_13, _12, _11 = ("13_does_it_speed_up_training.ipynb", "12_where_the_norm_goes.ipynb", "11_batchnorm_in_depth.ipynb")

#: The card's rows: the lesson's claims that the stored verdicts speak to, in the lesson's order, then
#: two on Pre-LN; each Transformer claim twice, on the copy task and on English text. (The warm-up
#: claims are deep dive 13's: the short warm-ups these runs afford test speed, which no one claims.)
CORE_ROWS = (
    Row(Claim(Text("With LN, an LSTM needs fewer steps", "加了层归一化，LSTM 需要的训练步数更少"),
              "lstm_adding", "steps", "LN-LSTM", _13), _LSTM, *_STEPS),
    Row(Claim(Text("With LN, a small RNN needs fewer steps", "加了层归一化，小型 RNN 需要的训练步数更少"),
              "rnn_regimes", "steps, T 10, hidden 64", "LayerNorm", _13), _RNN, *_STEPS),
    # The Transformer rows read the six-block regime (deep_transformer), sized so that the arms can be told apart
    Row(Claim(Text("With Pre-LN, a six-block Transformer needs fewer steps than with no norm",
                   "六个块的 Transformer 用 Pre-LN 时，比不加归一化需要的训练步数更少"),
              "deep_transformer", "steps, Pre-LN vs no norm", "Pre-LN", _13), _DEEP, *_STEPS),
    Row(Claim(Text("… on English text", "……换成英文文本"),
              "text_transformer", "steps, Pre-LN vs no norm", "Pre-LN", _13), _TEXT, *_STEPS),
    # Per unit, each in its own spread: the spread of LN's whole output is fixed by LN itself, so a
    # measure of it would favour LN by construction.
    Row(Claim(Text("With LN, each unit entering an activation moves less, in its own spread",
                   "加了 LN 后，训练中每个单元激活前的值漂移得更少（以该单元自身的标准差衡量）"),
              "drift", "activation input: largest unit mean drift, every rate", "LayerNorm's activation input", _13),
        _DRIFT,
        Text("about {} less movement with LN", "加了 LN，漂移约少 {}"),
        Text("about {} more movement with LN", "加了 LN，漂移约多 {}")),
    Row(Claim(Text("At tiny batches, LN does better than BN", "批量极小时，层归一化比批量归一化效果更好"),
              "batch_size", "batch 2: BatchNorm vs LayerNorm", "LayerNorm", _11), _BATCH,
        Text("LN's accuracy about {} percentage points higher", "LN 的准确率约高 {} 个百分点"),
        Text("LN's accuracy about {} percentage points lower", "LN 的准确率约低 {} 个百分点")),
    *(Row(Claim(Text(f"LN before {act} ends lower than LN after it", f"LN 放在 {act} 之前，最终损失比放在之后更低"),
                "placement_tuned", f"final loss, {key}, LN -> act vs act -> LN", "LN -> act", _12), _PLACE,
          Text("about {} lower final loss with LN first", "LN 在前时最终损失约低 {}"),
          Text("about {} higher final loss with LN first", "LN 在前时最终损失约高 {}"))
      for act, key in (("tanh", "tanh"), ("ReLU", "relu"))),
    Row(Claim(Text("A Pre-LN Transformer needs fewer steps than a Post-LN one",
                   "Pre-LN Transformer 比 Post-LN 需要的训练步数更少"),
              "deep_transformer", "steps, Pre-LN vs Post-LN", "Pre-LN", _13), _DEEP,
        *_STEPS),
    Row(Claim(Text("… on English text", "……换成英文文本"),
              "text_transformer", "steps, Pre-LN vs Post-LN", "Pre-LN", _13), _TEXT,
        *_STEPS),
    # counted on 10 seeds at one rate: how many end below the threshold with Pre-LN and with no norm
    Row(Claim(Text("With Pre-LN, a Transformer trains at larger learning rates than with no norm",
                   "用 Pre-LN 的 Transformer 比不加归一化时能承受更大的学习率"),
              "deep_transformer", "stable seeds at the largest rate both ran, Pre-LN vs no norm", "Pre-LN", _13),
        _DEEP, *_RUNS_TRAIN),
    Row(Claim(Text("… on English text", "……换成英文文本"),
              "text_transformer", "stable seeds at the largest rate both ran, Pre-LN vs no norm", "Pre-LN", _13),
        _TEXT, *_RUNS_TRAIN),
)

#: The card's claims, in its order.
CORE_CLAIMS = tuple(row.claim for row in CORE_ROWS)

_SCOPE = Text("Scope: tiny models, trained on a CPU, on small synthetic tasks and a little English text. In a large "
              "model the effects may differ.",
              "适用范围：微型模型，在 CPU 上训练，任务是小型人工任务和一小段英文文本。放到大模型上，效果可能不同。")
_HEADER = (Text("claim", "说法"), Text("model and task", "模型与任务"), Text("what the runs found", "实验结果"),
           Text("deep dive", "深入专题"))


def evidence_card(rows=CORE_ROWS) -> str:
    """The card as HTML: the scope line, then a table with one row per claim: the claim, its model and
    task, what the runs found, and a link to its deep dive.

    In Chinese (``helpers.set_language("zh")``) the card is read in ``notebooks/zh/``, one folder
    below the deep dives, so each link starts with ``../``."""
    folder = "../" if get_language() == "zh" else ""
    left = 'style="text-align: left"'
    body = "".join(
        "<tr>" + "".join(f"<td {left}>{html.escape(cell)}</td>" for cell in cells(row))
        + f'<td><a href="{folder}{row.claim.deep_dive}">{row.claim.deep_dive[:2]}</a></td></tr>'
        for row in rows)
    head = "".join(f"<th {left}>{html.escape(say(t))}</th>" for t in _HEADER)
    return (f"<p>{html.escape(say(_SCOPE))}</p>"
            f"<table><thead><tr>{head}</tr></thead><tbody>{body}</tbody></table>")
