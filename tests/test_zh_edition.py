"""The Chinese edition of the core path (notebooks/zh/) teaches what the English one teaches, in
Chinese sentences. What must stay equal, and nothing more:

- The same notebooks, under the same names.
- The same code: every code cell equal once its comments are set aside (a comment may be Chinese),
  but for one line, the first cell ends with ``helpers.set_language("zh")``
  (``helpers.bootstrap.first_cell("zh")``). The ``# NBVAL_...`` markers count as code.
- Every stored output equal (widget model ids aside), but for what speaks the notebook's language:
  a checker's message (the same ✅ or ❌, exercise and numbers), the closing evidence card (the
  same claims, in the same order, with the same outcome each, its links one folder up) and a
  widget's text/plain (the same class; its repr spells the widget's title and labels).
- The same sections: the same headings, at the same levels, in the same order, with the same
  lesson-point tags, and the same code cells in each. Inside a section the Markdown may be cut into
  cells as Chinese sentences need; the section holds the same numbers, formulas, code (spans and
  fenced blocks, their comments aside) and links as the English one. A link to a deep dive leads one folder up
  (``../1N_*.ipynb``), an "Open in Colab" link to ``notebooks/zh/``.

A change to an English core notebook that its twin does not follow fails here. To follow it: make
the same change in ``notebooks/zh/py/NAME.py`` (Markdown in Chinese), then
``jupytext --sync notebooks/zh/NAME.ipynb``, and, in ``notebooks/zh/``,
``jupyter nbconvert --to notebook --execute --inplace NAME.ipynb`` and ``jupytext --sync NAME.ipynb``.
"""

from __future__ import annotations

import html
import io
import re
import tokenize
from collections import Counter
from pathlib import Path

import nbformat
import pytest

import helpers
from helpers import bootstrap
from helpers.evidence import card

ROOT = Path(__file__).resolve().parents[1]
NOTEBOOKS = ROOT / "notebooks"
ZH = NOTEBOOKS / "zh"
CORE = sorted(p.name for p in NOTEBOOKS.glob("0[0-9]_*.ipynb"))
WIDGET = "application/vnd.jupyter.widget-view+json"
CJK = re.compile(r"[\u3400-\u9fff]")

FENCE = re.compile(r"^```[^\n]*\n.*?^```", re.DOTALL | re.MULTILINE)
CODE_SPAN = re.compile(r"`[^`\n]+`")
FORMULA = re.compile(r"\$\$.+?\$\$|\$[^$\n]+\$", re.DOTALL)
LINK_TARGET = re.compile(r"\]\(([^)\s]+)\)")
TAG = re.compile(r"<[^>]+>")
HEADING = re.compile(r"^(#{1,6})\s", re.MULTILINE)
# A number: digits not glued to a letter (float32, test01 and 3x3 hold none), with its decimals or
# exponent (0.97, 1e-5, 1607.06450).
NUMBER = re.compile(r"(?<![A-Za-z0-9_.])\d+(?:\.\d+)?(?:e-?\d+)?(?![A-Za-z0-9_])")


def _read(path: Path) -> nbformat.NotebookNode:
    return nbformat.read(path, as_version=4)


def markdown_parts(source: str) -> dict[str, list]:
    """What must be the same in a Markdown cell and its translation: heading levels in order, and
    the numbers, formulas, code and link targets it holds (as sorted lists: a translation may
    reorder them)."""
    fences = [_fence_code(fence) for fence in FENCE.findall(source)]  # a solution's comments may be Chinese
    prose = FENCE.sub(" ", source)
    headings = [len(m) for m in HEADING.findall(prose)]
    code = CODE_SPAN.findall(prose)
    prose = CODE_SPAN.sub(" ", prose)
    formulas = FORMULA.findall(prose)
    prose = FORMULA.sub(" ", prose)
    links = LINK_TARGET.findall(prose)
    prose = TAG.sub(" ", LINK_TARGET.sub("] ", prose))
    return {"headings": headings, "numbers": sorted(NUMBER.findall(prose)), "formulas": sorted(formulas),
            "code": sorted(fences + code), "links": sorted(links)}


