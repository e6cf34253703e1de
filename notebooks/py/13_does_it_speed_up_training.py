# ---
# jupyter:
#   jupytext:
#     cell_metadata_filter: -all
#     text_representation:
#       extension: .py
#       format_name: percent
#       format_version: '1.3'
#       jupytext_version: 1.19.6
#   kernelspec:
#     display_name: Python 3 (ipykernel)
#     language: python
#     name: python3
# ---

# %%
# You need not read this cell. It makes `helpers`, this set's package, importable.
import importlib.util, os, pathlib, subprocess, sys  # noqa: E401, I001
REPO_URL = os.environ.get("LAYERNORM_HANDS_ON_REPO", "https://github.com/layernorm-hands-on/layernorm-hands-on")
clone = next((p for p in [pathlib.Path.cwd(), *pathlib.Path.cwd().parents] if (p / "helpers" / "__init__.py").is_file()), None)
if importlib.util.find_spec("helpers") is None and clone is not None:
    sys.path.insert(0, str(clone))
elif importlib.util.find_spec("helpers") is None and "google.colab" in sys.modules:
    subprocess.run([sys.executable, "-m", "pip", "install", "-q", f"git+{REPO_URL}"], check=True)
elif importlib.util.find_spec("helpers") is None:
    raise ModuleNotFoundError(f"`helpers` is not installed: run `make lab` in a clone of {REPO_URL}, or `pip install git+{REPO_URL}` here")
import helpers  # noqa: E402,F401

# %% [markdown]
# # 13 · Does LayerNorm speed up training?
#
# The lesson's headline claim: deep RNNs and Transformers train slowly or fail to converge because
# each layer's input distribution keeps changing during training (输入分布不断变化), and LN, by
# standardising each layer's summed inputs, *speeds up training and improves convergence*
# (加速训练, 提高收敛性). The usual explanation, **internal covariate shift** (内部协变量偏移, Ioffe and
# Szegedy 2015), is contested (Santurkar et al. 2018). This notebook measures both.
#
# ## The answer
#
# **It depends on the network.** In Ba et al.'s architecture, an LSTM, here on a long synthetic
# sequence (the adding problem; their own tasks were real and far larger), LN cuts
# the steps to a fixed loss by about half. LN on the recurrent term and the cell alone cuts them by
# about as much, but that difference does not survive the ledger's correction for its 34
# comparisons. Each LN step costs about 1.5 times a plain one here (torch's LN kernel), and in
# wall-clock time no difference is detectable (section 5 says what a first version of this test got
# wrong). In tiny tanh RNNs the answer
# depends on how the steps are counted: LN *first reaches* the target loss later, but many plain
# runs then climb back above it, and counted until a run *stays below* it to the end, no
# difference is detectable or LN is ahead. In a 4-block Transformer the plain network needs fewer
# steps by both counts, though by less than one step of the tuning grid moves it. In a 6-block one
# Pre-LN needs fewer steps, but again by less than the grid resolves. What Pre-LN gives the 6-block
# Transformer is range and a placement that trains: at a rate ten times the plain network's best, 9 of
# 10 Pre-LN seeds train and no plain one does, and Pre-LN needs 61% fewer steps than Post-LN, which
# fails at Pre-LN's best rate. On real English text (12 blocks, the first 60 steps of learning) the
# same holds for the placement, Pre-LN needing 45% fewer steps than Post-LN, while against no norm no
# difference in steps is detectable. LN keeps the centre and spread of what enters each activation from drifting, as it
# must (it sets them for every token). Measured for each unit in that unit's own spread, with every
# seed counted at three learning rates, no difference is detectable; by Santurkar et al.'s measure LN does not reduce
# internal covariate shift; and less drift did not mean faster training. The stored verdicts behind each sentence (how they are
# made: [10 · how a claim is tested](10_how_a_claim_is_tested.ipynb)):

# %%
from helpers.evidence import claims, ledgers, runner

runner.print_verdicts("lstm_adding", "steps", "steps, LN-LSTM without input LN vs LSTM")
runner.print_verdicts("step_times", "wall-clock, LSTM, T 100, hidden 64, LN-LSTM")
runner.print_verdicts("rnn_regimes", "steps, T 10, hidden 64", "steps, T 50, hidden 128")
runner.print_verdicts("deep_transformer", "steps, Pre-LN vs no norm", "steps, Pre-LN vs Post-LN",
                      "stable seeds at the largest rate both ran, Pre-LN vs no norm")
runner.print_verdicts("text_transformer", "steps, Pre-LN vs Post-LN", "steps, Pre-LN vs no norm")
runner.print_verdicts("drift", "activation input: largest std change", "activation input: largest unit mean drift")
runner.print_verdicts("rnn_mechanism", "ics, lr 0.01")

# %% [markdown]
# **In this notebook you will**
#
# 1. measure the lesson's premise: does a hidden layer's input drift while a deep network trains,
#    and what does LN do to it?
# 2. read that test for Ba et al.'s own architecture, an LSTM with and without LN (and with LN on
#    its recurrent term and cell only), on a sequence of 100 steps;
# 3. read it for tiny tanh RNNs across widths (16, 64, 128 units) and lengths (10, 50 steps), and
#    for Transformers with no norm, Pre-LN and Post-LN, with and without warm-up: 4 and 6 blocks on
#    a copy task, 12 blocks on English text;
# 4. turn steps into seconds: LN costs time per step;
# 5. measure *why*: how far each unit's input drifts, Santurkar et al.'s gradient-based internal
#    covariate shift, and what noise injected after LN on purpose does;
# 6. explore every stored run in a dashboard, write two small pieces with instant feedback, and end
#    with a ledger of each claim and the stored result behind it, then each arm's learning-rate
#    tuning.

# %%
import matplotlib.pyplot as plt
import pandas as pd
import torch

from helpers import plots
from helpers.exercises.training_speed import check_first_step_below, check_noisy_layer_norm
from helpers.experiments import rnn_regimes as rr
from helpers.experiments import small_transformer as st
from helpers.experiments.drift import drift_by_seed, drift_intervals, drift_summary
from helpers.experiments.rnn_models import LEARNED_NOTHING, adding_task
from helpers.experiments.threshold_runs import steps_staying_below, steps_to_threshold
from helpers.experiments.training_speed_table import evidence_state, evidence_table, tuning_table
from helpers.lessons.group_stats import rounded
from helpers.widgets import speed_demo

torch.set_num_threads(1)  # one thread: the live run below takes the same path on every run of this machine


# %% [markdown]
# ## 1 · The premise: a hidden layer's input drifts
#
# The lesson opens with a claim: in deep models such as RNNs and Transformers, *as training
# proceeds, each layer's input distribution keeps changing* (各层的输入分布不断变化), so
# training slows down or fails to converge; LN standardises each layer's output to fix that.
# Ioffe and Szegedy (2015) called this change **internal covariate shift** and introduced
# BatchNorm to reduce it; Ba, Kiros and Hinton (2016) built LayerNorm on the same idea.
#
# Whether reducing that shift is *why* normalization helps is contested: Santurkar et al.
# (2018) injected noise after BatchNorm to make the distributions shift on purpose, found that
# training was barely slower, and argued that normalization helps mostly by making the loss
# surface smoother. Sections 2 to 8 test the speed claim. This section tests
# only its first half: does the input of a hidden layer drift, and what does LN do to it?
#
# **The experiment** (`helpers.experiments.drift.drift_runs`): a stack of 8 blocks
# `Linear(→ 32) → [LayerNorm(32)] → ReLU` and a final `Linear(32 → 1)`, trained with plain SGD
# (learning rate 0.05, batches of 32; 0.01 and 0.02 are stored too) for 400 steps on a synthetic
# task, `y = sin(x · w)` for 16 Gaussian inputs, with the mean squared error (MSE) as the loss. Both networks start from the
# **same** weights; one has LN before each activation, as the lesson places it. The weights are
# **He-initialised** (He et al. 2015): each weight is drawn from a normal distribution with
# standard deviation $\sqrt{2 / \text{fan\_in}}$, `fan_in` being the number of inputs of the
# layer. A ReLU zeroes about half of its inputs, which halves the second moment of what passes;
# the factor 2 makes up for it, so at the start the values keep roughly the same scale from layer
# to layer, with or without LN.
#
# Before the first step, after each of the first 20 steps and then every 10th step, a fixed
# *probe* batch of 64 inputs goes through each network, and we record, in block 6 (the 7th of 8),
# the 64 × 32 values at two places: the **Linear output** (in the network without LN this is what
# enters the ReLU; in the network with LN it is what enters LN) and, with LN, the **LN output**
# (what enters the ReLU there). Each row of 32 values is one *token*. Recording the Linear output
# of the LN network too matters: LN's own output is standardised by construction, so measuring
# only it would prove nothing about whether the layer's input keeps changing. We also record the
# probe loss, and the loss of a network that always answers the probe targets' mean (their
# variance, 0.55 at seed 0): a network sitting at that level has stopped using its input.
#
# The runs were made ahead of time for seeds 0 to 19 and stored: the experiment `drift` in
# `helpers.experiments.drift` (`make experiments ONLY=drift`). Everything below reads them.
#
# **The summary measures** (`drift_summary`, one column per recorded place of seed 0's runs).
# Each compares the recorded values with themselves at an earlier step, so each place is measured
# against its own start:
#
# - `std at step 0`, `std at step 20`, `std at the end`: the standard deviation of all
#   64 × 32 recorded values at that step;
# - `largest std change`: the largest $|\mathrm{std}_t / \mathrm{std}_0 - 1|$ over the run: 0.5
#   means the spread grew or shrank by half at some step;
# - `std change after step 20`: the same from step 20 on, against the std at step 20: does the
#   spread still change once the first steps are over?
# - `largest mean shift`: the largest $|\mathrm{mean}_t - \mathrm{mean}_0|$, in units of
#   $\mathrm{std}_0$;
# - `largest percentile drift`: the largest average move of the 5th, 25th, 50th, 75th and 95th
#   percentiles from their values at step 0, in units of $\mathrm{std}_0$; it also sees changes
#   of shape, not only of centre and spread;
# - `worst token |mean|`, `worst token |std - 1|`: over every token and step, the largest
#   distance of one token's mean from 0 and of its standard deviation from 1;
# - `loss at step 0`, `loss at the end`, `loss of the mean`: the probe loss, and the level of
#   always answering the targets' mean.

