"""Wall-clock, not just steps: what one training step of each arm costs, and the time to the threshold.

LN costs time per step (two reductions and an extra pass over each layer's summed inputs), so
"LN needs fewer steps" and "LN trains faster" are different claims. The stored experiment
``step_times`` times one training step (minibatch, forward, backward, clipping, Adam) of a single
model of each arm, unstacked, as a user would train it, on one thread; its ``summarize`` turns the
reported runs' steps to the threshold (from ``lstm_adding``, ``rnn_regimes``, ``small_transformer``
and ``deep_transformer``) into seconds, paired by seed.

Timing (:func:`time_arms`, one unit per round): every arm is timed in each of :data:`ROUNDS` rounds,
round-robin (arm 1, arm 2, ..., then again), each round starting one arm later than the last, so that a slow spell of the
machine falls on every arm alike rather than on whichever arm was being timed then. In each round
an arm trains for :data:`SHORT` and then for :data:`LONG` steps from scratch; that round's seconds
per step are the difference divided by ``LONG - SHORT`` (:func:`round_seconds`), so that building
the model and the two held-out evaluations cancel out; one short untimed run of each arm comes first
in each round (the first call allocates). The load average (:func:`os.getloadavg`, 1 minute) is recorded with
every timing. An arm's time per step is the median over the rounds; the ratio of two arms' times
per step is taken round by round (the two were timed a few seconds apart) and its 95% t-interval
over the rounds carries the timing's spread (:func:`step_time_verdicts`), and the wall-clock
comparisons carry it too (:func:`wall_clock_ci`). The rounds are all on one machine, so the
intervals say nothing about another one. The times are a property of the machine that measured
them (its fingerprint is stored with them): the reproducibility test checks that they are
positive, never their values.

The timed runs normalise with torch's kernels (``torch.nn.functional.layer_norm`` and ``rms_norm``, as a
user's model would: :func:`torch_kernels`): every arm runs the same Python code, and only the norm's
call differs between arms. The stored runs whose steps are counted used the set's from-scratch
:func:`helpers.functional.layer_norm` (about 7 tensor operations, the same numbers to rounding); one
more arm, :data:`FROM_SCRATCH`, times the LN-LSTM with it, to show what it alone costs.
"""

from __future__ import annotations

import contextlib
import math
import os
import time
from unittest import mock

import numpy as np
import pandas as pd

from helpers.evidence import runner
from helpers.evidence.verdicts import Verdict

#: The two run lengths whose difference is timed, and how many rounds.
SHORT, LONG, ROUNDS = 5, 25, 10

#: The arms timed: ``"<setting> | <variant>"``, the setting as the experiments name their regimes.
TIMED = (
    *(f"LSTM, T 100, hidden 64 | {v}" for v in ("LSTM", "LN-LSTM", "LN-LSTM without input LN")),
    *(f"tiny RNN, T {t}, hidden {h} | {v}" for t in (10, 50) for h in (16, 64, 128) for v in ("no norm", "LayerNorm")),
    *(f"Transformer | {v}" for v in ("no norm", "Pre-LN", "Post-LN")),
    *(f"Deep Transformer | {v}" for v in ("no norm", "Pre-LN", "Post-LN")),
)

#: The arm timed with the set's from-scratch LN (:func:`helpers.functional.layer_norm`), not torch's kernel.
FROM_SCRATCH = "LSTM, T 100, hidden 64 | LN-LSTM, from-scratch LN"

#: Where the timed models call the set's own norms: replaced by torch's kernels while they are timed.
_NORM_CALLS = ("helpers.experiments.lstm_adding.layer_norm", "helpers.experiments.rnn_models.layer_norm",
               "helpers.experiments.small_transformer.layer_norm", "helpers.experiments.small_transformer.rms_norm")