def _fence_code(fence: str) -> str:
    """A fenced code block with its code's comments cut (:func:`without_comments`), fences kept."""
    first, *body, last = fence.split("\n")
    return "\n".join((first, without_comments("\n".join(body)), last))


def zh_link(target: str) -> str:
    """Where an English notebook's link leads in its Chinese twin: the core notebooks are beside it,
    the deep dives one folder up, and an "Open in Colab" link opens the twin."""
    colab = bootstrap.COLAB_LINK.fullmatch(target)
    if colab is not None:
        return bootstrap.colab_url(f"zh/{colab.group(1)}") if colab.group(1) in CORE else target
    if re.fullmatch(r"[0-9]{2}_[a-z0-9_]+\.ipynb(#.*)?", target) and target.split("#")[0] not in CORE:
        return f"../{target}"
    return target


def test_the_chinese_edition_holds_the_whole_core_path():
    assert CORE, "no core notebook (notebooks/0N_*.ipynb)"
    assert sorted(p.name for p in ZH.glob("*.ipynb")) == CORE


def without_comments(source: str) -> str:
    """A code cell's code: its comments cut (but ``# NBVAL_`` markers), trailing spaces and blank
    lines dropped."""
    lines = source.splitlines()
    tokens = tokenize.generate_tokens(io.StringIO(source).readline)
    for token in tokens:
        if token.type == tokenize.COMMENT and not token.string.startswith("# NBVAL_"):
            row, col = token.start
            lines[row - 1] = lines[row - 1][:col]
    return "\n".join(line.rstrip() for line in lines if line.strip())


@pytest.mark.parametrize("name", CORE)
def test_code_cells_are_equal_but_for_comments_and_the_language_line(name):
    en, zh = (_read(NOTEBOOKS / name), _read(ZH / name))
    en_code = [without_comments(c.source) for c in en.cells if c.cell_type == "code"]
    zh_code = [without_comments(c.source) for c in zh.cells if c.cell_type == "code"]
    assert len(zh_code) == len(en_code), f"{name}: {len(zh_code)} code cells in Chinese, {len(en_code)} in English"
    extra = without_comments(bootstrap.first_cell("zh")).removeprefix(without_comments(bootstrap.FIRST_CELL))
    assert [line for line in extra.splitlines() if line.strip()] == [bootstrap.LANGUAGE_LINES["zh"]]
    assert zh_code[0] == without_comments(bootstrap.first_cell("zh")) and en_code[0] == without_comments(
        bootstrap.FIRST_CELL), f"{name}: the first cell must be the bootstrap's, in Chinese with the language line"
    for i, (a, b) in enumerate(zip(en_code[1:], zh_code[1:], strict=True), 2):
        assert a == b, f"{name}, code cell {i} differs from the English one:\n--- en\n{a}\n--- zh\n{b}"


def _speaks(cell, output) -> str | None:
    """Which of the outputs that speak the notebook's language ``output`` is: a checker's message,
    the evidence card, or neither (None)."""
    data = output.get("data", {})
    if data.get("text/plain", "").startswith(("✅", "❌")):
        return "checker"
    if "evidence_card(" in cell.source and "text/html" in data:
        return "card"
    return None


def _outputs(cell) -> list:
    """A cell's outputs, consecutive chunks of one stream joined (how a run splits a stream into
    chunks depends on timing; nbval joins them too)."""
    joined = []
    for output in cell.get("outputs", []):
        if (joined and output.get("output_type") == "stream" and joined[-1].get("output_type") == "stream"
                and joined[-1].get("name") == output.get("name")):
            joined[-1] = {**joined[-1], "text": joined[-1]["text"] + output["text"]}
        else:
            joined.append(dict(output))
    return joined


def _plain(output) -> dict:
    """An output as stored, but for the widget's model id (new at every run) and its text/plain
    beyond its class's name (the repr spells the widget's title and labels, which speak the
    notebook's language)."""
    output = {k: v for k, v in output.items() if k != "metadata" or v}
    if WIDGET in output.get("data", {}):
        data = output["data"]
        output["data"] = {**data, WIDGET: {k: v for k, v in data[WIDGET].items() if k != "model_id"}}
        if "text/plain" in data:
            output["data"]["text/plain"] = data["text/plain"].split("(")[0]
    return output


