"""Does LayerNorm speed up training? (notebook 05): seeded runs that return tidy DataFrames.

The lesson's headline claim is that LN "speeds up training and improves convergence" of
deep RNNs. These experiments measure it on the adding problem (:func:`adding_task`,
Hochreiter and Schmidhuber 1997), an offline sequence task a tiny RNN can learn:

- :class:`StackedRNN`: many small tanh RNNs, one or more layers deep, trained at once as one
  stacked network, one per (variant, noise, learning rate, seed). Variant ``"LayerNorm"``
  normalizes the summed inputs of each hidden layer at every time step, as in Ba, Kiros and
  Hinton (2016), ``h_t = tanh(g * LN(W_x x_t + W_h h_{t-1}) + b)``; ``"no norm"`` is the
  same network with a plain bias; ``"noisy LayerNorm"`` adds, after LN, a random shift
  and scale drawn afresh at every training step (Santurkar et al. 2018's "noisy" norm,
  which moves each unit's input distribution on purpose), at one or more strengths.
- :func:`rnn_runs`: train them all with Adam; one row per (step, model), with the
  loss and the mean and std of the values that enter the top layer's ``tanh``.
- :class:`StackedTransformer` and :func:`transformer_runs`: the same for a one-block
  pre-LN Transformer, with and without its LNs.
- :func:`steps_to_threshold`, :func:`lr_table`, :func:`drift_table`, :func:`noise_table`:
  the summaries the notebook prints and asserts on.

Every model of one seed starts from the same weights and sees the same minibatches, so
models differ only by the variant, the noise and the learning rate. The loss is a sum over models
and the weights of different models never meet, so each model's gradient is its own.
"""

from __future__ import annotations

import functools
import math

import pandas as pd
import torch
from torch import nn

from helpers import runner
from helpers.checks import Case, Exercise, Verdict, check, register
from helpers.functional import layer_norm

__all__ = [
    "LRS",
    "NOISE",
    "NOISES",
    "RUN_KEYS",
    "THRESHOLD",
    "VARIANTS",
    "StackedRNN",
    "StackedTransformer",
    "adding_task",
    "arm_label",
    "arms",
    "check_first_step_below",
    "check_noisy_layer_norm",
    "drift_table",
    "labels",
    "lr_table",
    "noise_table",
    "rnn_runs",
    "run_keys",
    "smooth",
    "steps_to_threshold",
    "transformer_runs",
]

#: The variants, in the order :class:`StackedRNN` stacks them.
VARIANTS = ("no norm", "LayerNorm", "noisy LayerNorm")

#: The learning rates of the sweep (Adam).
LRS = (0.01, 0.03, 0.1)

#: The noisy variant's default strength (see :class:`StackedRNN`) ...
NOISE = 0.25

#: ... and the strengths of the sweep.
NOISES = (0.1, 0.25, 0.5)

#: The columns that name one run, in order; a frame holds those it varies.
RUN_KEYS = ("depth", "variant", "noise", "lr", "seed")

#: "Solved": a smoothed mean squared error below this. Predicting the mean (1.0) scores 1/6.
THRESHOLD = 0.05


def arms(variants=VARIANTS, noises=(NOISE,)) -> list[tuple[str, float]]:
    """The ``(variant, noise)`` pairs to train, in :data:`VARIANTS` order: one per variant, and the
    noisy one once per strength in ``noises``."""
    unknown = [v for v in variants if v not in VARIANTS]
    if unknown or not variants:
        raise ValueError(f"arms(): argument 'variants' must be a non-empty selection of {VARIANTS}, got {variants!r}")
    if "noisy LayerNorm" in variants and not all(float(n) > 0 for n in noises):
        raise ValueError(f"arms(): argument 'noises' must hold strengths > 0, got {noises!r}")
    return [(v, float(n)) for v in VARIANTS if v in variants
            for n in (noises if v == "noisy LayerNorm" else (0.0,))]


def arm_label(variant: str, noise: float = 0.0) -> str:
    """How tables and legends name an arm: the variant, with the noise strength when there is one."""
    return f"{variant} {noise:g}" if noise else variant


def run_keys(runs: pd.DataFrame) -> list[str]:
    """The :data:`RUN_KEYS` that ``runs`` has, in order."""
    return [k for k in RUN_KEYS if k in runs]


def adding_task(batch: int, seq_len: int, generator: torch.Generator) -> tuple[torch.Tensor, torch.Tensor]:
    """The adding problem: ``(x, y)`` with ``x`` of shape ``(batch, seq_len, 2)`` and ``y`` ``(batch,)``.

    Channel 0 holds values uniform in [0, 1); channel 1 marks two positions, one in each
    half of the sequence, with a 1. The target is the sum of the two marked values: the
    network must find them and remember the first across up to ``seq_len`` steps.
    """
    values = torch.rand(batch, seq_len, generator=generator)
    half = seq_len // 2
    first = torch.randint(0, half, (batch,), generator=generator)
    second = torch.randint(half, seq_len, (batch,), generator=generator)
    marks = torch.zeros(batch, seq_len)
    rows = torch.arange(batch)
    marks[rows, first] = 1.0
    marks[rows, second] = 1.0
    return torch.stack([values, marks], dim=-1), (values * marks).sum(1)


