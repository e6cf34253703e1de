"""Every notebook (the Chinese edition's in notebooks/zh/ too), opened in JupyterLab (the server `make lab` starts) in headless Chromium:
run all cells, then move every slider and change every other control, and check that what
the widget shows changes each time, with no traceback and no "Error displaying widget".

One Lab page serves every notebook in turn, as a learner's would: each is opened with Lab's
document manager, cleared and run with Lab's own menus, then closed without saving and its kernel
shut down (the test server exposes `window.jupyterapp` for that). Loading Lab once, not once per
notebook, spares about 4 s of page load each.

Playwright (sync API) drives Debian's /usr/bin/chromium; no browser is downloaded. Without
Chromium these tests skip, except under CI=true, where they fail (.ci/run installs it).
Autosave is off on the test server and checkpoints go to its throwaway home (conftest.py);
each notebook is checked unchanged on disk afterwards: running it here never rewrites it.
"""

from __future__ import annotations

import json
import os
import re
import time
from pathlib import Path

import pytest

pytestmark = [pytest.mark.browser, pytest.mark.slow]

ROOT = Path(__file__).resolve().parents[2]
NOTEBOOKS = sorted((ROOT / "notebooks").glob("*.ipynb")) + sorted((ROOT / "notebooks" / "zh").glob("*.ipynb"))
IDS = [p.relative_to(ROOT / "notebooks").as_posix() for p in NOTEBOOKS]


def _slug(notebook: Path) -> str:
    """A name for the notebook's workspace and screenshot: its stem, "zh-" before a Chinese one."""
    return f"zh-{notebook.stem}" if notebook.parent.name == "zh" else notebook.stem
CHROMIUM = "/usr/bin/chromium"
CHROMIUM_FLAGS = [
    "--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
    "--disable-background-networking", "--disable-component-update", "--disable-sync",
]
OPEN_TIMEOUT_MS = 90_000
RUN_ALL_TIMEOUT_S = 120
CHANGE_TIMEOUT_S = 30
SETTLE_S = 0.3  # a display unchanged this long, the kernel idle, has settled
ERROR_TEXT = re.compile(r"Traceback \(most recent call last\)|Error displaying widget|"
                        r"Error rendering|Failed to display")
# Once everything has settled, a widget still "Loading" never rendered.
BAD_TEXT = re.compile(ERROR_TEXT.pattern + r"|Loading widget\.\.\.")

# Controls, by kind (ipywidgets 8 and 7 class names), and what is shown in a cell's output area
# once they are taken out of it.
CONTROLS = {
    "slider": ".widget-slider",
    "dropdown": ".widget-dropdown",
    "select": ".widget-select:not(.widget-select-multiple)",
    "toggle-buttons": ".widget-toggle-buttons",
    "toggle-button": ".widget-toggle-button:not(.widget-toggle-buttons .widget-toggle-button)",
    "checkbox": ".widget-checkbox",
    "radio": ".widget-radio",
    "button": "button.widget-button, button.jupyter-button:not(.widget-toggle-button)",
}
UNDRIVEN = ".widget-text, .widget-textarea, .widget-colorpicker, .widget-datepicker"
# The widget models behind those controls, as the stored notebook's widget state names them.
CONTROL_MODELS = {"FloatSliderModel", "IntSliderModel", "FloatLogSliderModel", "SelectionSliderModel",
                  "DropdownModel", "SelectModel", "ToggleButtonsModel", "ToggleButtonModel", "CheckboxModel",
                  "RadioButtonsModel", "ButtonModel"}


def stored_controls(notebook: Path) -> int:
    """How many controls the notebook showed when it was executed and stored (its widget state)."""
    metadata = json.loads(notebook.read_text(encoding="utf-8"))["metadata"]
    state = metadata.get("widgets", {}).get("application/vnd.jupyter.widget-state+json", {}).get("state", {})
    return sum(model.get("model_name") in CONTROL_MODELS for model in state.values())


_JS_COUNT_CONTROLS = """(controls) => {
  const panel = document.querySelector('.jp-NotebookPanel:not(.lm-mod-hidden)');
  return panel.querySelectorAll('.jp-OutputArea :is(' + Object.values(controls).join(',') + ')').length;
}"""

