"""Speed of LayerNorm implementations against torch's own kernel, on this machine's CPU.

Run with ``make bench`` (a few minutes on 2 cores; longer the first time, while
``torch.compile`` fills its on-disk cache). It first prints how long each notebook
dashboard takes to redraw (``benchmarks/widgets.py``; skip it with ``BENCH_WIDGETS=0``).
Then it times, on ``BENCH_THREADS`` threads (2):

- **a dense sweep**: row widths 64, 128, ..., 8192 and tensor sizes in powers of two from
  8 KiB (inside the L1 cache) to twice the last-level cache (LLC), read from the machine
  at run time, so that a copy's working set (x and y) reaches 4x the LLC; for ``y.copy_(x)``,
  torch's ``F.layer_norm`` and ``CompiledLayerNormFunction``, forward and forward+backward.
  Where twice the LLC is more than ``BENCH_MAX_MIB`` (256 MiB) the sizes stop there and the
  caches are flushed (a buffer of 1.5x the LLC written) before every timed call instead, one
  call per block; a flush that takes longer than ``BENCH_FLUSH_MAX_MS`` (20 ms) is cut to the
  bytes written in that time. The CSV's header says which was used and what was cut;
- **every implementation** at 3 widths x 3 sizes (256 KiB, 4 MiB, 16 MiB): the naive autograd composition,
  ``helpers.layer_norm``, ``LayerNormFunction`` (eager), ``F.rms_norm``, ``helpers.rms_norm``
  and ``CompiledRMSNormFunction`` besides the three above;
- **the headline size**, 4096 x 1024 float32, with at least 20 rounds: all of the above plus
  ``torch.compile(helpers.layer_norm)`` and ``torch.compile(helpers.rms_norm)`` (Inductor
  fusing autograd's backward), and the backward alone (``direction == "backward"``): each
  autograd backward, torch's kernel called directly, and ``helpers.speed.compiled``'s three
  backwards: the one-pass kernel (``helpers.speed.one_pass``, what ``CompiledLayerNormFunction``
  runs), the split Inductor graph and the fused-by-Inductor one.

**Outputs.** Every output and temporary of every implementation comes from reused memory:
glibc's allocator is told (``mallopt``) never to return freed memory to the system, so a
buffer freed by one call is handed to the next and no call pays page faults (the
``faults_per_call`` column shows it); the copy writes into one preallocated ``y``. Before
that switch, with the allocator's defaults, the same copy with a fresh output
(``x.clone()``), a bare ``torch.empty``, and forward+backward at two sizes are timed with
``outputs == "fresh"``: the cost of allocation, measured apart.

**Time.** The headline size and the 3 x 3 sizes come first, then the dense sweep from small
to large, which stops when the next size would end past ``BENCH_BUDGET_S`` (240 s) from the
start of the speed part (its time estimated from the size before it); the output and the
CSV's header say where it stopped. So the run takes a few minutes on any machine, whatever
its caches.

**Timing.** The cores may be shared. Each implementation runs in blocks of calls (at least
``BENCH_MIN_BLOCK_MS``, 2 ms, per block; 5 times that at the headline size, so that one
stalled call weighs less there); ``ROUNDS`` rounds (10, headline 25) interleave the
implementations measured at one size, each round in a rotated order, so a burst of load
elsewhere hits them alike. Kept per implementation and size: the fastest round
(``time_ms``) and the median round (``median_ms``), both per call. ``ratio_vs_torch`` is
the median over torch's median in the same run and direction; ``fastest_ratio_vs_torch``
the same with the fastest rounds.

**Bandwidth.** Bytes-moved model (``helpers.lessons.memory_and_speed.bytes_moved``): copy and forward 2 passes
(read x, write y), backward 3 (read x and dy, write dx), forward+backward 5. ``GBps`` is
that over the fastest time, ``median_GBps`` over the median, and ``copy_GBps`` the copy's
fastest at the same size: the practical ceiling.

It writes ``helpers/data/layernorm_cpu.csv``, the file the package ships (deep dive 14 reads it,
in a checkout and in Colab alike), headed by ``# key: value`` lines that describe the machine, the allocator,
the cache mode and the columns, and prints the headline ratios.
"""

from __future__ import annotations

import ctypes
import datetime
import gc
import math
import os
import pathlib
import platform
import statistics
import sys
import time

import torch
import torch.nn.functional as F

