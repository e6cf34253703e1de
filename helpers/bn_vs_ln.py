"""BatchNorm against LayerNorm (notebook 03): whose statistics, what depends on the batch.

Plain functions that return tensors or tidy DataFrames, so a notebook can show them and
tests can assert on them:

- :func:`two_sample_stats`: the lesson's promised two-sample example, BN's per-feature and
  LN's per-sample mean and variance side by side.
- :func:`both_ways`, :func:`batch_dependence`, :func:`state_and_modes`: the first contrast of
  notebooks 00 and 01: one small batch normalized over the batch (BN, training mode) and over
  the features (LN); one sample's output when another sample changes; what each module stores
  and whether ``train()`` and ``eval()`` agree.
- :func:`pooling_groups`: which entries of a ``(batch, features)`` or ``(batch, seq_len,
  features)`` tensor share one mean and variance under BN and under LN.
- :func:`batch_mean_noise`: how far a batch's mean strays from the population's, per
  batch size.
- :func:`batch_size_runs`: identical small MLPs with BatchNorm, LayerNorm or no norm,
  trained on the same number of samples at several batch sizes, the rate scaled with the
  batch, on a synthetic task (:data:`TASK_RULE`); BN's accuracy measured in ``eval()`` mode, in
  training mode and with precise statistics. The experiment ``batch_size`` (``make experiments
  ONLY=batch_size``) tunes each norm's rate at the largest batch, then stores 10 fresh seeds;
  :func:`final_accuracy` and :func:`accuracy_gaps` read the stored table (paired differences
  with bootstrap intervals).
- :func:`shift_robustness`: BN with trained statistics and LN on data shifted feature by
  feature: neither is robust to it.
- :func:`padding_pollution`: BN over padded sequences lets pad tokens into the real
  tokens' statistics; per-token LN does not.
- :func:`invariance_table`: Table 1 of Ba, Kiros and Hinton (2016), measured.
"""

from __future__ import annotations

import math

import pandas as pd
import torch
import torch.nn.functional as F
from torch import nn

from helpers import runner
from helpers.checks import Case, Exercise, Verdict, check, register
from helpers.functional import batch_norm, layer_norm, rms_norm
from helpers.sequence import pad_batch
from helpers.stats import group_stats

__all__ = [
    "ARMS",
    "BATCH_SIZES",
    "GAP_PAIRS",
    "NORMS",
    "StackedMLP",
    "PAPER_TABLE",
    "TASK_RULE",
    "TWO_SAMPLES",
    "accuracy_gaps",
    "arm_accuracy",
    "batch_dependence",
    "both_ways",
    "batch_mean_noise",
    "batch_size_pilot_scores",
    "batch_size_runs",
    "batch_size_summary",
    "check_batch_norm_train",
    "check_running_var_update",
    "final_accuracy",
    "invariance_table",
    "make_task",
    "padding_pollution",
    "pooling_groups",
    "shift_robustness",
    "state_and_modes",
    "state_dict_diff",
    "two_sample_stats",
]

#: The two-sample example: 2 samples (rows) x 3 features (columns), on very different scales.
TWO_SAMPLES = torch.tensor([[1.0, 20.0, 300.0],
                            [3.0, 60.0, 100.0]])

#: The normalizations :func:`batch_size_runs` compares.
NORMS = ("BatchNorm", "LayerNorm", "no norm")

#: The synthetic task's rule, as the notebook shows it.
TASK_RULE = "label = 1 if x0 * x1 + 0.5 * sin(3 * x2) > 0 else 0,  x ~ N(0, I_8)"


def two_sample_stats(x: torch.Tensor = TWO_SAMPLES) -> pd.DataFrame:
    """BN's statistics (one per feature, over the batch) and LN's (one per sample, over its features).

    Returns:
        One row per group: index ``(norm, group)`` with ``norm`` ``"BatchNorm"`` (groups
        ``feature 0``...) or ``"LayerNorm"`` (groups ``sample 0``...), columns ``count``,
        ``mean`` and ``var`` (biased, as both normalize with).
    """
    if x.ndim != 2:
        raise ValueError(f"two_sample_stats(): argument 'x' must be 2-D (samples, features), "
                         f"got shape {tuple(x.shape)}")
    bn = group_stats(x, 0, names=("sample", "feature"))
    ln = group_stats(x, 1, names=("sample", "feature"))
    frames = []
    for norm, frame, label in (("BatchNorm", bn, "feature"), ("LayerNorm", ln, "sample")):
        frame = frame[["count", "mean", "var"]].copy()
        frame.index = pd.MultiIndex.from_tuples([(norm, f"{label} {i}") for i in frame.index],
                                                names=["norm", "group"])
        frames.append(frame)
    return pd.concat(frames)