class StackedRNN(nn.Module):
    """Many stacked tanh RNNs in one network: one per (arm, learning rate, seed).

    An *arm* is a ``(variant, noise)`` pair (:func:`arms`). Model ``m`` is arm
    ``m // (n_lrs * n_seeds)``, learning rate ``(m // n_seeds) % n_lrs`` and seed ``m % n_seeds``;
    the weights of a seed are the same in every arm and at every rate. Weights are stacked
    along a leading model dim and applied with batched matrix products.

    Each model has ``depth`` recurrent layers; layer ``l`` reads layer ``l - 1``'s hidden state
    at the same time step (layer 0 reads the input), and the read-out reads the top layer.

    Args:
        n_seeds: seeds per (arm, lr).
        n_lrs: learning rates per arm.
        variants: which of :data:`VARIANTS` to stack.
        noises: the noisy variant's strengths, one arm each. At strength ``s`` its shift is
            uniform in ``[-s, s]`` and its scale uniform in ``[1, 1 + 2 s]``, per unit and layer,
            drawn afresh at every training step.
        depth: recurrent layers per model.
        hidden: hidden units per layer.
        generators: one ``torch.Generator`` per seed, for the weights.
        gain: the recurrent weights are ``N(0, gain^2 / hidden)``.
    """

    def __init__(self, n_seeds: int, n_lrs: int, *, variants=VARIANTS, noises=(NOISE,), depth: int = 1,
                 hidden: int = 16, generators, gain: float = 1.0):
        super().__init__()
        if depth < 1:
            raise ValueError(f"StackedRNN(): argument 'depth' must be at least 1, got {depth}")
        self.arms = arms(variants, noises)
        self.n_seeds, self.n_lrs, self.depth, self.hidden = n_seeds, n_lrs, depth, hidden
        repeat = len(self.arms) * n_lrs

        # Draw order per generator: w_x, w_h, w_o, then each extra layer's w_up and w_h, so that a
        # 1-layer model gets the same weights whatever the depth of the others.
        per_seed = []
        for g in generators:
            w_x = torch.randn(2, hidden, generator=g)
            w_h = [torch.randn(hidden, hidden, generator=g) * gain / math.sqrt(hidden)]
            w_o = torch.randn(hidden, 1, generator=g) / math.sqrt(hidden)
            w_up = []
            for _ in range(depth - 1):
                w_up.append(torch.randn(hidden, hidden, generator=g) / math.sqrt(hidden))
                w_h.append(torch.randn(hidden, hidden, generator=g) * gain / math.sqrt(hidden))
            up = torch.stack(w_up) if w_up else torch.zeros(0, hidden, hidden)
            per_seed.append((w_x, torch.stack(w_h), up, w_o))

        def stack(i):  # (models, ...): seed-major blocks repeated for every arm and rate
            one = torch.stack([p[i] for p in per_seed])
            return nn.Parameter(one.repeat(repeat, *[1] * (one.ndim - 1)))

        self.w_x, self.w_h, self.w_up, self.w_o = stack(0), stack(1), stack(2), stack(3)
        models = repeat * n_seeds
        self.bias = nn.Parameter(torch.zeros(models, depth, 1, hidden))
        self.gain = nn.Parameter(torch.ones(models, depth, 1, hidden))  # used by the LN arms only
        self.bias_o = nn.Parameter(torch.zeros(models, 1, 1))
        arm_of = [self.arms[a] for a in (torch.arange(models) // (n_lrs * n_seeds)).tolist()]
        self.n_plain = sum(v == "no norm" for v, _ in arm_of)  # the first n_plain models have no LN
        self.register_buffer("noise", torch.tensor([float(n) for _, n in arm_of]).view(-1, 1, 1, 1))

    @property
    def n_models(self) -> int:
        return self.w_x.shape[0]

    def forward(self, x: torch.Tensor, generator: torch.Generator | None = None):
        """``x`` of shape ``(models, batch, seq_len, 2)`` -> ``(prediction (models, batch), pre)``.

        ``pre`` ``(models, batch * seq_len, hidden)`` holds the values that enter the top layer's
        ``tanh`` at every time step (after LN, gain, bias and noise): that layer's input.

        The layers run as a wavefront: at wave ``k`` every layer ``l`` computes its time step
        ``t = k - l`` at once, since what it needs (layer ``l - 1`` at ``t`` and itself at
        ``t - 1``) was computed at wave ``k - 1``. That is ``seq_len + depth - 1`` sequential
        steps instead of ``seq_len * depth``, with the layers as one more batch dim.
        """
        models, batch, seq_len, _ = x.shape
        depth, plain = self.depth, self.n_plain
        gain, shift = self.gain[plain:], None  # the LN models' (models - plain, depth, 1, hidden)
        if self.training and bool((self.noise > 0).any()):
            shape = (models, depth, 1, self.hidden)
            shift = (torch.rand(shape, generator=generator) * 2 - 1) * self.noise
            scale = 1 + torch.rand(shape, generator=generator) * 2 * self.noise
            gain, shift = gain * scale[plain:], shift[plain:]
        # layer 0's W_x x_t for every t at once, then one view per t: (models, batch, hidden) each
        inputs = torch.bmm(x.reshape(models, batch * seq_len, 2), self.w_x).view(models, batch, seq_len, -1).unbind(2)
        h = x.new_zeros(models, depth, batch, self.hidden)
        pres = []
        for wave in range(seq_len + depth - 1):
            lo, hi = max(0, wave - seq_len + 1), min(depth, wave + 1)  # the layers at work: lo .. hi - 1
            at = functools.partial(_layers, lo=lo, hi=hi, depth=depth)
            below = [inputs[wave][:, None]] if lo == 0 else []
            if hi > max(lo, 1):  # layers >= 1 read the layer below, as it was one wave ago
                below.append(torch.matmul(h[:, max(lo, 1) - 1:hi - 1], self.w_up[:, max(lo, 1) - 1:hi - 1]))
            a = torch.cat(below, dim=1) if len(below) > 1 else below[0]
            a = a + torch.matmul(at(h), at(self.w_h))
            # LN only where it is used: the models are arm-major and "no norm" comes first
            a_plain, a_ln = a.split([plain, models - plain])
            normed = layer_norm(a_ln, (self.hidden,)) * at(gain)
            if shift is not None:
                normed = normed + at(shift)
            pre = torch.cat([a_plain, normed]) + at(self.bias)
            new = torch.tanh(pre)
            h = new if (lo, hi) == (0, depth) else torch.cat([h[:, :lo], new, h[:, hi:]], dim=1)
            if hi == depth:
                pres.append(pre[:, -1])
        prediction = torch.baddbmm(self.bias_o, h[:, -1], self.w_o).squeeze(-1)
        return prediction, torch.cat(pres, dim=1)


def _layers(t: torch.Tensor, lo: int, hi: int, depth: int) -> torch.Tensor:
    """``t[:, lo:hi]``, or ``t`` itself when that is all of its ``depth`` layers.

    Slicing costs a zero-filled gradient of the tensor's full size in the backward pass, so a
    wave slices only when some layers are idle (the first and the last ``depth - 1`` waves).
    """
    return t if (lo, hi) == (0, depth) else t[:, lo:hi]


def _steps(steps: int, progress: bool, desc: str):
    """``range(steps)``, wrapped in a tqdm progress bar when ``progress``."""
    if not progress:
        return range(steps)
    from tqdm.auto import tqdm

    return tqdm(range(steps), desc=desc, leave=False)


def _stacked_batch(gens, seed_of: torch.Tensor, batch: int, seq_len: int):
    """One adding-task batch per seed's generator, gathered so that model ``m`` gets seed ``seed_of[m]``'s.

    Returns ``x`` of shape ``(n_models, batch, seq_len, 2)`` and ``y`` of shape ``(n_models, batch)``.
    """
    data = [adding_task(batch, seq_len, g) for g in gens]
    return torch.stack([d[0] for d in data])[seed_of], torch.stack([d[1] for d in data])[seed_of]


def rnn_runs(seeds=(0, 1, 2), lrs=LRS, *, variants=VARIANTS, noises=(NOISE,), depth: int = 1, steps: int = 300,
             batch: int = 32, seq_len: int = 10, hidden: int = 16, optimizer: str = "adam", gain: float = 1.0,
             progress: bool = False) -> pd.DataFrame:
    """Train a :class:`StackedRNN` on :func:`adding_task`, one learning rate per model.

    ``optimizer`` is ``"adam"`` (torch's defaults, betas 0.9 and 0.999) or ``"sgd"`` (plain).

    Returns:
        One row per (step, model): ``step``, ``seed``, ``depth``, ``variant``, ``noise`` (0 but
        for the noisy variant), ``lr``, ``loss`` (the minibatch's mean squared error before that
        step's update; ``inf`` once a model has diverged), ``pre_mean`` and ``pre_std`` (mean and
        std, over the batch, time steps and units, of the values entering the top layer's ``tanh``).
    """
    seeds, lrs = list(seeds), list(lrs)
    gens = [torch.Generator().manual_seed(s) for s in seeds]
    noise_gen = torch.Generator().manual_seed(12345)
    model = StackedRNN(len(seeds), len(lrs), variants=variants, noises=noises, depth=depth, hidden=hidden,
                       generators=gens, gain=gain)
    m = torch.arange(model.n_models)
    seed_of, lr_of, arm_of = m % len(seeds), (m // len(seeds)) % len(lrs), m // (len(lrs) * len(seeds))
    lr = torch.tensor(lrs)[lr_of]
    records, moments = [], {}
    for step in _steps(steps, progress, f"RNN steps, depth {depth}"):
        x, y = _stacked_batch(gens, seed_of, batch, seq_len)
        prediction, pre = model(x, noise_gen)
        losses = ((prediction - y) ** 2).mean(1)
        model.zero_grad()
        losses.nan_to_num(0.0, 0.0, 0.0).sum().backward()
        if optimizer == "adam":  # written out so that each model has its own rate
            _adam(model.parameters(), lr, step, moments)
        else:
            with torch.no_grad():
                for p in (p for p in model.parameters() if p.grad is not None):
                    p -= lr.view(-1, *([1] * (p.ndim - 1))) * p.grad.nan_to_num(0.0, 0.0, 0.0)
        with torch.no_grad():
            flat = pre.flatten(1)  # one contiguous row per model: much faster to reduce than dims (1, 2)
            records.append(torch.stack([losses, flat.mean(1), flat.std(1)]))
    table = torch.stack(records)  # (steps, 3, models)
    table = torch.where(torch.isfinite(table), table, torch.inf)
    arm_of = [model.arms[i] for i in arm_of.tolist()]
    frame = pd.DataFrame({
        "step": torch.arange(steps).repeat_interleave(model.n_models).numpy(),
        "seed": [seeds[i] for i in seed_of.tolist()] * steps,
        "depth": depth,
        "variant": [v for v, _ in arm_of] * steps,
        "noise": [n for _, n in arm_of] * steps,
        "lr": [lrs[i] for i in lr_of.tolist()] * steps,
        "loss": table[:, 0].flatten().numpy(),
        "pre_mean": table[:, 1].flatten().numpy(),
        "pre_std": table[:, 2].flatten().numpy(),
    })
    frame.loc[frame.groupby(run_keys(frame))["loss"].cummax() == math.inf, "loss"] = math.inf
    return frame


def labels(runs: pd.DataFrame) -> pd.Series:
    """Each row's arm as :func:`arm_label` names it, with ``", depth d"`` when ``runs`` has several depths."""
    noise = runs["noise"] if "noise" in runs else pd.Series(0.0, index=runs.index)
    names = pd.Series([arm_label(v, n) for v, n in zip(runs["variant"], noise, strict=True)], index=runs.index)
    if "depth" in runs and runs["depth"].nunique() > 1:
        names = names + ", depth " + runs["depth"].astype(str)
    return names


def smooth(runs: pd.DataFrame, window: int = 20, column: str = "loss") -> pd.Series:
    """``column`` averaged over the last ``window`` steps of each run (same index as ``runs``)."""
    return runs.groupby(run_keys(runs), sort=False)[column].transform(lambda s: s.rolling(window, min_periods=1).mean())


def steps_to_threshold(runs: pd.DataFrame, threshold: float = THRESHOLD, window: int = 20) -> pd.DataFrame:
    """The first step at which each run's smoothed loss (:func:`smooth`) is below ``threshold``.

    Returns:
        One row per run: its :data:`RUN_KEYS` and ``steps`` (NaN where it never got there).
    """
    runs = runs.assign(smoothed=smooth(runs, window))
    keys, rows = run_keys(runs), []
    for key, run in runs.groupby(keys, sort=False):
        below = run.loc[run["smoothed"] < threshold, "step"]
        rows.append({**dict(zip(keys, key, strict=True)), "steps": float(below.iloc[0]) if len(below) else math.nan})
    return pd.DataFrame(rows)


def lr_table(runs: pd.DataFrame, window: int = 20) -> pd.DataFrame:
    """Final smoothed loss, averaged over seeds: one row per arm (:func:`labels`), one column per rate."""
    last = runs.assign(smoothed=smooth(runs, window), arm=labels(runs)).groupby(run_keys(runs), sort=False).tail(1)
    return last.groupby(["arm", "lr"], sort=False)["smoothed"].mean().unstack("lr").rename_axis(index=None)


def drift_table(runs: pd.DataFrame) -> pd.DataFrame:
    """How far the hidden layer's input moved during training, per arm (:func:`labels`; mean over seeds).

    Returns:
        One row per arm: ``std at step 0``, ``std at the end``, ``largest |mean shift|``
        and ``largest std ratio`` (``max_t std_t / std_0``).
    """
    rows = {}
    for arm, run in runs.assign(arm=labels(runs)).groupby("arm", sort=False):
        per_seed = []
        for _, r in run.groupby("seed"):
            r = r.sort_values("step")
            std0, mean0 = r["pre_std"].iloc[0], r["pre_mean"].iloc[0]
            per_seed.append({"std at step 0": std0, "std at the end": r["pre_std"].iloc[-1],
                             "largest |mean shift|": (r["pre_mean"] - mean0).abs().max(),
                             "largest std ratio": (r["pre_std"] / std0).max()})
        rows[arm] = pd.DataFrame(per_seed).mean()
    return pd.DataFrame(rows).T


def noise_table(runs: pd.DataFrame, lr: float, threshold: float = THRESHOLD, window: int = 20) -> pd.DataFrame:
    """At rate ``lr``, per noise strength of the LN arms (0 = plain LN): what the shift did and cost.

    Returns:
        One row per strength: ``largest |mean shift|`` and ``largest std ratio`` (as
        :func:`drift_table`), ``final loss`` (as :func:`lr_table`) and ``seeds reaching it``.
    """
    part = runs[(runs["lr"] == lr) & (runs["variant"] != "no norm")]
    if part.empty:
        raise ValueError(f"noise_table(): argument 'lr' must be a rate of the LN runs in 'runs', got {lr}")
    drift, reached = drift_table(part), steps_to_threshold(part, threshold, window)
    noise_of = dict(zip(labels(part), part["noise"], strict=True))  # arm label -> strength
    table = pd.DataFrame({
        "largest |mean shift|": drift["largest |mean shift|"],
        "largest std ratio": drift["largest std ratio"],
        "final loss": lr_table(part, window)[lr],
        "seeds reaching it": reached.groupby(labels(reached), sort=False)["steps"].count(),
    })
    return table.set_axis([noise_of[arm] for arm in table.index]).rename_axis("noise").sort_index()


# ------------------------------------------------------------ exercises


def _first_below(losses: torch.Tensor, threshold: float) -> torch.Tensor:
    below = torch.nonzero(losses < threshold)
    return below[0, 0] if len(below) else torch.tensor(-1)


def _curve(steps: int, rate: float, never: bool = False):
    def make(g: torch.Generator) -> tuple:
        noise = 1 + 0.3 * torch.rand(steps, generator=g)
        curve = torch.exp(-rate * torch.arange(steps)) * noise + (0.2 if never else 0.0)
        return curve, 0.1
    return make


register(Exercise(
    name="first_step_below",
    reference=_first_below,
    cases=[Case("a falling curve of 50 steps", _curve(50, 0.1)),
           Case("a noisy, slower curve of 200 steps", _curve(200, 0.02)),
           Case("a curve that never gets there", _curve(50, 0.1, never=True))],
    mistakes={
        "you returned the LAST step below the threshold: the first one is when the run got there.":
            lambda losses, t: torch.nonzero(losses < t)[-1, 0] if (losses < t).any() else torch.tensor(-1),
        "you returned how many steps are below the threshold, not the first one.":
            lambda losses, t: (losses < t).sum(),
    },
    hint="torch.nonzero(losses < threshold) lists the steps below; take the first, or -1 if there is none.",
    example="torch.tensor([1.0, 0.5, 0.05, 0.2]), 0.1",
    shape_hint="return a 0-d tensor: one step number (torch.tensor(-1) if the run never got there).",
))


def check_first_step_below(fn) -> Verdict:
    """Check ``fn(losses, threshold)``: the first index with ``losses < threshold`` as a 0-d
    tensor, or ``torch.tensor(-1)`` when there is none."""
    return check("first_step_below", fn)


def _noisy_reference(a: torch.Tensor, shift: torch.Tensor, scale: torch.Tensor) -> torch.Tensor:
    return layer_norm(a, a.shape[-1:]) * scale + shift


def _noisy_case(rows: int, width: int, mean: float = 0.0, std: float = 3.0):
    def make(g: torch.Generator) -> tuple:
        a = mean + std * torch.randn(rows, width, generator=g)
        return a, torch.rand(width, generator=g) - 0.5, 1 + torch.rand(width, generator=g)
    return make


register(Exercise(
    name="noisy_layer_norm",
    reference=_noisy_reference,
    cases=[Case("2 rows of 4", _noisy_case(2, 4)), Case("8 rows of 16, mean 5", _noisy_case(8, 16, 5.0)),
           Case("3 rows of 8 whose units barely differ (std 0.003)", _noisy_case(3, 8, std=0.003))],
    mistakes={
        "normalize first: the noise is applied to LN's output, x_hat * scale + shift.":
            lambda a, shift, scale: a * scale + shift,
        "scale, then shift: x_hat * scale + shift, not (x_hat + shift) * scale.":
            lambda a, shift, scale: (layer_norm(a, a.shape[-1:]) + shift) * scale,
        "`var()` divides by n - 1 (unbiased); LayerNorm divides by n: `((a - mean) ** 2).mean(-1)`.":
            lambda a, shift, scale: (a - a.mean(-1, keepdim=True))
            / torch.sqrt(a.var(-1, keepdim=True) + 1e-5) * scale + shift,
        "eps goes inside the square root: `torch.sqrt(var + eps)`, not `torch.sqrt(var) + eps`.":
            lambda a, shift, scale: (a - a.mean(-1, keepdim=True))
            / (a.var(-1, unbiased=False, keepdim=True).sqrt() + 1e-5) * scale + shift,
        "each row (sample) is normalized over its own units, the last dim, not over the batch (dim 0).":
            lambda a, shift, scale: (a - a.mean(0, keepdim=True))
            / torch.sqrt(a.var(0, unbiased=False, keepdim=True) + 1e-5) * scale + shift,
    },
    hint="x_hat = (a - mean) / sqrt(var + 1e-5) per row (biased var), then x_hat * scale + shift.",
    example="torch.randn(2, 4), torch.zeros(4), torch.ones(4)",
))


def check_noisy_layer_norm(fn) -> Verdict:
    """Check ``fn(a, shift, scale)``: LayerNorm over the last dim (eps 1e-5, no gamma/beta),
    then the noisy variant's ``* scale + shift``, per unit."""
    return check("noisy_layer_norm", fn)


# ------------------------------------------------------------ a small Transformer


class StackedTransformer(nn.Module):
    """``2 * n_lrs * n_seeds`` one-block pre-LN Transformers in one network, one per (variant, lr, seed).

    Model ``m`` is variant ``m // (n_lrs * n_seeds)`` (``"no norm"`` then ``"LayerNorm"``), learning
    rate ``(m // n_seeds) % n_lrs`` and seed ``m % n_seeds``; a seed's weights are the same in all.

    Each model: ``h = x W_in + pos``; ``h += Attention(norm(h))``; ``h += MLP(norm(h))``;
    prediction ``= mean_t(norm(h)) w_o``. With ``"LayerNorm"``, ``norm`` is LN with a gain
    and bias (one per place); with ``"no norm"`` it is the identity. One head, ``d`` units.
    """

    variants = ("no norm", "LayerNorm")

    def __init__(self, n_seeds: int, n_lrs: int = 1, *, d: int = 16, seq_len: int = 10, generators):
        super().__init__()
        self.n_seeds, self.n_lrs, self.d = n_seeds, n_lrs, d

        def stacked(*shape, scale):
            one = torch.stack([torch.randn(*shape, generator=g) * scale for g in generators])
            return nn.Parameter(one.repeat(len(self.variants) * n_lrs, *[1] * len(shape)))

        self.w_in, self.pos = stacked(2, d, scale=1.0), stacked(seq_len, d, scale=0.5)
        self.wq, self.wk, self.wv, self.wo = (stacked(d, d, scale=d ** -0.5) for _ in range(4))
        self.w1, self.w2 = stacked(d, 2 * d, scale=d ** -0.5), stacked(2 * d, d, scale=(2 * d) ** -0.5)
        self.w_out = stacked(d, 1, scale=d ** -0.5)
        models = len(self.variants) * n_lrs * n_seeds
        # model dim first, so that each model's Adam step can use its own rate; then the 3 places
        self.gain = nn.Parameter(torch.ones(models, 3, 1, 1, d))
        self.shift = nn.Parameter(torch.zeros(models, 3, 1, 1, d))
        self.register_buffer("normed", (torch.arange(models) >= n_lrs * n_seeds).view(-1, 1, 1, 1))

    def _norm(self, h: torch.Tensor, place: int) -> torch.Tensor:
        normed = layer_norm(h, (self.d,)) * self.gain[:, place] + self.shift[:, place]
        return torch.where(self.normed, normed, h)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        """``x`` of shape ``(models, batch, seq_len, 2)`` -> predictions ``(models, batch)``."""
        def mm(a, w):  # (models, batch, seq, i) @ (models, i, o): one matrix product per model
            return torch.bmm(a.flatten(1, -2), w).view(*a.shape[:-1], w.shape[-1])

        h = mm(x, self.w_in) + self.pos[:, None]
        z = self._norm(h, 0)
        scores = mm(z, self.wq) @ mm(z, self.wk).transpose(-1, -2) / math.sqrt(self.d)
        h = h + mm(torch.softmax(scores, -1) @ mm(z, self.wv), self.wo)
        h = h + mm(torch.relu(mm(self._norm(h, 1), self.w1)), self.w2)
        return mm(self._norm(h, 2).mean(2, keepdim=True), self.w_out).flatten(1)


def _adam(params, lrs, step: int, moments: dict) -> None:
    """One Adam step (torch's defaults): rate ``lrs``, or ``lrs[m]`` for model ``m`` (the leading dim)."""
    with torch.no_grad():
        for p in params:
            if p.grad is None:  # a 1-layer RNN's empty w_up
                continue
            grad = p.grad.nan_to_num(0.0, 0.0, 0.0)
            m1, m2 = moments.setdefault(p, (torch.zeros_like(p), torch.zeros_like(p)))
            m1.lerp_(grad, 0.1)
            m2.lerp_(grad * grad, 0.001)
            update = (m1 / (1 - 0.9 ** (step + 1))) / ((m2 / (1 - 0.999 ** (step + 1))).sqrt() + 1e-8)
            p -= (lrs.view(-1, *[1] * (p.ndim - 1)) if isinstance(lrs, torch.Tensor) else lrs) * update


def transformer_runs(seeds=(0, 1, 2), lrs=(0.01,), *, steps: int = 150, batch: int = 32,
                     seq_len: int = 10, d: int = 16, progress: bool = False) -> pd.DataFrame:
    """Train a :class:`StackedTransformer` on :func:`adding_task` with Adam, one rate of ``lrs`` per model.

    Returns:
        One row per (step, model): ``step``, ``seed``, ``variant``, ``lr``, ``loss``.
    """
    seeds, lrs = list(seeds), list(lrs)
    gens = [torch.Generator().manual_seed(s) for s in seeds]
    model = StackedTransformer(len(seeds), len(lrs), d=d, seq_len=seq_len, generators=gens)
    m = torch.arange(len(model.variants) * len(lrs) * len(seeds))
    seed_of, lr_of, variant_of = m % len(seeds), (m // len(seeds)) % len(lrs), m // (len(lrs) * len(seeds))
    lr = torch.tensor(lrs)[lr_of]
    records, moments = [], {}
    for step in _steps(steps, progress, "Transformer steps"):
        x, y = _stacked_batch(gens, seed_of, batch, seq_len)
        losses = ((model(x) - y) ** 2).mean(1)
        model.zero_grad()
        losses.nan_to_num(0.0, 0.0, 0.0).sum().backward()
        _adam(model.parameters(), lr, step, moments)
        records.append(losses.detach())
    table = torch.stack(records)
    frame = pd.DataFrame({
        "step": torch.arange(steps).repeat_interleave(len(m)).numpy(),
        "seed": [seeds[i] for i in seed_of.tolist()] * steps,
        "variant": [model.variants[i] for i in variant_of.tolist()] * steps,
        "lr": [lrs[i] for i in lr_of.tolist()] * steps,
        "loss": torch.where(torch.isfinite(table), table, torch.inf).flatten().numpy(),
    })
    frame.loc[frame.groupby(run_keys(frame))["loss"].cummax() == math.inf, "loss"] = math.inf
    return frame


# ------------------------------------------------------------ stored experiments (make experiments)


#: "Learned nothing": predicting the mean scores Var(u1 + u2) = 1/6. A final loss above it (a run
#: that diverged, or ended worse than the mean) counts as this level in paired comparisons, so
#: that one blown-up run does not decide a mean.
LEARNED_NOTHING = 1 / 6


def final_losses(runs: pd.DataFrame, window: int = 20) -> pd.DataFrame:
    """Each run's final smoothed loss (:func:`smooth`): one row per run, its :data:`RUN_KEYS` and ``final``."""
    last = runs.assign(final=smooth(runs, window)).groupby(run_keys(runs), sort=False).tail(1)
    return last[[*run_keys(runs), "final"]].reset_index(drop=True)


def paired(per_run: pd.DataFrame, column: str, a: str = "LayerNorm", b: str = "no norm"):
    """``column`` of arms ``a`` and ``b`` (plain variants, noise 0), aligned by seed: two arrays."""
    plain = per_run[per_run["noise"] == 0] if "noise" in per_run else per_run
    table = plain.pivot_table(index="seed", columns="variant", values=column, dropna=False)
    return table[a].to_numpy(), table[b].to_numpy()


def normed_vs_plain(reached: pd.DataFrame, finals: pd.DataFrame, cap: int, *, a: str = "LayerNorm",
                    b: str = "no norm", final: str = "final loss") -> dict[str, str]:
    """A normalized arm ``a`` against its plain twin ``b``, paired by seed, in two verdicts.

    - ``"steps"``: the *restricted mean* steps to the threshold, a run that never gets there
      (``steps`` NaN in ``reached``) counting as ``cap``, so that no run is dropped;
    - ``"final loss"``: ``finals``' ``final`` column, capped at :data:`LEARNED_NOTHING` (a
      diverged run, or one that ended worse than predicting the mean, learned nothing), worded
      with ``final`` as the quantity.

    The claim tested is the lesson's: the normalized arm needs fewer steps and ends lower
    (:func:`helpers.inference.paired_difference_ci`, relative, and :func:`helpers.inference.verdict`).
    Where neither arm gets anywhere, the verdict says so instead of an empty interval.
    """
    from helpers.inference import paired_difference_ci, verdict

    out = {}
    sa, sb = paired(reached.assign(steps=reached["steps"].fillna(cap)), "steps", a, b)
    if (sa == cap).all() and (sb == cap).all():
        out["steps"] = f"no run of either variant reaches the threshold within {cap} steps"
    else:
        out["steps"] = verdict(paired_difference_ci(sa, sb, relative=True), a=a, b=b,
                               quantity="steps to the threshold")
    fa, fb = paired(finals.assign(final=finals["final"].clip(upper=LEARNED_NOTHING)), "final", a, b)
    if (fa == LEARNED_NOTHING).all() and (fb == LEARNED_NOTHING).all():
        out["final loss"] = f"no run of either variant ends below the learned-nothing level ({LEARNED_NOTHING:.3f})"
    else:
        out["final loss"] = verdict(paired_difference_ci(fa, fb, relative=True), a=a, b=b, quantity=final,
                                    verb="ends with", words=("lower", "higher"))
    return out


def speed_verdicts(runs: pd.DataFrame, threshold: float = THRESHOLD) -> dict[str, str]:
    """The verdicts of an LN-vs-no-norm experiment, per rate, paired by seed, in words.

    For each rate:

    - ``"time, <variant>, lr <r>"``: steps to ``threshold`` with censoring (Kaplan-Meier median
      and the fraction that got there; :func:`helpers.inference.time_to_threshold`);
    - ``"steps, lr <r>"``: LN vs no norm on the *restricted mean* steps to the threshold, a run
      that never gets there counting as the step cap (so no run is dropped);
    - ``"final loss, lr <r>"``: LN vs no norm on the final smoothed loss, capped at
      :data:`LEARNED_NOTHING`.

    The claim tested is the lesson's: LN needs fewer steps and ends lower. Intervals are 95%
    BCa bootstrap intervals over seeds (:func:`helpers.inference.paired_difference_ci`).
    """
    from helpers.inference import time_to_threshold

    plain = runs[runs["noise"] == 0] if "noise" in runs else runs
    cap = int(plain["step"].max()) + 1
    reached = steps_to_threshold(plain, threshold)
    finals = final_losses(plain)
    out = {}
    for lr in sorted(plain["lr"].unique()):
        at = reached[reached["lr"] == lr]
        for variant in ("no norm", "LayerNorm"):
            out[f"time, {variant}, lr {lr:g}"] = str(time_to_threshold(at.loc[at["variant"] == variant, "steps"], cap))
        both = normed_vs_plain(at, finals[finals["lr"] == lr], cap)
        out[f"steps, lr {lr:g}"], out[f"final loss, lr {lr:g}"] = both["steps"], both["final loss"]
    return out




def noise_verdicts(runs: pd.DataFrame) -> dict[str, str]:
    """Does noise after LN cost? Per rate and strength: noisy LN vs plain LN on the final smoothed
    loss (capped at :data:`LEARNED_NOTHING`), paired by seed, as ``"noise <s>, lr <r>"``.

    The noisy arms are scored as they train, with the noise on (Santurkar et al. 2018 injected
    theirs after BatchNorm; noise after LN is this set's adaptation).
    """
    from helpers.inference import paired_difference_ci, verdict

    ln = runs[runs["variant"] != "no norm"]
    finals = final_losses(ln).assign(final=lambda f: f["final"].clip(upper=LEARNED_NOTHING))
    out = {}
    for lr in sorted(finals["lr"].unique()):
        table = finals[finals["lr"] == lr].pivot_table(index="seed", columns="noise", values="final")
        for strength in [n for n in table.columns if n > 0]:
            out[f"noise {strength:g}, lr {lr:g}"] = verdict(
                paired_difference_ci(table[strength].to_numpy(), table[0.0].to_numpy(), relative=True),
                a=f"noisy LayerNorm {strength:g}", b="LayerNorm", quantity="final loss", claim="more",
                verb="ends with", words=("lower", "higher"))
    return out


def rnn_verdicts(runs: pd.DataFrame) -> dict[str, str]:
    """:func:`speed_verdicts`, and :func:`noise_verdicts` where ``runs`` has noisy arms."""
    out = speed_verdicts(runs)
    if (runs["noise"] > 0).any():
        out.update(noise_verdicts(runs))
    return out


def _rnn_unit(*, lr: float, seeds, steps: int, depth: int, variants, noises) -> pd.DataFrame:
    """One unit of the RNN experiments: every arm at rate ``lr`` for ``seeds``, stacked."""
    return rnn_runs(seeds=seeds, lrs=(lr,), variants=variants, noises=noises, depth=depth, steps=steps)


def _transformer_unit(*, lr: float, seeds, steps: int) -> pd.DataFrame:
    """One unit of the Transformer experiment: both variants at rate ``lr`` for ``seeds``, stacked."""
    return transformer_runs(seeds=seeds, lrs=(lr,), steps=steps)


#: The seeds of the stored runs of notebook 05.
SEEDS = tuple(range(10))

runner.register(runner.Experiment(
    name="rnn_depth1", notebook="05_does_it_speed_up_training", train=_rnn_unit,
    grid={"lr": LRS}, seeds=SEEDS, steps=300, threshold=THRESHOLD,
    fixed={"depth": 1, "variants": VARIANTS, "noises": NOISES}, summarize=rnn_verdicts, budget_s=120))
runner.register(runner.Experiment(
    name="rnn_depth3", notebook="05_does_it_speed_up_training", train=_rnn_unit,
    grid={"lr": LRS}, seeds=SEEDS, steps=300, threshold=THRESHOLD,
    fixed={"depth": 3, "variants": ("no norm", "LayerNorm"), "noises": ()}, summarize=speed_verdicts,
    budget_s=120))
runner.register(runner.Experiment(
    name="transformer", notebook="05_does_it_speed_up_training", train=_transformer_unit,
    grid={"lr": (0.01, 0.1, 0.3)}, seeds=SEEDS, steps=150, threshold=THRESHOLD, summarize=speed_verdicts,
    budget_s=120,
    # attention and Adam in float32 amplify a last-bit difference fast: 1.5e-4 relative after 20 steps
    # on torch's plain kernel path (ATEN_CPU_CAPABILITY=default) against its AVX-512 one
    repro_rtol=1e-3))