# %%
drift = runner.load("drift")  # the stored runs: drift_runs(...) at the settings above, 20 seeds, 3 rates
at_005 = drift.frame[drift.frame["lr"] == 0.05].drop(columns="lr")  # the rate this section reads
runs = at_005[at_005["seed"] == 0]  # seed 0's pair of runs
summary = drift_summary(runs)  # index (model, site): one column per recorded place below
rounded(summary, 3).T

# %% [markdown]
# The figure, top row: per recorded step, the median (line) and the 25–75 % and 5–95 % bands of
# the values at each place. Bottom row: each place's standard deviation relative to its own at
# step 0; the probe loss of both networks, with the level of answering the mean dashed; and each
# place's worst token $|$mean$|$. The step axis is linear up to 10 and logarithmic after, so that
# both the first steps and the long run show.

# %%
fig = plots.drift_figure(runs)
plt.show()

# %% [markdown]
# What it shows, at seed 0:
#
# - **The loss.** The first SGD step at this rate overshoots: both losses jump (to about 5 and
#   7), fall back within 5 steps, and then sit near the level of answering the mean (within 10%
#   to step 50) before they fall below it, the run without LN from about step 60, the run with
#   LN from about step 150: the networks learn late, but they do learn. At the
#   last step the LN run's loss is on a spike (0.71); over the 20 seeds, the verdicts below count
#   how many runs end below the level of the mean.
# - **Without LN**, the spread of what block 6's ReLU sees collapses from 0.86 to about 0.22
#   within 3 steps, during that overshoot. That part is a reaction to a too-large first step, not
#   the slow drift the lesson means. But it does not stop there: once the network starts to learn
#   (after step 100) the spread grows again, from 0.22 at step 20 to 0.40 at step 300 and 0.33 at
#   the end (`std change after step 20`: 0.88). What the layers after block 6 receive keeps
#   changing while the network learns: the lesson's 不断变化.
# - **The LN network's Linear output** moves too, by less: its spread rises by a third in the
#   first steps and comes back to 1.0 by the end (`largest std change` 0.33, after step 20 0.24).
#   LN does not stop the weights, or what they compute, from changing.
# - **LN's output**, what the ReLU sees, stays put: every token at every step within 0.011 of
#   mean 0 and 0.026 of std 1. What is left comes from `gamma` and `beta`, which learn (below:
#   they moved by up to 0.07 and 0.05). Note what LN does *not* pin: the shape of the
#   distribution. It fixes each token's mean and variance, not how the values spread around
#   them, so the percentiles of all recorded values still move (`largest percentile drift` 0.16
#   of a standard deviation, against 0.70 without LN).
#
# **Check it**: the same claims, with `assert`s on the recorded numbers.

# %%
no_norm = summary.loc[("no norm", "Linear output")]
ln_linear, ln_out = summary.loc[("LayerNorm", "Linear output")], summary.loc[("LayerNorm", "LayerNorm output")]
assert no_norm["largest std change"] > 0.5  # without LN the spread changes by more than half...
assert no_norm["std change after step 20"] > 0.5  # ... and again after step 20, while the network learns
assert ln_out["worst token |mean|"] < 0.02 and ln_out["worst token |std - 1|"] < 0.03  # LN's output: standardised
assert ln_linear["worst token |mean|"] > 0.2  # its input is not
assert no_norm["largest std change"] > 30 * ln_out["largest std change"]
assert no_norm["largest std change"] > ln_linear["largest std change"] > 10 * ln_out["largest std change"]
assert no_norm["largest percentile drift"] > 4 * ln_out["largest percentile drift"] > 0.4
loss = runs.drop_duplicates(["model", "step"]).pivot(index="step", columns="model", values="loss")
level = runs["loss_of_mean"].iloc[0]
assert (loss.loc[1] > 4 * level).all()  # the first step overshoots, in both networks
assert (loss.loc[20:50] > 0.9 * level).all().all()  # then both sit near the level of the mean ...
assert (loss.loc[300:].min() < 0.6 * level).all()  # ... and later both fall well below it
print(f"level of answering the mean: {level:.3f}; lowest loss after step 300:",
      loss.loc[300:].min().round(3).to_dict())

ln_run = runs[runs["site"] == "LayerNorm output"].set_index("step")
gamma_moved, beta_moved = ln_run["gamma_max_change"].max(), ln_run["beta_max_abs"].max()
assert gamma_moved < 0.08 and beta_moved < 0.06
print(f"block 6's LN, over the run: max |gamma - 1| = {gamma_moved:.3f}, max |beta| = {beta_moved:.3f}")

# %% [markdown]
# **Why is LN's median about −0.2 when every token's mean is within 0.01 of 0?** Because a
# token's median is not its mean. The values a ReLU network computes are skewed: most entries of
# a token sit a little below its mean and a few sit far above it. Standardising shifts and
# rescales each token, but keeps that shape: the mean is 0, and the median below it.
# `token_median` is the average over the tokens of each token's own (median − mean) / std, and
# `token_skew` the average of each token's skewness, $\mathrm{E}[(x - \mu)^3] / \sigma^3$, which
# is positive when the long tail is on the right. The pooled median (`p50`) follows the tokens'
# own medians, step by step:

# %%
shape = ln_run[["p50", "token_median", "token_skew", "token_mean_absmax"]].loc[[0, 5, 20, 100, 200, 300, 400]]
assert (shape.loc[5:, "token_skew"] > 0).all() and (shape.loc[5:, "token_median"] < 0).all()
assert ((shape["p50"] - shape["token_median"]).abs() < 0.03).all()
rounded(shape, 3)

# %% [markdown]
# **Not one lucky seed.** The same measures for all 20 stored seeds (`drift_by_seed`). Each seed
# is one pair of runs, so the seeds are compared in pairs, with a t-interval
# ([10](10_how_a_claim_is_tested.ipynb)), at two places: what enters the activation (LN's output
# against the Linear output without LN) and the Linear output of both. A run that diverged (its
# values overflowed) has no finite drift; its seed is left out, which can only favour the run
# without LN.

# %%
by_seed = drift_by_seed(at_005)  # drift_summary of each seed's runs: index (seed, model, site)
ln_rows = by_seed.xs(("LayerNorm", "LayerNorm output"), level=("model", "site"))
no_rows = by_seed.xs(("no norm", "Linear output"), level=("model", "site"))
assert (ln_rows["worst token |std - 1|"] < 0.15).all()  # LN: every token near std 1, every seed
assert (ln_rows["worst token |mean|"] < 0.05).all()  # ... and near mean 0
diverged = no_rows["largest std change"].isna()
assert ln_rows["largest std change"].notna().all()  # LN never diverged
assert (ln_rows["largest std change"] < no_rows["largest std change"])[~diverged].all()  # every seed
intervals = drift_intervals(by_seed)
# LN's output moves less in the measures of a whole token's values (what LN sets), not per unit
assert all(ci.low > 0 for (place, measure), ci in intervals.items()
           if place == "activation input" and measure != "largest unit mean drift")
assert intervals[("activation input", "largest unit mean drift")].high < 0
later = no_rows["std change after step 20"][~diverged]
print("seeds where the run without LN diverged:", no_rows.index[diverged].tolist())
print(f"without LN, the others' std change after step 20: {later.min():.2f} to {later.max():.2f}")
for key in ("diverged", "learning", "LayerNorm's tokens",
            *[f"{place}: {measure}" for place, measure in intervals]):
    print(f"- {key}: {drift.verdicts[key]}")

