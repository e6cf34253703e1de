"""Speed of LayerNorm implementations against torch's own kernel, on this machine's CPU.

Run with ``make bench`` (a few minutes on 2 cores). It first prints how long each notebook
dashboard takes to redraw (``benchmarks/widgets.py``; skip it with ``BENCH_WIDGETS=0``). Then,
for each row width and tensor size it times, with ``torch.utils.benchmark`` and a fixed thread
count:

- the naive autograd composition, ``helpers.layer_norm`` (eager), ``LayerNormFunction``
  (eager), ``torch.compile(helpers.layer_norm)`` and torch's ``F.layer_norm``;
- ``F.rms_norm`` and ``helpers.rms_norm``, for RMSNorm against LayerNorm;
- forward, and forward+backward;
- ``y.copy_(x)``, the machine's copy bandwidth: LayerNorm's practical ceiling.

The cores are shared, and a thread that loses its core stalls a 2-thread op for a whole
scheduler slice (about 10 ms), so the implementations are timed in ``ROUNDS`` interleaved
rounds and the fastest per-run time of all the blocks is kept (timeit's advice: the
minimum is the least disturbed estimate); the median is recorded beside it.

Bytes-moved model (``helpers.speed.bytes_moved``): forward reads x and writes y (2 passes);
backward reads x and dy and writes dx (3 more); GB/s = those bytes / the fastest time.
It prints each time's ratio to torch's in the same run and writes
``benchmarks/results/layernorm_cpu.csv`` (plus the copy inside the package that Colab
reads), headed by ``# key: value`` lines that describe the machine.
"""

from __future__ import annotations

import datetime
import os
import pathlib
import platform
import shutil
import sys
import time

import torch
import torch.nn.functional as F
from torch.utils import benchmark

ROOT = pathlib.Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
import helpers  # noqa: E402
from helpers.speed import RESULTS_NAME, bytes_moved, naive_layer_norm  # noqa: E402

THREADS = int(os.environ.get("BENCH_THREADS", "2"))
WIDTHS = (64, 1024, 8192)
NUMELS = (1 << 16, 1 << 22, 1 << 24)  # 256 KiB (in L2), 16 MiB (4096 x 1024), 64 MiB, in float32
COMPILE_NUMELS = (1 << 22,)  # torch.compile recompiles per shape: only the headline size
MIN_RUN_TIME = float(os.environ.get("BENCH_MIN_RUN_TIME", "0.03"))
ROUNDS = int(os.environ.get("BENCH_ROUNDS", "5"))
OUT = ROOT / "benchmarks" / "results" / RESULTS_NAME
PACKAGE_COPY = ROOT / "helpers" / "data" / RESULTS_NAME


def machine() -> dict:
    cpu = platform.processor() or platform.machine()
    caches = {}
    try:
        for line in open("/proc/cpuinfo"):
            if line.startswith("model name"):
                cpu = line.split(":", 1)[1].strip()
                break
        for index in pathlib.Path("/sys/devices/system/cpu/cpu0/cache").glob("index*"):
            level = (index / "level").read_text().strip()
            kind = (index / "type").read_text().strip()
            if kind != "Instruction":
                caches[f"L{level}"] = (index / "size").read_text().strip()
    except OSError:
        pass
    return {"cpu": cpu, "logical cpus": os.cpu_count(), "threads": THREADS,
            "caches per core (cpu0)": " ".join(f"{k} {v}" for k, v in sorted(caches.items())),
            "torch": torch.__version__, "python": platform.python_version(),
            "date": datetime.date.today().isoformat(),
            "note": "cores shared with other jobs while measured: times are noisy; time_ms is the fastest run",
            "bytes model": "forward reads x and writes y; backward reads x and dy and writes dx"}


def make_compiled():
    try:
        compiled = torch.compile(helpers.layer_norm, dynamic=False)
        x = torch.randn(8, 64, requires_grad=True)
        compiled(x, (64,)).sum().backward()
        return compiled, ""
    except Exception as error:  # no C++ compiler, unsupported platform: record and go on
        return None, f"{type(error).__name__}: {str(error).splitlines()[0][:120]}"


