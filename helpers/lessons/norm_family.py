"""The normalization family on one picture: which cells share one mean and variance, and
which parameters and buffers each layer keeps.

Every norm here standardizes groups of cells (:func:`helpers.normalize`); they differ only in
how the cells are grouped. For an image batch ``(N, C, H, W)``:

- BatchNorm: per channel, over ``(N, H, W)``;
- LayerNorm (``normalized_shape=(C, H, W)``): per sample, over ``(C, H, W)``;
- InstanceNorm: per sample and channel, over ``(H, W)``;
- GroupNorm with ``G`` groups: per sample and group of ``C // G`` channels;
- RMSNorm (``normalized_shape=(C, H, W)``): per sample, one mean square and no mean.

For a batch of token sequences ``(B, T, D)`` the feature dim ``D`` plays the channel:
LayerNorm and RMSNorm normalize each token over its ``D`` features, BatchNorm each feature
over ``(B, T)`` (``BatchNorm1d`` on ``x.reshape(B * T, D)``); InstanceNorm and GroupNorm
would act on ``x.transpose(1, 2)``, per sentence over ``T``, which Transformers do not use.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

#: The members of the family, in the order the figures show them.
NORMS = ("BatchNorm", "LayerNorm", "InstanceNorm", "GroupNorm", "RMSNorm")


def divisors(n: int) -> list[int]:
    """The positive divisors of ``n``, ascending: the group counts ``GroupNorm(G, n)`` accepts."""
    return [d for d in range(1, n + 1) if n % d == 0]


def statistic_groups(norm: str, shape, groups: int = 1) -> np.ndarray:
    """Which cells share one statistic: an integer group id per cell of a tensor of ``shape``.

    Args:
        norm: one of :data:`NORMS`.
        shape: ``(N, C, H, W)`` (an image batch) or ``(B, T, D)`` (token sequences, ``D``
            the features); see the module's docstring for what each norm groups.
        groups: GroupNorm's number of groups; must divide ``C`` (or ``D``). Ignored by the others.

    Returns:
        An int64 array of ``shape``: cells with the same id are exactly the cells over which the
        norm computes one mean and one variance (RMSNorm: one mean square). Ids are
        ``0, 1, ..., n_groups - 1``, numbered in the order of the cells' first appearance.
    """
    shape = tuple(shape)
    index = np.indices(shape)
    if len(shape) == 4:
        sample, channel, channels = index[0], index[1], shape[1]
        unit = sample  # LayerNorm and RMSNorm over (C, H, W): one group per sample
    else:
        sample, channel, channels = index[0], index[2], shape[2]
        unit = index[0] * shape[1] + index[1]  # over D: one group per token
    if norm == "BatchNorm":
        ids = channel
    elif norm == "InstanceNorm":
        ids = sample * channels + channel
    elif norm == "GroupNorm":
        ids = sample * groups + channel // (channels // groups)
    else:
        ids = unit
    return ids.astype(np.int64)


def reduction(norm: str, ndim: int, groups: int = 1) -> tuple[str, str]:
    """How ``norm`` is written and what it reduces, for a 4-D image or 3-D token batch:
    ``(layer, "per ... over ...")``, e.g. ``("BatchNorm2d(C)", "per channel, over (N, H, W)")``."""
    image = {
        "BatchNorm": ("BatchNorm2d(C)", "per channel, over (N, H, W)"),
        "LayerNorm": ("LayerNorm((C, H, W))", "per sample, over (C, H, W)"),
        "InstanceNorm": ("InstanceNorm2d(C)", "per sample and channel, over (H, W)"),
        "GroupNorm": (f"GroupNorm({groups}, C)", f"per sample and group of C/{groups} channels"),
        "RMSNorm": ("RMSNorm((C, H, W))", "per sample, one mean square over (C, H, W)"),
    }
    tokens = {
        "BatchNorm": ("BatchNorm1d(D) on x.reshape(B*T, D)", "per feature, over (B, T)"),
        "LayerNorm": ("LayerNorm(D)", "per token, over D"),
        "InstanceNorm": ("InstanceNorm1d(D) on x.transpose(1, 2)", "per sentence and feature, over T"),
        "GroupNorm": (f"GroupNorm({groups}, D) on x.transpose(1, 2)",
                      f"per sentence and group of D/{groups} features"),
        "RMSNorm": ("RMSNorm(D)", "per token, one mean square over D"),
    }
    return (image if ndim == 4 else tokens)[norm]


def norm_family_state(norm: str, groups: int = 2, sample: int = 0, channel: int = 0, position: int = 0,
                      *, image_shape: tuple[int, int, int, int] = (3, 6, 2, 2)) -> dict:
    """The groups of one norm on an image batch and on the same numbers read as token sequences.

    The token batch is ``(B, T, D) = (N, H * W, C)``: each pixel a token with ``C`` features, as
    a vision Transformer reads an image. One cell is marked in each: ``(sample, channel, h, w)``
    with ``(h, w) = divmod(position, W)`` in the image, ``(sentence, token, feature) = (sample,
    position, channel)`` in the tokens; the group it belongs to is highlighted.

    Returns:
        A dict: ``norm``, ``groups``, ``sample``, ``channel``, ``position`` and, per block
        (``"image"``, ``"tokens"``), a dict with ``shape``, ``ids`` (from
        :func:`statistic_groups`), ``cell`` (the marked cell's index), ``highlight`` (its group
        id), ``n_groups``, ``group_size`` (cells per group), ``layer`` and ``over`` (from
        :func:`reduction`).
    """
    n, c, h, w = image_shape
    cells = {"image": (tuple(image_shape), (sample, channel, *divmod(position, w))),
             "tokens": ((n, h * w, c), (sample, position, channel))}
    state = {"norm": norm, "groups": groups, "sample": sample, "channel": channel, "position": position}
    for name, (shape, cell) in cells.items():
        ids = statistic_groups(norm, shape, groups)
        n_groups = int(ids.max()) + 1
        layer, over = reduction(norm, len(shape), groups)
        state[name] = {"shape": shape, "ids": ids, "cell": cell, "highlight": int(ids[cell]),
                       "n_groups": n_groups, "group_size": ids.size // n_groups, "layer": layer, "over": over}
    return state


# The layers the parameter table inspects: (family member, layer name, args, kwargs); C and D are the
# channels or features, S the image's (C, H, W), G the groups.
_TABLE_LAYERS = (
    ("BatchNorm", "BatchNorm2d", ("C",), {}),
    ("BatchNorm", "BatchNorm1d", ("C",), {}),
    ("LayerNorm", "LayerNorm", ("S",), {}),
    ("LayerNorm", "LayerNorm", ("C",), {}),
    ("InstanceNorm", "InstanceNorm2d", ("C",), {}),
    ("InstanceNorm", "InstanceNorm2d", ("C",), {"affine": True, "track_running_stats": True}),
    ("GroupNorm", "GroupNorm", ("G", "C"), {}),
    ("RMSNorm", "RMSNorm", ("S",), {}),
    ("RMSNorm", "RMSNorm", ("C",), {}),
)


def _shape_text(tensor) -> str:
    return str(tuple(tensor.shape))


def parameter_table(channels: int = 6, groups: int = 2, spatial: tuple[int, int] = (2, 2), *,
                    namespace=None) -> pd.DataFrame:
    """Which learned parameters and which buffers each norm layer holds, read off real modules.

    Each layer is built (``BatchNorm2d(C)``, ``BatchNorm1d(C)``, ``LayerNorm((C, H, W))``,
    ``LayerNorm(C)``, ``InstanceNorm2d(C)`` with and without ``affine=True,
    track_running_stats=True``, ``GroupNorm(G, C)``, ``RMSNorm((C, H, W))``, ``RMSNorm(C)``) and
    its ``named_parameters()`` and ``named_buffers()`` are listed; nothing is written in by hand.

    Args:
        channels: ``C`` (for a token layer, the features ``D``).
        groups: GroupNorm's ``G``.
        spatial: ``(H, W)``.
        namespace: where the classes come from: :mod:`helpers` (default) or ``torch.nn``.

    Returns:
        A DataFrame, one row per layer (index: the constructor call, e.g. ``"GroupNorm(2, 6)"``),
        columns ``norm`` (the family member), ``weight (γ)`` and ``bias (β)`` (the shape, or
        ``"-"``), ``buffers`` (``"name shape"`` of each buffer, comma-separated, or ``"-"``) and
        ``running statistics`` (``"yes"`` when it holds a ``running_*`` buffer, else ``"no"``).
    """
    if namespace is None:
        import helpers as namespace
    values = {"C": channels, "G": groups, "S": (channels, *spatial)}
    rows, index = [], []
    for norm, name, args, kwargs in _TABLE_LAYERS:
        layer = getattr(namespace, name)(*(values[a] for a in args), **kwargs)
        params = dict(layer.named_parameters())
        buffers = dict(layer.named_buffers())
        extra = "".join(f", {k}={v}" for k, v in kwargs.items())
        index.append(f"{name}({', '.join(str(values[a]) for a in args)}{extra})")
        rows.append({
            "norm": norm,
            "weight (γ)": _shape_text(params.pop("weight")) if "weight" in params else "-",
            "bias (β)": _shape_text(params.pop("bias")) if "bias" in params else "-",
            "buffers": ", ".join(f"{k} {_shape_text(b)}" for k, b in buffers.items()) or "-",
            "running statistics": "yes" if any(k.startswith("running_") for k in buffers) else "no",
        })
        if params:  # a layer with other parameters would need a column of its own
            raise RuntimeError(f"parameter_table(): {index[-1]} has parameters {sorted(params)} "
                               "beyond weight and bias")
    return pd.DataFrame(rows, index=pd.Index(index, name="layer"))
