"""One idea, one home: no demo of ``helpers`` is called from two notebooks, and no section title
(other than the sections every notebook has) appears in two notebooks.

A demo is anything a notebook takes from ``helpers.lessons``, ``helpers.widgets`` or
``helpers.plots`` (the lessons' tables and demos, the dashboards, the figures). The drop-in
library (``helpers.layer_norm``, ``helpers.LayerNorm``, ...), the evidence machinery (``runner``)
and the exercises' checkers are tools, shared on purpose. The Chinese edition's notebooks are
twins of the English core path, kept equal by their own tests, not second homes.
"""

from __future__ import annotations

import ast
import collections
import json
import re
from pathlib import Path

NOTEBOOKS = sorted((Path(__file__).resolve().parents[1] / "notebooks").glob("[0-9][0-9]_*.ipynb"))
DEMO_PACKAGES = ("helpers.lessons", "helpers.widgets", "helpers.plots")

# Shared on purpose: formatting and figure conventions, not demos of an idea.
SHARED = {
    "helpers.lessons.group_stats.rounded": "rounds a table's numbers for printing",
    "helpers.plots.ARM_COLOURS": "one colour per arm, the same in every figure",
    "helpers.plots.tuning_figure": "the figure of any experiment's learning-rate tuning",
}
# Sections that every notebook (or every deep dive) has, each about its own notebook.
STANDARD_SECTIONS = {"the answer", "summary", "summary: each claim, and where it is shown", "references",
                     "glossary", "exercises", "claims ledger", "tuning: each arm's learning rate"}


def _code(path: Path) -> str:
    cells = json.loads(path.read_text(encoding="utf-8"))["cells"]
    lines = "\n".join("".join(c["source"]) for c in cells if c["cell_type"] == "code").splitlines()
    return "\n".join(line for line in lines if not line.lstrip().startswith(("%", "!")))  # IPython magics


def demos_used(path: Path) -> set[str]:
    """Qualified names of the demos a notebook takes from :data:`DEMO_PACKAGES`, imported by name
    (``from helpers.widgets.x import demo``) or used as an attribute of an imported module
    (``from helpers import plots`` then ``plots.figure(...)``)."""
    tree = ast.parse(_code(path))
    used, modules = set(), {}
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and node.module and node.module.startswith("helpers"):
            for alias in node.names:
                full = f"{node.module}.{alias.name}"
                if node.module.startswith(DEMO_PACKAGES):
                    used.add(full)
                else:
                    modules[alias.asname or alias.name] = full
    for node in ast.walk(tree):
        if isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name) and node.value.id in modules:
            full = f"{modules[node.value.id]}.{node.attr}"
            if full.startswith(DEMO_PACKAGES):
                used.add(full)
    return used


def section_titles(path: Path) -> set[str]:
    """The titles of a notebook's ``##`` (and deeper) headings, without their numbers, lower-cased."""
    titles = set()
    for cell in json.loads(path.read_text(encoding="utf-8"))["cells"]:
        if cell["cell_type"] == "markdown":
            for line in "".join(cell["source"]).splitlines():
                match = re.match(r"^##+ (?:[0-9.]+\s*[·.]?\s*)?(.*)", line)
                if match:
                    titles.add(match.group(1).strip().lower())
    return titles


def _homes(found: dict[str, set[str]]) -> dict[str, list[str]]:
    homes = collections.defaultdict(list)
    for notebook, names in found.items():
        for name in names:
            homes[name].append(notebook)
    return {name: sorted(where) for name, where in homes.items() if len(where) > 1}


def test_no_demo_is_called_from_two_notebooks():
    shared = _homes({p.name: demos_used(p) for p in NOTEBOOKS})
    assert set(shared) <= set(SHARED), {k: v for k, v in shared.items() if k not in SHARED}


def test_no_section_title_is_in_two_notebooks():
    shared = _homes({p.name: section_titles(p) for p in NOTEBOOKS})
    assert set(shared) <= STANDARD_SECTIONS, {k: v for k, v in shared.items() if k not in STANDARD_SECTIONS}


def test_the_finders_see_what_they_should(tmp_path):
    cells = [{"cell_type": "code", "source": "from helpers.widgets.deep_stack import deep_stack_demo\n"
                                            "from helpers import plots\n%matplotlib inline\nplots.f(1)\n"},
             {"cell_type": "markdown", "source": "## 3 · Per token\n\ntext\n### See it"}]
    path = tmp_path / "99_x.ipynb"
    path.write_text(json.dumps({"cells": cells}), encoding="utf-8")
    assert demos_used(path) == {"helpers.widgets.deep_stack.deep_stack_demo", "helpers.plots.f"}
    assert section_titles(path) == {"per token", "see it"}
    assert _homes({"a": {"x", "y"}, "b": {"x"}}) == {"x": ["a", "b"]}