def _check_2d(fn: str, x: torch.Tensor) -> None:
    if x.ndim != 2 or x.shape[0] < 2:
        raise ValueError(f"{fn}(): argument 'x' must be 2-D (samples, features) with at least 2 samples, "
                         f"got shape {tuple(x.shape)}")


def _bn_ln(x: torch.Tensor) -> dict[str, torch.Tensor]:
    """BN in training mode (each feature over the batch, dim 0) and LN (each sample over its features, dim -1)."""
    return {"BatchNorm": batch_norm(x, None, None, training=True), "LayerNorm": layer_norm(x, (x.shape[-1],))}


def both_ways(x: torch.Tensor) -> pd.DataFrame:
    """A ``(samples, features)`` batch normalized over dim 0 (BN, training mode) and over dim -1 (LN).

    Both with ``eps = 1e-5``, the biased variance and no gamma or beta (``helpers.batch_norm``
    with ``training=True`` and no running statistics; ``helpers.layer_norm``).

    Returns:
        One row per (norm, sample): index ``("norm", "sample")`` with ``norm`` ``"input"``,
        ``"BatchNorm"`` or ``"LayerNorm"``, one column per feature (``feature 0`` ...).
    """
    _check_2d("both_ways", x)
    outputs = {"input": x, **_bn_ln(x)}
    columns = [f"feature {j}" for j in range(x.shape[1])]
    return pd.concat({norm: pd.DataFrame(out.detach().double().numpy(), columns=columns)
                      for norm, out in outputs.items()}, names=["norm", "sample"])


def batch_dependence(x: torch.Tensor, new: torch.Tensor, *, sample: int = 0, other: int = 1) -> pd.DataFrame:
    """Does one sample's output change when *another* sample of the batch changes?

    Row ``other`` of ``x`` is replaced by ``new``; BN (training mode) and LN normalize both
    batches, as in :func:`both_ways`.

    Returns:
        One row per norm (``"BatchNorm"``, ``"LayerNorm"``): ``largest change of sample
        {sample}`` (the largest ``|difference|`` of row ``sample``'s outputs) and ``unchanged``
        (``torch.equal``: bit for bit the same).
    """
    _check_2d("batch_dependence", x)
    if new.shape != x.shape[1:]:
        raise ValueError(f"batch_dependence(): argument 'new' must have shape {tuple(x.shape[1:])} "
                         f"(one sample), got {tuple(new.shape)}")
    if sample == other or not (0 <= sample < len(x) and 0 <= other < len(x)):
        raise ValueError(f"batch_dependence(): arguments 'sample' and 'other' must be two different rows of "
                         f"the {len(x)} samples, got {sample} and {other}")
    changed = x.clone()
    changed[other] = new
    before, after = _bn_ln(x), _bn_ln(changed)
    return pd.DataFrame(
        [{f"largest change of sample {sample}": (after[n][sample] - before[n][sample]).abs().max().item(),
          "unchanged": torch.equal(after[n][sample], before[n][sample])} for n in before],
        index=pd.Index(list(before), name="norm"))


def state_and_modes(x: torch.Tensor) -> pd.DataFrame:
    """What a fresh ``nn.BatchNorm1d`` and ``nn.LayerNorm`` keep, and whether train and eval agree on ``x``.

    Returns:
        One row per module (``"nn.BatchNorm1d(C)"``, ``"nn.LayerNorm(C)"`` for ``C`` features):
        ``parameters`` and ``buffers`` (their names), ``state dict keys`` (how many), and
        ``largest |train - eval|`` (the largest difference between the module's outputs on
        ``x`` in ``train()`` and, after that call, in ``eval()``) and ``train == eval``
        (``torch.equal``).
    """
    _check_2d("state_and_modes", x)
    c = x.shape[1]
    rows = {}
    for name, module in ((f"nn.BatchNorm1d({c})", nn.BatchNorm1d(c)), (f"nn.LayerNorm({c})", nn.LayerNorm(c))):
        with torch.no_grad():
            train_out = module.train()(x)
            eval_out = module.eval()(x)
        rows[name] = {"parameters": ", ".join(n for n, _ in module.named_parameters()),
                      "buffers": ", ".join(n for n, _ in module.named_buffers()) or "(none)",
                      "state dict keys": len(module.state_dict()),
                      "largest |train - eval|": (train_out - eval_out).abs().max().item(),
                      "train == eval": torch.equal(train_out, eval_out)}
    return pd.DataFrame.from_dict(rows, orient="index").rename_axis("module")


