"""The stored `make bench` results, deep dive 14's figures and its stability dashboard."""

from __future__ import annotations

import math
import pathlib

import pytest

from helpers.lessons.memory_and_speed import (
    RESULTS_NAME,
    load_results,
    saved_bytes_table,
)
from helpers.plots import bandwidth_figure, saved_bytes_figure
from helpers.plots.core import find_line
from helpers.plots.memory_and_speed import stability_figure
from helpers.widgets import stability_demo
from helpers.widgets.numerics import stability_state

ROOT = pathlib.Path(__file__).resolve().parents[1]
CSV = ROOT / "helpers" / "data" / RESULTS_NAME  # what make bench writes: the file the package ships


def test_results_cover_the_grid_with_machine_and_ratios():
    frame, meta = load_results()
    assert {"cpu", "threads", "torch", "note", "caches (cpu0, read at run time)", "cache mode", "outputs",
            "rounds", "columns"} <= set(meta)
    assert meta["compile"] == "compiled"
    assert set(frame.width) == {64, 128, 256, 512, 1024, 2048, 4096, 8192}
    ok = frame[(frame.status == "ok") & (frame.outputs == "preallocated")]
    # from inside the L1 cache to a copy working set of 4x the last-level cache
    llc = int(meta["caches (cpu0, read at run time)"].split()[-1].removesuffix("K")) / 1024
    copies = ok[ok.direction == "copy"]
    assert copies.working_set_MiB.min() <= 0.03 and copies.working_set_MiB.max() >= 4 * llc
    for name in ("naive composition", "helpers.layer_norm", "LayerNormFunction", "torch (F.layer_norm)",
                 "CompiledLayerNormFunction", "torch (F.rms_norm)", "helpers.rms_norm", "CompiledRMSNormFunction",
                 "torch.compile(helpers.layer_norm)", "torch.compile(helpers.rms_norm)"):
        assert set(ok[ok.implementation == name].direction) >= {"forward", "forward+backward"}, name
    torch_rows = ok[ok.implementation == "torch (F.layer_norm)"]
    assert (torch_rows.ratio_vs_torch == 1).all() and (torch_rows.fastest_ratio_vs_torch == 1).all()
    # the dense sweep: torch and the compiled path at every width and size
    for name in ("torch (F.layer_norm)", "CompiledLayerNormFunction", "copy (y.copy_(x))"):
        assert len(ok[ok.implementation == name].groupby(["rows", "width"])) == len(ok.groupby(["rows", "width"]))
    head = ok[(ok.rows == 4096) & (ok.width == 1024)]
    assert (head.rounds >= 20).all() and (ok.rounds >= 10).all()
    assert {"compiled backward, split (dx; block partial sums)", "compiled backward, fused by Inductor (one graph)",
            "torch kernel (native_layer_norm_backward)"} <= set(head[head.direction == "backward"].implementation)
    assert (ok.median_ms >= ok.time_ms).all()
    assert (copies.GBps > 0).all() and ok.copy_GBps.notna().all()


def test_reused_outputs_take_no_page_faults_and_fresh_ones_do_past_the_mmap_threshold():
    frame, _ = load_results()
    reused = frame[(frame.outputs == "preallocated") & (frame.status == "ok")]
    assert reused.faults_per_call.median() == 0 and (reused.faults_per_call < 100).mean() > 0.95
    fresh = frame[frame.implementation == "copy, fresh output (x.clone())"].set_index("MiB")
    big = fresh[fresh.index >= 32]  # glibc maps each allocation of 32 MiB or more afresh
    assert len(big) and (big.faults_per_call >= 0.9 * big.index * 256).all()  # every 4 KiB page, every call


def test_load_results_reads_the_packages_file_from_any_folder(monkeypatch, tmp_path):
    monkeypatch.chdir(tmp_path)  # no checkout above: as in Colab, where the package is installed
    frame, meta = load_results()
    assert CSV.read_text().startswith(f"# cpu: {meta['cpu']}\n")
    assert len(frame) == sum(1 for line in CSV.read_text().splitlines() if not line.startswith("#")) - 1


def test_bandwidth_figure_plots_each_implementation_and_the_copy_ceiling():
    frame, _ = load_results()
    fig = bandwidth_figure(frame)
    right = fig.axes[1]
    copy = find_line(right, "copy")
    expected = frame[(frame.width == 1024) & (frame.direction == "copy") & (frame.outputs == "preallocated")
                     ].sort_values("MiB").GBps
    assert list(copy.get_ydata()) == pytest.approx(list(expected))
    assert len(find_line(right, "LayerNormFunction").get_xdata()) == 3  # 0.25, 4 and 16 MiB
    assert len(find_line(right, "CompiledLayerNormFunction").get_xdata()) == len(expected)  # the dense sweep


def test_saved_bytes_figure_has_one_bar_per_implementation():
    table = saved_bytes_table()
    fig = saved_bytes_figure(table)
    bars = fig.axes[0].patches
    assert [b.get_width() for b in bars] == pytest.approx(list(table["new bytes"] / 1024))
    assert len(bars) == 4 and table.index.tolist() == [
        "naive composition", "helpers.layer_norm", "LayerNormFunction", "torch (F.layer_norm)"]


