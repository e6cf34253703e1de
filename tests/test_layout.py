"""helpers/ shows its layers in its folders, and its imports run downward only, with no circle.

The layers, from the bottom:

0. the drop-in library, at the package's top level (``helpers``, ``helpers.functional``,
   ``helpers.modules``, ...);
1. ``helpers.evidence`` (runner, statistics, stored results), ``helpers.exercises`` (the
   checkers and their shared machinery) and ``helpers.speed`` (the compiled and Numba kernels),
   side by side: none imports another;
2. ``helpers.lessons`` (the lessons' tables and demos) and ``helpers.experiments`` (the stored
   experiments);
3. ``helpers.plots``;
4. ``helpers.widgets``.

A module may import its own layer or one below, never one above; and the graph of imports between
helpers' modules has no cycle. Every ``import`` statement counts, at module level or inside a
function. Imports by name at run time (the runner importing its topic modules to find their
experiments, a checker resolving the dotted names it refuses) are not statements and are not
counted: they are how a lower layer finds what registers with it.
"""

from __future__ import annotations

import ast
import pathlib

import pytest

HELPERS = pathlib.Path(__file__).resolve().parent.parent / "helpers"

#: Each folder's layer; a module at the package's top level is the library (0).
LAYERS = {"evidence": 1, "exercises": 1, "speed": 1, "lessons": 2, "experiments": 2, "plots": 3, "widgets": 4}
LIBRARY = 0


def module_name(path: pathlib.Path, root: pathlib.Path = HELPERS) -> str:
    """``helpers/lessons/sequence.py`` -> ``helpers.lessons.sequence``; a package's ``__init__`` is the package."""
    parts = [root.name, *path.relative_to(root).with_suffix("").parts]
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def layer(module: str) -> int:
    """The layer of ``module`` (a dotted name under ``helpers``)."""
    parts = module.split(".")
    if len(parts) == 1 or parts[1] not in LAYERS:
        return LIBRARY
    return LAYERS[parts[1]]


def imports(path: pathlib.Path, modules: set[str], root: pathlib.Path = HELPERS) -> set[str]:
    """The helpers modules that the file at ``path`` imports, anywhere in it.

    ``from helpers.x import y`` names the module ``helpers.x.y`` when there is one (``y`` is a
    submodule), else ``helpers.x``; relative imports are resolved against the file's package.
    """
    name = module_name(path, root)
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    found = set()
    for node in ast.walk(ast.parse(path.read_text(), filename=str(path))):
        if isinstance(node, ast.Import):
            targets = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = package.split(".")[: len(package.split(".")) - (node.level - 1)]
                origin = ".".join([*base, node.module] if node.module else base)
            else:
                origin = node.module or ""
            targets = [f"{origin}.{alias.name}" if f"{origin}.{alias.name}" in modules else origin
                       for alias in node.names]
        else:
            continue
        for target in targets:
            while target and target not in modules:  # `import helpers.x.y.z` as far as it is a module
                target = target.rpartition(".")[0]
            if target and target.split(".")[0] == root.name:
                found.add(target)
    found.discard(name)
    return found


def import_graph(root: pathlib.Path = HELPERS) -> dict[str, set[str]]:
    """``module -> the helpers modules it imports``, for every module under ``root``."""
    paths = {module_name(p, root): p for p in sorted(root.rglob("*.py"))}
    return {name: imports(path, set(paths), root) for name, path in paths.items()}


def upward(graph: dict[str, set[str]]) -> list[str]:
    """Every import that goes up a layer, as ``"importer (layer) -> imported (layer)"``."""
    return [f"{a} ({layer(a)}) -> {b} ({layer(b)})" for a, targets in sorted(graph.items())
            for b in sorted(targets) if layer(b) > layer(a)]


def cycle(graph: dict[str, set[str]]) -> list[str]:
    """One import circle, as the modules around it (first repeated at the end), or ``[]``."""
    state: dict[str, str] = {}
    path: list[str] = []

    def visit(node: str) -> list[str]:
        state[node], found = "open", []
        path.append(node)
        for nxt in sorted(graph.get(node, ())):
            if state.get(nxt) == "open":
                return path[path.index(nxt):] + [nxt]
            if nxt not in state and (found := visit(nxt)):
                return found
        path.pop()
        state[node] = "done"
        return []

    for node in sorted(graph):
        if node not in state and (found := visit(node)):
            return found
    return []


GRAPH = import_graph()


def test_every_folder_of_helpers_has_a_layer():
    folders = {p.parent.name for p in HELPERS.rglob("*.py") if p.parent != HELPERS}
    assert folders <= set(LAYERS), f"folders without a layer: {sorted(folders - set(LAYERS))}"