@contextlib.contextmanager
def torch_kernels():
    """Within it, the stored experiments' models normalise with torch's kernels
    (``torch.nn.functional.layer_norm``, ``rms_norm``: the same arguments, the same numbers to rounding)."""
    import torch.nn.functional as F

    with contextlib.ExitStack() as stack:
        for target in _NORM_CALLS:
            stack.enter_context(mock.patch(target, getattr(F, target.rsplit(".", 1)[1])))
        yield

_NO_EVAL = 10**6  # an evaluation interval longer than any timed run: held out only at its ends


def _trainer(arm: str):
    """``train(steps)`` for one model of ``arm`` (seed 0, rate 1e-3), with torch's norm kernels
    (:func:`torch_kernels`), or with the set's own LN for :data:`FROM_SCRATCH`."""
    if arm == FROM_SCRATCH:
        return _trainer_of("LSTM, T 100, hidden 64 | LN-LSTM")
    train = _trainer_of(arm)

    def with_kernels(steps):
        with torch_kernels():
            return train(steps)

    return with_kernels


def _trainer_of(arm: str):
    """``train(steps)`` for one model of ``arm``, as the stored experiments train it."""
    setting, variant = (part.strip() for part in arm.split("|"))
    if setting.startswith("LSTM"):
        from helpers.experiments.lstm_adding import lstm_runs

        return lambda steps: lstm_runs(seeds=(0,), lrs=(1e-3,), variants=(variant,), steps=steps, seq_len=100,
                                       hidden=64, eval_every=_NO_EVAL)
    if setting.startswith("tiny RNN"):
        from helpers.experiments.rnn_regimes import rnn_eval_runs

        t, h = (int(word.split()[-1]) for word in setting.split(",")[1:])
        return lambda steps: rnn_eval_runs(seeds=(0,), lrs=(1e-3,), variants=(variant,), hidden=h, seq_len=t,
                                           steps=steps, eval_every=_NO_EVAL)
    if setting == "Transformer":
        from helpers.experiments.small_transformer import copy_runs

        return lambda steps: copy_runs(seeds=(0,), lrs=(1e-3,), variant=variant, steps=steps, eval_every=_NO_EVAL)
    if setting == "Deep Transformer":
        from helpers.experiments.deep_transformer import FIXED
        from helpers.experiments.small_transformer import copy_runs

        fixed = {k: v for k, v in FIXED.items() if k != "eval_every"}  # the stored runs' model, task and batch
        return lambda steps: copy_runs(seeds=(0,), lrs=(1e-3,), variant=variant, steps=steps, eval_every=_NO_EVAL,
                                       **fixed)
    raise ValueError(f"time_one_arm(): argument 'arm' must be one of {list(TIMED)}, got {arm!r}")


def time_arms(*, rotation: int, arms: tuple, seeds, steps: int) -> pd.DataFrame:
    """One round: wall-clock seconds of a short and a long training run of one model of each of
    ``arms``, one arm after another, in their order rotated by ``rotation`` (round ``r`` of the
    stored experiment starts at arm ``r``), each arm its short run then its long one. The 1-minute
    load average (:func:`os.getloadavg`) is read before each arm's pair of runs. Each arm first
    trains 2 steps untimed (the first call allocates).

    ``steps`` is the runner's step cap, the long run's length: :data:`LONG` in the stored
    experiment, whose short runs are :data:`SHORT` steps. A cap under ``2 * SHORT`` (the
    reproducibility test re-times a round at the experiment's ``repro_steps``) makes the short
    run ``steps // 2`` steps.

    Returns:
        One row per arm: ``arm``, ``seed`` (the runner's; the model's is 0), ``round`` (``rotation``),
        ``position`` (its place in this round's order), ``load_1m``, ``seconds_short`` and
        ``seconds_long``. :func:`round_seconds` turns the stored rounds into seconds per step.
    """
    arms = list(arms)
    short = SHORT if steps >= 2 * SHORT else steps // 2
    k = rotation % len(arms)
    order = arms[k:] + arms[:k]
    trainers = {a: _trainer(a) for a in order}
    for a in order:
        trainers[a](2)
    rows = []
    for position, a in enumerate(order):
        load = os.getloadavg()[0]
        t0 = time.perf_counter()
        trainers[a](short)
        t1 = time.perf_counter()
        trainers[a](steps)
        t2 = time.perf_counter()
        rows.append({"arm": a, "seed": seeds[0], "round": rotation, "position": position, "load_1m": load,
                     "seconds_short": t1 - t0, "seconds_long": t2 - t1})
    return pd.DataFrame(rows)


