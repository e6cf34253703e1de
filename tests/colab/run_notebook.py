"""Run one notebook the way Google Colab would meet it: alone, with Colab's versions.

Run with the Colab-versions environment's Python (``.venv-colab/bin/python``), where the
package is pip-installed (not editable). The notebook is copied ALONE into an empty temporary
folder, so its first cell can only find ``helpers`` as an installed package; it is executed
there by nbclient with a kernel running this very Python, in throwaway HOME / JUPYTER_* /
IPYTHONDIR / MPLCONFIGDIR folders.

Exit status 0 when every cell ran (it stops at the first error) with no error output, no traceback, no "Error displaying
widget"-like text and no warning on stderr; 1 otherwise, with the problems printed. The last
line of stdout is a JSON report.

    .venv-colab/bin/python tests/colab/run_notebook.py notebooks/00_what_layernorm_computes.ipynb

With ``--serve`` it runs one notebook per line read from stdin, each as above (its own empty
folder, throwaway user folders and a fresh kernel), and prints each report as one line after
REPORT_MARK: the tests start this process once rather than once per notebook (about 2 s of
imports each time).
"""

from __future__ import annotations

import argparse
import json
import os
import re
import shutil
import sys
import tempfile
import time
from pathlib import Path

import nbformat
from nbclient import NotebookClient
from nbclient.exceptions import CellExecutionError, CellTimeoutError, DeadKernelError

KERNEL_NAME = "colab-versions-python"
PROBE_MARK = "__COLAB_RUN_PROBE__"
REPORT_MARK = "__COLAB_RUN_REPORT__ "
PROBE_SOURCE = f"""\
import json as _json, sys as _sys
import helpers as _helpers
print({PROBE_MARK!r}, _json.dumps({{"executable": _sys.executable, "helpers": _helpers.__file__}}))
"""
BAD_TEXT = re.compile(
    r"Traceback \(most recent call last\)|Error displaying widget|Error rendering|"
    r"Failed to display|Loading widget\.\.\.|model not found"
)
WARNING = re.compile(r"\b[A-Z]\w*Warning\b:")


def _isolate(tmp: Path) -> Path:
    """Throwaway user folders, and a kernelspec that runs this interpreter; returns the workdir."""
    home = tmp / "home"
    for var, sub in [("JUPYTER_CONFIG_DIR", ".jupyter"), ("JUPYTER_DATA_DIR", ".local/share/jupyter"),
                     ("JUPYTER_RUNTIME_DIR", ".local/share/jupyter/runtime"),
                     ("IPYTHONDIR", ".ipython"), ("MPLCONFIGDIR", ".config/matplotlib")]:
        (home / sub).mkdir(parents=True, exist_ok=True)
        os.environ[var] = str(home / sub)
    os.environ["HOME"] = str(home)
    for var in ("PYTHONPATH", "PYTHONHOME", "PYTHONSTARTUP", "MPLBACKEND", "JUPYTER_PATH"):
        os.environ.pop(var, None)
    spec_dir = home / ".local/share/jupyter/kernels" / KERNEL_NAME
    spec_dir.mkdir(parents=True)
    (spec_dir / "kernel.json").write_text(json.dumps({
        "argv": [sys.executable, "-m", "ipykernel_launcher", "-f", "{connection_file}"],
        "display_name": "Python 3 (Colab versions)", "language": "python",
    }))
    workdir = tmp / "work"
    workdir.mkdir()
    return workdir


def _texts(output) -> list[str]:
    if output.get("output_type") == "stream":
        return [output.get("text", "")]
    if output.get("output_type") == "error":
        return ["\n".join(output.get("traceback", []))]
    return [v for k, v in output.get("data", {}).items()
            if isinstance(v, str) and not k.startswith("image/")]


def problems_in(nb) -> list[str]:
    problems = []
    code_cells = [c for c in nb.cells if c.cell_type == "code" and PROBE_MARK not in c.source]
    for index, cell in enumerate(code_cells):  # numbered as nbval numbers them
        head = cell.source.strip().splitlines()[0][:70] if cell.source.strip() else ""
        where = f"code cell {index} ({head!r})"
        for output in cell.get("outputs", []):
            if output.get("output_type") == "error":
                problems.append(f"{where}: {output.get('ename')}: {output.get('evalue')}")
                continue
            for text in _texts(output):
                if (match := BAD_TEXT.search(text)) is not None:
                    problems.append(f"{where}: output shows {match.group(0)!r}: {text[:500]}")
                if output.get("name") == "stderr" and (match := WARNING.search(text)):
                    problems.append(f"{where}: a warning on stderr: {text[:500]}")
    return problems