def _same_checker_message(en: str, zh: str) -> None:
    assert en[0] == zh[0], f"✅/❌ differ:\n{en}\n{zh}"
    assert en.split()[1].rstrip(":") == re.split(r"[：\s]", zh[1:].strip())[0], f"another exercise:\n{en}\n{zh}"
    assert sorted(NUMBER.findall(en)) == sorted(NUMBER.findall(zh)), f"other numbers:\n{en}\n{zh}"
    assert CJK.search(zh) and not CJK.search(en), f"the Chinese message is not in Chinese:\n{zh}"


def _card_rows(card: str) -> list[tuple[str, ...]]:
    """(claim, model and task, what the runs found, link) of each row of an evidence card."""
    cell = r"<td[^>]*>(.*?)</td>"
    rows = re.findall(rf'<tr>{cell * 3}<td><a href="([^"]+)">', card)
    return [(*(html.unescape(c) for c in row[:3]), row[3]) for row in rows]


def _same_card(en: str, zh: str) -> None:
    en_rows, zh_rows = _card_rows(en), _card_rows(zh)
    assert len(en_rows) == len(zh_rows) == len(card.CORE_ROWS), (en_rows, zh_rows)
    assert sorted(NUMBER.findall(en.split("</p>")[0])) == sorted(NUMBER.findall(zh.split("</p>")[0]))  # the scope
    for row, en_row, zh_row in zip(card.CORE_ROWS, en_rows, zh_rows, strict=True):
        assert zh_row[3] == f"../{en_row[3]}", (en_row, zh_row)
        assert en_row[0] == row.claim.text and zh_row[0] == row.claim.text.zh, (en_row, zh_row)
        en_outcome = [k for k, said in card._SAYS.items() if re.fullmatch(f"{re.escape(said)}(?:, .*)?", en_row[2])]
        zh_outcome = [k for k, said in card._SAYS.items() if re.fullmatch(f"{re.escape(said.zh)}(?:，.*)?", zh_row[2])]
        assert en_outcome == zh_outcome and len(en_outcome) == 1, (en_row, zh_row)
        for i in (1, 2):  # the model's size and the effect's: the same numbers
            assert sorted(NUMBER.findall(en_row[i])) == sorted(NUMBER.findall(zh_row[i])), (en_row[i], zh_row[i])


@pytest.mark.parametrize("name", CORE)
def test_stored_outputs_are_equal_but_for_what_speaks_the_language(name):
    en, zh = (_read(NOTEBOOKS / name), _read(ZH / name))
    en_code = [c for c in en.cells if c.cell_type == "code"]
    zh_code = [c for c in zh.cells if c.cell_type == "code"]
    spoken = Counter()
    for i, (a, b) in enumerate(zip(en_code, zh_code, strict=True), 1):
        outputs_a, outputs_b = _outputs(a), _outputs(b)
        assert len(outputs_a) == len(outputs_b), f"{name}, code cell {i}: {len(outputs_b)} outputs, English {len(outputs_a)}"
        assert a.execution_count == b.execution_count
        for oa, ob in zip(outputs_a, outputs_b, strict=True):
            kind = _speaks(a, oa)
            assert _speaks(b, ob) == kind, f"{name}, code cell {i}: one edition's output speaks, the other's not"
            if kind is None:
                assert _plain(ob) == _plain(oa), f"{name}, code cell {i}: the stored outputs differ"
                continue
            spoken[kind] += 1
            assert set(ob["data"]) == set(oa["data"])
            if kind == "checker":
                _same_checker_message(oa["data"]["text/plain"], ob["data"]["text/plain"])
            else:
                _same_card(oa["data"]["text/html"], ob["data"]["text/html"])
    assert spoken["checker"] >= 1, f"{name}: no checker's message (every core notebook has an exercise)"


#: A link from the Chinese edition back to 00's glossary, which glosses the figures' English labels: an
#: English reader needs none, so it is not compared (its words stay, the link goes).
GLOSSARY_LINK = re.compile(r"\[([^\]]*)\]\(00_what_layernorm_computes\.ipynb\)")


