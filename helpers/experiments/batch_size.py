"""BatchNorm, LayerNorm and no norm at small batches (deep dive 11): the ``batch_size`` experiment.

Identical small MLPs with BatchNorm, LayerNorm (each with its gamma and beta) or no norm
(:class:`StackedMLP`), trained on the same number of samples at several batch sizes on a synthetic
task (:data:`TASK_RULE`, :func:`make_task`); BN's accuracy measured in ``eval()`` mode, in training
mode and with precise statistics.

- :func:`batch_size_runs`: deep dive 11's live version; :data:`ARMS`, :func:`arm_accuracy` and
  :func:`batch_size_summary` read its table.
- The stored experiment ``batch_size`` (``make experiments ONLY=batch_size``) tunes each norm's
  rate at each batch size, then stores 10 fresh seeds; :func:`final_accuracy` and
  :func:`accuracy_gaps` read the stored table (paired differences with t-intervals).

The lesson's demos of BN against LN are in :mod:`helpers.lessons.bn_vs_ln`.
"""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
import torch
import torch.nn.functional as F
from torch import nn

from helpers.evidence import runner
from helpers.functional import batch_norm, layer_norm

#: The normalizations :func:`batch_size_runs` compares.
NORMS = ("BatchNorm", "LayerNorm", "no norm")

#: The synthetic task's rule, as the notebook shows it.
TASK_RULE = "label = 1 if x0 * x1 + 0.5 * sin(3 * x2) > 0 else 0,  x ~ N(0, I_8)"

# ------------------------------------------------------------ the task and the models


def make_task(n: int, generator: torch.Generator, in_features: int = 8) -> tuple[torch.Tensor, torch.Tensor]:
    """``n`` samples of the synthetic task :data:`TASK_RULE`: ``(x, label)``, labels 0/1 (float)."""
    x = torch.randn(n, in_features, generator=generator)
    label = (x[:, 0] * x[:, 1] + 0.5 * torch.sin(3 * x[:, 2]) > 0).float()
    return x, label


