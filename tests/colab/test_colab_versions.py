"""The Colab path, end to end, with the versions Google Colab ships (ipywidgets 7.7, pandas 2.2,
matplotlib 3.10, numpy 2.1): what a learner meets after "Open in Colab".

A fresh Colab-like Python starts WITHOUT `helpers`: a new venv that sees .venv-colab's packages
(`make test` builds it from requirements-colab.txt) through a .pth file, and imports
`google.colab` at start-up as Colab does. The repository is this checkout (its tracked and
not-ignored files, committed into a throwaway git repository), reached as `git+file://...`
through the first cell's `LAYERNORM_HANDS_ON_REPO` override. Notebook 00's first cell must
pip-install the package from it; then every notebook runs there, each alone in an empty folder,
the Chinese edition's (notebooks/zh/) too.
Without .venv-colab these tests skip, except under CI=true, where they fail.
"""

from __future__ import annotations

import hashlib
import json
import os
import queue
import shutil
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

pytestmark = pytest.mark.slow

ROOT = Path(__file__).resolve().parents[2]
COLAB_PYTHON = ROOT / ".venv-colab" / "bin" / "python"
RUNNER = Path(__file__).with_name("run_notebook.py")
NOTEBOOKS = sorted((ROOT / "notebooks").glob("*.ipynb"))
NOTEBOOKS_ZH = sorted((ROOT / "notebooks" / "zh").glob("*.ipynb"))  # the core path in Chinese
FIRST = ROOT / "notebooks" / "00_what_layernorm_computes.ipynb"  # the core path's first notebook
FIRST_ZH = ROOT / "notebooks" / "zh" / FIRST.name
COLAB_VERSIONS = {"ipywidgets": "7.7.1", "pandas": "2.2.3", "matplotlib": "3.10.0",
                  "numpy": "2.1.3", "torch": "2.13.0"}

sys.path.insert(0, str(ROOT / "helpers"))
import bootstrap  # noqa: E402  (helpers/bootstrap.py alone: the first cell and its settings)

sys.path.pop(0)
from run_notebook import REPORT_MARK  # noqa: E402  (this folder is on sys.path: pytest's rootdir-relative import)


def _git(*args, cwd):
    subprocess.run(["git", "-c", "user.name=test", "-c", "user.email=test@localhost", *args], cwd=cwd,
                   check=True, capture_output=True)


def _repository(tmp: Path) -> Path:
    """The checkout's files as git would publish them, committed into a new repository."""
    listed = subprocess.run(["git", "ls-files", "-z", "--cached", "--others", "--exclude-standard"], cwd=ROOT,
                            check=True, capture_output=True).stdout.decode().split("\0")
    repo = tmp / "repo"
    for name in filter(None, listed):
        if (ROOT / name).is_file():
            (repo / name).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(ROOT / name, repo / name)
    _git("init", "-q", "-b", "main", cwd=repo)
    _git("add", "-A", cwd=repo)
    _git("commit", "-q", "-m", "snapshot", cwd=repo)
    return repo


