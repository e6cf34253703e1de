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
import pathlib
import subprocess
import sys

REPO_URL = "https://github.com/layernorm-hands-on/layernorm-hands-on"
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
# # 05 · Does LayerNorm really speed up training?
#
# The lesson opens with its headline claim: deep RNNs and Transformers train slowly or fail to
# converge because each layer's input distribution keeps changing during training (输入分布不断变化),
# and LN, by standardising each layer's summed inputs, *speeds up training and improves
# convergence* (加速训练, 提高收敛性). The usual explanation, **internal covariate shift** (内部协变量偏移,
# Ioffe and Szegedy 2015), is contested (Santurkar et al. 2018). Here we measure instead of repeating it.
#
# **In this notebook you will**
#
# 1. train tiny recurrent networks with and without LN on the hidden state (Ba et al. 2016's
#    LN-RNN) on the *adding problem*, 3 seeds each, all at once as one stacked network;
# 2. read loss curves with their spread and a steps-to-threshold table, for the RNN and for a
#    small Transformer;
# 3. sweep the learning rate with and without LN;
# 4. measure "internal covariate shift": how the hidden layer's input moves during training;
# 5. inject noise after LN on purpose (Santurkar et al.'s experiment) and see what happens;
# 6. explore every run in a widget, write two small pieces with instant feedback, and end with
#    what these numbers do and do not support.

# %%
import matplotlib.pyplot as plt
import torch

from helpers import plots
from helpers import training_speed as ts
from helpers.training_speed import check_first_step_below, check_noisy_layer_norm
from helpers.widgets import speed_demo, speed_state

torch.set_num_threads(1)  # fixed: the training run below then stores the same digits every time

# %% [markdown]
# ## 1 · The task: the adding problem
#
# Each input is a sequence of 10 steps with two channels: a value uniform in [0, 1) and a marker
# that is 1 at exactly two positions (one in each half). The target is the sum of the two marked
# values (Hochreiter and Schmidhuber 1997). The network must spot the first marked value and keep
# it in its hidden state until the second. Always predicting the average answer, 1.0, scores a
# mean squared error of Var(u1 + u2) = 2/12 ≈ 0.167: that is the "learned nothing" level.

# %%
x, y = ts.adding_task(3, 10, torch.Generator().manual_seed(0))
print("values: ", x[0, :, 0].round(decimals=2))
print("markers:", x[0, :, 1])
print("targets:", y.round(decimals=3))
assert torch.allclose(y, (x[..., 0] * x[..., 1]).sum(1))

# %% [markdown]
# ## 2 · The models: an RNN with and without LN on its hidden state
#
# A vanilla tanh RNN with 16 hidden units computes $h_t = \tanh(a_t + b)$ with summed inputs
# $a_t = W_x x_t + W_h h_{t-1}$. Ba, Kiros and Hinton (2016, section 3.1) normalize $a_t$ at every
# time step over the hidden units, with a learned gain $g$:
#
# $$h_t = \tanh\big(g \odot \mathrm{LN}(a_t) + b\big).$$
#
# `ts.StackedRNN` stacks many such networks into one: one per (variant, learning rate, seed). All
# models of a seed start from the **same weights** and see the **same minibatches**, so they differ
# only by the variant and the learning rate. The loss is a sum over models whose weights never
# meet, so each model's gradient is its own: one backward pass trains all 36 of them. The third
# variant, **noisy LayerNorm**, is explained in section 6. Every model is trained with Adam
# (written out in `rnn_runs` so each model can have its own rate), batch 32, 300 steps.

# %% [markdown]
# ## 3 · Train every run once
#
# The cell below trains 3 variants × 4 learning rates × 3 seeds = 36 RNNs in one loop.

# %%
# NBVAL_IGNORE_OUTPUT
# (a tqdm progress bar: its text changes from run to run; the results are printed in the next cell)
runs = ts.rnn_runs(seeds=(0, 1, 2), lrs=ts.LRS, steps=300, progress=True)

