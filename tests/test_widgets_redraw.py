"""Every dashboard keeps one figure and updates it: the same Figure after every change, a new PNG
for every control, and, after any sequence of changes, the same artists' data as a figure built
afresh for the same state. (How fast a redraw is lives in benchmarks/widgets.py, not here.)"""

from __future__ import annotations

import io

import matplotlib.pyplot as plt
import numpy as np
import pandas as pd
import pytest
from matplotlib.patches import Rectangle, StepPatch
from PIL import Image

from helpers import widgets
from helpers.widgets.activation_input import activation_input_demo
from helpers.widgets.core import Dashboard, png_bytes
from helpers.widgets.deep_stack import deep_stack_demo
from helpers.widgets.residual_stream import residual_stream_demo
from helpers.widgets.token_or_sentence import UNITS, token_or_sentence_demo


@pytest.fixture(autouse=True)
def _close_figures():
    yield
    plt.close("all")


@pytest.fixture(scope="module")
def stored_runs() -> pd.DataFrame:
    """The runs deep dive 13's dashboard shows (every stored run of its experiments)."""
    from helpers.experiments.training_speed_table import evidence_table

    return evidence_table()


def _placement_frame():
    from helpers.evidence import runner

    return runner.load("placement_tuned").frame


# name -> (build, [(control, value), ...] in order); each value differs from the one before it.
DASHBOARDS = {
    "other_samples": (lambda runs: widgets.other_samples_demo(seed=0),
                      [("shift", 0.5), ("scale", 1.25), ("shift", -3.0), ("scale", 3.0)]),
    "placement": (lambda runs: widgets.placement_demo(),
                  [("activation", "relu"), ("placement", "no norm"), ("depth", 16), ("depth", 4),
                   ("activation", "gelu"), ("placement", "act -> LN")]),
    "speed": (lambda runs: widgets.speed_demo(runs),
              [("setting", "3-layer RNN, T 10, hidden 64 (why)"), ("rate", 0.03), ("noise", 0.5),
               ("measure", "ICS (Santurkar)"), ("arm", "LayerNorm"), ("setting", "tiny RNN, T 50, hidden 128"),
               ("rate", "tuned"), ("measure", "held-out loss"), ("arm", "all arms"),
               ("setting", "4-block Transformer, copy task"), ("rate", 0.001)]),
    "stored_placement": (lambda runs: widgets.stored_runs_demo(_placement_frame()),
                         [("activation", "relu"), ("arrangement", "act -> LN"), ("rate", 0.01),
                          ("arrangement", "all"), ("rate", "tuned"), ("activation", "gelu")]),
    "stability": (lambda runs: widgets.stability_demo(),
                  [("offset", 1.0), ("scale", 1.0), ("dtype", "float16"), ("eps", 1e-2),
                   ("dtype", "bfloat16"), ("offset", 1e6)]),
    "norm_family": (lambda runs: widgets.norm_family_demo(),
                    [("norm", "GroupNorm"), ("groups", 3), ("sample", 2), ("channel", 4), ("position", 3),
                     ("norm", "BatchNorm"), ("norm", "RMSNorm")]),
    # the core path's dashboards, and deep dive 16's token_or_sentence
    "deep_stack": (lambda runs: deep_stack_demo(), [("gain", 0.5), ("gamma", 2.0), ("beta", 0.5), ("gain", 2.0)]),
    "activation_input": (lambda runs: activation_input_demo(),
                         [("activation", "ReLU"), ("shift", 2.0), ("scale", 3.0), ("activation", "GELU"),
                          ("shift", -3.0)]),
    "token_or_sentence": (lambda runs: token_or_sentence_demo(),
                          [("unit", list(UNITS)[1]), ("scale", 5.0), ("unit", list(UNITS)[0]), ("scale", 8.0)]),
    "residual_stream": (lambda runs: residual_stream_demo(),
                        [("norm", "RMSNorm"), ("branch_scale", 2.0), ("norm", "no norm"), ("branch_scale", 0.5)]),
    "ln_geometry": (lambda runs: widgets.ln_geometry_demo(),
                    [("azimuth", 40.0), ("elevation", -30.0), ("x", -1.0), ("scale", 2.0), ("offset", 1.5),
                     ("gamma", 1.5), ("eps", 1.0)]),
}


