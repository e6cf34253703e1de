"""Deep dive 13's building blocks: the adding task, a stacked tanh RNN, its minibatches and the paired
LN-vs-plain verdicts. (The notebook's two exercises are in :mod:`helpers.exercises.training_speed`.)

Does LayerNorm speed up training? The stored experiments deep dive 13 reads are declared in
:mod:`helpers.experiments.rnn_regimes` (tiny tanh RNNs), :mod:`helpers.experiments.lstm_adding` (LSTM vs LN-LSTM),
:mod:`helpers.experiments.small_transformer` (no norm, Pre-LN and Post-LN) and :mod:`helpers.experiments.step_times`
(the wall-clock cost of a step). They build on what is here:

- :func:`adding_task` (Hochreiter and Schmidhuber 1997): an offline sequence task a tiny RNN can
  learn; :data:`LEARNED_NOTHING` is the loss of predicting the mean.
- :class:`StackedRNN`: many small tanh RNNs, one or more layers deep, trained at once as one
  stacked network, one per (variant, noise, learning rate, seed). Variant ``"LayerNorm"``
  normalizes the summed inputs of each hidden layer at every time step, as in Ba, Kiros and
  Hinton (2016), ``h_t = tanh(g * LN(W_x x_t + W_h h_{t-1}) + b)``; ``"no norm"`` is the
  same network with a plain bias; ``"noisy LayerNorm"`` adds, after LN, a random scale (of
  mean 1) and shift to every activation, from a distribution that changes at every training step
  (Santurkar et al. 2018's "noisy" norm, which moves each unit's input distribution on purpose:
  :meth:`StackedRNN.noisy`), at one or more strengths (:func:`arms`, :func:`arm_label`).
- :func:`stacked_batch`: one adding-task minibatch per seed, gathered for every model of the stack
  (each model trains with its own rate: :func:`helpers.experiments.training.adam`).
- :func:`paired` and :func:`normed_vs_plain`: a normalized arm against its plain twin, paired by
  seed, on steps to a threshold and on the final loss, in words.

Every model of one seed starts from the same weights and sees the same minibatches, so
models differ only by the variant, the noise and the learning rate. The loss is a sum over models
and the weights of different models never meet, so each model's gradient is its own.
"""

from __future__ import annotations

import functools
import math
from dataclasses import replace

import numpy as np
import pandas as pd
import torch
from torch import nn

from helpers.evidence.verdicts import Verdict
from helpers.functional import layer_norm

#: The variants, in the order :class:`StackedRNN` stacks them.
VARIANTS = ("no norm", "LayerNorm", "noisy LayerNorm")

#: The noisy variant's default strength (see :class:`StackedRNN`).
NOISE = 0.25

#: "Learned nothing": predicting the mean scores Var(u1 + u2) = 1/6. A final loss above it (a run
#: that diverged, or ended worse than the mean) counts as this level in paired comparisons, so
#: that one blown-up run does not decide a mean.
LEARNED_NOTHING = 1 / 6


def arms(variants=VARIANTS, noises=(NOISE,)) -> list[tuple[str, float]]:
    """The ``(variant, noise)`` pairs to train, in :data:`VARIANTS` order: one per variant, and the
    noisy one once per strength in ``noises``."""
    return [(v, float(n)) for v in VARIANTS if v in variants
            for n in (noises if v == "noisy LayerNorm" else (0.0,))]


