"""The core path (notebooks 00-02): the lesson in its order, no statistics words, and a yardstick of at
most 75 minutes. (That notebook 01 prints the lesson's output digit for digit is tests/test_lesson.py's.)
Its Chinese edition (notebooks/zh/) passes the same tests (that the two editions teach the same
code, numbers and sections is tests/test_zh_edition.py's).

The yardstick is a floor, not a goal: a learner reads plain prose faster than dense prose, so words
are never cut to meet it. It counts, per notebook, in minutes: words / 180 + code lines / 10
+ 0.75 per figure + 2 per widget + 5 per exercise. Everything is computed from the stored
.ipynb files, so nothing hides by moving from Markdown into a comment or a printed table:

- words: the Markdown's, the code comments', and those of every text and HTML output (tables
  included; HTML tags, styles, link targets and LaTeX control words such as ``\\mathrm`` are not
  words). A word is a run of letters or digits, joined by dots, hyphens and apostrophes
  (``0.5``, ``1e-5``, ``nn.LayerNorm``, ``LayerNorm's``: one each; numbers count); each CJK
  character counts 180/400 of a word (the Chinese edition's yardstick reads 400 a minute).
- code lines: the non-blank lines of code that are not only a comment, in code cells and in the
  Markdown's fenced code blocks (a solution's code is read too). Every cell counts, the first
  (the bootstrap every notebook opens with, ``helpers.bootstrap``) included: a learner sees it.
- figures: image outputs; widgets: widget outputs; exercises: solutions in a ``<details>`` block
  (summary "Solution", or "参考答案" in the Chinese edition).
  The 5 minutes of an exercise are for the learner's own attempt; the solution's words and code
  lines are counted on top, like any other text.
"""

from __future__ import annotations

import html
import io
import re
import tokenize
from pathlib import Path

import nbformat
import pytest

ROOT = Path(__file__).resolve().parents[1]
NAMES = ("00_what_layernorm_computes.ipynb", "01_before_the_activation_per_token.ipynb",
         "02_layernorm_in_a_transformer.ipynb")
CORE = [ROOT / "notebooks" / name for name in NAMES]
CORE_ZH = [ROOT / "notebooks" / "zh" / name for name in NAMES]  # the Chinese edition
BOTH = CORE + CORE_ZH
MOST_MINUTES = 75  # the yardstick's ceiling for the whole core path, in each edition

WORD = re.compile(r"[A-Za-z0-9]+(?:[.'’-][A-Za-z0-9]+)*")
CJK = re.compile(r"[\u3400-\u9fff\uf900-\ufaff]")
WIDGET = "application/vnd.jupyter.widget-view+json"
STATISTICS_WORDS = re.compile(
    r"bootstrap(?!\.py| cell)|\bBCa\b|Kaplan|censor|pilot seed|restricted mean|\bCI\b|confidence interval"
    r"|p-value|significan|\binterval"
    r"|置信|区间|自举|显著|删失|p ?值|生存分析", re.IGNORECASE)  # and the same in Chinese
# Sections that every notebook has and that teach no lesson point of their own, by edition.
STANDARD_SECTIONS = ("Your turn", "Summary", "References", "Glossary", "What the evidence says")
STANDARD_SECTIONS_ZH = ("动手练习", "小结", "参考文献", "术语表", "实验结果怎么说")
SOLUTION = re.compile(r"<details><summary>(?:Solution|参考答案)")


def _read(path: Path) -> nbformat.NotebookNode:
    return nbformat.read(path, as_version=4)


def words(text: str) -> float:
    """Words of ``text``: runs of letters or digits, plus 180/400 of a word per CJK character."""
    return len(WORD.findall(CJK.sub(" ", text))) + len(CJK.findall(text)) * 180 / 400


FENCE = re.compile(r"^```[^\n]*\n(.*?)^```", re.DOTALL | re.MULTILINE)


def _markdown_code(source: str) -> tuple[str, int]:
    """The comments and the code lines of the fenced code blocks in a Markdown cell."""
    found = [_comments_and_code_lines(block) for block in FENCE.findall(source)]
    return " ".join(c for c, _ in found), sum(n for _, n in found)