ROOT = pathlib.Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
import helpers  # noqa: E402
from helpers.lessons.memory_and_speed import (  # noqa: E402
    RESULTS_NAME,
    bytes_moved,
    cache_sizes,
    naive_layer_norm,
)
from helpers.speed import compiled, one_pass  # noqa: E402

THREADS = int(os.environ.get("BENCH_THREADS", "2"))
ROUNDS = int(os.environ.get("BENCH_ROUNDS", "10"))
HEADLINE_ROUNDS = max(20, int(os.environ.get("BENCH_HEADLINE_ROUNDS", "25")))
MIN_BLOCK = float(os.environ.get("BENCH_MIN_BLOCK_MS", "2")) / 1e3
HEADLINE_MIN_BLOCK = 5 * MIN_BLOCK
MAX_BYTES = int(float(os.environ.get("BENCH_MAX_MIB", "256")) * 2**20)
BUDGET_S = float(os.environ.get("BENCH_BUDGET_S", "240"))
FLUSH_MAX_S = float(os.environ.get("BENCH_FLUSH_MAX_MS", "20")) / 1e3
# The LLC as read at run time, or BENCH_LLC_MIB (to see what the run does on a machine with another cache).
LLC_OVERRIDE = os.environ.get("BENCH_LLC_MIB")
WIDTHS = tuple(2**k for k in range(6, 14))  # 64 ... 8192
MIN_ROWS = 8
HEADLINE = (4096, 1024)
EPS = 1e-5
OUT = ROOT / "helpers" / "data" / RESULTS_NAME

COPY = "copy (y.copy_(x))"
TORCH_LN, TORCH_RMS = "torch (F.layer_norm)", "torch (F.rms_norm)"
COMPILED_LN, COMPILED_RMS = "CompiledLayerNormFunction", "CompiledRMSNormFunction"
INDUCTOR_LN, INDUCTOR_RMS = "torch.compile(helpers.layer_norm)", "torch.compile(helpers.rms_norm)"
ONE_PASS = "compiled backward, one pass (Numba; block partial sums)"
SPLIT, FUSED = "compiled backward, split (dx; block partial sums)", "compiled backward, fused by Inductor (one graph)"
TORCH_KERNEL = "torch kernel (native_layer_norm_backward)"


# ----------------------------------------------------------------- the machine


def reuse_freed_memory() -> str:
    """Tell glibc's malloc to keep freed memory (no mmap per allocation, no trimming), so that
    freed buffers are handed out again, already mapped. Returns what was done."""
    try:
        libc = ctypes.CDLL("libc.so.6")
        m_trim_threshold, m_mmap_max = -1, -4
        if libc.mallopt(m_mmap_max, 0) and libc.mallopt(m_trim_threshold, 2**31 - 1):
            return "reused: glibc mallopt(M_MMAP_MAX=0, M_TRIM_THRESHOLD=2 GiB), freed buffers handed out again"
    except (OSError, AttributeError):
        pass
    return "default allocator (glibc mallopt unavailable): outputs may be fresh; see faults_per_call"


def other_runnable_tasks() -> float:
    """How many other tasks wanted a core as the run started: /proc/loadavg's count of running
    tasks, less this one, averaged over 10 samples in a second (NaN where unknown)."""
    samples = []
    for _ in range(10):
        try:
            samples.append(int(pathlib.Path("/proc/loadavg").read_text().split()[3].split("/")[0]) - 1)
        except (OSError, IndexError, ValueError):
            return float("nan")
        time.sleep(0.1)
    return statistics.mean(samples)


def minor_faults() -> float:
    try:
        import resource
    except ImportError:  # Windows
        return float("nan")
    return float(resource.getrusage(resource.RUSAGE_SELF).ru_minflt)


