"""Shared fixtures. Keep this file small: one section per concern."""

from __future__ import annotations

import pytest
import torch

# --- Comparing helpers' results with torch's --------------------------------------
# Absolute and relative tolerance per dtype: about two units in the last place for
# the half types (torch's kernels and ours round at different points), and tight
# bounds for float32 and float64, where both compute the same sums in the same dtype.
TOLERANCES = {
    torch.float64: (1e-9, 1e-9),
    torch.float32: (1e-5, 1e-5),
    torch.float16: (2e-3, 2e-3),
    torch.bfloat16: (1.6e-2, 1.6e-2),
}


def _assert_close(actual, expected, *, scale: float = 1.0, msg: str | None = None) -> None:
    """``torch.testing.assert_close`` with :data:`TOLERANCES` for ``expected``'s dtype.

    Dtype, shape and device must match exactly; NaNs must sit in the same places.
    ``scale`` widens both tolerances (for gradients, which sum over many terms).
    """
    atol, rtol = TOLERANCES[expected.dtype]
    torch.testing.assert_close(
        actual, expected, atol=atol * scale, rtol=rtol * scale, equal_nan=True, msg=msg
    )


@pytest.fixture
def assert_close():
    return _assert_close


def _assert_within_ulps(actual, expected, ulps: float, msg: str = "") -> None:
    """``|actual - expected| <= ulps * eps * max|expected|`` everywhere: a bound in units in the
    last place of the values' scale, in ``expected``'s dtype (``eps`` of float32 for float64
    references of float32 results: pass ``expected`` in the dtype the result was computed in).

    For one quantity computed two ways in floating point (a batch in chunks against the whole
    batch, say): the two sum in different orders, so they differ by a few roundings of the
    largest value, however small each element is; a relative tolerance fails near 0.
    """
    eps = torch.finfo(expected.dtype).eps
    assert actual.shape == expected.shape, f"{msg}: shape {tuple(actual.shape)} != {tuple(expected.shape)}"
    diff = (actual.double() - expected.double()).abs().max().item()
    scale = expected.double().abs().max().item()
    assert diff <= ulps * eps * scale, (
        f"{msg}: largest difference {diff:.3g} is {diff / (eps * scale):.3g} ulps of the scale {scale:.3g}, "
        f"more than {ulps}")


@pytest.fixture
def assert_within_ulps():
    return _assert_within_ulps


# --- JupyterLab started exactly as `make lab` starts it ---------------------------
# Shared by tests/test_lab_server.py and tests/browser/. The server runs `make lab`
# with LAB_PORT=<a free port>, LAB_FLAGS="--no-browser --expose-app-in-browser" (the browser test
# opens and closes notebooks through Lab's own commands, `window.jupyterapp`, in one page) and
# JUPYTER_TOKEN=<random>, in
# throwaway HOME / JUPYTER_* / IPYTHONDIR folders, with autosave off and checkpoints
# kept in that throwaway home, so that running the notebooks in a browser never writes
# to notebooks/.
import collections  # noqa: E402
import json  # noqa: E402
import os  # noqa: E402
import re  # noqa: E402
import secrets  # noqa: E402
import signal  # noqa: E402
import socket  # noqa: E402
import subprocess  # noqa: E402
import time  # noqa: E402
import urllib.error  # noqa: E402
import urllib.request  # noqa: E402
from dataclasses import dataclass  # noqa: E402
from pathlib import Path  # noqa: E402

import psutil  # noqa: E402

REPO_ROOT = Path(__file__).resolve().parents[1]
LAB_START_TIMEOUT_S = 90

# JupyterLab user settings for the throwaway server: no autosave (the tests run the
# notebooks but must never save them), no news or update notifications over the page.
# They live in the throwaway JUPYTER_CONFIG_DIR: a learner's `make lab` keeps Lab's defaults.
_LAB_SETTINGS = {
    "@jupyterlab/docmanager-extension/plugin.jupyterlab-settings": {"autosave": False},
    "@jupyterlab/apputils-extension/notification.jupyterlab-settings": {
        "fetchNews": "false", "checkForUpdates": False, "doNotDisturbMode": True},
    # Every cell in the DOM (no virtualisation), so that every widget can be found.
    "@jupyterlab/notebook-extension/tracker.jupyterlab-settings": {"windowingMode": "none"},
}