def pooling_groups(shape: tuple[int, ...], norm: str) -> torch.Tensor:
    """A label per entry: entries with the same label share one mean and variance.

    Args:
        shape: ``(batch, features)`` or ``(batch, seq_len, features)`` (features last, as
            a Transformer holds them; BN pools every position of a feature).
        norm: ``"BatchNorm"`` (one group per feature) or ``"LayerNorm"`` (one group per
            sample, or per token for 3-D: ``normalized_shape=features``).

    Returns:
        An integer tensor of ``shape``.
    """
    if len(shape) not in (2, 3):
        raise ValueError(f"pooling_groups(): argument 'shape' must have 2 or 3 dims, got {shape}")
    index = torch.arange(math.prod(shape)).reshape(shape)
    if norm == "BatchNorm":
        return index % shape[-1]
    if norm == "LayerNorm":
        return index // shape[-1]
    raise ValueError(f"pooling_groups(): argument 'norm' must be 'BatchNorm' or 'LayerNorm', got {norm!r}")


def batch_mean_noise(batch_sizes=(1, 2, 4, 8, 16, 32, 64, 128), *, trials: int = 2000,
                     seed: int = 0) -> pd.DataFrame:
    """How far the mean of a batch of standard-normal values strays from the true mean 0.

    For each batch size ``B``, ``trials`` batches are drawn; the spread (std) of their
    means is what BN's training-time centring wobbles by, against ``1 / sqrt(B)``.

    Returns:
        One row per batch size: ``batch_size``, ``std_of_batch_mean`` and ``theory``
        (``1 / sqrt(B)``).
    """
    g = torch.Generator().manual_seed(seed)
    rows = []
    for b in batch_sizes:
        means = torch.randn(trials, b, generator=g, dtype=torch.float64).mean(dim=1)
        rows.append({"batch_size": b, "std_of_batch_mean": means.std().item(), "theory": 1 / math.sqrt(b)})
    return pd.DataFrame(rows)


# ------------------------------------------------------------ the batch-size experiment


def make_task(n: int, generator: torch.Generator, in_features: int = 8) -> tuple[torch.Tensor, torch.Tensor]:
    """``n`` samples of the synthetic task :data:`TASK_RULE`: ``(x, label)``, labels 0/1 (float)."""
    x = torch.randn(n, in_features, generator=generator)
    label = (x[:, 0] * x[:, 1] + 0.5 * torch.sin(3 * x[:, 2]) > 0).float()
    return x, label


class StackedMLP(nn.Module):
    """``len(norms) * n_seeds`` identical-shaped MLPs trained at once, one per (norm, seed).

    Each model is ``Linear -> norm -> ReLU -> Linear -> norm -> ReLU -> Linear(width, 1)``;
    model ``m`` uses ``norms[m // n_seeds]`` and the weights of seed ``m % n_seeds``, so the
    models of one seed start from the *same* weights and differ only by the norm. The norms
    have **no gamma or beta** (``helpers.batch_norm`` and ``helpers.layer_norm`` without weight
    and bias), so BN and LN outputs are exactly standardised. The weights are stacked along a
    leading model dim and applied with ``torch.baddbmm``: one step trains all models, each on
    its own minibatch, and (the loss being a sum over models) no model's gradient depends on
    another's. BN keeps running statistics per model and layer (``helpers.batch_norm`` updates
    them: momentum 0.1, unbiased variance).
    """

    def __init__(self, n_seeds: int, *, in_features: int = 8, width: int = 32, generators=None,
                 norms: tuple[str, ...] = NORMS):
        super().__init__()
        unknown = [n for n in norms if n not in NORMS]
        if unknown or not norms:
            raise ValueError(f"StackedMLP(): argument 'norms' must be a non-empty tuple of {NORMS}, got {norms!r}")
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

    def _norm(self, h: torch.Tensor, layer: int, group: int | None = None) -> torch.Tensor:
        s = self.n_seeds
        parts = []
        for k, norm in enumerate(self.norms):
            part = h[k * s:(k + 1) * s]
            if norm == "BatchNorm":
                part = self._batch_norm(part, layer, group)
            elif norm == "LayerNorm":
                part = layer_norm(part, (self.width,))
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
                    n_train: int = 2048, n_test: int = 1024, record=None, progress: bool = False) -> pd.DataFrame:
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
    if n_test % max(batch_sizes):
        raise ValueError(f"batch_size_runs(): argument 'n_test' must be a multiple of every batch size, "
                         f"got {n_test} and {tuple(batch_sizes)}")
    sizes = batch_sizes
    if progress:
        from tqdm.auto import tqdm

        sizes = tqdm(batch_sizes, desc="batch sizes", leave=False)
    rows = []
    for b in sizes:
        n_steps = samples // b if steps is None else min(steps, samples // b)
        wanted = ({n_steps - 1} if record is None else set(record(n_steps)) if callable(record) else set(record))
        if not wanted or min(wanted) < 0 or max(wanted) >= n_steps:
            raise ValueError(f"batch_size_runs(): argument 'record' must hold steps in [0, {n_steps - 1}] at batch "
                             f"size {b}, got {sorted(wanted)}")
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


