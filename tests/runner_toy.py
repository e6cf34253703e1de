"""Toy experiments for tests/test_runner.py: cheap, deterministic, and observable from outside.

Each unit appends one line to the file named by ``$RUNNER_TOY_LOG`` (when set) as it starts, and
sleeps ``$RUNNER_TOY_SLEEP`` seconds, so that a test can count how many units were trained and
kill the runner while one is in flight.
"""

from __future__ import annotations

import os
import time

import pandas as pd
import torch

from helpers.evidence import runner


def train(*, lr, seeds, steps, width=4, tag="toy"):
    """A loss curve per (seed, lr): ``exp(-lr * step)`` times seeded noise; ``lr`` may be a tuple."""
    log = os.environ.get("RUNNER_TOY_LOG")
    if log:
        with open(log, "a") as f:
            f.write(f"{tag} {list(seeds)} {lr}\n")
    time.sleep(float(os.environ.get("RUNNER_TOY_SLEEP", "0")))
    rows = []
    for seed in seeds:
        g = torch.Generator().manual_seed(seed)
        noise = 1 + 0.1 * torch.rand(steps, width, generator=g).mean(1)
        for rate in (lr if isinstance(lr, tuple) else (lr,)):
            loss = torch.exp(-rate * torch.arange(steps)) * noise
            rows.append(pd.DataFrame({"step": range(steps), "seed": seed, "lr": rate, "loss": loss.numpy()}))
    return pd.concat(rows, ignore_index=True)


def train_arms(*, arm, lr, seeds, steps):
    """Arm "fast" learns best at rate 0.3, arm "slow" at 0.03: the pilot must find both."""
    best = {"fast": 0.3, "slow": 0.03}[arm]
    frame = train(lr=lr, seeds=seeds, steps=steps, tag=arm)
    frame["loss"] = frame["loss"] + (frame["lr"].map(lambda r: abs(torch.log10(torch.tensor(r / best)).item())))
    return frame.assign(arm=arm)


def final_loss_score(frame):
    """Per (arm, lr): the median over seeds of the last step's loss."""
    last = frame[frame["step"] == frame["step"].max()]
    return last.groupby(["arm", "lr"], as_index=False)["loss"].median().rename(columns={"loss": "score"})


def summarize(frame):
    """One verdict: how many runs end below 0.5."""
    last = frame[frame["step"] == frame["step"].max()]
    return {"below half": f"{int((last['loss'] < 0.5).sum())} of {len(last)} runs end below 0.5"}


runner.register(runner.Experiment(
    name="toy", notebook="none", train=train, grid={"lr": (0.1, 0.2, 0.3)}, seeds=(0, 1, 2, 3),
    steps=30, stack=(), seeds_per_unit=2, summarize=summarize, budget_s=10))
runner.register(runner.Experiment(
    name="toy_stacked", notebook="none", train=train, grid={"lr": (0.1, 0.2)}, seeds=(0, 1, 2),
    steps=25, stack=("lr",), budget_s=10))
runner.register(runner.Experiment(
    name="toy_tuned", notebook="none", train=train_arms, grid={"arm": ("fast", "slow")}, seeds=(10, 11, 12),
    steps=25, budget_s=10,
    tuning=runner.Tuning(key="lr", rates=(0.01, 0.03, 0.1, 0.3, 1.0), pilot_seeds=(0, 1, 2),
                         score=final_loss_score, learned_below=5.0)))


def three_best_rates(frame):
    """Per arm, the three rates with the lowest pilot score: the rates the check stage re-trains."""
    scores = final_loss_score(frame)
    return scores.sort_values("score").groupby("arm").head(3)[["arm", "lr"]]


runner.register(runner.Experiment(
    name="toy_checked", notebook="none", train=train_arms, grid={"arm": ("fast", "slow")}, seeds=(10, 11, 12),
    steps=25, budget_s=10, seeds_per_unit=2,
    tuning=runner.Tuning(key="lr", rates=(0.01, 0.03, 0.1, 0.3, 1.0), pilot_seeds=(0, 1, 2),
                         score=final_loss_score, learned_below=5.0, check_rates=three_best_rates)))


def train_blowup(*, variant, lr, seeds, steps):
    """Held-out loss ``exp(-lr * step)`` times seeded noise, evaluated every step; at rate 1 the runs
    get below 0.5 first and then blow up to 5 from step 8 on: the rate a first-crossing score alone
    would pick."""
    frame = train(lr=lr, seeds=seeds, steps=steps, tag=variant).rename(columns={"loss": "eval_loss"})
    frame.loc[(frame["lr"] >= 1.0) & (frame["step"] >= 8), "eval_loss"] = 5.0
    return frame.assign(variant=variant)


def blowup_score(frame):
    """The threshold experiments' score: restricted mean steps below 0.5, and whether every run ends below."""
    from helpers.experiments.threshold_runs import restricted_mean_steps

    return restricted_mean_steps(frame, 0.5)


runner.register(runner.Experiment(
    name="toy_blowup", notebook="none", train=train_blowup, grid={"variant": ("steady",)}, seeds=(10, 11),
    steps=25, threshold=0.5, budget_s=10,
    tuning=runner.Tuning(key="lr", rates=(0.01, 0.03, 0.1, 0.3, 1.0), pilot_seeds=(0, 1, 2),
                         score=blowup_score, learned_below=24)))
