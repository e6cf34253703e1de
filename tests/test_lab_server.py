"""`make lab` serves the notebooks on loopback only, and only to whoever has the token.

The server is the one `make lab` starts (the `lab_server` fixture in conftest.py runs it
through make, with LAB_FLAGS="--no-browser --expose-app-in-browser", a free LAB_PORT and a random JUPYTER_TOKEN).
"""

from __future__ import annotations

import json
import re
import socket
from pathlib import Path

import nbformat
import psutil
import pytest

pytestmark = pytest.mark.slow

ROOT = Path(__file__).resolve().parents[1]
# The notebook `make lab` opens (the Makefile's FIRST_NB): the core path's first notebook.
START_HERE = ROOT / re.search(r"^FIRST_NB\s*:=\s*(\S+)", (ROOT / "Makefile").read_text(encoding="utf-8"), re.M).group(1)


def test_serves_the_notebooks_folder_or_the_repository(lab_server):
    assert lab_server.root_dir.resolve() in (ROOT, ROOT / "notebooks")


def test_serves_the_first_notebook_with_the_token(lab_server):
    if not START_HERE.is_file():
        pytest.skip(f"{START_HERE.name} (the Makefile's FIRST_NB) is not in this checkout")
    path = lab_server.api_path(START_HERE)
    status, body = lab_server.get(f"/api/contents/{path}?content=1")
    assert status == 200, body[:500]
    model = json.loads(body)
    assert model["type"] == "notebook"
    assert model["path"] == path
    on_disk = nbformat.read(START_HERE, as_version=4)
    assert [c["source"] for c in model["content"]["cells"]] == [c.source for c in on_disk.cells]


def test_no_news_pop_up(lab_server):
    """`make lab` writes overrides.json into the environment: JupyterLab never asks to fetch its
    news feed, nor checks for updates. (The test server's own user settings say the same, so this
    reads the defaults the overrides set, which a learner's `make lab` gets.)"""
    status, body = lab_server.get("/lab/api/settings/@jupyterlab/apputils-extension:notification")
    assert status == 200, body[:500]
    schema = json.loads(body)["schema"]["properties"]
    assert schema["fetchNews"]["default"] == "false" and schema["checkForUpdates"]["default"] is False


@pytest.mark.parametrize("token", [None, "not-the-token"], ids=["no-token", "wrong-token"])
def test_refuses_without_the_token(lab_server, token):
    status, _ = lab_server.get("/api/contents/", token=token)
    assert status in (401, 403)
    status, _ = lab_server.get("/api/sessions", token=token)
    assert status in (401, 403)
    status, body = lab_server.get("/lab", token=token)  # redirected to the login page
    assert b"Password or token" in body and b"jupyter-config-data" not in body


def test_lab_page_opens_with_the_token(lab_server):
    status, body = lab_server.get("/lab")
    assert status == 200 and b"jupyter-config-data" in body


def test_binds_loopback_only(lab_server):
    pids = {lab_server.proc.pid} | {p.pid for p in psutil.Process(lab_server.proc.pid).children(True)}
    listening = [c for c in psutil.net_connections(kind="inet")
                 if c.status == psutil.CONN_LISTEN and c.laddr.port == lab_server.port]
    assert listening, "nothing listens on the server's port"
    assert {c.pid for c in listening} <= pids
    assert {c.laddr.ip for c in listening} == {"127.0.0.1"}, listening
    assert f"http://127.0.0.1:{lab_server.port}/lab" in lab_server.log()
    # And it cannot be reached on this machine's other addresses.
    for addrs in psutil.net_if_addrs().values():
        for addr in addrs:
            if addr.family == socket.AF_INET and not addr.address.startswith("127."):
                with socket.socket() as s:
                    s.settimeout(2)
                    assert s.connect_ex((addr.address, lab_server.port)) != 0, addr.address
