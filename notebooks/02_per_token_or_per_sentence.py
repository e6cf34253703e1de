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
# # 02 · Per token or per sentence
#
# **What you will learn**
#
# - what `normalized_shape` decides: one mean and variance per token (`dim`) or per sentence
#   (`(seq_len, dim)`);
# - that LN keeps no `running_mean` or `running_var`, unlike BN;
# - the lesson's own code, `test01` and `test02`, with its printed output digit for digit.

# %%
import math

import matplotlib.pyplot as plt
import torch
from IPython.display import display
from torch import nn

from helpers.checks import check_sentence_layer_norm
from helpers.widgets.token_or_sentence import token_or_sentence_demo, token_or_sentence_state

# %% [markdown] lesson_point=6
# ## 6 · What `normalized_shape` decides
#
# A batch of sentences has shape `(batch, seq_len, dim)`: `seq_len` tokens per sentence, `dim`
# features per token. `nn.LayerNorm(normalized_shape)` averages over the **last**
# `len(normalized_shape)` dims; every index of the dims before them is a *group* with its own
# mean and variance. $\gamma$ and $\beta$ have the shape `normalized_shape`. On the lesson's batch:

# %%
torch.manual_seed(42)
batch, seq_len, dim = 2, 3, 4
x = torch.rand(batch, seq_len, dim)  # the lesson's batch: 2 sentences x 3 tokens x 4 features

for shape in [(dim,), (seq_len, dim)]:
    ln = nn.LayerNorm(shape)
    size = math.prod(shape)  # values per group
    print(f"normalized_shape={shape}: {x.numel() // size} groups of {size} values, "
          f"gamma of shape {tuple(ln.weight.shape)}")

# %% [markdown]
# Per token (以 token 为单位), each of the 6 tokens is standardised on its own. Per sentence
# (以句子为单位), the 12 values of a sentence share one mean and variance, and $\gamma$ has one
# entry per position *and* feature, so the layer accepts one sentence length only. Transformers
# normalise per token; padding and masks are in deep dive
# [16](16_sequences_padding_and_masks.ipynb).
#
# ### See it: one token scaled
#
# A sentence of 6 tokens × 256 features from `rand`; the slider scales token 2 (red). Left: each
# token's input values; right: its LN output. Per token, every token comes out the same shape,
# the scaled one too. Per sentence, the tokens share one mean and variance: the scaled token
# spreads out and squeezes the others.

# %%
# NBVAL_IGNORE_OUTPUT
# displays a widget: a dropdown, a slider and their live figure
demo = token_or_sentence_demo()
display(demo)

# %% [markdown]
# For a reader without a kernel: per sentence, token 2 scaled by 5.

# %%
demo.snapshot(unit="per sentence: normalized_shape=(seq_len, dim)", scale=5.0)
plt.show()

# %% [markdown]
# **Check it**: per token, the scaled token's output has standard deviation 1 like the others;
# per sentence, it has more and the others less.

# %%
for unit in ["per token: normalized_shape=dim", "per sentence: normalized_shape=(seq_len, dim)"]:
    std = token_or_sentence_state(unit, scale=5.0)["y"].std(dim=-1, correction=0)
    others = torch.cat([std[:2], std[3:]])  # every token but token 2
    print(f"{unit.split(':')[0]}: token 2 std {std[2]:.1f}, the others at most {others.max():.1f}")

# %% [markdown] lesson_point=7
# ## 7 · No running statistics
#
# A *buffer* is a tensor a module stores and updates itself, not by gradients; it is saved in
# the module's *state dict* (what `torch.save(model.state_dict(), ...)` writes). During training
# BN accumulates `running_mean` and `running_var` there, and uses them in `eval()` mode. LN
# computes everything from the token in front of it: it has nothing to accumulate, and gives
# the same output in training and in evaluation:

# %%
tokens = x.reshape(-1, dim)  # the 6 tokens as a (6, 4) batch
for norm in (nn.BatchNorm1d(dim), nn.LayerNorm(dim)):
    train_out = norm.train()(tokens)
    same = torch.equal(train_out, norm.eval()(tokens))
    print(f"{type(norm).__name__}: buffers {[n for n, _ in norm.named_buffers()]}, train == eval: {same}")

# %% [markdown] lesson_point=8
# ## 8 · The lesson's code, exactly
#
# The lesson's code, unchanged but for an English translation next to each Chinese comment and a
# `# noqa` that tells the linter the import order is on purpose. `test01` uses `nn.LayerNorm`
# both ways; `test02` computes the same by hand and prints the means (均值) and variances (方差).
# `elementwise_affine=False, bias=False` switches $\gamma$ and $\beta$ off.

# %%
import torch.nn as nn  # noqa: I001 (the lesson imports torch.nn first)
import torch


torch.manual_seed(42)
batch, seq_len, dim = 2, 3, 4
batch_inputs = torch.rand(size=(batch, seq_len, dim))


