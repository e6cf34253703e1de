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
# Make `helpers` (this set's package) importable: installed, from a checkout, or in Colab.
import importlib.util
import os
import pathlib
import subprocess
import sys

REPO_URL = os.environ.get("LAYERNORM_HANDS_ON_REPO", "https://github.com/layernorm-hands-on/layernorm-hands-on")
if importlib.util.find_spec("helpers") is None:
    checkout = next((p for p in [pathlib.Path.cwd(), *pathlib.Path.cwd().parents]
                     if (p / "helpers" / "__init__.py").is_file()), None)
    if checkout is not None:
        sys.path.insert(0, str(checkout))
    elif "google.colab" in sys.modules:
        subprocess.run([sys.executable, "-m", "pip", "install", "-q", f"git+{REPO_URL}"], check=True)
    else:
        raise ModuleNotFoundError(f"`helpers` is not installed: run `make lab` in a clone of {REPO_URL}, "
                                  f"or `pip install git+{REPO_URL}` in this kernel's environment.")
import helpers  # noqa: E402,F401

# %% [markdown]
# # 01 · LayerNorm from the formula
#
# $$y = \frac{x - \mathrm{E}[x]}{\sqrt{\mathrm{Var}[x] + \epsilon}} \cdot \gamma + \beta$$
#
# **In this notebook you will**
#
# 1. watch the problem LayerNorm (LN, 层归一化) is meant to solve: in a deep network without
#    normalization, the values entering a hidden layer drift as training proceeds; with LN,
#    every token stays standardised;
# 2. set LN against BatchNorm (BN) as the lesson does: which values share one mean and
#    variance, whose output depends on the rest of the batch, what each module stores, and why
#    LN was invented;
# 3. compute the formula by hand on a tiny tensor, one symbol at a time, and check that each
#    token ends with mean (均值) 0 and variance (方差) 1, or a little under 1, and why;
# 4. see why LN uses the **biased** variance (divide by n, not n − 1), and that PyTorch does too;
# 5. see what `eps` is for (0 / 0), and move it on a log-scale slider;
# 6. meet `gamma` and `beta`, the learnable parameters (可学习参数): where they live, how they
#    start, and how training moves them; then move them yourself with two sliders;
# 7. check the set's `helpers.layer_norm` and `helpers.LayerNorm` against PyTorch's;
# 8. write the pieces yourself, with instant feedback.
#
# Every claim is shown by a cell below or cited; the summary at the end lists which.

# %%
# %matplotlib inline
import matplotlib.pyplot as plt
import pandas as pd
import torch
import torch.nn.functional as F
from IPython.display import display
from torch import nn

from helpers import plots
from helpers.evidence import runner
from helpers.exercises.checking import compare
from helpers.exercises.layer_norm import (
    check_biased_variance,
    check_layer_norm_last_dim,
    check_output_variance,
)
from helpers.experiments.drift import (
    DRIFT_SETTINGS,
    DRIFT_STEPS,
    drift_by_seed,
    drift_intervals,
    drift_runs,
    drift_summary,
    fit_gamma_beta,
)
from helpers.lessons.bn_vs_ln import batch_dependence, both_ways, state_and_modes
from helpers.lessons.group_stats import group_stats, rounded
from helpers.widgets import affine_demo, affine_state, eps_demo, eps_state

torch.set_num_threads(1)  # fixed: a training run below then gives the same digits every time on this machine

# %% [markdown]
# ## 1 · Why normalize: a hidden layer's input drifts
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
# surface smoother. Notebook 05 (`05_does_it_speed_up_training`) tests the speed claim. Here we
# test only its first half: does the input of a hidden layer drift, and what does LN do to it?
#
# **The experiment** (`helpers.experiments.drift.drift_runs`): a stack of 8 blocks
# `Linear(→ 32) → [LayerNorm(32)] → ReLU` and a final `Linear(32 → 1)`, trained with plain SGD
# (learning rate 0.05, batches of 32) for 400 steps on a synthetic task, `y = sin(x · w)` for 16
# Gaussian inputs, with the mean squared error (MSE) as the loss. Both networks start from the
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
# One call makes both runs and returns one tidy row per model, place and recorded step (a few of
# the columns, steps 0 and 400):

# %%
# NBVAL_IGNORE_OUTPUT
# (a live training run: its last digits depend on the CPU; the numbers below read stored runs)
live = drift_runs(seed=0, steps=DRIFT_STEPS, **DRIFT_SETTINGS)  # both runs: 2 x 400 SGD steps, seeded
assert set(live["site"]) == {"Linear output", "LayerNorm output"}
live_ln = live[live["site"] == "LayerNorm output"]
assert (live_ln["token_mean_absmax"] < 0.05).all()  # LN's output: every token stays centred
rounded(live[live["step"].isin([0, DRIFT_STEPS])][["model", "site", "step", "loss", "mean", "std",
                                                  "token_mean_absmax"]], 3)

