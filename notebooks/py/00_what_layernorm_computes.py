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
# Make `helpers` (this set's package) importable: installed, from a clone, or in Colab.
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
# **What you will learn**: why deep networks need normalizing; BatchNorm (BN) and LayerNorm (LN)
# as one code over different dimensions; LN's formula by hand; then `gamma` and `beta`. The first of
# three notebooks on a Chinese lesson (glossary at the end). [Open in Colab](https://colab.research.google.com/github/layernorm-hands-on/layernorm-hands-on/blob/main/notebooks/00_what_layernorm_computes.ipynb)

# %%
import matplotlib.pyplot as plt
import torch
from torch import nn

from helpers.exercises.layer_norm import check_layer_norm_last_dim
from helpers.widgets.deep_stack import deep_stack_demo

# %% [markdown] lesson_point=1
# ## 1 · Why deep networks need it
#
# As a network trains, its weights change, so each layer's input keeps changing; in a deep RNN or
# Transformer the changes add up, and training slows or fails, the lesson says. LN *standardises*
# each layer's output (subtracts the mean, divides by the standard deviation): the next layer gets
# values on one scale (the widget in §4). Does that speed training up? Notebook 02's last card.

# %% [markdown] lesson_point=2
# ## 2 · BN vs LN: the same code over a different dimension
#
# **BN** standardises each *feature* over the batch (a column), **LN** each *sample* over its own
# features (a row). The lesson announces a two-sample example without showing one; here it is:

# %%
x = torch.tensor([[1.0, 2.0, 3.0],  # sample 0
                  [30.0, 10.0, 20.0]])  # sample 1


def standardize(x, dim):
    mean = x.mean(dim=dim, keepdim=True)
    var = ((x - mean) ** 2).mean(dim=dim, keepdim=True)  # n: the number of values averaged
    return (x - mean) / torch.sqrt(var + 1e-5)  # 1e-5 and keepdim: §3


print("BN, each column:\n", standardize(x, dim=0))
print("LN, each row:\n", standardize(x, dim=-1))

# %% [markdown]
# With a batch of two, BN turns each column into −1 and +1: each value sits one spread away from
# the pair's mean, so only *which sample is larger* survives.
#
# LN keeps each sample's own order of features, but it loses the sample's scale. `[1, 2, 3]` and
# `[30, 10, 20]` both become −1.22, 0 and 1.22, each in its own order. That sample 1 is ten times
# larger than sample 0 is gone.
#
# And BN's output for sample 0 depends on sample 1:

# %%
other = x.clone()
other[1] = torch.tensor([0.0, 50.0, 7.0])  # replace sample 1 only
print("BN, sample 0's output changed:", not torch.equal(standardize(other, 0)[0], standardize(x, 0)[0]))
print("LN, sample 0's output changed:", not torch.equal(standardize(other, -1)[0], standardize(x, -1)[0]))
assert torch.allclose(standardize(x, 0), nn.BatchNorm1d(3, affine=False)(x), atol=1e-4)  # PyTorch's BN
assert torch.allclose(standardize(x, -1), nn.LayerNorm(3, elementwise_affine=False)(x), atol=1e-4)

# %% [markdown]
# LN needs only the sample in front of it: any batch size, the same in training and at test
# time (01 §7). Hence Ba, Kiros and Hinton (2016) made LN for RNNs, whose batch statistics would
# differ at every time step. BN: deep dive [11](11_batchnorm_in_depth.ipynb).

# %% [markdown] lesson_point=3
# ## 3 · The formula
#
# $$y = \frac{x - \mathrm{E}[x]}{\sqrt{\mathrm{Var}[x] + \epsilon}} \cdot \gamma + \beta$$
#
# A *token* is one word (or word piece) of a sentence, stored as `dim` numbers, its *features*;
# LN treats each token as §2's sample. $\mathrm{E}[x]$ and $\mathrm{Var}[x]$ are the mean and the
# **biased** variance of its features: divide by `dim`, not `dim - 1` (`unbiased=False`); $\epsilon = 10^{-5}$ sits **inside** the
# root (equal features give 0, not 0 / 0); $\gamma$ and $\beta$, one per feature, are learned by
# backpropagation, starting at 1 and 0.
#
# In code, `x.mean(dim=-1, keepdim=True)` averages over the last dim and keeps it with size 1. On a
# batch of shape `(batch, seq_len, dim)` the mean then has shape `(batch, seq_len, 1)`, so `x - mean`
# subtracts each token's own mean from its features.

# %% [markdown]
# ### Your turn: write it
#
# Write `my_layer_norm(x, gamma, beta, eps=1e-5)`: LN over the last dim of `x`, with `gamma` and
# `beta` of shape `(dim,)`. The function `standardize` in the section above is most of it. The
# checker runs your function on six inputs, among them the ones that catch the usual slips, and
# says what is still missing. The stub returns zeros, so it fails until you write the formula.

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
#     var = ((x - mean) ** 2).mean(dim=-1, keepdim=True)  # Var[x], biased: divide by dim
#     return (x - mean) / torch.sqrt(var + eps) * gamma + beta
# ```
#
# </details>

# %% [markdown]
# ### LayerNorm as a module
#
# In a model, LN is a module. It holds $\gamma$ and $\beta$ as `nn.Parameter`s: tensors that
# backpropagation gives a gradient and the optimiser updates. Its `forward` is the function you just
# wrote, so try the exercise before you read the next cell. PyTorch calls $\gamma$ `weight` and
# $\beta$ `bias`, and so does this module: it can then load weights saved from `nn.LayerNorm`.

