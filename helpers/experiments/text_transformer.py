"""A character-level Transformer on real English prose, where no norm, Pre-LN, Post-LN, RMSNorm and
DyT part ways.

Every other Transformer experiment of the set trains on a copy task (``small_transformer``,
``deep_transformer``). The claims they test were made on language: that Post-LN needs a warm-up at
depth and Pre-LN does not (Xiong et al. 2020), that RMSNorm matches LN (Zhang & Sennrich 2019), that
DyT can replace normalisation (Zhu et al. 2025). This module declares ``text_transformer`` (read by
deep dive 13): the same :class:`~helpers.experiments.small_transformer.StackedDecoder` and training
loop (:func:`~helpers.experiments.small_transformer.trained_decoder`), fed next-character prediction
on the topics of the Python Language Reference (:mod:`~helpers.experiments.text_corpus`), every loss
in bits per character.

The model and its training, fixed before any run: width :data:`WIDTH`, :data:`HEADS` heads, contexts
of :data:`CONTEXT` characters, minibatches of :data:`BATCH` contexts, Adam (torch's defaults) with
each model's gradient clipped to norm 1; the held-out loss on :data:`HELDOUT_SIZE` fixed windows of
the held-out topics. The arms (:data:`ARMS`, as :data:`~helpers.experiments.small_transformer.ARMS`
defines them): no norm, Pre-LN, Post-LN, Post-LN with a linear warm-up over the first fifth of the
steps (twice the tenth the claim's sources call enough), Pre-RMSNorm, and DyT at ``alpha0`` 0.5 (Zhu
et al.'s default) and 2 (their rule that a narrower model takes a larger ``alpha0`` points up for a
width of 64).

**The probe, declared before it ran.** The depth, and with it the step cap, is sized by a probe
(:func:`probe`): depths :data:`PROBE_BLOCKS` x rates :data:`PROBE_RATES` x arms :data:`PROBE_ARMS`,
one seed (:data:`PROBE_SEED`, neither a pilot nor a reported seed), each depth at the step cap the
budget affords it (:func:`sized`: :data:`BLOCK_STEPS` block-steps per run, so a run of ``d`` blocks
has ``BLOCK_STEPS // d`` steps; a run costs about the same at every depth). Its rule
(:func:`probe_levels`, :func:`chosen_blocks`), stated before it ran:

- at each depth, the *reference* is the lowest final held-out loss of any probe run there, and the
  threshold lies halfway between the unigram level (:func:`~helpers.experiments.text_corpus.unigram_level`:
  what a model that learned only the characters' frequencies scores) and the reference;
- the arms *separate* at a depth where Post-LN ends at or above that threshold at Pre-LN's best rate
  (the rate of the three where Pre-LN ends lowest) and no norm ends at or above it at one of the
  three rates at least;
- the size is the shallowest depth where they separate, or the deepest if none does; its threshold
  is the experiment's, fixed before any pilot run.
"""

from __future__ import annotations

import math

import pandas as pd

from helpers.experiments import small_transformer as st
from helpers.experiments.text_corpus import text_source, unigram_level

__all__ = [
    "ARMS",
    "BATCH",
    "BLOCK_STEPS",
    "CONTEXT",
    "HEADS",
    "HELDOUT_SIZE",
    "PROBE_ARMS",
    "PROBE_BLOCKS",
    "PROBE_FILE",
    "PROBE_RATES",
    "PROBE_SEED",
    "WIDTH",
    "chosen_blocks",
    "probe",
    "probe_levels",
    "probe_table",
    "sized",
    "text_runs",
]

#: The model and its data: width, heads (the MLP has 4 width units), characters read, contexts per
#: minibatch, held-out windows.
WIDTH, HEADS, CONTEXT, BATCH, HELDOUT_SIZE = 64, 4, 64, 16, 64

#: The arms, named as :data:`helpers.experiments.small_transformer.ARMS` names them.
ARMS = ("no norm", "Pre-LN", "Post-LN", "Post-LN + warm-up", "Pre-RMSNorm", "DyT, alpha0 0.5", "DyT, alpha0 2")