# %% [markdown]
# A training run amplifies the last-bit differences between CPUs, so your digits above may
# differ from another computer's. The same runs were therefore made ahead of time, for seeds 0
# to 19, and stored: the experiment `drift` in `helpers.experiments.drift` (`make experiments
# ONLY=drift`). Everything below reads them, and is the same everywhere.
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
drift = runner.load("drift")  # the stored runs: drift_runs(...) at the settings above, 20 seeds
runs = drift.frame[drift.frame["seed"] == 0]  # the pair made live above
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
# **Not one lucky seed.** The same runs for all 20 stored seeds, one row per seed: the two drift
# measures, then `worst token |mean|` and `worst token |std - 1|`, each for the three recorded
# places (`no norm`: the Linear output of the network without LN; `LN net: Linear` and
# `LN net: LN`: the Linear output and LN's output in the network with LN). `NaN` means the run
# diverged: its values overflowed.

# %%
by_seed = drift_by_seed(drift.frame)  # drift_summary of each seed's runs: index (seed, model, site)
columns = ["largest std change", "std change after step 20", "worst token |mean|", "worst token |std - 1|"]
places = {("no norm", "Linear output"): "no norm", ("LayerNorm", "Linear output"): "LN net: Linear",
          ("LayerNorm", "LayerNorm output"): "LN net: LN"}
per_seed = by_seed[columns].unstack(["model", "site"])
per_seed.columns = pd.MultiIndex.from_tuples([(c, places[m, s]) for c, m, s in per_seed.columns])
rounded(per_seed, 3)

# %% [markdown]
# Each seed is one pair of runs, so the seeds are compared in pairs: for each drift measure, how
# much smaller the LN network's is on average, with a 95% bootstrap confidence interval over the
# seeds (`helpers.evidence.statistics.paired_difference_ci`), at two places: what enters the activation
# (LN's output against the Linear output without LN) and the Linear output of both. A run that
# diverged has no finite drift; its seed is left out, which can only favour the run without LN.

# %%
ln_rows = by_seed.xs(("LayerNorm", "LayerNorm output"), level=("model", "site"))
no_rows = by_seed.xs(("no norm", "Linear output"), level=("model", "site"))
assert (ln_rows["worst token |std - 1|"] < 0.15).all()  # LN: every token near std 1, every seed
assert (ln_rows["worst token |mean|"] < 0.05).all()  # ... and near mean 0
diverged = no_rows["largest std change"].isna()
assert ln_rows["largest std change"].notna().all()  # LN never diverged
assert (ln_rows["largest std change"] < no_rows["largest std change"])[~diverged].all()  # every seed
intervals = drift_intervals(by_seed)
assert all(ci.low > 0 for (place, _), ci in intervals.items() if place == "activation input")
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
# the activation drifts about 92% less in its spread and in its centre with LN, and 59% less in
# its percentiles (95% CI 46% to 70%): less, but not the shape, since LN pins each token's mean
# and variance only. The Linear output before LN drifts less too, but by far less than LN's
# output (38% less in its spread, CI 16% to 54%): the weights keep changing, and LN absorbs what
# their change does to each token's mean and variance. Both networks learn: the loss ends below
# the level of the mean at every seed without LN that did not diverge and at 15 of those 17 with
# LN. This is one learning rate on one toy task, not a comparison of training speed: that is
# notebook 05's subject.
#
# ## 2 · BN or LN: which values share one mean and variance
#
# Before its formula, the lesson sets LN against Batch Normalization (BN, 批量归一化): BN computes
# the mean and variance of **each feature over the whole batch** (整个批次) and standardises that
# feature with them; LN computes the mean and variance of **each sample over its own features**
# (在每个样本内独立计算) and standardises the sample. On a `(batch, features)` tensor: BN reduces
# dim 0, LN dim -1. A batch of 3 samples × 4 features whose features live on different scales,
# normalized both ways (`helpers.lessons.bn_vs_ln.both_ways`: BN in training mode, LN, `eps = 1e-5`, no
# `gamma` or `beta`):

# %%
batch = torch.tensor([[1.0, 20.0, 300.0, 4000.0],
                      [3.0, 60.0, 100.0, 1000.0],
                      [2.0, 40.0, 200.0, 2500.0]])  # 3 samples x 4 features
outputs = both_ways(batch)
assert (outputs.loc["BatchNorm"].abs().max() < 1.3).all()  # BN: every column standardised
rounded(outputs, 4)

# %% [markdown]
# BN makes every **column** mean 0 and variance 1, whatever its scale: the samples of a feature
# are compared with each other. LN makes every **row** mean 0 and variance 1: the features of a
# sample are compared with each other, so the large feature 3 dominates each row. Each
# normalization assumes that what it pools is comparable.
#
# **BN's output for one sample depends on the other samples; LN's does not.** Replace sample 2
# and normalize again (`batch_dependence`): sample 0 did not change, yet its BN output moves;
# its LN output is bit for bit the same.

# %%
dependence = batch_dependence(batch, torch.tensor([0.0, 0.0, 0.0, 0.0]), sample=0, other=2)
assert not dependence.loc["BatchNorm", "unchanged"] and dependence.loc["LayerNorm", "unchanged"]
rounded(dependence, 4)

# %% [markdown]
# **What each module stores.** A *parameter* is a tensor that training updates by gradient
# (`weight` = $\gamma$, `bias` = $\beta$). A *buffer* is a tensor a module keeps and updates
# itself, outside the gradient: `nn.BatchNorm1d` keeps `running_mean` and `running_var`
# (averages of the batches' statistics, used in `eval()` mode instead of the batch's own) and a
# counter, `num_batches_tracked`. A module's *state dict* is the dictionary of all its named
# parameters and buffers: what `torch.save(model.state_dict(), ...)` writes and
# `load_state_dict` reads back. `nn.LayerNorm` has no buffers, so nothing differs between
# `train()` and `eval()`: below, each module is called on the batch once in `train()` mode,
# then in `eval()` mode.