# %% [markdown]
# Without LN, 3 of the 20 seeds diverge at this learning rate (the lesson's "甚至无法收敛", fails
# to converge); at the others, the spread of what the ReLU sees still changes by 0.15 to 0.92
# after step 20, while the network learns. With LN every token of every seed stays within 0.03
# of mean 0 and 0.14 of std 1 at LN's output, and no run diverges. Paired by seed, what enters
# the activation drifts 94% less in its spread and 91% less in its centre with LN, and 65% less in
# its percentiles (95% CI 51% to 75%): less, but not the shape, since LN pins each token's mean
# and variance only. The Linear output before LN drifts less too in its spread (43% less, CI 17% to
# 61%) and percentiles, though no difference in its centre is detectable: far less than LN's
# output, since the weights keep changing, and LN absorbs what
# their change does to each token's mean and variance. Both networks learn: the loss ends below
# the level of the mean at every seed without LN that did not diverge and at 15 of those 17 with
# LN.
#
# Those measures favour LN by construction where they read LN's output: LN sets each token's mean
# and spread, so a measure of them cannot drift much. **Measured per unit, in the unit's own
# spread**, the picture turns: take each unit's mean over the probe batch, see how far it moves
# from step 0, in units of that unit's standard deviation over the batch, and average over the
# units (`unit mean drift`). Without LN the largest such move is 1.50 spreads (95% CI 1.19 to 1.82);
# with LN, 2.04 at LN's output (1.54 to 2.54) and 2.25 at the Linear output before it (1.64 to 2.85).
# Paired by seed over the 17 seeds where neither run diverged, what enters the activation drifts
# 32% more with LN (5% to 66%), and the Linear output 43% more (11% to 84%). LN standardises each
# token across its units, not each unit across the batch: it keeps a token's values in place as a
# whole, while each unit's share of them still moves.
#
# But that sign comes from one untuned rate, and from leaving out the 3 seeds whose plain run
# diverged (a run that overflows has drifted further than any). So the same runs were stored at
# three SGD rates, 0.01, 0.02 and 0.05, every seed kept: a diverged run counts as the one that
# drifted most, and the pairs are compared by rank (the median of the per-seed log-ratios with its
# order-statistic interval, and the sign test). Declared before those runs: LN "drifts less per unit"
# only if all three rates say so. At 0.2, tried first, 19 of 20 plain runs and 18 of 20 LN runs
# diverged, which leaves nothing to compare; the sweep stops at 0.05.

# %%
runner.print_verdicts("drift", "activation input: largest unit mean drift, every rate",
                      "Linear output: largest unit mean drift, every rate")
per_unit = runner.records("drift")["activation input: largest unit mean drift, every rate"]
assert all(m.direction is None for m in (per_unit, *per_unit.alternates))  # no rate detects a difference

# %% [markdown]
# Counting every seed, no difference in per-unit drift is detectable at any of the three rates: the
# medians run from 17% less with LN (at 0.02) to 21% more (at 0.05), each interval holding 0. So the
# premise holds in the sense the lesson states it, for whole tokens: LN keeps the centre and spread of
# what enters the activation nearly fixed. Per unit, these runs cannot tell whether LN makes the
# drift smaller or larger. This is one toy task, not a comparison of training speed: that is the
# question of sections 5 to 8.

# %% [markdown]
# ## 2 · The task: the adding problem, and what "learned" means
#
# Each input is a sequence of $T$ steps with two channels: a value uniform in [0, 1) and a marker
# that is 1 at exactly two positions, one in each half. The target is the sum of the two marked
# values (Hochreiter and Schmidhuber 1997). The network must spot the first marked value and keep
# it in its state until the second, up to $T - 1$ steps later.
#
# - **Learned nothing**: always predicting the average answer, 1.0, scores a mean squared error of
#   Var(u1 + u2) = 2/12 ≈ 0.167.
# - **Floor**: the target is a function of the input, so a perfect network scores 0.
# - **Threshold**, fixed before any run: 70% of the way from learning nothing to the floor, 0.05.
#
# Every run is scored on a **held-out batch** (512 sequences from a generator no training run
# uses) every 10, 25 or 50 steps, so no curve below is a smoothed minibatch loss.

# %%
x, y = adding_task(3, 10, torch.Generator().manual_seed(0))
print("values: ", x[0, :, 0].round(decimals=2))
print("markers:", x[0, :, 1])
print("targets:", y.round(decimals=3))
assert torch.allclose(y, (x[..., 0] * x[..., 1]).sum(1))
big_x, big_y = adding_task(100_000, 10, torch.Generator().manual_seed(1))
print(f"MSE of always predicting 1.0: {((big_y - 1.0) ** 2).mean():.4f} (2/12 = {LEARNED_NOTHING:.4f})")
assert abs(((big_y - 1.0) ** 2).mean() - LEARNED_NOTHING) < 0.003
print(f"threshold: {rr.THRESHOLD:.4f}")

# %% [markdown]
# ## 3 · The networks, and one live run
#
# **A tiny tanh RNN** (`helpers.experiments.rnn_models.StackedRNN`) computes $h_t = \tanh(a_t + b)$ from
# the summed inputs $a_t = W_x x_t + W_h h_{t-1}$. Ba, Kiros and Hinton (2016, section 3.1)
# normalize $a_t$ over the hidden units at every time step, with a learned gain $g$:
# $h_t = \tanh\big(g \odot \mathrm{LN}(a_t) + b\big)$. A deeper one stacks such layers.
#
# **An LSTM** (`helpers.experiments.lstm_adding.StackedLSTM`), Ba et al.'s architecture. Every arm first
# embeds each input the same way, $e_t = \tanh(x_t U + u)$ (a `Linear(2, 64)` with a bias, then
# `tanh`; section 5 says why). The LN-LSTM normalizes its gates' summed inputs $W_x e_t$ and
# $W_h h_{t-1}$ separately (LN over all $4H$ of them, each with its own gain and bias), and the cell
# before its output `tanh`. Its equations, and the cell in a few lines of code checked against this
# one, are in deep dive [17](17_layernorm_in_your_training_code.ipynb) (with $x_t$ for $e_t$).
#
# A third arm, the **LN-LSTM without input LN**, keeps LN on the recurrent term and the cell only:
# its gates' summed inputs are $a_t = W_x e_t + \mathrm{LN}(W_h h_{t-1}) + b$.
#
# All variants of each network run through the **same Python code**; the only difference is the
# normalization, so a fused cuDNN kernel never races a Python loop. Every model of one seed starts
# from the same weights and sees the same minibatches, whatever its variant or rate: the arms are
# **paired by seed**. Training: Adam, batch 32, each model's gradient clipped to norm 1.
#
# One seed of the tiny RNN, with and without LN, trained live for 300 steps at rate 0.01
# (a few seconds):

# %%
# NBVAL_IGNORE_OUTPUT
# (a live training run: its last digits depend on the CPU, so only what holds everywhere is asserted)
live = rr.rnn_eval_runs(seeds=(0,), lrs=(0.01,), variants=("no norm", "LayerNorm"), hidden=16, seq_len=10,
                        steps=300, eval_every=20)
held_out = live[live["eval_loss"].notna()].pivot_table(index="variant", columns="step", values="eval_loss")
print(held_out.iloc[:, ::3].round(3))
assert (held_out[300] < LEARNED_NOTHING / 4).all()  # both learn: far below the learned-nothing level

# %% [markdown]
# ## 4 · A fair test, and the runs trained ahead of time
#
# One seed is an anecdote, and a run's last digits depend on the CPU it ran on. The runs below were
# trained ahead of time by `make experiments` and ship with the package; each arm's learning rate
# was tuned on pilot seeds, the report uses 10 fresh seeds, runs that never reach the threshold are
# counted as censored, and arms are compared seed by seed with a 95% t-interval. Each of
# these terms is explained in [10 · how a claim is tested](10_how_a_claim_is_tested.ipynb); the
# tuning of every arm is at the end of this notebook. `evidence_table` gathers every stored run
# this notebook reads:

# %%
table = evidence_table()
print(f"{table.groupby(['setting', 'arm', 'lr', 'seed']).ngroups} stored runs in {table['setting'].nunique()} settings")

# %% [markdown]
# ## 5 · Ba et al.'s regime: an LSTM on a long sequence
#
# Ba et al. report their speed-ups with LN-LSTMs and LN-GRUs on long sequences: reading
# comprehension, handwriting, skip-thought vectors. Their data cannot be downloaded here, so this
# is their architecture on a synthetic long-range task: the adding problem with $T = 100$, 64 cell
# units, each arm at its tuned rate (experiment `lstm_adding`, step cap 1,200). The final loss is
# compared as it is: the task's floor is 0, so the loss is its own excess over the floor.

# %%
state = evidence_state(table, "LSTM vs LN-LSTM, T 100, hidden 64", "tuned", "all arms", 0.0, "held-out loss")
fig = plots.evidence_figure(state)
plt.show()
print(state["table"].to_string())
lstm_arms = ("LSTM", "LN-LSTM", "LN-LSTM without input LN")
runner.print_verdicts("lstm_adding", *(f"best rate, {a}" for a in lstm_arms), *(f"time, {a}" for a in lstm_arms),
                      "steps", "final loss",
                      *(f"{what}, LN-LSTM without input LN vs LSTM" for what in ("steps", "final loss")),
                      *(f"{what}, LN-LSTM vs LN-LSTM without input LN" for what in ("steps", "final loss")))

# %%
lstm = runner.records("lstm_adding")  # the stored verdicts' numbers
assert lstm["steps"].favoured == "LN-LSTM" and lstm["steps"].agree  # fewer steps, by both measures
assert lstm["steps, LN-LSTM without input LN vs LSTM"].favoured == "LN-LSTM without input LN"
assert lstm["steps, LN-LSTM vs LN-LSTM without input LN"].direction is None  # no difference detectable