_JS_TAG_CONTROLS = """([controls, undriven]) => {
  const panel = document.querySelector('.jp-NotebookPanel:not(.lm-mod-hidden)');
  const cells = [...panel.querySelectorAll('.jp-Cell')];
  const found = [];
  for (const [kind, selector] of Object.entries(controls)) {
    for (const el of panel.querySelectorAll('.jp-OutputArea ' + selector)) {
      if (el.closest('[data-lnt-control]')) continue;  // a button inside tagged toggle buttons
      const cell = el.closest('.jp-Cell');
      el.setAttribute('data-lnt-control', String(found.length));
      const clean = t => (t || '').replace(/\u200b/g, '').trim();
      const label = [...el.querySelectorAll('.widget-label, label')].find(l => clean(l.textContent));
      found.push({id: found.length, kind, cell: cells.indexOf(cell),
                  label: clean(label ? label.textContent : el.textContent).slice(0, 40)});
    }
  }
  const skipped = [...panel.querySelectorAll('.jp-OutputArea :is(' + undriven + ')')].length;
  return {found, skipped};
}"""

# What a cell's output area shows (its HTML, images included, without the controls), as a digest
# made in the page: 53 bits of cyrb53 and the length. Only the digest crosses to Python, not the
# area's images at every poll. Returned with the kernel's status, for one round trip a poll.
_JS_SHOWN = """([cellIndex, controls]) => {
  const panel = document.querySelector('.jp-NotebookPanel:not(.lm-mod-hidden)');
  const indicator = panel.querySelector('.jp-Notebook-ExecutionIndicator');
  const status = indicator ? indicator.getAttribute('data-status') : null;
  const cell = panel.querySelectorAll('.jp-Cell')[cellIndex];
  const area = cell.querySelector('.jp-Cell-outputArea, .jp-OutputArea');
  if (!area) return [status, ''];
  const clone = area.cloneNode(true);
  clone.querySelectorAll(Object.values(controls).join(',')).forEach(e => e.remove());
  const html = clone.innerHTML;
  let h1 = 0xdeadbeef, h2 = 0x41c6ce57;
  for (let i = 0; i < html.length; i++) {
    const c = html.charCodeAt(i);
    h1 = Math.imul(h1 ^ c, 2654435761);
    h2 = Math.imul(h2 ^ c, 1597334677);
  }
  h1 = Math.imul(h1 ^ (h1 >>> 16), 2246822507) ^ Math.imul(h2 ^ (h2 >>> 13), 3266489909);
  h2 = Math.imul(h2 ^ (h2 >>> 16), 2246822507) ^ Math.imul(h1 ^ (h1 >>> 13), 3266489909);
  const digest = (4294967296 * (2097151 & h2) + (h1 >>> 0)).toString(16).padStart(14, '0');
  return [status, html.length + ':' + digest];
}"""

_JS_STATE = """() => {
  const panel = document.querySelector('.jp-NotebookPanel:not(.lm-mod-hidden)');
  if (!panel) return null;
  const prompts = [...panel.querySelectorAll('.jp-CodeCell .jp-InputPrompt')]
      .map(p => p.textContent.trim());
  const indicator = panel.querySelector('.jp-Notebook-ExecutionIndicator');
  // What the code cells output (not the markdown, which may quote an error message); textContent,
  // not innerText, which would lay out the whole notebook at every poll.
  const text = [...panel.querySelectorAll('.jp-CodeCell .jp-OutputArea')]
      .map(o => o.textContent).join('\\n');
  return {prompts, status: indicator ? indicator.getAttribute('data-status') : null, text};
}"""


@pytest.fixture(scope="module")
def browser(tmp_path_factory):
    if not os.path.exists(CHROMIUM):
        message = f"{CHROMIUM} is missing (apt-get install chromium; .ci/run does)"
        if os.environ.get("CI") == "true":
            pytest.fail(message)
        pytest.skip(message)
    from playwright.sync_api import sync_playwright

    with sync_playwright() as playwright:
        context = playwright.chromium.launch_persistent_context(
            str(tmp_path_factory.mktemp("chromium-profile")), executable_path=CHROMIUM,
            headless=True, args=CHROMIUM_FLAGS, viewport={"width": 1400, "height": 1000})
        context.set_default_timeout(30_000)
        try:
            yield context
        finally:
            context.close()


