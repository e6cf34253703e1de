"""The lesson's published numbers, digit for digit: from torch, from helpers, and in notebook 01.

tests/data/lesson_output.txt is a verbatim copy of what the lesson prints (its "程序执行结果"
block). A learner's clone has no shared/ folder, so the tests below read that copy; where the
lesson itself is at hand (beside the clone, in ../shared/seed/), one more test checks that the
copy, and notebook 01's copy of the lesson's code, are faithful to it; elsewhere it is skipped.
"""

from __future__ import annotations

import contextlib
import io
import re
from pathlib import Path

import nbformat
import pytest
import torch
import torch.nn as nn

import helpers
from helpers.lessons.group_stats import group_stats

ROOT = Path(__file__).resolve().parents[1]
DATA = ROOT / "tests" / "data" / "lesson_output.txt"
LESSON = ROOT.parent / "shared" / "seed" / "layer_normalization_lesson.zh.txt"
NOTEBOOK = ROOT / "notebooks" / "01_before_the_activation_per_token.ipynb"  # the core path's notebook 01
TENSOR = re.compile(r"tensor\((.*?)\)", re.DOTALL)
NUMBER = re.compile(r"-?\d+\.\d+")


def lesson_output() -> str:
    """The lesson's printed output, from the data file (its header stripped)."""
    text = DATA.read_text(encoding="utf-8")
    header, output = text.split("\n\n", 1)
    assert all(line.startswith("# ") for line in header.splitlines())
    return output


def blocks() -> list[str]:
    """The 8 printed tensors, in order: test01 per token, per sentence; then test02's per-token
    mean, variance, output, and per-sentence mean, variance, output."""
    found = [f"tensor({m})" for m in TENSOR.findall(lesson_output())]
    assert len(found) == 8, f"expected 8 printed tensors in {DATA.name}, found {len(found)}"
    return found


def numbers(block: str) -> torch.Tensor:
    return torch.tensor([float(n) for n in NUMBER.findall(block)], dtype=torch.float64)


@pytest.fixture(scope="module")
def batch_inputs() -> torch.Tensor:
    """The lesson's input: torch.manual_seed(42), then torch.rand(size=(2, 3, 4))."""
    state = torch.random.get_rng_state()
    torch.manual_seed(42)
    x = torch.rand(size=(2, 3, 4))
    torch.random.set_rng_state(state)
    return x


def printed(*values) -> str:
    """What ``print(*values)`` writes."""
    out = io.StringIO()
    print(*values, file=out)
    return out.getvalue()


def expected_text(token, sentence, token_mean, token_var, sentence_mean, sentence_var,
                  token_by_hand=None, sentence_by_hand=None) -> str:
    """The lesson's whole output, rebuilt from tensors the way its test01 and test02 print them."""
    return "".join([
        printed(token), printed(sentence), printed("-" * 50),
        printed("均值:", token_mean, "方差:", token_var),
        printed(token if token_by_hand is None else token_by_hand),
        printed("均值:", sentence_mean, "方差:", sentence_var),
        printed(sentence if sentence_by_hand is None else sentence_by_hand),
    ])


def test_the_data_file_holds_eight_tensors_of_the_right_sizes():
    sizes = [numbers(b).numel() for b in blocks()]
    assert sizes == [24, 24, 6, 6, 24, 2, 2, 24]
    assert lesson_output().count("均值:") == 2 and lesson_output().count("方差:") == 2


def test_torch_reproduces_the_lessons_output_exactly(batch_inputs):
    x = batch_inputs
    token = nn.LayerNorm(4, eps=1e-5, elementwise_affine=False, bias=False)(x)
    sentence = nn.LayerNorm((3, 4), eps=1e-5, elementwise_affine=False, bias=False)(x)
    token_mean, token_var = torch.mean(x, dim=2), torch.var(x, dim=2, unbiased=False)
    sentence_mean, sentence_var = torch.mean(x, dim=(1, 2)), torch.var(x, dim=(1, 2), unbiased=False)
    token_by_hand = (x - token_mean.view(2, 3, 1)) / torch.sqrt(token_var.view(2, 3, 1) + 1e-5)
    sentence_by_hand = (x - sentence_mean.view(2, 1, 1)) / torch.sqrt(sentence_var.view(2, 1, 1) + 1e-5)
    assert expected_text(token, sentence, token_mean, token_var, sentence_mean, sentence_var,
                         token_by_hand, sentence_by_hand) == lesson_output()