def round_seconds(frame: pd.DataFrame) -> pd.DataFrame:
    """Seconds per training step of each arm in each round: ``(long - short) / (LONG - SHORT)``;
    subtracting the short run removes building the model and the two held-out evaluations, which
    both runs share. Returns a table, rounds by arms."""
    per = frame.assign(s=(frame["seconds_long"] - frame["seconds_short"]) / (LONG - SHORT))
    return per.pivot(index="round", columns="arm", values="s")


def seconds_per_step(frame: pd.DataFrame) -> pd.Series:
    """Per arm, seconds per training step: the median over the rounds of :func:`round_seconds`."""
    return round_seconds(frame).median()


def _log_ratio_rounds(frame: pd.DataFrame, setting: str, a: str, b: str) -> np.ndarray:
    """Per round, ``log(seconds per step of a / of b)`` in ``setting``: the two arms timed in the same round."""
    per = round_seconds(frame)
    return np.log(per[f"{setting} | {a}"].to_numpy() / per[f"{setting} | {b}"].to_numpy())


def wall_clock_ci(steps_a, steps_b, log_ratio_rounds, confidence: float = 0.95):
    """A relative difference in wall-clock time, ``1 - (A's time / B's)``, with an interval that
    carries both spreads: the seeds' in steps and the rounds' in time per step.

    The log of the ratio of times is the sum of two independent estimates, the mean over ``n`` seeds
    of ``log(steps_a / steps_b)`` and the mean over ``m`` rounds of the per-round log-ratio of the
    times per step; its standard error is ``sqrt(s_seeds^2 / n + s_rounds^2 / m)``, and the t-quantile
    takes the Welch-Satterthwaite degrees of freedom. Mapped back as
    :func:`helpers.evidence.statistics.paired_difference_ci` maps a relative difference.

    Args:
        steps_a, steps_b: per seed, paired, positive (a run that never got there at the cap).
        log_ratio_rounds: per round, ``log(time per step of A / of B)``.
    """
    from scipy import stats

    from helpers.evidence.statistics import Interval

    d = np.log(np.asarray(steps_a, float)) - np.log(np.asarray(steps_b, float))
    r = np.asarray(log_ratio_rounds, float)
    mean = float(d.mean() + r.mean())
    v_seeds, v_rounds = d.var(ddof=1) / d.size, r.var(ddof=1) / r.size
    se = math.sqrt(v_seeds + v_rounds)
    if se == 0:
        return Interval(float(-np.expm1(mean)), float(-np.expm1(mean)), float(-np.expm1(mean)), d.size, confidence,
                        "no spread between seeds or rounds", p_value=1.0 if mean == 0 else 0.0)
    df = (v_seeds + v_rounds) ** 2 / (v_seeds ** 2 / (d.size - 1) + v_rounds ** 2 / (r.size - 1))
    half = float(stats.t.ppf((1 + confidence) / 2, df)) * se
    p_value = float(2 * stats.t.sf(abs(mean) / se, df))  # the same t, two-sided
    return Interval(float(-np.expm1(mean)), float(-np.expm1(mean + half)), float(-np.expm1(mean - half)), d.size,
                    confidence, f"the timing's spread over {r.size} interleaved rounds included", p_value=p_value)