def _differing_pixels(png_a: bytes, png_b: bytes) -> float:
    """The fraction of pixels that differ between two PNGs of the same size."""
    a, b = (np.asarray(Image.open(io.BytesIO(p)).convert("RGB"), dtype=int) for p in (png_a, png_b))
    assert a.shape == b.shape
    return float((np.abs(a - b).sum(axis=-1) > 0).mean())


def _shows_the_whole_figure(demo) -> None:
    """The dashboard's PNG is its figure drawn whole: the same bytes, or, drawn in parts
    (a PartialRedraw), the same picture but for pixels where a line crosses a spine."""
    whole = png_bytes(demo.figure)
    if demo._partial is None:
        assert demo.image.value == whole
    else:
        assert _differing_pixels(demo.image.value, whole) < 1e-3


def _build(name, stored_runs):
    build, moves = DASHBOARDS[name]
    return build(stored_runs if name == "speed" else None), moves


def _line_data(line) -> tuple:
    """A line's data: (x, y), or (x, y, z) for a 3-D line (whose 2-D data is its projection, set
    only when it is drawn)."""
    return line.get_data_3d() if hasattr(line, "get_data_3d") else line.get_data()


def _fingerprint(fig) -> list:
    """What a figure shows, as data: per axes its titles, limits, scales, lines, patches, texts,
    images and legend entries; and the figure's suptitle."""
    def arr(values):
        return np.round(np.asarray(values, dtype=float), 9).tolist()

    def patch(p):
        if isinstance(p, StepPatch):
            values, edges, _ = p.get_data()
            return ("steps", p.get_gid(), arr(values), arr(edges))
        if isinstance(p, Rectangle):
            return ("rect", p.get_gid(), arr([p.get_x(), p.get_y(), p.get_width(), p.get_height()]),
                    tuple(np.round(p.get_facecolor(), 6)))
        return (type(p).__name__, p.get_gid())

    shown = []
    for ax in fig.axes:
        legend = ax.get_legend()
        shown.append({
            "title": ax.get_title(), "xlim": arr(ax.get_xlim()), "ylim": arr(ax.get_ylim()),
            "scales": (ax.get_xscale(), ax.get_yscale()), "labels": (ax.get_xlabel(), ax.get_ylabel()),
            "lines": [(line.get_gid(), line.get_label(), *map(arr, _line_data(line))) for line in ax.get_lines()],
            "patches": [patch(p) for p in ax.patches],
            "collections": len(ax.collections),
            "texts": [(t.get_text(), arr(t.get_position()), str(t.get_color()), t.get_gid()) for t in ax.texts],
            "images": [(arr(im.get_array()), arr(im.get_clim())) for im in ax.get_images()],
            "legend": None if legend is None else [t.get_text() for t in legend.get_texts()],
        })
    suptitle = fig._suptitle.get_text() if fig._suptitle is not None else None
    return [shown, suptitle]


@pytest.mark.parametrize("name", list(DASHBOARDS))
def test_the_dashboard_keeps_one_figure_and_every_control_changes_the_png(name, stored_runs):
    demo, moves = _build(name, stored_runs)
    fig = demo.figure
    assert fig.number not in plt.get_fignums()  # never shown by pyplot
    moved = set()
    for control, value in moves:
        before = demo.image.value
        demo.controls[control].value = value
        assert demo.figure is fig, f"{name}: {control} made a new figure"
        assert demo.image.value != before, f"{name}: {control} = {value!r} left the PNG as it was"
        assert demo.image.value[:8] == b"\x89PNG\r\n\x1a\n"
        _shows_the_whole_figure(demo)
        moved.add(control)
    assert moved == set(demo.controls), "every control is moved"
    assert len(plt.get_fignums()) == 0  # no figure left open behind the dashboard