# The page's promise ends once the panel exists: waiting in the page for its context to be ready
# left Chromium holding a promise that it could garbage-collect ("Resulting promise was garbage
# collected", once in 26 openings); the test then waits for the cells and the idle kernel itself.
_JS_OPEN = """async (path) => {
  const app = window.jupyterapp;
  if (!app) throw new Error('window.jupyterapp is missing: the server needs --expose-app-in-browser');
  const panel = await app.commands.execute('docmanager:open', {path, factory: 'Notebook'});
  app.shell.activateById(panel.id);
  return panel.id;
}"""

# Close every open document without saving it (autosave is off; the outputs of a run make it dirty).
_JS_CLOSE_ALL = """() => {
  const app = window.jupyterapp;
  for (const widget of [...app.shell.widgets('main')]) {
    if (widget.context) widget.context.model.dirty = false;
    widget.dispose();
  }
}"""


@pytest.fixture(scope="module")
def lab_page(lab_server, browser):
    """One JupyterLab page, in a fresh workspace, for every notebook of the module."""
    page = browser.new_page()
    page.goto(f"{lab_server.url}/lab/workspaces/test-browser?reset&token={lab_server.token}")
    page.wait_for_function("() => window.jupyterapp && window.jupyterapp.started", timeout=OPEN_TIMEOUT_MS)
    page.evaluate("() => window.jupyterapp.restored")
    try:
        yield page
    finally:
        page.close()


@pytest.fixture
def notebook_unchanged(request):
    """The notebook and its pair are byte for byte what they were after the browser ran it.

    Only checked, never restored: on a developer's machine someone may be editing it.
    """
    notebook = request.node.callspec.params["notebook"]
    paths = [notebook, notebook.parent / "py" / f"{notebook.stem}.py"]
    before = {p: p.read_bytes() for p in paths if p.is_file()}
    yield
    changed = [p.name for p, data in before.items() if not p.is_file() or p.read_bytes() != data]
    assert not changed, f"JupyterLab wrote to {changed} while the browser test ran it"


def _wait(predicate, timeout_s: float, what: str, interval: float = 0.25):
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        value = predicate()
        if value:
            return value
        time.sleep(interval)
    raise AssertionError(f"timed out after {timeout_s} s waiting for {what}")


def _run_all(page) -> tuple[float, int]:
    """Run All Cells and wait until every code cell has run; fail fast on an error.

    Seen now and then on a loaded machine: the first Run All after the kernel turned idle runs
    nothing (every prompt stays blank, the kernel idle). It is asked again, up to 3 times.
    """
    started = time.monotonic()
    _menu(page, "Run", "Run All Cells")
    tries, idle_since = 1, None
    while time.monotonic() - started < RUN_ALL_TIMEOUT_S:
        state = page.evaluate(_JS_STATE)
        done = [bool(re.fullmatch(r"\[\d+\]:", p)) for p in state["prompts"]]
        if state["status"] == "idle":
            if done and all(done):
                return time.monotonic() - started, tries
            if (bad := ERROR_TEXT.search(state["text"])) is not None:
                raise AssertionError(f"Run All stopped at code cell {done.index(False)}: "
                                     f"{_around(state['text'], bad)}")
            idle_since = idle_since or time.monotonic()
            nothing_ran = all(p == "[ ]:" for p in state["prompts"])
            if nothing_ran and time.monotonic() - idle_since > 2 and tries < 3:
                tries, idle_since = tries + 1, None
                _menu(page, "Run", "Run All Cells")
            elif time.monotonic() - idle_since > 10:  # idle, yet cells never ran
                raise AssertionError(f"Run All ({tries}x) stopped at code cell "
                                     f"{done.index(False)} (prompts {state['prompts']})")
        else:
            idle_since = None
        time.sleep(0.25)
    raise AssertionError(f"Run All took over {RUN_ALL_TIMEOUT_S} s")


def _around(text: str, match: re.Match) -> str:
    return f"{match.group(0)!r} in ...{text[max(0, match.start() - 300):match.end() + 1500]}..."


def _no_dialog(page) -> None:
    """Fail with its text if Lab shows a dialog (a file-load error, a kernel problem)."""
    dialog = page.locator(".jp-Dialog")
    if dialog.count():
        raise AssertionError(f"JupyterLab shows a dialog: {dialog.first.inner_text()[:3000]}")