def state_dict_diff(a: nn.Module, b: nn.Module, names=("a", "b")) -> pd.DataFrame:
    """Every ``state_dict`` key of ``a`` or ``b``, and its shape in each (``-`` where absent)."""
    sa, sb = a.state_dict(), b.state_dict()
    keys = list(sa) + [k for k in sb if k not in sa]

    def shape(sd, k):
        return str(tuple(sd[k].shape)) if k in sd else "-"

    return pd.DataFrame({names[0]: [shape(sa, k) for k in keys], names[1]: [shape(sb, k) for k in keys]},
                        index=pd.Index(keys, name="key"))


# ------------------------------------------------------------ a shift between training and deployment


def shift_robustness(shift: torch.Tensor, scale: torch.Tensor, *, n: int = 4096, batches: int = 200,
                     batch_size: int = 32, seed: int = 0) -> pd.DataFrame:
    """BN with trained statistics and LN, on in-distribution data and on data shifted feature by feature.

    Training data is standard normal, ``(*, C)`` with ``C = len(shift)``. BN's statistics are
    trained on ``batches`` batches of ``batch_size`` with ``momentum=None`` (a cumulative average
    of the batch statistics: converged, not one update), then BN runs in ``eval()``. The test
    data are ``n`` fresh standard-normal samples, as they are (``"in distribution"``) and as
    ``x * scale + shift`` (``"shifted"``, a different shift and scale per feature). LN is
    ``nn.LayerNorm(C)`` (gamma 1, beta 0).

    Returns:
        One row per (norm, data), columns ``feature {j} mean`` and ``feature {j} std`` of the
        outputs, feature by feature over the ``n`` samples (float64, biased std), and
        ``largest change from in distribution``: the largest change of a feature's output mean
        or std from the same norm on in-distribution data.
    """
    if shift.ndim != 1 or shift.shape != scale.shape:
        raise ValueError(f"shift_robustness(): arguments 'shift' and 'scale' must be 1-D of one length, "
                         f"got shapes {tuple(shift.shape)} and {tuple(scale.shape)}")
    c = len(shift)
    g = torch.Generator().manual_seed(seed)
    bn = nn.BatchNorm1d(c, momentum=None)
    with torch.no_grad():
        for _ in range(batches):
            bn(torch.randn(batch_size, c, generator=g))
    bn.eval()
    ln = nn.LayerNorm(c)
    clean = torch.randn(n, c, generator=g)
    data = {"in distribution": clean, "shifted": clean * scale + shift}
    rows = {}
    with torch.no_grad():
        for name, module in (("BatchNorm1d, eval()", bn), ("LayerNorm", ln)):
            for label, x in data.items():
                y = module(x).double()
                rows[name, label] = {**{f"feature {j} mean": y[:, j].mean().item() for j in range(c)},
                                     **{f"feature {j} std": y[:, j].std(unbiased=False).item() for j in range(c)}}
    table = pd.DataFrame.from_dict(rows, orient="index")
    table.index = pd.MultiIndex.from_tuples(table.index, names=["norm", "data"])
    reference = table.xs("in distribution", level="data")
    table["largest change from in distribution"] = [
        (table.loc[key, reference.columns] - reference.loc[key[0]]).abs().max() for key in table.index]
    return table


# ------------------------------------------------------------ padding


