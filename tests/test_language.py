"""The set speaks English or Chinese: helpers.set_language, helpers.language.Text, and every
checker's feedback and the evidence card in both languages.

Every text a checker may show (each exercise's hints, its general and shape hints, its cases'
descriptions, and the checker's own sentences) is a Text, with the same numbers and code in its
Chinese as in its English; switching the language switches what a check says, and nothing else.
"""

from __future__ import annotations

import html
import re
import string

import pytest
import torch

import helpers
from helpers.evidence import card
from helpers.exercises import (  # noqa: F401 (each registers its exercises)
    checking,
    layer_norm,
    layer_norm_at_work,
    norm_family,
    numerics,
    training_speed,
)
from helpers.exercises.checking import check
from helpers.language import LANGUAGES, Text, get_language, say, set_language
from helpers.lessons import bn_vs_ln, placement, sequence  # noqa: F401 (each registers its exercises)

CJK = re.compile(r"[\u3400-\u9fff]")
NUMBER = re.compile(r"(?<![A-Za-z0-9_.])\d+(?:\.\d+)?(?:e-?\d+)?(?![A-Za-z0-9_])")
CODE = re.compile(r"`[^`]+`")


@pytest.fixture(autouse=True)
def english_after():
    """Every test leaves the set speaking English, as a fresh kernel does."""
    assert get_language() == "en"
    yield
    set_language("en")


def _texts(exercise: checking.Exercise) -> list[tuple[str, str]]:
    """(what, text) for every text of ``exercise`` a learner may read."""
    found = [("hint", exercise.hint), ("shape_hint", exercise.shape_hint)]
    found += [("mistake", hint) for hint in exercise.mistakes]
    found += [("case", case.description) for case in exercise.cases]
    return found


EXERCISES = 19  # all of them: the core path's and the deep dives'
TEXTS = [(name, what, text) for name in sorted(checking._REGISTRY) for what, text in _texts(checking._REGISTRY[name])]


def test_every_exercise_is_seen():
    assert len(sorted(checking._REGISTRY)) == EXERCISES, sorted(checking._REGISTRY)


def test_english_is_spoken_until_told_otherwise_and_only_en_and_zh_are_known():
    assert helpers.set_language is set_language and LANGUAGES == ("en", "zh")
    set_language("zh")
    assert get_language() == "zh"
    with pytest.raises(ValueError, match="must be one of"):
        set_language("fr")
    assert get_language() == "zh"
    assert set_language("en") is None  # a notebook cell that sets it shows nothing


def test_a_text_is_its_english_string_and_carries_its_chinese():
    text = Text("divide by n", "除以 n")
    assert text == "divide by n" and hash(text) == hash("divide by n") and "by n" in text
    assert str.__str__(text) == "divide by n" and text.zh == "除以 n" and type(say(text)) is str
    assert say(text) == "divide by n" and say("plain") == "plain"
    set_language("zh")
    assert say(text) == "除以 n" and say("plain") == "plain"


@pytest.mark.parametrize("name, what, text", TEXTS, ids=[f"{n}-{w}-{i}" for i, (n, w, _) in enumerate(TEXTS)])
def test_every_hint_and_case_has_its_chinese_with_the_same_numbers_and_code(name, what, text):
    assert isinstance(text, Text), f"{name}: the {what} {text!r} has no Chinese (make it a helpers.language.Text)"
    assert CJK.search(text.zh), f"{name}: the {what}'s Chinese {text.zh!r} holds no Chinese"
    assert not CJK.search(str.__str__(text)), f"{name}: the {what}'s English {str.__str__(text)!r} holds Chinese"
    assert sorted(NUMBER.findall(CODE.sub(" ", text.zh))) == sorted(NUMBER.findall(CODE.sub(" ", str.__str__(text)))), (
        f"{name}: the {what}'s numbers differ:\n  {str.__str__(text)}\n  {text.zh}")
    assert sorted(CODE.findall(text.zh)) == sorted(CODE.findall(str.__str__(text))), (
        f"{name}: the {what}'s code differs:\n  {str.__str__(text)}\n  {text.zh}")


def test_the_checkers_own_sentences_have_their_chinese_with_the_same_blanks():
    for key, text in checking._SAID.items():
        assert isinstance(text, Text) and CJK.search(text.zh), key
        blanks = [{f for _, f, _, _ in string.Formatter().parse(t) if f} for t in (str.__str__(text), text.zh)]
        assert blanks[0] == blanks[1], f"{key}: {str.__str__(text)!r} and {text.zh!r} fill in other blanks"
        assert sorted(NUMBER.findall(text.zh)) == sorted(NUMBER.findall(str.__str__(text))), key