def _purelib(python: Path) -> Path:
    return Path(subprocess.run([str(python), "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
                               check=True, capture_output=True, text=True).stdout.strip())


def _fresh_colab(tmp: Path) -> Path:
    """A new venv that sees .venv-colab's packages but not `helpers`, and imports google.colab."""
    venv = tmp / "colab"
    subprocess.run([str(COLAB_PYTHON), "-m", "venv", str(venv)], check=True, capture_output=True)
    python = venv / "bin" / "python"
    shared = tmp / "colab-packages"
    shared.mkdir()
    for entry in _purelib(COLAB_PYTHON).iterdir():
        name = entry.name.lower()
        if name == "helpers" or name.startswith(("layernorm_hands_on_helpers", "__editable__", "pip",
                                                 "_distutils_hack", "distutils-precedence")):
            continue  # the package itself, and the venv's own pip
        (shared / entry.name).symlink_to(entry)
    fake = tmp / "fake-colab"
    (fake / "google" / "colab").mkdir(parents=True)
    (fake / "google" / "colab" / "__init__.py").write_text('"""A stand-in for Colab\'s own module."""\n')
    # Colab imports google.colab before any notebook cell runs; a .pth line does the same here.
    (_purelib(python) / "colab-packages.pth").write_text(f"{shared}\n{fake}\nimport google.colab\n")
    return python


@pytest.fixture(scope="module")
def colab(tmp_path_factory) -> dict:
    if not COLAB_PYTHON.exists():
        message = ".venv-colab is missing: `make test` (or `make colab-env`) builds it"
        if os.environ.get("CI") == "true":
            pytest.fail(message)
        pytest.skip(message)
    tmp = tmp_path_factory.mktemp("colab")
    repo = _repository(tmp)
    return {"python": _fresh_colab(tmp), "venv": tmp / "colab",
            "env": {**os.environ, bootstrap.REPO_ENV: f"file://{repo}"}}


def _python(colab, code: str) -> str:
    result = subprocess.run([str(colab["python"]), "-c", code], capture_output=True, text=True, cwd="/",
                            timeout=120, env=colab["env"])
    assert result.returncode == 0, result.stderr
    return result.stdout


class NotebookRunner:
    """One run_notebook.py process in the fresh Colab (--serve), which runs each notebook it is sent
    in its own empty folder, throwaway user folders and a fresh kernel, and answers with a report.
    Started once for the module: its imports (nbclient, nbformat) cost about 2 s a process."""

    def __init__(self, colab: dict, stderr_path: Path):
        self.stderr_path = stderr_path
        self.lines: queue.Queue[str | None] = queue.Queue()
        with open(stderr_path, "w") as stderr:
            self.process = subprocess.Popen(
                [str(colab["python"]), str(RUNNER), "--serve", "--timeout", "300"], stdin=subprocess.PIPE,
                stdout=subprocess.PIPE, stderr=stderr, text=True, cwd="/", env=colab["env"])
        threading.Thread(target=self._read, daemon=True).start()

    def _read(self) -> None:
        for line in self.process.stdout:
            self.lines.put(line)
        self.lines.put(None)  # the process ended

    def run(self, notebook: Path, timeout_s: float = 900) -> dict:
        self.process.stdin.write(f"{notebook}\n")
        self.process.stdin.flush()
        printed, deadline = [], time.monotonic() + timeout_s
        while True:
            try:
                line = self.lines.get(timeout=max(0.0, deadline - time.monotonic()))
            except queue.Empty:
                raise AssertionError(f"{notebook.name}: no report after {timeout_s} s:\n"
                                     f"{''.join(printed)[-6000:]}") from None
            if line is None:
                stderr = self.stderr_path.read_text(errors="replace")[-3000:]
                raise AssertionError(f"the Colab runner ended while running {notebook.name}:\n"
                                     f"{''.join(printed)[-6000:]}\n{stderr}")
            if line.startswith(REPORT_MARK):
                report = json.loads(line[len(REPORT_MARK):])
                if report["request"] == str(notebook):
                    return report
                line = f"(a late report, for {report['request']})\n"  # a notebook that timed out here
            printed.append(line)

    def close(self) -> None:
        self.process.stdin.close()
        try:
            self.process.wait(timeout=60)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait()


@pytest.fixture(scope="module")
def runner(colab, tmp_path_factory):
    notebook_runner = NotebookRunner(colab, tmp_path_factory.mktemp("colab-runner") / "stderr.txt")
    yield notebook_runner
    notebook_runner.close()


def _run_notebook(runner: NotebookRunner, notebook: Path) -> dict:
    report = runner.run(notebook)
    assert report["problems"] == [], f"{notebook.name} failed in a fresh Colab:\n" + "\n".join(report["problems"])
    assert report["files_left_in_workdir"] == [], "the notebook wrote files next to itself"
    return report


def _digests(files: dict[str, Path]) -> dict[str, str]:
    return {name: hashlib.sha256(path.read_bytes()).hexdigest() for name, path in files.items()}


def test_a_fresh_colab_has_colabs_versions_and_no_helpers(colab):
    code = ("import json, importlib.util, importlib.metadata as m, google.colab; "
            f"v = {{k: m.version(k) for k in {list(COLAB_VERSIONS)!r}}}; "
            "v['helpers'] = importlib.util.find_spec('helpers') is not None; print(json.dumps(v))")
    versions = json.loads(_python(colab, code))
    versions["torch"] = versions["torch"].split("+")[0]
    assert versions == {**COLAB_VERSIONS, "helpers": False}


def test_the_first_cell_installs_the_package_from_the_repository(colab, runner):
    report = _run_notebook(runner, FIRST)
    installed = Path(report["probe"]["helpers"]).parent
    assert installed.is_relative_to(colab["venv"]), f"helpers came from {installed}, not the fresh install"
    direct_url = json.loads(_python(colab, "import importlib.metadata as m; "
                                           "print(m.distribution('layernorm-hands-on-helpers').read_text('direct_url.json'))"))
    assert direct_url["url"].startswith("file://") and "vcs_info" in direct_url  # installed from git, not editable
    ours = {p.relative_to(ROOT / "helpers").as_posix(): p for p in (ROOT / "helpers").rglob("*")
            if p.is_file() and "__pycache__" not in p.parts}
    theirs = {p.relative_to(installed).as_posix(): p for p in installed.rglob("*")
              if p.is_file() and "__pycache__" not in p.parts}
    assert _digests(theirs) == _digests(ours), "the installed package is not the checkout's helpers/ (data included)"


@pytest.mark.parametrize("notebook", [p for p in NOTEBOOKS + NOTEBOOKS_ZH if p != FIRST],
                         ids=lambda p: p.relative_to(ROOT / "notebooks").as_posix())
def test_notebook_runs_alone_in_colab(runner, notebook):
    _run_notebook(runner, notebook)


def test_colab_links_are_made_from_the_one_repository_url():
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    for notebook in NOTEBOOKS:
        assert bootstrap.colab_url(notebook.name) in readme, f"README.md has no Colab link for {notebook.name}"
    start_here = FIRST.read_text(encoding="utf-8")
    for text, where in ((readme, "README.md"), (start_here, FIRST.name)):
        assert bootstrap.rewrite_links(text) == text, f"{where} has a Colab link not made from REPO_URL"
    assert bootstrap.COLAB_LINK.search(start_here), f"{FIRST.name} has no 'Open in Colab' link"


def test_the_chinese_editions_colab_links_open_the_chinese_notebooks():
    readme = (ROOT / "README.zh.md").read_text(encoding="utf-8")
    assert NOTEBOOKS_ZH, "notebooks/zh/ holds no notebook"
    for notebook in NOTEBOOKS_ZH:
        assert bootstrap.colab_url(f"zh/{notebook.name}") in readme, f"README.zh.md has no Colab link for zh/{notebook.name}"
    start_here = FIRST_ZH.read_text(encoding="utf-8")
    for text, where in ((readme, "README.zh.md"), (start_here, f"zh/{FIRST_ZH.name}")):
        assert bootstrap.rewrite_links(text) == text, f"{where} has a Colab link not made from REPO_URL"
    assert bootstrap.colab_url(f"zh/{FIRST_ZH.name}") in start_here, f"zh/{FIRST_ZH.name} has no 'Open in Colab' link to itself"