def machine(caches: dict, allocator: str, cache_mode: str, load: str) -> dict:
    cpu = platform.processor() or platform.machine()
    try:
        for line in open("/proc/cpuinfo"):
            if line.startswith("model name"):
                cpu = line.split(":", 1)[1].strip()
                break
    except OSError:
        pass
    return {
        "cpu": cpu, "logical cpus": os.cpu_count(), "threads": THREADS,
        "caches (cpu0, read at run time)": " ".join(f"{k} {v // 2**10}K" for k, v in caches.items()),
        "torch": torch.__version__, "python": platform.python_version(),
        "libc": " ".join(platform.libc_ver()), "compile": compiled.compile_status(),
        "one-pass backward": one_pass.describe(),
        "date": datetime.date.today().isoformat(),
        "machine load at the start": load,
        "outputs": allocator,
        "cache mode": cache_mode,
        "rounds": f"{ROUNDS} interleaved rounds per size, {HEADLINE_ROUNDS} at {HEADLINE[0]} x {HEADLINE[1]}; "
                  f"each round a block of calls of at least {MIN_BLOCK * 1e3:g} ms "
                  f"({HEADLINE_MIN_BLOCK * 1e3:g} ms at {HEADLINE[0]} x {HEADLINE[1]})",
        "columns": "time_ms = fastest round (per call); median_ms = median round; ratio_vs_torch = median_ms / "
                   "torch's median_ms (same run, direction and size); fastest_ratio_vs_torch = the same with "
                   "time_ms; GBps, median_GBps = model bytes / time_ms, / median_ms; copy_GBps = the copy's at "
                   "the same size; working_set_MiB = distinct tensors touched (copy, forward: x, y; backward: "
                   "x, dy, dx; forward+backward: x, y, dy, dx)",
        "bytes model": "copy and forward read x and write y; backward reads x and dy and writes dx",
        "note": "cores may be shared with other jobs while measured: compare ratios from one run",
    }


def tensor_sizes(llc: int) -> tuple[list[int], str]:
    """Tensor sizes in bytes, powers of two from 8 KiB to twice the LLC (a copy's working set,
    x and y, reaching 4x the LLC), capped at ``MAX_BYTES``; and the cache mode that follows."""
    top = 2 ** math.ceil(math.log2(2 * llc))
    if top <= MAX_BYTES:
        mode = f"warm: sizes up to {top // 2**20} MiB, a copy's working set up to {2 * top / llc:g}x the LLC"
    else:
        top = MAX_BYTES
        mode = f"flushed: sizes up to {top // 2**20} MiB (< 2x the LLC), caches flushed before every timed call"
    return [2**k for k in range(13, int(math.log2(top)) + 1)], mode


# ----------------------------------------------------------------- timing


