# ---
# jupyter:
#   jupytext:
#     cell_metadata_filter: lesson_point,-all
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
# # 00 · What LayerNorm computes
#
# **What you will learn.** Why deep networks need normalizing. BatchNorm (BN) and LayerNorm (LN)
# as one code over different axes. LN's formula, which you write yourself. Then `gamma` and
# `beta`. [Open in Colab](https://colab.research.google.com/github/layernorm-hands-on/layernorm-hands-on/blob/main/notebooks/00_what_layernorm_computes.ipynb)
#
# The first of three notebooks on a short Chinese lesson about LN, quoted where it is cited.
# Sections 1 to 8, in notebooks 00 and 01, follow its eight points. Sections 9 to 11, in notebook
# 02, take LN into a Transformer.

# %%
import matplotlib.pyplot as plt
import torch
from torch import nn

from helpers.exercises.layer_norm import check_layer_norm_last_dim
from helpers.widgets.deep_stack import deep_stack_demo

# %% [markdown] lesson_point=1
# ## 1 · The lesson: deep networks need it
#
# The lesson starts from deep sequence models. An *RNN* (recurrent network) reads a sentence one
# token (word) at a time, carrying a state from step to step. A *Transformer* reads all the tokens
# at once, in a stack of blocks. In such models, the lesson says,
# "随着训练推进，各层的输入分布不断变化，训练会变慢，甚至无法收敛" (as training goes on, each layer's
# input distribution keeps changing, and training slows down or even fails to converge).
#
# LN *standardises* the values passing through it. It subtracts their mean and divides by their
# standard deviation, so what follows gets values on one scale.
#
# The card of results at the end of notebook 02 tests the claim on small models. LN cut an LSTM's
# steps by about 45%, and on a copy task a small Transformer with Pre-LN trained at a rate where it
# failed with no norm. For a small RNN's steps, for Pre-LN's steps against no norm, and for the
# lesson's reason (how far each unit's activation input moves), the runs cannot tell (deep dive
# [13](13_does_it_speed_up_training.ipynb)).

# %% [markdown] lesson_point=2
# ## 2 · BN vs LN: the same code over a different axis
#
# Think of a batch as a table, one row per *sample* (one input) and one column per *feature* (one
# number that describes it). *Spread* below means standard deviation.
# **BN** standardises each feature over the batch (a column). **LN** standardises each sample
# over its own features (a row). The lesson announces an example, "假设我们有以下两个样本组成一个批次"
# (suppose a batch made of the following two samples), and never shows it. Here it is.

# %%
x = torch.tensor([[1.0, 2.0, 3.0],  # sample 0
                  [30.0, 10.0, 20.0]])  # sample 1


def standardize(x, axis):
    mean = x.mean(dim=axis, keepdim=True)  # torch calls an axis `dim`
    var = ((x - mean) ** 2).mean(dim=axis, keepdim=True)  # biased: divides by n, the count of values
    return (x - mean) / torch.sqrt(var + 1e-5)  # 1e-5 and keepdim: see "The formula" below


print("BN, each column:\n", standardize(x, axis=0))
print("LN, each row:\n", standardize(x, axis=-1))

# %% [markdown]
# With a batch of two, BN turns each column into −1 and +1 (each value is one spread from the
# pair's mean), so only *which sample is larger* survives.
#
# LN keeps each sample's order of features, but loses the sample's mean and scale. `[1, 2, 3]` and
# `[30, 10, 20]` both become −1.22, 0 and 1.22, each in its own order. Their means, 2 and 20, one
# ten times the other, are gone, and $\gamma$ and $\beta$ cannot bring them back, since they are the same
# for every sample.
#
# And BN's output for sample 0 depends on sample 1:

# %%
other = x.clone()
other[1] = torch.tensor([0.0, 50.0, 7.0])  # replace sample 1 only
print("BN, sample 0's output changed:", not torch.equal(standardize(other, 0)[0], standardize(x, 0)[0]))
print("LN, sample 0's output changed:", not torch.equal(standardize(other, -1)[0], standardize(x, -1)[0]))
# PyTorch's BN and LN agree. affine=False: no learned gamma and beta (below)
assert torch.allclose(standardize(x, 0), nn.BatchNorm1d(3, affine=False)(x), atol=1e-4)
assert torch.allclose(standardize(x, -1), nn.LayerNorm(3, elementwise_affine=False)(x), atol=1e-4)

# %% [markdown]
# LN needs only the sample in front of it. It works at any batch size, and it computes the same in
# training and at test time. Ba, Kiros and Hinton (2016) made LN for both reasons, and for RNNs. An
# RNN takes one step per token, and BN would need separate statistics for every step.
#
# BN is usually still the first choice in convolutional networks for images trained with large
# batches, such as ResNets. There a feature is a *channel*, and each BN statistic pools one channel
# over every pixel of every image, thousands of values, so it is stable. Deep dive
# [11](11_batchnorm_in_depth.ipynb) covers BN at test time and its ImageNet results.

