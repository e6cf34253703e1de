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
# # 00 · What LayerNorm computes
#
# **What you will learn**
#
# - why deep networks need a normalization layer, in plain words;
# - BatchNorm (BN) and LayerNorm (LN) as the same few lines of code over another dim;
# - LN's formula, written by hand and checked against `helpers.layer_norm` and `nn.LayerNorm`;
# - that every token leaves LN with mean 0 and variance 1, before `gamma` and `beta` rescale
#   and shift it.
#
# This is the first of four notebooks that teach a short lesson on LN, written in Chinese (its
# terms are in the glossary at the end). The cell above makes `helpers`, this set's small
# package, importable. Run the cells from the top (JupyterLab: *Run → Run All Cells*; Colab:
# *Runtime → Run all*).

# %%
import matplotlib.pyplot as plt
import torch
import torch.nn.functional as F
from IPython.display import display
from torch import nn

from helpers.checks import check_output_variance
from helpers.widgets.deep_stack import deep_stack_demo, deep_stack_state

# %% [markdown] lesson_point=1
# ## 1 · Why deep networks need it
#
# A layer's input is the previous layer's output. While a network trains, every weight changes,
# so what each layer receives keeps changing, and in a deep RNN or Transformer the changes add
# up from layer to layer: training slows down, or fails to converge. LN standardises each
# layer's output, so that the next layer receives values on the same scale whatever the
# weights before it did. Whether this speeds up training is checked against stored experiments
# in the closing card of notebook 03.

# %% [markdown] lesson_point=2
# ## 2 · BN vs LN: the same code, another dim
#
# Both subtract a mean and divide by a standard deviation. They differ in which numbers share
# one mean: **BN** takes each *feature* over the batch (a column), **LN** takes each *sample*
# over its own features (a row). The lesson promises an example with two samples; here it is,
# 2 samples × 3 features:

# %%
x = torch.tensor([[1.0, 2.0, 300.0],  # sample 0
                  [3.0, 4.0, 100.0]])  # sample 1


def standardize(x, dim):
    mean = x.mean(dim=dim, keepdim=True)
    var = ((x - mean) ** 2).mean(dim=dim, keepdim=True)  # divide by n
    return (x - mean) / torch.sqrt(var + 1e-5)


print("BN, each column:\n", standardize(x, dim=0))
print("LN, each row:\n", standardize(x, dim=-1))

# %% [markdown]
# With two samples, BN turns every column into −1 and +1: only *which sample is larger* survives.
# LN keeps each sample's own pattern (the large third feature stands out in both rows). And BN's
# output for sample 0 depends on sample 1; LN's does not:

# %%
other = x.clone()
other[1] = torch.tensor([0.0, 50.0, 7.0])  # replace sample 1 only
print("BN, sample 0's output changed:", not torch.equal(standardize(other, 0)[0], standardize(x, 0)[0]))
print("LN, sample 0's output changed:", not torch.equal(standardize(other, -1)[0], standardize(x, -1)[0]))
assert torch.allclose(standardize(x, 0), F.batch_norm(x, None, None, training=True), atol=1e-4)
assert torch.allclose(standardize(x, -1), F.layer_norm(x, (3,)), atol=1e-4)

# %% [markdown]
# The two `assert`s check both against PyTorch's own BN and LN. Since LN needs nothing but the
# sample in front of it, it works at any batch size, one included, and the same in training and
# at test time: why Ba, Kiros and Hinton (2016) proposed it for RNNs. BN at small batches is
# deep dive [11](11_batchnorm_in_depth.ipynb).

# %% [markdown] lesson_point=3
# ## 3 · The formula
#
# $$y = \frac{x - \mathrm{E}[x]}{\sqrt{\mathrm{Var}[x] + \epsilon}} \cdot \gamma + \beta$$
#
# - $x$: the input; here one token's `dim` features.
# - $\mathrm{E}[x]$, $\mathrm{Var}[x]$: the token's mean and **biased** variance: divide by `dim`,
#   not `dim - 1`, since LN standardises exactly the numbers it has (`unbiased=False` in the
#   lesson's code).
# - $\epsilon = 10^{-5}$, **inside** the square root: a token whose features are all equal gives
#   0 instead of 0 / 0.
# - $\gamma$ (scale) and $\beta$ (shift): one number per feature, learned by backpropagation like
#   any weight, starting at 1 and 0.
#
# On a batch of the lesson's shape `(batch, seq_len, dim) = (2, 3, 4)`: 2 sentences of 3 tokens,
# each token 4 features.