def _markdown_text(source: str) -> str:
    source = FENCE.sub(" ", source)  # fenced code: counted as code lines and comments
    source = re.sub(r"\]\([^)]*\)", "]", source)  # link targets are not read
    source = re.sub(r"\\[A-Za-z]+", " ", source)  # nor LaTeX control words
    return re.sub(r"<[^>]+>", " ", source)  # nor tags


def _html_text(value: str) -> str:
    value = re.sub(r"<style.*?</style>", " ", value, flags=re.DOTALL)
    return html.unescape(re.sub(r"<[^>]+>", " ", value))


def _comments_and_code_lines(source: str) -> tuple[str, int]:
    """The comments of a code cell (as one text) and its lines of code (not blank, not only a comment)."""
    comments, lines = [], 0
    try:
        tokens = list(tokenize.generate_tokens(io.StringIO(source).readline))
        comments = [t.string.lstrip("#") for t in tokens if t.type == tokenize.COMMENT]
        code_rows = {row for t in tokens if t.type not in (tokenize.COMMENT, tokenize.NL, tokenize.NEWLINE,
                                                           tokenize.INDENT, tokenize.DEDENT, tokenize.ENDMARKER)
                     for row in range(t.start[0], t.end[0] + 1)}
        lines = len(code_rows)
    except (tokenize.TokenError, SyntaxError, IndentationError):  # not Python: count lines plainly
        for line in source.splitlines():
            stripped = line.strip()
            if stripped.startswith("#"):
                comments.append(stripped.lstrip("#"))
            elif stripped:
                lines += 1
    return " ".join(comments), lines


def _output_text(output) -> str:
    if output.get("output_type") == "stream":
        return output.get("text", "")
    data = output.get("data", {})
    if WIDGET in data or any(k.startswith("image/") for k in data):
        return ""  # counted as a widget or a figure; the text/plain beside it is not shown
    if "text/html" in data:
        return _html_text(data["text/html"])
    return data.get("text/plain", "")


def yardstick(path: Path) -> dict:
    """Every term of the yardstick for one notebook, and the minutes."""
    nb = _read(path)
    terms = {"markdown words": 0.0, "comment words": 0.0, "output words": 0.0, "code lines": 0,
             "figures": 0, "widgets": 0, "exercises": 0}
    for cell in nb.cells:
        if cell.cell_type == "markdown":
            terms["markdown words"] += words(_markdown_text(cell.source))
            comments, lines = _markdown_code(cell.source)
            terms["comment words"] += words(comments)
            terms["code lines"] += lines
            terms["exercises"] += len(SOLUTION.findall(cell.source))
            continue
        if cell.cell_type != "code":
            continue
        comments, lines = _comments_and_code_lines(cell.source)
        terms["comment words"] += words(comments)
        terms["code lines"] += lines
        for output in cell.get("outputs", []):
            data = output.get("data", {})
            terms["figures"] += any(k.startswith("image/") for k in data)
            terms["widgets"] += WIDGET in data
            terms["output words"] += words(_output_text(output))
    all_words = terms["markdown words"] + terms["comment words"] + terms["output words"]
    terms["minutes"] = (all_words / 180 + terms["code lines"] / 10 + 0.75 * terms["figures"]
                        + 2 * terms["widgets"] + 5 * terms["exercises"])
    return terms


def _report(figures: dict) -> str:
    rows = [f"{name}: {t['minutes']:.1f} min = ({t['markdown words']:.0f} + {t['comment words']:.0f} + "
            f"{t['output words']:.0f} words) / 180 + {t['code lines']} code lines / 10 + "
            f"{t['figures']} figures x 0.75 + {t['widgets']} widgets x 2 + {t['exercises']} exercises x 5"
            for name, t in figures.items()]
    return "\n".join(rows)


@pytest.mark.parametrize("edition", [CORE, CORE_ZH], ids=["en", "zh"])
def test_the_core_paths_yardstick_is_at_most_75_minutes(edition):
    figures = {p.name: yardstick(p) for p in edition}
    total = sum(t["minutes"] for t in figures.values())
    assert total <= MOST_MINUTES, f"the core path's yardstick is {total:.1f} minutes:\n{_report(figures)}"
    print(f"\ncore path: {total:.1f} minutes\n{_report(figures)}")