@pytest.mark.parametrize("name", list(DASHBOARDS))
def test_the_updated_figure_shows_what_a_new_one_would(name, stored_runs):
    demo, moves = _build(name, stored_runs)
    for control, value in moves:
        demo.controls[control].value = value
        fresh = demo._draw(demo.state)
        assert _fingerprint(demo.figure) == _fingerprint(fresh), f"{name}, after {control} = {value!r}"
        plt.close(fresh)


def test_the_core_path_dashboards_redraw_in_parts_and_a_missed_artist_would_show():
    demo = deep_stack_demo()
    assert demo._partial is not None
    demo.controls["gain"].value = 0.5  # new lines, titles and y limits, over the kept picture
    _shows_the_whole_figure(demo)
    # an artist changed but not named as changing stays as it was in the kept picture: the check sees it
    partial = demo._partial
    kept = partial._backgrounds[partial._layout_key()]
    demo.figure.axes[0].set_xlabel("another label, longer than the first one")
    partial._backgrounds[partial._layout_key()] = kept  # pretend the layout did not move
    stale = partial.png()
    assert _differing_pixels(stale, png_bytes(demo.figure)) > 1e-3


@pytest.mark.parametrize("name", ["placement", "stored_placement", "speed"])
def test_deep_dive_dashboards_redraw_in_parts_pixel_for_pixel(name, stored_runs):
    """Deep dives 12's and 13's dashboards name their spines as changing too (a full draw puts them
    over the lines and grid lines), so that their parts make exactly the whole figure."""
    demo, moves = _build(name, stored_runs)
    assert demo._partial is not None
    for control, value in moves:
        demo.controls[control].value = value
        assert _differing_pixels(demo.image.value, png_bytes(demo.figure)) == 0, (control, value)


def test_a_layout_seen_before_is_restored_not_drawn_and_only_the_last_few_are_kept(monkeypatch):
    """A dashboard whose ``width`` control moves the x limits (its layout) and ``height`` only a line."""
    import ipywidgets

    def draw(state):
        fig, ax = plt.subplots(figsize=(4, 3), dpi=60)
        ax.plot([], [])
        update(fig, state)
        return fig

    def update(fig, state):
        ax = fig.axes[0]
        ax.get_lines()[0].set_data([0, state["width"]], [0, state["height"]])
        ax.set_xlim(0, state["width"])
        ax.set_ylim(0, 4)

    controls = {"width": ipywidgets.Dropdown(options=[1, 2, 3, 4], value=1),
                "height": ipywidgets.Dropdown(options=[1, 2, 3], value=1)}
    demo = Dashboard(controls, lambda width, height: {"width": width, "height": height}, draw,
                             update=update, changing=lambda fig: fig.axes[0].get_lines())
    partial = demo._partial
    draws = []
    real_draw = partial.canvas.draw
    monkeypatch.setattr(partial.canvas, "draw", lambda: draws.append(1) or real_draw())
    # (control, value, whether the whole figure is drawn)
    for control, value, drawn in [("width", 2, True), ("height", 3, False), ("width", 1, False),
                                  ("width", 3, True), ("height", 2, False), ("width", 2, False)]:
        before = len(draws)
        demo.controls[control].value = value
        assert (len(draws) > before) == drawn, (control, value)
        _shows_the_whole_figure(demo)
    monkeypatch.setattr(partial, "KEPT_LAYOUTS", 2)
    for width in (4, 1, 4, 3, 1):  # the two kept are 2 and 4, then 4 and 1, 1 and 4, 4 and 3, 3 and 1
        demo.controls["width"].value = width
        assert len(partial._backgrounds) <= 2
        _shows_the_whole_figure(demo)
    assert len(draws) == 2 + 4  # all drawn but the second 4


