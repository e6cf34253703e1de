"""Deep dive 15's 3-D figure: LayerNorm projects onto the plane x + y + z = 0 and rescales onto a
circle of radius sqrt(3); RMSNorm only rescales, onto a sphere."""

from __future__ import annotations

import matplotlib.pyplot as plt
import numpy as np
from matplotlib.figure import Figure
from mpl_toolkits.mplot3d.art3d import Line3DCollection, Poly3DCollection

from helpers.lessons.geometry import plane_circle
from helpers.plots.core import DPI, HIGHLIGHT, find_line

LIMIT = 4.0  # every axis shows [-LIMIT, LIMIT]
LN_COLOUR, RMS_COLOUR = "C2", "C1"

#: Viewpoints of the static figure: title -> (elevation, azimuth).
GEOMETRY_VIEWS = {
    "oblique": (20.0, -25.0),
    "down the (1, 1, 1) axis: the plane face-on": (np.degrees(np.arctan(1 / np.sqrt(2))), 45.0),
    "along (1, -1, 0): the plane edge-on": (0.0, -45.0),
}


def _connectors(start: np.ndarray, end: np.ndarray) -> np.ndarray:
    return np.stack([start, end], axis=1)  # (k, 2, 3): one segment per point


def _draw_scene(ax, state: dict) -> None:
    """The fixed parts (plane, (1,1,1) axis, circle, sphere) and the artists the update moves."""
    hexagon = LIMIT * plane_circle(7)[:, :-1]  # 6 corners of a hexagon in the plane
    ax.add_collection3d(Poly3DCollection([hexagon.T], facecolor=(0.3, 0.5, 0.8, 0.12), edgecolor=(0.3, 0.5, 0.8, 0.5),
                                         linewidths=0.5, gid="plane x+y+z=0"),
                      autolim=False)
    axis = np.outer(np.ones(3) / np.sqrt(3), [-LIMIT, LIMIT])
    ax.plot(*axis, color="0.4", ls="--", lw=0.8, gid="(1, 1, 1)", label="(1, 1, 1)")
    circle = np.sqrt(3) * plane_circle()
    ax.plot(*circle, color=LN_COLOUR, lw=1.0, alpha=0.5, gid="circle")
    ax.plot(*state["ellipse"], color=LN_COLOUR, lw=2.0, gid="γ ⊙ circle", label="circle √3 (× γ)")
    u, v = np.meshgrid(np.linspace(0, 2 * np.pi, 13), np.linspace(0, np.pi, 7))
    sphere = np.sqrt(3) * np.stack([np.cos(u) * np.sin(v), np.sin(u) * np.sin(v), np.cos(v)])
    ax.plot_wireframe(*sphere, color=RMS_COLOUR, lw=0.4, alpha=0.35, gid="sphere")
    for gid, colour, style in (("to plane", "0.45", ":"), ("to circle", LN_COLOUR, "-"),
                               ("to sphere", RMS_COLOUR, "-")):
        ax.add_collection3d(Line3DCollection([], colors=colour, linestyles=style, linewidths=0.9, gid=gid),
                          autolim=False)
    marks = (("inputs", "o", "0.35", 5, "x"), ("projections", "o", "none", 5, "x − mean(x)"),
             ("LN images", "o", LN_COLOUR, 5, "LN(x)"), ("RMS images", "s", RMS_COLOUR, 4, "RMSNorm(x)"))
    for gid, marker, face, size, label in marks:
        edge = "0.35" if face == "none" else face
        ax.plot([], [], [], marker, ls="none", mfc=face, mec=edge, ms=size, gid=gid, label=label)
    for gid, marker, colour in (("LN(P) before", "o", LN_COLOUR), ("RMS(P) before", "s", RMS_COLOUR)):
        ax.plot([], [], [], marker, ls="none", mfc="none", mec=colour, ms=14, mew=1.5, gid=gid)
    ax.plot([], [], [], "o", ls="none", color=HIGHLIGHT, ms=9, gid="P", label="P, moved")
    for gid, marker, colour in (("LN(P)", "o", LN_COLOUR), ("RMS(P)", "s", RMS_COLOUR)):
        ax.plot([], [], [], marker, ls="none", mfc=colour, mec=HIGHLIGHT, ms=9, mew=2, gid=gid)
    for set_lim in (ax.set_xlim, ax.set_ylim, ax.set_zlim):
        set_lim(-LIMIT, LIMIT)
    for set_ticks in (ax.set_xticks, ax.set_yticks, ax.set_zticks):
        set_ticks([-LIMIT, 0, LIMIT])
    ax.grid(False)  # fewer lines and labels to draw: a redraw stays well under 100 ms
    for axis in (ax.xaxis, ax.yaxis, ax.zaxis):
        axis.set_pane_color((1.0, 1.0, 1.0, 0.0))
    ax.set_box_aspect((1, 1, 1))
    ax.set_xlabel("x₁")
    ax.set_ylabel("x₂")
    ax.set_zlabel("x₃")
    ax.tick_params(labelsize=7)