# %%
modes = state_and_modes(batch)
assert modes.loc["nn.LayerNorm(4)", "buffers"] == "(none)" and modes.loc["nn.LayerNorm(4)", "train == eval"]
assert not modes.loc["nn.BatchNorm1d(4)", "train == eval"]
rounded(modes, 4)

# %% [markdown]
# **Why LN was invented** (Ba, Kiros and Hinton 2016, section 1): because BN needs the batch.
# Its output for a sample depends on the batch it came in, it needs a batch large enough for
# good statistics (at batch size 1 a feature's variance over the batch is 0 and PyTorch refuses
# to train BN at all; notebook 00 shows the error), training and inference compute different
# things, and in a recurrent network each time step would need its own statistics, for
# sequences of different lengths. LN's statistics come from one sample at one time step, so it
# works the same at any batch size, batch size 1 included, in training and at test time, and
# at every step of an RNN. Notebook 03 (`03_layernorm_vs_batchnorm`) measures what BN's
# dependence on the batch costs.
#
# ## 3 · The formula, symbol by symbol
#
# | symbol | the lesson's words | here | in code |
# |---|---|---|---|
# | $x$ | 输入数据, the input | one token's `dim` features | `x`, shape `(..., dim)` |
# | $\mathrm{E}[x]$ | token 的均值, the mean | over the token's own features | `x.mean(-1, keepdim=True)` |
# | $\mathrm{Var}[x]$ | token 的方差, the variance | **biased**: divide by `dim` (section 4) | `((x - mean) ** 2).mean(-1, keepdim=True)` |
# | $\epsilon$ | 小常数 1e-5, 用于避免除以零 | `eps = 1e-5`, inside the square root (section 5) | `torch.sqrt(var + eps)` |
# | $\gamma$ | 学习参数, 控制尺度 (scale) | `weight`, shape `(dim,)`, starts at 1 (section 6) | `ln.weight` |
# | $\beta$ | 学习参数, 控制平移 (shift) | `bias`, shape `(dim,)`, starts at 0 (section 6) | `ln.bias` |
#
# The lesson computes the statistics per token or per sentence; this notebook works per token
# (`normalized_shape=dim`), and notebook 02 does both. A tiny input, 3 tokens of 4 features:
# token 2's features barely differ, on purpose. `group_stats` gives one row per token, its mean
# and biased variance computed in float64:

# %%
x = torch.tensor([[1.0, 2.0, 3.0, 6.0],  # token 0
                  [-4.0, 0.0, 4.0, 8.0],  # token 1: more spread out
                  [0.0, 0.002, -0.002, 0.0]])  # token 2: features that barely differ
names = ("token", "feature")
group_stats(x, dims=-1, names=names)

# %% [markdown]
# Now the formula, one step per line. `keepdim=True` keeps each token's statistic as a column
# of shape `(3, 1)`, so that it lines up with its own token's row when subtracted or divided.

# %%
eps = 1e-5
gamma, beta = torch.ones(4), torch.zeros(4)  # what a fresh nn.LayerNorm(4) starts with

mean = x.mean(dim=-1, keepdim=True)  # E[x]: one mean per token
centred = x - mean  # x - E[x]: every token now averages 0
var = (centred**2).mean(dim=-1, keepdim=True)  # Var[x]: the mean squared deviation (divide by n)
std = torch.sqrt(var + eps)  # sqrt(Var[x] + eps)
x_hat = centred / std  # standardised
y = x_hat * gamma + beta  # scale and shift: with gamma = 1 and beta = 0, y = x_hat

for name, value in [("E[x]", mean), ("Var[x]", var), ("sqrt(Var[x] + eps)", std), ("y", y)]:
    print(f"{name}, shape {tuple(value.shape)}:\n{value}\n")

# %% [markdown]
# Before and after, side by side:

# %%
stats = pd.concat({"input x": group_stats(x, -1, names=names),
                   "output y": group_stats(y, -1, names=names)}, axis=1)
rounded(stats, 6)

# %% [markdown]
# Every token now has mean 0. Tokens 0 and 1 have variance 1 to five decimals
# (0.999997 and 1.000000). Token 2 has variance **0.166667**: LN divides every centred value by
# $\sqrt{\mathrm{Var}[x] + \epsilon}$, not by $\sqrt{\mathrm{Var}[x]}$, so the output's variance is
#
# $$\mathrm{Var}[y] = \frac{\mathrm{Var}[x]}{\mathrm{Var}[x] + \epsilon},$$
#
# which is $3.5 / 3.50001 = 0.999997$ for token 0 and $2 \cdot 10^{-6} / (1.2 \cdot 10^{-5}) = 1/6$
# for token 2, whose variance is a fifth of `eps`. "Mean 0, variance 1" holds only for tokens
# whose variance is large next to `eps`. In numbers:

# %%
var_in = stats["input x"]["var"]
predicted = var_in / (var_in + eps)
measured = stats["output y"]["var"]
assert ((measured - predicted).abs() < 1e-6).all()
assert (stats["output y"]["mean"].abs() < 1e-6).all()
rounded(pd.DataFrame({"Var[x]": var_in, "Var[x] / (Var[x] + eps)": predicted,
                      "Var[y], measured": measured}), 6)

# %% [markdown]
# And the hand computation is exactly what PyTorch's `nn.LayerNorm(4)` computes (`compare`
# reports exact / close / largest difference). Which last bits differ depends on the CPU (the
# order of its sums), so `shown` writes a difference that small as a bound, and a larger one with
# three digits:

# %%
def shown(table, below):
    """compare()'s rows, each max_abs_diff under `below` written as "< below": the same on every CPU."""
    assert (table["max_abs_diff"][table["close"]] < below).all()
    return table.assign(max_abs_diff=[f"< {below:g}" if d < below else f"{d:.3g}" for d in table["max_abs_diff"]])


with torch.no_grad():
    torch_y = nn.LayerNorm(4)(x)
shown(compare(y, torch_y, name="by hand vs nn.LayerNorm(4)"), below=1e-6)

# %% [markdown]
# ## 4 · The biased variance
#
# A variance averages squared deviations from the mean. Dividing their sum by $n$ gives the
# **biased** (population) variance; dividing by $n - 1$ gives the **unbiased** estimate
# (Bessel's correction), which is the better guess of a whole population's variance from a
# sample of $n$. `torch.var` divides by $n - 1$ unless told otherwise: `unbiased=False` (the
# lesson's code) or, in newer code, `correction=0` mean divide by $n$.
#
# LN does not estimate anything: it standardises exactly the $n$ numbers in front of it, so it
# divides by $n$. So do Ba et al. (their $\sigma$ divides by $H$, the number of hidden units)
# and PyTorch ("the variance is calculated via the biased estimator"). On a 4-feature token the
# two differ by the factor $n / (n - 1) = 4/3$; at a Transformer's width the difference is small
# (at $n = 768$, as in BERT-base and GPT-2 small, $768 / 767 = 1.0013$, and the outputs differ by
# a factor $\sqrt{767/768} = 0.99935$), so the choice matters most for narrow layers like this one:

# %%
token = torch.tensor([1.0, 2.0, 3.0, 6.0])  # n = 4 features, mean 3
squares = (token - token.mean()) ** 2
print("squared deviations:", squares.tolist(), " sum:", squares.sum().item())
variances = pd.DataFrame({
    "sum / n or sum / (n - 1)": [squares.sum().item() / 4, squares.sum().item() / 3],
    "torch.var(unbiased=...)": [token.var(unbiased=False).item(), token.var(unbiased=True).item()],
    "torch.var(correction=...)": [token.var(correction=0).item(), token.var(correction=1).item()],
}, index=["biased (divide by n)", "unbiased (divide by n - 1)"])
ratio = token.var() / token.var(unbiased=False)
assert abs(ratio.item() - 4 / 3) < 1e-6
print("unbiased / biased =", round(ratio.item(), 6), "= 4/3")
variances

# %% [markdown]
# LN by hand with each variance, against `nn.LayerNorm` on the tiny tensor `x`: only the biased
# one matches. With the unbiased one, the outputs of tokens 0 and 1 are shrunk by
# $\sqrt{3/4} = 0.866$ (token 2's by less: there `eps` dominates the variance anyway).

# %%
def layer_norm_by_hand(x, unbiased, eps=1e-5):
    mean = x.mean(dim=-1, keepdim=True)
    var = x.var(dim=-1, unbiased=unbiased, keepdim=True)
    return (x - mean) / torch.sqrt(var + eps)


biased_y = layer_norm_by_hand(x, unbiased=False)
unbiased_y = layer_norm_by_hand(x, unbiased=True)
for name, out in [("biased Var:  ", biased_y), ("unbiased Var:", unbiased_y)]:
    print("output std per token,", name, [round(s, 4) for s in out.std(-1, correction=0).tolist()])
shown(pd.concat([compare(biased_y, torch_y, name="biased Var (unbiased=False) vs nn.LayerNorm"),
                 compare(unbiased_y, torch_y, name="unbiased Var (torch.var's default) vs nn.LayerNorm")]),
      below=1e-6)

# %% [markdown]
# ## 5 · eps: never divide by zero
#
# The lesson: $\epsilon$ is a small constant, 1e-5, "to avoid dividing by zero" (用于避免除以零).
# A token whose features are all equal has variance 0, and its centred values are all 0, so
# without `eps` LN computes $0 / 0$, which is `nan`; a `nan` then spreads to everything it
# touches downstream, the loss included. With `eps` it is $0 / \sqrt{10^{-5}} = 0$:

# %%
constant = torch.full((4,), 2.5)  # a token whose features are all equal
centred_c = constant - constant.mean()
var_c = (centred_c**2).mean()
print("x - E[x]:", centred_c.tolist(), " Var[x]:", var_c.item())
print("eps = 0:    ", (centred_c / torch.sqrt(var_c + 0.0)).tolist())
print("eps = 1e-5: ", (centred_c / torch.sqrt(var_c + 1e-5)).tolist())
print("F.layer_norm, eps=0:   ", F.layer_norm(constant, (4,), eps=0.0).tolist())
print("F.layer_norm, default: ", F.layer_norm(constant, (4,)).tolist())