def test_the_yardstick_counts_what_it_says():
    assert words("LayerNorm's mean, 0.5 and x_hat, 1e-5") == 7  # LayerNorm's, mean, 0.5, and, x, hat, 1e-5
    assert words(_markdown_text(r"$\mathrm{E}[x]$, see [here](https://example.org)")) == 4
    solution = "a <details><summary>Solution</summary>\n\n```python\nx = 1  # set x\n```\n\n</details>\n\nb"
    assert words(_markdown_text(solution)) == 3  # a, Solution, b
    assert _markdown_code(solution) == (" set x", 1)
    assert len(SOLUTION.findall(solution + solution.replace("Solution", "参考答案"))) == 2
    assert words("层归一化") == pytest.approx(4 * 180 / 400)
    comments, lines = _comments_and_code_lines("x = 1  # one word\n# two words\n\ny = f'#no'\n")
    assert lines == 2 and words(comments) == 4
    assert _html_text("<style>td {x}</style><td>a <b>b</b></td>").split() == ["a", "b"]


def _id(path: Path) -> str:
    return f"zh/{path.name}" if path.parent.name == "zh" else path.name


@pytest.mark.parametrize("path", BOTH, ids=_id)
def test_each_core_notebook_has_a_widget_an_exercise_and_a_still_figure_under_each_widget(path):
    terms = yardstick(path)
    assert terms["widgets"] >= 1 and terms["exercises"] >= 1
    cells = [c for c in _read(path).cells if c.cell_type == "code"]
    for i, cell in enumerate(cells):
        if any(WIDGET in o.get("data", {}) for o in cell.get("outputs", [])):
            lines = cell.source.splitlines()
            assert lines[0] == "# NBVAL_IGNORE_OUTPUT" and "widget" in lines[1], cell.source
            still = cells[i + 1]
            assert any("image/png" in o.get("data", {}) for o in still.get("outputs", [])), (
                f"{path.name}: no still figure in the code cell after the widget's")


@pytest.mark.parametrize("edition, standard", [(CORE, STANDARD_SECTIONS), (CORE_ZH, STANDARD_SECTIONS_ZH)],
                         ids=["en", "zh"])
def test_the_lesson_points_come_in_order_and_all_of_them(edition, standard):
    points, untagged = [], []
    for path in edition:
        for cell in _read(path).cells:
            if cell.cell_type != "markdown":
                continue
            point = cell.metadata.get("lesson_point")
            if point is not None:
                assert cell.source.startswith("## "), f"{path.name}: lesson_point on a cell that is no section"
                points.append((path.name, point))
            elif cell.source.startswith("## ") and not cell.source[3:].startswith(standard):
                untagged.append((path.name, cell.source.splitlines()[0]))
    numbers = [p for _, p in points]
    assert numbers == sorted(numbers), f"lesson points out of order: {points}"
    assert set(numbers) == set(range(1, 9)), f"lesson points taught: {sorted(set(numbers))}"
    # Only notebook 02, which goes past the lesson (a Transformer block), has sections without a point.
    assert all(name.startswith("02_") for name, _ in untagged), untagged


def _all_text(path: Path) -> list[tuple[str, str]]:
    """(where, text) for every Markdown cell, code comment and text output of ``path``."""
    found = []
    for i, cell in enumerate(_read(path).cells):
        if cell.cell_type == "markdown":
            found.append((f"cell {i}", cell.source))
        elif cell.cell_type == "code":
            found.append((f"cell {i} comments", _comments_and_code_lines(cell.source)[0]))
            found += [(f"cell {i} output", _output_text(o)) for o in cell.get("outputs", [])]
    return found


@pytest.mark.parametrize("path", BOTH, ids=_id)
def test_no_statistics_vocabulary(path):
    cells = _read(path).cells
    first_code = next(i for i, c in enumerate(cells) if c.cell_type == "code")
    for where, text in _all_text(path):
        if where.startswith(f"cell {first_code} "):
            continue  # the bootstrap cell: "It makes `helpers` ... importable"
        match = STATISTICS_WORDS.search(text)
        assert match is None, f"{path.name}, {where}: {match.group(0)!r} in ...{text[max(0, match.start() - 60):match.end() + 60]}..."