def sections(nb: nbformat.NotebookNode, *, chinese: bool = False) -> list[dict]:
    """The notebook cut at its Markdown headings: each section's heading level and lesson point, the
    number of code cells in it, and what its Markdown holds (:func:`markdown_parts`, links as the
    Chinese twin writes them when ``chinese`` is False)."""
    found = [{"heading": None, "lesson_point": None, "code cells": 0,
              **{part: [] for part in ("numbers", "formulas", "code", "links")}}]
    for cell in nb.cells:
        if cell.cell_type == "code":
            found[-1]["code cells"] += 1
            continue
        if cell.cell_type != "markdown":
            continue
        for chunk in re.split(r"(?=^#{1,6}\s)", cell.source, flags=re.MULTILINE):
            heading = HEADING.match(chunk)
            if heading:
                found.append({"heading": len(heading.group(1)), "code cells": 0,
                              "lesson_point": cell.metadata.get("lesson_point") if cell.source.startswith(chunk) else None,
                              **{part: [] for part in ("numbers", "formulas", "code", "links")}})
            parts = markdown_parts(GLOSSARY_LINK.sub(r"\1", chunk) if chinese else chunk)
            if not chinese:
                parts["links"] = [zh_link(t) for t in parts["links"]]
            for part in ("numbers", "formulas", "code", "links"):
                found[-1][part] = sorted(found[-1][part] + parts[part])
    return found


@pytest.mark.parametrize("name", CORE)
def test_the_sections_correspond_one_to_one(name):
    en, zh = (_read(NOTEBOOKS / name), _read(ZH / name))
    for i, cell in enumerate(zh.cells, 1):
        if cell.cell_type == "markdown":
            assert CJK.search(cell.source), f"{name}, cell {i} is not translated"
    en_sections, zh_sections = sections(en), sections(zh, chinese=True)
    assert [(s["heading"], s["lesson_point"]) for s in zh_sections] == [
        (s["heading"], s["lesson_point"]) for s in en_sections], f"{name}: the sections do not line up"
    for k, (a, b) in enumerate(zip(en_sections, zh_sections, strict=True)):
        for part in a:
            assert b[part] == a[part], (
                f"{name}, section {k}: {part} differ\n  English: {a[part]}\n  Chinese: {b[part]}")


def test_what_the_markdown_comparison_sees():
    source = ("## 3 · The formula\n\nDivide by `dim` ($n$), eps = 1e-5, float32 and test01, "
              "[11](11_batchnorm_in_depth.ipynb):\n\n```python\nx = 2\n```\n")
    parts = markdown_parts(source)
    assert parts == {"headings": [2], "numbers": ["11", "1e-5", "3"], "formulas": ["$n$"],
                     "code": ["```python\nx = 2\n```", "`dim`"], "links": ["11_batchnorm_in_depth.ipynb"]}
    assert zh_link("11_batchnorm_in_depth.ipynb") == "../11_batchnorm_in_depth.ipynb"
    assert zh_link("01_before_the_activation_per_token.ipynb") == "01_before_the_activation_per_token.ipynb"
    assert zh_link(bootstrap.colab_url(CORE[0])) == bootstrap.colab_url(f"zh/{CORE[0]}")
    assert zh_link("https://arxiv.org/abs/1607.06450") == "https://arxiv.org/abs/1607.06450"
    code = "# NBVAL_IGNORE_OUTPUT\n# displays a widget\nx = f('#')  # the x\n\ny = 2\n"
    assert without_comments(code) == "# NBVAL_IGNORE_OUTPUT\nx = f('#')\ny = 2"
    assert without_comments(code.replace("# the x", "# 中文注释")) == without_comments(code)