class StackedMLP(nn.Module):
    """``len(norms) * n_seeds`` identical-shaped MLPs trained at once, one per (norm, seed).

    Each model is ``Linear -> norm -> ReLU -> Linear -> norm -> ReLU -> Linear(width, 1)``;
    model ``m`` uses ``norms[m // n_seeds]`` and the weights of seed ``m % n_seeds``, so the
    models of one seed start from the *same* weights and differ only by the norm. BN and LN have
    their learned per-feature gain ``gamma`` (from 1) and shift ``beta`` (from 0), as
    ``nn.BatchNorm1d`` and ``nn.LayerNorm`` do: without ``beta``, BN would remove every unit's bias
    and pin each ReLU's threshold at the batch mean, a handicap LN does not share (LN centres each
    sample over its features, so each unit keeps its offset). The weights are stacked along a
    leading model dim and applied with ``torch.baddbmm``: one step trains all models, each on
    its own minibatch, and (the loss being a sum over models) no model's gradient depends on
    another's. BN keeps running statistics per model and layer (``helpers.batch_norm`` updates
    them: momentum 0.1, unbiased variance).
    """

    def __init__(self, n_seeds: int, *, in_features: int = 8, width: int = 32, generators=None,
                 norms: tuple[str, ...] = NORMS):
        super().__init__()
        self.n_seeds, self.width, self.norms = n_seeds, width, tuple(norms)
        shapes = [(in_features, width), (width, width), (width, 1)]
        self.weights, self.biases = nn.ParameterList(), nn.ParameterList()
        for fan_in, fan_out in shapes:
            gain = math.sqrt(2 / fan_in) if fan_out > 1 else 1 / math.sqrt(fan_in)  # He init before ReLU
            per_seed = torch.stack([torch.randn(fan_in, fan_out, generator=g) * gain for g in generators])
            self.weights.append(nn.Parameter(per_seed.repeat(len(self.norms), 1, 1)))
            self.biases.append(nn.Parameter(torch.zeros(len(self.norms) * n_seeds, 1, fan_out)))
        for layer in range(2):
            self.register_buffer(f"running_mean{layer}", torch.zeros(n_seeds * width))
            self.register_buffer(f"running_var{layer}", torch.ones(n_seeds * width))
        # gamma and beta of each norm layer, per model (a model without a norm leaves them unused)
        models = len(self.norms) * n_seeds
        self.gammas = nn.ParameterList([nn.Parameter(torch.ones(models, 1, width)) for _ in range(2)])
        self.betas = nn.ParameterList([nn.Parameter(torch.zeros(models, 1, width)) for _ in range(2)])

    def _norm(self, h: torch.Tensor, layer: int, group: int | None = None) -> torch.Tensor:
        s = self.n_seeds
        parts = []
        for k, norm in enumerate(self.norms):
            part = h[k * s:(k + 1) * s]
            if norm == "BatchNorm":
                part = self._batch_norm(part, layer, group)
            elif norm == "LayerNorm":
                part = layer_norm(part, (self.width,))
            if norm != "no norm":
                rows = slice(k * s, (k + 1) * s)
                part = part * self.gammas[layer][rows] + self.betas[layer][rows]
            parts.append(part)
        return torch.cat(parts)

    def _batch_norm(self, bn: torch.Tensor, layer: int, group: int | None) -> torch.Tensor:
        s, batch = bn.shape[0], bn.shape[1]
        if group is not None:
            # training-mode statistics of each run of `group` consecutive samples; buffers untouched
            grouped = bn.reshape(s, batch // group, group, self.width)
            mean = grouped.mean(2, keepdim=True)
            var = (grouped - mean).square().mean(2, keepdim=True)
            return ((grouped - mean) / torch.sqrt(var + 1e-5)).reshape(s, batch, self.width)
        # BN per model and feature over the batch: (S, B, W) -> (B, S*W) channels.
        flat = bn.transpose(0, 1).reshape(batch, s * self.width)
        flat = batch_norm(flat, getattr(self, f"running_mean{layer}"), getattr(self, f"running_var{layer}"),
                          training=self.training)
        return flat.reshape(batch, s, self.width).transpose(0, 1)

    def forward(self, x: torch.Tensor, group: int | None = None) -> torch.Tensor:
        """``x`` of shape ``(models, batch, in_features)`` -> logits ``(models, batch)``.

        ``group``: BN normalizes each run of ``group`` consecutive samples with their own
        statistics, as training mode does for a minibatch of that size, whatever the module's
        mode, and leaves the running statistics alone (``batch`` must be a multiple of it).
        """
        h = x
        for layer in range(2):
            h = torch.relu(self._norm(torch.baddbmm(self.biases[layer], h, self.weights[layer]), layer, group))
        return torch.baddbmm(self.biases[2], h, self.weights[2]).squeeze(-1)

    @torch.no_grad()
    def set_precise_statistics(self, x: torch.Tensor) -> None:
        """Replace BN's running statistics by the exact ones of ``x`` (precise BN).

        Layer by layer, in ``eval()`` mode: each BN layer's input over all of ``x`` (the
        training set) with the current weights, its mean and unbiased variance, then the next
        layer's input with those. Wu and Johnson (2021, *Rethinking "Batch" in BatchNorm*, their
        section 3) call this precise BN: population statistics of the final weights instead of
        an average over past minibatches, which were computed with older weights.
        """
        was_training = self.training
        self.eval()
        h = x
        for layer in range(2):
            pre = torch.baddbmm(self.biases[layer], h, self.weights[layer])
            if "BatchNorm" in self.norms:
                k, s = self.norms.index("BatchNorm"), self.n_seeds
                bn = pre[k * s:(k + 1) * s]
                getattr(self, f"running_mean{layer}").copy_(bn.mean(1).reshape(-1))
                getattr(self, f"running_var{layer}").copy_(bn.var(1, unbiased=True).reshape(-1))
            h = torch.relu(self._norm(pre, layer))
        self.train(was_training)


def _measure(model: StackedMLP, data: dict, seeds: list, *, batch_size: int, step: int, lr: float) -> list[dict]:
    """Test accuracy and loss of every stacked model; the model's training state is left as it was.

    Three ways for BN (the others compute the same in each): ``test_accuracy`` in ``eval()``
    mode with the running statistics; ``train_mode_accuracy`` with the statistics of each
    test minibatch of ``batch_size`` samples, as in training; ``precise_accuracy`` in
    ``eval()`` mode with statistics recomputed on the whole training set
    (:meth:`StackedMLP.set_precise_statistics`, on a copy).
    """
    import copy

    x_test, y_test = data["x_test"], data["y_test"]
    model.eval()
    with torch.no_grad():
        logits = model(x_test)
        train_mode = model(x_test, group=batch_size)
        precise = copy.deepcopy(model)
        precise.set_precise_statistics(data["x_train"])
        precise_logits = precise(x_test)
    model.train()

    def accuracy(z):
        return ((z > 0).float() == y_test).float().mean(1)

    acc, acc_train, acc_precise = accuracy(logits), accuracy(train_mode), accuracy(precise_logits)
    losses = F.binary_cross_entropy_with_logits(logits, y_test, reduction="none").mean(1)
    n = len(seeds)
    return [{"norm": model.norms[m // n], "batch_size": batch_size, "seed": seeds[m % n], "lr": lr, "step": step,
             "samples_seen": (step + 1) * batch_size, "test_accuracy": acc[m].item(), "test_loss": losses[m].item(),
             "train_mode_accuracy": acc_train[m].item(), "precise_accuracy": acc_precise[m].item()}
            for m in range(len(model.norms) * n)]


def batch_size_runs(batch_sizes=(2, 4, 8, 32, 128), seeds=(0, 1, 2), *, samples: int = 12_800, lr: float = 0.01,
                    lr_batch: int = 128, steps: int | None = None, norms: tuple[str, ...] = NORMS,
                    n_train: int = 2048, n_test: int = 1024, record=None) -> pd.DataFrame:
    """Train identical MLPs with each of ``norms`` on the same number of samples at each batch size.

    For each seed, the data (:func:`make_task`), the initial weights and the minibatch order are
    the same for every norm (:class:`StackedMLP`), so the runs differ only by the normalization.
    Every batch size sees the same number of training samples, ``samples``: ``samples //
    batch_size`` Adam steps, so a smaller batch takes more, smaller steps. The learning rate is
    ``lr`` at batch ``lr_batch`` and scales with the square root of the batch size,
    ``lr * sqrt(batch_size / lr_batch)``, the scaling rule for Adam of Malladi et al. (2022).
    Accuracy is measured on ``n_test`` held-out samples (:func:`_measure`: in ``eval()`` mode,
    in training mode on test minibatches of the batch size, and with precise statistics).

    Args:
        steps: a cap on the steps of every batch size (the reproducibility check trains the
            first few only); ``None``: ``samples // batch_size`` each.
        record: which steps (counted from 0) are measured at the end of: ``None`` for the last
            step of each batch size only, a collection of steps, or a function ``steps ->
            steps`` of each batch size's step count. Measuring does not change the training
            (no gradients, BN's running statistics untouched).

    Returns:
        One row per run and recorded step: ``norm``, ``batch_size``, ``seed``, ``lr`` (the rate
        used at this batch size), ``step``, ``samples_seen``, ``test_accuracy``, ``test_loss``,
        ``train_mode_accuracy``, ``precise_accuracy``.
    """
    seeds = list(seeds)
    rows = []
    for b in batch_sizes:
        n_steps = samples // b if steps is None else min(steps, samples // b)
        wanted = ({n_steps - 1} if record is None else set(record(n_steps)) if callable(record) else set(record))
        rate = lr * math.sqrt(b / lr_batch)
        gens = [torch.Generator().manual_seed(s) for s in seeds]
        train = [make_task(n_train, g) for g in gens]
        test = [make_task(n_test, g) for g in gens]
        model = StackedMLP(len(seeds), generators=gens, norms=norms)
        optimizer = torch.optim.Adam(model.parameters(), lr=rate)
        order = torch.stack([torch.randint(0, n_train, (n_steps, b), generator=g) for g in gens], dim=1)
        k = len(norms)
        data = {"x_train": torch.stack([x for x, _ in train]).repeat(k, 1, 1),  # (models, n, in)
                "y_train": torch.stack([y for _, y in train]).repeat(k, 1),
                "x_test": torch.stack([x for x, _ in test]).repeat(k, 1, 1),
                "y_test": torch.stack([y for _, y in test]).repeat(k, 1)}
        model.train()
        for step, idx in enumerate(order):  # idx: (seeds, b), the same minibatch for a seed's models
            idx = idx.repeat(k, 1)
            x = torch.gather(data["x_train"], 1, idx[..., None].expand(-1, -1, data["x_train"].shape[-1]))
            y = torch.gather(data["y_train"], 1, idx)
            # mean over each model's batch, summed over models: each model's gradient is its own
            loss = F.binary_cross_entropy_with_logits(model(x), y, reduction="none").mean(1).sum()
            optimizer.zero_grad()
            loss.backward()
            optimizer.step()
            if step in wanted:
                rows += _measure(model, data, seeds, batch_size=b, step=step, lr=rate)
    return pd.DataFrame(rows)


#: The arms the batch-size experiment reports: BN's accuracy three ways, LN's and no norm's.
ARMS = {"BatchNorm": ("BatchNorm", "test_accuracy"),
        "BatchNorm, precise statistics": ("BatchNorm", "precise_accuracy"),
        "BatchNorm, train mode": ("BatchNorm", "train_mode_accuracy"),
        "LayerNorm": ("LayerNorm", "test_accuracy"),
        "no norm": ("no norm", "test_accuracy")}


def arm_accuracy(final: pd.DataFrame) -> pd.DataFrame:
    """Each run's final accuracy per arm of :data:`ARMS`: index ``(batch_size, seed)``, one column per arm.

    ``final``: one row per run (:func:`final_accuracy`).
    """
    columns = {}
    for arm, (norm, column) in ARMS.items():
        rows = final[final["norm"] == norm]
        if len(rows):
            columns[arm] = rows.set_index(["batch_size", "seed"])[column]
    return pd.DataFrame(columns).sort_index()


def batch_size_summary(final: pd.DataFrame) -> pd.DataFrame:
    """Mean, min and max of each arm's final accuracy over seeds: one row per batch size, columns ``(arm, stat)``."""
    arms = arm_accuracy(final)
    table = arms.groupby(level="batch_size").agg(["mean", "min", "max"])
    return table[[a for a in ARMS if a in arms.columns]]


# ------------------------------------------------------------ the stored experiment (make experiments)

#: The stored batch-size experiment: the notebook's toy (Adam at 0.02 for 100 steps) at 20 seeds.
BATCH_SIZES = (2, 4, 8, 32, 128)
#: The reported seeds (fresh: the pilot's are 100 to 102).
BATCH_SIZE_SEEDS = tuple(range(10))
BATCH_SIZE_PILOT_SEEDS = (100, 101, 102)
#: Every batch size sees this many training samples (100 steps at batch 128, 6400 at batch 2).
BATCH_SIZE_SAMPLES = 12_800
#: The rates tried for each norm at each batch size (Adam's best rate falls with the batch: about as
#: its square root, Malladi et al. 2022, so the grid reaches two decades below the largest batch's).
BATCH_SIZE_RATES = (0.0001, 0.0003, 0.001, 0.003, 0.01, 0.03, 0.1, 0.3)
#: A pilot score at or above this (the cross-entropy of always answering 1/2) learned nothing.
CHANCE_LOSS = math.log(2)


def _recorded_steps(steps: int) -> list[int]:
    """Every one of the first 20 steps (the runner's reproducibility check re-runs them), then
    about 10 more, evenly spaced in log steps, and the last."""
    later = {round(10 ** (math.log10(20) + k * (math.log10(steps) - math.log10(20)) / 10)) - 1 for k in range(11)}
    return sorted({*range(min(20, steps)), *(t for t in later if 20 <= t < steps), steps - 1})


def _batch_size_unit(*, norm: str, batch_size: int, lr, seeds, steps: int) -> pd.DataFrame:
    """One unit of the stored experiment: one norm at one batch size.

    A pilot unit (``lr`` a tuple: the tuning grid, stacked by the runner) trains once per rate: each
    (norm, batch size) has its own rate. A report unit (``lr`` one rate, the pilot's best) trains at it.
    """
    rates = lr if isinstance(lr, tuple) else (lr,)
    return pd.concat([batch_size_runs(batch_sizes=(batch_size,), seeds=seeds, samples=BATCH_SIZE_SAMPLES, lr=rate,
                                      lr_batch=batch_size, steps=steps, norms=(norm,), record=_recorded_steps)
                      for rate in rates], ignore_index=True)


def batch_size_pilot_scores(frame: pd.DataFrame) -> pd.DataFrame:
    """The tuning's score: per norm, batch size and rate, the mean over the pilot seeds of the final test
    loss (``eval()`` mode), lower is better; a diverged run (NaN) never wins."""
    final = final_accuracy(frame)
    scores = final.groupby(["norm", "batch_size", "lr"], sort=False)["test_loss"].mean().reset_index()
    return scores.rename(columns={"test_loss": "score"})


def final_accuracy(frame: pd.DataFrame) -> pd.DataFrame:
    """The last recorded step of each run: one row per (norm, batch size, seed) of the reported runs.

    Pilot rows (``stage == "pilot"``, where the frame has a ``stage``) are left out unless the
    frame has nothing else.
    """
    if "stage" in frame and (frame["stage"] == "report").any():
        frame = frame[frame["stage"] == "report"]
    keys = [k for k in ("norm", "batch_size", "seed", "lr") if k in frame]
    last = frame.groupby(keys, sort=False)["step"].transform("max")
    return frame[frame["step"] == last].reset_index(drop=True)


#: The comparisons the stored verdicts state, as pairs of :data:`ARMS`.
GAP_PAIRS = (("BatchNorm", "LayerNorm"), ("BatchNorm, precise statistics", "LayerNorm"),
             ("BatchNorm, train mode", "LayerNorm"), ("BatchNorm", "no norm"), ("LayerNorm", "no norm"))


def pilot_accuracy_steps(frame: pd.DataFrame) -> dict[tuple[str, int], float]:
    """One step of the tuning grid in accuracy points, per (norm, batch size): how far the mean final
    test accuracy over the pilot seeds moves from the best rate (the one the runner picked, on the
    pilot's test loss: :func:`batch_size_pilot_scores`) to the nearer of its neighbouring rates that
    did not diverge, times 100. Empty without pilot rows; an arm that diverged at every rate is left
    out."""
    if "stage" not in frame or not (frame["stage"] == "pilot").any():
        return {}
    pilot = frame[frame["stage"] == "pilot"]
    last = pilot[pilot["step"] == pilot.groupby(["norm", "batch_size", "lr", "seed"])["step"].transform("max")]
    means = last.groupby(["norm", "batch_size", "lr"])[["test_loss", "test_accuracy"]].mean().reset_index()
    out = {}
    for (norm, b), arm in means.groupby(["norm", "batch_size"]):
        arm = arm.sort_values("lr")
        loss = arm["test_loss"].to_numpy(dtype=np.float64)
        acc = arm["test_accuracy"].to_numpy(dtype=np.float64) * 100
        if not np.isfinite(loss).any():
            continue
        best = int(np.argmin(np.where(np.isfinite(loss), loss, np.inf)))  # as best_rates picks it
        out[(norm, int(b))] = min((abs(acc[j] - acc[best]) for j in (best - 1, best + 1)
                                   if 0 <= j < acc.size and np.isfinite(loss[j])), default=math.inf)
    return out


def _grid_resolution(steps: dict, batch: int, arms) -> tuple[float, str] | None:
    """The coarser grid step (:func:`pilot_accuracy_steps`) of the norms behind ``arms`` at ``batch``,
    as ``verdict``'s ``resolution`` (:func:`helpers.evidence.statistics.grid_resolution`)."""
    from helpers.evidence.statistics import grid_resolution

    return grid_resolution({ARMS[arm][0]: steps.get((ARMS[arm][0], int(batch)), math.inf) for arm in arms},
                           lambda norm, step: f"{norm}'s pilot accuracy at batch {batch} by {step:.1f} points")


def accuracy_gaps(frame: pd.DataFrame, *, pairs=GAP_PAIRS) -> pd.DataFrame:
    """Paired differences of the final test accuracy, in percentage points, with t-intervals.

    For each batch size and each pair ``(a, b)`` of arms (:data:`ARMS`: a norm, and for BN the way
    its accuracy is measured): the mean over seeds of ``a - b`` (the runs of one seed share data,
    initial weights and minibatches, so each seed gives one difference;
    :func:`helpers.evidence.statistics.paired_difference_ci`).

    Returns:
        One row per (batch size, pair): ``batch_size``, ``a``, ``b``, ``n_seeds``,
        ``estimate``, ``low``, ``high`` (points, ``a - b``, 95 % CI), ``outcome`` (``"a lower"``,
        ``"no difference detectable"`` or ``"a higher"``: the words follow the interval, not
        the estimate) and ``verdict`` (:func:`helpers.evidence.statistics.verdict`'s record), whose
        words say e.g. ``"BatchNorm has 7.3 points lower test accuracy than LayerNorm (95% CI 6.0 to 8.5)"``.
    """
    from helpers.evidence.statistics import paired_difference_ci, verdict

    wide = arm_accuracy(final_accuracy(frame))
    steps = pilot_accuracy_steps(frame)
    rows = []
    for b, per_seed in wide.groupby(level="batch_size"):
        for a, other in pairs:
            ci = paired_difference_ci(per_seed[a].to_numpy() * 100, per_seed[other].to_numpy() * 100,
                                      seeds=per_seed.index.get_level_values("seed"))
            outcome = ("a lower" if ci.high < 0 else "a higher" if ci.low > 0 else "no difference detectable")
            said = verdict(ci, a=a, b=other, quantity="test accuracy", claim=None, relative=False,
                           verb="has", words=("points lower", "points higher"), fmt=".1f", lower_is_better=False,
                           resolution=_grid_resolution(steps, b, (a, other)))
            rows.append({"batch_size": int(b), "a": a, "b": other, "n_seeds": ci.n, "estimate": ci.estimate,
                         "low": ci.low, "high": ci.high, "outcome": outcome, "verdict": said})
    return pd.DataFrame(rows)


def _summarize_batch_size(frame: pd.DataFrame) -> dict[str, str]:
    """The stored verdicts: each norm's tuned rate, whether it trains on the report seeds (``"best rate on
    the report seeds, <norm>, batch <b>"``, :func:`helpers.experiments.tuning_words.report_seed_words`:
    how many report seeds end with a test loss at or above :data:`CHANCE_LOSS`, against the pilot runs at
    the neighbouring rates), and ``"batch 2: BatchNorm vs LayerNorm"`` -> words, for every pair of
    :data:`GAP_PAIRS` and every batch size."""
    from helpers.evidence.statistics import best_rates
    from helpers.experiments.tuning_words import report_seed_words

    out = {}
    if "stage" in frame:
        pilot = frame[frame["stage"] == "pilot"]
        scores = batch_size_pilot_scores(pilot)
        scores["arm"] = scores["norm"] + ", batch " + scores["batch_size"].astype(str)
        best = best_rates(scores.drop(columns=["norm", "batch_size"]), arm="arm", lr="lr", score="score",
                          learned_below=CHANCE_LOSS)
        for row in best.itertuples():
            where = f"; {row.note}" if row.note else ", inside the grid"
            out[f"best rate, {row.arm}"] = (f"{row.best_lr:g} (mean final test loss {row.best_score:.3f} over the "
                                            f"{pilot['seed'].nunique()} pilot seeds{where})")
        # final_accuracy keeps the report rows of a frame that has both: each stage on its own
        ran = pd.concat([final_accuracy(frame[frame["stage"] == stage]) for stage in ("pilot", "report")],
                        ignore_index=True)
        ran = ran.assign(arm=ran["norm"] + ", batch " + ran["batch_size"].astype(str), value=ran["test_loss"])
        checked = report_seed_words(ran, learned_below=CHANCE_LOSS,
                                    stuck=f"ended with a test loss at or above chance ({CHANCE_LOSS:.3f})")
        out.update({f"best rate on the report seeds, {arm}": words for arm, words in checked.items()})
    for r in accuracy_gaps(frame).itertuples():
        out[f"batch {r.batch_size}: {r.a} vs {r.b}"] = r.verdict
    return out


runner.register(runner.Experiment(
    name="batch_size", notebook="11_batchnorm_in_depth", train=_batch_size_unit,
    grid={"norm": NORMS, "batch_size": BATCH_SIZES}, seeds=BATCH_SIZE_SEEDS, seeds_per_unit=10,
    steps=BATCH_SIZE_SAMPLES // min(BATCH_SIZES), summarize=_summarize_batch_size, version=3,
    # 30 units: each (norm, batch size) tuned over 8 rates on 3 pilot seeds, then 10 fresh seeds at its
    # best rate. Steps dominate: a pilot unit at batch 2 trains 8 rates x 6,400 steps, one at batch 128
    # 8 x 100.
    budget_s=4000,
    tuning=runner.Tuning(key="lr", rates=BATCH_SIZE_RATES, pilot_seeds=BATCH_SIZE_PILOT_SEEDS,
                         score=batch_size_pilot_scores, learned_below=CHANCE_LOSS),
    # The reproducibility check re-trains unit 24, LayerNorm's report unit at batch 128 (after the 15
    # pilot units and the report units of BatchNorm and of LayerNorm's smaller batches), a calm one.
    # BatchNorm's units at small batches are chaotic from their first step (at batch 2 a variance of two
    # values). An accuracy moves by whole examples, so its bound is one of them.
    repro_rtol=0.0,
    repro_atol=1.8e-6,
    repro_measured=1.79e-7,
    repro_atol_by_column={".*accuracy": 1 / 1024},
    repro_measured_by_column={".*accuracy": 0.0},
    repro_unit=24))