def test_the_graph_sees_imports_at_every_level():
    # a module-level import, a function-level one, and a `from helpers import <module>`
    assert "helpers.evidence.runner" in GRAPH["helpers.experiments.drift"]
    assert "helpers.evidence.statistics" in GRAPH["helpers.evidence.runner"]  # inside _best_rates
    assert "helpers.plots" in GRAPH["helpers.widgets.bn_vs_ln"]
    assert "helpers.functional" in GRAPH["helpers.modules"]
    assert "helpers.speed.one_pass" in GRAPH["helpers.speed.compiled"]


def test_no_import_goes_up_a_layer():
    assert upward(GRAPH) == []


def test_evidence_exercises_and_speed_import_only_the_library():
    # the three folders of layer 1 stand side by side: none needs another
    crossing = [f"{a} -> {b}" for a, targets in sorted(GRAPH.items()) if layer(a) == 1
                for b in sorted(targets) if layer(b) == 1 and a.split(".")[1] != b.split(".")[1]]
    assert crossing == []


def test_no_import_circle():
    assert cycle(GRAPH) == []


def test_the_top_level_holds_only_the_drop_in_library():
    """And two modules every layer may need: the notebooks' first cell (bootstrap) and the language
    the set speaks (language: the checkers in exercises/ and the evidence card in evidence/ use it)."""
    top = {p.stem for p in HELPERS.glob("*.py")}
    assert top == {"__init__", "_validation", "functional", "modules", "autograd", "bootstrap", "language"}


def test_the_stored_results_ship_with_the_evidence():
    assert sorted(p.name for p in (HELPERS / "evidence" / "results").glob("*.json"))
    assert not (HELPERS / "results").exists()


# ---------------------------------------------------------------- the checks catch what they should


def test_a_planted_upward_import_is_caught():
    planted = {**GRAPH, "helpers.functional": GRAPH["helpers.functional"] | {"helpers.plots.core"}}
    assert upward(planted) == ["helpers.functional (0) -> helpers.plots.core (3)"]
    planted = {**GRAPH, "helpers.plots.formula": GRAPH["helpers.plots.formula"] | {"helpers.widgets.formula"}}
    assert upward(planted) == ["helpers.plots.formula (3) -> helpers.widgets.formula (4)"]


def test_a_planted_circle_is_caught():
    graph = {"helpers.plots": {"helpers.plots.formula"}, "helpers.plots.formula": {"helpers.lessons.sequence"},
             "helpers.lessons.sequence": {"helpers.lessons.placement"},
             "helpers.lessons.placement": {"helpers.lessons.sequence"}}
    assert cycle(graph) == ["helpers.lessons.placement", "helpers.lessons.sequence", "helpers.lessons.placement"]
    assert upward(graph) == []  # a circle within one layer is not an upward import: only cycle() sees it
    assert cycle({"a": {"b"}, "b": {"c"}}) == []
    # the circle there once was (plots/__init__ -> plots/formula -> (inside a function) widgets/formula -> plots),
    # planted through a widgets module that imports plots now
    planted = {**GRAPH, "helpers.plots.formula": GRAPH["helpers.plots.formula"] | {"helpers.widgets.bn_vs_ln"}}
    assert set(cycle(planted)) == {"helpers.plots", "helpers.plots.formula", "helpers.widgets.bn_vs_ln"}


@pytest.mark.parametrize("code, expected", [
    ("from helpers.plots import core\n", {"helpers.plots.core"}),
    ("def f():\n    from helpers.widgets.formula import X\n", {"helpers.widgets.formula"}),
    ("import helpers.widgets.formula as wf\n", {"helpers.widgets.formula"}),
    ("from ..plots import core\n", {"helpers.plots.core"}),
    ("from . import formula\n", {"helpers.lessons.formula"}),
    ("import torch\nfrom helpers import plots\n", {"helpers.plots"}),
])
def test_imports_are_read_from_the_source(tmp_path, code, expected):
    root = tmp_path / "helpers"
    for folder in ("plots", "widgets", "lessons"):
        (root / folder).mkdir(parents=True)
        (root / folder / "__init__.py").write_text("")
    (root / "__init__.py").write_text("")
    for module in ("plots/core.py", "widgets/formula.py", "lessons/formula.py"):
        (root / module).write_text("")
    (root / "lessons" / "planted.py").write_text(code)
    graph = import_graph(root)
    assert graph["helpers.lessons.planted"] == expected
    if layer(next(iter(expected))) > layer("helpers.lessons.planted"):
        assert upward(graph)