# %% [markdown] lesson_point=3
# ## 3 · The formula
#
# $$y = \frac{x - \mathrm{E}[x]}{\sqrt{\mathrm{Var}[x] + \epsilon}} \cdot \gamma + \beta$$
#
# A *token* is one word (or word piece) of a sentence, stored as a vector of numbers, its
# *features*. Their count is the model's *width*, `d_model` in code. LN treats each token as the
# section above treats a sample. $\mathrm{E}[x]$ and $\mathrm{Var}[x]$ are the mean and the
# **biased** variance of its features. Biased means dividing by `d_model`, not `d_model - 1`
# (`unbiased=False`). $\epsilon = 10^{-5}$ sits **inside** the root, "用于避免除以零的情况"
# (to avoid dividing by zero). When all features are equal, standardising gives 0, not 0 / 0, and
# after the scale $\gamma$ and the shift $\beta$ the output is the shift. The two, one per feature,
# are learned by backpropagation, starting at 1 and 0.
#
# In code, `x.mean(dim=-1, keepdim=True)` averages over the last axis and keeps that axis with
# size 1. On a batch of shape `(batch, seq_len, d_model)` the mean then has shape `(batch, seq_len, 1)`.
# In `x - mean`, PyTorch *broadcasts* that axis of size 1 across the features, so each token's own
# mean is subtracted from each of its features.

# %% [markdown]
# ### Your turn: write it
#
# Write `my_layer_norm(x, gamma, beta, eps=1e-5)`: LN over the last axis of `x`, with `gamma` and
# `beta` of shape `(d_model,)`. The function `standardize` in the section above is most of it. The
# checker tries seven inputs and says what is still missing. The last one passes `eps=0.1`, so use
# the argument `eps`, not the number 1e-5.

# %%
def my_layer_norm(x, gamma, beta, eps=1e-5):
    return torch.zeros_like(x)  # TODO: the formula above


check_layer_norm_last_dim(my_layer_norm)

# %% [markdown]
# <details><summary>Solution</summary>
#
# ```python
# def my_layer_norm(x, gamma, beta, eps=1e-5):
#     mean = x.mean(dim=-1, keepdim=True)  # E[x]: one per token
#     var = ((x - mean) ** 2).mean(dim=-1, keepdim=True)  # Var[x], biased: divide by d_model
#     return (x - mean) / torch.sqrt(var + eps) * gamma + beta
# ```
#
# </details>

# %% [markdown]
# ### LayerNorm as a module
#
# In a model, LN is a module. It holds $\gamma$ and $\beta$ as `nn.Parameter`s, tensors that
# the optimiser updates. Its `forward` is the function you just wrote. PyTorch calls $\gamma$ `weight` and
# $\beta$ `bias`, and so does this module, so that it can load weights saved from `nn.LayerNorm`.

# %%
class LayerNorm(nn.Module):
    """LayerNorm over the last axis, with a learned scale (gamma) and shift (beta) per feature."""

    def __init__(self, d_model, eps=1e-5):
        super().__init__()
        self.eps = eps
        self.weight = nn.Parameter(torch.ones(d_model))  # gamma, starts at 1
        self.bias = nn.Parameter(torch.zeros(d_model))  # beta, starts at 0

    def forward(self, x):
        mean = x.mean(dim=-1, keepdim=True)
        var = x.var(dim=-1, unbiased=False, keepdim=True)  # biased: divide by d_model
        return (x - mean) / torch.sqrt(var + self.eps) * self.weight + self.bias

# %% [markdown]
# Now compare it with `nn.LayerNorm` on the lesson's shape `(batch, seq_len, d_model)`, with random
# $\gamma$ and $\beta$ copied into both. A module's `state_dict` is the dictionary of its saved
# tensors, by name. Both must have the same names, outputs and gradients for `x`, $\gamma$ and
# $\beta$.

# %%
torch.manual_seed(0)
ours, torchs = LayerNorm(4), nn.LayerNorm(4)
with torch.no_grad():  # random gamma and beta, the same in both
    ours.weight.normal_()
    ours.bias.normal_()
torchs.load_state_dict(ours.state_dict())
x = (torch.randn(2, 3, 4) * 3 + 5).requires_grad_()  # (batch, seq_len, d_model)
out1, out2 = ours(x), torchs(x)
upstream = torch.randn(2, 3, 4)  # a gradient arriving from the layers above
grads1 = torch.autograd.grad(out1, [x, ours.weight, ours.bias], upstream)
grads2 = torch.autograd.grad(out2, [x, torchs.weight, torchs.bias], upstream)
print("state_dict keys:", list(ours.state_dict()), list(torchs.state_dict()))
print("same outputs:", torch.allclose(out1, out2, atol=1e-5), "| same gradients for x, gamma and beta:",
      all(torch.allclose(a, b, atol=1e-4) for a, b in zip(grads1, grads2, strict=True)))