def padding_pollution(lengths=(5, 2), dim: int = 4, *, seed: int = 0, extra_pads: int = 3) -> pd.DataFrame:
    """Normalize the same real tokens padded to two lengths; how much do their outputs move?

    The sentences (``lengths`` tokens of ``dim`` features) are padded with zeros to the
    longest, then again with ``extra_pads`` more zero tokens. BN (per feature, over every
    position of the batch, pads included) and per-token LN are applied to both.

    Returns:
        One row per norm (``"BatchNorm over (batch, seq_len)"``, ``"LayerNorm per token"``):
        ``real_token_max_change`` (largest change of a real token's output between the two
        paddings) and ``pad_share`` (the fraction of pooled positions that are pads, per
        padding: a string ``"a -> b"``).
    """
    g = torch.Generator().manual_seed(seed)
    sentences = [torch.randn(n, dim, generator=g) * 2 + 1 for n in lengths]
    short, mask_short = pad_batch(sentences)
    long = torch.cat([short, short.new_zeros(short.shape[0], extra_pads, dim)], dim=1)
    real = mask_short[..., None].expand_as(short)

    def bn(x):  # channels = features: (batch, seq, dim) -> (batch, dim, seq)
        return batch_norm(x.transpose(1, 2), None, None, training=True).transpose(1, 2)

    def ln(x):
        return layer_norm(x, (dim,))

    rows = []
    for name, fn in (("BatchNorm over (batch, seq_len)", bn), ("LayerNorm per token", ln)):
        change = (fn(short) - fn(long)[:, : short.shape[1]]).abs()[real].max().item()
        n_real = int(mask_short.sum())
        share = f"{1 - n_real / mask_short.numel():.2f} -> {1 - n_real / (long.shape[0] * long.shape[1]):.2f}"
        rows.append({"norm": name, "real_token_max_change": change, "pad_share": share})
    return pd.DataFrame(rows).set_index("norm")


# ------------------------------------------------------------ invariances

#: Table 1 of Ba, Kiros and Hinton (2016), arXiv:1607.06450 (batch, weight and layer
#: normalization), and RMSNorm's row from Table 1 of Zhang and Sennrich (2019), arXiv:1910.07467.
PAPER_TABLE = pd.DataFrame(
    {"BatchNorm": [True, False, True, True, True, False],
     "WeightNorm": [True, False, True, False, False, False],
     "LayerNorm": [True, True, False, True, False, True],
     "RMSNorm": [True, False, False, True, False, True]},
    index=pd.Index(["weight matrix re-scaling", "weight matrix re-centering", "weight vector re-scaling",
                    "dataset re-scaling", "dataset re-centering", "single training case re-scaling"],
                   name="transformation"),
)

#: Each norm as ``fn(x, W, eps)`` -> the normalized summed inputs: BN, LN and RMSNorm act on
#: ``a = x @ W.T``; weight normalization (Salimans & Kingma 2016, gain 1) on the weights,
#: ``x @ (W / ||W_i||).T``, each unit's weight vector divided by its length.
_INVARIANCE_NORMS = {
    "BatchNorm": lambda x, w, eps: batch_norm(x @ w.T, None, None, training=True, eps=eps),
    "WeightNorm": lambda x, w, eps: x @ (w / w.norm(dim=1, keepdim=True)).T,
    "LayerNorm": lambda x, w, eps: layer_norm(x @ w.T, (w.shape[0],), eps=eps),
    "RMSNorm": lambda x, w, eps: rms_norm(x @ w.T, (w.shape[0],), eps=eps),
}


def _transformations(x: torch.Tensor, w: torch.Tensor, g: torch.Generator) -> dict:
    """``name -> (x', W')``; the summed inputs are ``a = x @ W.T`` (cases x units), no bias."""
    n, d = x.shape
    h = w.shape[0]
    delta = 3.0
    row_shift = torch.randn(d, generator=g, dtype=x.dtype)  # one vector added to every row of W
    data_shift = torch.randn(d, generator=g, dtype=x.dtype)
    w_vec = w.clone()
    w_vec[0] *= delta
    x_case = x.clone()
    x_case[0] *= delta
    del n, h
    return {
        "weight matrix re-scaling": (x, delta * w),
        "weight matrix re-centering": (x, w + row_shift),
        "weight vector re-scaling": (x, w_vec),
        "dataset re-scaling": (delta * x, w),
        "dataset re-centering": (x + data_shift, w),
        "single training case re-scaling": (x_case, w),
    }