# %% [markdown]
# **Here the lesson's claim holds for the steps, by about half.** At its best rate the LN-LSTM
# reaches the threshold in a median of 300 steps, the plain LSTM at *its* best rate in 500, and every
# seed of every arm gets there within 1,200. Paired by seed, the LN-LSTM needs 45% fewer steps
# (95% CI 30% to 58%). LN on the recurrent term and the cell alone cuts them too: 49% fewer steps than
# the LSTM (28% to 64%), and between the two LN arms no difference in steps is detectable with 10
# seeds (+8%, CI -25% to 55%). So what speeds this LSTM up is the LN of the recurrent term and the
# cell; the LN of the input term adds nothing measurable to the speed.
#
# **The final loss does not follow.** No difference between the LN-LSTM and the LSTM is detectable
# with 10 seeds (-41%, CI -71% to 18%). The arm without input LN ends *higher* than the LSTM (140%,
# CI 21% to 374%), and the LN-LSTM 75% lower than it (33% to 91%); but that arm was tuned to a rate 3
# times larger (0.03, its best for reaching the threshold), and Adam at a larger rate ends noisier:
# these runs do not separate its rate from its norm for the final loss.
#
# **What was checked first: a confound, and the version it replaced.** The adding task's input has 2
# features, a value $v_t$ and a marker. Fed straight into the gates, as in the first version of this
# experiment, an unmarked step's input term is $v_t\,w_0$ ($w_0$ the value's row of $W_x$), and LN
# ignores a positive scale: $\mathrm{LN}(v_t\,w_0)$ is one vector for every $v_t$ (up to eps, which
# shrinks it a little only for the smallest values). So that LN-LSTM had the 98 distracting values
# removed before it learned anything, while the plain LSTM had to learn to gate them out. A bias-free
# linear embedding would not help, since $\mathrm{LN}(v_t\,w_0 U) = \mathrm{LN}(w_0 U)$; an affine
# map followed by a nonlinearity does, and is what every arm reads through now. The LN-LSTM's input
# term at the initial weights of one seed, at four unmarked values against the one at $v_t = 0.9$:

# %%
from helpers.experiments.lstm_adding import StackedLSTM

values = torch.tensor([0.1, 0.3, 0.5, 0.7, 0.9])
x = values.view(1, -1, 1, 1) * torch.tensor([1.0, 0.0])  # unmarked steps x_t = (v, 0): 1 model, 5 values, 1 step
for embed, name in ((False, "2 features straight into the gates"), (True, "embedded first, tanh(x U + u)    ")):
    model = StackedLSTM(1, variants=("LN-LSTM",), generators=[torch.Generator().manual_seed(0)], embed=embed)
    with torch.no_grad():
        (term,) = model.input_terms(x)  # the LN'd input term at the initial weights (gain 1, bias 0)
    apart = (term[0] - term[0, -1]).norm(dim=-1) / term[0, -1].norm()  # how far from the term at v = 0.9
    print(f"{name}: v = 0.1, 0.3, 0.5, 0.7 differ from v = 0.9 by", ", ".join(f"{a:.0%}" for a in apart[:-1].tolist()))

# %% [markdown]
# The first version (2 features straight into the gates, no third arm; trained at commit `b8f34ff`
# and stored until this version replaced it) found the LN-LSTM needing **88% fewer steps** than the
# LSTM (95% CI 85% to 90%; medians 100 and 900 steps, each arm at its tuned rate, cap 1,400) and 68%
# less wall-clock time. With the distractors left in for every arm, the gap in steps is about half
# as large, and the LSTM itself learns faster (median 500 steps): much of the first version's 88% was
# LN of the input term erasing the distractors, not LN making the recurrence easier to learn.

# %% [markdown]
# ## 6 · Tiny tanh RNNs: across width and length
#
# The live run of section 3 is a 16-unit tanh RNN on sequences of 10. Tuned and repeated over 10
# seeds (the first row of the table below), LN first reaches the threshold later there. Is that a
# property of LN, or of that regime? One suspect: LN's output does not change when its input is scaled, so with few units it may erase the
# *magnitude* of the summed input, which is exactly what the adding problem must store. That would
# fade with width. The experiment `rnn_regimes` repeats the tuned comparison at hidden 16, 64 and 128
# and lengths 10 and 50 (the step cap is in each verdict).

# %%
regimes = runner.load("rnn_regimes").verdicts
rows = []
for t in rr.SEQ_LENS:
    for h in rr.HIDDEN:
        regime = f"T {t}, hidden {h}"
        rows.append({"T": t, "hidden": h,
                     "no norm: time": regimes[f"time, no norm, {regime}"],
                     "LayerNorm: time": regimes[f"time, LayerNorm, {regime}"],
                     "steps (LN vs no norm)": regimes[f"steps, {regime}"],
                     "final loss (LN vs no norm)": regimes[f"final loss, {regime}"]})
regime_table = pd.DataFrame(rows).set_index(["T", "hidden"])
with pd.option_context("display.max_colwidth", None):
    display(regime_table)

# %%
# Each reported run's first crossing of the threshold, and the step from which it stays below it to
# the end (NaN: it ends above); a run "falls back" when it crosses and later climbs above again.
report = runner.load("rnn_regimes").frame.query("stage == 'report'")
run_keys = ["seq_len", "hidden", "variant", "seed"]
both = steps_to_threshold(report, rr.THRESHOLD).merge(steps_staying_below(report, rr.THRESHOLD),
                                                      on=[*run_keys, "stage", "lr"], suffixes=(" first", " stays"))
both["falls back"] = both["steps first"].notna() & ~(both["steps stays"] <= both["steps first"])
crossings = both.groupby(["seq_len", "hidden", "variant"]).agg(
    crossed=("steps first", "count"), stays_below=("steps stays", "count"), fell_back=("falls back", "sum"),
    median_first=("steps first", "median"), median_staying=("steps stays", "median"))
display(crossings)

# %%
fig, axes = plt.subplots(1, 2, figsize=(11, 3.4))
for ax, t in zip(axes, rr.SEQ_LENS, strict=True):
    for h, style in zip(rr.HIDDEN, (":", "--", "-"), strict=True):
        part = evidence_state(table, f"tiny RNN, T {t}, hidden {h}", "tuned", "all arms", 0.0, "held-out loss")
        medians = part["curves"].groupby(["arm", "step"])["eval_loss"].median()
        for arm, colour in (("no norm", plots.ARM_COLOURS["no norm"]), ("LayerNorm", plots.ARM_COLOURS["LayerNorm"])):
            ax.plot(medians[arm].index, medians[arm].to_numpy(), ls=style, color=colour, label=f"{arm}, hidden {h}")
    ax.axhline(rr.THRESHOLD, color="k", ls="--", lw=0.8)
    ax.axhline(LEARNED_NOTHING, color="k", ls=":", lw=0.8)
    ax.set(yscale="log", xlabel="training step", ylabel="held-out MSE (median of 10 seeds)", xlim=(0, 40 * t if t < 50 else 1000),
           title=f"T = {t}: each arm at its tuned rate; dashed: threshold, dotted: learned nothing")
    ax.title.set_fontsize(9)
    ax.legend(fontsize="x-small", ncol=2)
fig.tight_layout()
plt.show()

# %% [markdown]
# **Whether LN slows a tiny RNN down depends on how the steps are counted.**
#
# - In every regime where runs learn, LN **first reaches** the threshold later at its own best rate:
#   40%, 38% and 29% more steps at hidden 16, 64 and 128 (T 10), 56% and 54% more at hidden 64 and
#   128 (T 50), each interval entirely on the "more" side (at hidden 128 resting on single seeds).
# - But many runs cross the threshold and then climb back above it, the plain ones more often (the
#   table below counts them). Counted until a run **stays below** the threshold to the end, no
#   difference is detectable in four of those five regimes, and at T 10, hidden 128 LN needs 48%
#   fewer steps (17% to 67%). The two counts disagree, so each verdict depends on the measure and
#   decides nothing: these runs do not show that LN slows a tiny RNN down, nor that it speeds one up.
# - At T 50 with 16 units neither arm learns within 1,000 steps at any rate of the grid. With 64 and
#   128 units every plain seed gets there (medians 590 and 540 steps), and only 5 and 6 of 10 LN
#   seeds do.
# - On the final loss LN ends higher at T 50, hidden 128 (95%, CI 30% to 191%); in the five other
#   regimes no difference is detectable with 10 seeds.
#
# So length alone does not make LN pay off: the LN-RNN gained nothing from T 50 that the LN-LSTM
# gained from T 100. What these runs do not separate is *why* the gated cell gains and the plain
# tanh cell does not. Ba et al.'s recurrent experiments all use gated units (LSTMs and GRUs), on
# tasks far larger than these; a vanilla tanh RNN is not the regime of their claim.