def run(notebook: Path, timeout: int) -> dict:
    with tempfile.TemporaryDirectory(prefix="colab-run-") as tmp:
        workdir = _isolate(Path(tmp))
        copy = workdir / notebook.name
        shutil.copyfile(notebook, copy)
        nb = nbformat.read(copy, as_version=4)
        nb.cells.append(nbformat.v4.new_code_cell(PROBE_SOURCE))
        # Stop at the first error (it is in the cell's outputs): later cells would only cascade.
        client = NotebookClient(nb, timeout=timeout, kernel_name=KERNEL_NAME, allow_errors=False,
                                record_timing=False, resources={"metadata": {"path": str(workdir)}})
        # No Output-widget emulation: nbclient's sends comm messages on the shell socket while
        # it awaits the cell's reply on that same socket, which can swallow the wake-up for
        # the reply (a silent stall until the cell timeout). Without it, what a callback
        # prints or raises inside `with output:` lands in the cell's outputs, where
        # problems_in() sees it.
        client.comm_open_handlers["jupyter.widget"] = lambda msg: None
        started = time.monotonic()
        fatal = None
        try:
            client.execute(cwd=str(workdir))
        except CellExecutionError:
            pass  # the error output is in the cell: problems_in() reports it
        except (CellTimeoutError, DeadKernelError) as error:
            fatal = f"{type(error).__name__}: {str(error)[:2000]}"
        seconds = time.monotonic() - started
        leftovers = sorted(p.name for p in workdir.iterdir() if p.name != notebook.name)

    problems = problems_in(nb)
    if fatal:
        problems.insert(0, fatal)
    probe = None
    # the probe's one print can reach the notebook as several stream outputs (the kernel flushed
    # between the mark and the JSON): read them together
    printed = "".join(output.get("text", "") for output in nb.cells[-1].get("outputs", [])
                      if output.get("output_type") == "stream" and output.get("name") == "stdout")
    if PROBE_MARK in printed:
        probe = json.loads(printed.split(PROBE_MARK, 1)[1].strip().splitlines()[0])
    if probe is None:
        problems.append("the probe cell did not run: the notebook stopped early")
    else:
        if Path(probe["executable"]).resolve() != Path(sys.executable).resolve():
            problems.append(f"the kernel ran {probe['executable']}, not {sys.executable}")
        if "site-packages" not in probe["helpers"]:
            problems.append(f"helpers was imported from {probe['helpers']}, not the installed package")
    return {"notebook": notebook.name, "seconds": round(seconds, 1), "problems": problems,
            "probe": probe, "files_left_in_workdir": leftovers}


def serve(timeout: int) -> int:
    """Run each notebook named on a line of stdin; print each report on one line after REPORT_MARK,
    with the line it answers as "request"."""
    for line in sys.stdin:
        if not line.strip():
            continue
        notebook = Path(line.strip()).resolve()
        try:
            report = run(notebook, timeout)
        except Exception as error:  # reported, so that the notebooks after this one still run
            report = {"notebook": notebook.name, "problems": [f"{type(error).__name__}: {error}"],
                      "probe": None, "files_left_in_workdir": []}
        print(REPORT_MARK + json.dumps({**report, "request": line.strip()}), flush=True)
    return 0


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("notebook", type=Path, nargs="?", help="the notebook (omit with --serve)")
    parser.add_argument("--timeout", type=int, default=120, help="seconds per cell")
    parser.add_argument("--serve", action="store_true", help="run the notebooks named on stdin, one per line")
    args = parser.parse_args()
    if args.serve == (args.notebook is not None):
        parser.error("give a notebook, or --serve, not both")
    if args.serve:
        return serve(args.timeout)
    report = run(args.notebook.resolve(), args.timeout)
    for problem in report["problems"]:
        print(f"PROBLEM: {problem}")
    print(json.dumps(report))
    return 1 if report["problems"] else 0


if __name__ == "__main__":
    sys.exit(main())