def free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@dataclass
class LabServer:
    port: int
    token: str
    proc: subprocess.Popen
    log_path: Path
    home: Path

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def log(self) -> str:
        return self.log_path.read_text(encoding="utf-8", errors="replace")

    @property
    def root_dir(self) -> Path:
        """The folder the server serves (`jupyter lab FILE` serves FILE's folder)."""
        match = re.search(r"Serving notebooks from local directory: (.+)", self.log())
        assert match, f"no root directory in the server's log:\n{self.log()[-2000:]}"
        return Path(match.group(1).strip())

    def api_path(self, path: Path) -> str:
        """The contents-API path of a file on disk (relative to the served folder)."""
        return path.resolve().relative_to(self.root_dir.resolve()).as_posix()

    def get(self, path: str, token: str | None = "default", timeout: float = 10):
        """GET ``path``; returns (status, body bytes). ``token=None`` sends no token."""
        return self.request("GET", path, token, timeout)

    def delete(self, path: str, timeout: float = 10):
        return self.request("DELETE", path, timeout=timeout)

    def request(self, method: str, path: str, token: str | None = "default", timeout: float = 10):
        request = urllib.request.Request(self.url + path, method=method)
        token = self.token if token == "default" else token
        if token is not None:
            request.add_header("Authorization", f"token {token}")
        try:
            with urllib.request.urlopen(request, timeout=timeout) as response:
                return response.status, response.read()
        except urllib.error.HTTPError as error:
            return error.code, error.read()

    def stop(self) -> None:
        """SIGTERM to the whole process group (make, jupyter, kernels), then SIGKILL."""
        try:
            tree = [psutil.Process(self.proc.pid), *psutil.Process(self.proc.pid).children(True)]
        except psutil.NoSuchProcess:
            tree = []
        try:
            os.killpg(self.proc.pid, signal.SIGTERM)  # jupyter shuts its kernels down
        except ProcessLookupError:
            pass
        _, alive = psutil.wait_procs(tree, timeout=15)
        for process in alive:  # whatever left the group or ignored SIGTERM
            try:
                process.kill()
            except psutil.NoSuchProcess:
                pass
        try:
            self.proc.wait(timeout=5)
        except subprocess.TimeoutExpired:
            pass


def start_lab_server(workdir: Path) -> LabServer:
    """Start `make lab` in its own process group and wait until the API answers.

    `make -o .venv/.built lab` runs lab's recipe as is, but never rebuilds .venv under the
    running tests (were requirements.txt or pyproject.toml newer than the venv).
    """
    home = workdir / "home"
    dirs = {name: home / sub for name, sub in [
        ("JUPYTER_CONFIG_DIR", ".jupyter"), ("JUPYTER_DATA_DIR", ".local/share/jupyter"),
        ("JUPYTER_RUNTIME_DIR", ".local/share/jupyter/runtime"), ("IPYTHONDIR", ".ipython"),
        ("MPLCONFIGDIR", ".config/matplotlib")]}
    for path in dirs.values():
        path.mkdir(parents=True, exist_ok=True)
    # Checkpoints (Lab writes one when it first opens a notebook) go to the throwaway home,
    # not to notebooks/.ipynb_checkpoints.
    (dirs["JUPYTER_CONFIG_DIR"] / "jupyter_server_config.json").write_text(json.dumps(
        {"FileCheckpoints": {"checkpoint_dir": str(home / "checkpoints")}}), encoding="utf-8")
    for rel, settings in _LAB_SETTINGS.items():
        target = dirs["JUPYTER_CONFIG_DIR"] / "lab" / "user-settings" / rel
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(json.dumps(settings), encoding="utf-8")
    port, token = free_port(), secrets.token_hex(16)
    env = {k: v for k, v in os.environ.items()
           if not k.startswith(("JUPYTER", "JPY_", "MAKE", "MFLAGS")) and k != "PYTHONPATH"}
    env.update({k: str(v) for k, v in dirs.items()},
               HOME=str(home), JUPYTER_TOKEN=token, BROWSER="true")
    log_path = workdir / "lab.log"
    with open(log_path, "wb") as log:
        proc = subprocess.Popen(
            ["make", "--no-print-directory", "-o", ".venv/.built", "lab",
             f"LAB_PORT={port}", "LAB_FLAGS=--no-browser --expose-app-in-browser"],
            cwd=REPO_ROOT, env=env, stdin=subprocess.DEVNULL, stdout=log, stderr=subprocess.STDOUT,
            start_new_session=True)
    server = LabServer(port, token, proc, log_path, home)
    deadline = time.monotonic() + LAB_START_TIMEOUT_S
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            pytest.fail(f"`make lab` exited with {proc.returncode}:\n{server.log()[-3000:]}")
        try:
            if server.get("/api/status", timeout=2)[0] == 200:
                return server
        except (OSError, urllib.error.URLError):
            pass
        time.sleep(0.5)
    server.stop()
    pytest.fail(f"JupyterLab did not answer within {LAB_START_TIMEOUT_S} s:\n{server.log()[-3000:]}")