def _wall_clock(frame: pd.DataFrame, setting: str, report: pd.DataFrame, threshold: float, a: str, b: str) -> Verdict:
    """``a`` vs ``b`` on seconds to ``threshold``, paired by seed: each run's steps (the cap where it
    never got there) times its arm's seconds per step, the interval carrying the timing's spread
    over the rounds (:func:`wall_clock_ci`). The steps are counted both ways the experiments declare
    (to the first crossing, and until the run stays below to the end: the verdict's alternate)."""
    from dataclasses import replace

    from helpers.experiments.threshold_runs import steps_staying_below, steps_to_threshold

    first = _wall_clock_on(frame, setting, steps_to_threshold(report, threshold), int(report["step"].max()), a, b,
                           "wall-clock time to the threshold", "reaches")
    staying = _wall_clock_on(frame, setting, steps_staying_below(report, threshold), int(report["step"].max()), a, b,
                             "wall-clock time until it stays below the threshold", "stays below")
    if not first.has_interval or not staying.has_interval:
        return first
    return replace(first, alternates=(replace(staying, label="staying below to the end"),))


def _wall_clock_on(frame: pd.DataFrame, setting: str, reached: pd.DataFrame, cap: int, a: str, b: str,
                   quantity: str, verb: str) -> Verdict:
    """:func:`_wall_clock` on one measure of the steps (``reached``: one row per run, ``steps``)."""
    from helpers.evidence.statistics import verdict

    reached = reached[reached["variant"].isin((a, b))]
    steps = pd.DataFrame({v: reached[reached["variant"] == v].set_index("seed")["steps"].fillna(cap)
                          for v in (a, b)}).dropna()
    if reached["steps"].isna().all():  # all censored: the "difference" would be the time per step alone
        return Verdict.no_interval(a, b, quantity, f"no run of either arm {verb} the threshold within {cap} steps")
    ci = wall_clock_ci(steps[a], steps[b], _log_ratio_rounds(frame, setting, a, b))
    return verdict(ci, a=a, b=b, quantity=quantity, words=("less", "more"), suffix=f"; {ci.note}" if ci.note else "")


def _load_words(frame: pd.DataFrame) -> str:
    """The load average over the timings: its range and median."""
    load = frame["load_1m"]
    return f"load average (1 min) {load.min():.2f} to {load.max():.2f}, median {load.median():.2f}"