def test_a_title_at_a_given_height_is_drawn_where_matplotlib_would_place_it(stored_runs):
    """Deep dives 12's and 13's figures give their titles' height (plots.core.TITLE_Y), which spares
    a dashboard matplotlib's search for a place; the pictures are the same as with that search."""
    from helpers.experiments.placement_tuned import stored_runs_state
    from helpers.experiments.training_speed_table import evidence_state
    from helpers.lessons.placement import placement_state
    from helpers.plots import evidence_figure, layer_histograms_figure, stored_runs_figure

    figures = [layer_histograms_figure(placement_state("relu", "no norm", 16)),
               stored_runs_figure(stored_runs_state(_placement_frame(), "tanh", "all", 0.01)),  # a title with notes
               evidence_figure(evidence_state(stored_runs, "3-layer RNN, T 10, hidden 64 (why)", 0.03, "all arms",
                                              0.5, "ICS (Santurkar)"))]  # a title of two lines, linear axis
    for fig in figures:
        titled = [ax for ax in fig.axes if ax.get_title()]
        assert titled and all(ax._autotitlepos is False for ax in titled)  # the height given: no search
        given = png_bytes(fig)
        for ax in fig.axes:
            ax._autotitlepos = True  # matplotlib's own placement
        assert png_bytes(fig) == given


def test_snapshot_draws_a_new_open_figure_at_chosen_values_and_leaves_the_controls():
    demo = widgets.other_samples_demo(seed=0)
    shown = demo.figure
    fig = demo.snapshot(shift=3.5, scale=2.5)
    assert fig is not shown and fig.number in plt.get_fignums()
    assert demo.controls["shift"].value == 0.0 and demo.controls["scale"].value == 1.0
    at = widgets.other_samples_state(demo.state["inputs"], 3.5, 2.5)  # the inputs as the controls stand
    assert _fingerprint(fig) == _fingerprint(demo._draw(at)) != _fingerprint(shown)


def test_every_control_of_the_speed_dashboard_changes_what_it_selects(stored_runs):
    from helpers.experiments.training_speed_table import evidence_state

    base = ("3-layer RNN, T 10, hidden 64 (why)", 0.01, "all arms", 0.5, "held-out loss")
    shown = evidence_state(stored_runs, *base)
    assert set(shown["curves"]["arm"]) == {"no norm", "LayerNorm", "noisy LayerNorm 0.5"}
    assert (shown["curves"]["lr"] == 0.01).all() and shown["curves"]["seed"].nunique() == 10
    for position, value in enumerate(("tiny RNN, T 10, hidden 16", 0.03, "LayerNorm", 0.1, "ICS (Santurkar)")):
        changed = list(base)
        changed[position] = value
        other = evidence_state(stored_runs, *changed)
        assert not (other["curves"].equals(shown["curves"]) and other["notes"] == shown["notes"]
                    and other["column"] == shown["column"]), position
    tuned = evidence_state(stored_runs, "tiny RNN, T 10, hidden 16", "tuned", "all arms", 0.0, "held-out loss")
    assert tuned["notes"] == [] and tuned["curves"]["seed"].nunique() == 10
    assert tuned["table"]["seeds"].eq(10).all()


def test_the_speed_dashboard_shows_what_evidence_state_gives_over_the_whole_table(stored_runs):
    from helpers.experiments.training_speed_table import evidence_state

    demo = widgets.speed_demo(stored_runs)
    for control, value in DASHBOARDS["speed"][1]:
        demo.controls[control].value = value
        whole = evidence_state(stored_runs, **{name: c.value for name, c in demo.controls.items()})
        pd.testing.assert_frame_equal(demo.state["curves"], whole["curves"])
        pd.testing.assert_frame_equal(demo.state["table"], whole["table"])
        assert demo.state["notes"] == whole["notes"] and demo.state["column"] == whole["column"]


def test_every_control_of_the_stored_placement_dashboard_changes_what_it_selects():
    from helpers.experiments.placement_tuned import stored_runs_state

    frame = _placement_frame()
    base = stored_runs_state(frame, "tanh", "all", "tuned")
    assert set(base["curves"]["arrangement"]) == {"no norm", "LN -> act", "act -> LN"}
    assert base["table"]["seeds"].eq(10).all() and base["notes"] == []
    for changed in (("relu", "all", "tuned"), ("tanh", "LN -> act", "tuned"), ("tanh", "all", 0.01)):
        other = stored_runs_state(frame, *changed)
        assert not other["curves"].equals(base["curves"]), changed
    pilot = stored_runs_state(frame, "tanh", "all", 0.01)
    assert pilot["notes"] == ["pilot seeds"] and pilot["table"]["seeds"].eq(3).all()
