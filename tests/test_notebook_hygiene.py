"""What every stored notebook must be, before nbval even runs it.

Executed top to bottom (no unexecuted cell, execution counts exactly 1..n), no stored error,
no machine path in any output, paired with an in-sync py:percent script in the py/ folder beside it
(so that the file browser lists only notebooks), first code cell exactly
``helpers.bootstrap.FIRST_CELL`` (in the Chinese edition, notebooks/zh/, ``first_cell("zh")``: the
same and the line that sets the language), every ``# NBVAL_IGNORE_OUTPUT`` exact (nbval ignores
anything else) and explained on a comment line of its own, listed in its README (README.md; the
Chinese edition in README.zh.md) and in a 00_ notebook's map in its folder,
and with its cell boundaries where a reader sees them: no Markdown heading inside a code cell, no
heading left as the last line of a Markdown cell, no paragraph that announces code (ends with a
colon, ":" or "：") followed by a new heading in the same cell.
"""

from __future__ import annotations

import importlib.util
import json
import re
from pathlib import Path

import jupytext
import nbformat
import pytest
import tomllib

ROOT = Path(__file__).resolve().parents[1]
NOTEBOOKS_DIR = ROOT / "notebooks"
ZH_DIR = NOTEBOOKS_DIR / "zh"  # the core path in Chinese
FOLDERS = {"en": NOTEBOOKS_DIR, "zh": ZH_DIR}
READMES = {"en": ROOT / "README.md", "zh": ROOT / "README.zh.md"}
NOTEBOOKS = sorted(NOTEBOOKS_DIR.glob("*.ipynb")) + sorted(ZH_DIR.glob("*.ipynb"))
START_HERE = NOTEBOOKS_DIR / "00_what_layernorm_computes.ipynb"  # the core path's first notebook
NAME = re.compile(r"^[0-9]{2}_[a-z0-9_]+\.ipynb$")

# Paths of this machine (or any developer's) that must never be stored in an output.
MACHINE_PATH = re.compile(
    r"/root/|/tmp/|/work/|/home/[^/\s\"']+/|/Users/[^/\s\"']+/|site-packages|dist-packages"
    r"|[A-Za-z]:\\\\?Users\\\\?"
)
IGNORE_MARKER = "# NBVAL_IGNORE_OUTPUT"
NBVAL_MARKERS = {"NBVAL_IGNORE_OUTPUT", "NBVAL_CHECK_OUTPUT", "NBVAL_SKIP", "NBVAL_RAISES_EXCEPTION"}
# The convention: only a cell that displays a widget, prints a timing or shows a live training
# run (whose digits depend on the CPU) ignores its output, and another comment line says which.
IGNORE_REASON = re.compile(
    r"\b(widgets?|sliders?|dashboards?|controls?|interactive|timings?|timed|times?|"
    r"seconds|speed|benchmarks?|progress|live)\b",
    re.IGNORECASE,
)


