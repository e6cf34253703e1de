"""Every line has a reader (DESIGN.md, "helpers/: the contract"): every top-level function and class
in ``helpers/`` is reached from a notebook, a benchmark or the drop-in contract.

The reference graph is built from the source with ``ast``, without importing anything:

- a node is a top-level function or class of a module in ``helpers/``, a top-level assignment
  (``NAME = ...``), or a top-level ``register(...)`` call that declares an exercise or an
  experiment by ``name="..."``;
- a node refers to every identifier its code uses (names, attributes, and identifier-like
  strings, as in ``getattr(module, "name")``); an identifier reaches every node of that name,
  in any module (matching by name over-approximates, never under-approximates what is reached);
- a registration is reached when its name is a string that reached code uses
  (``runner.load("drift")``, ``check("sentence_layer_norm", fn)``): a notebook loads an experiment,
  and a checker runs an exercise, by name;
- imports at a module's top level are not uses (``helpers/widgets/__init__.py`` re-exports every
  dashboard, whether or not a notebook shows it), except that ``import a as b`` makes ``b`` lead
  to ``a``; imports inside a function or in a notebook are;
- the rest of a module's top-level code (an ``if __name__ == "__main__":`` block, a loop) runs on
  import, and is reached.

The roots: the code cells of every notebook (English and Chinese), ``benchmarks/*.py`` and the
drop-in names of the contract. Not ``__all__``, not the tests.
"""

from __future__ import annotations

import ast
import json
import time
from dataclasses import dataclass, field
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]

#: The drop-in contract (DESIGN.md): exported at the package top level for any learner's model.
DROP_IN = ("layer_norm", "rms_norm", "batch_norm", "group_norm", "LayerNorm", "RMSNorm", "BatchNorm1d",
           "GroupNorm", "LayerNormFunction")

#: Not reached now, and left to the work under way on them (each entry goes when that lands): none.
ALLOWED_UNREACHED: set[str] = set()


@dataclass
class Node:
    module: str
    name: str  # a definition's name, or a registration's declared name
    kind: str  # "def" (function or class), "value" (assignment), "registration" or "body"
    line: int
    uses: set[str] = field(default_factory=set)  # identifiers
    strings: set[str] = field(default_factory=set)  # every string constant


def _docstrings(tree: ast.AST) -> set[int]:
    return {id(node.body[0].value) for node in ast.walk(tree)
            if isinstance(node, (ast.Module, ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)) and node.body
            and isinstance(node.body[0], ast.Expr) and isinstance(node.body[0].value, ast.Constant)}


def _uses(tree: ast.AST) -> tuple[set[str], set[str]]:
    """The identifiers ``tree`` uses, and its string constants (docstrings left out)."""
    names, strings = set(), set()
    docstrings = _docstrings(tree)
    for node in ast.walk(tree):
        if isinstance(node, ast.Name):
            names.add(node.id)
        elif isinstance(node, ast.Attribute):
            names.add(node.attr)
        elif isinstance(node, ast.alias):  # an import where it is a use (a notebook, a function's body)
            names.update(node.name.split("."))
        elif isinstance(node, ast.Constant) and isinstance(node.value, str) and id(node) not in docstrings:
            strings.add(node.value)
            if node.value.isidentifier():
                names.add(node.value)
    return names, strings


def _registered_name(statement: ast.stmt) -> str | None:
    """``"x"`` for a top-level ``register(Exercise(name="x", ...))`` or ``runner.register(...)``."""
    if not (isinstance(statement, ast.Expr) and isinstance(statement.value, ast.Call)):
        return None
    func = statement.value.func
    if (func.id if isinstance(func, ast.Name) else getattr(func, "attr", None)) != "register":
        return None
    for node in ast.walk(statement.value):
        if isinstance(node, ast.keyword) and node.arg == "name" and isinstance(node.value, ast.Constant):
            return node.value.value
    return None