def test_the_statistics_words_are_caught():
    for said in ("a 95% CI", "the bootstrap over seeds", "censored runs", "pilot seeds", "p-value",
                 "a confidence interval", "not significant", "BCa", "95% 置信区间", "差异显著", "删失的运行"):
        assert STATISTICS_WORDS.search(said), said


@pytest.mark.parametrize("path", [CORE[0], CORE_ZH[0]], ids=_id)
def test_the_first_hand_computed_layernorm_comes_within_500_words(path):
    nb = _read(path)
    seen, first_code = 0.0, True
    for cell in nb.cells:
        if cell.cell_type == "code" and first_code:
            first_code = False
            continue
        if cell.cell_type == "code" and "torch.sqrt(var" in cell.source and "mean(dim=" in cell.source:
            break
        if cell.cell_type == "markdown":
            seen += words(_markdown_text(cell.source))
        else:
            seen += words(_comments_and_code_lines(cell.source)[0])
            seen += sum(words(_output_text(o)) for o in cell.get("outputs", []))
    else:
        pytest.fail("no cell computes LN by hand (a mean, then torch.sqrt(var + eps))")
    assert seen <= 500, f"the first hand-computed LN comes after {seen:.0f} words"


@pytest.mark.parametrize("path", BOTH, ids=_id)
def test_headings_never_end_a_cell_nor_sit_in_code_nor_follow_an_announcing_colon(path):
    for i, cell in enumerate(_read(path).cells):
        lines = [line for line in cell.source.splitlines() if line.strip()]
        if cell.cell_type == "code":
            assert not any(re.match(r"#+ #{1,6} ", line) or re.match(r"# #{1,6} [A-Z]", line) for line in lines), (
                f"{path.name}, cell {i}: a Markdown heading inside a code cell")
            continue
        if cell.cell_type != "markdown" or not lines:
            continue
        assert not lines[-1].startswith("#"), f"{path.name}, cell {i}: a heading is the cell's last line"
        for before, line in zip(lines, lines[1:], strict=False):
            if line.startswith("#") and not before.startswith("#"):
                assert not before.rstrip().endswith((":", "：")), (
                    f"{path.name}, cell {i}: {before!r} announces code, but a new heading follows")


# ------------------------------------------------ the LayerNorm the learner writes, and the blocks built with it

PY = ROOT / "notebooks" / "py"


def _notebook_namespace(name: str, upto: str) -> dict:
    """Run the code cells of ``notebooks/py/<name>.py`` in order, up to the one that holds ``upto``,
    and return what they defined (as a learner's kernel would hold it)."""
    namespace = {"__name__": "notebook"}
    for chunk in re.split(r"^# %%", (PY / f"{name}.py").read_text(encoding="utf-8"), flags=re.MULTILINE)[1:]:
        header, _, body = chunk.partition("\n")
        if "[markdown]" in header:
            continue
        exec(compile(body, f"<{name}>", "exec"), namespace)  # noqa: S102 (the notebook's own cell)
        if upto in body:
            return namespace
    raise AssertionError(f"{name}: no code cell holds {upto!r}")


def _same_as_torch(ours, theirs, x, *, forward_theirs=None) -> None:
    """``ours`` and ``theirs`` (weights already shared) give the same output and gradients on ``x`` in train mode."""
    import torch

    x1, x2 = x.clone().requires_grad_(), x.clone().requires_grad_()
    out1 = ours.train()(x1)
    out2 = forward_theirs(theirs.train(), x2) if forward_theirs else theirs.train()(x2)
    upstream = torch.randn(out1.shape, generator=torch.Generator().manual_seed(1))
    out1.backward(upstream)
    out2.backward(upstream)
    torch.testing.assert_close(out1, out2, atol=1e-5, rtol=1e-5)
    torch.testing.assert_close(x1.grad, x2.grad, atol=1e-4, rtol=1e-4)