def _menu(page, menu: str, item: str) -> None:
    _no_dialog(page)
    page.locator(".lm-MenuBar-item", has_text=re.compile(rf"^{menu}$")).click()
    page.locator(".lm-Menu-item:visible", has_text=re.compile(rf"^{re.escape(item)}")).first.click()


def _settle(page, cell: int, timeout_s: float = CHANGE_TIMEOUT_S) -> str:
    """Wait for the kernel to be idle and the cell's display to stop changing (the same over
    SETTLE_S); return its digest."""
    last = None
    stable = 0
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        status, shown = page.evaluate(_JS_SHOWN, [cell, CONTROLS])
        stable = stable + 1 if (shown == last and status == "idle") else 0
        if stable >= 3:
            return shown
        last = shown
        time.sleep(SETTLE_S / 3)
    return last


def _drive(page, control: dict) -> str:
    """Change one control; returns a short description of what was done."""
    root = page.locator(f'[data-lnt-control="{control["id"]}"]')
    root.scroll_into_view_if_needed()
    kind = control["kind"]
    if kind == "slider":
        handle = root.locator(".noUi-handle, .ui-slider-handle").first
        readout = root.locator(".widget-readout").first
        before = readout.inner_text() if readout.count() else None
        for key in ("ArrowRight", "ArrowLeft", "ArrowLeft"):
            handle.focus()
            handle.press(key)
            if readout.count() == 0 or _wait_quiet(lambda: readout.inner_text() != before, 2):
                return f"{key} ({before} -> {readout.inner_text() if readout.count() else '?'})"
        raise AssertionError(f"slider {control['label']!r} did not move with the arrow keys")
    if kind in ("dropdown", "select"):
        select = root.locator("select").first
        current = select.input_value()
        values = select.locator("option").evaluate_all("os => os.map(o => o.value)")
        other = next(v for v in values if v != current)
        select.select_option(other)
        return f"select {other!r}"
    if kind == "toggle-buttons":
        button = root.locator("button:not(.mod-active)").first
        text = button.inner_text()
        button.click()
        return f"click {text!r}"
    if kind in ("toggle-button", "button"):
        root.click()
        return "click"
    if kind == "checkbox":
        root.locator("input[type=checkbox]").click()
        return "toggle"
    if kind == "radio":
        choice = root.locator("input[type=radio]:not(:checked)").first
        choice.click()
        return "choose another"
    raise AssertionError(kind)


def _log_count(page) -> int:
    """The count on Lab's log-console status item (kernel output that belongs to no cell)."""
    item = page.locator(".jp-LogConsoleStatusItem")
    text = item.first.inner_text().strip() if item.count() else ""
    return int(text) if text.isdigit() else 0


def _log_console_text(page) -> str:
    _menu(page, "View", "Show Log Console")
    panel = page.locator(".jp-LogConsolePanel").first
    panel.wait_for()
    _wait_quiet(lambda: len(panel.inner_text()) > 40, 5)
    return panel.inner_text()


def _wait_quiet(predicate, timeout_s: float) -> bool:
    try:
        return bool(_wait(predicate, timeout_s, "", interval=0.1))
    except AssertionError:
        return False