# %% [markdown] lesson_point=4
# ## 4 · Mean 0 and variance 1, then gamma and beta
#
# LN's output has mean 0 and variance 1 only after standardising, before $\gamma$ scales it and
# $\beta$ shifts it. (Exactly, the variance is $\mathrm{Var}[x] / (\mathrm{Var}[x] + \epsilon)$.) So the lesson's "经过 LN 后，每个 Token 的分布被调整为均值为 0、方差为 1" (after LN,
# each token has mean 0 and variance 1) holds while the two are at their start. A fresh
# `LayerNorm(4)` starts with $\gamma = 1$ and $\beta = 0$, and its output shows it in every token,
# to 4 decimals.

# %%
ln = LayerNorm(4)
y = ln(x).detach()  # detach: only the values, no gradient
print("mean of each token:\n", y.mean(dim=-1).abs().round(decimals=4))
print("variance of each token:\n", y.var(dim=-1, unbiased=False).round(decimals=4))

# %% [markdown]
# Why standardise first, then scale? Standardising frees the next layer from the scale of the
# weights before it. Then $\gamma$ and $\beta$, learned per feature, give each feature the scale and
# centre the next layer needs, such as how far into tanh's curve it goes. When every feature has
# the same $\gamma$ and $\beta$, each token's mean becomes $\beta$ and its spread $|\gamma|$.
# After training, each feature has its own, and this no longer holds.

# %% [markdown]
# ### See it: a deep stack, with and without LN
#
# Eight layers `Linear → tanh`, without LN and with LN before each tanh. Each curve is what enters
# one layer's tanh, coloured by layer (the bar on the right). The y-axis, "fraction of values", is
# the share of that layer's values in each bin of the x-axis. One slider scales the weights, as
# training might, and two set $\gamma$ and $\beta$ for every feature. The input is 512 tokens of
# width 64, drawn from a standard normal.
#
# The weight scale changes the panel without LN, not the one with LN, because LN divides out any
# scale of its input. There only $\gamma$ and $\beta$ move the values.

# %%
# NBVAL_IGNORE_OUTPUT
# displays a widget: three sliders and their live figure
demo = deep_stack_demo()
demo

# %% [markdown]
# Weights scaled by 0.5, $\gamma = 2$, $\beta = 0.5$. Without LN, each layer about halves the spread
# it passes on. By layer 8 the values, half positive and half negative, all fall into the two bins
# beside 0, so the later layers peak at about 0.5. With LN, each
# layer's values, pooled, are centred at 0.5 with spread 2, whatever the weights. The red note counts
# values off the axis, beyond ±5. Layer 3 has 1.5%, rounded to 2%, and every layer about as much. A $\gamma$ this
# large puts about 31% of each layer's values on tanh's flat tails, which notebook 01 explains.
#
# Mind the y-axes. Each panel fits its own. The right one peaks at about 0.025, twenty times lower
# than the left, because its values spread widely.

# %%
demo.snapshot(gain=0.5, gamma=2.0, beta=0.5)
plt.show()

# %% [markdown]
# ## Glossary: the lesson's terms
#
# | English | 中文 |
# |---|---|
# | Layer / Batch Normalization | 层归一化 / 批量归一化 |
# | mean, variance | 均值, 方差 |
# | learnable parameter; scale, shift | 可学习参数; 缩放, 平移 |
# | activation function, non-linearity | 激活函数, 非线性 |
# | per token, per sentence | 以 token 为单位, 以句子为单位 |

# %% [markdown]
# ## Summary
#
# - BN and LN are the same code over a different axis. LN standardises each sample on its own,
#   and loses its mean and scale. BN is usually still the first choice in CNNs trained with large batches.
# - LN is a mean, a biased variance and $\epsilon$ inside the root. Then $\gamma$ rescales and
#   $\beta$ shifts, one of each per feature.
#
# Next: [01](01_before_the_activation_per_token.ipynb), then [02](02_layernorm_in_a_transformer.ipynb).
# Then the deep dives: [10](10_how_a_claim_is_tested.ipynb) testing a claim,
# [11](11_batchnorm_in_depth.ipynb) BN, [12](12_where_the_norm_goes.ipynb) where the norm goes,
# [13](13_does_it_speed_up_training.ipynb) training speed, [14](14_backward_numerics_speed.ipynb)
# backward and numerics, [15](15_the_normalization_family.ipynb) the family,
# [16](16_sequences_padding_and_masks.ipynb) sequences and masks,
# [17](17_layernorm_in_your_training_code.ipynb) your training code.

# %% [markdown]
# ## References
#
# - J. L. Ba, J. R. Kiros, G. E. Hinton, *Layer Normalization*, 2016,
#   [arXiv:1607.06450](https://arxiv.org/abs/1607.06450).
