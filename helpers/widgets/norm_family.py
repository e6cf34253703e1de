"""Deep dive 15's dashboards: the normalization family on one picture, and LayerNorm's geometry in 3-D."""

from __future__ import annotations

import functools

import ipywidgets as widgets
import pandas as pd
from matplotlib.figure import Figure

from helpers import plots
from helpers.lessons.geometry import ln_geometry_state, ln_geometry_table
from helpers.lessons.norm_family import NORMS, divisors, norm_family_state, parameter_table
from helpers.widgets.core import Dashboard, log_slider, slider

IMAGE_SHAPE = (3, 6, 2, 2)  # (N, C, H, W): 3 samples, 6 channels (G in 1, 2, 3, 6), 2 x 2 pixels


def _int_slider(description: str, high: int) -> widgets.IntSlider:
    """An IntSlider over 0..high that redraws on release and shows its whole description."""
    return widgets.IntSlider(value=0, min=0, max=high, step=1, description=description,
                             continuous_update=False, style={"description_width": "initial"},
                             layout=widgets.Layout(width="260px"))


def _wrap_controls(demo: Dashboard) -> Dashboard:
    """Let the row of controls wrap onto a second line instead of running off the page."""
    for child in demo.children:
        if isinstance(child, widgets.HBox):
            child.layout.flex_flow = "row wrap"
    return demo


@functools.lru_cache(maxsize=16)
def _parameters(channels: int, groups: int, spatial: tuple[int, int]) -> pd.DataFrame:
    return parameter_table(channels, groups, spatial)


def norm_family_table(state: dict) -> pd.DataFrame:
    """:func:`helpers.lessons.norm_family.parameter_table` for the state's shape and groups, the rows of the
    norm shown marked ``◀`` in a first column ``shown``."""
    _, channels, *spatial = state["image"]["shape"]
    table = _parameters(channels, state["groups"], tuple(spatial))
    return table.assign(shown=["◀" if norm == state["norm"] else "" for norm in table["norm"]])[
        ["shown", *table.columns]]


def norm_family_demo(image_shape: tuple[int, int, int, int] = IMAGE_SHAPE, norm: str = "LayerNorm",
                     groups: int = 2) -> Dashboard:
    """Choose a norm (and GroupNorm's groups) and a cell; see which cells share its statistics.

    The figure (:func:`helpers.plots.norm_family_figure`) shows an image batch ``image_shape``
    and the same numbers as token sequences ``(N, H * W, C)``; the controls pick the norm, the
    number of groups (the divisors of ``C``; choosing one shows GroupNorm), and the marked cell
    (sample or sentence, channel or feature, pixel position or token). The table lists each
    layer's parameters and buffers, read off the modules.
    """
    n, c, h, w = image_shape
    style = {"description_width": "initial", "button_width": "auto"}
    controls = {
        "norm": widgets.ToggleButtons(options=list(NORMS), value=norm, description="norm", style=style),
        "groups": widgets.Dropdown(options=divisors(c), value=groups, description="GroupNorm groups G",
                                   style={"description_width": "initial"},
                                   layout=widgets.Layout(width="220px")),
        "sample": _int_slider("sample / sentence", n - 1),
        "channel": _int_slider("channel / feature", c - 1),
        "position": _int_slider("pixel / token", h * w - 1),
    }

    def compute(norm, groups, sample, channel, position):
        return norm_family_state(norm, groups, sample, channel, position, image_shape=image_shape)

    def choose_groupnorm(change):
        # a group count means GroupNorm: so the control changes the picture whatever norm was shown.
        # Observed before the dashboard's own redraw, so the first redraw already shows GroupNorm.
        controls["norm"].value = "GroupNorm"

    controls["groups"].observe(choose_groupnorm, names="value")
    demo = Dashboard(controls, compute, plots.norm_family_figure, update=plots.update_norm_family_figure,
                     table=norm_family_table,
                     title="<b>Which cells share one mean and variance?</b> Pick a norm and a cell; its "
                           "group is outlined. Below: each layer's parameters and buffers.")
    return _wrap_controls(demo)


def norm_family_static(groups: int = 2, sample: int = 0, channel: int = 1, position: int = 0, *,
                       image_shape: tuple[int, int, int, int] = IMAGE_SHAPE) -> Figure:
    """The static copy of :func:`norm_family_demo`: every norm side by side on the image batch,
    and BatchNorm, LayerNorm and RMSNorm on the tokens (:func:`helpers.plots.norm_family_panels_figure`)."""
    states = [norm_family_state(norm, groups, sample, channel, position, image_shape=image_shape)
              for norm in NORMS]
    return plots.norm_family_panels_figure(states)


def ln_geometry_demo() -> Dashboard:
    """LayerNorm and RMSNorm of a few 3-D points in 3-D, and one point P to move.

    Controls: the camera (azimuth, elevation); P's first coordinate; a positive scale and a shift
    along (1, 1, 1) applied to P (LN's image of P stays where its ring is; RMSNorm's moves with
    the shift); γ on the first coordinate (the circle becomes an ellipse); eps (the images move
    inside the circle where the variance is small against eps). The table gives P and its images
    as numbers (:func:`helpers.lessons.geometry.ln_geometry_table`).
    """
    controls = {
        "azimuth": slider("camera azimuth", -25.0, -180.0, 180.0, 5.0),
        "elevation": slider("camera elevation", 20.0, -90.0, 90.0, 5.0),
        "x": slider("P's x₁", 1.0, -2.0, 2.0, 0.25),
        "scale": slider("scale P by s =", 1.0, 0.25, 2.0, 0.25),
        "offset": slider("add c·(1, 1, 1), c =", 0.0, -1.5, 1.5, 0.25),
        "gamma": slider("γ₁ (stretch x₁)", 1.0, 0.0, 2.0, 0.25),
        "eps": log_slider("eps", 1e-5, -5, 1, 1),
    }
    for control in controls.values():
        control.layout.width = "300px"
    demo = Dashboard(controls, ln_geometry_state, plots.ln_geometry_figure, update=plots.update_ln_geometry_figure,
                     table=ln_geometry_table,
                     title="<b>LayerNorm = project onto the plane x₁+x₂+x₃ = 0, then rescale onto the "
                           "circle of radius √3.</b> RMSNorm only rescales: onto the sphere. Move P: "
                           "scaling it or shifting it along (1, 1, 1) leaves LN(P) in its ring.")
    return _wrap_controls(demo)


def ln_geometry_static(x: float = 1.0, scale: float = 2.0, offset: float = 1.5, gamma: float = 1.0,
                       eps: float = 1e-5) -> Figure:
    """The static copy of :func:`ln_geometry_demo`: P moved (by default scaled by 2 and shifted by
    1.5·(1, 1, 1)), seen from three cameras (:func:`helpers.plots.ln_geometry_views_figure`)."""
    return plots.ln_geometry_views_figure(ln_geometry_state(x=x, scale=scale, offset=offset, gamma=gamma,
                                                            eps=eps))