# %% [markdown]
# ## 7 · A 4-block Transformer: no norm, Pre-LN, Post-LN, and warm-up
#
# `helpers.experiments.small_transformer.StackedDecoder`: a decoder-only Transformer with 4 blocks, width 32,
# 2 heads, an MLP of 128 GELU units, learned token and position embeddings. The norms go in one of
# three places: **nowhere**; **Pre-LN** (GPT-2; Xiong et al. 2020), $x + f(\mathrm{LN}(x))$ around
# each sublayer and one LN before the read-out, so the residual stream itself is never normalized;
# **Post-LN** (the original Transformer, Vaswani et al. 2017), $\mathrm{LN}(x + f(x))$, so every
# block's output is. Pre-LN and Post-LN also run with a linear **warm-up** of the rate over the
# first 40 steps (10% of the 400-step cap), which Post-LN is said to need (Xiong et al. 2020).
# Each arm's rate is tuned as before, on a grid from 0.0003 to 0.3.
#
# **The task**, with its levels computed, not guessed: each sequence is 8 random tokens of a
# vocabulary of 16, then the same 8 again, and the model predicts every next token (15 targets).
# A model that ignores the context scores $\ln 16 = 2.773$ nats per target (the **no-copy
# level**). The first 7 targets are unpredictable even for a perfect model; the last 8 are copies,
# predictable exactly. So the **floor** is $\tfrac{7}{15} \ln 16 = 1.294$, and the threshold lies
# halfway, 2.033. An arm "learns" if at its best rate it closes at least half the gap.

# %%
print(f"no-copy level {st.NO_COPY:.4f}, floor {st.FLOOR:.4f}, threshold {st.THRESHOLD:.4f}")
assert abs(st.NO_COPY - torch.log(torch.tensor(16.0)).item()) < 1e-6
assert abs(st.FLOOR - 7 / 15 * st.NO_COPY) < 1e-6 and abs(st.THRESHOLD - (st.NO_COPY + st.FLOOR) / 2) < 1e-6
state = evidence_state(table, "4-block Transformer, copy task", "tuned", "all arms", 0.0, "held-out loss")
fig = plots.evidence_figure(state)
plt.show()
print(state["table"].to_string())

# %%
arms = list(st.PLACEMENT_ARMS)
runner.print_verdicts("small_transformer", *(f"learns, {a}" for a in arms), *(f"time, {a}" for a in arms))
print()
runner.print_verdicts("small_transformer", "steps, Pre-LN vs no norm", "steps, Post-LN vs no norm",
                      "steps, Post-LN + warm-up vs Post-LN", "steps, Pre-LN + warm-up vs Pre-LN",
                      "final loss, Pre-LN vs no norm", "final loss, Post-LN vs no norm")
print()
runner.print_verdicts("small_transformer", *(f"largest stable rate, {a}" for a in arms))

# %%
tf = runner.records("small_transformer")
assert all(tf[f"learns, {a}"].answer == "yes" for a in arms)  # every arm learns the task

# %% [markdown]
# **On this Transformer LN does not speed up training either; what Pre-LN may buy is range.**
#
# - Every arm learns the task, and every best rate is inside the grid.
# - At each arm's best rate, **no norm is the fastest**: a median of 35 steps. Pre-LN needs 25% more
#   steps (95% CI 14% to 37%), but one step of the tuning grid moves no norm's own pilot score by
#   71%: a neighbouring rate, which other pilot seeds might have picked, could move the plain arm
#   by more than the whole difference, so the ledger leaves it undecided. Post-LN needs 117% more
#   (42% to 230%), at least, since one Post-LN seed of 10 never gets there and counts as the cap.
#   All of them end near the floor, and no difference in how far above it is detectable.
# - **Warm-up**: with 10 seeds no effect on Post-LN's steps is detectable (-22%, 95% CI -48% to 18%),
#   though with it all 10 seeds reach the threshold (one of 10 without); Xiong et al.'s (2020) case
#   for it is deeper models. Pre-LN with warm-up needs 6% fewer steps (1% to 10%), about 2 steps,
#   less than the evaluation interval of 5, at a rate 3 times larger.
# - **The largest rate that still trains** (every pilot seed ends below the threshold; 3 pilot
#   seeds, so a level without an interval) is where Pre-LN shows: no norm and Post-LN, with or
#   without warm-up, stop learning above 0.01; Pre-LN, with or without warm-up, trains at 0.03, three
#   times the plain network's.
#
# The limits: 4 blocks, 400 steps, a task the plain network learns in a few dozen steps, an
# evaluation every 5 steps next to differences of a few steps, a warm-up as long as the whole time to
# the threshold, and "largest stable rate" from 3 pilot seeds. So the arms are run again where they
# can be told apart.

# %% [markdown]
# ### Deeper: 6 blocks on a harder copy task
#
# The experiment `deep_transformer` (`helpers.experiments.deep_transformer`) stacks 6 blocks of the
# same width on a copy task over a vocabulary of 128 (no-copy level $\ln 128 = 4.852$, floor
# 2.264, threshold halfway, 3.558), sized by a short probe so that Pre-LN needs over a hundred steps
# and Post-LN without warm-up fails at rates where Pre-LN trains. The held-out loss is measured every
# 2 steps on 64 sequences; the cap is 600 steps; the warm-up lasts 20 steps, short against the 124 to
# 310 steps the arms need. Each arm's rate is tuned on 3 pilot seeds over 0.0003 to 0.1, never at a
# rate where a pilot run ends above the threshold (a run can cross it early and then blow up), then
# 10 fresh seeds run at it; the **largest stable rate** is measured on those 10 seeds, at 4 rates of
# the grid from one below each arm's pilot boundary to two above (a rate is stable when every seed
# ends the 600 steps below the threshold), so that two arms can be compared as counts of seeds at
# one rate (Fisher's exact test).

# %%
deep_arms = ["no norm", "Pre-LN", "Post-LN", "Post-LN + warm-up"]
runner.print_verdicts("deep_transformer", *(f"steps per seed, {a}" for a in deep_arms))
print()
runner.print_verdicts("deep_transformer", "steps, Pre-LN vs no norm", "steps, Pre-LN vs Post-LN",
                      "steps, Post-LN vs no norm", "steps, Post-LN + warm-up vs Post-LN")
print()
runner.print_verdicts("deep_transformer", *(f"largest stable rate, {a}" for a in deep_arms),
                      *(f"at Pre-LN's best rate, {a}" for a in deep_arms if a != "Pre-LN"))
print()
runner.print_verdicts("deep_transformer", *(f"learns, {a}" for a in deep_arms),
                      *(f"best rate on the report seeds, {a}" for a in deep_arms))

# %%
deep_records = runner.records("deep_transformer")
assert deep_records["steps, Pre-LN vs Post-LN"].favoured == "Pre-LN"  # Pre-LN ahead of Post-LN, by both measures
assert deep_records["steps, Pre-LN vs no norm"].weak  # against no norm: below one step of the tuning grid
assert deep_records["at Pre-LN's best rate, Post-LN"].answer == "yes"  # no reported Post-LN seed ends below

# %%
# Counts of seeds that end below the threshold at one rate, the largest that both arms ran on the 10
# reported seeds, and Fisher's exact test of the difference
runner.print_verdicts("deep_transformer", "stable seeds at the largest rate both ran, Pre-LN vs no norm",
                      "stable seeds at the largest rate both ran, Pre-LN vs Post-LN")
assert all(deep_records[f"stable seeds at the largest rate both ran, Pre-LN vs {b}"].favoured == "Pre-LN"
           for b in ("no norm", "Post-LN"))

# %% [markdown]
# **Six blocks tell the placements apart, and Pre-LN from no norm by the rates they survive.**
#
# - **Pre-LN against Post-LN**: Pre-LN needs 61% fewer steps (53% to 67%; at least that, since one
#   Post-LN seed never gets there; fewer on all 10 seeds, medians 124 and 300). At Pre-LN's best
#   rate, 0.01, no Post-LN seed ends below the threshold, with or without the warm-up: Post-LN fails
#   where Pre-LN trains, Xiong et al.'s (2020) finding.
# - **Range**, counted on the 10 reported seeds: Pre-LN trains on every seed up to 0.01 and on 9 of
#   10 at 0.03 (none at 0.1); no norm on every seed up to 0.003, on 4 of 10 at 0.01 and on none at
#   0.03; Post-LN up to 0.001, Post-LN with warm-up up to 0.003. At 0.03, the largest rate every arm
#   ran, 9 of 10 Pre-LN seeds and none of the plain ones end below the threshold (Fisher's exact
#   test p = 0.0001): Pre-LN trains at rates where the plain network does not.
# - **Pre-LN against no norm, in steps**: each at its own best rate (0.01 and 0.003), Pre-LN needs
#   27% fewer steps (21% to 33%; fewer on all 10 seeds, medians 124 and 170), counted either way.
#   But no norm's own tuning cannot resolve a difference that small: one step of its rate grid moves
#   its pilot score by 110% (at 0.001 it needs 341 steps; at 0.01 its pilot runs cross the
#   threshold sooner and then climb back above it). The ledger leaves it undecided.
# - **How the measure decided this row before**: tuned on the first crossing alone, the plain
#   network's best rate was 0.01, where its runs reach the threshold fast and then blow up (3 of 10
#   ended above it); at that rate Pre-LN needed 13% *more* steps to the first crossing and 70% fewer
#   to staying below. A tuning that never picks a rate where a pilot run ends above the threshold
#   gives the plain network 0.003, and the sign of the first count turns.
# - **Warm-up**: a 20-step warm-up changes nothing detectable in Post-LN's steps (+3%, -17% to 27%)
#   and does not rescue it at 0.01. At 0.003, 10 of 10 seeds with it and 9 of 10 without end below the
#   threshold: one seed apart, which decides nothing. A 20-step linear warm-up is no test of the
#   warm-up Xiong et al. discuss, which lasts thousands of steps; longer warm-ups were not tried.
# - The tuning caveats: Post-LN's best rate left 1 of 10 report seeds short of the threshold, more
#   than its neighbouring rate's pilots, and its words say so; Pre-LN's final loss sits at the floor,
#   so its final-loss comparisons have no ratio and are not made.
#
# What LN gives this Transformer is stability at large rates and, placed before each sublayer, a
# network that trains where Post-LN does not; whether it also needs fewer steps than a plain network
# at each one's best rate, these runs cannot tell apart from what the rate grid resolves. Dozens of blocks and long training remain out of reach of these runs; the
# claims ledger keeps them apart.