# %%
print(runs.shape, "rows:", runs.groupby(["variant", "lr", "seed"]).ngroups, "runs x", runs["step"].nunique(), "steps")
runs.head(3).round(4)

# %%
assert runs.groupby(["variant", "lr", "seed"]).ngroups == 3 * 4 * 3
assert (runs.groupby(["variant", "lr", "seed"]).size() == 300).all()
first = runs[runs["step"] == 0]
print("loss at step 0, per variant (lr 0.01):")
print(first[first["lr"] == 0.01].groupby("variant")["loss"].mean().round(3).to_string())

# %% [markdown]
# ## 4 · Loss curves and steps to threshold
#
# At learning rate 0.01 (the best rate for both), the loss smoothed over the last 20 steps, mean
# over the 3 seeds and the band from the best to the worst seed:

# %%
LR = 0.01
at_lr = runs[(runs["lr"] == LR) & (runs["variant"] != "noisy LayerNorm")]
fig = plots.curves_figure(at_lr.assign(loss=ts.smooth(at_lr)), threshold=ts.THRESHOLD,
                          title=f"RNN, adding problem, lr {LR}")
plt.show()

# %% [markdown]
# "Steps to threshold": the first step at which a run's smoothed loss is below
# `ts.THRESHOLD` = 0.05 (under a third of the 0.167 baseline). Mean, min and max over seeds, and
# how many of the 3 seeds got there within 300 steps:

# %%
reached = ts.steps_to_threshold(runs)
speed = reached.pivot_table(index="lr", columns="variant", values="steps",
                            aggfunc=["mean", "min", "max", "count"])[["mean", "min", "max", "count"]]
speed = speed.reindex(columns=["no norm", "LayerNorm", "noisy LayerNorm"], level=1)
speed.round(1)

# %%
at = reached[reached["lr"] == LR].groupby("variant")["steps"]
no_norm, with_ln = at.mean()["no norm"], at.mean()["LayerNorm"]
print(f"lr {LR}: no norm reaches {ts.THRESHOLD} in {no_norm:.0f} steps (seeds {at.min()['no norm']:.0f}"
      f" to {at.max()['no norm']:.0f}); LayerNorm in {with_ln:.0f} (seeds reaching it: {at.count()['LayerNorm']} of 3)")
print(f"speed-up from LN (no-norm steps / LN steps): {no_norm / with_ln:.2f}x")
assert at.count()["no norm"] == 3  # every no-norm seed gets there
assert no_norm < with_ln  # here, LN is SLOWER, not faster

# %% [markdown]
# On this task and at these rates **LN did not speed up training**: the no-norm RNN reaches the
# threshold first at every rate where either does, and all its seeds get there, while one LN seed
# does not within 300 steps. That is one small task, not a verdict on LN in general, but it is
# already enough to show that "LN speeds up training" is not a law.

# %% [markdown]
# ### The same question for a small Transformer
#
# `ts.StackedTransformer`: one pre-LN block (LN before attention, before the MLP and before the
# read-out, as in GPT-2), 16 units, one head, learned positions, on the same task, against the same
# network with every LN removed. 3 seeds each, Adam at 0.01, 150 steps, stacked as before.

# %%
# NBVAL_IGNORE_OUTPUT
# (a tqdm progress bar: its text changes from run to run; the results are printed in the next cell)
tf_runs = ts.transformer_runs(seeds=(0, 1, 2), lr=0.01, steps=150, progress=True)

# %%
fig = plots.curves_figure(tf_runs.assign(loss=ts.smooth(tf_runs)), threshold=ts.THRESHOLD,
                          title="one-block Transformer, adding problem, lr 0.01")
plt.show()
tf_reached = ts.steps_to_threshold(tf_runs).groupby("variant", sort=False)["steps"]
tf_reached.agg(["mean", "min", "max", "count"]).round(1)

# %%
tf_mean = tf_reached.mean()
print(f"speed-up from LN (no-norm steps / LN steps): {tf_mean['no norm'] / tf_mean['LayerNorm']:.2f}x")
assert (tf_reached.count() == 3).all()  # every run gets there
assert tf_mean["no norm"] < tf_mean["LayerNorm"]