@pytest.mark.parametrize("name", sorted(checking._REGISTRY))
def test_switching_the_language_switches_every_mistakes_message_and_nothing_else(name):
    from test_solutions import _replaying  # each slip as if written by hand

    exercise = checking._REGISTRY[name]
    for hint, wrong in exercise.mistakes.items():
        learner = _replaying(exercise, wrong)
        english = check(exercise, learner)
        set_language("zh")
        chinese = check(exercise, learner)
        set_language("en")
        assert not chinese and chinese.passed == english.passed
        assert str.__str__(hint) in english.message and hint.zh in chinese.message, chinese.message
        assert "Hint:" in english.message and "提示：" in chinese.message and not CJK.search(english.message)
        assert chinese.message.startswith(f"❌ {name}：用例“")
        assert sorted(NUMBER.findall(chinese.message)) == sorted(NUMBER.findall(english.message)), (
            f"{english.message}\n{chinese.message}")
        assert chinese.table.equals(english.table)  # the table stays English: printed tables do
        assert check(exercise, learner).message == english.message  # and back


def test_a_passed_check_a_raised_error_and_a_handed_in_answer_speak_chinese_too():
    set_language("zh")
    passed = check("output_variance", lambda var, eps: var / (var + eps))
    assert passed and passed.message == "✅ output_variance：全部 3 个用例都与参考结果一致。做得好！"
    raised = check("output_variance", lambda var, eps: var.view(7))
    assert "你的函数抛出了 RuntimeError：" in raised.message and "`torch.tensor([1.0, 1e-5]), 1e-5`" in raised.message
    handed_in = check("sentence_layer_norm", lambda x: torch.nn.functional.layer_norm(x, x.shape[-2:]))
    assert "这是直接交出答案" in handed_in.message
    number = check("output_variance", lambda var, eps: 1.0)
    assert "你的函数返回了 float，应当返回 torch.Tensor" in number.message
    shape = check("output_variance", lambda var, eps: var[:1])
    assert "你的函数返回的形状是 (1,)，应为 (4,)" in shape.message and "形状与 `var` 相同" in shape.message
    dtype = check("output_variance", lambda var, eps: (var / (var + eps)).double())
    assert "dtype 是 torch.float64，应为 torch.float32" in dtype.message


def test_the_evidence_card_speaks_the_language_and_links_up_from_notebooks_zh():
    english = card.evidence_card()
    set_language("zh")
    chinese = card.evidence_card()
    assert chinese.startswith(f"<p>{card._SCOPE.zh}</p>") and english.startswith(f"<p>{card._SCOPE}</p>")
    assert "what the runs found" in english and not CJK.search(english)
    assert "实验结果" in chinese and "what the runs found" not in chinese
    links = re.findall(r'href="([^"]+)"', english)
    assert re.findall(r'href="([^"]+)"', chinese) == [f"../{link}" for link in links]
    for row in card.CORE_ROWS:
        claim = row.claim
        assert isinstance(claim.text, Text) and claim.text.zh in chinese and claim.text in english
        assert isinstance(row.setting, Text) and row.setting.zh in chinese and row.setting in english
        zh_cells = card.cells(row)
        assert zh_cells[:2] == (claim.text.zh, row.setting.zh)
        assert zh_cells[2].startswith(card._SAYS[card.card_outcome(claim)].zh)
        assert all(isinstance(t, Text) for t in (row.less, row.more) if t is not None)
        assert CJK.search(zh_cells[2]) and html.escape(zh_cells[2]) in chinese
    assert all(isinstance(said, Text) and CJK.search(said.zh) for said in card._SAYS.values())


CORE_WIDGETS = ("deep_stack", "activation_input", "residual_stream")  # 00, 01 and 02's


@pytest.mark.parametrize("name", CORE_WIDGETS)
def test_the_core_paths_widgets_speak_the_language_and_compute_the_same(name):
    """A core notebook's widget, built after ``set_language("zh")``: its HTML title, its controls'
    descriptions and its dropdowns' labels are Chinese (a label that is a name, tanh or RMSNorm,
    stays as it is); the values the controls hand on, and what the figure shows, do not change."""
    import importlib

    import ipywidgets

    build = getattr(importlib.import_module(f"helpers.widgets.{name}"), f"{name}_demo")
    english = build()
    set_language("zh")
    chinese = build()
    set_language("en")
    titles = [d.children[0].value for d in (english, chinese)]
    assert not CJK.search(titles[0]) and CJK.search(titles[1]), titles
    assert list(english.controls) == list(chinese.controls)
    for key, en in english.controls.items():
        zh = chinese.controls[key]
        assert not CJK.search(en.description) and CJK.search(zh.description), (en.description, zh.description)
        assert en.value == zh.value
        if isinstance(en, ipywidgets.Dropdown):
            assert zh._options_values == en._options_values
            for en_label, zh_label in zip(en._options_labels, zh._options_labels, strict=True):
                assert zh_label == en_label or (CJK.search(zh_label) and not CJK.search(en_label)), zh_label
    assert [p["title"] for p in chinese.state["panels"]] == [p["title"] for p in english.state["panels"]]