class Flush:
    """Writes a buffer of 1.5x the LLC: what a timed call finds in the caches afterwards is not its data.

    A buffer that takes longer than ``FLUSH_MAX_S`` to write (a very large LLC, a slow machine) is
    cut to the bytes written in that time; ``note`` then says so (the largest sizes may find part
    of their data still cached).
    """

    def __init__(self, llc: int | None):
        self.buffer, self.note = None, ""
        if llc is None:
            return
        self.buffer = torch.empty(int(1.5 * llc) // 4)
        self.buffer.fill_(1.0)  # maps the pages, outside the time
        start = time.perf_counter()
        self.buffer.fill_(1.0)
        took = time.perf_counter() - start
        if took > FLUSH_MAX_S:
            keep = max(1, int(self.buffer.numel() * FLUSH_MAX_S / took))
            self.note = (f"flush cut to {keep * 4 / 2**20:.0f} MiB of {self.buffer.numel() * 4 / 2**20:.0f} "
                         f"(writing 1.5x the LLC took {took * 1e3:.0f} ms, over {FLUSH_MAX_S * 1e3:g} ms)")
            self.buffer = self.buffer[:keep].clone()

    def __call__(self):
        if self.buffer is not None:
            self.buffer.fill_(1.0)


def measure(callables: dict, rounds: int, flush: Flush, min_block: float = MIN_BLOCK) -> dict:
    """``{name: (fastest s, median s, minor faults per call)}`` over ``rounds`` interleaved rounds,
    each a block of calls of at least ``min_block`` seconds; ``{name: "failed: <error>"}`` for a
    callable whose first call raised (``torch.compile`` without a C++ compiler, say)."""
    failed = {}
    for name, fn in list(callables.items()):
        try:
            fn()  # the first call compiles what it compiles
        except Exception as error:  # noqa: BLE001
            failed[name] = f"failed: {type(error).__name__}: {(str(error).splitlines() or [''])[0][:100]}"
            del callables[name]
    for _ in range(4):  # warm-up, until a pass over all of them maps no new memory
        before = minor_faults()
        for fn in callables.values():
            fn()
        if minor_faults() == before:
            break
    calls = {}
    for name, fn in callables.items():
        start = time.perf_counter()
        fn()
        # flushed: one call per block (each call pays a flush; a block of many would cost many flushes)
        calls[name] = 1 if flush.buffer is not None else max(1, math.ceil(min_block / max(time.perf_counter() - start, 1e-7)))
    times = {name: [] for name in callables}
    faults = {name: 0.0 for name in callables}
    names = list(callables)
    gc.disable()
    try:
        for r in range(rounds):
            for name in names[r % len(names):] + names[: r % len(names)]:
                fn, n = callables[name], calls[name]
                before = minor_faults()
                if flush.buffer is None:
                    start = time.perf_counter()
                    for _ in range(n):
                        fn()
                    elapsed = time.perf_counter() - start
                else:
                    elapsed = 0.0
                    for _ in range(n):
                        flush()
                        start = time.perf_counter()
                        fn()
                        elapsed += time.perf_counter() - start
                faults[name] += minor_faults() - before
                times[name].append(elapsed / n)
    finally:
        gc.enable()
    return {**{name: (min(t), statistics.median(t), faults[name] / (rounds * calls[name])) for name, t in times.items()},
            **failed}


# ----------------------------------------------------------------- what is timed


def _rms(fn):
    return lambda x, s, w, b, eps: fn(x, s, w, eps)


def implementations() -> dict:
    """name -> fn(x, normalized_shape, weight, bias, eps), and where it is timed."""
    # The backward alone is timed by running one graph's backward again and again (retain_graph),
    # which a compiled backward allows only without buffer donation.
    import torch._functorch.config

    torch._functorch.config.donated_buffer = False
    inductor_ln = torch.compile(helpers.layer_norm, dynamic=False)
    inductor_rms = torch.compile(helpers.rms_norm, dynamic=False)
    return {
        TORCH_LN: (F.layer_norm, "dense"),
        COMPILED_LN: (compiled.CompiledLayerNormFunction.apply, "dense"),
        "naive composition": (naive_layer_norm, "sparse"),
        "helpers.layer_norm": (helpers.layer_norm, "sparse"),
        "LayerNormFunction": (helpers.LayerNormFunction.apply, "sparse"),
        TORCH_RMS: (_rms(F.rms_norm), "sparse"),
        "helpers.rms_norm": (_rms(helpers.rms_norm), "sparse"),
        COMPILED_RMS: (_rms(compiled.CompiledRMSNormFunction.apply), "sparse"),
        INDUCTOR_LN: (inductor_ln, "headline"),
        INDUCTOR_RMS: (_rms(inductor_rms), "headline"),
    }


def callables_for(name: str, fn, x, w, b, dy, directions) -> dict:
    width = x.shape[-1]
    xs, ws, bs = (t.clone().requires_grad_() for t in (x, w, b))
    out = {}
    if "forward" in directions:
        def forward():
            with torch.no_grad():
                return fn(x, (width,), w, b, EPS)
        out[(name, "forward")] = forward
    if "forward+backward" in directions:
        def forward_backward():
            y = fn(xs, (width,), ws, bs, EPS)
            return torch.autograd.grad(y, (xs, ws, bs), dy, allow_unused=True)
        out[(name, "forward+backward")] = forward_backward
    if "backward" in directions:
        graph = []  # one forward pass, made by the first call; every call runs its backward again

        def backward():
            if not graph:
                graph.append(fn(xs, (width,), ws, bs, EPS))
            return torch.autograd.grad(graph[0], (xs, ws, bs), dy, retain_graph=True, allow_unused=True)
        out[(name, "backward")] = backward
    return out


def kernel_backwards(x, w, b, dy) -> dict:
    """The backward alone, without autograd: torch's kernel and helpers.speed.compiled's three."""
    width = x.shape[-1]
    mean = x.sum(-1, keepdim=True) / width
    rstd = torch.rsqrt(((x - mean) ** 2).sum(-1, keepdim=True) / width + EPS)
    return {
        (TORCH_KERNEL, "backward"): lambda: torch.ops.aten.native_layer_norm_backward(
            dy, x, [width], mean, rstd, w, b, [True, True, True]),
        (ONE_PASS, "backward"): lambda: compiled.layer_norm_backward(dy, x, (width,), mean, rstd, w, kernel="one-pass"),
        (SPLIT, "backward"): lambda: compiled.layer_norm_backward(dy, x, (width,), mean, rstd, w, kernel="split"),
        (FUSED, "backward"): lambda: compiled.layer_norm_backward(dy, x, (width,), mean, rstd, w, kernel="fused"),
    }


def inputs(rows: int, width: int):
    g = torch.Generator().manual_seed(rows * 10007 + width)
    return (torch.randn(rows, width, generator=g), torch.randn(width, generator=g),
            torch.randn(width, generator=g), torch.randn(rows, width, generator=g))


def rows_of(name, direction, outputs, rows, width, rounds, result):
    status = "ok"
    if isinstance(result, str):
        status, result = result, (float("nan"),) * 3
    fastest, median, faults = result
    numel = rows * width
    touched = {"copy": 2, "forward": 2, "backward": 3, "forward+backward": 4}.get(direction, 1)
    moved = bytes_moved(rows, width, 4, direction) if direction in ("copy", "forward", "backward",
                                                                      "forward+backward") else 0
    return dict(implementation=name, direction=direction, outputs=outputs, rows=rows, width=width,
                MiB=numel * 4 / 2**20, working_set_MiB=touched * numel * 4 / 2**20, rounds=rounds,
                time_ms=fastest * 1e3, median_ms=median * 1e3,
                GBps=moved / fastest / 1e9 if moved else float("nan"),
                median_GBps=moved / median / 1e9 if moved else float("nan"),
                faults_per_call=faults, status=status)


# ----------------------------------------------------------------- the runs


def fresh_outputs(sizes: list[int], impls: dict, flush: Flush, budget_s: float) -> tuple[list[dict], str]:
    """With the allocator's defaults: the copy into a fresh output against a preallocated one, a
    bare torch.empty, and forward+backward at the headline size and the largest size reached.
    Sizes stop when the next would end past ``budget_s`` (its time estimated from the one before);
    returns the rows and what was cut (empty if nothing)."""
    out, capped, started, last, reached = [], "", time.monotonic(), None, HEADLINE[0]
    width = 1024
    for size in sizes:
        rows = size // (4 * width)
        if rows < MIN_ROWS:
            continue
        if last is not None and time.monotonic() - started + last[1] * size / last[0] > budget_s:
            capped = f"fresh outputs stopped before {size / 2**20:g} MiB (budget {budget_s:g} s)"
            print(f"capped: {capped}", flush=True)
            break
        size_started = time.monotonic()
        x, _, _, _ = inputs(rows, width)
        y = torch.empty_like(x)
        result = measure({"fresh": lambda x=x: x.clone(), "pre": lambda x=x, y=y: y.copy_(x),
                          "empty": lambda x=x: torch.empty_like(x)}, ROUNDS, flush)
        out.append(rows_of(COPY, "copy", "preallocated (default allocator)", rows, width, ROUNDS, result["pre"]))
        out.append(rows_of("copy, fresh output (x.clone())", "copy", "fresh", rows, width, ROUNDS, result["fresh"]))
        out.append(rows_of("allocation alone (torch.empty_like(x))", "allocation", "fresh", rows, width, ROUNDS,
                           result["empty"]))
        last, reached = (size, time.monotonic() - size_started), rows
    for rows in sorted({HEADLINE[0], reached}):
        x, w, b, dy = inputs(rows, width)
        timed = {}
        for name in (TORCH_LN, COMPILED_LN):
            timed.update(callables_for(name, impls[name][0], x, w, b, dy, ("forward+backward",)))
        for (name, direction), result in measure(timed, ROUNDS, flush).items():
            out.append(rows_of(f"{name}, fresh outputs", direction, "fresh", rows, width, ROUNDS, result))
    return out, capped


def plan(sizes: list[int]) -> list[tuple[int, int]]:
    """The shapes to time, in order: the headline, the sparse shapes, then the dense sweep from
    small to large (what a time budget cuts, it cuts from the end)."""
    if os.environ.get("BENCH_HEADLINE_ONLY") == "1":
        return [HEADLINE]
    dense = {(size // (4 * width), width) for width in WIDTHS for size in sizes if size // (4 * width) >= MIN_ROWS}
    first = [HEADLINE, *sorted(sparse_shapes() - {HEADLINE}, key=lambda s: (s[0] * s[1], s[1]))]
    return first + sorted(dense - set(first), key=lambda s: (s[0] * s[1], s[1]))


def sparse_shapes() -> set[tuple[int, int]]:
    """Where every implementation is timed: rows of 64, 1024 and 8192 at 256 KiB (in L2), 4 MiB (in
    the LLC here) and 16 MiB (the headline size)."""
    return {(size // (4 * width), width) for width in (64, 1024, 8192)
            for size in (2**18, 2**22, HEADLINE[0] * HEADLINE[1] * 4)}


def main() -> int:
    started = time.monotonic()
    if os.environ.get("BENCH_WIDGETS", "1") != "0":
        import importlib.util

        spec = importlib.util.spec_from_file_location("widget_redraws", ROOT / "benchmarks" / "widgets.py")
        module = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(module)
        module.main()
        print(flush=True)
    torch.set_num_threads(THREADS)
    others = other_runnable_tasks()
    load = (f"{others:.1f} other runnable tasks (mean of 10 samples over 1 s); 1-minute load average "
            f"{os.getloadavg()[0]:.2f}" if hasattr(os, "getloadavg") else "unknown")
    if others > 0.3:
        print(f"note: {others:.1f} other tasks were running at the start: they share the cores, times will be noisy")
    caches = cache_sizes()
    llc = list(caches.values())[-1] if caches else 32 * 2**20
    if LLC_OVERRIDE:
        llc = int(float(LLC_OVERRIDE) * 2**20)
        caches = {**caches, "LLC (BENCH_LLC_MIB)": llc}
    sizes, cache_mode = tensor_sizes(llc)
    flush = Flush(llc if cache_mode.startswith("flushed") else None)
    if flush.note:
        cache_mode += f"; {flush.note}"
    print(f"caches: {caches}; {cache_mode}", flush=True)
    speed_started = time.monotonic()

    impls = implementations()
    rows, fresh_capped = [], ""
    if os.environ.get("BENCH_HEADLINE_ONLY") != "1":  # a quarter of the budget
        rows, fresh_capped = fresh_outputs(sizes, impls, flush, BUDGET_S / 4)
    print(f"fresh outputs done ({time.monotonic() - started:.0f} s)", flush=True)
    allocator = reuse_freed_memory()

    sparse = sparse_shapes()
    capped, last = "", None  # last: (bytes, seconds) of the dense size timed before
    for m, width in plan(sizes):
        headline = (m, width) == HEADLINE
        if not headline and (m, width) not in sparse and last is not None:
            spent = time.monotonic() - speed_started
            estimate = last[1] * (m * width * 4) / last[0]
            if spent + estimate > BUDGET_S:
                capped = (f"the dense sweep stopped before {m} x {width} ({m * width * 4 / 2**20:g} MiB): "
                          f"{spent:.0f} s spent, about {estimate:.0f} s more for it, budget {BUDGET_S:g} s "
                          f"(BENCH_BUDGET_S)")
                print(f"capped: {capped}", flush=True)
                break
        shape_started = time.monotonic()
        x, w, b, dy = inputs(m, width)
        y = torch.empty_like(x)
        timed = {(COPY, "copy"): lambda x=x, y=y: y.copy_(x)}
        for name, (fn, where) in impls.items():
            if where == "dense" or (where == "sparse" and (headline or (m, width) in sparse)) or headline:
                directions = ("forward", "forward+backward") + (("backward",) if headline else ())
                timed.update(callables_for(name, fn, x, w, b, dy, directions))
        if headline:
            timed.update(kernel_backwards(x, w, b, dy))
        rounds = HEADLINE_ROUNDS if headline else ROUNDS
        results = measure(timed, rounds, flush, HEADLINE_MIN_BLOCK if headline else MIN_BLOCK)
        for (name, direction), result in results.items():
            rows.append(rows_of(name, direction, "preallocated", m, width, rounds, result))
        if headline or (m, width) in sparse:
            print(f"{m:>7} x {width:<5} ({m * width * 4 / 2**20:g} MiB): {len(timed)} timings "
                  f"({time.monotonic() - started:.0f} s)", flush=True)
        else:
            last = (m * width * 4, time.monotonic() - shape_started)

    import pandas as pd

    frame = pd.DataFrame(rows)
    key = ["direction", "outputs", "rows", "width"]
    torch_rows = frame[frame.implementation.isin([TORCH_LN, f"{TORCH_LN}, fresh outputs"])]
    joined = frame.join(torch_rows.set_index(key)[["time_ms", "median_ms"]], on=key, rsuffix="_torch")
    frame["ratio_vs_torch"] = joined["median_ms"] / joined["median_ms_torch"]
    frame["fastest_ratio_vs_torch"] = joined["time_ms"] / joined["time_ms_torch"]
    copies = frame[(frame.implementation == COPY)].drop_duplicates(["rows", "width"], keep="last")
    frame = frame.join(copies.set_index(["rows", "width"])["GBps"].rename("copy_GBps"), on=["rows", "width"])
    frame = frame[["implementation", "direction", "outputs", "rows", "width", "MiB", "working_set_MiB", "rounds",
                   "time_ms", "median_ms", "ratio_vs_torch", "fastest_ratio_vs_torch", "GBps", "median_GBps",
                   "copy_GBps", "faults_per_call", "status"]]
    facts = machine(caches, allocator, cache_mode, load)
    facts["capped"] = "; ".join(c for c in (fresh_capped, capped) if c) or (
        f"nothing: every size timed within the {BUDGET_S:g} s budget")
    header = "".join(f"# {k}: {v}\n" for k, v in facts.items())
    if os.environ.get("BENCH_HEADLINE_ONLY") == "1":
        report(frame)
        print("\nBENCH_HEADLINE_ONLY=1: nothing written")
        return 0
    OUT.write_text(header + frame.to_csv(index=False, float_format="%.6g"))
    report(frame)
    print(f"\nwrote {OUT.relative_to(ROOT)} in {time.monotonic() - started:.0f} s")
    return 0


def report(frame) -> None:
    pre = frame[frame.outputs == "preallocated"]
    head = pre[(pre.rows == HEADLINE[0]) & (pre.width == HEADLINE[1])]
    m, n = HEADLINE
    print(f"\nAt {m} x {n} float32 on {THREADS} threads, time relative to torch's kernel in the same run "
          f"(median of {HEADLINE_ROUNDS} interleaved rounds; in brackets: fastest round over fastest round):")
    shown = head[head.direction != "copy"].copy()
    shown["ratio"] = [f"{a:.2f} ({b:.2f})" for a, b in zip(shown.ratio_vs_torch, shown.fastest_ratio_vs_torch,
                                                           strict=True)]
    table = shown.pivot(index="implementation", columns="direction", values="ratio").fillna("")
    print(table.to_string())
    if compiled.compile_status() != "compiled":
        print(f"\nhelpers.speed.compiled ran eagerly: {compiled.compile_status()}")
    by = head.set_index(["implementation", "direction"])
    ratio = by.loc[(COMPILED_LN, "forward+backward")]
    verdict = "within" if ratio.ratio_vs_torch <= 1.25 else "OVER"
    print(f"\n{COMPILED_LN} forward+backward: {ratio.ratio_vs_torch:.2f}x torch's ({ratio.fastest_ratio_vs_torch:.2f}x "
          f"fastest/fastest), {verdict} the 1.25x target")
    ms = {name: by.loc[(name, "backward")].median_ms for name in (ONE_PASS, SPLIT, FUSED, TORCH_KERNEL)}
    print(f"backward alone (medians): one pass {ms[ONE_PASS]:.2f} ms, split {ms[SPLIT]:.2f} ms, "
          f"fused by Inductor {ms[FUSED]:.2f} ms, torch's kernel {ms[TORCH_KERNEL]:.2f} ms")
    for direction in ("forward", "forward+backward"):
        pairs = pre[pre.direction == direction].pivot_table(index=["rows", "width"], columns="implementation",
                                                           values="median_ms")
        both = pairs[[COMPILED_RMS, COMPILED_LN]].dropna()
        rms = both[COMPILED_RMS] / both[COMPILED_LN]
        print(f"RMSNorm / LayerNorm, both compiled, {direction}: median {rms.median():.2f} over {len(rms)} sizes, "
              f"{rms.loc[HEADLINE]:.2f} at {m} x {n}")
    copy = pre[(pre.implementation == COPY) & (pre.width == n)].sort_values("MiB")
    print("copy bandwidth at width 1024 (GB/s, fastest): " +
          ", ".join(f"{r.MiB:g} MiB {r.GBps:.0f}" for r in copy.itertuples()))
    fresh = frame[frame.implementation == "copy, fresh output (x.clone())"].sort_values("MiB")
    print("fresh-output copy, minor page faults per call: " +
          ", ".join(f"{r.MiB:g} MiB {r.faults_per_call:.0f}" for r in fresh.itertuples()))


if __name__ == "__main__":
    sys.exit(main())