@pytest.mark.parametrize("notebook", NOTEBOOKS, ids=IDS)
def test_widgets_respond_in_jupyterlab(lab_server, lab_page, notebook_unchanged, notebook, tmp_path):
    page = lab_page
    page_errors: list[str] = []
    on_error = lambda error: page_errors.append(str(error))  # noqa: E731
    page.on("pageerror", on_error)
    try:
        page.evaluate(_JS_OPEN, lab_server.api_path(notebook))
        page.wait_for_selector(".jp-Dialog, .jp-NotebookPanel:not(.lm-mod-hidden) .jp-Cell",
                               timeout=OPEN_TIMEOUT_MS)
        _no_dialog(page)
        page.wait_for_selector(".jp-NotebookPanel:not(.lm-mod-hidden) "
                               '.jp-Notebook-ExecutionIndicator[data-status="idle"]',
                               timeout=OPEN_TIMEOUT_MS)
        time.sleep(0.5)  # a dialog raised while the kernel started
        _no_dialog(page)

        # Clear the stored outputs (so that a numbered prompt means "ran here"), then run all.
        _menu(page, "Edit", "Clear Outputs of All Cells")
        _wait(lambda: not any(re.fullmatch(r"\[\d+\]:", p)
                              for p in page.evaluate(_JS_STATE)["prompts"]), 10, "cleared outputs")
        ran_s, tries = _run_all(page)
        text = page.evaluate(_JS_STATE)["text"]
        bad = BAD_TEXT.search(text)
        assert bad is None, f"after Run All the page shows: {_around(text, bad)}"

        # Every control the stored notebook showed must be on the page before any is driven: a
        # widget that never rendered must fail here, not leave nothing to drive.
        expected = stored_controls(notebook)
        _wait_quiet(lambda: page.evaluate(_JS_COUNT_CONTROLS, CONTROLS) >= expected, CHANGE_TIMEOUT_S)
        tagged = page.evaluate(_JS_TAG_CONTROLS, [CONTROLS, UNDRIVEN])
        controls = tagged["found"]
        assert len(controls) == expected, (
            f"{len(controls)} controls on the page after Run All; the stored notebook showed {expected}")
        failures, done = [], []
        seen_in_log = _log_count(page)
        if seen_in_log:
            failures.append(f"Run All put {seen_in_log} message(s) in the log console")
        last = None  # (cell, what it showed once settled) after the previous control
        for control in controls:
            if last is not None and last[0] == control["cell"]:
                before = last[1]
            else:
                before = _settle(page, control["cell"])
            action = _drive(page, control)
            changed = _wait_quiet(
                lambda c=control, b=before: page.evaluate(_JS_SHOWN, [c["cell"], CONTROLS])[1] != b,
                CHANGE_TIMEOUT_S)
            after = _settle(page, control["cell"])
            last = (control["cell"], after)
            record = (f"cell {control['cell']} {control['kind']} {control['label']!r}: {action}; "
                      f"shown {before} -> {after}")
            logged = _log_count(page)
            if logged > seen_in_log:
                record += f"; {logged - seen_in_log} new message(s) in the log console"
                seen_in_log = logged
            done.append(record)
            if not changed or after == before:
                failures.append(record + ": what the widget shows did not change")
            text = page.evaluate(_JS_STATE)["text"]
            if (bad := BAD_TEXT.search(text)) is not None:
                failures.append(record + f": the page shows {_around(text, bad)}")
        # Output that belongs to no cell (a callback's traceback or print outside an Output
        # widget) lands in Lab's log console, where a learner never looks: none is allowed.
        if _log_count(page):
            failures.append(f"the log console holds {_log_count(page)} message(s) "
                            f"(a widget callback raised or printed outside an Output):\n"
                            f"{_log_console_text(page)[-3000:]}")
        print(f"{notebook.name}: ran in {ran_s:.1f} s (Run All asked {tries}x); "
              f"drove {len(controls)} controls"
              f" ({tagged['skipped']} text inputs not driven); {len(page_errors)} page errors",
              *done, *page_errors, sep="\n  ")
        assert not failures, "\n".join(failures)
        widget_errors = [e for e in page_errors if "widget" in e.lower()]
        assert not widget_errors, f"JavaScript errors from widgets: {widget_errors}"
    except BaseException:
        shot = Path(os.environ.get("BROWSER_TEST_SCREENSHOTS", tmp_path)) / f"lab-{_slug(notebook)}.png"
        try:
            page.screenshot(path=str(shot))
            print(f"screenshot of the failure: {shot}")
        except Exception as error:  # the page itself may be gone
            print(f"no screenshot: {error}")
        raise
    finally:
        page.remove_listener("pageerror", on_error)
        for session in _sessions(lab_server):
            lab_server.delete(f"/api/sessions/{session['id']}")
        _close_all(page)


def _close_all(page) -> None:
    """Close every document (and any dialog left open) so that the next notebook starts alone."""
    try:
        for button in page.locator(".jp-Dialog .jp-mod-reject").all():
            button.click()
        page.evaluate(_JS_CLOSE_ALL)
        page.wait_for_selector(".jp-NotebookPanel", state="detached", timeout=10_000)
    except Exception:  # a page that cannot close its documents: start the next notebook on a fresh one
        page.reload()
        page.wait_for_function("() => window.jupyterapp && window.jupyterapp.started", timeout=OPEN_TIMEOUT_MS)


def _sessions(lab_server) -> list[dict]:
    status, body = lab_server.get("/api/sessions")
    return json.loads(body) if status == 200 else []