def best_of(timer: benchmark.Timer) -> tuple[float, float]:
    """(fastest per-run time, median of the rounds' medians), in seconds, over ``ROUNDS`` rounds."""
    runs = [timer.blocked_autorange(min_run_time=MIN_RUN_TIME) for _ in range(ROUNDS)]
    return min(min(r.times) for r in runs), sorted(r.median for r in runs)[len(runs) // 2]


def widget_redraws() -> None:
    """``benchmarks/widgets.py``: every dashboard's redraw times, printed (nothing is written)."""
    import importlib.util

    spec = importlib.util.spec_from_file_location("widget_redraws", ROOT / "benchmarks" / "widgets.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    module.main()
    print(flush=True)


def main() -> int:
    if os.environ.get("BENCH_WIDGETS", "1") != "0":
        widget_redraws()
    torch.set_num_threads(THREADS)
    torch.manual_seed(0)
    compiled, compile_error = make_compiled()
    impls = {
        "naive composition": naive_layer_norm,
        "helpers.layer_norm": helpers.layer_norm,
        "LayerNormFunction": helpers.LayerNormFunction.apply,
        "torch.compile(helpers.layer_norm)": compiled,
        "torch (F.layer_norm)": F.layer_norm,
        "torch (F.rms_norm)": lambda x, s, w, b, eps: F.rms_norm(x, s, w, eps),
        "helpers.rms_norm": lambda x, s, w, b, eps: helpers.rms_norm(x, s, w, eps),
    }
    rows, started = [], time.monotonic()
    for numel in NUMELS:
        for width in WIDTHS:
            m = numel // width
            x = torch.randn(m, width)
            w, b = torch.randn(width), torch.randn(width)
            dy = torch.randn(m, width)
            y = torch.empty_like(x)
            copy = benchmark.Timer("y.copy_(x)", globals={"x": x, "y": y}, num_threads=THREADS)
            t, median = best_of(copy)
            rows.append(dict(implementation="copy (y.copy_(x))", direction="copy", rows=m, width=width,
                             time_ms=t * 1e3, median_ms=median * 1e3, GBps=2 * numel * 4 / t / 1e9,
                             status="ok"))
            for direction in ("forward", "forward+backward"):
                timers, failed = {}, {}
                for name, fn in impls.items():
                    if fn is None:
                        failed[name] = f"skipped: torch.compile failed ({compile_error})"
                        continue
                    if name.startswith("torch.compile") and numel not in COMPILE_NUMELS:
                        failed[name] = "skipped: compiled at the headline size only"
                        continue
                    xs, ws, bs = (t.clone().requires_grad_(direction != "forward") for t in (x, w, b))

                    def step(fn=fn, xs=xs, ws=ws, bs=bs, dy=dy, width=width, direction=direction):
                        if direction == "forward":
                            with torch.no_grad():
                                return fn(xs, (width,), ws, bs, 1e-5)
                        out = fn(xs, (width,), ws, bs, 1e-5)
                        return torch.autograd.grad(out, (xs, ws, bs), dy, allow_unused=True)

                    try:
                        step()  # warm-up (and compilation)
                        timers[name] = benchmark.Timer("step()", globals={"step": step}, num_threads=THREADS)
                    except Exception as error:
                        failed[name] = f"failed: {type(error).__name__}"
                # Rounds interleave the implementations, so a burst of load elsewhere hits all alike.
                runs = {name: [] for name in timers}
                for _ in range(ROUNDS):
                    for name, timer in timers.items():
                        runs[name].append(timer.blocked_autorange(min_run_time=MIN_RUN_TIME))
                torch_time = min(min(r.times) for r in runs["torch (F.layer_norm)"])
                for name in impls:
                    row = dict(implementation=name, direction=direction, rows=m, width=width)
                    if name in failed:
                        rows.append(dict(row, time_ms=float("nan"), GBps=float("nan"), status=failed[name]))
                        continue
                    t = min(min(r.times) for r in runs[name])
                    median = sorted(r.median for r in runs[name])[ROUNDS // 2]
                    rows.append(dict(row, time_ms=t * 1e3, median_ms=median * 1e3,
                                     GBps=bytes_moved(m, width, 4, direction) / t / 1e9,
                                     ratio_vs_torch=t / torch_time, status="ok"))
            print(f"{m:>7} x {width:<5} done ({time.monotonic() - started:.0f} s)", flush=True)

    import pandas as pd

    frame = pd.DataFrame(rows)
    frame["MiB"] = frame["rows"] * frame["width"] * 4 / 2**20
    frame = frame[["implementation", "direction", "rows", "width", "MiB", "time_ms", "median_ms", "GBps",
                   "ratio_vs_torch", "status"]]
    header = "".join(f"# {k}: {v}\n" for k, v in machine().items())
    OUT.parent.mkdir(parents=True, exist_ok=True)
    OUT.write_text(header + frame.to_csv(index=False, float_format="%.6g"))
    PACKAGE_COPY.parent.mkdir(parents=True, exist_ok=True)
    shutil.copyfile(OUT, PACKAGE_COPY)

    head = frame[(frame.rows == 4096) & (frame.width == 1024) & (frame.direction != "copy")]
    print("\nAt 4096 x 1024 float32, time relative to torch's kernel measured in the same run:")
    print(head.pivot(index="implementation", columns="direction", values="ratio_vs_torch").round(2).to_string())
    print(f"\nwrote {OUT.relative_to(ROOT)} in {time.monotonic() - started:.0f} s")
    return 0


if __name__ == "__main__":
    sys.exit(main())