def test_helpers_layer_norm_prints_the_lessons_tensors(batch_inputs):
    token = helpers.layer_norm(batch_inputs, (4,))
    sentence = helpers.layer_norm(batch_inputs, (3, 4))
    b = blocks()
    assert str(token) == b[0] == b[4]
    assert str(sentence) == b[1] == b[7]
    # and the modules, the lesson's way (no gamma, no beta)
    assert str(helpers.LayerNorm(4, elementwise_affine=False, bias=False)(batch_inputs)) == b[0]
    assert str(helpers.LayerNorm((3, 4), elementwise_affine=False, bias=False)(batch_inputs)) == b[1]


@pytest.mark.parametrize("dims, mean_block, var_block", [(2, 2, 3), ((1, 2), 5, 6)],
                         ids=["per token", "per sentence"])
def test_group_stats_gives_the_lessons_means_and_variances(batch_inputs, dims, mean_block, var_block):
    stats = group_stats(batch_inputs, dims)
    b = blocks()
    assert torch.equal(torch.tensor(stats["mean"].values).round(decimals=4), numbers(b[mean_block]))
    assert torch.equal(torch.tensor(stats["var"].values).round(decimals=4), numbers(b[var_block]))


def test_a_wrong_number_would_be_caught(batch_inputs):
    # The comparison is exact: one digit off in the expected text fails it.
    token = helpers.layer_norm(batch_inputs, (4,))
    assert str(token).replace("0.4168", "0.4169", 1) != blocks()[0]


def _lesson_cell() -> nbformat.NotebookNode:
    if not NOTEBOOK.is_file():
        pytest.skip(f"{NOTEBOOK.name} (the core path's notebook 01) is not in this checkout")
    nb = nbformat.read(NOTEBOOK, as_version=4)
    cells = [c for c in nb.cells if c.cell_type == "code" and "def test01" in c.source]
    assert len(cells) == 1, "notebook 01 must hold the lesson's code in one cell"
    return cells[0]


def test_notebook_01_stores_the_lessons_output_exactly():
    cell = _lesson_cell()
    streams = [o for o in cell.outputs if o.output_type == "stream"]
    assert {o.name for o in streams} == {"stdout"}
    assert "".join(o.text for o in streams) == lesson_output()


def test_notebook_01s_lesson_cell_prints_the_lessons_output():
    out = io.StringIO()
    with torch.random.fork_rng(), contextlib.redirect_stdout(out):  # it seeds the global RNG
        exec(compile(_lesson_cell().source, "<lesson cell>", "exec"), {"__name__": "__main__"})
    assert out.getvalue() == lesson_output()


def _code_without_comments(code: str) -> list[str]:
    lines = [re.sub(r"\s*#.*$", "", line).rstrip() for line in code.splitlines()]
    return [line for line in lines if line]


def test_the_copies_are_faithful_to_the_lesson():
    if not LESSON.is_file():
        # Nothing in the test suite may need a file outside the clone: the tests above check the
        # committed copy (tests/data/), and this one only compares that copy with its source.
        pytest.skip("the lesson itself (../shared/seed/) is not beside this clone; the committed copy "
                    "in tests/data/ is what the other tests check")
    text = LESSON.read_text(encoding="utf-8")
    published = text.split("程序执行结果：\n\n", 1)[1]
    assert lesson_output() == published.rstrip("\n") + "\n"
    code = text[text.index("import torch.nn as nn"):text.index("程序执行结果")]
    assert _code_without_comments(_lesson_cell().source) == _code_without_comments(code)
