"""Every notebook runs with the versions Google Colab ships (ipywidgets 7.7, pandas 2.2,
matplotlib 3.10, numpy 2.1), the package pip-installed (not editable), each notebook alone in
an empty folder: what a learner meets after "Open in Colab".

`make test` builds .venv-colab from requirements-colab.txt and installs the package into it
first. Without .venv-colab these tests skip, except under CI=true, where they fail.
"""

from __future__ import annotations

import hashlib
import json
import os
import subprocess
from pathlib import Path

import pytest

pytestmark = pytest.mark.slow

ROOT = Path(__file__).resolve().parents[2]
COLAB_PYTHON = ROOT / ".venv-colab" / "bin" / "python"
RUNNER = Path(__file__).with_name("run_notebook.py")
NOTEBOOKS = sorted((ROOT / "notebooks").glob("*.ipynb"))
COLAB_VERSIONS = {"ipywidgets": "7.7.1", "pandas": "2.2.3", "matplotlib": "3.10.0",
                  "numpy": "2.1.3", "torch": "2.13.0"}


def _colab(code: str) -> str:
    """Run ``code`` in the Colab environment, isolated (-I: no cwd, no PYTHON* variables)."""
    result = subprocess.run([str(COLAB_PYTHON), "-I", "-c", code], capture_output=True,
                            text=True, cwd="/", timeout=120)
    assert result.returncode == 0, result.stderr
    return result.stdout


@pytest.fixture(scope="module")
def colab_python() -> Path:
    if not COLAB_PYTHON.exists():
        message = ".venv-colab is missing: `make test` (or `make colab-env`) builds it"
        if os.environ.get("CI") == "true":
            pytest.fail(message)
        pytest.skip(message)
    return COLAB_PYTHON


def _digests(files: dict[str, Path]) -> dict[str, str]:
    return {name: hashlib.sha256(path.read_bytes()).hexdigest() for name, path in files.items()}


def test_colab_env_has_colabs_versions(colab_python):
    code = ("import json, importlib.metadata as m; "
            f"print(json.dumps({{k: m.version(k) for k in {list(COLAB_VERSIONS)!r}}}))")
    versions = json.loads(_colab(code))
    versions["torch"] = versions["torch"].split("+")[0]
    assert versions == COLAB_VERSIONS


def test_package_is_installed_non_editable_and_current(colab_python):
    info = json.loads(_colab(
        "import json, importlib.util, importlib.metadata as m; "
        "d = m.distribution('layernorm-hands-on-helpers'); "
        "print(json.dumps({'origin': importlib.util.find_spec('helpers').origin, "
        "'direct_url': d.read_text('direct_url.json')}))"))
    installed = Path(info["origin"]).parent
    assert "site-packages" in installed.parts, f"helpers is imported from {installed}"
    direct_url = json.loads(info["direct_url"] or "{}")
    assert not direct_url.get("dir_info", {}).get("editable"), "the package is installed editable"
    ours = {p.relative_to(ROOT / "helpers").as_posix(): p for p in (ROOT / "helpers").rglob("*.py")}
    theirs = {p.relative_to(installed).as_posix(): p for p in installed.rglob("*.py")}
    assert _digests(theirs) == _digests(ours), (
        "the package in .venv-colab is not the checkout's helpers/: run `make colab-env`")


@pytest.mark.parametrize("notebook", NOTEBOOKS, ids=[p.name for p in NOTEBOOKS])
def test_notebook_runs_alone_with_colab_versions(colab_python, notebook):
    result = subprocess.run([str(colab_python), str(RUNNER), str(notebook)], capture_output=True,
                            text=True, timeout=600, cwd="/")
    assert result.returncode == 0, (
        f"{notebook.name} failed with Colab's versions:\n{result.stdout[-6000:]}\n{result.stderr[-3000:]}")
    report = json.loads(result.stdout.strip().splitlines()[-1])
    assert report["problems"] == []
    assert report["files_left_in_workdir"] == [], "the notebook wrote files next to itself"