def step_time_verdicts(frame: pd.DataFrame) -> dict[str, str]:
    """The stored words of ``step_times``:

    - ``"seconds per step, <setting>, <variant>"``: :func:`seconds_per_step`, with the range over the rounds;
    - ``"time per step, <setting>, <arm>"``: the normalized arm's time per step over the plain arm's,
      the geometric mean over the rounds of their per-round ratio, with its 95% t-interval over the
      rounds;
    - ``"wall-clock, <setting>, <arm>"``: normalized vs plain on seconds to the threshold, paired
      by seed, from the reported runs of the experiment that ran that setting (a run that never
      got there counts as the step cap), the claim being that the normalized arm takes less time;
      the interval carries the seeds' spread and the rounds' (:func:`wall_clock_ci`);
    - ``"load"``: the load average while the timings ran.
    """
    from helpers.evidence.statistics import paired_difference_ci
    from helpers.experiments import deep_transformer, lstm_adding, small_transformer
    from helpers.experiments import rnn_regimes as rr

    out = {"load": f"{_load_words(frame)}, over {frame['round'].nunique()} interleaved rounds of "
                   f"{frame['arm'].nunique()} arms on one machine"}
    per_round = round_seconds(frame)
    for arm, s in seconds_per_step(frame).items():
        out[f"seconds per step, {arm.replace(' | ', ', ')}"] = (
            f"{s * 1e3:.3g} ms (median over {len(per_round)} rounds; {per_round[arm].min() * 1e3:.3g} to "
            f"{per_round[arm].max() * 1e3:.3g} ms)")
    pairs = [("LSTM, T 100, hidden 64", "LN-LSTM", "LSTM"), ("LSTM, T 100, hidden 64", "LN-LSTM without input LN", "LSTM"),
             ("Transformer", "Pre-LN", "no norm"),
             ("Transformer", "Post-LN", "no norm"),
             ("Deep Transformer", "Pre-LN", "no norm"),
             ("Deep Transformer", "Post-LN", "no norm"),
             *((f"tiny RNN, T {t}, hidden {h}", "LayerNorm", "no norm") for t in rr.SEQ_LENS for h in rr.HIDDEN)]
    scratch = ("LSTM, T 100, hidden 64", FROM_SCRATCH.split(" | ")[1], "LN-LSTM")
    for setting, a, b in (*pairs, scratch):
        times = round_seconds(frame)
        ci = paired_difference_ci(times[f"{setting} | {a}"].to_numpy(), times[f"{setting} | {b}"].to_numpy(),
                                  relative=True)
        note = f"; {ci.note}" if ci.note else ""
        out[f"time per step, {setting}, {a}"] = (
            f"{a} takes {1 - ci.estimate:.2f}x the time per step of {b} (95% CI {1 - ci.high:.2f}x to "
            f"{1 - ci.low:.2f}x over {ci.n} interleaved rounds{note})")
    stored = {name: runner.load(name).frame
              for name in ("lstm_adding", "rnn_regimes", "small_transformer", "deep_transformer")}
    for setting, a, b in pairs:
        if setting.startswith("LSTM"):
            report, threshold = stored["lstm_adding"], lstm_adding.THRESHOLD
        elif setting == "Transformer":
            report, threshold = stored["small_transformer"], small_transformer.THRESHOLD
        elif setting == "Deep Transformer":
            report, threshold = stored["deep_transformer"], deep_transformer.THRESHOLD
        else:
            t, h = (int(word.split()[-1]) for word in setting.split(",")[1:])
            report, threshold = stored["rnn_regimes"], rr.THRESHOLD
            report = report[(report["seq_len"] == t) & (report["hidden"] == h)]
        report = report[(report["stage"] == "report") & report["eval_loss"].notna()]
        out[f"wall-clock, {setting}, {a}"] = _wall_clock(frame, setting, report, threshold, a, b)
    return out


# The whole experiment: 21 arms x (1 + 10 x 2) short runs of 2 to 25 steps. Version 3: the LSTMs read
# their input through the embedding of lstm_adding version 2, and the LSTM without input LN is timed
# too; 10 repeats (was 5: two runs of 5 put the tiny RNN's LN at 0.82x and 1.09x of no norm at T 10,
# hidden 128, and the Transformer's Pre-LN at 1.36x and 1.66x: the fastest of 5 was not always
# undisturbed). Version 4: one unit per round, each timing every arm once, in an order rotated by one
# arm per round, with the load average recorded, the median over rounds in place of the fastest,
# intervals over the rounds; the Transformer of deep_transformer timed too. Version 5: torch's norm kernels
# in every timed arm, and the LN-LSTM with the set's from-scratch LN beside them.
runner.register(runner.Experiment(
    name="step_times", notebook="13_does_it_speed_up_training", train=time_arms,
    grid={"rotation": tuple(range(ROUNDS))}, seeds=(0,), steps=LONG, fixed={"arms": (*TIMED, FROM_SCRATCH)},
    summarize=step_time_verdicts, budget_s=450, version=5,
    timed_columns=("seconds_short", "seconds_long", "load_1m"),
    repro_steps=2,  # re-timed with runs of 1 and 2 steps: only the bookkeeping and the times' signs are compared
    # what is not a time is bookkeeping (seed, round, position): equal on every kernel path, so
    # compared exactly
    repro_rtol=0.0, repro_atol=0.0, repro_measured=0.0))
