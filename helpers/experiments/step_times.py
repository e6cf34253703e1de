"""Wall-clock, not just steps: what one training step of each arm costs, and the time to the threshold.

LN costs time per step (two reductions and an extra pass over each layer's summed inputs), so
"LN needs fewer steps" and "LN trains faster" are different claims. The stored experiment
``step_times`` times one training step (minibatch, forward, backward, clipping, Adam) of a single
model of each arm, unstacked, as a user would train it, on one thread; its ``summarize`` turns the
reported runs' steps to the threshold (from ``lstm_adding``, ``rnn_regimes`` and
``small_transformer``) into seconds, paired by seed.

Timing: each repeat trains the arm for :data:`SHORT` and then for :data:`LONG` steps from scratch;
the seconds per step are the difference of the fastest long and the fastest short run divided by
``LONG - SHORT`` (:func:`seconds_per_step`), so that building the model and the two held-out
evaluations cancel out; one short untimed run comes first (the first call allocates). The times
are a property of the machine that measured them (its fingerprint is stored with them): the
reproducibility test checks that they are positive, never their values.
"""

from __future__ import annotations

import time

import pandas as pd

from helpers.evidence import runner

__all__ = ["LONG", "SHORT", "TIMED", "seconds_per_step", "step_time_verdicts", "time_one_arm"]

#: The two run lengths whose difference is timed, and how many repeats.
SHORT, LONG, REPEATS = 5, 25, 10

#: The arms timed: ``"<setting> | <variant>"``, the setting as the experiments name their regimes.
TIMED = (
    *(f"LSTM, T 100, hidden 64 | {v}" for v in ("LSTM", "LN-LSTM", "LN-LSTM without input LN")),
    *(f"tiny RNN, T {t}, hidden {h} | {v}" for t in (10, 50) for h in (16, 64, 128) for v in ("no norm", "LayerNorm")),
    *(f"Transformer | {v}" for v in ("no norm", "Pre-LN", "Post-LN")),
)

_NO_EVAL = 10**6  # an evaluation interval longer than any timed run: held out only at its ends


def _trainer(arm: str):
    """``train(steps)`` for one model of ``arm`` (seed 0, rate 1e-3)."""
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
    raise ValueError(f"time_one_arm(): argument 'arm' must be one of {list(TIMED)}, got {arm!r}")


def time_one_arm(*, arm: str, seeds, steps: int, repeats: int = REPEATS) -> pd.DataFrame:
    """Wall-clock seconds of a :data:`SHORT` and a :data:`LONG` training run of one model of
    ``arm``, ``repeats`` times each, alternating.

    ``steps`` is the runner's step cap, unused: the timed lengths are :data:`SHORT` and :data:`LONG`.

    Returns:
        One row per repeat: ``arm``, ``seed`` (the runner's; the model's is 0), ``repeat``,
        ``seconds_short`` and ``seconds_long``. :func:`seconds_per_step` turns them into seconds
        per step.
    """
    del steps
    train = _trainer(arm)
    train(2)
    rows = []
    for repeat in range(repeats):
        t0 = time.perf_counter()
        train(SHORT)
        t1 = time.perf_counter()
        train(LONG)
        t2 = time.perf_counter()
        rows.append({"arm": arm, "seed": seeds[0], "repeat": repeat, "seconds_short": t1 - t0,
                     "seconds_long": t2 - t1})
    return pd.DataFrame(rows)


def seconds_per_step(frame: pd.DataFrame) -> pd.Series:
    """Per arm, seconds per training step: ``(min long - min short) / (LONG - SHORT)``.

    The fastest of the repeats is the one least disturbed by whatever else the machine did (the
    rule of :mod:`timeit`); subtracting the short run removes building the model and the two
    held-out evaluations, which both runs share.
    """
    fastest = frame.groupby("arm", sort=False)[["seconds_short", "seconds_long"]].min()
    return (fastest["seconds_long"] - fastest["seconds_short"]) / (LONG - SHORT)


def _per_step(frame: pd.DataFrame) -> dict[tuple[str, str], float]:
    """``{(setting, variant): seconds per step}``."""
    return {tuple(part.strip() for part in arm.split("|")): float(s) for arm, s in seconds_per_step(frame).items()}