# %% [markdown]
# `eps` does more than avoid $0 / 0$: for a token whose variance is comparable to `eps`, it
# decides how much the token is flattened (section 3: output variance
# $\mathrm{Var}/(\mathrm{Var} + \epsilon)$). Without it, LN would blow differences of any size,
# however tiny, up to a standard deviation of 1; `eps` decides where that stops.
#
# ### See it: slide eps
#
# One token of 8 features, `1 + 0.003 · randn`: its variance, 1.26e-5, is about the default
# `eps`. The slider moves `eps` from 1e-9 to 1e-1 on a log scale (each notch multiplies it by
# √10). Left: the token. Right, on a fixed axis: LN's output; the pale band is the output with
# `eps = 0`, the token exactly standardised. The table reads the token's variance, `eps`,
# $\mathrm{Var}/(\mathrm{Var} + \epsilon)$, and the output's measured variance and standard
# deviation.

# %%
# NBVAL_IGNORE_OUTPUT
# displays a widget: the eps slider and its live figure and table
eps_widget = eps_demo(seed=0)
display(eps_widget)

# %% [markdown]
# The same dashboard for a reader without a kernel, at `eps = 1e-3`: no longer small next to
# these tokens' variance, it pulls the output's spread well below 1.

# %%
eps_widget.snapshot(eps=1e-3)
plt.show()

# %% [markdown]
# **Check it**: the widget's state function at five values of `eps`. The measured variance of
# the output equals $\mathrm{Var}/(\mathrm{Var} + \epsilon)$, and it falls from 1 to almost 0.

# %%
demo_token = eps_widget.state["input"]
rows = [eps_state(demo_token, e)["table"].iloc[0] for e in (1e-9, 1e-7, 1e-5, 1e-3, 1e-1)]
eps_table = pd.DataFrame(rows).reset_index(drop=True)
assert ((eps_table["output var (measured)"] - eps_table["var / (var + eps)"]).abs() < 1e-5).all()
assert eps_table["output std"].is_monotonic_decreasing
assert eps_table["output std"].iloc[0] > 0.999 and eps_table["output std"].iloc[-1] < 0.02
eps_table.map("{:.3e}".format)

# %% [markdown]
# ## 6 · gamma and beta are learned
#
# After standardising, LN scales by $\gamma$ and shifts by $\beta$, one value per feature. The
# lesson: they are learnable parameters (可学习参数), updated by backpropagation (反向传播), so that
# the network can adapt the scale (尺度) and shift (平移) to the data (根据数据的特性); below they
# even undo the normalization, where the target asks for that. In PyTorch they are `weight` and `bias`, they have the shape
# `normalized_shape`, and they start at 1 and 0, so a fresh LN only standardises:

# %%
ln = nn.LayerNorm(4)
for name, p in ln.named_parameters():
    print(f"{name}: shape {tuple(p.shape)}, requires_grad={p.requires_grad}, values {p.tolist()}")
print("per sentence, LayerNorm((3, 4)).weight has shape", tuple(nn.LayerNorm((3, 4)).weight.shape))
print("buffers:", list(ln.buffers()), "(no running_mean or running_var, unlike BatchNorm)")
mine = helpers.LayerNorm(4)
assert [n for n, _ in mine.named_parameters()] == ["weight", "bias"] == list(mine.state_dict())

# %% [markdown]
# **Do they learn?** `fit_gamma_beta` builds 64 tokens `x = 2 + 3 · z` from exactly
# standardised tokens `z`, so every token has mean 2 and standard deviation 3. The model is a
# single fresh `helpers.LayerNorm(4)`, and the target is `x` itself: the input *before*
# normalization. LN removes the 2 and the 3; only $\gamma$ and $\beta$ can put them back, and the
# loss is 0 at $\gamma = \sqrt{9 + \epsilon} \approx 3$, $\beta = 2$. Plain SGD (learning rate
# 0.5) on the mean squared error, 30 steps, feature 0 every 5 steps:

# %%
fit = fit_gamma_beta(scale=3.0, shift=2.0, steps=30, lr=0.5, seed=0)
feature_0 = fit[fit["feature"] == 0].set_index("step").iloc[::5]
feature_0[["gamma", "beta"]].round(4).assign(loss=feature_0["loss"].map("{:.1e}".format))

# %%
fig = plots.gamma_beta_fit_figure(fit, targets={"gamma": 3.0, "beta": 2.0})
plt.show()

# %%
end = fit[fit["step"] == 30]
assert ((end["gamma"] - 3.0).abs() < 3e-3).all() and ((end["beta"] - 2.0).abs() < 3e-3).all()
loss = fit.groupby("step")["loss"].first()
assert loss[0] / loss[30] > 1e6  # the loss fell by more than a million times
print("after 30 steps: gamma", end["gamma"].round(4).tolist(), " beta", end["beta"].round(4).tolist())