# %% [markdown]
# The Transformer learns the task in about a third of the RNN's steps, with or without LN, and again
# LN does not make it faster: the seeds' ranges overlap, and the no-norm mean is a little lower. A
# one-block Transformer is shallow; the cases where LN is indispensable (deep stacks, large rates,
# long training) are out of reach of a 20-second notebook, and the summary says so.

# %% [markdown]
# ## 5 · Learning-rate robustness
#
# A claim often made for normalization is that it lets larger learning rates train. Final
# smoothed loss (mean over seeds) for each variant and rate:

# %%
table = ts.lr_table(runs)
fig = plots.lr_heatmap_figure(table)
plt.show()
table.round(4)

# %%
best = table.min(axis=1)
print("best final loss per variant:", best.round(4).to_dict())
print(f"at the largest rate, {max(ts.LRS)}: no norm {table.loc['no norm', max(ts.LRS)]:.3f}, "
      f"LayerNorm {table.loc['LayerNorm', max(ts.LRS)]:.3f}")
assert table.loc["LayerNorm", max(ts.LRS)] < table.loc["no norm", max(ts.LRS)]
assert best["no norm"] < best["LayerNorm"]

# %% [markdown]
# The one place LN helps here is the **largest rate**, 0.1: without LN the RNN ends no better than
# the 0.167 baseline, with LN it still learns a little. That matches the robustness claim in
# direction, but at its own best rate the no-norm RNN is better than LN at any rate.

# %% [markdown]
# ## 6 · Internal covariate shift, measured
#
# `rnn_runs` records, at every step, the mean and std of the values entering the hidden `tanh`
# (over the batch, the 10 time steps and the 16 units): the "input distribution" of the layer.
# Without LN it is free to drift as $W_x$ and $W_h$ change; with LN each time step's summed inputs
# have mean 0 and variance 1 before the learned gain and bias.

# %%
at_lr_all = runs[runs["lr"] == LR]
for column in ("pre_mean", "pre_std"):
    fig = plots.curves_figure(at_lr_all, column=column, figsize=(6, 2.6), title=f"lr {LR}: {column}")
    plt.show()

# %%
drift = ts.drift_table(at_lr_all)
drift.round(3)

# %%
assert drift.loc["LayerNorm", "largest |mean shift|"] < drift.loc["no norm", "largest |mean shift|"]
assert drift.loc["LayerNorm", "largest std ratio"] < drift.loc["no norm", "largest std ratio"]

# %% [markdown]
# LN does reduce the drift (its mean moves half as far, its spread grows less), and yet the
# network with **more** drift trained **faster**. Less internal covariate shift did not buy speed.
#
# **Santurkar et al. (2018)** went further: they took BatchNorm and added noise after it, a random
# shift and scale drawn afresh at every training step, so the next layer's input distribution is
# shifted *on purpose*, more than without any norm. On a VGG network, the "noisy BN" trained about as
# well as BN; their explanation for BN's benefit is a smoother loss landscape, not a stabler input
# distribution. Our **noisy LayerNorm** does the same after LN: per unit, a shift uniform in
# [-0.25, 0.25] and a scale uniform in [1, 1.5], new at each training step.

# %%
noisy = drift.loc["noisy LayerNorm"]
print(f"noisy LN: largest std ratio {noisy['largest std ratio']:.2f}, largest |mean shift| "
      f"{noisy['largest |mean shift|']:.3f}")
print("final loss at each rate, noisy LN:", table.loc["noisy LayerNorm"].round(3).to_dict())
assert noisy["largest |mean shift|"] > drift.loc["no norm", "largest |mean shift|"]
assert (table.loc["noisy LayerNorm"] > table.loc["LayerNorm"]).all()

# %% [markdown]
# Here the noise **did** cost: the noisy runs have the largest shift and train worst, and none reach
# the threshold. So this small RNN does not reproduce Santurkar et al.'s result either. Read together:
# the shift we add on purpose hurts; the shift that happens naturally without LN did not. The size of
# the shift alone does not predict the speed.