# %%
class LayerNorm(nn.Module):
    """LayerNorm over the last dim, with a learned scale (gamma) and shift (beta) per feature."""

    def __init__(self, dim, eps=1e-5):
        super().__init__()
        self.eps = eps
        self.weight = nn.Parameter(torch.ones(dim))  # gamma, starts at 1
        self.bias = nn.Parameter(torch.zeros(dim))  # beta, starts at 0

    def forward(self, x):
        mean = x.mean(dim=-1, keepdim=True)
        var = x.var(dim=-1, unbiased=False, keepdim=True)  # biased: divide by dim
        return (x - mean) / torch.sqrt(var + self.eps) * self.weight + self.bias

# %% [markdown]
# Now compare it with `nn.LayerNorm` on the lesson's shape `(batch, seq_len, dim)`, with random
# $\gamma$ and $\beta$ copied into both. A module's `state_dict` is the dictionary of its saved
# tensors, by name. The two modules must have the same names, and give the same outputs and the
# same gradients for `x`, $\gamma$ and $\beta$.

# %%
torch.manual_seed(0)
ours, torchs = LayerNorm(4), nn.LayerNorm(4)
with torch.no_grad():  # random gamma and beta, the same in both
    ours.weight.normal_()
    ours.bias.normal_()
torchs.load_state_dict(ours.state_dict())
x = (torch.randn(2, 3, 4) * 3 + 5).requires_grad_()  # (batch, seq_len, dim)
out1, out2 = ours(x), torchs(x)
upstream = torch.randn(2, 3, 4)  # a gradient arriving from the layers above
grads1 = torch.autograd.grad(out1, [x, ours.weight, ours.bias], upstream)
grads2 = torch.autograd.grad(out2, [x, torchs.weight, torchs.bias], upstream)
print("state_dict keys:", list(ours.state_dict()), list(torchs.state_dict()))
print("same outputs:", torch.allclose(out1, out2, atol=1e-5))
same_grads = all(torch.allclose(a, b, atol=1e-4) for a, b in zip(grads1, grads2, strict=True))
print("same gradients for x, gamma and beta:", same_grads)

# %% [markdown] lesson_point=4
# ## 4 · Mean 0 and variance 1, then gamma and beta
#
# A fresh `LayerNorm(4)` starts with $\gamma = 1$ and $\beta = 0$. Its output has mean 0 and
# variance 1 in every token, to 4 decimals:

# %%
ln = LayerNorm(4)
y = ln(x).detach()  # detach: only the values, no gradient
print("mean of each token:\n", y.mean(dim=-1).abs().round(decimals=4))
print("variance of each token:\n", y.var(dim=-1, unbiased=False).round(decimals=4))

# %% [markdown]
# Why standardise, then rescale? $\gamma$ and $\beta$, learned per feature, let the network give
# each feature the scale and centre the next layer needs (how far into tanh's curve it goes, say).
# Starting at 1 and 0, LN begins as pure standardisation. Here is $\gamma = 2$ and $\beta = 0.5$
# for every feature:

# %%
with torch.no_grad():  # set gamma and beta by hand
    ln.weight.fill_(2.0)
    ln.bias.fill_(0.5)
y2 = ln(x).detach()
print("token 0: mean", round(y2[0, 0].mean().item(), 4), "std", round(y2[0, 0].std(unbiased=False).item(), 4))

# %% [markdown]
# Every feature has the same $\gamma$ and $\beta$ here, so each token's mean becomes $\beta$ and its
# spread $\gamma$. After training, each feature has its own $\gamma$ and $\beta$: each feature is
# then rescaled and shifted on its own, and a token's mean and spread are no longer simply
# $\beta$ and $\gamma$.

# %% [markdown]
# ### See it: a deep stack, with and without LN
#
# Eight layers `Linear → tanh`, without and with LN before each tanh: what enters each tanh
# (dark: layer 1, light: 8). One slider scales the weights, as training might; two set $\gamma$ and
# $\beta$. The figure redraws when you release a slider.
#
# Watch what does not move. The weight scale changes the panel without LN, but not the panel with
# LN: LN divides out any scale of its input, so there only $\gamma$ and $\beta$ move the values.

# %%
# NBVAL_IGNORE_OUTPUT
# displays a widget: three sliders and their live figure
demo = deep_stack_demo()
demo

# %% [markdown]
# Weights scaled by 0.5, $\gamma = 2$, $\beta = 0.5$: without LN, layer 8's values all but
# vanish; with LN every layer is centred at 0.5 with spread 2 (values beyond ±5 pile up at the
# ends; a $\gamma$ this large pushes many onto tanh's flat tails, 01 §5).

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
# BN and LN are the same code over a different dimension. LN: mean, biased variance, $\epsilon$ inside the root,
# then $\gamma$ rescales and $\beta$ shifts.
#
# Next: [01](01_before_the_activation_per_token.ipynb), [02](02_layernorm_in_a_transformer.ipynb).
# Then the deep dives:
# [10](10_how_a_claim_is_tested.ipynb) how a claim is tested, [11](11_batchnorm_in_depth.ipynb) BN,
# [12](12_where_the_norm_goes.ipynb) where the norm goes, [13](13_does_it_speed_up_training.ipynb)
# speed, [14](14_backward_numerics_speed.ipynb) backward and numerics,
# [15](15_the_normalization_family.ipynb) the family, [16](16_sequences_padding_and_masks.ipynb)
# sequences and masks, [17](17_layernorm_in_your_training_code.ipynb) your training code.

# %% [markdown]
# ## References
#
# - J. L. Ba, J. R. Kiros, G. E. Hinton, *Layer Normalization*, 2016,
#   [arXiv:1607.06450](https://arxiv.org/abs/1607.06450).
