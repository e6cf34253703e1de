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
steps, Pre-RMSNorm, and DyT at ``alpha0`` 0.5 (Zhu
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

What it found (:data:`PROBE_FILE`): they separate at no depth. Post-LN ends below the threshold at
Pre-LN's best rate at 4, 8 and 12 blocks; no norm fails only at 12 blocks, where it blows up at rate
0.01 (1,084 bits per character at the end). So the experiment runs at 12 blocks for 60 steps (:data:`BLOCKS`, :data:`STEPS`), with the
threshold 4.219 bits per character (:data:`THRESHOLD`) against a unigram level of 4.682.

The protocol: each arm's rate tuned on 3 pilot seeds over :data:`RATES` (the restricted mean steps to
the threshold, never a rate where a pilot run ends at or above it), 10 fresh seeds at its best rate,
and a check stage that trains those seeds at the 4 rates from one below each arm's largest stable
pilot rate to two above (:func:`text_check_rates`), so that stability is a count of seeds at one
rate; the verdicts (:func:`text_transformer_verdicts`) are those of ``deep_transformer``.

What could make an answer true by construction, and what was done about it:

- *Held-out text that was trained on.* The held-out topics are fixed by a rule on their names; no
  training window reaches into them, and the held-out windows are the same for every run.
- *Chance pairings.* The arms of one seed start from the same weights and read the same windows.
- *A threshold chosen to favour an arm.* It is fixed by the probe's rule, from the best probe run of
  any arm, before any pilot run.
- *A warm-up that delays the threshold by itself.* It lasts :data:`WARMUP` steps, a fifth of the
  cap: ramping the rate costs up to about half of that in progress, and the comparisons of Post-LN
  with warm-up against the others include that cost.

Caveats that remain:

- The budget buys 60 steps at 12 blocks: about 61,000 characters read per run, an eighth of the
  training text. The threshold is met in the first phase of learning (character frequencies, then
  pairs of characters), where the norms' effect at initialisation matters most and what they do
  late in training is not seen.
- One seed in the probe; one corpus (technical prose, much of it code); one width; Adam with torch's
  defaults and per-model clipping to norm 1 (a stabiliser common to every arm).