def arm_label(variant: str, noise: float = 0.0) -> str:
    """How tables and legends name an arm: the variant, with the noise strength when there is one."""
    return f"{variant} {noise:g}" if noise else variant

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
        noises: the noisy variant's strengths, one arm each: :meth:`noisy` says what noise.
        depth: recurrent layers per model.
        hidden: hidden units per layer.
        generators: one ``torch.Generator`` per seed, for the weights.
        gain: the recurrent weights are ``N(0, gain^2 / hidden)``.
    """

    def __init__(self, n_seeds: int, n_lrs: int, *, variants=VARIANTS, noises=(NOISE,), depth: int = 1,
                 hidden: int = 16, generators, gain: float = 1.0):
        super().__init__()
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

    @staticmethod
    def noisy(normed: torch.Tensor, strength: torch.Tensor, mu: torch.Tensor,
              generator: torch.Generator | None) -> torch.Tensor:
        """LN's output (after its gain) with Santurkar et al.'s noise, in training: ``normed * a + b``
        per activation.

        Santurkar, Tsipras, Ilyas and Madry (2018), section 2.1: "we perturb each activation for
        each sample in the batch using i.i.d. noise sampled from a non-zero mean and non-unit
        variance distribution. We emphasize that this noise distribution changes at each time
        step". Here, at strength ``s``, every activation (each model, layer, sequence, time step
        and unit) gets its own scale ``a ~ U(1 - s, 1 + s)``, of mean 1, and shift
        ``b ~ N(mu, s^2)``, where ``mu ~ U(-s, s)`` is drawn per unit and layer at every training
        step: the shift's distribution changes at each step, as theirs does. In evaluation there is
        no noise: each activation at the noise's expected scale, 1, and its expected shift over
        steps, 0, so a noisy network is scored in the regime it was trained around.

        Shapes: ``normed`` ``(models, layers, batch, hidden)``; ``strength`` and ``mu`` broadcast
        to it (``(models, 1, 1, 1)`` and ``(models, layers, 1, hidden)``).
        """
        u = torch.rand(normed.shape, generator=generator)
        z = torch.randn(normed.shape, generator=generator)
        return normed * (1 + strength * (2 * u - 1)) + mu + strength * z

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
        gain, mu = self.gain[plain:], None  # the LN models' (models - plain, depth, 1, hidden)
        strength = self.noise[plain:]
        if self.training and bool((strength > 0).any()):
            # this step's shift means, per model, layer and unit (:meth:`noisy`)
            mu = (torch.rand((models - plain, depth, 1, self.hidden), generator=generator) * 2 - 1) * strength
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
            if mu is not None:  # after LN and its gain, as Santurkar et al. perturb BN's output
                normed = self.noisy(normed, strength, at(mu), generator)
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


def stacked_batch(gens, seed_of: torch.Tensor, batch: int, seq_len: int):
    """One adding-task batch per seed's generator, gathered so that model ``m`` gets seed ``seed_of[m]``'s.

    Returns ``x`` of shape ``(n_models, batch, seq_len, 2)`` and ``y`` of shape ``(n_models, batch)``.
    """
    data = [adding_task(batch, seq_len, g) for g in gens]
    return torch.stack([d[0] for d in data])[seed_of], torch.stack([d[1] for d in data])[seed_of]


# ------------------------------------------------------------ LN vs no norm, paired by seed


def paired(per_run: pd.DataFrame, column: str, a: str = "LayerNorm", b: str = "no norm"):
    """``column`` of arms ``a`` and ``b`` (plain variants, noise 0), aligned by seed: two arrays, and the
    seeds they are aligned on (for :func:`helpers.evidence.statistics.paired_difference_ci`'s ``seeds``)."""
    plain = per_run[per_run["noise"] == 0] if "noise" in per_run else per_run
    table = plain.pivot_table(index="seed", columns="variant", values=column, dropna=False)
    return table[a].to_numpy(), table[b].to_numpy(), table.index.to_numpy()


def normed_vs_plain(reached: pd.DataFrame, finals: pd.DataFrame, cap: int, *, a: str = "LayerNorm",
                    b: str = "no norm", final: str = "final loss", claim: str | None = "fewer",
                    nothing: float = LEARNED_NOTHING, nothing_name: str = "the learned-nothing level",
                    noun: str = "variant", floor: float | None = None, eval_every: int | None = None,
                    steps_margin: float | None = None, loss_margin: float | None = None,
                    grid_resolution: tuple[float, str] | None = None,
                    staying: pd.DataFrame | None = None) -> dict[str, Verdict]:
    """Arm ``a`` (normalized) against arm ``b`` (its plain twin), paired by seed, in two verdicts.

    - ``"steps"``: the steps to the threshold, a run that never gets there (``steps`` NaN in
      ``reached``) counting as ``cap``, so that no run is dropped. With ``staying`` (the steps from
      which each run stays below the threshold to the end:
      :func:`helpers.experiments.threshold_runs.steps_staying_below`), the same comparison on those
      steps is the verdict's second declared measure (its ``alternates``): a run that crosses the
      threshold and then blows up counts as reaching it under the first, never under the second,
      and where the two disagree the verdict depends on the measure;
    - ``"final loss"``: ``finals``' ``final`` column, capped at ``nothing`` (default
      :data:`LEARNED_NOTHING`: a diverged run, or one that ended worse than predicting the mean,
      learned nothing), worded with ``final`` as the quantity. Where the task's ``floor`` is known
      and above 0, the comparison is on the excess over it, ``final - floor`` (a relative
      difference of raw losses near a floor is squeezed towards 0, and its interval covers the truth
      less often: :mod:`helpers.experiments.interval_coverage`).

    Each is the relative difference of :func:`helpers.evidence.statistics.paired_difference_ci`
    (one minus the geometric mean of the per-seed ratios A / B, with its t-interval) in
    :func:`helpers.evidence.statistics.verdict`'s words. The claim tested is ``claim`` about ``a``
    (default the lesson's: the normalized arm needs fewer steps and ends lower; ``None``: nothing
    claimed, the words say which way the interval lies). ``steps_margin`` and ``loss_margin``: the
    equivalence margins (relative) within which the words may say "the same", declared by the
    experiment before its run (``None``: never). ``eval_every``: the evaluation interval, below which
    a difference in steps is flagged; ``grid_resolution``: ``(relative step, words)``, one step of the
    tuning grid in the pilot's steps (:func:`helpers.evidence.statistics.grid_step`), flagged the same
    way where it is the larger. Where the slower arm has runs stopped at the cap, the words say the
    ratio is a bound ("at least"). Where neither arm gets anywhere, the verdict says so (naming
    them ``noun``s and the level ``nothing_name``) instead of an empty interval.
    """
    from helpers.evidence.statistics import paired_difference_ci, verdict

    def steps(runs: pd.DataFrame, quantity: str, never: str) -> Verdict:
        sa, sb, seeds = paired(runs.assign(steps=runs["steps"].fillna(cap)), "steps", a, b)
        if (sa == cap).all() and (sb == cap).all():
            return Verdict.no_interval(a, b, quantity, f"no run of either {noun} {never} within {cap} steps")
        ci = paired_difference_ci(sa, sb, relative=True, seeds=seeds)
        # the difference in steps is about the relative one times B's typical (geometric mean) steps
        resolution = None if eval_every is None else (
            eval_every / float(np.exp(np.mean(np.log(sb)))), f"the evaluation interval ({eval_every} steps)")
        if grid_resolution is not None and (resolution is None or grid_resolution[0] > resolution[0]):
            resolution = grid_resolution
        # a run stopped at the cap took at least the cap: where the slower arm has such runs, the
        # ratio of steps is a bound (the arm is at least that much slower), and the words say so
        slower, stopped = (a, int((sa == cap).sum())) if ci.estimate < 0 else (b, int((sb == cap).sum()))
        bound = (f"; at least that: {stopped} of {slower}'s runs {'was' if stopped == 1 else 'were'} stopped at the "
                 f"cap ({cap} steps)") if stopped else ""
        return verdict(ci, a=a, b=b, claim=claim, quantity=quantity, margin=steps_margin, resolution=resolution,
                       suffix=bound)

    out = {"steps": steps(reached, "steps to the threshold", "reaches the threshold")}
    if staying is not None:
        below = steps(staying, "steps until it stays below the threshold", "stays below the threshold")
        out["steps"] = replace(out["steps"], alternates=(replace(below, label="staying below to the end"),))
    fa, fb, seeds = paired(finals.assign(final=finals["final"].clip(upper=nothing)), "final", a, b)
    if (fa == nothing).all() and (fb == nothing).all():
        out["final loss"] = Verdict.no_interval(a, b, final,
                                                f"no run of either {noun} ends below {nothing_name} ({nothing:.3f})")
    elif floor and min(fa.min(), fb.min()) <= floor:
        out["final loss"] = Verdict.no_interval(
            a, b, final, f"not compared: a run of either {noun} ends at or below the floor ({floor:.3f}), "
                         f"so the excess over it has no ratio")
    else:
        if floor:
            fa, fb, final = fa - floor, fb - floor, f"{final} above the floor ({floor:.3f})"
        out["final loss"] = verdict(paired_difference_ci(fa, fb, relative=True, seeds=seeds), a=a, b=b, quantity=final,
                                    claim=claim, verb="ends with", words=("lower", "higher"), margin=loss_margin)
    return out