#: Blocks times steps of one run: the budget's share of one run. Timed before the probe (3 models
#: stacked, 2 such processes at a time on the 2 cores, other work sharing them: load average 2 to 3),
#: one block of one model costs about 40 ms a step, and 24 held-out evaluations of 64 windows about
#: 31 steps' worth. The protocol trains about 406 runs (7 arms x 6 rates x 3 pilot seeds, 70 reported,
#: 7 x 3 checked rates x 10 seeds); 5 core-hours less a sixth for the worst case (4 checked rates an
#: arm, 476 runs) leaves about 37 s a run, ``d (steps + 31)`` block-steps at 40 ms, so 720 block-steps
#: of training at depths 4 to 12.
BLOCK_STEPS = 720

#: The probe: its depths, rates, arms and seed.
PROBE_BLOCKS = (4, 8, 12)
PROBE_RATES = (1e-3, 3e-3, 1e-2)
PROBE_ARMS = ("no norm", "Pre-LN", "Post-LN")
PROBE_SEED = 900

#: The probe's table, shipped as package data (``helpers/data``).
PROBE_FILE = "text_transformer_probe.csv"


def sized(blocks: int) -> dict[str, int]:
    """What a run of ``blocks`` blocks is trained with besides its arm, rate and seeds:
    ``steps = BLOCK_STEPS // blocks``, at most 24 held-out evaluations after the first (``eval_every =
    ceil(steps / 24)``) and a warm-up over a fifth of the steps (for the arms that warm up)."""
    steps = BLOCK_STEPS // blocks
    return {"blocks": blocks, "steps": steps, "eval_every": math.ceil(steps / 24), "warmup": steps // 5}


def text_runs(seeds=(0,), lrs=(1e-3,), *, variant: str = "Pre-LN", steps: int = 240, context: int = CONTEXT,
              width: int = WIDTH, blocks: int = 6, heads: int = HEADS, batch: int = BATCH, clip: float = 1.0,
              warmup: int = 0, eval_every: int = 10, heldout_size: int = HELDOUT_SIZE,
              progress: bool = False) -> pd.DataFrame:
    """Train a :class:`~helpers.experiments.small_transformer.StackedDecoder` of arm ``variant`` on
    next-character prediction (:func:`~helpers.experiments.text_corpus.text_source` with ``context``
    and ``heldout_size``): one rate of ``lrs`` per model, as
    :func:`~helpers.experiments.small_transformer.copy_runs` trains on the copy task.

    Returns:
        One row per (step, model), as :func:`~helpers.experiments.small_transformer.copy_runs`, with
        ``loss`` and ``eval_loss`` in bits per character (nats / ln 2).
    """
    _, frame = st.trained_decoder(seeds, lrs, variant=variant, steps=steps, width=width, blocks=blocks,
                                  heads=heads, batch=batch, clip=clip, warmup=warmup, eval_every=eval_every,
                                  progress=progress, task=text_source(context, heldout_size))
    return frame.assign(loss=frame["loss"] / math.log(2), eval_loss=frame["eval_loss"] / math.log(2))


# ------------------------------------------------------------------ the probe


def _probe_unit(blocks: int, arm: str) -> pd.DataFrame:
    """One unit of the probe: ``arm`` at ``blocks`` blocks, every probe rate, the probe seed, on one
    thread. One row per run: its size, ``variant``, ``lr``, ``seed``, ``final`` (the held-out loss
    after the last step, ``inf`` where it diverged), ``lowest`` (the lowest held-out loss it
    reached) and ``unit_wall_s`` (the unit's training time)."""
    import time

    import torch

    torch.set_num_threads(1)
    size = sized(blocks)
    start = time.perf_counter()
    frame = text_runs((PROBE_SEED,), PROBE_RATES, variant=arm, **size)
    wall = time.perf_counter() - start
    evals = frame[frame["eval_loss"].notna()]
    last = evals[evals["step"] == size["steps"]].set_index("lr")["eval_loss"]
    lowest = evals.groupby("lr")["eval_loss"].min()
    return pd.DataFrame({"blocks": blocks, "steps": size["steps"], "eval_every": size["eval_every"], "variant": arm,
                         "lr": list(PROBE_RATES), "seed": PROBE_SEED,
                         "final": [last[lr] for lr in PROBE_RATES], "lowest": [lowest[lr] for lr in PROBE_RATES],
                         "unit_wall_s": round(wall, 1)})


def probe(jobs: int = 2) -> pd.DataFrame:
    """Run the probe: one unit per (depth, arm) of :data:`PROBE_BLOCKS` x :data:`PROBE_ARMS`, each
    its three rates stacked, ``jobs`` units at a time in worker processes (spawned; one thread
    each). Returns the table :func:`_probe_unit` makes, depth by depth."""
    import multiprocessing
    from concurrent.futures import ProcessPoolExecutor

    units = [(blocks, arm) for blocks in PROBE_BLOCKS for arm in PROBE_ARMS]
    with ProcessPoolExecutor(max_workers=jobs, mp_context=multiprocessing.get_context("spawn")) as pool:
        frames = list(pool.map(_probe_unit, *zip(*units, strict=True)))
    return pd.concat(frames, ignore_index=True)


def probe_table() -> pd.DataFrame:
    """The probe's stored table (:data:`PROBE_FILE`, package data): one row per probe run."""
    import importlib.resources

    with (importlib.resources.files("helpers") / "data" / PROBE_FILE).open("rb") as f:
        return pd.read_csv(f, comment="#")


def probe_levels(table: pd.DataFrame, unigram: float) -> pd.DataFrame:
    """The probe's rule, depth by depth, on its ``table`` (:func:`probe_table`) and the held-out
    ``unigram`` level (bits per character).

    Returns:
        One row per depth: ``blocks``, ``steps``, ``reference`` (the lowest final loss of any probe
        run there), ``threshold`` (halfway between ``unigram`` and the reference), ``pre_ln_best`` (the
        rate where Pre-LN ends lowest), ``post_ln_there`` (Post-LN's final loss at that rate),
        ``no_norm_worst`` (no norm's highest final loss over the rates) and ``separates`` (Post-LN at
        or above the threshold there, and no norm at or above it at one rate at least).
    """
    rows = []
    for blocks, runs in table.groupby("blocks"):
        final = runs.set_index(["variant", "lr"])["final"]
        reference = float(runs["final"].min())
        threshold = (unigram + reference) / 2
        pre = final["Pre-LN"]
        best = float(pre.idxmin())
        post, worst = float(final["Post-LN"][best]), float(final["no norm"].max())
        rows.append({"blocks": int(blocks), "steps": int(runs["steps"].iloc[0]), "reference": reference,
                     "threshold": threshold, "pre_ln_best": best, "post_ln_there": post, "no_norm_worst": worst,
                     "separates": bool(post >= threshold and worst >= threshold)})
    return pd.DataFrame(rows)


def chosen_blocks(levels: pd.DataFrame) -> int:
    """The probe's choice (``levels``: :func:`probe_levels`): the shallowest depth where the arms
    separate, or the deepest probed if they separate nowhere."""
    apart = levels.loc[levels["separates"], "blocks"]
    return int(apart.min() if len(apart) else levels["blocks"].max())


if __name__ == "__main__":
    # python -m helpers.experiments.text_transformer PATH: run the probe, write its table to PATH and
    # print the rule's result (the declaration's constants come from it).
    import os
    import sys

    from helpers.evidence.runner import fingerprint

    load = " ".join(f"{x:.2f}" for x in os.getloadavg())  # other work sharing the cores slows every unit
    table = probe()
    machine = fingerprint()
    with open(sys.argv[1], "w", encoding="utf-8") as f:
        f.write(f"# the probe of text_transformer: torch {machine['torch']}, {machine['cpu']}, one thread per unit, "
                f"2 units at a time; load average before it {load}\n")
        table.to_csv(f, index=False)
    levels = probe_levels(table, unigram_level(text_source(CONTEXT, HELDOUT_SIZE).heldout))
    print(table.to_string(), levels.to_string(), f"chosen: {chosen_blocks(levels)} blocks", sep="\n\n")