"""

from __future__ import annotations

import math

import numpy as np
import pandas as pd

from helpers.evidence import runner
from helpers.evidence.statistics import EQUIVALENCE_MARGIN, one_sample_ci
from helpers.evidence.verdicts import Verdict
from helpers.experiments import deep_transformer as dt
from helpers.experiments import small_transformer as st
from helpers.experiments.rnn_models import normed_vs_plain
from helpers.experiments.text_corpus import CORPUS_SHA256, text_source, unigram_level
from helpers.experiments.threshold_runs import (
    grid_resolution,
    report_rate_words,
    restricted_mean_steps,
    steps_staying_below,
    steps_to_threshold,
    time_words,
)
from helpers.experiments.training import keep_rows
from helpers.experiments.tuning_words import best_rate_words

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


# ------------------------------------------------------------------ the experiment's levels and tuning

#: The probe's choice (:func:`chosen_blocks` on :func:`probe_table`: no depth separated, so the
#: deepest) and what it fixes: the step cap, the evaluation interval and the warm-up (:func:`sized`).
BLOCKS = 12
STEPS, EVAL_EVERY, WARMUP = sized(BLOCKS)["steps"], sized(BLOCKS)["eval_every"], sized(BLOCKS)["warmup"]

#: The held-out unigram level, bits per character (:func:`~helpers.experiments.text_corpus.unigram_level`
#: on the :data:`HELDOUT_SIZE` held-out windows), and the threshold the probe's rule fixed at
#: :data:`BLOCKS` blocks before any pilot run: halfway between it and 3.756, the lowest final loss of a
#: probe run there (:func:`probe_levels`), to 4 decimals.
UNIGRAM, THRESHOLD = 4.6824, 4.2193

#: The learning-rate grid (Adam): 6 rates, neighbours a factor 10/3 or 3 apart.
RATES = (3e-4, 1e-3, 3e-3, 1e-2, 3e-2, 1e-1)

#: The seeds of the tuning runs and of the reported (and checked) runs: fresh, never a pilot seed.
PILOT_SEEDS = (100, 101, 102)
SEEDS = tuple(range(10))

#: The pairs whose stability is compared as counts (A trains at larger rates than B): LN against no
#: norm, Pre-LN against Post-LN (Xiong et al. 2020), warm-up's rescue of Post-LN (Liu et al. 2020), and
#: DyT against no norm (a replacement for the norm should keep what the norm gives).
STABILITY_PAIRS = (("Pre-LN", "no norm"), ("Pre-LN", "Post-LN"), ("Post-LN + warm-up", "Post-LN"),
                   ("DyT, alpha0 0.5", "no norm"))

#: The paired comparisons: (A, B, the claim about A). LN is claimed to speed training up; Pre-LN to
#: train faster than Post-LN, with or without its warm-up; warm-up to rescue Post-LN. RMSNorm and DyT
#: are claimed to match Pre-LN, and DyT to do without a norm's statistics what the norm does: no claim,
#: the words say which way the interval lies, and "the same" within :data:`MATCH_MARGIN`.
COMPARISONS = (("Pre-LN", "no norm", "fewer"), ("Post-LN", "no norm", "fewer"), ("Pre-LN", "Post-LN", "fewer"),
               ("Pre-LN", "Post-LN + warm-up", "fewer"), ("Post-LN + warm-up", "Post-LN", "fewer"),
               ("Pre-RMSNorm", "Pre-LN", None), ("DyT, alpha0 0.5", "Pre-LN", None), ("DyT, alpha0 2", "Pre-LN", None),
               ("DyT, alpha0 0.5", "no norm", None))

#: "The same" may be said only where the whole interval lies within ±10%, declared before any run.
MATCH_MARGIN = EQUIVALENCE_MARGIN

#: Everything a unit is trained with besides its arm, rate and seeds; ``corpus`` names the text by its
#: SHA-256, so the stored config records it and a unit refuses any other.
FIXED = {"corpus": CORPUS_SHA256, "context": CONTEXT, "width": WIDTH, "blocks": BLOCKS, "heads": HEADS,
         "batch": BATCH, "clip": 1.0, "warmup": WARMUP, "eval_every": EVAL_EVERY, "heldout_size": HELDOUT_SIZE}


def text_pilot_scores(frame: pd.DataFrame) -> pd.DataFrame:
    """The tuning's score: per (variant, lr), the restricted mean steps to :data:`THRESHOLD` over the
    seeds, with ``stable`` (every run ends below it:
    :func:`~helpers.experiments.threshold_runs.restricted_mean_steps`)."""
    return restricted_mean_steps(frame, THRESHOLD)


def text_check_rates(pilot: pd.DataFrame) -> pd.DataFrame:
    """The check stage's rates: per arm, 4 neighbouring rates from one below its largest stable pilot
    rate to two above (:func:`helpers.experiments.deep_transformer.boundary_rates` at :data:`THRESHOLD`)."""
    return dt.boundary_rates(pilot, THRESHOLD)


# ------------------------------------------------------------------ verdicts


def _final_words(finals: pd.DataFrame, arm: str) -> Verdict:
    """One arm's final held-out loss over its reported seeds: the mean with its 95% t-interval, a run
    that ends above the unigram level (or diverged) counting as that level, and how many seeds end
    below the threshold. A description: it decides no claim."""
    runs = finals[finals["variant"] == arm]
    ci = one_sample_ci(runs["final"].clip(upper=UNIGRAM).to_numpy())
    below, diverged = int((runs["final"] < THRESHOLD).sum()), int((~np.isfinite(runs["final"])).sum())
    lr = ", ".join(f"{r:g}" for r in sorted(runs["lr"].unique()))
    note = f"; {ci.note}" if ci.note else ""
    return Verdict.note(
        f"mean {ci.estimate:.3f} bits per character at lr {lr} (95% CI {ci.low:.3f} to {ci.high:.3f}{note}), a run "
        f"ending above the unigram level ({UNIGRAM:.3f}) counting as it; {below}/{len(runs)} seeds end below the "
        f"threshold ({THRESHOLD:.3f})" + (f", {diverged} with a non-finite loss" if diverged else ""))


def text_transformer_verdicts(frame: pd.DataFrame) -> dict[str, Verdict | str]:
    """The verdicts of ``text_transformer``, in words, from the stored table: those of
    :func:`helpers.experiments.deep_transformer.deep_transformer_verdicts`, from its parts, at
    :data:`THRESHOLD`.

    Per arm: ``"best rate"`` (pilot grid), ``"best rate on the report seeds"``, ``"largest stable
    rate"`` (counts on the 10 reported seeds at the checked rates), ``"time"`` and ``"steps per seed"``
    (first crossing), ``"final loss"`` (:func:`_final_words`) and ``"at Pre-LN's best rate"``.
    For each of :data:`STABILITY_PAIRS`, ``"stable seeds at the largest rate both ran, A vs B"``
    (Fisher's exact test). Paired by seed, for each of :data:`COMPARISONS`: ``"steps, A vs B"`` (the
    first crossing, with staying below to the end as its second declared measure), ``"final loss, A
    vs B"`` (the final held-out loss, capped at the unigram level: a relative difference of bits per
    character) and ``"steps per seed, A vs B"``.
    """
    cap = int(frame["step"].max())
    pilot, report = frame[frame["stage"] == "pilot"], frame[frame["stage"] == "report"]
    arms = [a for a in ARMS if a in set(frame["variant"])]
    scores = text_pilot_scores(pilot).rename(columns={"variant": "arm"})
    out: dict[str, Verdict | str] = {
        f"best rate, {arm}": words for arm, words in best_rate_words(scores, pilot, learned_below=cap).items()}
    tuned = frame[frame["stage"].isin(("pilot", "report"))]
    out.update({f"best rate on the report seeds, {arm}": words
                for arm, words in report_rate_words(tuned, cap, THRESHOLD).items()})
    checked = frame[frame["stage"].isin(("report", "check"))]
    for arm in arms:
        out[f"largest stable rate, {arm}"] = dt._stable_words(checked[checked["variant"] == arm], cap,
                                                              pilot[pilot["variant"] == arm], THRESHOLD)
    reached, finals = steps_to_threshold(report, THRESHOLD), st._finals(report, cap)
    staying = steps_staying_below(report, THRESHOLD)
    out.update({f"time, {arm}": words for arm, words in time_words(reached, cap, arms).items()})
    for arm in arms:
        out[f"steps per seed, {arm}"] = dt._per_seed_words(reached, cap, arm)
        out[f"final loss, {arm}"] = _final_words(finals, arm)
    if "Pre-LN" in arms:
        pre_best = float(report.loc[report["variant"] == "Pre-LN", "lr"].iloc[0])
        for arm in arms:
            if arm != "Pre-LN":
                out[f"at Pre-LN's best rate, {arm}"] = dt._fails_at(frame, cap, arm, pre_best, THRESHOLD)
    for a, b in STABILITY_PAIRS:
        if a in arms and b in arms:
            out[f"stable seeds at the largest rate both ran, {a} vs {b}"] = dt._stable_counts(checked, cap, a, b,
                                                                                             THRESHOLD)
    for a, b, claim in COMPARISONS:
        if a in arms and b in arms:
            margin = MATCH_MARGIN if claim is None else None
            for what, words in normed_vs_plain(
                    reached, finals, cap, a=a, b=b, final="final held-out loss (bits per character)", claim=claim,
                    nothing=UNIGRAM, nothing_name="the unigram level", noun="arm", eval_every=EVAL_EVERY,
                    steps_margin=margin, loss_margin=margin, staying=staying,
                    grid_resolution=grid_resolution(scores, (a, b))).items():
                out[f"{what}, {a} vs {b}"] = words
            out[f"steps per seed, {a} vs {b}"] = dt._paired_per_seed(reached, cap, a, b)
    return out


# ------------------------------------------------------------------ the stored experiment (make experiments)


def _text_transformer_unit(*, variant: str, lr, seeds, steps: int, corpus: str, **fixed) -> pd.DataFrame:
    """One unit of ``text_transformer``: one arm at every rate of ``lr`` (a tuple in the pilot and the
    check stage, one rate in the reported runs), for ``seeds``, stacked; refused unless ``corpus`` is
    the shipped text's SHA-256 (which :func:`~helpers.experiments.text_corpus.documents` checks)."""
    if corpus != CORPUS_SHA256:
        raise ValueError(f"text_transformer: argument 'corpus' must be {CORPUS_SHA256}, the shipped text's SHA-256, "
                         f"got {corpus!r}")
    return text_runs(seeds, lr if isinstance(lr, tuple) else (lr,), variant=variant, steps=steps, **fixed)