def invariance_table(*, cases: int = 16, in_features: int = 6, units: int = 5, seed: int = 0,
                     eps: float = 1e-10, tol: float = 1e-6) -> pd.DataFrame:
    """Measure, for BN, WeightNorm, LN and RMSNorm, which of Ba et al.'s transformations leave the output unchanged.

    Definitions (the paper's, with ``a = x @ W.T`` the summed inputs of one layer, rows
    of ``W`` one unit's weight vector, rows of ``x`` the training cases):
    weight matrix re-scaling ``W -> 3 W``; weight matrix re-centering ``W -> W + 1 v^T``
    (the same vector ``v`` added to every unit's weights); weight vector re-scaling: one
    row of ``W`` times 3; dataset re-scaling ``x -> 3 x``; dataset re-centering ``x -> x +
    c`` (the same ``c`` for every case); single training case re-scaling: one row of
    ``x`` times 3. The norms run without gamma/beta (BN on the batch's statistics) in
    float64 with a tiny ``eps``: with the usual 1e-5, a re-scaling by 3 moves the output by
    a relative amount of order ``eps / Var``, which would blur "invariant up to eps" into a
    threshold on the data. *Invariant* means the output moved by less than ``tol``.

    Returns:
        One row per transformation; columns ``BatchNorm``, ``WeightNorm``, ``LayerNorm``,
        ``RMSNorm`` (measured, bool), ``... max change`` for each, and ``paper ...`` for each
        (:data:`PAPER_TABLE`: Ba et al.'s Table 1, RMSNorm's row from Zhang & Sennrich's).
    """
    g = torch.Generator().manual_seed(seed)
    x = torch.randn(cases, in_features, generator=g, dtype=torch.float64)
    w = torch.randn(units, in_features, generator=g, dtype=torch.float64)
    rows = {}
    for name, (x2, w2) in _transformations(x, w, g).items():
        row = {}
        for norm, fn in _INVARIANCE_NORMS.items():
            row[f"{norm} max change"] = (fn(x2, w2, eps) - fn(x, w, eps)).abs().max().item()
        for norm in _INVARIANCE_NORMS:
            row[norm] = row[f"{norm} max change"] < tol
        rows[name] = row
    table = pd.DataFrame.from_dict(rows, orient="index")
    table.index.name = "transformation"
    table = table[[*_INVARIANCE_NORMS, *(f"{n} max change" for n in _INVARIANCE_NORMS)]]
    for norm in PAPER_TABLE:
        table[f"paper {norm}"] = PAPER_TABLE[norm]
    return table


# ------------------------------------------------------------ exercises (helpers.checks)


def _bn_train_reference(x: torch.Tensor) -> torch.Tensor:
    return F.batch_norm(x, None, None, training=True, eps=1e-5)


def _standardize_over(x: torch.Tensor, dim: int, *, unbiased: bool = False) -> torch.Tensor:
    mean = x.mean(dim=dim, keepdim=True)
    return (x - mean) / torch.sqrt(x.var(dim=dim, unbiased=unbiased, keepdim=True) + 1e-5)


def _randn_case(n: int, c: int, mean: float = 0.0, std: float = 1.0):
    return lambda g: (torch.randn(n, c, generator=g) * std + mean,)


register(Exercise(
    name="batch_norm_train",
    reference=_bn_train_reference,
    cases=[
        Case("the two-sample example (2 samples x 3 features)", lambda g: (TWO_SAMPLES.clone(),)),
        Case("8 samples x 4 features from randn", _randn_case(8, 4)),
        Case("16 samples x 5 features, mean 3 and std 10", _randn_case(16, 5, 3.0, 10.0)),
        Case("32 samples x 4 features around 10000 (std 500)", _randn_case(32, 4, 1e4, 500.0)),
        Case("8 samples x 3 features that barely differ (std 0.003)", _randn_case(8, 3, 0.0, 0.003)),
    ],
    mistakes={
        "you normalized each sample over its features (that is LayerNorm): BatchNorm takes each "
        "feature's statistics over the batch, `dim=0`.": lambda x: _standardize_over(x, 1),
        "`x.var()` divides by n - 1 (unbiased); BatchNorm normalizes with the biased variance: "
        "`x.var(dim=0, unbiased=False)`.": lambda x: _standardize_over(x, 0, unbiased=True),
        "eps goes inside the square root: `torch.sqrt(var + eps)`, not `torch.sqrt(var) + eps`.":
            lambda x: (x - x.mean(dim=0, keepdim=True)) / (x.var(dim=0, unbiased=False, keepdim=True).sqrt() + 1e-5),
        "E[x²] - E[x]² subtracts two huge, nearly equal numbers when the mean is large next to the "
        "spread, and float32 cancels catastrophically: centre first, then average the squares.":
            lambda x: (x - x.mean(dim=0, keepdim=True))
            / torch.sqrt((x * x).mean(dim=0, keepdim=True) - x.mean(dim=0, keepdim=True) ** 2 + 1e-5),
        "you took one mean and variance over the whole batch: BatchNorm takes one per feature, "
        "`dim=0` with `keepdim=True`.": lambda x: (x - x.mean()) / torch.sqrt(x.var(unbiased=False) + 1e-5),
    },
    hint="per feature: mean and biased variance over dim 0 (keepdim=True), then (x - mean) / sqrt(var + 1e-5).",
    example="torch.randn(8, 4)",
))


def _running_var_reference(running_var: torch.Tensor, x: torch.Tensor) -> torch.Tensor:
    running_var = running_var.clone()
    F.batch_norm(x, torch.zeros_like(running_var), running_var, training=True, momentum=0.1)
    return running_var


