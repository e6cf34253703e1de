"""LSTM vs LN-LSTM on a long-range task (notebook 13): Ba, Kiros and Hinton's own comparison, stored.

Ba et al. (2016) report that layer normalization speeds up the training of LSTMs. This module
tests that claim on the adding problem (:func:`helpers.experiments.rnn_models.adding_task`): two marked
values among ``seq_len`` (100 by default), the first of them in the first half, so the network
must carry it across up to 99 steps. Each arm's learning rate is tuned first (Adam, one rate
per model), then every arm runs on 10 fresh seeds at its best rate, and the stored verdicts
compare the steps each needs to reach a held-out loss threshold, and the final loss.

The arms (:data:`VARIANTS`): the plain LSTM; the LN-LSTM, with LN on the input term, the recurrent
term and the cell, as Ba et al. write it; and an ablation with LN on the recurrent term and the
cell only. Every arm reads the input through the same embedding, ``tanh(x_t U + u)``: fed
straight to the gates, the task's 2 features let LN erase the 98 distractor values for free
(:class:`StackedLSTM` says why), which made the LN-LSTM's first stored win true by construction.
That version (``lstm_adding`` version 1, without the embedding or the ablation, commit b8f34ff)
is not stored any more; notebook 13 shows its numbers as history, with the mechanism.

- :class:`StackedLSTM`: many single-layer LSTMs trained at once along a leading model dim,
  plain (``"LSTM"``), layer-normalized (``"LN-LSTM"``) or without the input term's LN
  (``"LN-LSTM without input LN"``), all through the same Python cell.
- :func:`lstm_runs`: train them with Adam and per-model gradient clipping; one row per
  (step, model) with the minibatch loss, and every ``eval_every`` steps the loss on a fixed
  held-out batch (:func:`heldout_batch`).
- :func:`lstm_steps_to_threshold`, :func:`lstm_verdicts`: the summaries stored with the results
  of the experiment ``lstm_adding`` (``make experiments ONLY=lstm_adding``).

Every model of one seed starts from the same weights (the LN variants' extra gains and biases
start at 1 and 0) and sees the same minibatches, whatever its variant, its rate or the unit it
is trained in, so the arms are paired by seed.
"""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
import torch
from torch import nn

from helpers.evidence import runner
from helpers.evidence.statistics import threshold_level
from helpers.experiments.rnn_models import (
    LEARNED_NOTHING,
    adding_task,
    normed_vs_plain,
    stacked_batch,
)
from helpers.experiments.threshold_runs import (
    grid_resolution,
    report_rate_words,
    restricted_mean_steps,
    steps_staying_below,
    steps_to_threshold,
    time_words,
)
from helpers.experiments.training import adam, clip_per_model, finite_or_inf, keep_rows
from helpers.experiments.tuning_words import best_rate_words
from helpers.functional import layer_norm

#: The arms, in the order :class:`StackedLSTM` stacks them.
VARIANTS = ("LSTM", "LN-LSTM", "LN-LSTM without input LN")

#: "Reached": a held-out loss below this, 70% of the way from learning nothing to a perfect 0
#: (0.05), fixed before any run.
THRESHOLD = threshold_level(learned_nothing=LEARNED_NOTHING, floor=0.0, fraction=0.7)

#: The held-out batch: its size and the seed of its own generator (no training seed uses it).
HELDOUT_SIZE = 512
HELDOUT_SEED = 2016

#: The stored experiment's sequence length, step cap and evaluation interval (see ``lstm_adding``).
SEQ_LEN = 100
STEPS = 1200
EVAL_EVERY = 50

#: The learning-rate grid of the tuning (Adam), neighbours at most a factor 10/3 apart: the 5 rates
#: around version 1's best ones (see the sizing note at the end of this module).
RATES = (1e-3, 3e-3, 1e-2, 3e-2, 1e-1)

#: The seeds of the tuning runs and of the reported runs (fresh: never a pilot seed).
PILOT_SEEDS = (100, 101, 102)
SEEDS = tuple(range(10))