def test_what_the_section_comparison_sees():
    def nb(*cells):
        return nbformat.v4.new_notebook(cells=[
            nbformat.v4.new_code_cell(c[5:]) if c.startswith("code:") else nbformat.v4.new_markdown_cell(c)
            for c in cells])
    one = nb("## 1 · A\n\nSee 1e-5.", "code:x = 1", "Then `x`.\n\n## 2 · B\n\nDone.")
    split = nb("## 1 · A", "See 1e-5.", "code:x = 1", "Then `x`.", "## 2 · B\n\nDone.")
    assert sections(one) == sections(split)
    assert [(s["heading"], s["code cells"]) for s in sections(one)] == [(None, 0), (2, 1), (2, 0)]
    moved = nb("## 1 · A\n\nSee 1e-5.", "Then `x`.\n\n## 2 · B\n\nDone.", "code:x = 1")
    other_number = nb("## 1 · A\n\nSee 1e-6.", "code:x = 1", "Then `x`.\n\n## 2 · B\n\nDone.")
    for changed in (moved, other_number):
        assert sections(changed) != sections(one)


def test_a_changed_message_card_or_number_is_caught():
    """The comparisons above are not vacuous."""
    en = "❌ rms_norm: case '4 tokens x 8 features': max difference 1.1 from the reference.\n   Hint: h."
    zh = "❌ rms_norm：用例“4 个 token × 8 个特征”：与参考结果的最大差值为 1.1。\n   提示：h。"
    _same_checker_message(en, zh)
    for wrong in (zh.replace("1.1", "1.2"), "✅" + zh[1:], zh.replace("rms_norm", "layer_norm"), en):
        with pytest.raises(AssertionError):
            _same_checker_message(en, wrong)
    helpers.set_language("zh")
    try:
        card_zh = card.evidence_card()
    finally:
        helpers.set_language("en")
    card_en = card.evidence_card()
    _same_card(card_en, card_zh)
    outcomes = [said.zh for said in card._SAYS.values()]
    swapped = card_zh.replace(outcomes[0], "@").replace(outcomes[1], outcomes[0]).replace("@", outcomes[1])
    if swapped != card_zh:
        with pytest.raises(AssertionError):
            _same_card(card_en, swapped)
    with pytest.raises(AssertionError):
        _same_card(card_en, card_en)
    md = "## 4 · Mean 0 and variance 1\n\nTo 4 decimals, `x` and $y$, [11](11_batchnorm_in_depth.ipynb)."
    for changed in (md.replace("4 decimals", "5 decimals"), md.replace("`x`", "`z`"), md.replace("$y$", "$z$"),
                    md.replace("11_", "12_"), md.replace("## 4", "### 4")):
        assert markdown_parts(changed) != markdown_parts(md), changed


def test_the_bootstrap_rewrites_the_chinese_edition_too(tmp_path):
    """`python -m helpers.bootstrap` makes every first cell and Colab link current in notebooks/zh/
    and README.zh.md as it does in notebooks/ and README.md (here on a copy, after tampering)."""
    (tmp_path / "notebooks" / "zh").mkdir(parents=True)
    for readme in ("README.md", "README.zh.md"):
        (tmp_path / readme).write_text((ROOT / readme).read_text(encoding="utf-8"), encoding="utf-8")
    for name in CORE:
        for folder in ("notebooks", "notebooks/zh"):
            (tmp_path / folder / name).write_bytes((ROOT / folder / name).read_bytes())
    assert bootstrap._rewrite(tmp_path) == []  # all current already
    ours = bootstrap.REPO_URL.removeprefix("https://github.com/")
    readme = tmp_path / "README.zh.md"
    readme.write_text(readme.read_text(encoding="utf-8").replace(ours, "someone/fork"), encoding="utf-8")
    first = ZH / CORE[0]
    nb = _read(first)
    nb.cells[0].source = bootstrap.FIRST_CELL  # the language line lost
    for cell in nb.cells:
        cell.source = cell.source.replace(ours, "someone/fork")
    nbformat.write(nb, tmp_path / "notebooks" / "zh" / CORE[0])
    assert sorted(bootstrap._rewrite(tmp_path)) == ["README.zh.md", f"zh/{CORE[0]}"]
    assert readme.read_text(encoding="utf-8") == (ROOT / "README.zh.md").read_text(encoding="utf-8")
    assert _read(tmp_path / "notebooks" / "zh" / CORE[0]) == _read(first)
