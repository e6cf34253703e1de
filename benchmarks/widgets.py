"""How long each dashboard takes to redraw after a control moves: compute, draw, PNG.

Run alone with ``python benchmarks/widgets.py`` (about half a minute), or as the first part of
``make bench``. Every dashboard of :mod:`helpers.widgets` is built as its notebook builds it,
without a kernel (a dashboard's callbacks are plain functions), then for every control a few
values are set one after the other; each set runs the whole redraw that a learner waits for (the
state, the figure's update, the PNG and the table) and is timed with ``perf_counter``.
Per dashboard it prints the median and the largest redraw over all its controls, and the median
per control. The goal (DESIGN.md, "Notebook conventions"): a median of at most 100 ms.

The cores may be shared, so times are noisy: ``ROUNDS`` passes over the values are made and the
median is the summary; the max shows the worst single redraw seen. Beside the wall-clock median
(what a learner waits) it prints the median CPU time of the process, which other work on the
machine hardly changes, and the load average while it ran: when the load is above the number of
cores, the wall-clock times are inflated by waiting for a core.
"""

from __future__ import annotations

import os
import pathlib
import statistics
import sys
import time

import matplotlib

matplotlib.use("Agg")

ROOT = pathlib.Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

ROUNDS = int(os.environ.get("BENCH_WIDGET_ROUNDS", "3"))
TARGET_MS = 100.0


def dashboards() -> dict:
    """``name -> (build, {control: values to set, in order})``; each build returns a Dashboard."""
    from helpers import widgets

    def placement_runs():
        from helpers.evidence import runner

        return widgets.stored_runs_demo(runner.load("placement_tuned").frame)

    def speed():
        from helpers.experiments.training_speed_table import evidence_table

        return widgets.speed_demo(evidence_table())

    def speed_values(demo):
        settings = demo.controls["setting"].options
        return {"setting": [settings[-2], settings[3], settings[0]], "rate": [0.01, 0.1, "tuned"],
                "arm": ["LayerNorm", "no norm", "all arms"], "noise": [0.5, 1.0, 0.0],
                "measure": ["drift of unit means", "ICS (Santurkar)", "held-out loss"]}

    from helpers.widgets.activation_input import activation_input_demo
    from helpers.widgets.deep_stack import deep_stack_demo
    from helpers.widgets.residual_stream import residual_stream_demo
    from helpers.widgets.token_or_sentence import UNITS, token_or_sentence_demo

    return {
        "core 00 deep_stack_demo": (deep_stack_demo, {"gain": [0.5, 2.0, 1.0], "gamma": [2.0, 0.5, 1.0],
                                                      "beta": [0.5, -1.0, 0.0]}),
        "core 01 activation_input": (activation_input_demo, {"activation": ["ReLU", "GELU", "tanh"],
                                                             "shift": [2.0, -3.0, 0.0], "scale": [3.0, 0.5, 1.0]}),
        "deep 16 token_or_sentence": (token_or_sentence_demo, {"unit": [*reversed(UNITS)], "scale": [5.0, 8.0, 1.0]}),
        "core 02 residual_stream": (residual_stream_demo, {"norm": ["RMSNorm", "no norm", "LayerNorm"],
                                                           "branch_scale": [2.0, 0.5, 1.0]}),
        "deep 11 other_samples_demo": (lambda: widgets.other_samples_demo(seed=0),
                                       {"shift": [0.5, -3.0, 0.0], "scale": [1.25, 3.0, 1.0]}),
        "deep 12 placement_demo": (widgets.placement_demo,
                                   {"activation": ["relu", "tanh"], "placement": ["no norm", "act -> LN", "LN -> act"],
                                    "depth": [16, 4, 8]}),
        "deep 12 stored_runs_demo": (placement_runs, {"activation": ["relu", "gelu", "tanh"],
                                                      "arrangement": ["act -> LN", "no norm", "all"],
                                                      "rate": [0.01, 0.001, "tuned"]}),
        "deep 13 speed_demo": (speed, speed_values),
        "deep 14 stability_demo": (widgets.stability_demo,
                                   {"offset": [1.0, 1e6, 1e4], "scale": [1.0, 1e-4, 1e-2],
                                    "dtype": ["float16", "bfloat16", "float32"], "eps": [1e-2, 1e-12, 1e-5]}),
        "deep 15 norm_family_demo": (widgets.norm_family_demo,
                                     {"norm": ["GroupNorm", "BatchNorm", "InstanceNorm", "RMSNorm", "LayerNorm"],
                                      "groups": [3, 6, 2], "sample": [2, 1, 0], "channel": [4, 1, 0],
                                      "position": [3, 1, 0]}),
        "deep 15 ln_geometry_demo": (widgets.ln_geometry_demo,
                                     {"azimuth": [40.0, 120.0, -25.0], "elevation": [-30.0, 60.0, 20.0],
                                      "x": [-1.0, 2.0, 1.0], "scale": [2.0, 0.25, 1.0], "offset": [1.5, -1.5, 0.0],
                                      "gamma": [1.5, 0.0, 1.0], "eps": [1.0, 1e-3, 1e-5]}),
    }


def time_dashboard(build, values) -> tuple[dict[str, list[float]], list[float]]:
    """Per control, the redraw times (ms) of setting each of its values, ``ROUNDS`` times over;
    and the CPU times (ms) of the same redraws, all controls together."""
    import matplotlib.pyplot as plt

    demo = build()
    if callable(values):
        values = values(demo)
    times: dict[str, list[float]] = {name: [] for name in values}
    cpu: list[float] = []
    for _ in range(ROUNDS):
        for name, settings in values.items():
            control = demo.controls[name]
            for value in settings:
                if control.value == value:
                    continue
                start, start_cpu = time.perf_counter(), time.process_time()
                control.value = value  # the observer redraws synchronously
                times[name].append((time.perf_counter() - start) * 1e3)
                cpu.append((time.process_time() - start_cpu) * 1e3)
    plt.close("all")
    return times, cpu


def main() -> int:
    print("Dashboard redraws (state + figure + PNG + table), ms; goal: median <= "
          f"{TARGET_MS:.0f} ms. {ROUNDS} rounds per control value.")
    print(f"{'dashboard':<26} {'median':>7} {'max':>7} {'cpu':>6}   median per control")
    worst, load = 0.0, _load()
    for name, (build, values) in dashboards().items():
        times, cpu = time_dashboard(build, values)
        every = [t for ts in times.values() for t in ts]
        median = statistics.median(every)
        worst = max(worst, median)
        per_control = ", ".join(f"{c} {statistics.median(ts):.0f}" for c, ts in times.items() if ts)
        flag = "" if median <= TARGET_MS else "  (over the goal)"
        print(f"{name:<26} {median:7.1f} {max(every):7.1f} {statistics.median(cpu):6.1f}   "
              f"{per_control}{flag}", flush=True)
    print(f"slowest dashboard median: {worst:.1f} ms; load average {load} -> {_load()} "
          f"on {os.cpu_count()} logical CPUs")
    return 0


def _load() -> str:
    try:
        return f"{os.getloadavg()[0]:.1f}"
    except OSError:  # not on this platform
        return "?"


if __name__ == "__main__":
    sys.exit(main())