# %% [markdown]
# Every feature's $\gamma$ climbs from 1 to 3 and $\beta$ from 0 to 2, and the loss falls by a
# factor of more than a million: the network has undone the normalization because the target
# asked for it. Ioffe and Szegedy (2015, section 3) make this argument for BatchNorm: with
# $\gamma = \sqrt{\mathrm{Var}[x]}$ and $\beta = \mathrm{E}[x]$ the layer can represent the
# identity. For LN it works exactly only when every token has the same mean and variance, as
# here: $\gamma$ and $\beta$ are per feature and shared by all tokens, so they can restore a
# common scale and shift, but not each token's own statistics, which LN discards.
#
# ### See it: one feature's gamma and beta
#
# $\gamma$ and $\beta$ are **vectors, one entry per feature, shared by every token**: entry $j$
# rescales and shifts feature $j$ of every token, and nothing else. 64 tokens of 16 features,
# `5 + 2 · randn`, through LN. The first slider picks a feature $j$; the other two set
# $\gamma_j$ and $\beta_j$, while every other feature keeps $\gamma = 1$, $\beta = 0$. Grey dots:
# each token's standardised value $\hat{x}$ at each feature (left of the feature's tick); blue
# dots: its $y = \gamma \hat{x} + \beta$ (right of it); the black line: token 0's $y$ across the
# features. The table reads, over the 64 tokens at feature $j$, the mean and standard deviation
# of $\hat{x}$ and of $y$, and what $\gamma_j$ and $\beta_j$ predict for $y$:
# $\gamma_j \cdot \mathrm{mean} + \beta_j$ and $|\gamma_j| \cdot \mathrm{std}$. (Feature $j$'s
# column of $\hat{x}$ does not have mean 0 and std 1: LN standardises each *token*, a row, not
# each feature.)

# %%
# NBVAL_IGNORE_OUTPUT
# displays a widget: the feature selector, the gamma and beta sliders and their live figure and table
affine_widget = affine_demo(seed=0)
display(affine_widget)

# %% [markdown]
# The same dashboard for a reader without a kernel, at feature 7 with $\gamma_7 = 0.5$ and
# $\beta_7 = -2$: feature 7 of every token is squeezed to half its spread and moved down by 2,
# every other feature's $y$ sits on its $\hat{x}$, and token 0's line dips at feature 7 only.

# %%
affine_widget.snapshot(feature=7, gamma=0.5, beta=-2.0)
plt.show()

# %% [markdown]
# **Check it**: for a few settings (the widget's state function, on the widget's own tokens),
# every token's feature $j$ is exactly $\gamma_j \hat{x}_j + \beta_j$, and no other feature moved.

# %%
tokens = affine_widget.state["input"]  # the widget's 64 x 16 tokens
x_hat = F.layer_norm(tokens, (16,))
rows = []
for j, g, b in [(0, 1.0, 0.0), (3, 2.5, -1.5), (7, 0.5, 3.0), (15, 3.0, -3.0)]:
    state = affine_state(tokens, j, g, b)
    assert torch.allclose(state["output"][:, j], g * x_hat[:, j] + b, atol=1e-5)  # every token, feature j
    assert state["others_max_change"] < 1e-6  # every other feature: y = x_hat
    rows.append({"feature": j, "gamma_j": g, "beta_j": b,
                 "largest |y_j - (gamma_j x_hat_j + beta_j)|": (state["output"][:, j] - g * x_hat[:, j] - b).abs().max().item(),
                 "largest change of another feature": state["others_max_change"]})
table = pd.DataFrame(rows)
assert (table[table.columns[3:]] < 1e-5).all().all()
table.assign(**{c: ["< 1e-5"] * len(table) for c in table.columns[3:]})  # float32's last bits: shown as the bound just asserted

# %% [markdown]
# ## 7 · The set's LayerNorm against PyTorch's
#
# `helpers.layer_norm` and `helpers.LayerNorm` are this set's own, written with the operations
# above (no call to PyTorch's fused kernel) and with PyTorch's exact signatures and parameter
# names, so a state dict moves from one to the other. On the lesson's shape `(2, 3, 4)`, with
# random $\gamma$ and $\beta$: the outputs, and the gradients of a loss with respect to the input,
# $\gamma$ and $\beta$.

# %%
g = torch.Generator().manual_seed(1)
x3 = torch.randn(2, 3, 4, generator=g)
theirs = nn.LayerNorm(4)
with torch.no_grad():
    theirs.weight.copy_(1 + 0.5 * torch.randn(4, generator=g))
    theirs.bias.copy_(torch.randn(4, generator=g))
mine = helpers.LayerNorm(4)
mine.load_state_dict(theirs.state_dict())  # the same keys: weight, bias

x_theirs, x_mine = x3.clone().requires_grad_(), x3.clone().requires_grad_()
out_theirs, out_mine = theirs(x_theirs), mine(x_mine)
(out_theirs**3).sum().backward()
(out_mine**3).sum().backward()
shown(pd.concat([
    compare(helpers.layer_norm(x3, (4,), mine.weight, mine.bias),
            F.layer_norm(x3, (4,), theirs.weight, theirs.bias), name="helpers.layer_norm vs F.layer_norm"),
    compare(out_mine, out_theirs, name="helpers.LayerNorm vs nn: output"),
    compare(x_mine.grad, x_theirs.grad, name="gradient wrt x"),
    compare(mine.weight.grad, theirs.weight.grad, name="gradient wrt gamma"),
    compare(mine.bias.grad, theirs.bias.grad, name="gradient wrt beta"),
]), below=1e-3)  # the gradients reach about 130: a few of float32's last bits there are ~1e-5

