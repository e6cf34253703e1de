"""Core notebook 02's picture of a Transformer block, drawn from the block's own code.

:func:`block_diagrams_figure` traces each block's ``forward`` with ``torch.fx`` (every sub-module a
leaf), then draws its steps left to right: the input, each sub-module called (by its attribute name,
a norm in orange), each ``+`` of a residual connection, the output. An arrow joins a step to the one
it reads from; a residual connection that skips steps is an arc above them. So the picture cannot
disagree with the code it was drawn from.
"""

from __future__ import annotations

import operator

import matplotlib.pyplot as plt
import torch
from matplotlib.figure import Figure
from matplotlib.patches import FancyArrowPatch, FancyBboxPatch
from torch import nn

from helpers.plots.core import DPI

__all__ = ["block_steps", "block_diagrams_figure"]

NORM_COLOUR = "#f4a259"
OTHER_COLOUR = "#dfe7f2"


class _EverySubmoduleALeaf(torch.fx.Tracer):
    def is_leaf_module(self, m: nn.Module, module_qualified_name: str) -> bool:
        return True


def block_steps(block: nn.Module) -> list[tuple[str, str, list[int]]]:
    """``(label, kind, inputs)`` for each step of ``block.forward``, in order: ``kind`` is
    ``"input"``, ``"norm"`` (a module whose class name ends in ``Norm``), ``"module"``, ``"add"`` or
    ``"output"``; ``inputs`` are the indices of the steps it reads."""
    graph = _EverySubmoduleALeaf().trace(block)
    steps, index = [], {}
    for node in graph.nodes:
        reads = [index[a] for a in node.all_input_nodes if a in index]
        if node.op == "placeholder":
            steps.append((node.target, "input", []))
        elif node.op == "call_module":
            module = block.get_submodule(node.target)
            steps.append((node.target, "norm" if type(module).__name__.endswith("Norm") else "module", reads))
        elif node.op == "call_function" and node.target in (operator.add, torch.add):
            steps.append(("+", "add", reads))
        elif node.op == "output":
            steps.append(("out", "output", reads))
        else:  # a step that draws nothing (an index into a tuple, say): it stands for what it reads
            if reads:
                index[node] = reads[0]
            continue
        index[node] = len(steps) - 1
    return steps


def _draw(ax, title: str, steps: list[tuple[str, str, list[int]]]) -> None:
    ax.set_xlim(-0.7, len(steps) - 0.3)
    ax.set_ylim(-0.8, 1.6)
    ax.axis("off")
    ax.set_title(title, loc="left", fontsize=12)
    for i, (label, kind, reads) in enumerate(steps):
        if kind == "add":
            ax.add_patch(FancyBboxPatch((i - 0.18, -0.25), 0.36, 0.5, boxstyle="circle,pad=0", fc="white", ec="0.2"))
        elif kind in ("input", "output"):
            pass
        else:
            ax.add_patch(FancyBboxPatch((i - 0.38, -0.3), 0.76, 0.6, boxstyle="round,pad=0.02",
                                        fc=NORM_COLOUR if kind == "norm" else OTHER_COLOUR, ec="0.3"))
        ax.text(i, 0, label, ha="center", va="center", fontsize=11, gid=f"step {i}")
        for j in reads:
            if j == i - 1:
                ax.add_patch(FancyArrowPatch((j + 0.4, 0), (i - 0.4, 0), arrowstyle="-|>", mutation_scale=12, color="0.3"))
            else:  # a residual connection: an arc over the steps it skips
                ax.add_patch(FancyArrowPatch((j + 0.12, 0.32), (i - 0.1, 0.28), connectionstyle="arc,angleA=90,angleB=90,armA=40,armB=40,rad=8",
                                             arrowstyle="-|>", mutation_scale=12, color="C0", gid=f"skip {j}-{i}"))


def block_diagrams_figure(blocks: dict[str, nn.Module], *, figsize: tuple[float, float] = (12, 4.4),
                          dpi: int = DPI) -> Figure:
    """One row per block, ``{title: block}``: its steps traced from its code (:func:`block_steps`)."""
    fig, axes = plt.subplots(len(blocks), 1, squeeze=False, figsize=figsize, dpi=dpi, layout="constrained")
    axes = axes[:, 0]
    for ax, (title, block) in zip(axes, blocks.items(), strict=True):
        _draw(ax, title, block_steps(block))
    return fig
