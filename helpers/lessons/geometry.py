r"""LayerNorm's geometry: centre, then rescale onto a circle (RMSNorm: rescale onto a sphere).

For a vector :math:`x \in \mathbb{R}^n` with mean :math:`\mu` and biased variance
:math:`\sigma^2 = \lVert x - \mu\mathbf{1} \rVert^2 / n`,

.. math::
    \mathrm{LN}(x) = \frac{x - \mu\mathbf{1}}{\sqrt{\sigma^2 + \epsilon}}
                   = \sqrt{n}\,\frac{x - \mu\mathbf{1}}{\sqrt{\lVert x - \mu\mathbf{1}\rVert^2 + n\epsilon}}.

Subtracting the mean is the orthogonal projection onto the hyperplane :math:`\sum_i x_i = 0`
(it removes the component along :math:`\mathbf{1}`); dividing by the standard deviation puts the
result on the sphere of radius :math:`\sqrt{n}` *inside that hyperplane*: for ``n = 3``, a circle.
With :math:`\epsilon > 0` the radius is :math:`\sqrt{n\sigma^2 / (\sigma^2 + \epsilon)}`, a little
below :math:`\sqrt{n}`. Adding :math:`c\mathbf{1}` or multiplying by :math:`s > 0` does not move
the image (up to :math:`\epsilon`). RMSNorm skips the projection:
:math:`x / \sqrt{\lVert x \rVert^2 / n + \epsilon}` lies on the sphere of radius
:math:`\sqrt{n\,\mathrm{ms} / (\mathrm{ms} + \epsilon)}` around the origin, and a shift moves it.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

#: The fixed points of the 3-D picture; the first is the one the controls move (its ``x`` is set).
GEOMETRY_POINTS = np.array([
    [1.0, -0.5, 1.5],
    [1.5, 0.5, -1.5],
    [-0.5, 2.0, 1.0],
    [2.0, 1.5, 2.5],
    [-1.5, -2.0, 0.5],
    [0.0, 1.0, -2.0],
])


def ln_geometry(points, eps: float = 1e-5, weight=None, bias=None) -> dict:
    r"""LayerNorm and RMSNorm of each row of ``points``, computed as geometry (float64).

    Args:
        points: ``(k, n)`` array-like, one vector per row.
        eps: added to the variance (LayerNorm) and to the mean square (RMSNorm).
        weight, bias: LayerNorm's :math:`\gamma` and :math:`\beta`, shape ``(n,)``; default
            ones and zeros.

    Returns:
        A dict of float64 arrays: ``points`` ``(k, n)``; ``mean``, ``var`` (biased),
        ``mean_square`` ``(k,)``; ``projection`` (``points - mean``, on the plane
        ``sum = 0``), ``ln`` (:math:`\sqrt{n}` times the projection over
        :math:`\sqrt{\lVert\cdot\rVert^2 + n\epsilon}`: LayerNorm without
        :math:`\gamma, \beta`), ``affine`` (``ln * weight + bias``), ``rms`` (RMSNorm
        without weight) ``(k, n)``; ``ln_radius`` :math:`= \sqrt{n\sigma^2/(\sigma^2+\epsilon)}`
        and ``rms_radius`` :math:`= \sqrt{n\,\mathrm{ms}/(\mathrm{ms}+\epsilon)}` ``(k,)``,
        the norms of ``ln`` and ``rms``; and ``n``.
    """
    x = np.array(points, dtype=np.float64, ndmin=2)
    n = x.shape[1]
    weight = np.ones(n) if weight is None else np.asarray(weight, dtype=np.float64)
    bias = np.zeros(n) if bias is None else np.asarray(bias, dtype=np.float64)
    mean = x.mean(axis=1)
    projection = x - mean[:, None]  # the orthogonal projection onto sum(x) = 0
    var = (projection**2).mean(axis=1)
    ln = np.sqrt(n) * projection / np.sqrt((projection**2).sum(axis=1) + n * eps)[:, None]
    mean_square = (x**2).mean(axis=1)
    rms = x / np.sqrt(mean_square + eps)[:, None]
    return {
        "n": n, "points": x, "mean": mean, "var": var, "mean_square": mean_square,
        "projection": projection, "ln": ln, "affine": ln * weight + bias, "rms": rms,
        "ln_radius": np.sqrt(n * var / (var + eps)),
        "rms_radius": np.sqrt(n * mean_square / (mean_square + eps)),
    }


def ln_geometry_state(azimuth: float = -25.0, elevation: float = 20.0, x: float = 1.0, scale: float = 1.0,
                      offset: float = 0.0, gamma: float = 1.0, eps: float = 1e-5, *,
                      points=GEOMETRY_POINTS) -> dict:
    r"""The 3-D scene of deep dive 15's geometry dashboard: fixed points and one point P that moves.

    Args:
        azimuth, elevation: the camera, in degrees (matplotlib's ``view_init``).
        x: P's first coordinate before the move (its others are ``points[0, 1:]``).
        scale: P becomes ``scale * P + offset * (1, 1, 1)``; must be positive.
        offset: see ``scale``: a move along ``(1, 1, 1)``, which LayerNorm removes.
        gamma: LayerNorm's :math:`\gamma` on the first coordinate (the others 1): the circle
            becomes an ellipse.
        eps: LayerNorm's and RMSNorm's eps.
        points: ``(k, 3)``, the scene's points; row 0 is P before the move.

    Returns:
        The dict of :func:`ln_geometry` for the points (P moved, in row 0) with ``weight``
        ``(gamma, 1, 1)``, plus ``base`` (P before the move, ``(3,)``), ``azimuth``, ``elevation``, ``x``, ``scale``, ``offset``,
        ``gamma``, ``eps``, ``unmoved`` (P's images before the move, at ``scale=1, offset=0``:
        ``{"ln": after γ, "ln_plain": before γ, "rms": RMSNorm}``, each ``(3,)``) and ``ellipse`` (``(3, m)``:
        where ``gamma`` sends the circle of radius :math:`\sqrt{3}`, the images' home at eps 0).
    """
    base = np.array(points, dtype=np.float64)
    base[0, 0] = x
    moved = base.copy()
    moved[0] = scale * base[0] + offset
    weight = np.array([gamma, 1.0, 1.0])
    state = ln_geometry(moved, eps, weight)
    unmoved = ln_geometry(base[:1], eps, weight)
    state.update(base=base[0], azimuth=float(azimuth), elevation=float(elevation), x=float(x), scale=float(scale),
                 offset=float(offset), gamma=float(gamma), eps=float(eps),
                 unmoved={"ln": unmoved["affine"][0], "ln_plain": unmoved["ln"][0], "rms": unmoved["rms"][0]},
                 ellipse=(np.sqrt(3) * plane_circle()) * weight[:, None])
    return state


def plane_circle(m: int = 97) -> np.ndarray:
    """``(3, m)``: the unit circle in the plane ``x + y + z = 0``, closed (first column = last)."""
    u = np.array([1.0, -1.0, 0.0]) / np.sqrt(2)
    v = np.array([1.0, 1.0, -2.0]) / np.sqrt(6)  # u, v: an orthonormal basis of the plane
    t = np.linspace(0.0, 2 * np.pi, m)
    return np.outer(u, np.cos(t)) + np.outer(v, np.sin(t))


def ln_geometry_table(state: dict) -> pd.DataFrame:
    """P and its images as numbers: one row each, columns ``x₁, x₂, x₃``, their ``sum`` and the
    vector's ``length``.

    Rows: ``P``; ``P − mean(P)`` (its projection: sum 0); ``LN(P)`` (before γ: length
    √(3·var/(var+eps))); ``LN(P) before the move`` (P at scale 1, offset 0: the same numbers
    up to eps); ``γ ⊙ LN(P)``; ``RMSNorm(P)`` (length √(3·ms/(ms+eps))) and
    ``RMSNorm(P) before the move`` (moved by a shift).
    """
    rows = {
        "P": state["points"][0], "P − mean(P)": state["projection"][0], "LN(P)": state["ln"][0],
        "LN(P) before the move": state["unmoved"]["ln_plain"], "γ ⊙ LN(P)": state["affine"][0],
        "RMSNorm(P)": state["rms"][0], "RMSNorm(P) before the move": state["unmoved"]["rms"],
    }
    frame = pd.DataFrame(rows, index=["x₁", "x₂", "x₃"]).T
    frame["sum"] = frame[["x₁", "x₂", "x₃"]].sum(axis=1)
    frame["length"] = np.sqrt((frame[["x₁", "x₂", "x₃"]] ** 2).sum(axis=1))
    return frame.round(6) + 0.0  # + 0.0: no -0.0 in the table