@pytest.mark.parametrize("control,value", [("offset", 1.0), ("scale", 1.0), ("dtype", "bfloat16"), ("eps", 0.1)])
def test_every_control_changes_the_state(control, value):
    base = stability_state()
    changed = stability_state(**{control: value})
    assert changed["ln_error"] != base["ln_error"]


def test_default_state_shows_the_one_pass_nan_and_stable_algorithms_bounded():
    state = stability_state()
    assert math.isnan(state["ln_error"]["one-pass E[x²]−E[x]²"])
    assert state["ln_error"]["two-pass"] < 0.2 and state["ln_error"]["Welford + Chan"] < 0.2
    moderate = stability_state(offset=1.0, scale=1.0)
    assert max(moderate["ln_error"].values()) < 1e-5


def test_stability_figure_draws_nan_as_a_tall_bar():
    fig = stability_figure(stability_state())
    heights = [b.get_height() for b in fig.axes[0].patches]
    assert heights[0] == 1e3 and heights[1] < 1


def test_dashboard_redraws_on_every_control():
    demo = stability_demo()
    for name, value in [("offset", 1.0), ("scale", 1.0), ("dtype", "float16"), ("eps", 1e-2)]:
        before = demo.image.value
        demo.controls[name].value = value
        assert demo.state[name] == value
        assert demo.image.value != before, name


def test_bandwidth_figure_says_fastest_and_keeps_the_legend_off_the_data():
    frame, _ = load_results()
    fig = bandwidth_figure(frame)
    left, right = fig.axes
    assert "fastest" in left.get_ylabel() and "median" not in left.get_ylabel()
    expected = frame[(frame.width == 1024) & (frame.direction == "forward+backward")
                     & (frame.implementation == "LayerNormFunction")].sort_values("MiB").time_ms
    assert list(find_line(left, "LayerNormFunction").get_ydata()) == pytest.approx(list(expected))
    assert left.get_legend() is None and right.get_legend() is None  # one legend, on the figure
    fig.canvas.draw()
    legend = fig.legends[0].get_window_extent()
    assert not any(legend.overlaps(ax.get_window_extent()) for ax in fig.axes)


def test_saved_bytes_figure_is_linear_and_states_the_ratios():
    table = saved_bytes_table()
    fig = saved_bytes_figure(table)
    ax = fig.axes[0]
    assert ax.get_xscale() == "linear"
    new = table["new bytes"].astype(float)
    ratios = [f"({v / new[new > 0].min():.0f}x)" for v in new]
    assert [t.get_text().split()[-1] for t in ax.texts] == ratios


def test_count_full_passes_lists_the_eager_backward_and_torchs_single_kernel():
    import torch.nn.functional as F

    from helpers import LayerNormFunction
    from helpers.lessons.memory_and_speed import count_full_passes

    ops = count_full_passes(LayerNormFunction.apply)
    assert len(ops) == 12  # the number helpers/autograd.py's docstring states
    assert ops[:2] == ["sub", "mul_"] and ops.count("mv") == 2 and ops.count("sum") == 2
    assert count_full_passes(F.layer_norm) == ["native_layer_norm_backward"]
    assert count_full_passes(LayerNormFunction.apply, rows=8, width=16) == ops  # the same ops at any shape


def test_partial_sums_figure_outlines_the_blocks_and_shows_both_stages():
    import torch

    from helpers.lessons.param_grad_reduction import block_partial_sums
    from helpers.plots.memory_and_speed import partial_sums_figure

    values = torch.randn(12, 8, generator=torch.Generator().manual_seed(0), dtype=torch.float64)
    fig = partial_sums_figure(values, block_rows=4)
    left, middle, right = fig.axes
    assert len([line for line in left.get_lines() if line.get_gid() == "block edge"]) == 2
    assert middle.images[0].get_array().shape == (3, 8)
    assert (middle.images[0].get_array() == block_partial_sums(values, 4).numpy()).all()
    assert right.images[0].get_array().shape == (1, 8)


def test_cache_sizes_are_read_from_the_machine(monkeypatch, tmp_path):
    from helpers.lessons.memory_and_speed import cache_sizes

    for index, (level, kind, size) in enumerate([(1, "Data", "32K"), (1, "Instruction", "32K"),
                                                  (2, "Unified", "1024K"), (3, "Unified", "32768K")]):
        folder = tmp_path / "cpu0" / "cache" / f"index{index}"
        folder.mkdir(parents=True)
        (folder / "level").write_text(f"{level}\n")
        (folder / "type").write_text(f"{kind}\n")
        (folder / "size").write_text(f"{size}\n")
    real_path = pathlib.Path
    monkeypatch.setattr("helpers.lessons.memory_and_speed.pathlib.Path",
                        lambda p: tmp_path / p.removeprefix("/sys/devices/system/cpu/") if str(p).startswith("/sys")
                        else real_path(p))
    assert cache_sizes() == {"L1d": 32 * 2**10, "L2": 2**20, "L3": 32 * 2**20}