class StackedLSTM(nn.Module):
    r"""Many single-layer LSTMs in one network, one per (variant, learning rate, seed).

    Model ``m`` is variant ``m // (n_lrs * n_seeds)`` of ``variants`` (in :data:`VARIANTS`
    order), rate ``(m // n_seeds) % n_lrs`` and seed ``m % n_seeds``. Every weight has a leading
    model dim and is applied with batched matrix products; the loss is a sum over models whose
    weights never meet, so each model's gradient is its own.

    The input is first embedded, the same way in every variant (``embed=True``, the default), and
    then the cell, gates in torch's order ``i, f, g, o`` (as :class:`torch.nn.LSTMCell`)::

        e_t = tanh(x_t U + u)                                 (H values)
        a_t = N_x(e_t W_x) + N_h(h_{t-1} W_h) + b            (4H values: i, f, g, o)
        c_t = sigmoid(f) * c_{t-1} + sigmoid(i) * tanh(g)
        h_t = sigmoid(o) * tanh(N_c(c_t))

    ``"LSTM"``: every ``N`` is the identity. ``"LN-LSTM"`` (Ba, Kiros and Hinton 2016, the
    layer-normalized LSTM of their section on recurrent networks):
    ``N_x(z) = LN(z) * alpha_x + beta_x`` and ``N_h(z) = LN(z) * alpha_h + beta_h``, each over
    all 4H summed inputs with its own gain and bias, and ``N_c(c) = LN(c) * alpha_c + beta_c``
    over the H cell units. All 4H at once, not one LN per gate block, because that is the
    paper's equation (``LN(W_h h_{t-1}; alpha_1, beta_1) + LN(W_x x_t; alpha_2, beta_2) + b``
    on the stacked gate vector); per-block LN is a later variant (TensorFlow's
    ``LayerNormBasicLSTMCell``). Normalizing ``W_x x_t`` and ``W_h h_{t-1}`` separately keeps
    the input from being swamped by the recurrent term, or the other way round.
    ``"LN-LSTM without input LN"``: the ablation, ``N_h`` and ``N_c`` as in the LN-LSTM and
    ``N_x`` the identity.

    **Why the embedding.** The adding task's ``x_t`` has only 2 features, a value ``v_t`` and a
    marker. Fed straight to the gates (``embed=False``, Ba et al.'s cell as written), an unmarked
    step gives ``x_t W_x = v_t w_0``, and ``LN(v_t w_0) = LN(w_0)`` for every ``v_t > 0`` (above
    about 0.01, where eps stops mattering): LN is blind to scale, so the LN-LSTM's input term is
    the same vector at all 98 unmarked steps, whatever their values. The distractors are removed
    before training starts, while the plain LSTM must learn to gate them out: the comparison is
    won by construction. The embedding ``tanh(x_t U + u)`` (a ``Linear(2, H)`` with a bias, then
    tanh) is an affine map followed by a nonlinearity, so ``e_t`` is not a multiple of one vector
    and its LN changes with ``v_t``. A bias-free linear map alone would fix nothing:
    ``LN(v_t w_0 U) = LN(w_0 U)``.

    Initial weights, per seed (drawn in this order from its generator, the same for every
    variant): ``U`` and ``u`` uniform in ``[-1/sqrt(inputs), 1/sqrt(inputs)]`` (as
    :class:`torch.nn.Linear` draws them; only with ``embed=True``), then ``W_x``, ``W_h`` and the
    read-out ``w_o`` uniform in ``[-1/sqrt(H), 1/sqrt(H)]`` (as :class:`torch.nn.LSTM` draws them);
    ``b`` zero but the forget gate's, 1 (Gers et al. 2000; in every variant); the read-out bias
    0; the LN gains 1 and biases 0. Every variant goes through the same :meth:`cell`: the only
    difference is the ``N``.

    Args:
        n_seeds: seeds per (variant, rate).
        n_lrs: rates per variant.
        variants: which of :data:`VARIANTS` to stack.
        hidden: H, the cell units (and the embedding's width).
        inputs: features per time step (2 for the adding problem).
        generators: one ``torch.Generator`` per seed, for the weights.
        embed: embed the input by ``tanh(x_t U + u)`` before the gates (default); ``False`` feeds
            ``x_t`` to the gates directly, the faithful version whose caveat is above.
    """

    def __init__(self, n_seeds: int, n_lrs: int = 1, *, variants=VARIANTS, hidden: int = 64, inputs: int = 2,
                 generators, embed: bool = True):
        super().__init__()
        generators = list(generators)
        self.variants = tuple(v for v in VARIANTS if v in variants)
        self.n_seeds, self.n_lrs, self.hidden, self.embed = n_seeds, n_lrs, hidden, embed
        repeat = len(self.variants) * n_lrs
        bound = 1 / math.sqrt(hidden)

        def uniform(g, b, *shape):
            return (torch.rand(*shape, generator=g) * 2 - 1) * b

        per_seed = []
        for g in generators:
            front = [uniform(g, 1 / math.sqrt(inputs), inputs, hidden),
                     uniform(g, 1 / math.sqrt(inputs), 1, hidden)] if embed else []
            width = hidden if embed else inputs
            per_seed.append([uniform(g, bound, width, 4 * hidden), uniform(g, bound, hidden, 4 * hidden),
                             uniform(g, bound, hidden, 1), *front])

        def stack(i):  # (models, ...): seed-major blocks repeated for every variant and rate
            one = torch.stack([p[i] for p in per_seed])
            return nn.Parameter(one.repeat(repeat, *[1] * (one.ndim - 1)))

        self.w_x, self.w_h, self.w_o = stack(0), stack(1), stack(2)
        if embed:
            self.w_e, self.bias_e = stack(3), stack(4)
        models = repeat * n_seeds
        bias = torch.zeros(models, 1, 4 * hidden)
        bias[..., hidden:2 * hidden] = 1.0  # the forget gate
        self.bias = nn.Parameter(bias)
        self.bias_o = nn.Parameter(torch.zeros(models, 1, 1))
        # the LN gains and biases (alpha, beta); they exist for every model, the LN variants use them
        self.gain_x, self.gain_h = (nn.Parameter(torch.ones(models, 1, 4 * hidden)) for _ in range(2))
        self.shift_x, self.shift_h = (nn.Parameter(torch.zeros(models, 1, 4 * hidden)) for _ in range(2))
        self.gain_c, self.shift_c = nn.Parameter(torch.ones(models, 1, hidden)), nn.Parameter(
            torch.zeros(models, 1, hidden))
        # the models are variant-major in VARIANTS order: the plain LSTMs first, then the LN-LSTMs,
        # then those without input LN. N_h and N_c normalize models [n_plain, models); N_x only the
        # LN-LSTMs, [n_plain, n_plain + n_full).
        per = n_lrs * n_seeds
        self.n_plain = per if "LSTM" in self.variants else 0
        self.n_full = per if "LN-LSTM" in self.variants else 0

    @property
    def n_models(self) -> int:
        return self.w_x.shape[0]

    def variant_of(self) -> list[str]:
        """Each model's variant, in model order."""
        per = self.n_lrs * self.n_seeds
        return [self.variants[m // per] for m in range(self.n_models)]

    def _norm(self, z: torch.Tensor, gain: torch.Tensor, shift: torch.Tensor, lo: int, hi: int) -> torch.Tensor:
        """``N(z)``: ``LN(z) * gain + shift`` for the models ``lo .. hi - 1``, the identity for the others.

        ``z`` is ``(models, ..., width)`` and ``gain``, ``shift`` are ``(models, 1, width)``.
        """
        models = z.shape[0]
        if lo == hi:
            return z
        if z.ndim == 4:  # (models, batch, seq_len, width): all time steps at once
            gain, shift = gain[:, :, None], shift[:, :, None]
        if (lo, hi) == (0, models):  # no slicing where none is needed: a slice costs a full-size zero gradient
            return torch.addcmul(shift, layer_norm(z, z.shape[-1:]), gain)
        normed = torch.addcmul(shift[lo:hi], layer_norm(z[lo:hi], z.shape[-1:]), gain[lo:hi])
        return torch.cat([part for part in (z[:lo], normed, z[hi:]) if len(part)])

    def input_terms(self, x: torch.Tensor) -> tuple[torch.Tensor, ...]:
        """``N_x(e_t W_x)`` for every time step (``N_x(x_t W_x)`` without the embedding), computed at
        once: a tuple of ``seq_len`` tensors ``(models, batch, 4H)``. (It does not depend on the state,
        so it need not wait for it.)"""
        models, batch, seq_len, inputs = x.shape
        flat = x.reshape(models, batch * seq_len, inputs)
        if self.embed:
            flat = torch.tanh(torch.baddbmm(self.bias_e, flat, self.w_e))
        xw = torch.bmm(flat, self.w_x).view(models, batch, seq_len, -1)
        return self._norm(xw, self.gain_x, self.shift_x, self.n_plain, self.n_plain + self.n_full).unbind(2)

    def cell(self, x_term: torch.Tensor, h: torch.Tensor, c: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        """One time step for every model: ``(h_t, c_t)`` from ``N_x(e_t W_x)`` and ``(h_{t-1}, c_{t-1})``."""
        lo, hi = self.n_plain, self.n_models
        a = x_term + self._norm(torch.bmm(h, self.w_h), self.gain_h, self.shift_h, lo, hi) + self.bias
        i, f, g, o = a.chunk(4, dim=-1)
        c = torch.sigmoid(f) * c + torch.sigmoid(i) * torch.tanh(g)
        h = torch.sigmoid(o) * torch.tanh(self._norm(c, self.gain_c, self.shift_c, lo, hi))
        return h, c

    def states(self, x: torch.Tensor) -> torch.Tensor:
        """Every hidden state: ``x`` ``(models, batch, seq_len, inputs)`` -> ``(models, batch, seq_len, H)``."""
        h = c = x.new_zeros(x.shape[0], x.shape[1], self.hidden)
        out = []
        for x_term in self.input_terms(x):
            h, c = self.cell(x_term, h, c)
            out.append(h)
        return torch.stack(out, dim=2)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        """``x`` ``(models, batch, seq_len, inputs)`` -> the predictions ``(models, batch)``, read from ``h_T``."""
        h = c = x.new_zeros(x.shape[0], x.shape[1], self.hidden)
        for x_term in self.input_terms(x):
            h, c = self.cell(x_term, h, c)
        return torch.baddbmm(self.bias_o, h, self.w_o).squeeze(-1)


def heldout_batch(seq_len: int, size: int = HELDOUT_SIZE) -> tuple[torch.Tensor, torch.Tensor]:
    """The fixed held-out batch: ``size`` adding-task sequences from a generator seeded with
    :data:`HELDOUT_SEED`, the same for every model, seed and call."""
    return adding_task(size, seq_len, torch.Generator().manual_seed(HELDOUT_SEED))


def heldout_loss(model: StackedLSTM, x: torch.Tensor, y: torch.Tensor, chunk: int = 128) -> torch.Tensor:
    """Each model's mean squared error on ``(x, y)`` (one batch for all models), ``chunk`` sequences
    at a time so that the input terms of a long batch need not be held at once."""
    with torch.no_grad():
        total = torch.zeros(model.n_models)
        for xs, ys in zip(x.split(chunk), y.split(chunk), strict=True):
            total += ((model(xs.expand(model.n_models, *xs.shape)) - ys) ** 2).sum(1)
    return total / len(y)


def lstm_runs(seeds=(0, 1, 2), lrs=(1e-3,), *, variants=VARIANTS, steps: int = 300, seq_len: int = SEQ_LEN,
              hidden: int = 64, batch: int = 32, clip: float = 1.0, eval_every: int = EVAL_EVERY,
              embed: bool = True) -> pd.DataFrame:
    """Train a :class:`StackedLSTM` on the adding problem: Adam, one rate of ``lrs`` per model.

    Each step: one minibatch of ``batch`` sequences of length ``seq_len`` per seed (the same for
    every model of that seed), the mean squared error, its gradient clipped per model to norm
    ``clip`` (:func:`helpers.experiments.training.clip_per_model`), then one Adam step (torch's
    defaults, each model its own rate). At step 0, every ``eval_every`` steps and after the last
    update (``step == steps``), the loss on the fixed :func:`heldout_batch` too, measured before
    that step's update.
    Evaluating draws no random numbers, so the training does not depend on ``eval_every``.
    ``embed``: the input embedding of :class:`StackedLSTM` (``False``: the 2 features straight
    into the gates, the version whose LN erases the distractors' values).

    Returns:
        One row per (step, model), ``step`` in ``0 .. steps``: ``step``, ``seed``, ``variant``,
        ``lr``, ``loss`` (the minibatch's mean squared error before that step's update; NaN at
        ``step == steps``, where no minibatch is drawn) and ``eval_loss`` (the held-out mean
        squared error; NaN between evaluations). A model that diverged has ``inf`` losses.
    """
    seeds, lrs = list(seeds), list(lrs)
    gens = [torch.Generator().manual_seed(s) for s in seeds]
    model = StackedLSTM(len(seeds), len(lrs), variants=variants, hidden=hidden, generators=gens, embed=embed)
    m = torch.arange(model.n_models)
    seed_of, lr_of = m % len(seeds), (m // len(seeds)) % len(lrs)
    lr = torch.tensor(lrs)[lr_of]
    x_eval, y_eval = heldout_batch(seq_len)
    params = list(model.parameters())
    losses, evals, moments = [], {}, {}
    for step in range(steps + 1):
        if step % eval_every == 0 or step == steps:
            evals[step] = finite_or_inf(heldout_loss(model, x_eval, y_eval))
        if step == steps:
            break
        x, y = stacked_batch(gens, seed_of, batch, seq_len)
        loss = ((model(x) - y) ** 2).mean(1)
        model.zero_grad()
        loss.nan_to_num(0.0, 0.0, 0.0).sum().backward()
        clip_per_model(params, clip)
        adam(params, lr, step, moments)
        losses.append(finite_or_inf(loss.detach()))
    n = model.n_models
    loss_table = torch.full((steps + 1, n), math.nan)
    if losses:
        loss_table[:steps] = torch.stack(losses)
    eval_table = torch.full((steps + 1, n), math.nan)
    for step, value in evals.items():
        eval_table[step] = value
    return pd.DataFrame({
        "step": np.repeat(np.arange(steps + 1), n),
        "seed": [seeds[i] for i in seed_of.tolist()] * (steps + 1),
        "variant": model.variant_of() * (steps + 1),
        "lr": [lrs[i] for i in lr_of.tolist()] * (steps + 1),
        "loss": loss_table.flatten().numpy(),
        "eval_loss": eval_table.flatten().numpy(),
    })


# ------------------------------------------------------------ summaries


def lstm_steps_to_threshold(frame: pd.DataFrame, threshold: float = THRESHOLD) -> pd.DataFrame:
    """:func:`helpers.experiments.threshold_runs.steps_to_threshold` at :data:`THRESHOLD` by default:
    each run's first evaluation step below it (NaN where it never got there)."""
    return steps_to_threshold(frame, threshold)


def pilot_scores(frame: pd.DataFrame) -> pd.DataFrame:
    """The tuning's score of ``lstm_adding``: per variant and rate, the restricted mean steps to
    :data:`THRESHOLD` over the seeds in ``frame``
    (:func:`helpers.experiments.threshold_runs.restricted_mean_steps`)."""
    return restricted_mean_steps(frame, THRESHOLD)


#: The paired comparisons of ``lstm_adding``: ``(key suffix, arm a, arm b, claim)``. The first is Ba et
#: et al.'s claim (LN-LSTM vs LSTM; its verdicts keep the plain keys ``"steps"`` and ``"final loss"``);
#: the ablation without input LN against the LSTM makes the same claim; LN-LSTM against the ablation
#: asks what the LN of the input term adds, with nothing claimed either way.
COMPARISONS = (
    ("", "LN-LSTM", "LSTM", "fewer"),
    (", LN-LSTM without input LN vs LSTM", "LN-LSTM without input LN", "LSTM", "fewer"),
    (", LN-LSTM vs LN-LSTM without input LN", "LN-LSTM", "LN-LSTM without input LN", None),
)


def _eval_every(frame: pd.DataFrame) -> int:
    """The evaluation interval of ``frame``'s runs: the first evaluated step after step 0 (the last
    evaluation, after the last update, may come sooner)."""
    evaluated = np.sort(frame.loc[frame["eval_loss"].notna(), "step"].unique())
    return int(evaluated[1] - evaluated[0])


def lstm_verdicts(frame: pd.DataFrame) -> dict[str, str]:
    """The verdicts of ``lstm_adding``, in words, from the stored table.

    - ``"best rate, <variant>"``: each arm's best rate on the pilot grid (recomputed from the pilot
      rows, as the runner picked it), and whether it is inside the grid;
    - ``"best rate on the report seeds, <variant>"``: whether that rate trains on the report seeds
      (:func:`helpers.experiments.threshold_runs.report_rate_words`);
    - ``"time, <variant>"``: the reported runs' steps to :data:`THRESHOLD` (Kaplan-Meier median,
      how many got there; :func:`helpers.evidence.statistics.time_to_threshold`);
    - ``"steps"``: LN-LSTM vs LSTM on the restricted mean steps to the threshold, a run that never
      gets there counting as the step cap, paired by seed;
    - ``"final loss"``: LN-LSTM vs LSTM on the held-out loss after the last step, capped at
      :data:`LEARNED_NOTHING` (a diverged run counts as having learned nothing), paired by seed.
      The adding task's floor is 0 (a perfect sum), so the loss is itself the excess over the
      floor, and the relative difference is one of excesses;
    - ``"steps, <a> vs <b>"`` and ``"final loss, <a> vs <b>"``: the same for the other pairs of
      :data:`COMPARISONS` (the ablation without input LN vs LSTM, and LN-LSTM vs the ablation).

    The claim tested is Ba et al.'s: the LN-LSTM needs fewer steps and ends lower; the ablation
    is held to the same claim against the LSTM; LN-LSTM vs the ablation claims nothing. Intervals
    are 95% t-intervals over the seeds (:func:`helpers.evidence.statistics.paired_difference_ci`); a
    difference in steps smaller than the evaluation interval or than one step of the tuning grid
    (:func:`helpers.experiments.threshold_runs.grid_resolution`) is flagged.
    """
    cap = int(frame["step"].max())
    pilot, report = frame[frame["stage"] == "pilot"], frame[frame["stage"] == "report"]
    scores = pilot_scores(pilot).rename(columns={"variant": "arm"})
    out = {f"best rate, {arm}": words for arm, words in best_rate_words(scores, pilot, learned_below=cap).items()}
    out.update({f"best rate on the report seeds, {arm}": words
                for arm, words in report_rate_words(frame, cap, THRESHOLD).items()})
    reached, staying = lstm_steps_to_threshold(report), steps_staying_below(report, THRESHOLD)
    variants = [v for v in VARIANTS if v in set(reached["variant"])]
    out.update({f"time, {v}": words for v, words in time_words(reached, cap, variants).items()})
    last = report[report["step"] == cap]
    final = last.assign(final=last["eval_loss"].fillna(math.inf))  # no evaluation: learned nothing
    for suffix, a, b, claim in COMPARISONS:
        if not {a, b} <= set(variants):
            continue
        said = normed_vs_plain(reached, final, cap, a=a, b=b, final="final held-out loss", claim=claim,
                               eval_every=_eval_every(frame), grid_resolution=grid_resolution(scores, (a, b)),
                               staying=staying)
        out.update({f"{key}{suffix}": words for key, words in said.items()})
    return out


# ------------------------------------------------------------ the stored experiment (make experiments)


def _lstm_unit(*, variant: str, lr, seeds, steps: int, **fixed) -> pd.DataFrame:
    """One unit of ``lstm_adding``: one variant, every rate of ``lr`` (a tuple in the pilot, one
    rate in the reported runs), for ``seeds``, stacked."""
    return lstm_runs(seeds=seeds, lrs=lr if isinstance(lr, tuple) else (lr,), variants=(variant,), steps=steps,
                     **fixed)


# How it was sized (version 2: the embedding and the ablation arm). A unit stacks 5 seeds (the
# pilot's 5 rates x 3 seeds are 15 models, one unit per arm; the reported runs two units of 5 seeds
# per arm). Against version 1, to fit the budget: the grid keeps the 5 rates around version 1's best
# ones (0.03 for the LSTM, 0.01 for the LN-LSTM), dropping 0.0003, at which no arm did best; and the
# cap is 1,200 steps (version 1: 1,400). A probe seed (999, not one of the experiment's) reached the
# threshold after 300 and 250 steps with the LN-LSTM at 0.01 and 0.03, after 450 and 500 without
# input LN, and after 750 with the LSTM at 0.01 (never within 1,400 at 0.03). LSTM runs that have not
# reached the threshold by the cap are censored (never dropped), which can only understate the LN
# arms' advantage in steps; their final loss is read at the cap, where a run that has only just got
# there is still above the floor.
runner.register(runner.Experiment(
    name="lstm_adding", notebook="13_does_it_speed_up_training", train=_lstm_unit,
    grid={"variant": VARIANTS}, seeds=SEEDS, steps=STEPS, threshold=THRESHOLD, seeds_per_unit=5,
    fixed={"seq_len": SEQ_LEN, "hidden": 64, "batch": 32, "clip": 1.0, "eval_every": EVAL_EVERY, "embed": True},
    summarize=lstm_verdicts, keep=keep_rows,
    tuning=runner.Tuning(key="lr", rates=RATES, pilot_seeds=PILOT_SEEDS, score=pilot_scores,
                         learned_below=STEPS),
    version=2,
    budget_s=7000,
    # The reproducibility check re-trains unit 4, the LSTM's seeds 5 to 9 at its best rate (0.01): in
    # the other report units, at the larger rate 0.03, a last-bit difference grows about 10-fold per
    # step. Pilot units are no good for it either (rate 0.1 is chaotic).
    repro_rtol=0.0,
    repro_atol=6e-6,
    repro_measured=5.36e-7,
    repro_unit=4))