# %%
torch.manual_seed(0)
x = torch.randn(2, 3, 4) * 3 + 5  # 2 sentences x 3 tokens x 4 features
gamma, beta = torch.ones(4), torch.zeros(4)  # what nn.LayerNorm(4) starts with
eps = 1e-5

mean = x.mean(dim=-1, keepdim=True)  # E[x]: one per token
var = ((x - mean) ** 2).mean(dim=-1, keepdim=True)  # Var[x], biased
y = (x - mean) / torch.sqrt(var + eps) * gamma + beta
print("input", tuple(x.shape), "-> mean", tuple(mean.shape), "-> output", tuple(y.shape))

# %% [markdown]
# `keepdim=True` keeps one mean per token as a column, which lines up with its own token when
# subtracted. The same with PyTorch's module, whose parameters `weight` and `bias` are
# $\gamma$ and $\beta$, and with the set's own `helpers.layer_norm`:

# %%
ln = nn.LayerNorm(4)
print("parameters:", [name for name, _ in ln.named_parameters()], "| learned:", ln.weight.requires_grad)
print("same as nn.LayerNorm:", torch.allclose(y, ln(x), atol=1e-5))
print("same as helpers.layer_norm:", torch.allclose(y, helpers.layer_norm(x, (4,), gamma, beta), atol=1e-5))

# %% [markdown] lesson_point=4
# ## 4 · Mean 0 and variance 1, then gamma and beta
#
# After LN, every token has mean 0 and variance 1, to 4 decimals (`abs` only hides the sign of
# a −0.0):

# %%
print("mean of each token:\n", y.mean(dim=-1).abs().round(decimals=4))
print("variance of each token:\n", y.var(dim=-1, unbiased=False).round(decimals=4))

# %% [markdown]
# Then $\gamma$ rescales and $\beta$ shifts. With every $\gamma$ at 2 and every $\beta$ at 0.5,
# each token comes out with mean 0.5 and standard deviation 2. Training sets them feature by
# feature, so the network itself chooses the scale and shift each feature should have:

# %%
gamma, beta = torch.full((4,), 2.0), torch.full((4,), 0.5)
y2 = (x - mean) / torch.sqrt(var + eps) * gamma + beta
print("token 0: mean", round(y2[0, 0].mean().item(), 4), "std", round(y2[0, 0].std(correction=0).item(), 4))

# %% [markdown]
# ### See it: a deep stack, with and without LN
#
# Eight layers `Linear(64 → 64) → tanh`, and the same eight with LN before each tanh. The
# histograms show what enters each layer's tanh (dark: layer 1, light: layer 8). The first slider
# scales all weights, as training might; the other two set LN's $\gamma$ and $\beta$. Without
# LN the values shrink or spread with depth; with LN every layer sees the same distribution,
# set by $\gamma$ and $\beta$ alone. (A slider redraws when you let go of it; the widget is live
# only while the kernel runs, and a still copy sits under it.)

# %%
# NBVAL_IGNORE_OUTPUT
# displays a widget: three sliders and their live figure
demo = deep_stack_demo()
display(demo)

# %% [markdown]
# For a reader without a kernel, the weights scaled by 0.5, $\gamma = 2$, $\beta = 0.5$: without
# LN, layer 8's values have all but vanished; with LN every layer is centred at 0.5 with
# spread 2.

# %%
demo.snapshot(gain=0.5, gamma=2.0, beta=0.5)
plt.show()

# %% [markdown]
# **Check it** with the function behind the widget, at weights scaled by 0.5:

# %%
state = deep_stack_state(gain=0.5, gamma=2.0, beta=0.5)
assert state["no norm"][-1].std() < 0.01  # without LN, layer 8 has all but vanished
for z in state["LayerNorm"]:  # with LN, every layer's tokens: mean beta, std gamma
    assert torch.allclose(z.mean(dim=-1), torch.tensor(0.5), atol=1e-4)
    assert torch.allclose(z.std(dim=-1, correction=0), torch.tensor(2.0), atol=1e-3)

# %% [markdown]
# ## Your turn: how far under 1?
#
# The variances above are 1 to 4 decimals, but not exactly 1. Write `my_output_var(var, eps)`:
# for tokens whose biased variance is `var` (a tensor), the variance of LN's output, without
# $\gamma$ and $\beta$. Look at what LN divides by. The checker tries the lesson's variances,
# variances near `eps`, and a token whose features are all equal; as shipped, the function gets ❌.

# %%
def my_output_var(var, eps):
    """The variance of LayerNorm's output for tokens whose biased variance is var."""
    return torch.ones_like(var)  # TODO: exactly 1, always?


check_output_variance(my_output_var)

# %% [markdown]
# <details><summary>Solution</summary>
#
# LN divides every centred value by $\sqrt{\mathrm{Var} + \epsilon}$, so the variance is divided
# by $\mathrm{Var} + \epsilon$:
#
# ```python
# def my_output_var(var, eps):
#     return var / (var + eps)
# ```
#
# A hair under 1 when the variance is large next to `eps`; far under 1 when it is not.
#
# </details>
#
# ## Glossary: the lesson's terms
#
# | English | 中文 |
# |---|---|
# | Layer Normalization, LN | 层归一化 |
# | Batch Normalization, BN | 批量归一化 |
# | batch, sample, feature | 批次, 样本, 特征 |
# | mean, variance | 均值, 方差 |
# | to standardise | 标准化 |
# | learnable parameter (γ, β) | 可学习参数 |
# | scale, shift | 缩放, 平移 |
# | backpropagation | 反向传播 |
# | input distribution | 输入分布 |
# | convergence | 收敛 |
#
# ## Summary
#
# - BN and LN are the same lines of code: BN standardises each feature over the batch (dim 0),
#   LN each sample over its own features (the last dim), so LN never looks at other samples.
# - LN: the mean, the biased variance, $\epsilon$ inside the root, then $\gamma$ and $\beta$;
#   a few lines by hand equal `nn.LayerNorm` and `helpers.layer_norm`.
# - After LN each token has mean 0 and variance 1 (just under: $\mathrm{Var}/(\mathrm{Var}+\epsilon)$);
#   $\gamma$ and $\beta$ then set the scale and shift the network learns.
#
# Next: [01 · Before the activation](01_before_the_activation.ipynb), then
# [02 · Per token or per sentence](02_per_token_or_per_sentence.ipynb) and
# [03 · LayerNorm in a Transformer](03_layernorm_in_a_transformer.ipynb). After them, the deep
# dives each answer one question with evidence:
# [10 · how a claim is tested](10_how_a_claim_is_tested.ipynb),
# [11 · BatchNorm in depth](11_batchnorm_in_depth.ipynb),
# [12 · where the norm goes](12_where_the_norm_goes.ipynb),
# [13 · does it speed up training?](13_does_it_speed_up_training.ipynb),
# [14 · backward, numerics, speed](14_backward_numerics_speed.ipynb),
# [15 · the normalization family](15_the_normalization_family.ipynb),
# [16 · sequences, padding and masks](16_sequences_padding_and_masks.ipynb).
#
# ## References
#
# - J. L. Ba, J. R. Kiros, G. E. Hinton, *Layer Normalization*, 2016,
#   [arXiv:1607.06450](https://arxiv.org/abs/1607.06450).
# - S. Ioffe, C. Szegedy, *Batch Normalization*, 2015, [arXiv:1502.03167](https://arxiv.org/abs/1502.03167).
# - PyTorch, [`torch.nn.LayerNorm`](https://docs.pytorch.org/docs/stable/generated/torch.nn.LayerNorm.html).
