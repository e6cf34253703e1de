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
# # 01 · Before the activation, per token
#
# **What you will learn**: why LN goes before the activation; per token or per sentence; no
# running statistics; the lesson's code, digit for digit. [Open in Colab](https://colab.research.google.com/github/layernorm-hands-on/layernorm-hands-on/blob/main/notebooks/01_before_the_activation_per_token.ipynb)

# %%
import matplotlib.pyplot as plt
import torch
from torch import nn

from helpers.exercises.layer_norm import check_sentence_layer_norm
from helpers.widgets.activation_input import activation_input_demo

# %% [markdown] lesson_point=5
# ## 5 · LN goes before the activation
#
# The lesson: LN, like BN, usually sits **before** the activation function (激活函数), the source
# of non-linearity (非线性); after it, LN would standardise already non-linear outputs and may
# damage the expressive power (表达能力). That reason stays brief; here is a concrete one, for tanh
# on inputs far from mean 0 and std 1:

# %%
torch.manual_seed(0)
linear, ln = nn.Linear(16, 16), nn.LayerNorm(16)
z = linear(torch.randn(256, 16) * 4 + 3)  # 256 tokens, far from mean 0 and std 1

ln_first = torch.tanh(ln(z))  # the lesson's order: Linear -> LN -> tanh
no_ln = torch.tanh(z)  # no LN before tanh (as when LN comes after it)
for name, t in [("LN first", ln_first), ("no LN before tanh", no_ln)]:
    print(f"{name}: {(t.abs() > 0.97).float().mean():.0%} beyond ±0.97, average slope {(1 - t**2).mean():.2f}")

# %% [markdown]
# Beyond ±0.97 tanh is almost flat. Its slope, $1 - \tanh^2$, multiplies the gradient that
# reaches the weights before it: with LN first it is about twice as large here. LN after tanh
# would rescale what tanh left, but what the flat tails erased does not come back.

# %% [markdown]
# ### See it: what enters tanh, ReLU and GELU
#
# The same effect, now movable. Sliders move `z`'s centre and spread. Left: LN first; right: LN
# last. Blue: what enters the activation; red: what comes out of LN and activation together.

# %%
# NBVAL_IGNORE_OUTPUT
# displays a widget: a dropdown, two sliders and their live figure
demo = activation_input_demo()
demo

# %% [markdown]
# tanh, `z` centred at 2 with spread 3: on the right most of `z` lands on tanh's flat tails.

# %%
demo.snapshot(activation="tanh", shift=2.0, scale=3.0)
plt.show()

# %% [markdown]
# How the order changes *training*: deep dive [12](12_where_the_norm_goes.ipynb).

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
    gamma = nn.LayerNorm(shape).weight
    print(f"normalized_shape={shape}: {x.numel() // gamma.numel()} groups, gamma of shape {tuple(gamma.shape)}")

# %% [markdown]
# Per token (以 token 为单位): 2 × 3 = 6 groups. Per sentence (以句子为单位): 2 groups of 12 values,
# and $\gamma$ has an entry per position: one sentence length only (try
# `nn.LayerNorm((3, 4))(torch.rand(2, 5, 4))`). Transformers normalise per token (padding, and a
# slider that scales one token: deep dive [16](16_sequences_padding_and_masks.ipynb)).

# %% [markdown] lesson_point=7
# ## 7 · No running statistics
#
# A *buffer* is a tensor a module updates itself, not by gradients, and saves with its weights.
# BN accumulates `running_mean` and `running_var` in training and uses them in `eval()` mode. LN
# has none:

# %%
tokens = x.reshape(-1, dim)  # the 6 tokens as a (6, 4) batch
for norm in (nn.BatchNorm1d(dim), nn.LayerNorm(dim)):
    train_out = norm.train()(tokens)
    same = torch.equal(train_out, norm.eval()(tokens))
    print(f"{type(norm).__name__}: buffers {[n for n, _ in norm.named_buffers()]}, train == eval: {same}")

# %% [markdown]
# After one batch BN's running statistics are still near their start (0 and 1), so `eval()`
# changes its output; LN's output cannot change.

# %% [markdown] lesson_point=8
# ## 8 · The lesson's code, exactly
#
# Unchanged but for English beside the Chinese comments. `test01`
# uses `nn.LayerNorm` both ways; `test02` does it by hand, printing means (均值) and variances
# (方差). `elementwise_affine=False` switches $\gamma$ and $\beta$ off (`bias=False` is redundant);
# `if __name__ == '__main__':` is true in a notebook too.

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
# Character for character what the lesson prints (程序执行结果; `tests/test_lesson.py` compares them).
# `test01`'s tensors equal `test02`'s: `nn.LayerNorm` is exactly the formula by hand.

# %% [markdown]
# ## Your turn: per sentence, any batch size
#
# `test02`'s `.view(2, 1, 1)` works for a batch of 2 only. Make `my_sentence_layer_norm(x)` work
# for **any** batch size (no $\gamma$, $\beta$). The stub, `test02`'s code, fails on purpose.

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
# (`mean.view(-1, 1, 1)` works too.)
#
# </details>

# %% [markdown]
# ## Summary
#
# - LN before the activation keeps its input on the curved part; after it, what a flat part erased stays lost.
# - `normalized_shape=dim`: per token; `(seq_len, dim)`: per sentence. No running statistics.
#
# Next: [02 · LayerNorm in a Transformer](02_layernorm_in_a_transformer.ipynb).

# %% [markdown]
# ## References
#
# - S. Ioffe, C. Szegedy, *Batch Normalization*, 2015, section 3.2 (the norm before the
#   non-linearity), [arXiv:1502.03167](https://arxiv.org/abs/1502.03167).
# - PyTorch, [`torch.nn.LayerNorm`](https://docs.pytorch.org/docs/stable/generated/torch.nn.LayerNorm.html)
#   and [`torch.nn.BatchNorm1d`](https://docs.pytorch.org/docs/stable/generated/torch.nn.BatchNorm1d.html).