@pytest.mark.parametrize("name", ["00_what_layernorm_computes", "02_layernorm_in_a_transformer"])
def test_the_layernorm_written_in_the_notebook_matches_nn_layernorm(name):
    import torch
    from torch import nn

    LayerNorm = _notebook_namespace(name, "class LayerNorm(nn.Module)")["LayerNorm"]
    assert LayerNorm.__module__ == "notebook" and not issubclass(LayerNorm, nn.LayerNorm)
    torch.manual_seed(0)
    for shape in [(4, 8), (3, 5, 16), (2, 1, 3)]:
        ours, theirs = LayerNorm(shape[-1]), nn.LayerNorm(shape[-1])
        assert list(ours.state_dict()) == list(theirs.state_dict()) == ["weight", "bias"]
        assert all(p.requires_grad for p in ours.parameters())
        with torch.no_grad():
            ours.weight.normal_()
            ours.bias.normal_()
        theirs.load_state_dict(ours.state_dict())
        _same_as_torch(ours, theirs, torch.randn(shape) * 3 + 5)
        for mine, torchs in zip(ours.parameters(), theirs.parameters(), strict=True):
            torch.testing.assert_close(mine.grad, torchs.grad, atol=1e-4, rtol=1e-4)


# our block's parameter prefix -> nn.TransformerEncoderLayer's
ENCODER_KEYS = {"ln_1.": "norm1.", "ln_2.": "norm2.", "attn.": "self_attn.", "mlp.0.": "linear1.", "mlp.2.": "linear2."}


def _encoder_name(key: str) -> str:
    prefix = next(p for p in ENCODER_KEYS if key.startswith(p))
    return ENCODER_KEYS[prefix] + key[len(prefix):]


def test_the_blocks_are_built_with_the_layernorm_written_in_the_notebook():
    ns = _notebook_namespace("02_layernorm_in_a_transformer", "class PostLN(")
    for block in (ns["PreLN"](16, 2), ns["PostLN"](16, 2)):
        assert type(block.ln_1) is ns["LayerNorm"] and type(block.ln_2) is ns["LayerNorm"]
    assert ns["LayerNorm"].__module__ == "notebook"


@pytest.mark.parametrize("form, norm_first", [("PreLN", True), ("PostLN", False)])
def test_the_pre_ln_and_post_ln_blocks_match_torchs_encoder_layer(form, norm_first):
    import torch
    from torch import nn

    ns = _notebook_namespace("02_layernorm_in_a_transformer", "class PostLN(")
    torch.manual_seed(0)
    for d_model, n_heads, batch, seq_len in [(16, 2, 3, 7), (32, 4, 2, 5)]:
        block = ns[form](d_model, n_heads)
        with torch.no_grad():  # gamma and beta away from 1 and 0, so that a misplaced LN shows
            for name, p in block.named_parameters():
                if name.startswith("ln_"):
                    p.normal_()
        layer = nn.TransformerEncoderLayer(d_model, n_heads, dim_feedforward=4 * d_model, dropout=0.0,
                                           activation="gelu", batch_first=True, norm_first=norm_first)
        layer.load_state_dict({_encoder_name(k): v for k, v in block.state_dict().items()})
        mask = torch.ones(seq_len, seq_len, dtype=torch.bool).triu(1)
        _same_as_torch(block, layer, torch.randn(batch, seq_len, d_model),
                       forward_theirs=lambda m, x, mask=mask: m(x, src_mask=mask))
        theirs = dict(layer.named_parameters())
        for name, p in block.named_parameters():
            torch.testing.assert_close(p.grad, theirs[_encoder_name(name)].grad, atol=1e-4, rtol=1e-4)
    wrong = ns["PostLN" if norm_first else "PreLN"](16, 2)  # the other form does not pass
    layer = nn.TransformerEncoderLayer(16, 2, dim_feedforward=64, dropout=0.0, activation="gelu", batch_first=True,
                                       norm_first=norm_first)
    layer.load_state_dict({_encoder_name(k): v for k, v in wrong.state_dict().items()})
    x = torch.randn(2, 5, 16)
    assert not torch.allclose(wrong(x), layer(x, src_mask=torch.ones(5, 5, dtype=torch.bool).triu(1)), atol=1e-3)