def _bootstrap():
    """helpers/bootstrap.py, loaded on its own (without importing the rest of the package)."""
    spec = importlib.util.spec_from_file_location("_bootstrap", ROOT / "helpers" / "bootstrap.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _read(path: Path) -> nbformat.NotebookNode:
    return nbformat.read(path, as_version=4)


def _code_cells(nb) -> list:
    return [c for c in nb.cells if c.cell_type == "code"]


def _output_texts(output) -> list[str]:
    """Every textual part of one output (image data is skipped: base64 can spell anything)."""
    texts = []
    if output.get("output_type") == "stream":
        texts.append(output.get("text", ""))
    elif output.get("output_type") == "error":
        texts.extend([output.get("ename", ""), output.get("evalue", ""),
                      *output.get("traceback", [])])
    for mime, value in output.get("data", {}).items():
        if mime.startswith("image/") and mime != "image/svg+xml":
            continue
        texts.append(value if isinstance(value, str) else json.dumps(value))
    return texts


def _ids(paths):
    return [p.relative_to(NOTEBOOKS_DIR).as_posix() for p in paths]


def _language(path: Path) -> str:
    return "zh" if path.parent == ZH_DIR else "en"


def test_there_are_notebooks_and_a_start_here():
    assert NOTEBOOKS, "notebooks/ holds no .ipynb"
    if not any(p.name.startswith("00_") for p in NOTEBOOKS):
        pytest.skip("no core-path notebook (00_*) in this checkout")
    assert START_HERE.is_file(), f"notebooks/{START_HERE.name} (make lab's first notebook) is missing"


@pytest.mark.parametrize("path", NOTEBOOKS, ids=_ids(NOTEBOOKS))
class TestNotebook:
    def test_name_is_NN_title(self, path):
        assert NAME.match(path.name), f"{path.name}: notebooks are named NN_title.ipynb"

    def test_is_valid_nbformat4_with_python3_kernel(self, path):
        nb = _read(path)
        nbformat.validate(nb)
        kernelspec = nb.metadata.get("kernelspec", {})
        assert kernelspec.get("name") == "python3", (
            f"{path.name}: kernelspec name is {kernelspec.get('name')!r}, expected 'python3' "
            "(what Colab, Binder and a fresh `make lab` have)")

    def test_every_code_cell_executed_in_order(self, path):
        cells = _code_cells(_read(path))
        assert cells, f"{path.name} has no code cell"
        unexecuted = [i for i, c in enumerate(cells, 1) if c.get("execution_count") is None]
        assert not unexecuted, (f"{path.name}: code cells {unexecuted} (counting code cells from 1) "
                                "are not executed: run the notebook top to bottom and save it")
        counts = [c.execution_count for c in cells]
        assert counts == list(range(1, len(cells) + 1)), (
            f"{path.name}: execution counts are {counts}, expected 1..{len(cells)}: "
            "restart the kernel, run all, save")

    def test_no_error_output(self, path):
        for i, cell in enumerate(_code_cells(_read(path)), 1):
            for output in cell.get("outputs", []):
                assert output.get("output_type") != "error", (
                    f"{path.name}, code cell {i}: stored error "
                    f"{output.get('ename')}: {output.get('evalue')}")
                text = "\n".join(_output_texts(output))
                assert "Traceback (most recent call last)" not in text, (
                    f"{path.name}, code cell {i}: a stored output holds a traceback")
                assert "Error displaying widget" not in text

    def test_no_machine_path_in_outputs(self, path):
        for i, cell in enumerate(_code_cells(_read(path)), 1):
            for output in cell.get("outputs", []):
                for text in _output_texts(output):
                    match = MACHINE_PATH.search(text)
                    assert match is None, (
                        f"{path.name}, code cell {i}: an output holds a machine path "
                        f"{match.group(0)!r}: ...{text[max(0, match.start() - 60):match.end() + 60]}...")

    def test_first_code_cell_is_the_bootstrap(self, path):
        cells = _code_cells(_read(path))
        language = _language(path)
        assert cells and cells[0].source == _bootstrap().first_cell(language), (
            f"{path.name}: the first code cell must be exactly helpers.bootstrap.first_cell({language!r}) "
            "(helpers.bootstrap.FIRST_CELL, and in the Chinese edition the line that sets the language; "
            "`python -m helpers.bootstrap` writes it)")

    def test_nbval_markers_are_exact_and_ignore_output_says_why(self, path):
        for i, cell in enumerate(_code_cells(_read(path)), 1):
            lines = [line.strip() for line in cell.source.splitlines()]
            # nbval recognises a marker only as a comment line of its own, exactly
            # (`# NBVAL_IGNORE_OUTPUT: why` is silently NOT a marker).
            for line in lines:
                if "NBVAL_" in line:
                    assert line.startswith("#") and line.lstrip("#").strip() in NBVAL_MARKERS, (
                        f"{path.name}, code cell {i}: {line!r} is not an nbval marker: write it "
                        f"alone on its line (e.g. `{IGNORE_MARKER}`) and say why on the next line")
            if IGNORE_MARKER not in lines:
                continue
            reasons = [line.lstrip("#").strip() for line in lines
                       if line.startswith("#") and "NBVAL_" not in line]
            assert any(IGNORE_REASON.search(r) for r in reasons), (
                f"{path.name}, code cell {i}: `{IGNORE_MARKER}` needs a comment line saying why "
                "(only cells that display a widget, print a timing or show a live training run may "
                "ignore their output), "
                f"e.g. `{IGNORE_MARKER}` then `# displays a widget`")

    def test_has_an_in_sync_py_percent_pair(self, path):
        script = path.parent / "py" / f"{path.stem}.py"
        where = path.relative_to(ROOT).as_posix()
        assert script.is_file(), (f"{path.name} has no py:percent pair py/{script.name}: "
                                  f"run `.venv/bin/jupytext --sync {where}`")
        script_text = script.read_text(encoding="utf-8")
        assert "# %%" in script_text, f"{script.name} is not in the py:percent format"
        stored = jupytext.read(script, fmt="py:percent")
        notebook = jupytext.read(path)
        pairs_ipynb = [(c.cell_type, c.source.rstrip()) for c in notebook.cells]
        pairs_py = [(c.cell_type, c.source.rstrip()) for c in stored.cells]
        sync = f"run `.venv/bin/jupytext --sync {where}`"  # pairs with the py/ folder beside it
        if pairs_ipynb != pairs_py:
            differ = next((i for i, (a, b) in enumerate(zip(pairs_ipynb, pairs_py, strict=False))
                           if a != b), min(len(pairs_ipynb), len(pairs_py)))
            pytest.fail(
                f"{path.name} and {script.name} are out of sync (first difference at cell "
                f"{differ + 1}; {len(pairs_ipynb)} cells vs {len(pairs_py)}): edit one, then "
                f"{sync} and re-execute the notebook")
        # What JupyterLab's jupytext checks before it opens a pair whose .ipynb is newer: both
        # sides written out again must match, header (kernelspec, jupytext metadata) included;
        # where they don't, Lab refuses to open the notebook (HTTP 400).
        from_ipynb = jupytext.writes(notebook, fmt="py:percent")
        assert jupytext.writes(stored, fmt="py:percent") == from_ipynb, (
            f"{script.name} and {path.name} differ in their metadata header, so JupyterLab "
            f"would refuse to open {path.name}: {sync}")
        # And the script is byte for byte what jupytext writes (but for jupytext's version).
        version = re.compile(r"^#\s+jupytext_version: .*$", re.MULTILINE)
        assert version.sub("", from_ipynb) == version.sub("", script_text), (
            f"{script.name} is not exactly what jupytext writes for {path.name}: {sync}")

    def test_listed_in_readme_and_start_here(self, path):
        readme_path = READMES[_language(path)]
        readme = readme_path.read_text(encoding="utf-8")
        listed_as = path.relative_to(ROOT).as_posix() if _language(path) == "zh" else path.name
        assert listed_as in readme, f"{readme_path.name}'s notebook list does not mention {listed_as}"
        # The map is in a 00_ notebook of the same folder: the core path's first one lists every notebook.
        starts = [p for p in NOTEBOOKS if p.name.startswith("00_") and p != path and p.parent == path.parent]
        if path.name.startswith("00_") or not starts:
            return
        listed = any(path.name in "\n".join(c.source for c in _read(p).cells) for p in starts)
        assert listed, f"no 00_ notebook's map ({[p.name for p in starts]}) mentions {path.name}"

    def test_cell_boundaries_are_where_a_reader_sees_them(self, path):
        problems = cell_boundary_problems(_read(path))
        assert not problems, f"{path.name}: " + "; ".join(problems)


@pytest.mark.parametrize("folder", list(FOLDERS.values()), ids=list(FOLDERS))
def test_every_py_percent_script_has_its_notebook(folder):
    orphans = [p.name for p in (folder / "py").glob("*.py") if not (folder / f"{p.stem}.ipynb").is_file()]
    assert not orphans, f"{folder.name}/py/ scripts without a paired notebook in {folder.name}/: {orphans}"


@pytest.mark.parametrize("folder", list(FOLDERS.values()), ids=list(FOLDERS))
def test_the_file_browser_lists_only_notebooks(folder):
    """The .py pairs live in py/ beside the notebooks, not among the notebooks a learner opens;
    notebooks/jupytext.toml says so for notebooks/ and the folders in it (jupytext reads the
    nearest one up from a notebook, and notebooks/zh/ has none of its own)."""
    beside = sorted(p.name for p in folder.glob("*.py"))
    assert not beside, f"py:percent scripts beside the notebooks (pair them into {folder.name}/py/): {beside}"
    config = tomllib.loads((NOTEBOOKS_DIR / "jupytext.toml").read_text(encoding="utf-8"))
    assert config["formats"] == "ipynb,py//py:percent"
    assert not (ZH_DIR / "jupytext.toml").exists()


# ------------------------------------------------------------ cell boundaries

# A Markdown heading written in a code cell shows as a comment, never as a heading:
# `# ## Exercises`, `## Exercises`, `#### 1. ...`.
HEADING_IN_CODE = re.compile(r"^\s*(#\s*)?#{2,6}\s+\S")
HEADING = re.compile(r"^#{1,6}\s+\S")
FENCE = re.compile(r"^\s*(```|~~~)")


def _prose_lines(source: str) -> list[str]:
    """A Markdown cell's lines outside fenced code blocks (a fence's `# comment` is no heading)."""
    lines, fenced = [], False
    for line in source.splitlines():
        if FENCE.match(line):
            fenced = not fenced
            continue
        if not fenced:
            lines.append(line)
    return lines


def cell_boundary_problems(nb) -> list[str]:
    """Where a notebook's cell boundaries are not where its reader sees them, in words:

    - a Markdown heading inside a code cell (a comment line such as `# ## Exercises`);
    - a heading as the last line of a Markdown cell (its section starts in the next cell);
    - a paragraph that announces code (its last line ends with a colon, ":" or "：") followed by
      a new heading in the same Markdown cell: the code it announces is no longer next to it.
    """
    problems = []
    for i, cell in enumerate(nb.cells, 1):
        if cell.cell_type == "code":
            for line in cell.source.splitlines():
                if HEADING_IN_CODE.match(line):
                    problems.append(f"cell {i} (code) holds a Markdown heading as a comment: {line.strip()!r}")
        elif cell.cell_type == "markdown":
            lines = [line for line in _prose_lines(cell.source) if line.strip()]
            if lines and HEADING.match(lines[-1]):
                problems.append(f"cell {i} (Markdown) ends with a heading: {lines[-1].strip()!r}")
            for before, after in zip(lines, lines[1:], strict=False):
                if before.rstrip().endswith((":", "：")) and not HEADING.match(before) and HEADING.match(after):
                    problems.append(f"cell {i} (Markdown): a paragraph announcing code ({before.strip()[-40:]!r}) "
                                    f"is followed by the heading {after.strip()!r} in the same cell")
    return problems


def test_repo_url_matches_pyproject():
    pyproject = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))
    assert _bootstrap().REPO_URL == pyproject["project"]["urls"]["Repository"]