@pytest.fixture(scope="session")
def lab_server(tmp_path_factory):
    """One `make lab` server for the whole session, stopped (process group and all) at the end."""
    server = start_lab_server(tmp_path_factory.mktemp("lab"))
    try:
        yield server
    finally:
        server.stop()


# --- Order: quick to slow ---------------------------------------------------------
# A `pytest` run (pyproject.toml) orders what it selects: unit and hygiene tests first, then every
# notebook under nbval (marked `notebook`), then slow tests (servers, the Colab-versions
# environment), then the browser. The sort is stable, so each notebook's cells stay in order.
# (`make test` splits them over three runs at once: the Makefile says how.)
STAGES = ("unit, property and hygiene tests", "notebooks under strict nbval", "servers and the Colab versions",
          "the browser")


def _stage(item) -> int:
    if item.get_closest_marker("browser"):
        return 3
    if item.get_closest_marker("slow"):
        return 2
    return 1 if item.path.suffix == ".ipynb" else 0


def pytest_collection_modifyitems(config, items):
    for item in items:
        if item.path.suffix == ".ipynb":
            item.add_marker(pytest.mark.notebook)
    items.sort(key=_stage)
    config.stash[_STAGE_OF] = {item.nodeid: _stage(item) for item in items}


# --- Time per stage, printed at the end -------------------------------------------
# The tests run one after another, so a stage's time is the sum of its tests' setup, call and
# teardown times (module fixtures included, in the test that first needs them); a stage is listed
# with the tests that ran in it (a run with `-m` lists only the stages it selected). Registered as a
# plugin, since a conftest's own per-test hooks see only the tests below its folder (not notebooks/).
_STAGE_OF = pytest.StashKey[dict]()


class _StageTimes:
    def __init__(self, config):
        self.config, self.seconds = config, [0.0] * len(STAGES)
        self.counts = collections.Counter()

    def pytest_runtest_logreport(self, report):
        stage = self.config.stash.get(_STAGE_OF, {}).get(report.nodeid)
        if stage is not None:
            self.seconds[stage] += report.duration
            self.counts[stage] += report.when == "setup"  # each test that ran, once

    def pytest_terminal_summary(self, terminalreporter):
        counts = self.counts
        if counts:
            terminalreporter.section("time per stage")
            for i, name in enumerate(STAGES):
                if counts.get(i):
                    terminalreporter.write_line(f"{name}: {self.seconds[i]:.0f} s ({counts[i]} tests)")


def pytest_configure(config):
    config.pluginmanager.register(_StageTimes(config), "stage-times")
    # One thread for the tests' own torch work: their tensors are small, and `make test` runs a
    # second pytest (the portable nbval pass) beside this one on 2 cores, where a second thread
    # makes each small op wait for a core (measured under load: tests/test_bn_vs_ln.py took 132 s
    # on 2 threads, 25 s on 1). It is also how the runner trains the stored experiments. Notebook
    # kernels, servers and subprocesses keep their own defaults.
    torch.set_num_threads(1)