def _update_scene(ax, state: dict) -> None:
    """Move the points, images, connectors, the ellipse and P's rings to ``state``."""
    others = slice(1, None)
    parts = {"inputs": state["points"], "projections": state["projection"], "LN images": state["affine"],
             "RMS images": state["rms"]}
    for gid, values in parts.items():
        find_line(ax, gid).set_data_3d(*values[others].T)
    find_line(ax, "P").set_data_3d(*state["points"][:1].T)
    find_line(ax, "LN(P)").set_data_3d(*state["affine"][:1].T)
    find_line(ax, "RMS(P)").set_data_3d(*state["rms"][:1].T)
    find_line(ax, "LN(P) before").set_data_3d(*state["unmoved"]["ln"][:, None])
    find_line(ax, "RMS(P) before").set_data_3d(*state["unmoved"]["rms"][:, None])
    find_line(ax, "γ ⊙ circle").set_data_3d(*state["ellipse"])
    segments = {"to plane": (state["points"], state["projection"]),
                "to circle": (state["projection"], state["affine"]),
                "to sphere": (state["points"], state["rms"])}
    for collection in ax.collections:
        if collection.get_gid() in segments:
            collection.set_segments(_connectors(*segments[collection.get_gid()]))
    ax.view_init(elev=state["elevation"], azim=state["azimuth"])


def _short_title(state: dict) -> str:
    base = ", ".join(f"{v:g}" for v in state["base"])
    return (f"P = {state['scale']:g}·({base}) + {state['offset']:g}·(1, 1, 1); "
            f"|LN(P)| = {state['ln_radius'][0]:.4f}, |RMSNorm(P)| = {state['rms_radius'][0]:.4f}")


def ln_geometry_figure(state: dict, *, figsize: tuple[float, float] = (7.0, 5.4), dpi: int = DPI) -> Figure:
    """LayerNorm and RMSNorm of a few 3-D points, as geometry, on 3-D axes.

    Args:
        state: what :func:`helpers.lessons.geometry.ln_geometry_state` returns.

    Returns:
        A Figure with one 3-D axes and a legend. Lines (markers only) tagged by ``gid``:
        ``"inputs"``, ``"projections"``, ``"LN images"`` (after ``γ``), ``"RMS images"`` for
        every point but P, and ``"P"``, ``"LN(P)"``, ``"RMS(P)"`` for P, with rings
        ``"LN(P) before"`` and ``"RMS(P) before"`` where P's images were before the move; the
        circle of radius √3 in the plane (``"circle"``), its image under ``γ``
        (``"γ ⊙ circle"``), the sphere of radius √3 (a wireframe), the plane ``x + y + z = 0``
        (a hexagon) and the direction (1, 1, 1); segments from each point to its projection, from
        the projection to its LN image and from each point to its RMSNorm image
        (``Line3DCollection`` ``"to plane"``, ``"to circle"``, ``"to sphere"``). The camera is at
        ``state["elevation"], state["azimuth"]``. The numbers are in
        :func:`helpers.lessons.geometry.ln_geometry_table`, shown under the dashboard's figure (text is
        what costs most in a redraw).
    """
    fig = plt.figure(figsize=figsize, dpi=dpi)
    ax = fig.add_axes((0.0, 0.0, 0.74, 1.0), projection="3d")
    _draw_scene(ax, state)
    _update_scene(ax, state)
    fig.legend(*ax.get_legend_handles_labels(), loc="upper left", bbox_to_anchor=(0.72, 0.98), fontsize=8,
               frameon=False)
    return fig


def update_ln_geometry_figure(fig: Figure, state: dict) -> None:
    """Show ``state`` on a figure from :func:`ln_geometry_figure`: points, images, connectors,
    ellipse and camera."""
    _update_scene(fig.axes[0], state)


def ln_geometry_views_figure(state: dict, views: dict | None = None, *,
                             figsize: tuple[float, float] | None = None, dpi: int = DPI) -> Figure:
    """The scene of :func:`ln_geometry_figure` from several cameras, side by side.

    Args:
        state: what :func:`helpers.lessons.geometry.ln_geometry_state` returns (its camera is ignored).
        views: ``title -> (elevation, azimuth)``; default :data:`GEOMETRY_VIEWS`: oblique, down
            the (1, 1, 1) axis (the plane face-on: the circle looks round) and along (1, -1, 0)
            (the plane edge-on: LN's images on a line, RMSNorm's off it).

    Returns:
        A Figure with one 3-D axes per view, titled with the view, one legend, and P's move and
        the lengths of its images in the title.
    """
    views = GEOMETRY_VIEWS if views is None else views
    n = len(views)
    fig = plt.figure(figsize=figsize or (4.0 * n, 4.8), dpi=dpi)
    for k, (title, (elevation, azimuth)) in enumerate(views.items()):
        ax = fig.add_subplot(1, n, k + 1, projection="3d")
        _draw_scene(ax, state)
        _update_scene(ax, {**state, "elevation": elevation, "azimuth": azimuth})
        ax.set_title(title, fontsize=9)
    fig.legend(*fig.axes[0].get_legend_handles_labels(), loc="lower center", ncol=7, fontsize=8,
               frameon=False)
    fig.suptitle(_short_title(state), fontsize=10)
    fig.subplots_adjust(left=0.0, right=1.0, bottom=0.1, top=0.88, wspace=0.0)
    return fig
