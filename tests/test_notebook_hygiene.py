"""What every stored notebook must be, before nbval even runs it.

Executed top to bottom (no unexecuted cell, execution counts exactly 1..n), no stored error,
no machine path in any output, paired with an in-sync py:percent script, first code cell
exactly ``helpers.bootstrap.FIRST_CELL``, every ``# NBVAL_IGNORE_OUTPUT`` exact (nbval ignores
anything else) and explained on a comment line of its own, and listed
in README.md (and, for the core path's 0N_ notebooks, linked from a 00_ notebook).
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
NOTEBOOKS = sorted(NOTEBOOKS_DIR.glob("*.ipynb"))
START_HERE = NOTEBOOKS_DIR / "00_start_here.ipynb"
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
    return [p.name for p in paths]


def test_there_are_notebooks_and_a_start_here():
    assert NOTEBOOKS, "notebooks/ holds no .ipynb"
    assert START_HERE.is_file(), "notebooks/00_start_here.ipynb is missing"


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
        assert cells and cells[0].source == _bootstrap().FIRST_CELL, (
            f"{path.name}: the first code cell must be exactly helpers.bootstrap.FIRST_CELL "
            "(copy it from helpers/bootstrap.py)")

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
        script = path.with_suffix(".py")
        assert script.is_file(), (f"{path.name} has no py:percent pair {script.name}: "
                                  f"run `.venv/bin/jupytext --sync notebooks/{path.name}`")
        script_text = script.read_text(encoding="utf-8")
        assert "# %%" in script_text, f"{script.name} is not in the py:percent format"
        stored = jupytext.read(script, fmt="py:percent")
        notebook = jupytext.read(path)
        pairs_ipynb = [(c.cell_type, c.source.rstrip()) for c in notebook.cells]
        pairs_py = [(c.cell_type, c.source.rstrip()) for c in stored.cells]
        sync = f"run `.venv/bin/jupytext --sync notebooks/{path.name}`"
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
        readme = (ROOT / "README.md").read_text(encoding="utf-8")
        assert path.name in readme, f"README.md's notebook list does not mention {path.name}"
        # The core path's notebooks (0N_) are linked from a 00_ notebook; the deep dives (1N_) are
        # listed in the README, as every notebook is.
        starts = [p for p in NOTEBOOKS if p.name.startswith("00_") and p != path]
        if not path.name.startswith("0") or path.name.startswith("00_") or not starts:
            return
        listed = any(path.name in "\n".join(c.source for c in _read(p).cells) for p in starts)
        assert listed, f"no 00_ notebook's map ({[p.name for p in starts]}) mentions {path.name}"


def test_every_py_percent_script_has_its_notebook():
    orphans = [p.name for p in NOTEBOOKS_DIR.glob("*.py") if not p.with_suffix(".ipynb").is_file()]
    assert not orphans, f"notebooks/ scripts without a paired .ipynb: {orphans}"


def test_repo_url_matches_pyproject():
    pyproject = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))
    assert _bootstrap().REPO_URL == pyproject["project"]["urls"]["Repository"]


def test_first_cell_template_compiles():
    compile(_bootstrap().FIRST_CELL, "<FIRST_CELL>", "exec")