# %% [markdown]
# `close` in every row: the same numbers to float32's usual tolerance (the two compute the same
# sums in a different order, so the last bits may differ).
#
# Why the loss `(out**3).sum()` and not simply `out.sum()`? Because with $\gamma = 1$ (a fresh
# LN) every output token sums to $\sum_j \beta_j$ whatever the input (its $\hat{x}$ sums to 0),
# so the gradient of `out.sum()` with respect to the input is 0: a wrong backward would pass
# that check as well as a right one. `(out**2).sum()` is no better: $\sum_j \hat{x}_j^2 =
# n \cdot \mathrm{Var}/(\mathrm{Var} + \epsilon)$ is fixed too, up to `eps`. A cube gives every
# output its own, uneven gradient, which the backward must carry through the mean and the
# variance correctly. On a fresh `nn.LayerNorm(4)`, the largest input gradient of each loss:
#
# ## 8 · Your turn
#
# Three short exercises. Each checker runs your function on a few seeded inputs, easy ones first,
# compares it with PyTorch, and answers ✅, or ❌ with the first case that fails, how far off it
# is (or which shape it expected) and a hint for the usual slips. As shipped, each function has
# a `TODO` and gets ❌: fix it and run the cell again.
#
# **Exercise 1: the biased variance.** Return the biased variance of each token of `x` over its
# last dim, shape `x.shape[:-1]`, by hand: `torch.var` and `torch.std` refuse to run while it is
# checked. One case has tokens around 10000 with a spread of 1: the shortcut
# $\mathrm{E}[x^2] - \mathrm{E}[x]^2$ fails there, in float32. Try it and see why.

# %%
def largest_input_gradient(loss_of):
    x_in = x3.clone().requires_grad_()
    loss_of(nn.LayerNorm(4)(x_in)).backward()  # a fresh LN: gamma = 1, beta = 0
    return x_in.grad.abs().max().item()


grads = {name: largest_input_gradient(fn) for name, fn in
         [("out.sum()", lambda o: o.sum()), ("(out**2).sum()", lambda o: (o**2).sum()),
          ("(out**3).sum()", lambda o: (o**3).sum())]}
assert grads["out.sum()"] < 1e-5 and grads["(out**2).sum()"] < 1e-3 < 1 < grads["(out**3).sum()"]
{name: "< 1e-3" if g < 1e-3 else "> 1" for name, g in grads.items()}

# %%
def my_biased_var(x):
    """The biased variance of each token of x (over the last dim), shape x.shape[:-1]."""
    centred = x - x.mean(dim=-1, keepdim=True)
    return (centred**2).sum(dim=-1) / (x.shape[-1] - 1)  # TODO: is this LayerNorm's variance?


check_biased_variance(my_biased_var)

# %% [markdown]
# <details><summary>Solution</summary>
#
# ```python
# def my_biased_var(x):
#     centred = x - x.mean(dim=-1, keepdim=True)  # centre first: no catastrophic cancellation
#     return (centred**2).mean(dim=-1)  # divide by n
# ```
#
# </details>

# %% [markdown]
# **Exercise 2: how far under 1?** Given tokens' biased variances `var` (a tensor) and `eps`,
# return the variance of LN's output for each token (no $\gamma$, $\beta$).

# %%
def my_output_var(var, eps):
    """The variance of LayerNorm's output for tokens whose biased variance is var."""
    return torch.ones_like(var)  # TODO: LN's output has variance 1... always?


check_output_variance(my_output_var)

# %% [markdown]
# <details><summary>Solution</summary>
#
# ```python
# def my_output_var(var, eps):
#     return var / (var + eps)
# ```
#
# </details>

# %% [markdown]
# **Exercise 3: the whole formula.** LN over the last dim of `x` of shape `(..., dim)`, with
# `gamma` and `beta` of shape `(dim,)` and `eps = 1e-5`: what `F.layer_norm(x, (dim,), gamma,
# beta)` computes. The cases include the lesson's shape `(2, 3, 4)`, a token whose features
# barely differ, one whose features are all equal, and tokens around 10000.

# %%
def my_layer_norm(x, gamma, beta, eps=1e-5):
    """LayerNorm over the last dim of x, then scale by gamma and shift by beta."""
    mean = x.mean(dim=-1, keepdim=True)
    var = x.var(dim=-1, keepdim=True)  # TODO: check this against section 4
    x_hat = (x - mean) / torch.sqrt(var + eps)
    return x_hat  # TODO: gamma and beta


check_layer_norm_last_dim(my_layer_norm)

# %% [markdown]
# <details><summary>Solution</summary>
#
# ```python
# def my_layer_norm(x, gamma, beta, eps=1e-5):
#     mean = x.mean(dim=-1, keepdim=True)
#     var = ((x - mean) ** 2).mean(dim=-1, keepdim=True)  # biased
#     return (x - mean) / torch.sqrt(var + eps) * gamma + beta
# ```
#
# </details>

