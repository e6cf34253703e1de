"""`make test` runs every test exactly once, over three pytest runs given their folders and files
(the Makefile): the unit run takes tests/ without the tests marked slow or browser, and those must
all live in the files the two other runs are given (SERVER_TESTS and COLAB_TESTS)."""

from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
MARK = re.compile(r"pytest\.mark\.(slow|browser)\b")


def _make_variable(name: str) -> list[str]:
    match = re.search(rf"^{name}\s*:=\s*(.+)$", (ROOT / "Makefile").read_text(encoding="utf-8"), re.M)
    assert match, f"the Makefile defines no {name}"
    return match.group(1).split()


def _covered(path: Path, given: list[str]) -> bool:
    rel = path.relative_to(ROOT).as_posix()
    return any(rel == g or rel.startswith(g.rstrip("/") + "/") for g in given)


def test_every_test_marked_slow_or_browser_is_in_a_run_that_takes_it():
    given = _make_variable("SERVER_TESTS") + _make_variable("COLAB_TESTS")
    marked = [p for p in (ROOT / "tests").rglob("*.py") if MARK.search(p.read_text(encoding="utf-8"))
              and p.name != Path(__file__).name]
    assert marked, "no test is marked slow or browser: the pattern no longer finds the marks"
    assert [p.name for p in marked if not _covered(p, given)] == []


def test_the_files_given_to_the_other_runs_exist_and_hold_only_marked_tests():
    for name in ("SERVER_TESTS", "COLAB_TESTS"):
        for entry in _make_variable(name):
            path = ROOT / entry
            assert path.exists(), f"{name} names {entry}, which does not exist"
            files = [path] if path.is_file() else sorted(path.rglob("test_*.py"))
            for file in files:  # a module-wide mark: the unit run deselects every test in it
                assert re.search(r"^pytestmark = .*pytest\.mark\.(slow|browser)", file.read_text(encoding="utf-8"),
                                 re.M), f"{file.name} is given to another run but not marked slow or browser"