def _assigned(statement: ast.stmt) -> list[str]:
    targets = statement.targets if isinstance(statement, ast.Assign) else [statement.target]
    return [n.id for t in targets for n in ast.walk(t) if isinstance(n, ast.Name)]


def module_nodes(path: Path, module: str) -> list[Node]:
    """The nodes of one module's top level."""
    tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
    nodes = []
    body = Node(module, module, "body", 1)
    for statement in tree.body:
        line = statement.lineno
        if isinstance(statement, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            nodes.append(Node(module, statement.name, "def", line, *_uses(statement)))
        elif isinstance(statement, (ast.Import, ast.ImportFrom)):
            for alias in statement.names:  # `import a as b`: using b uses a
                if alias.asname and alias.asname != alias.name.split(".")[-1]:
                    nodes.append(Node(module, alias.asname, "value", line, {alias.name.split(".")[-1]}))
        elif (name := _registered_name(statement)) is not None:
            nodes.append(Node(module, name, "registration", line, *_uses(statement)))
        elif isinstance(statement, (ast.Assign, ast.AnnAssign, ast.AugAssign)) and "__all__" in _assigned(statement):
            continue  # the names a module exports are not uses
        elif isinstance(statement, (ast.Assign, ast.AnnAssign)):
            uses = _uses(statement.value) if statement.value is not None else (set(), set())
            nodes += [Node(module, name, "value", line, *uses) for name in _assigned(statement)]
        elif not (isinstance(statement, ast.Expr) and isinstance(statement.value, ast.Constant)):  # a docstring
            found = _uses(statement)
            body.uses |= found[0]
            body.strings |= found[1]
    return [*nodes, body]


def package_nodes(package: Path) -> list[Node]:
    """Every node of every module under ``package`` (a folder holding ``__init__.py``)."""
    nodes = []
    for path in sorted(package.rglob("*.py")):
        parts = path.relative_to(package.parent).with_suffix("").parts
        nodes += module_nodes(path, ".".join(parts[:-1] if parts[-1] == "__init__" else parts))
    return nodes


def notebook_code(path: Path) -> str:
    """The code cells of a notebook, IPython's magics and shell lines left out."""
    cells = json.loads(path.read_text(encoding="utf-8"))["cells"]
    lines = "\n".join("".join(c["source"]) for c in cells if c["cell_type"] == "code").splitlines()
    return "\n".join(line for line in lines if not line.lstrip().startswith(("%", "!")))


def unreached(nodes: list[Node], roots: list[str], root_names: tuple[str, ...] = ()) -> list[Node]:
    """The nodes that nothing reaches from the code in ``roots`` and the names ``root_names``."""
    by_name: dict[str, list[Node]] = {}
    registrations: dict[str, list[Node]] = {}
    for node in nodes:
        (registrations if node.kind == "registration" else by_name).setdefault(node.name, []).append(node)
    reached: set[int] = set()
    todo = [n for n in nodes if n.kind == "body"]
    names, strings = set(root_names), set()
    for source in roots:
        found = _uses(ast.parse(source))
        names |= found[0]
        strings |= found[1]
    todo += [n for name in names for n in by_name.get(name, [])]
    todo += [n for s in strings for n in registrations.get(s, [])]
    while todo:
        node = todo.pop()
        if id(node) in reached:
            continue
        reached.add(id(node))
        todo += [n for name in node.uses for n in by_name.get(name, [])]
        todo += [n for s in node.strings for n in registrations.get(s, [])]
    return [n for n in nodes if id(n) not in reached]


def course_roots() -> list[str]:
    notebooks = sorted((ROOT / "notebooks").glob("*.ipynb")) + sorted((ROOT / "notebooks" / "zh").glob("*.ipynb"))
    assert len(notebooks) > 10, "the notebooks were not found"
    benchmarks = sorted((ROOT / "benchmarks").glob("*.py"))
    assert benchmarks, "the benchmarks were not found"
    return [notebook_code(p) for p in notebooks] + [p.read_text(encoding="utf-8") for p in benchmarks]


def _flagged(nodes: list[Node]) -> list[str]:
    """What must be reached: top-level functions and classes (private ones too), and registrations."""
    return sorted(f"{n.module}.{n.name}" for n in nodes if n.kind in ("def", "registration")
                  and not n.name.startswith("__"))


def test_every_function_and_class_in_helpers_is_reached():
    start = time.perf_counter()
    nodes = package_nodes(ROOT / "helpers")
    defined = {n.name for n in nodes if n.kind == "def"}
    assert len(defined) > 300 and set(DROP_IN) <= defined, "the package's definitions were not found"
    missing = _flagged(unreached(nodes, course_roots(), DROP_IN))
    unexpected = [m for m in missing if m not in ALLOWED_UNREACHED]
    line = {f"{n.module}.{n.name}": n.line for n in nodes}
    assert not unexpected, "reached by no notebook, benchmark or drop-in name:\n" + "\n".join(
        f"{m} (line {line[m]})" for m in unexpected)
    assert sorted(ALLOWED_UNREACHED - set(missing)) == [], "allowed, but reached now or gone: drop the entry"
    assert time.perf_counter() - start < 5


def _write(folder: Path, files: dict[str, str]) -> Path:
    for name, text in files.items():
        (folder / name).parent.mkdir(parents=True, exist_ok=True)
        (folder / name).write_text(text)
    return folder


def test_a_function_no_one_calls_is_found(tmp_path):
    package = _write(tmp_path / "pkg", {
        "__init__.py": "from pkg.tools import shown, planted\nfrom pkg.tools import renamed as alias\n",
        "tools.py": (
            "from pkg.inner import register, Exercise\n"
            "def shown():\n    return _private()\n"
            "def _private():\n    return check('by_name')\n"
            "def planted():\n    return shown()\n"
            "def renamed():\n    return 1\n"
            "def called_by_alias():\n    return alias()\n"
            "register(Exercise(name='by_name', reference=_reference))\n"
            "register(Exercise(name='never_checked', reference=_orphan_reference))\n"
            "def _reference():\n    pass\n"
            "def _orphan_reference():\n    pass\n"
            "if __name__ == '__main__':\n    _main()\n"
            "def _main():\n    pass\n"
        ),
        "inner.py": "def register(e):\n    return e\nclass Exercise:\n    pass\n",
    })
    nodes = package_nodes(package)
    notebook = "import pkg\npkg.shown()\n"
    # `planted` is imported by the package's __init__ and calls reached code, but nothing calls it;
    # an exercise that no checker runs is unreached, and so is its reference
    assert _flagged(unreached(nodes, [notebook])) == [
        "pkg.tools._orphan_reference", "pkg.tools.called_by_alias", "pkg.tools.never_checked", "pkg.tools.planted",
        "pkg.tools.renamed"]
    # reached through an alias, a string, or a root name
    more = notebook + "pkg.called_by_alias()\ncheck('never_checked', lambda x: x)\n"
    assert _flagged(unreached(nodes, [more], ("planted",))) == []


def test_a_planted_function_in_helpers_is_found(tmp_path):
    """The real package with one unreached function added to a copy of a real module."""
    import shutil

    copy = tmp_path / "helpers"
    shutil.copytree(ROOT / "helpers", copy, ignore=shutil.ignore_patterns("__pycache__", "*.csv*", "*.json"))
    core = copy / "widgets" / "core.py"
    core.write_text(core.read_text() + "\n\ndef planted_dashboard(x):\n    return slider(x)\n")
    missing = _flagged(unreached(package_nodes(copy), course_roots(), DROP_IN))
    assert [m for m in missing if m not in ALLOWED_UNREACHED] == ["helpers.widgets.core.planted_dashboard"]