# %% [markdown]
# ## 7 · See it: every run, one control at a time
#
# Pick a learning rate, which variants to compare, and what to plot (the loss, or the mean or std of
# the `tanh` input). The runs were computed once in section 3; each move only redraws.

# %%
# NBVAL_IGNORE_OUTPUT
# (displays a widget)
speed_demo(runs);

# %% [markdown]
# **Check it** without the widget: `speed_state` is what it draws.

# %%
state = speed_state(runs, 0.1, "no norm vs LayerNorm", "loss")
print(state["table"].round(1))
assert set(state["curves"]["variant"]) == {"no norm", "LayerNorm"}
assert state["table"]["seeds reaching it"].sum() == 0  # at lr 0.1 no run reaches the threshold

# %% [markdown]
# ## Exercises
#
# **1.** Steps to threshold: return the first index at which `losses` (a 1-D tensor) is below
# `threshold`, as a 0-d tensor, or `torch.tensor(-1)` if it never is.

# %%
def first_step_below(losses, threshold):
    return (losses < threshold).sum()  # TODO: this counts the steps below


check_first_step_below(first_step_below)

# %%
def first_step_below(losses, threshold):
    below = torch.nonzero(losses < threshold)
    return below[0, 0] if len(below) else torch.tensor(-1)


verdict = check_first_step_below(first_step_below)
print(verdict)
assert verdict

# %% [markdown]
# **2.** The noisy norm of section 6: LayerNorm over the last dim (biased variance, eps 1e-5, no
# gain or bias), then `* scale + shift` per unit.

# %%
def noisy_layer_norm(a, shift, scale):
    return a * scale + shift  # TODO: normalize first


check_noisy_layer_norm(noisy_layer_norm)

# %%
def noisy_layer_norm(a, shift, scale):
    mean = a.mean(-1, keepdim=True)
    var = ((a - mean) ** 2).mean(-1, keepdim=True)
    return (a - mean) / torch.sqrt(var + 1e-5) * scale + shift


verdict = check_noisy_layer_norm(noisy_layer_norm)
print(verdict)
assert verdict

# %% [markdown]
# ## Summary: each claim, and where it is shown
#
# | claim | shown in |
# |---|---|
# | On the adding problem (10 steps, 16 units, Adam), LN on the hidden state did **not** speed up training: no norm reaches the threshold in fewer steps, with all seeds | *4*: the curves, the steps-to-threshold table and its asserts |
# | A one-block pre-LN Transformer did not train faster with LN either | *4*, the Transformer cells and their asserts |
# | LN helps at the largest learning rate tried (0.1), but no-norm's best rate beats LN's best | *5*: the heatmap, the table and its asserts |
# | LN reduces the drift of the hidden layer's input (mean shift, std growth) | *6*: the two drift plots, `drift_table` and its asserts |
# | Less drift did not mean faster training here | *4* and *6* together |
# | Shifting the input distribution on purpose (noisy LN) hurt here, unlike noisy BN in Santurkar et al. | *6*: the noisy-LN cell and its asserts |
# | Ba et al. 2016 report faster convergence with LN-RNNs on larger tasks and models | cited, not reproduced: Ba et al. 2016, section 6 |
# | Internal covariate shift is a contested explanation; smoother optimization landscapes are one alternative | cited: Santurkar et al. 2018 |
#
# **What this notebook's numbers support:** LN changes training, and it is not a free speed-up.
# On a tiny RNN and a one-block Transformer it gave no speed-up; on the RNN it reduces the input
# drift and tolerates a larger rate, yet the plain network trained faster. "LN speeds up training
# because it removes internal covariate shift" is not what we measured.
# Claims about large RNNs and Transformers rest on the cited papers, not on this notebook.
#
# ## Glossary
#
# | English | 中文 |
# |---|---|
# | Layer Normalization | 层归一化 |
# | internal covariate shift | 内部协变量偏移 |
# | convergence | 收敛 |
# | learning rate | 学习率 |
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
