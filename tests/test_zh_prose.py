"""The Chinese edition reads as Chinese (DESIGN.md, "The Chinese edition is written as Chinese").

What tests/test_zh_edition.py keeps equal between the editions (code, numbers, formulas, sections)
says nothing about how the Chinese reads. These tests hold what can be counted:

- Few colons, semicolons and dashes: in a notebook's Markdown, outside fenced code, code spans,
  formulas and tables, at most 10 per 1,000 Chinese characters, counting "：" ":" "；" ";" and each
  run of dashes ("——"). Sentences chained by colons and semicolons are English syntax; the lesson
  has about 3 per 1,000, d2l-zh's batch-normalization chapter about 4.
- No "§" (a Chinese text writes 第 N 节) and no italic emphasis on Chinese text (a CJK font has no
  italic; the browser slants the glyphs). Italic English titles in the references are fine.
- One term per concept: the retired variants below appear nowhere a Chinese reader reads, neither
  in notebooks/zh/ (Markdown and code comments), nor in README.zh.md, nor in any Chinese string of
  ``helpers/`` (the checkers' hints, the card, the widgets' labels).
- The glossary of notebook 00 maps each term to the one d2l-zh (《动手学深度学习》) uses, which a
  reader will meet there.
"""

from __future__ import annotations

import ast
import io
import re
import tokenize
from pathlib import Path

import nbformat
import pytest

ROOT = Path(__file__).resolve().parents[1]
ZH = sorted((ROOT / "notebooks" / "zh").glob("0[0-9]_*.ipynb"))
README_ZH = ROOT / "README.zh.md"
CJK = re.compile(r"[\u3400-\u9fff]")
MOST_MARKS_PER_1000 = 10

FENCE = re.compile(r"^```[^\n]*\n.*?^```", re.DOTALL | re.MULTILINE)
CODE_SPAN = re.compile(r"`[^`\n]+`")
FORMULA = re.compile(r"\$\$.+?\$\$|\$[^$\n]+\$", re.DOTALL)
TABLE_ROW = re.compile(r"^\s*\|.*$", re.MULTILINE)
LINK_TARGET = re.compile(r"\]\([^)\s]*\)")
TAG = re.compile(r"<[^>]+>")
MARK = re.compile(r"[:：;；]|—+")
# A span in single asterisks or underscores (not **bold**) that holds a Chinese character.
ITALIC = re.compile(r"(?<![*A-Za-z0-9])\*(?!\*)[^*\n]*[\u3400-\u9fff][^*\n]*(?<!\*)\*(?!\*)"
                    r"|(?<![_A-Za-z0-9])_(?!_)[^_\n]*[\u3400-\u9fff][^_\n]*(?<!_)_(?![_A-Za-z0-9])")

#: Retired variants, each with the one term that replaces it.
RETIRED = {
    r"(?<!原)课程": "the lesson is 原课程, everywhere",
    r"§": "第 N 节, or the section's name",
    r"归一化方式": "normalize is 归一化 (and standardize 标准化)",
    r"(?:Transformer|Pre-LN|Post-LN|编码器|解码器)\s*模块|[0-9二三四五六七八九十两几多每各]\s*个\s*模块"
    r"|模块之间|所有模块|各个模块|模块的编号": "a Transformer block is 块; 模块 is only an nn.Module",
    r"滑动统计量|滑动估计|运行统计量": "running statistics are 移动平均值",
    r"小部件|交互演示|[\u3400-\u9fff]\s*[Ww]idget|[Ww]idget\s*[\u3400-\u9fff]": "a widget is 交互图",
    r"平坦的两端|平坦的一端": "tanh's flat tails are its 饱和区",
    r"最终的 ?LN": "the final LN is 最后的 LN",
    r"规范化": "normalization is 归一化 (d2l-zh's 规范化 only in the glossary's d2l-zh column)",
    r"词元": "a token is token (d2l-zh's 词元 only in the glossary's d2l-zh column)",
}


def prose(source: str) -> str:
    """A Markdown cell's prose: without fenced code, code spans, formulas, tables, link targets
    and HTML tags."""
    for pattern in (FENCE, CODE_SPAN, FORMULA, TABLE_ROW):
        source = pattern.sub(" ", source)
    return TAG.sub(" ", LINK_TARGET.sub("]", source))


def punctuation(text: str) -> tuple[int, int]:
    """(colons, semicolons and dash runs; Chinese characters) in ``text``."""
    return len(MARK.findall(text)), len(CJK.findall(text))


def _markdown(path: Path) -> list[str]:
    return [c.source for c in nbformat.read(path, as_version=4).cells if c.cell_type == "markdown"]


def _comments(source: str) -> list[str]:
    return [t.string for t in tokenize.generate_tokens(io.StringIO(source).readline) if t.type == tokenize.COMMENT]