def _running_var_slip(running_var, x, *, unbiased=True, swap=False):
    var = x.var(dim=0, unbiased=unbiased)
    return 0.1 * running_var + 0.9 * var if swap else 0.9 * running_var + 0.1 * var


register(Exercise(
    name="running_var_update",
    reference=_running_var_reference,
    cases=[
        Case("running_var = 1, batch of 4 x 3", lambda g: (torch.ones(3), torch.randn(4, 3, generator=g))),
        Case("running_var from rand, batch of 2 x 5", lambda g: (torch.rand(5, generator=g) + 0.5,
                                                                 torch.randn(2, 5, generator=g) * 3)),
        Case("running_var = 2, batch of 32 x 4", lambda g: (torch.full((4,), 2.0), torch.randn(32, 4, generator=g))),
    ],
    mistakes={
        "the running estimate stores the UNBIASED batch variance (divided by n - 1): "
        "`x.var(dim=0, unbiased=True)`.": lambda rv, x: _running_var_slip(rv, x, unbiased=False),
        "momentum weighs the NEW batch: `(1 - 0.1) * running_var + 0.1 * batch_var`.":
            lambda rv, x: _running_var_slip(rv, x, swap=True),
    },
    hint="new running_var = 0.9 * running_var + 0.1 * x.var(dim=0, unbiased=True).",
    example="torch.ones(3), torch.randn(4, 3)",
    shape_hint="return one value per feature: the shape of running_var.",
))


def check_batch_norm_train(fn) -> Verdict:
    """Check ``fn(x)``: BatchNorm in training mode (no gamma/beta, eps 1e-5) of ``x`` ``(N, C)``."""
    return check("batch_norm_train", fn)


def check_running_var_update(fn) -> Verdict:
    """Check ``fn(running_var, x)``: the new ``running_var`` after one training step (momentum 0.1)."""
    return check("running_var_update", fn)


# ------------------------------------------------------------ the stored experiment (make experiments)

#: The stored batch-size experiment: the notebook's toy (Adam at 0.02 for 100 steps) at 20 seeds.
BATCH_SIZES = (2, 4, 8, 32, 128)
#: The reported seeds (fresh: the pilot's are 100 to 102).
BATCH_SIZE_SEEDS = tuple(range(10))
BATCH_SIZE_PILOT_SEEDS = (100, 101, 102)
#: Every batch size sees this many training samples (100 steps at batch 128, 6400 at batch 2).
BATCH_SIZE_SAMPLES = 12_800
#: The rates tried at the largest batch, where each norm's rate is tuned.
BATCH_SIZE_RATES = (0.001, 0.003, 0.01, 0.03, 0.1, 0.3)
#: A pilot score at or above this (the cross-entropy of always answering 1/2) learned nothing.
CHANCE_LOSS = math.log(2)


def _recorded_steps(steps: int) -> list[int]:
    """Every one of the first 20 steps (the runner's reproducibility check re-runs them), then
    about 10 more, evenly spaced in log steps, and the last."""
    later = {round(10 ** (math.log10(20) + k * (math.log10(steps) - math.log10(20)) / 10)) - 1 for k in range(11)}
    return sorted({*range(min(20, steps)), *(t for t in later if 20 <= t < steps), steps - 1})


def _batch_size_unit(*, norm: str, lr, seeds, steps: int) -> pd.DataFrame:
    """One unit of the stored experiment, for one norm.

    A pilot unit (``lr`` a tuple: the tuning grid, stacked by the runner) trains at the largest
    batch size only, once per rate: the rate is tuned there. A report unit (``lr`` one rate, the
    pilot's best) trains every batch size with that rate scaled by ``sqrt(batch / largest)``.
    """
    largest = max(BATCH_SIZES)
    if isinstance(lr, tuple):
        return pd.concat([batch_size_runs(batch_sizes=(largest,), seeds=seeds, samples=BATCH_SIZE_SAMPLES, lr=rate,
                                          lr_batch=largest, steps=steps, norms=(norm,), record=_recorded_steps)
                          for rate in lr], ignore_index=True)
    return batch_size_runs(batch_sizes=BATCH_SIZES, seeds=seeds, samples=BATCH_SIZE_SAMPLES, lr=lr, lr_batch=largest,
                           steps=steps, norms=(norm,), record=_recorded_steps)


def batch_size_pilot_scores(frame: pd.DataFrame) -> pd.DataFrame:
    """The tuning's score: per norm and rate, the mean over the pilot seeds of the final test loss at the
    largest batch (``eval()`` mode), lower is better; a diverged run (NaN) never wins."""
    final = final_accuracy(frame)
    scores = final.groupby(["norm", "lr"], sort=False)["test_loss"].mean().reset_index()
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