# %% [markdown]
# ### On English text: 12 blocks, one character at a time
#
# A copy task is synthetic, and the claims above were made on language. The experiment
# `text_transformer` (`helpers.experiments.text_transformer`) trains the same decoder to predict the
# next character of real English prose: the 79 topics of the Python Language Reference that ship
# with CPython 3.11.7 (464,970 characters, shipped with this set under the PSF licence). Every 10th
# topic from the 7th is held out, 11.4% of the characters, and the held-out loss is read on 64 fixed
# windows of them. The model has width 64, 4 heads and contexts of 64 characters, trained on batches
# of 16 with Adam and each model's gradient clipped to norm 1. Losses are in **bits per character**:
# a model that knows only how often each character occurs scores 4.682 on the held-out text.
#
# **The size was fixed by a probe, declared before it ran**: 4, 8 and 12 blocks, three rates, no
# norm, Pre-LN and Post-LN, one seed, every run the same 720 block-steps (180, 90 and 60 steps). The
# arms would *separate* at a depth where Post-LN fails at Pre-LN's best rate and no norm fails at
# one rate at least, failing meaning a final loss above a threshold halfway from 4.682 to the best
# run at that depth. The rule takes the shallowest depth that separates, or the deepest if none does.
# None did:

# %%
from helpers.experiments import text_transformer as tt

probe = tt.probe_table()
print(probe.pivot_table(index=["blocks", "variant"], columns="lr", values="final").round(3).to_string())
levels = tt.probe_levels(probe, tt.UNIGRAM)
print(levels.round(3).to_string(index=False))
assert not levels["separates"].any() and tt.chosen_blocks(levels) == tt.BLOCKS == 12

# %% [markdown]
# So the experiment runs 12 blocks for 60 steps, with the threshold at 4.219 bits per character.
# Sixty steps read about 61,000 characters, an eighth of the training text: these runs see the
# **first phase of learning** (which characters are common, then which follow which), not what the
# norms do late in training. The protocol is the 6-block one's: seven arms (no norm, Pre-LN,
# Post-LN, Post-LN with a warm-up over the first 12 steps, Pre-RMSNorm, and DyT at two values of
# its $\alpha_0$, which deep dive [15](15_the_normalization_family.ipynb) reads), each arm's rate
# tuned on 3 pilot seeds over 0.0003 to 0.1, 10 fresh seeds at it, and the 4-rate check stage for
# the largest stable rate.

# %%
text_arms = ["no norm", "Pre-LN", "Post-LN", "Post-LN + warm-up"]
runner.print_verdicts("text_transformer", *(f"time, {a}" for a in text_arms))
print()
runner.print_verdicts("text_transformer", "steps, Pre-LN vs no norm", "final loss, Pre-LN vs no norm",
                      "steps, Pre-LN vs Post-LN", "steps, Post-LN vs no norm", "steps, Post-LN + warm-up vs Post-LN")
print()
runner.print_verdicts("text_transformer", *(f"largest stable rate, {a}" for a in text_arms),
                      "stable seeds at the largest rate both ran, Pre-LN vs no norm",
                      "stable seeds at the largest rate both ran, Pre-LN vs Post-LN")

# %%
text_records = runner.records("text_transformer")
assert text_records["steps, Pre-LN vs Post-LN"].favoured == "Pre-LN"  # by both measures
assert text_records["steps, Post-LN + warm-up vs Post-LN"].favoured == "Post-LN"  # the warm-up costs steps
assert text_records["stable seeds at the largest rate both ran, Pre-LN vs Post-LN"].favoured == "Pre-LN"

# %% [markdown]
# **On text, the placement result holds; the presence result does not show in 60 steps.**
#
# - **Pre-LN against no norm**: each at its best rate (0.003 and 0.001), no difference in steps is
#   detectable (+2%, -11% to 17%; medians 18 and 18), and Pre-LN ends 1% lower in held-out loss
#   (0% to 1%), too close to zero to decide.
# - **Range**: Pre-LN trains on every seed up to 0.01 and on 5 of 10 at 0.03; no norm on every seed
#   up to 0.003 and on none at 0.01 (median final loss 32.6 bits per character) or 0.03 (every run
#   diverges to a non-finite loss). At
#   0.03, 5 of 10 Pre-LN seeds and no plain one end below the threshold (Fisher's exact test p =
#   0.033), which does not survive the ledger's correction for its 34 comparisons: undecided.
# - **Pre-LN against Post-LN**: Pre-LN needs 45% fewer steps (38% to 52%; fewer on all 10 seeds,
#   medians 18 and 33), counted either way, and ends 4% lower. At 0.01, every Pre-LN seed and no
#   Post-LN seed ends below the threshold. This is the copy task's finding again, on language.
# - **Post-LN against no norm**: Post-LN needs 86% more steps (71% to 104%; 81% more until it stays
#   below). With no warm-up at its best rate, Post-LN is the slowest of the three here.
# - **Warm-up**: a linear warm-up over the first 12 of 60 steps makes Post-LN need 27% *more* steps
#   (20% to 34%) at the rate both are tuned to, and does not let it train at 0.01. A warm-up this
#   long against the run slows the start by construction (the rate is small for a fifth of it); the
#   thousands of warm-up steps Xiong et al. discuss are not tested by it.
#
# So on this text, as on the copy task, where the norm goes matters more than whether there is one.
# Whether a 12-block network without a norm would fall behind later in training, or at larger
# scale, these 60-step runs cannot say.

# %% [markdown]
# ## 8 · Steps are not seconds
#
# LN costs time on every step: two reductions over each normalized vector and an extra pass over
# it, forward and backward. The experiment `step_times` timed one training step of a single model
# of each arm, unstacked, on one thread, in 10 rounds: each round times every arm once, in an order
# rotated by one arm per round, so that a change in the machine's load falls on every arm alike; the
# 1-minute load average is stored with every timing. Every arm runs the same Python code and calls
# torch's own kernel for its norm (`torch.nn.functional.layer_norm`), as a model of yours would; one
# more arm runs the LN-LSTM with this set's from-scratch `helpers.layer_norm`, to show what that
# alone costs. An arm's time per step is its median over the rounds. The wall-clock time to the
# threshold is each reported run's steps times its arm's time per step, paired by seed as before,
# counted both ways (to the first crossing, and until the run stays below), and its interval
# carries both the seeds' spread in steps and the rounds' spread in the ratio of the two arms' step
# times. It is still one machine's estimate.

# %%
times = runner.load("step_times")
print(f"timed on: {times.meta['fingerprint']['cpu']}, {times.meta['fingerprint']['threads']} thread; "
      f"load average {times.frame['load_1m'].min():.2f} to {times.frame['load_1m'].max():.2f}")
for key, words in times.verdicts.items():
    print(f"{key}: {words}")

# %% [markdown]
# **Per step, LN costs time almost everywhere; per run, it paid for itself nowhere detectably.**
#
# - The **LN-LSTM** takes 1.46 times as long per step as the LSTM with torch's kernel (95% CI 1.22
#   to 1.75 over the rounds), and the one without input LN 1.38 times: the cell normalizes two or
#   three vectors at each of the 100 time steps. Its 45% fewer steps about make up for that: no
#   difference in wall-clock time to the threshold is detectable (-20%, 95% CI -40% to 7%; without
#   input LN, -30%, -55% to 8%), by either count of the steps.
# - **The from-scratch LN's cost**: the same LN-LSTM with this set's `helpers.layer_norm` (about 7
#   tensor operations, each launched from Python, where torch's kernel is one) takes 1.99 times as
#   long per step as with torch's kernel (1.50 to 2.64). Timed that way, as a first version of this
#   section did, the LN-LSTM took 2.6 times the LSTM's step and 44% more wall-clock time: the sign
#   came from the implementation, not from LN.
# - In the **4-block Transformer**, Pre-LN and Post-LN take 1.35 and 1.40 times as long per step as
#   no norm, on top of needing more steps: 69% and 204% more wall-clock time to the threshold. In
#   the **6-block** one, 1.35 and 1.24 times per step: Pre-LN's fewer steps make up for it (no
#   difference detectable, -2%, -19% to 18%), Post-LN takes 129% more.
# - In the **tiny RNNs** LN adds between -4% and 22% per step, no difference detectable in any. At
#   these sizes a step's time goes mostly to the cost of launching each operation, not to arithmetic.
#
# The timings were made with other work running on the 2 cores (load average 1.4 to 2.3), which is
# why they are interleaved: the load changes the times, and the rounds' spread is in the intervals.