def test_first_cell_template_compiles():
    compile(_bootstrap().FIRST_CELL, "<FIRST_CELL>", "exec")
    for language in FOLDERS:
        compile(_bootstrap().first_cell(language), f"<first_cell({language!r})>", "exec")


def _notebook(*cells):
    """A small notebook from ``(cell_type, source)`` pairs."""
    nb = nbformat.v4.new_notebook()
    make = {"code": nbformat.v4.new_code_cell, "markdown": nbformat.v4.new_markdown_cell}
    nb.cells = [make[kind](source) for kind, source in cells]
    return nb


CLEAN = [("markdown", "# Title\n\nSome text."),
         ("markdown", "## 1 · A section\n\nA cell that computes it:"),
         ("code", "# a comment\nx = 1  # ## not at the line's start\nx"),
         ("markdown", "Its solution:\n\n```python\n# ## a comment in a fenced block\n```")]


def test_cell_boundaries_a_clean_notebook_passes():
    assert cell_boundary_problems(_notebook(*CLEAN)) == []


@pytest.mark.parametrize("line", ["# ## Exercises", "## Exercises", "#\t### 1. Per-sentence LN", "    # ## 2 · A section"])
def test_cell_boundaries_catch_a_heading_in_a_code_cell(line):
    problems = cell_boundary_problems(_notebook(*CLEAN, ("code", f"y = 2\n#\n{line}\n#\nz = 3")))
    assert len(problems) == 1 and "(code) holds a Markdown heading" in problems[0], problems


