"""Memory and speed of LayerNorm implementations: saved-for-backward bytes, a bytes-moved
model, and the results of ``make bench`` (``benchmarks/run.py``).

LayerNorm does a handful of flops per element and moves every element through memory
at least twice, so its speed limit is memory bandwidth, not arithmetic. The model:

- forward reads ``x`` and writes ``y``: ``2 * M * N * itemsize`` bytes;
- backward reads ``x`` and ``dy`` and writes ``dx``: ``3 * M * N * itemsize`` bytes
  (the parameters and per-row statistics are O(M + N), ignored).

Achieved bandwidth is that byte count over the measured time; the machine's copy
bandwidth (``y.copy_(x)``: read once, write once), measured at the same size, is the
practical ceiling. Where the data fit in a cache, both run at that cache's speed:
:func:`cache_sizes` reads the sizes the machine reports, so a benchmark can choose sizes
from inside the L1 cache to beyond the last-level cache (LLC).
"""

from __future__ import annotations

import importlib.resources
import io
import pathlib

import pandas as pd
import torch
from torch import Tensor

RESULTS_NAME = "layernorm_cpu.csv"


def naive_layer_norm(x: Tensor, normalized_shape, weight=None, bias=None, eps: float = 1e-5) -> Tensor:
    """LayerNorm as a beginner writes it, each step a separate autograd op (x - mean twice,
    a division by a square root): autograd keeps every intermediate for the backward."""
    dims = tuple(range(-len(normalized_shape), 0))
    mean = x.mean(dims, keepdim=True)
    var = ((x - mean) ** 2).mean(dims, keepdim=True)
    y = (x - mean) / torch.sqrt(var + eps)
    if weight is not None:
        y = y * weight
    if bias is not None:
        y = y + bias
    return y


def _implementations() -> dict:
    import torch.nn.functional as F

    import helpers

    return {
        "naive composition": naive_layer_norm,
        "helpers.layer_norm": helpers.layer_norm,
        "LayerNormFunction": helpers.LayerNormFunction.apply,
        "torch (F.layer_norm)": F.layer_norm,
    }


def saved_bytes(fn, x: Tensor, normalized_shape, weight=None, bias=None, eps: float = 1e-5) -> dict:
    """Bytes autograd saves for the backward of ``fn(x, normalized_shape, weight, bias, eps)``.

    Every tensor autograd packs goes through ``saved_tensors_hooks``; each distinct
    storage is counted once, and a storage the caller already holds (``x``, the
    parameters) is counted apart as ``shared`` since saving it costs nothing extra.
    """
    held = {t.untyped_storage().data_ptr() for t in (x, weight, bias) if t is not None}
    seen: dict[int, int] = {}

    def pack(t: Tensor):
        storage = t.untyped_storage()
        seen[storage.data_ptr()] = storage.nbytes()
        return t

    with torch.autograd.graph.saved_tensors_hooks(pack, lambda t: t):
        fn(x, normalized_shape, weight, bias, eps)
    extra = sum(n for ptr, n in seen.items() if ptr not in held)
    shared = sum(n for ptr, n in seen.items() if ptr in held)
    return {"tensors": len(seen), "new bytes": extra, "shared bytes": shared}


def saved_bytes_table(rows: int = 64, width: int = 256, seed: int = 0) -> pd.DataFrame:
    """:func:`saved_bytes` for each implementation on a float32 ``(rows, width)`` input with
    weight and bias; ``x size`` is the input's own bytes, for scale."""
    g = torch.Generator().manual_seed(seed)
    x = torch.randn(rows, width, generator=g).requires_grad_()
    weight = torch.randn(width, generator=g).requires_grad_()
    bias = torch.randn(width, generator=g).requires_grad_()
    frame = pd.DataFrame({name: saved_bytes(fn, x, (width,), weight, bias)
                          for name, fn in _implementations().items()}).T
    frame["new / x size"] = (frame["new bytes"] / (x.numel() * x.element_size())).round(3)
    return frame


_VIEWS = frozenset({"view", "_unsafe_view", "reshape", "alias", "detach", "t", "expand", "unsqueeze",
                    "squeeze", "as_strided", "_to_copy_view"})