def _wall_clock(per_step: dict, setting: str, report: pd.DataFrame, threshold: float, a: str, b: str) -> str:
    """``a`` vs ``b`` on seconds to ``threshold``, paired by seed: each run's steps (the cap where it
    never got there) times its arm's seconds per step."""
    from helpers.evidence.statistics import paired_difference_ci, verdict
    from helpers.experiments.lstm_adding import lstm_steps_to_threshold

    cap = int(report["step"].max())
    reached = lstm_steps_to_threshold(report, threshold)
    reached = reached[reached["variant"].isin((a, b))]
    seconds = {}
    for variant in (a, b):
        runs = reached[reached["variant"] == variant].set_index("seed")["steps"].fillna(cap)
        seconds[variant] = runs * per_step[(setting, variant)]
    both = pd.DataFrame(seconds).dropna()
    if reached["steps"].isna().all():  # all censored: the "difference" would be the time per step alone
        return f"no run of either arm reaches the threshold within {cap} steps"
    return verdict(paired_difference_ci(both[a].to_numpy(), both[b].to_numpy(), relative=True, seeds=both.index),
                   a=a, b=b, quantity="wall-clock time to the threshold", words=("less", "more"))


def step_time_verdicts(frame: pd.DataFrame) -> dict[str, str]:
    """The stored words of ``step_times``:

    - ``"seconds per step, <setting>, <variant>"``: :func:`seconds_per_step`;
    - ``"time per step, <setting>"``: the normalized arm's median over the plain arm's;
    - ``"wall-clock, <setting>[, <arm>]"``: normalized vs plain on seconds to the threshold, paired
      by seed, from the reported runs of the experiment that ran that setting (a run that never
      got there counts as the step cap), the claim being that the normalized arm takes less time.
    """
    from helpers.experiments import lstm_adding, small_transformer
    from helpers.experiments import rnn_regimes as rr

    out = {}
    for arm, s in seconds_per_step(frame).items():
        out[f"seconds per step, {arm.replace(' | ', ', ')}"] = f"{s * 1e3:.3g} ms"
    per_step = _per_step(frame)
    pairs = [("LSTM, T 100, hidden 64", "LN-LSTM", "LSTM"), ("LSTM, T 100, hidden 64", "LN-LSTM without input LN", "LSTM"),
             ("Transformer", "Pre-LN", "no norm"),
             ("Transformer", "Post-LN", "no norm"),
             *((f"tiny RNN, T {t}, hidden {h}", "LayerNorm", "no norm") for t in rr.SEQ_LENS for h in rr.HIDDEN)]
    for setting, a, b in pairs:
        ratio = per_step[(setting, a)] / per_step[(setting, b)]
        out[f"time per step, {setting}, {a}"] = f"{a} takes {ratio:.2f}x the time per step of {b}"
    stored = {name: runner.load(name).frame for name in ("lstm_adding", "rnn_regimes", "small_transformer")}
    for setting, a, b in pairs:
        if setting.startswith("LSTM"):
            report, threshold = stored["lstm_adding"], lstm_adding.THRESHOLD
        elif setting == "Transformer":
            report, threshold = stored["small_transformer"], small_transformer.THRESHOLD
        else:
            t, h = (int(word.split()[-1]) for word in setting.split(",")[1:])
            report, threshold = stored["rnn_regimes"], rr.THRESHOLD
            report = report[(report["seq_len"] == t) & (report["hidden"] == h)]
        report = report[(report["stage"] == "report") & report["eval_loss"].notna()]
        out[f"wall-clock, {setting}, {a}"] = _wall_clock(per_step, setting, report, threshold, a, b)
    return out


# The whole experiment: 18 arms x (1 + 10 x 2) short runs of 2 to 25 steps, about 3 minutes, most of it
# in the LN-LSTMs at T = 100 (about 50 ms per step). Run it on an otherwise idle machine: a busy
# second core slows the memory-bound steps. Version 3: the LSTMs read their input through the
# embedding of lstm_adding version 2, and the LSTM without input LN is timed too; 10 repeats (was 5:
# two runs of 5 on this machine put the tiny RNN's LN at 0.82x and 1.09x of no norm at T 10, hidden
# 128, and the Transformer's Pre-LN at 1.36x and 1.66x: the fastest of 5 was not always undisturbed).
runner.register(runner.Experiment(
    name="step_times", notebook="13_does_it_speed_up_training", train=time_one_arm,
    grid={"arm": TIMED}, seeds=(0,), steps=LONG, fixed={"repeats": REPEATS}, summarize=step_time_verdicts,
    budget_s=300, version=3,
    timed_columns=("seconds_short", "seconds_long"),
    # what is not a time is bookkeeping (seed, repeat): equal on every kernel path, so compared exactly
    repro_rtol=0.0, repro_atol=0.0, repro_measured=0.0))