def _chinese_strings_of_helpers() -> list[tuple[str, str]]:
    """(where, text) for every string constant in helpers/ that holds a Chinese character."""
    found = []
    for path in sorted((ROOT / "helpers").rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.Constant) and isinstance(node.value, str) and CJK.search(node.value):
                found.append((f"{path.relative_to(ROOT)}:{node.lineno}", node.value))
    return found


def what_a_chinese_reader_reads() -> list[tuple[str, str]]:
    """(where, text): the Chinese notebooks' Markdown (the glossary's tables left out: they name
    d2l-zh's terms on purpose) and code comments, README.zh.md, and helpers' Chinese strings."""
    found = []
    for path in ZH:
        for i, cell in enumerate(nbformat.read(path, as_version=4).cells):
            if cell.cell_type == "markdown":
                found.append((f"{path.name}, cell {i}", TABLE_ROW.sub(" ", cell.source)))
            elif cell.cell_type == "code":
                found += [(f"{path.name}, cell {i}, a comment", c) for c in _comments(cell.source)]
    found.append((README_ZH.name, README_ZH.read_text(encoding="utf-8")))
    return found + _chinese_strings_of_helpers()


@pytest.mark.parametrize("path", ZH, ids=[p.name for p in ZH])
def test_few_colons_semicolons_and_dashes_per_1000_chinese_characters(path):
    marks, chinese = punctuation("\n".join(prose(s) for s in _markdown(path)))
    assert chinese > 1000, f"{path.name}: only {chinese} Chinese characters of prose"
    assert marks * 1000 <= MOST_MARKS_PER_1000 * chinese, (
        f"{path.name}: {marks} colons, semicolons and dashes in {chinese} Chinese characters "
        f"({marks * 1000 / chinese:.1f} per 1,000; at most {MOST_MARKS_PER_1000})")


@pytest.mark.parametrize("path", [*ZH, README_ZH], ids=[p.name for p in [*ZH, README_ZH]])
def test_no_italic_chinese(path):
    texts = _markdown(path) if path.suffix == ".ipynb" else [README_ZH.read_text(encoding="utf-8")]
    for text in texts:
        text = CODE_SPAN.sub(" ", FORMULA.sub(" ", FENCE.sub(" ", text)))
        match = ITALIC.search(text)
        assert match is None, f"{path.name}: italic Chinese {match.group(0)!r} (emphasis in Chinese is bold, or none)"


@pytest.mark.parametrize("pattern", list(RETIRED))
def test_no_retired_variant(pattern):
    for where, text in what_a_chinese_reader_reads():
        match = re.search(pattern, text)
        assert match is None, (f"{where}: {match.group(0)!r} in ...{text[max(0, match.start() - 40):match.end() + 40]}... "
                               f"({RETIRED[pattern]})")


def test_the_glossary_gives_d2l_zhs_terms():
    glossary = next(s for s in _markdown(ZH[0]) if s.startswith("## 术语表"))
    rows = [[c.strip() for c in row.strip().strip("|").split("|")] for row in TABLE_ROW.findall(glossary)]
    mapped = {row[0]: row[1:] for row in rows if len(row) == 3}
    for english, ours, d2l in [("Layer Normalization (LN)", "层归一化", "层规范化"),
                               ("Batch Normalization (BN)", "批量归一化", "批量规范化"),
                               ("token / feature / sample", "token", "词元"), ("biased variance", "有偏方差", ""),
                               ("residual connection / residual stream", "残差流", "残差连接"),
                               ("Transformer block / sub-layer", "块", "块"), ("module (nn.Module)", "模块", "块")]:
        assert english in mapped, f"the glossary has no row {english!r}"
        assert ours in mapped[english][0] and d2l in mapped[english][1], (english, mapped[english])


def test_what_these_tests_see():
    """The counts and patterns above are not vacuous."""
    assert prose("见 `a:b`，$x:y$，[11](11_x.ipynb)\n\n| a：b |\n|---|\n") .count(":") == 0
    assert punctuation("原课程说：先算均值；再——除以标准差。") == (3, 14)
    for italic in ("这是*特征*。", "a _样本_ b"):
        assert ITALIC.search(italic), italic
    for fine in ("**特征**", "*Layer Normalization*, 2016", "`x_1` 和 `x_2`", "snake_case 名字_"):
        assert not ITALIC.search(fine), fine
    for said in ("本课程", "课程里的形状", "§3", "归一化方式", "Transformer 模块", "2 个 Pre-LN 模块", "6 个模块",
                 "八个模块", "每个模块有两个子层", "滑动统计量", "小部件", "平坦的两端", "最终的 LN", "批量规范化", "词元"):
        assert any(re.search(p, said) for p in RETIRED), said
    for fine in ("原课程", "把 LayerNorm 写成模块", "模块的 `state_dict`", "八个块", "第 3 节", "移动平均值", "LN 是一个模块"):
        assert not any(re.search(p, fine) for p in RETIRED), fine