# How it was sized. The probe (its table in helpers/data, its rule in the module docstring) separated
# the arms at no depth: Post-LN ended below each depth's threshold at Pre-LN's best probe rate, and no
# norm failed only at 12 blocks (rate 0.01, where it blew up). By the rule, the size is the deepest,
# 12 blocks and 60 steps, and the threshold 4.219 bits per character. Its units took 38 to 77 s for 3
# runs each (2 at a time on the 2 cores, load average 2 to 3): at 12 blocks 13 to 16 s a run. Two
# pilot units of the experiment itself (18 runs each, trained side by side) took 396 and 403 s, 22 s a
# run. The protocol trains 406 runs (476 where every arm checks 4 rates), 5 seeds to a unit: about
# 8,900 s (10,700 s at most) at that pace; the budget, 5 core-hours, allows twice the likely total.
runner.register(runner.Experiment(
    name="text_transformer", notebook="13_does_it_speed_up_training", train=_text_transformer_unit,
    grid={"variant": ARMS}, seeds=SEEDS, steps=STEPS, threshold=THRESHOLD, seeds_per_unit=5, fixed=FIXED,
    summarize=text_transformer_verdicts, keep=keep_rows,
    tuning=runner.Tuning(key="lr", rates=RATES, pilot_seeds=PILOT_SEEDS, score=text_pilot_scores,
                         learned_below=STEPS, check_rates=text_check_rates),
    budget_s=18000,
    # The unit re-trained is Post-LN + warm-up's first reported unit (seeds 0 to 4 at its best rate),
    # whose first 12 steps are inside the warm-up; the bound is at least 10 times what was measured.
    repro_rtol=0.0,
    repro_atol=2e-5,
    repro_measured=1.43e-6,
    repro_unit=13))


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