# %% [markdown]
# ## 9 · Why: drift per unit, and internal covariate shift as Santurkar et al. define it
#
# The story in the lesson is that LN helps *because* it keeps each layer's input distribution from
# drifting. That is two claims: LN reduces the drift, and less drift means faster training. The
# experiment `rnn_mechanism` measures the first one two ways, on 3-layer tanh RNNs (hidden 64,
# $T = 10$) at three fixed rates, 10 seeds each, at every evaluation:
#
# - **drift per unit**, in Ioffe and Szegedy's sense: for each unit of the top layer, the mean and
#   std over the held-out batch (and its time steps) of the value entering its `tanh`, and how far
#   each moved since the previous checkpoint, averaged over the units. For the LN network that value
#   is $g \odot \mathrm{LN}(a) + b$, which LN does *not* pin down per unit: LN standardizes each
#   sample across its units, not each unit across the batch.
# - **internal covariate shift (ICS) after Santurkar et al. (2018, Definition 2.1)**: the top
#   layer's weight gradient $G$, and the same gradient $G'$ once every layer *below* it has taken
#   its update on the same batch, the top layer not yet. Their definition is the difference
#   $\|G - G'\|$ (with the cosine of $G$ and $G'$ beside it); we report it relative to the
#   gradient's size, $\|G - G'\| / \|G\|$, so that networks whose gradients differ in size can be
#   compared, and the cosine too (the table after the verdicts): how much the ground moved under the
#   top layer in one step.

# %%
runner.print_verdicts("rnn_mechanism", *(f"{what}, lr {lr:g}"
                                         for what in ("drift of the unit means", "drift of the unit stds", "ics")
                                         for lr in rr.MECHANISM_LRS))
print()
runner.print_verdicts("rnn_mechanism", *(f"{what}, depth 3, lr {lr:g}"
                                         for what in ("time, no norm", "time, LayerNorm", "steps")
                                         for lr in rr.MECHANISM_LRS))

# %%
# Santurkar et al.'s cosine of G and G' (1: the top layer's gradient did not turn), median over each
# arm's measured steps and seeds, beside the relative difference reported above
plain_mech = runner.load("rnn_mechanism").frame.query("noise == 0")
display(plain_mech.groupby(["lr", "variant"])[["ics", "ics_cos"]].median().round(3)
        .rename(columns={"ics": "||G - G'|| / ||G||", "ics_cos": "cos(G, G')"}))

# %%
fig, axes = plt.subplots(1, 3, figsize=(12, 3.2))
for ax, measure in zip(axes, ("drift of unit means", "drift of unit stds", "ICS (Santurkar)"), strict=True):
    part = evidence_state(table, "3-layer RNN, T 10, hidden 64 (why)", 0.01, "all arms", 0.0, measure)
    column = part["column"]
    medians = part["curves"].dropna(subset=[column]).groupby(["arm", "step"])[column].median()
    for arm in ("no norm", "LayerNorm"):
        ax.plot(medians[arm].index, medians[arm].to_numpy(), color=plots.ARM_COLOURS[arm], label=arm)
    ax.set(yscale="log", xlabel="training step", ylabel={"ICS (Santurkar)": "||G - G'|| / ||G||"}.get(measure, measure),
           title=f"{measure}, rate 0.01 (median of 10 seeds)")
    ax.title.set_fontsize(9)
    ax.legend(fontsize="small")
fig.tight_layout()
plt.show()

# %%
mech = runner.load("rnn_mechanism").verdicts
assert all(runner.records("rnn_mechanism")[f"drift of the unit means, lr {lr:g}"].favoured == "LayerNorm"
           for lr in rr.MECHANISM_LRS)

# %% [markdown]
# **What the three measures say.**
#
# - **Drift of the unit means: LN reduces it**, by 55% to 85% depending on the rate, each interval
#   well away from zero. But this measure is in absolute units, so LN's bounded output wins it by
#   construction: a unit whose values LN keeps near a spread of 1 cannot move its mean as far as a
#   plain unit whose values grow. The same measure taken in each unit's own spread, in the deep MLP
#   of section 1, went the other way (LN 32% more); here it was not stored, so this row does not
#   separate drift from scale.
# - **Drift of the unit stds: LN increases it**: 38% more at rate 0.003, 100% at 0.01 and 328% at
#   0.03. LN pins each sample's mean and spread across units, not each unit's spread across samples.
# - **Santurkar's ICS: LN does not reduce it.** No difference is detectable at 0.003 and 0.03; at
#   0.01 the LN network has more than twice the ICS of the plain one (138% more, 33% to 327%).
#
# And the speed at these fixed rates does not follow the drift. At 0.003, where the plain network
# trains fastest, LN needs 39% more steps (median 100 against 50: a difference smaller than the
# evaluation interval of 25 steps, as its words flag), although the plain
# network's unit means drift far more. At 0.01 no difference in steps is detectable (4 of 10 plain seeds and 7 of 10 LN
# seeds get there), though LN ends lower (76%, resting on single seeds). At 0.03 neither gets there. "LN speeds up training
# because it removes internal covariate shift" is not what these runs show.
#
# **Noise on purpose.** Santurkar et al. separated the two claims for BatchNorm: they added noise
# after it, a random shift and scale drawn afresh at every training step, so the next layer's
# input distribution moves *more* than without any norm, and found that "noisy BN" trained about as
# well as BN. Our **noisy LayerNorm** does the same after LN (their noise followed BatchNorm; noise
# after LN is our adaptation). As theirs, it is drawn per activation, from a distribution that
# changes at every step (their section 2.1: "we perturb each activation for each sample in the batch
# using i.i.d. noise sampled from a non-zero mean and non-unit variance distribution"): at strength
# $s$, each activation is multiplied by a scale uniform in $[1 - s, 1 + s]$, of mean 1, and shifted by
# a draw from $N(\mu, s^2)$, where the mean $\mu$, uniform in $[-s, s]$, is drawn anew for each unit
# and layer at every training step. Each noisy network is scored in **eval mode, with the noise
# off**: every activation at the noise's expected scale, 1, and its expected shift, 0, so that it is
# scored in the regime it trained around, and its cost is what the noise did to the training. Against plain LN, paired by seed, on the final held-out loss (nothing is
# claimed; the words say which way the interval lies, and "the same" only where the whole interval
# lies within ±10%, a margin declared for these comparisons) and on the ICS:

# %%
dose = []
for lr in rr.MECHANISM_LRS:
    for s in rr.NOISES:
        dose.append({"lr": lr, "strength": s, "final held-out loss vs plain LN": mech[f"noise {s:g}, lr {lr:g}"],
                     "ICS vs plain LN": mech[f"noise {s:g} ics, lr {lr:g}"]})
with pd.option_context("display.max_colwidth", None):
    display(pd.DataFrame(dose).set_index(["lr", "strength"]))

# %%
finals = table[(table["setting"] == "3-layer RNN, T 10, hidden 64 (why)") & (table["step"] == 600)
               & (table["variant"] != "no norm")]
dose_median = finals.pivot_table(index="noise", columns="lr", values="eval_loss", aggfunc="median")
print("median final held-out loss (noise off), per strength (rows; 0 = plain LN) and rate (columns):")
print(dose_median.round(4).to_string())
assert (dose_median[0.003].diff().dropna() > 0).all()  # at 0.003 every step up in strength costs more

# %% [markdown]
# **Noise after LN is not free here, and it does not raise ICS.** Trained with noise and scored at
# its expected scale, the noisy networks end with a higher held-out loss than plain LN at every
# strength at rate 0.003, and at 0.01 at strengths 0.1, 0.5 and 1 (at 0.25 no difference is
# detectable with 10 seeds), each interval wholly beyond the ±10% margin. At 0.03, where no arm
# reaches the threshold, strengths 0.25 to 1 end with **the same** loss as plain LN within ±10%
# (+1% to +2%), and at 0.1 no difference is detectable. At 0.003 the cost grows with every step up
# in strength (the median table). So this small version does not reproduce Santurkar et al.'s "noise
# costs little" for BatchNorm on VGG networks: a 3-layer, 64-unit RNN is not a VGG network, and
# noise after LN is not noise after BN.
#
# The noise was meant to *increase* the shift each layer sees. Yet by Santurkar's gradient measure
# the noisy networks have *less* ICS than plain LN: at every strength at rate 0.003, and at strengths
# 0.25 to 1 at 0.01 (a relative measure: noise also changes the size of the gradient $\|G\|$); at
# 0.03, and at strength 0.1 at 0.01, no difference is detectable. Either way, this measure of shift does not predict which
# network trains well.

# %% [markdown]
# ## 10 · See it: every stored run, one control per factor
#
# Pick a setting (the experiment and its regime, or depth), a learning rate (each arm's tuned one,
# or any rate of the grid: then you see the pilot seeds), one arm or all, a noise strength (for
# the 3-layer RNN) and a measure. Thin lines are single seeds, the bold line their median. The
# table under the figure gives each arm's steps to the threshold.

# %%
# NBVAL_IGNORE_OUTPUT
# (displays a widget)
dashboard = speed_demo(table)
display(dashboard)

# %% [markdown]
# The same dashboard for a reader without a kernel: the 3-layer RNN at rate 0.01 with noisy LN at
# strength 0.5, its held-out loss.

# %%
dashboard.snapshot(setting="3-layer RNN, T 10, hidden 64 (why)", rate=0.01, noise=0.5)
plt.show()

