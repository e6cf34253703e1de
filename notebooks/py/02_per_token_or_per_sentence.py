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
# # 02 · Per token or per sentence
#
# **What you will learn**: what `normalized_shape` decides (per token or per sentence); that LN
# keeps no running statistics, unlike BN; the lesson's `test01` and `test02`, digit for digit.

# %%
import matplotlib.pyplot as plt
import torch
from IPython.display import display
from torch import nn

from helpers.exercises.layer_norm import check_sentence_layer_norm
from helpers.widgets.token_or_sentence import token_or_sentence_demo

# %% [markdown] lesson_point=6
# ## 6 · What `normalized_shape` decides
#
# A batch of sentences has shape `(batch, seq_len, dim)`. `nn.LayerNorm(normalized_shape)`
# averages over the **last** `len(normalized_shape)` dims; each index of the dims before them is
# a *group* with its own mean and variance; $\gamma$ and $\beta$ have the shape `normalized_shape`:

# %%
torch.manual_seed(42)
batch, seq_len, dim = 2, 3, 4
x = torch.rand(batch, seq_len, dim)  # the lesson's batch: 2 sentences x 3 tokens x 4 features

for shape in [(dim,), (seq_len, dim)]:
    means = x.mean(dim=tuple(range(-len(shape), 0)))  # one mean per group
    print(f"normalized_shape={shape}: {means.numel()} groups, gamma of shape {tuple(nn.LayerNorm(shape).weight.shape)}")

# %% [markdown]
# Per token (以 token 为单位), each token alone; per sentence (以句子为单位), a sentence's 12 values
# together, and $\gamma$ has an entry per position, so one sentence length only. Transformers
# normalise per token (padding, masks: deep dive [16](16_sequences_padding_and_masks.ipynb)).
#
# ### See it: one token scaled
#
# 6 tokens × 256 features; the slider scales token 2 (red). Left: each token's inputs; right:
# its LN outputs. Per sentence, the scaled token spreads out and squeezes the others.

# %%
# NBVAL_IGNORE_OUTPUT
# displays a widget: a dropdown, a slider and their live figure
demo = token_or_sentence_demo()
display(demo)

# %% [markdown]
# Per sentence, token 2 scaled by 5:

# %%
demo.snapshot(unit="per sentence: normalized_shape=(seq_len, dim)", scale=5.0)
plt.show()

# %% [markdown] lesson_point=7
# ## 7 · No running statistics
#
# A *buffer* is a tensor a module updates itself, not by gradients, and saves in its *state
# dict* (what `torch.save` writes). BN accumulates `running_mean` and `running_var` in training
# and uses them in `eval()` mode. LN computes everything from the token in front of it:

# %%
tokens = x.reshape(-1, dim)  # the 6 tokens as a (6, 4) batch
for norm in (nn.BatchNorm1d(dim), nn.LayerNorm(dim)):
    train_out = norm.train()(tokens)
    same = torch.equal(train_out, norm.eval()(tokens))
    print(f"{type(norm).__name__}: buffers {[n for n, _ in norm.named_buffers()]}, train == eval: {same}")

# %% [markdown] lesson_point=8
# ## 8 · The lesson's code, exactly
#
# Unchanged but for English beside the Chinese comments. `test01`
# uses `nn.LayerNorm` both ways; `test02` does it by hand, printing means (均值) and variances
# (方差). `elementwise_affine=False, bias=False` switches $\gamma$ and $\beta$ off.

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
# Character for character what the lesson prints (程序执行结果); a test compares them. So does
# `helpers.layer_norm`:

# %%
for shape in [(dim,), (seq_len, dim)]:
    assert str(helpers.layer_norm(batch_inputs, shape)) == str(nn.LayerNorm(shape, elementwise_affine=False)(batch_inputs))

# %% [markdown]
# ## Your turn: per sentence, any batch size
#
# `test02`'s `.view(2, 1, 1)` works for a batch of 2 only. Make `my_sentence_layer_norm(x)` work
# for **any** batch size and length (no $\gamma$, $\beta$). As shipped, it is `test02`'s code.

# %%
def my_sentence_layer_norm(x, eps=1e-5):
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
#
# </details>
#
# ## Summary
#
# - `normalized_shape=dim`: one mean and variance per token; `(seq_len, dim)`: per sentence.
# - LN keeps no running statistics: the same output in `train()` and `eval()`.
#
# Next: [03 · LayerNorm in a Transformer](03_layernorm_in_a_transformer.ipynb).
#
# ## References
#
# - PyTorch, [`torch.nn.LayerNorm`](https://docs.pytorch.org/docs/stable/generated/torch.nn.LayerNorm.html)
#   and [`torch.nn.BatchNorm1d`](https://docs.pytorch.org/docs/stable/generated/torch.nn.BatchNorm1d.html).