def test01():
    # 以 Token 为单位 (per token)
    layer_norm = nn.LayerNorm(normalized_shape=dim, eps=1e-5, elementwise_affine=False, bias=False)
    output = layer_norm(batch_inputs)
    print(output)

    # 以句子为单词 (per sentence; the lesson's 为单词 is a slip for 为单位, "as the unit")
    layer_norm = nn.LayerNorm(normalized_shape=(seq_len, dim), eps=1e-5, elementwise_affine=False, bias=False)
    output = layer_norm(batch_inputs)
    print(output)


def test02():
    # 以 Token 为单位 (per token)
    mean = torch.mean(batch_inputs, dim=2)
    var = torch.var(batch_inputs, dim=2, unbiased=False)
    print('均值:', mean, '方差:', var)
    outputs = (batch_inputs - mean.view(2, 3, 1)) / torch.sqrt(var.view(2, 3, 1) + 1e-5)
    print(outputs)

    # 以句子为单词 (per sentence)
    mean = torch.mean(batch_inputs, dim=(1, 2))
    var = torch.var(batch_inputs, dim=(1, 2), unbiased=False)
    print('均值:', mean, '方差:', var)
    outputs = (batch_inputs - mean.view(2, 1, 1)) / torch.sqrt(var.view(2, 1, 1) + 1e-5)
    print(outputs)


if __name__ == '__main__':
    test01()
    print('-' * 50)
    test02()

# %% [markdown]
# This is character for character what the lesson prints (程序执行结果, "the program's output");
# a test compares this cell's stored output with the lesson's. Each pair agrees: `test01` and
# `test02` per token (6 means), then per sentence (2 means). The set's `helpers.layer_norm`
# prints the same tensors:

# %%
same_token = str(helpers.layer_norm(batch_inputs, (dim,))) == str(nn.LayerNorm(dim, elementwise_affine=False)(batch_inputs))
same_sentence = str(helpers.layer_norm(batch_inputs, (seq_len, dim))) == str(
    nn.LayerNorm((seq_len, dim), elementwise_affine=False)(batch_inputs))
print("helpers.layer_norm prints the same, per token:", same_token, "| per sentence:", same_sentence)

# %% [markdown]
# ## Your turn: per sentence, any batch size
#
# `test02`'s per-sentence lines use `.view(2, 1, 1)`, which works for a batch of 2 only. Write
# `my_sentence_layer_norm(x)` for `x` of shape `(batch, seq_len, dim)` with **any** batch size
# and length, no $\gamma$ or $\beta$. The checker compares it with PyTorch's on the lesson's
# shape, on 3 sentences of 5 tokens, on 1 sentence of 7 tokens, and on values around 10000. As
# shipped, it is `test02`'s code.

# %%
def my_sentence_layer_norm(x, eps=1e-5):
    """LayerNorm per sentence of x, shape (batch, seq_len, dim), without gamma and beta."""
    mean = torch.mean(x, dim=(1, 2))
    var = torch.var(x, dim=(1, 2), unbiased=False)
    return (x - mean.view(2, 1, 1)) / torch.sqrt(var.view(2, 1, 1) + eps)  # TODO: any batch size


check_sentence_layer_norm(my_sentence_layer_norm)

# %% [markdown]
# <details><summary>Solution</summary>
#
# ```python
# def my_sentence_layer_norm(x, eps=1e-5):
#     mean = x.mean(dim=(1, 2), keepdim=True)  # (batch, 1, 1): lines up with x
#     var = ((x - mean) ** 2).mean(dim=(1, 2), keepdim=True)
#     return (x - mean) / torch.sqrt(var + eps)
# ```
#
# `keepdim=True` keeps the reduced dims with size 1, so no `.view` with a fixed batch size is
# needed.
#
# </details>
#
# ## Summary
#
# - `normalized_shape` names the trailing dims LN averages over: `dim` gives one mean and
#   variance per token, `(seq_len, dim)` one per sentence; $\gamma$ and $\beta$ take its shape.
# - LN has no buffers: no `running_mean`, no `running_var`, the same output in `train()` and
#   `eval()`; BN keeps both and switches between them.
# - The lesson's `test01` and `test02` print its numbers digit for digit, and so does
#   `helpers.layer_norm`.
#
# | English | 中文 |
# |---|---|
# | per token | 以 token 为单位 |
# | per sentence | 以句子为单位 (the code's 以句子为单词 is a slip) |
# | usage example | 使用示例 |
# | the program's output | 程序执行结果 |
#
# Next: [03 · LayerNorm in a Transformer](03_layernorm_in_a_transformer.ipynb).
#
# ## References
#
# - PyTorch, [`torch.nn.LayerNorm`](https://docs.pytorch.org/docs/stable/generated/torch.nn.LayerNorm.html)
#   (`normalized_shape`) and [`torch.nn.BatchNorm1d`](https://docs.pytorch.org/docs/stable/generated/torch.nn.BatchNorm1d.html)
#   (`running_mean`, `running_var`).
# - J. L. Ba, J. R. Kiros, G. E. Hinton, *Layer Normalization*, 2016,
#   [arXiv:1607.06450](https://arxiv.org/abs/1607.06450).
