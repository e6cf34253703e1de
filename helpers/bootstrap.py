"""The first cell of every notebook, kept here once so that all notebooks agree.

It makes ``helpers`` importable wherever a notebook is opened:

- from a checkout, installed or not (``make lab`` installs it; a bare clone is found
  by walking up from the notebook's folder to the one that holds ``helpers/``);
- in Google Colab, by pip-installing the package from :data:`REPO_URL`;
- anywhere else, it stops with one sentence that says what to do.

``tests/test_notebook_hygiene.py`` checks that each notebook's first code cell is
exactly :data:`FIRST_CELL` and that :data:`REPO_URL` matches ``pyproject.toml``.
"""

REPO_URL = "https://github.com/layernorm-hands-on/layernorm-hands-on"

FIRST_CELL = f'''\
# Make `helpers` (this set's package) importable: installed, from a checkout, or in Colab.
import importlib.util
import pathlib
import subprocess
import sys

REPO_URL = "{REPO_URL}"
if importlib.util.find_spec("helpers") is None:
    checkout = next((p for p in [pathlib.Path.cwd(), *pathlib.Path.cwd().parents]
                     if (p / "helpers" / "__init__.py").is_file()), None)
    if checkout is not None:
        sys.path.insert(0, str(checkout))
    elif "google.colab" in sys.modules:
        subprocess.run([sys.executable, "-m", "pip", "install", "-q", f"git+{{REPO_URL}}"], check=True)
    else:
        raise ModuleNotFoundError(f"`helpers` is not installed: run `make lab` in a clone of {{REPO_URL}}, "
                                  f"or `pip install git+{{REPO_URL}}` in this kernel's environment.")
import helpers  # noqa: E402,F401'''