def count_full_passes(fn, rows: int = 64, width: int = 32, seed: int = 0) -> list[str]:
    """The eager operations over ``(rows, width)`` data in ``fn``'s backward: each one a full
    pass through memory.

    ``fn(x, normalized_shape, weight, bias, eps)`` runs forward on float32 inputs with weight
    and bias; then, under a ``TorchDispatchMode`` that sees every ATen operation autograd
    runs, the backward for all three gradients. An operation counts when one of its tensor
    arguments or its result has ``rows * width`` elements and it is not a view (views move
    no data). Returns the operations' names, in order.
    """
    from torch.utils._python_dispatch import TorchDispatchMode

    numel = rows * width

    class _Passes(TorchDispatchMode):
        def __init__(self):
            super().__init__()
            self.ops: list[str] = []

        def __torch_dispatch__(self, func, types, args=(), kwargs=None):
            out = func(*args, **(kwargs or {}))
            name = func.overloadpacket.__name__
            tensors = [a for a in (*args, out) if isinstance(a, Tensor)]
            if name not in _VIEWS and any(t.numel() == numel for t in tensors):
                self.ops.append(name)
            return out

    g = torch.Generator().manual_seed(seed)
    x = torch.randn(rows, width, generator=g).requires_grad_()
    weight = torch.randn(width, generator=g).requires_grad_()
    bias = torch.randn(width, generator=g).requires_grad_()
    dy = torch.randn(rows, width, generator=g)
    y = fn(x, (width,), weight, bias, 1e-5)
    with _Passes() as mode:
        torch.autograd.grad(y, (x, weight, bias), dy)
    return mode.ops


def bytes_moved(rows: int, width: int, itemsize: int, direction: str) -> int:
    """Bytes the model says must move: ``"copy"`` and ``"forward"`` 2 passes (read x, write y);
    ``"backward"`` 3 (read x and dy, write dx); ``"forward+backward"`` 5."""
    passes = {"copy": 2, "forward": 2, "backward": 3, "forward+backward": 5}
    return passes[direction] * rows * width * itemsize


def _parse_size(text: str) -> int:
    """``"32K"``, ``"1024K"``, ``"32M"`` or a plain byte count -> bytes."""
    text = text.strip().upper().removesuffix("B")
    scale = {"K": 2**10, "M": 2**20, "G": 2**30}.get(text[-1:], 1)
    return int(text.rstrip("KMG")) * scale


def cache_sizes(cpu: int = 0) -> dict[str, int]:
    """This machine's data and unified caches as seen by one CPU, in bytes: ``{"L1d": ..., "L2": ...,
    "L3": ...}``, read at run time from Linux's ``/sys/devices/system/cpu/cpu<cpu>/cache``
    (``os.sysconf`` where that is missing). Empty where neither says anything. The last entry
    (the highest level) is the last-level cache, usually shared by several cores."""
    found: dict[int, tuple[str, int]] = {}
    folder = pathlib.Path(f"/sys/devices/system/cpu/cpu{cpu}/cache")
    for index in sorted(folder.glob("index*")):
        try:
            level = int((index / "level").read_text())
            kind = (index / "type").read_text().strip()
            size = _parse_size((index / "size").read_text())
        except (OSError, ValueError):
            continue
        if kind != "Instruction":
            found[level] = (f"L{level}d" if kind == "Data" else f"L{level}", size)
    if not found:
        import os

        for level, name in ((1, "SC_LEVEL1_DCACHE_SIZE"), (2, "SC_LEVEL2_CACHE_SIZE"), (3, "SC_LEVEL3_CACHE_SIZE")):
            try:
                size = os.sysconf(name)
            except (ValueError, OSError):
                continue
            if size > 0:
                found[level] = (f"L{level}d" if level == 1 else f"L{level}", size)
    return dict(found[level] for level in sorted(found))


def load_results() -> tuple[pd.DataFrame, dict]:
    """The stored ``make bench`` results: (one row per measurement, the machine's description).

    ``make bench`` writes them into the package (``helpers/data/``), so a checkout and an
    installed copy (Colab) read the same file. The CSV's leading ``# key: value`` lines
    describe the machine.
    """
    text = importlib.resources.files("helpers").joinpath("data", RESULTS_NAME).read_text()
    meta = {}
    for line in text.splitlines():
        if not line.startswith("#"):
            break
        key, _, value = line[1:].partition(":")
        meta[key.strip()] = value.strip()
    return pd.read_csv(io.StringIO(text), comment="#"), meta
