"""The first cell of every notebook, kept here once so that all notebooks agree.

It makes ``helpers`` importable wherever a notebook is opened:

- from a checkout, installed or not (``make lab`` installs it; a bare clone is found
  by walking up from the notebook's folder to the one that holds ``helpers/``);
- in Google Colab, by pip-installing the package from :data:`REPO_URL`;
- anywhere else, it stops with one sentence that says what to do.

The Chinese edition of the core path (``notebooks/zh/``) opens with the same code, its opening
comment in Chinese (:data:`FIRST_COMMENTS`), plus one line, :data:`LANGUAGE_LINES` ``["zh"]``, that
makes the checkers speak Chinese: :func:`first_cell`.

``tests/test_notebook_hygiene.py`` checks that each notebook's first code cell is exactly
:func:`first_cell` of its language, that :data:`REPO_URL` matches ``pyproject.toml`` and that every
"Open in Colab" link is :func:`colab_url`'s. The repository's address lives here only:
``python -m helpers.bootstrap`` rewrites the first cells and the links from it.
:data:`REPO_ENV` overrides it at run time (the Colab test points it at a local clone).
"""

import re
from pathlib import Path

REPO_URL = "https://github.com/layernorm-hands-on/layernorm-hands-on"

#: The environment variable that points the first cell at another repository (a fork, or a
#: local clone as ``file:///path/to/clone``): what the Colab test uses.
REPO_ENV = "LAYERNORM_HANDS_ON_REPO"

#: The branch the "Open in Colab" links open.
BRANCH = "main"

FIRST_CELL = f'''\
# You need not read this cell. It makes `helpers`, this set's package, importable.
import importlib.util, os, pathlib, subprocess, sys  # noqa: E401, I001
REPO_URL = os.environ.get("{REPO_ENV}", "{REPO_URL}")
clone = next((p for p in [pathlib.Path.cwd(), *pathlib.Path.cwd().parents] if (p / "helpers" / "__init__.py").is_file()), None)
if importlib.util.find_spec("helpers") is None and clone is not None:
    sys.path.insert(0, str(clone))
elif importlib.util.find_spec("helpers") is None and "google.colab" in sys.modules:
    subprocess.run([sys.executable, "-m", "pip", "install", "-q", f"git+{{REPO_URL}}"], check=True)
elif importlib.util.find_spec("helpers") is None:
    raise ModuleNotFoundError(f"`helpers` is not installed: run `make lab` in a clone of {{REPO_URL}}, or `pip install git+{{REPO_URL}}` here")
import helpers  # noqa: E402,F401'''

#: The line a notebook's first cell adds after :data:`FIRST_CELL` to speak another language
#: than English, by language; the folder of the set's notebooks in each language.
LANGUAGE_LINES = {"zh": 'helpers.set_language("zh")'}
#: The first cell's opening comment in another language than English, by language (the code is the same).
FIRST_COMMENTS = {"zh": "# 这个单元格不必细读，它让本套笔记本的 `helpers` 包可以导入。"}
FOLDERS = {"en": "notebooks", "zh": "notebooks/zh"}


def first_cell(language: str = "en") -> str:
    """The first code cell of a notebook in ``language``: :data:`FIRST_CELL` with its opening comment
    in that language (:data:`FIRST_COMMENTS`), then (after a blank line) the line that sets the
    language; for English, :data:`FIRST_CELL` alone."""
    if language == "en":
        return FIRST_CELL
    _, code = FIRST_CELL.split("\n", 1)  # the English comment, then the code
    return f"{FIRST_COMMENTS[language]}\n{code}\n\n{LANGUAGE_LINES[language]}"  # a blank line after the imports, as isort wants


def colab_url(notebook: str) -> str:
    """The "Open in Colab" address of ``notebook`` in :data:`REPO_URL` on :data:`BRANCH`: a path under
    notebooks/, such as ``"00_what_layernorm_computes.ipynb"`` or, in the Chinese edition,
    ``"zh/00_what_layernorm_computes.ipynb"``."""
    repo = REPO_URL.removeprefix("https://github.com/")
    return f"https://colab.research.google.com/github/{repo}/blob/{BRANCH}/notebooks/{notebook}"


#: Any "Open in Colab" address of one of the set's notebooks, whatever repository it names.
COLAB_LINK = re.compile(
    r"https://colab\.research\.google\.com/github/[^\s)\]\"']+?/notebooks/((?:zh/)?[0-9]{2}_[a-z0-9_]+\.ipynb)")


def rewrite_links(text: str) -> str:
    """``text`` with every "Open in Colab" address made from :data:`REPO_URL` and :data:`BRANCH`."""
    return COLAB_LINK.sub(lambda m: colab_url(m.group(1)), text)


def _rewrite(root: Path) -> list[str]:
    """Make every notebook's first code cell :func:`first_cell` of its language and every Colab
    link current, in README.md, README.zh.md and the notebooks of every language (the .ipynb of
    each jupytext pair: ``jupytext --sync`` brings the .py along). Returns what changed."""
    import nbformat

    changed = []
    for readme in (root / "README.md", root / "README.zh.md"):
        if not readme.is_file():
            continue
        text = readme.read_text(encoding="utf-8")
        if rewrite_links(text) != text:
            readme.write_text(rewrite_links(text), encoding="utf-8")
            changed.append(readme.name)
    for language, folder in FOLDERS.items():
        for path in sorted((root / folder).glob("*.ipynb")):
            nb = nbformat.read(path, as_version=4)
            before = nbformat.writes(nb)
            code = [c for c in nb.cells if c.cell_type == "code"]
            if code:
                code[0].source = first_cell(language)
            for cell in nb.cells:
                if cell.cell_type == "markdown":
                    cell.source = rewrite_links(cell.source)
            if nbformat.writes(nb) != before:
                nbformat.write(nb, path)
                changed.append(path.relative_to(root / "notebooks").as_posix())
    return changed


if __name__ == "__main__":
    # `python -m helpers.bootstrap`: after changing REPO_URL (or BRANCH), rewrite the first cells
    # and the Colab links; then `jupytext --sync notebooks/*.ipynb notebooks/zh/*.ipynb` brings the
    # .py files along.
    for name in _rewrite(Path(__file__).resolve().parents[1]):
        print("rewrote", name)