# %% [markdown]
# ## Summary: each claim, and what backs it
#
# | claim | shown in | reference |
# |---|---|---|
# | Without normalization, the values entering a deep network's hidden layer keep changing while it trains (seed 0: the spread collapses from 0.86 to 0.22 when the first step overshoots, then grows again to 0.40 as the network learns; over the 17 seeds that did not diverge it changes by 0.15 to 0.92 after step 20; 3 of 20 seeds diverge). | section 1: `drift_runs`, the figure (loss included), the asserts; the 20 stored seeds (`runner.load("drift")`) | the lesson; Ioffe & Szegedy 2015 ("internal covariate shift") |
# | That this drift is *why* normalization speeds up training is contested. | (not tested here: notebook 05) | Santurkar et al. 2018 |
# | With LN before the activation, every token enters it with mean 0 and std 1, up to what $\gamma$ and $\beta$ have learned (within 0.011 and 0.026 at seed 0, 0.03 and 0.14 over 20 seeds); what enters the activation drifts 92% less in its spread than without LN (95% CI 89% to 95%), but the shape of the distribution can still change (percentiles: 59% less, CI 46% to 70%). The Linear output before LN keeps changing too, less than without LN (spread: 38% less, CI 16% to 54%): LN standardises what the activation sees, it does not freeze the layer. | section 1: the three recorded places, `largest percentile drift`, the paired intervals over the 20 stored seeds | Ba et al. 2016 |
# | LN's output has a median near −0.2 while every token's mean is within 0.01 of 0: each token's values are skewed to the right, and standardising keeps their shape. | section 1: `token_median`, `token_skew` | |
# | BN standardises each feature over the batch, LN each sample over its own features; BN's output for a sample changes when another sample changes, LN's does not; BN keeps `running_mean`/`running_var` buffers and differs between `train()` and `eval()`, LN keeps none and does not. | section 2: `both_ways`, `batch_dependence`, `state_and_modes` | the lesson; Ba et al. 2016, section 1 |
# | $y = (x - \mathrm{E}[x]) / \sqrt{\mathrm{Var}[x] + \epsilon} \cdot \gamma + \beta$, per token, with $\epsilon = 10^{-5}$; the hand computation equals `nn.LayerNorm`. | section 3: the step-by-step cell, `compare` | the lesson; PyTorch `nn.LayerNorm` docs |
# | After LN each token has mean 0 and variance $\mathrm{Var}/(\mathrm{Var} + \epsilon)$: a hair under 1, and far under 1 when the variance is near `eps` (1/6 for token 2). | section 3: `group_stats` before and after, the variance table; the eps widget's check | |
# | LN uses the biased variance (divide by n); the unbiased one is $n/(n-1) = 4/3$ larger on 4 features, and LN computed with it does not match PyTorch. | section 4: the variance table, `compare` | PyTorch docs ("biased estimator"); Ba et al. 2016 |
# | Without `eps`, a token whose features are all equal gives $0/0$ = `nan`; with it, 0. | section 5: the printed outputs | the lesson |
# | $\gamma$ and $\beta$ are parameters (`weight`, `bias`) of shape `normalized_shape`, starting at 1 and 0; LN keeps no running statistics. | section 6: `named_parameters`, `buffers` | PyTorch docs; the lesson |
# | Backpropagation moves $\gamma$ and $\beta$: they learn to undo the normalization when the target is the un-normalised input ($\gamma \to 3$, $\beta \to 2$). | section 6: `fit_gamma_beta`, the figure, the asserts | Ioffe & Szegedy 2015, section 3 (for BatchNorm) |
# | $\gamma$ rescales and $\beta$ shifts the standardised output: its mean is $\beta$ and its std $|\gamma|$. | section 6: the sliders and their check | |
# | `helpers.layer_norm` and `helpers.LayerNorm` match PyTorch's outputs and gradients. | section 7 | `tests/` of this set |
#
# Next: notebook 02 (`02_token_vs_sentence`) normalizes per token and per sentence and
# reproduces the lesson's printed numbers digit for digit.
#
# ## References
#
# - J. L. Ba, J. R. Kiros, G. E. Hinton, *Layer Normalization*, 2016,
#   [arXiv:1607.06450](https://arxiv.org/abs/1607.06450): LN's definition, with statistics over
#   the hidden units of one layer and one training case, $\sigma$ divided by $H$.
# - PyTorch, [`torch.nn.LayerNorm`](https://docs.pytorch.org/docs/stable/generated/torch.nn.LayerNorm.html):
#   the formula, `eps=1e-5`, "the variance is calculated via the biased estimator, equivalent to
#   `torch.var(input, unbiased=False)`", `weight` and `bias` of shape `normalized_shape`
#   initialised to 1 and 0.
# - S. Ioffe, C. Szegedy, *Batch Normalization: Accelerating Deep Network Training by Reducing
#   Internal Covariate Shift*, 2015, [arXiv:1502.03167](https://arxiv.org/abs/1502.03167): the
#   covariate-shift explanation, and (section 3) why $\gamma$ and $\beta$ let the layer
#   represent the identity.
# - S. Santurkar, D. Tsipras, A. Ilyas, A. Madry, *How Does Batch Normalization Help
#   Optimization?*, NeurIPS 2018, [arXiv:1805.11604](https://arxiv.org/abs/1805.11604): the
#   covariate-shift explanation contested; a smoother loss landscape proposed instead.
# - K. He, X. Zhang, S. Ren, J. Sun, *Delving Deep into Rectifiers*, 2015,
#   [arXiv:1502.01852](https://arxiv.org/abs/1502.01852): the initialisation (std
#   $\sqrt{2 / \text{fan\_in}}$) of the networks in section 1.
# - The lesson this set grows from, in Chinese (its terms are in notebook 00's glossary).