def accuracy_gaps(frame: pd.DataFrame, *, pairs=GAP_PAIRS) -> pd.DataFrame:
    """Paired differences of the final test accuracy, in percentage points, with bootstrap intervals.

    For each batch size and each pair ``(a, b)`` of arms (:data:`ARMS`: a norm, and for BN the way
    its accuracy is measured): the mean over seeds of ``a - b`` (the runs of one seed share data,
    initial weights and minibatches, so the pairs are resampled together;
    :func:`helpers.inference.paired_difference_ci`).

    Returns:
        One row per (batch size, pair): ``batch_size``, ``a``, ``b``, ``n_seeds``,
        ``estimate``, ``low``, ``high`` (points, ``a - b``, 95 % CI), ``outcome`` (``"a lower"``,
        ``"no difference detectable"`` or ``"a higher"``: the words follow the interval, not
        the estimate) and ``words`` (:func:`helpers.inference.verdict`'s), e.g. ``"BatchNorm has
        7.3 points lower test accuracy than LayerNorm (95% CI 6.0 to 8.5)"``.
    """
    from helpers.inference import paired_difference_ci, verdict

    wide = arm_accuracy(final_accuracy(frame))
    rows = []
    for b, per_seed in wide.groupby(level="batch_size"):
        for a, other in pairs:
            ci = paired_difference_ci(per_seed[a].to_numpy() * 100, per_seed[other].to_numpy() * 100)
            outcome = ("a lower" if ci.high < 0 else "a higher" if ci.low > 0 else "no difference detectable")
            words = verdict(ci, a=a, b=other, quantity="test accuracy", claim=None, relative=False,
                            verb="has", words=("points lower", "points higher"), fmt=".1f")
            rows.append({"batch_size": int(b), "a": a, "b": other, "n_seeds": ci.n, "estimate": ci.estimate,
                         "low": ci.low, "high": ci.high, "outcome": outcome, "words": words})
    return pd.DataFrame(rows)


def _summarize_batch_size(frame: pd.DataFrame) -> dict[str, str]:
    """The stored verdicts: each norm's tuned rate, and ``"batch 2: BatchNorm vs LayerNorm"`` -> words, for
    every pair of :data:`GAP_PAIRS` and every batch size."""
    from helpers.inference import best_rates

    out = {}
    if "stage" in frame:
        pilot = frame[frame["stage"] == "pilot"]
        best = best_rates(batch_size_pilot_scores(pilot), arm="norm", lr="lr", score="score",
                          learned_below=CHANCE_LOSS)
        for row in best.itertuples():
            where = f"; {row.note}" if row.note else ", inside the grid"
            out[f"best rate, {row.norm}"] = (f"{row.best_lr:g} at batch {max(BATCH_SIZES)} (mean final test loss "
                                             f"{row.best_score:.3f} over the {pilot['seed'].nunique()} pilot seeds{where})")
    for r in accuracy_gaps(frame).itertuples():
        out[f"batch {r.batch_size}: {r.a} vs {r.b}"] = r.words
    return out


runner.register(runner.Experiment(
    name="batch_size", notebook="03_layernorm_vs_batchnorm", train=_batch_size_unit,
    grid={"norm": NORMS}, seeds=BATCH_SIZE_SEEDS, seeds_per_unit=10, steps=BATCH_SIZE_SAMPLES // min(BATCH_SIZES),
    summarize=_summarize_batch_size, budget_s=900, version=2,
    tuning=runner.Tuning(key="lr", rates=BATCH_SIZE_RATES, pilot_seeds=BATCH_SIZE_PILOT_SEEDS,
                         score=batch_size_pilot_scores, learned_below=CHANCE_LOSS),
    # The reproducibility check re-trains LayerNorm's report unit (after the three pilot units and
    # BatchNorm's), the calm one: across the kernel paths (`python -m helpers.reproduction`) its test
    # losses agree to 2.4e-7 for 19 steps and 7.1e-6 at step 19, its accuracies exactly. BatchNorm's
    # unit is chaotic from its first step (at batch 2 a variance of two values): test losses 4.5e-3
    # apart at step 0 and 1.7e-2 by step 19, accuracies by up to 24 of the 1,024 test examples. An
    # accuracy moves by whole examples, so its bound is one of them.
    repro_rtol=0.0,
    repro_atol=7.1e-5,
    repro_measured=7.09e-6,
    repro_atol_by_column={".*accuracy": 1 / 1024},
    repro_measured_by_column={".*accuracy": 0.0},
    repro_unit=4))