# %% [markdown]
# **Check it** without the widget: `evidence_state` is what it draws.

# %%
check = evidence_state(table, "3-layer RNN, T 10, hidden 64 (why)", 0.01, "all arms", 0.5, "held-out loss")
print(check["table"].to_string())
assert set(check["curves"]["arm"]) == {"no norm", "LayerNorm", "noisy LayerNorm 0.5"}
assert check["table"]["seeds"].eq(10).all()

# %% [markdown]
# ## Exercises
#
# **1.** Steps to threshold: return the first index at which `losses` (a 1-D tensor) is below
# `threshold`, as a 0-d tensor, or `torch.tensor(-1)` if it never is.

# %%
def first_step_below(losses, threshold):
    return (losses < threshold).sum()  # TODO: this counts the steps below


check_first_step_below(first_step_below)

# %% [markdown]
# <details><summary>Solution</summary>
#
# ```python
# def first_step_below(losses, threshold):
#     below = torch.nonzero(losses < threshold)  # the steps below, in order
#     return below[0, 0] if len(below) else torch.tensor(-1)
# ```
#
# </details>

# %% [markdown]
# **2.** The noisy norm of section 9: LayerNorm over the last dim (biased variance, eps 1e-5, no
# gain or bias), then `* scale + shift` per unit.

# %%
def noisy_layer_norm(a, shift, scale):
    return a * scale + shift  # TODO: normalize first


check_noisy_layer_norm(noisy_layer_norm)

# %% [markdown]
# <details><summary>Solution</summary>
#
# ```python
# def noisy_layer_norm(a, shift, scale):
#     mean = a.mean(-1, keepdim=True)
#     var = ((a - mean) ** 2).mean(-1, keepdim=True)  # biased
#     return (a - mean) / torch.sqrt(var + 1e-5) * scale + shift
# ```
#
# </details>

# %% [markdown]
# ## Claims ledger
#
# Each claim this notebook tests, its outcome, the stored verdict word for word, and the stored result
# behind it ([10](10_how_a_claim_is_tested.ipynb) says how a verdict is made and read); then what
# rests on citations.
#
# A difference decides a claim only where it survives Holm's correction over the ledger's comparisons
# (the column says how many there are: with that many tests, a few 95% intervals would exclude 0 by
# chance alone) and carries no weak flag (smaller than the experiment resolves, fragile, resting on
# one seed); otherwise the claim is undecided.

# %%
ledger = claims.claims_ledger(ledgers.LEDGERS["13_does_it_speed_up_training.ipynb"])
with pd.option_context("display.max_colwidth", None):
    display(ledger)

# %%
assert len(ledger) == len(ledgers.LEDGERS["13_does_it_speed_up_training.ipynb"]) and ledger["verdict"].str.len().gt(0).all()
assert ledger["outcome"].isin(claims.OUTCOMES).all()

# %% [markdown]
# Resting on citations, not on this notebook's runs:
#
# | claim | source |
# |---|---|
# | LN-LSTMs and LN-GRUs converge faster on reading comprehension, handwriting and skip-thought vectors | Ba et al. 2016, section 6 |
# | Internal covariate shift is what normalization removes, and why it helps | Ioffe and Szegedy 2015 (for BatchNorm) |
# | Noisy BatchNorm trains about as well as BatchNorm; normalization helps by smoothing the loss landscape | Santurkar et al. 2018 |
# | Post-LN Transformers need a learning-rate warm-up; Pre-LN ones train without | Xiong et al. 2020 |
#
# ## Summary
#
# - **Where Ba et al. made the claim, it holds for the steps, not for the time.** An LSTM on a
#   100-step sequence, each arm at its tuned rate, reaches the threshold in 45% fewer steps with LN,
#   and in 49% fewer with LN on the recurrent term and the cell alone (between the two, no difference
#   is detectable); no difference in its final
#   loss is detectable, and at 1.5 times the cost per step (torch's LN kernel) no difference in
#   wall-clock time is detectable. A
#   first version found 88% fewer steps on an input whose distracting values LN erased by
#   construction (section 5).
# - **It does not hold for every network.** For vanilla tanh RNNs at every width (16 to 128) and
#   both lengths tried, whether LN needed more steps depends on how they are counted (to the first
#   crossing, or until the run stays below); Pre-LN needed more steps than no norm in a 4-block
#   Transformer and fewer in a 6-block one, each time by less than one step of the tuning grid moves
#   the plain network, so neither decides anything; and each LN step took more time.
# - **What Pre-LN gives the Transformer is range, and a placement that trains**: in the 6-block one,
#   at a rate ten times the plain network's best, 9 of 10 Pre-LN seeds train and no plain one does,
#   and it needs 61% fewer steps than Post-LN, which fails on every seed at Pre-LN's best rate; a
#   20-step warm-up changes Post-LN's steps by nothing detectable. On English text, in a 12-block
#   model's first 60 steps, Pre-LN again needs fewer steps than Post-LN (45%), no difference from no
#   norm is detectable, and a warm-up over a fifth of the run costs Post-LN 27% more steps.
# - **The lesson's mechanism is not what the measurements show.** LN held each token's centre and
#   spread in place (by construction), but for each unit's mean, in that unit's own spread, no
#   difference was detectable in the deep MLP at any of three rates, every seed counted; in absolute units (which favour LN's bounded output) LN reduced
#   the drift of each unit's mean in the RNN, increased the drift of its spread, and did not reduce Santurkar's gradient-based internal
#   covariate shift; noise after LN raised the final loss at the two smaller rates (at 0.01 not
#   detectably at strength 0.25; at 0.003 more the stronger it was) and lowered that shift there (at
#   0.01 not detectably at strength 0.1); at the largest rate, strengths 0.25 to 1 ended the same
#   within ±10%. Less drift did not mean faster training here.
# - **Out of reach here**: the paper's own tasks and model sizes, Transformers dozens of blocks deep,
#   and long training. Claims about them rest on the citations above.
#
# ## Glossary
#
# | English | 中文 |
# |---|---|
# | Layer Normalization | 层归一化 |
# | internal covariate shift | 内部协变量偏移 |
# | convergence | 收敛 |
# | learning rate | 学习率 |
# | learning-rate warm-up | 学习率预热 |
# | residual connection | 残差连接 |
#
# **Warm-up**: raising the learning rate linearly from 0 over the first steps. Censored runs,
# Kaplan-Meier medians, restricted means, pairing by seed and the intervals and their words are defined in
# [10 · how a claim is tested](10_how_a_claim_is_tested.ipynb).
#
# ## References
#
# - J. L. Ba, J. R. Kiros, G. E. Hinton, *Layer Normalization*, 2016,
#   [arXiv:1607.06450](https://arxiv.org/abs/1607.06450).
# - S. Ioffe, C. Szegedy, *Batch Normalization: Accelerating Deep Network Training by Reducing
#   Internal Covariate Shift*, ICML 2015, [arXiv:1502.03167](https://arxiv.org/abs/1502.03167).
# - S. Santurkar, D. Tsipras, A. Ilyas, A. Madry, *How Does Batch Normalization Help
#   Optimization?*, NeurIPS 2018, [arXiv:1805.11604](https://arxiv.org/abs/1805.11604).
# - S. Hochreiter, J. Schmidhuber, *Long Short-Term Memory*, Neural Computation 9(8), 1997
#   (the adding problem).
# - A. Vaswani et al., *Attention Is All You Need*, NeurIPS 2017,
#   [arXiv:1706.03762](https://arxiv.org/abs/1706.03762) (Post-LN).
# - R. Xiong et al., *On Layer Normalization in the Transformer Architecture*, ICML 2020,
#   [arXiv:2002.04745](https://arxiv.org/abs/2002.04745) (Pre-LN, and why Post-LN needs warm-up).
# - Python Software Foundation, *The Python Language Reference*, its topics as shipped in CPython 3.11.7
#   (`pydoc_data.topics`), PSF licence (the text of `text_transformer`).

# %% [markdown]
# ## Tuning: each arm's learning rate
#
# For every tuned setting, each arm's score on the pilot seeds at every rate of its grid (mean
# steps to the threshold, a censored run counting as the cap), the best one ringed
# ([10](10_how_a_claim_is_tested.ipynb), section 2).

# %%
scores = tuning_table(table)
fig = plots.tuning_figure(scores)
plt.show()

# %%
best = scores[scores["best"]].set_index(["setting", "arm"])
grid = scores.groupby("setting")["lr"].agg(["min", "max"])
best = best.assign(inside=[grid.loc[s, "min"] < lr < grid.loc[s, "max"] for (s, _), lr in best["lr"].items()],
                   learned=best["score"] < best["cap"])
shown = pd.DataFrame({"best rate": [f"{r:g}" if ok else "none" for r, ok in zip(best["lr"], best["learned"], strict=True)],
                      "pilot score (steps)": best["score"].round(1), "inside the grid": best["inside"],
                      "learned": best["learned"]}, index=best.index)
print(shown.to_string())
assert best.loc[best["learned"], "inside"].all()  # no arm that learned has its best rate on the grid's edge

# %% [markdown]
# Every arm that learned has its best rate inside its grid (an arm whose every pilot run was
# censored has no best rate to speak of; the table says so with `learned` False).