def test_cell_boundaries_catch_a_heading_as_the_last_line_of_a_markdown_cell():
    problems = cell_boundary_problems(_notebook(*CLEAN, ("markdown", "What it shows.\n\n## 5. Where the norm sits\n\n")))
    assert len(problems) == 1 and "ends with a heading" in problems[0], problems
    alone = cell_boundary_problems(_notebook(("markdown", "## 7. Which norm models use")))
    assert len(alone) == 1 and "ends with a heading" in alone[0], alone


def test_cell_boundaries_catch_a_paragraph_announcing_code_then_a_heading():
    cell = ("markdown", "On a fresh LN, the largest input gradient of each loss:\n\n## 8 · Your turn\n\nThree exercises.")
    problems = cell_boundary_problems(_notebook(*CLEAN, cell))
    assert len(problems) == 1 and "announcing code" in problems[0], problems
    # a colon before a list or a table is not followed by a heading: no problem
    assert cell_boundary_problems(_notebook(("markdown", "Two ways:\n\n- one;\n- two."))) == []
    # and the same in Chinese, with a full-width colon
    chinese = ("markdown", "每个损失在新建的 LN 上最大的输入梯度：\n\n## 8 · 动手练习\n\n三道练习。")
    problems = cell_boundary_problems(_notebook(*CLEAN, chinese))
    assert len(problems) == 1 and "announcing code" in problems[0], problems


def test_the_browser_test_knows_how_many_controls_each_notebook_shows():
    """The browser test asserts it found, after Run All, as many controls as the stored notebook's
    widget state holds; that count is right where it is known, and not 0 where widgets are shown."""
    from tests.browser.test_notebooks_in_jupyterlab import stored_controls

    assert stored_controls(NOTEBOOKS_DIR / "00_what_layernorm_computes.ipynb") == 3  # weights, gamma, beta
    assert stored_controls(NOTEBOOKS_DIR / "02_layernorm_in_a_transformer.ipynb") == 2  # norm, branch scale
    for path in NOTEBOOKS:
        shows_widgets = any("application/vnd.jupyter.widget-view+json" in output.get("data", {})
                            for cell in nbformat.read(path, as_version=4).cells if cell.cell_type == "code"
                            for output in cell.get("outputs", []))
        assert (stored_controls(path) > 0) == shows_widgets, path.name
