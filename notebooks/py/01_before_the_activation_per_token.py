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
# # 01 · Before the activation, per token
#
# **What you will learn.** Why the lesson puts LN before the activation, and what is true of it.
# Per token or per sentence, and when each is used. Why LN keeps no running statistics. [Open in Colab](https://colab.research.google.com/github/layernorm-hands-on/layernorm-hands-on/blob/main/notebooks/01_before_the_activation_per_token.ipynb)

# %%
import matplotlib.pyplot as plt
import torch
from torch import nn

from helpers.exercises.layer_norm import check_sentence_layer_norm
from helpers.widgets.activation_input import activation_input_demo

# %% [markdown] lesson_point=5
# ## 5 · The lesson: LN goes before the activation
#
# The lesson says: "LN 和 BN 一样，通常用在激活函数之前" (LN, like BN, usually sits before the
# activation function). Ioffe and Szegedy (2015) put BN there when they introduced it. The
# lesson's reason: after the activation, LN "会在已经非线性的输出上再做标准化，
# 这可能破坏网络的表达能力" (would standardise outputs that are already non-linear, which may damage
# what the network can express).
#
# The lesson does not show this damage, and the training runs at the end of this section do not
# find it. Here is a different, concrete reason to put LN before tanh, and its limit. tanh is almost flat where its output passes ±0.97,
# for inputs beyond about ±2.1 (`atanh(0.97)` is 2.09). We call these its *flat tails*. There
# tanh's slope is under 1 − 0.97² = 0.059, so a gradient through it keeps under 6% of its size. Inputs that differ there come out almost the same.
# `tanh(3)` is 0.995 and `tanh(6)` is 1.000, so a difference of 3 is erased.
#
# When does that happen? When what enters tanh has a large spread, as when a layer's weights grow
# during training. Below, the Linear's input is already on one scale. Its weights are first as
# PyTorch starts them, then a fresh draw 8 times larger.

# %%
torch.manual_seed(0)
h = torch.randn(256, 16)  # the Linear's input: 256 tokens of 16 features
ln = nn.LayerNorm(16)
for growth in (1, 8):
    linear = nn.Linear(16, 16)
    with torch.no_grad():
        linear.weight *= growth  # weights that grew in training
    z = linear(h)
    first, plain = ((t.abs() > 0.97).float().mean() for t in (torch.tanh(ln(z)), torch.tanh(z)))
    print(f"weights x{growth}: on tanh's flat tails, {first:.0%} of values with LN first, {plain:.0%} with no LN")

# %% [markdown]
# With the larger weights and no LN, most values land on the flat tails. With LN first, the share
# stays small whatever the weights, because LN removes the input's scale.
#
# The limit: with the starting weights, the Linear's output has spread about 0.6, and LN scales it
# up to 1, so LN first puts *more* values on the tails than no LN does.
# And $\gamma$ can learn to push values back out. So LN before tanh can help, but need not. LN
# after tanh would rescale what tanh left, but what the flat tails erased does not come back.
#
# ReLU has no flat tail on the positive side. LN first centres each token at 0, so ReLU zeroes
# about half of each token's features. $\beta$ moves that share. The cell below reuses the last `z`
# above (the weights ×8) and adds one $\beta$ to every feature.

# %%
for beta in (0.0, 0.5):  # the same beta for every feature, added after LN as a learned beta is
    print(f"ReLU after LN, beta {beta}: {(torch.relu(ln(z) + beta) == 0).float().mean():.0%} of values zeroed")

# %% [markdown]
# ### See it: what enters tanh, ReLU and GELU
#
# Sliders move the centre and the spread of `z`, the Linear's output, here 512 tokens of width 64, drawn
# from a normal distribution with that centre and spread. A dropdown picks the
# activation. GELU is a smooth ReLU that Transformers use. The left panel puts LN first, the right one LN last. Blue is what enters the
# activation. Red is what comes out of LN and the activation together.
#
# The left panel stays the same at every slider setting. LN removes any centre
# and spread, so LN of `a * z + c` is LN of `z` for any a > 0. On the right, the activation sees `z`
# itself. With ReLU, the left panel (LN first) zeroes about half of each token at every setting.
# The right panel (LN last) zeroes anywhere from none to all of it, depending on the centre.

# %%
# NBVAL_IGNORE_OUTPUT
# displays a widget: a dropdown, two sliders and their live figure
demo = activation_input_demo()
demo

# %% [markdown]
# tanh, with `z` centred at 2 and spread 3. On the left, with LN first, the red curve peaks near ±0.95,
# just short of the flat tails, where tanh squeezes LN's larger outputs together. Only 4% passes
# ±0.97. On the right, about 48% of `z` lands on the flat tail near +1, where tanh gives them all
# almost one output. LN then turns that one value into the tall red spike. About 9% lands on the
# other tail, and the title's percentage counts both. The red note says that 17% of `z` lies beyond ±5, off
# the axis.

# %%
demo.snapshot(activation="tanh", shift=2.0, scale=3.0)
plt.show()

# %% [markdown]
# Does the order matter when a network trains? Small *MLPs* (stacks of `Linear` layers and
# activations), 8 layers of 16 units, learned to imitate a network with fixed random weights. LN
# sat before or after tanh, or before or after ReLU, and each setup trained from 10 random starts.
# Their final losses differ by about 1% (2% at most, either way), and the runs cannot tell the
# orders apart. So "usually
# before" is a convention that these runs neither confirm nor refute (deep dive
# [12](12_where_the_norm_goes.ipynb)).

# %% [markdown] lesson_point=6
# ## 6 · What `normalized_shape` decides
#
# A batch of sentences has shape `(batch, seq_len, d_model)`, where `d_model` is the width. The
# argument `normalized_shape` of `nn.LayerNorm(normalized_shape)` is the shape of the values that
# share one mean and variance. LN averages over the **last** `len(normalized_shape)` axes. Each index
# of the axes before them is a *group* with its own mean and variance. $\gamma$ and $\beta$ have the shape `normalized_shape`.
#
# Below, the batch of the lesson's code (section 8) is normalised both ways, once as it is and
# once with token 2 of sentence 0 made 100 times larger. Does token 0 of the same sentence change?

# %%
torch.manual_seed(42)
batch, seq_len, d_model = 2, 3, 4
x = torch.rand(batch, seq_len, d_model)  # the lesson's batch: 2 sentences x 3 tokens x 4 features
loud = x.clone()
loud[0, 2] *= 100  # a loud token
for shape in [(d_model,), (seq_len, d_model)]:
    norm = nn.LayerNorm(shape)
    print(f"normalized_shape={shape}: {x.numel() // norm.weight.numel()} groups, gamma of shape",
          f"{tuple(norm.weight.shape)}, token 0 changed: {not torch.equal(norm(loud)[0, 0], norm(x)[0, 0])}")

# %% [markdown]
# Per token (以 token 为单位) makes 2 × 3 = 6 groups of 4 values, and the loud token leaves token 0
# alone (False). Per sentence (以句子为单位) makes 2 groups of 12 values, and token 0 changes too (True). The lesson leaves the choice to "任务需求和应用场景" (the task and where it is used).
#
# Which one, and when? Transformers normalise per token, for four reasons.
#
# - Sentences differ in length. A per-sentence `nn.LayerNorm` is built for one length, and
#   `nn.LayerNorm((3, 4))` refuses a `(2, 5, 4)` batch, even without γ and β (with them, it holds
#   one value per position and feature). Statistics computed by hand over each sentence work at any length
#   (your exercise below).
# - A batch pads short sentences to one length. Per sentence, the padding enters every real
#   token's mean and variance.
# - A causal model predicts each token from the tokens before it. Per sentence, each token's mean
#   and variance include the later tokens (all but the last token's), so the future leaks in.
# - Per sentence, one loud token moves every other token, as token 0 shows above. Per token, each
#   token's output depends on that token alone.
#
# GPT-2 and BERT normalise each token over its features with LN, LLaMA with RMSNorm (notebook 02).
#
# Per sentence fits only inputs with no padding, in a model that is not causal (and, for
# `nn.LayerNorm`, of one length). Language models rarely meet these. Its cost is the fourth reason. One mean and variance per sample is used for images, over all of a picture's
# channels and pixels, as `nn.GroupNorm(1, C)` does. It is LN with `normalized_shape` `(C, H, W)`,
# except that its γ and β hold one value per channel. What real models normalise over, with
# padding, masks and images, is in deep dive [16](16_sequences_padding_and_masks.ipynb).

# %% [markdown] lesson_point=7
# ## 7 · No running statistics
#
# The lesson: "LN 不需要像 BN 那样在训练时累计 running_mean 和 running_var 值" (LN does not need to
# accumulate running_mean and running_var in training, as BN does). These are BN's *running
# statistics*, two averages it keeps while training. After each batch, each moves a tenth of the way
# (its `momentum`, 0.1) toward that batch's mean and **unbiased** variance. In `eval()` mode, for
# testing, BN uses them instead of the batch's own. LN needs none. Its statistics come from the
# sample itself, which is there at test time too, so LN computes the same in training and in
# `eval()` mode. Deep dive [11](11_batchnorm_in_depth.ipynb) shows BN's running statistics at work.

# %% [markdown] lesson_point=8
# ## 8 · The lesson's code, exactly
#
# The lesson's code, unchanged but for added comments. `test01` uses
# `nn.LayerNorm` both ways. `test02` does it by hand, printing means (均值) and variances (方差).
# The lesson calls the width `dim` (here 4). Do not confuse it with the keyword `dim=` of
# `torch.mean`, which names the axis to average over. `dim=2` is the last of the three, the features.
# `elementwise_affine=False` switches $\gamma$ and $\beta$ off.

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
# This is what the lesson prints under 程序执行结果 (the program's output), digit for digit.
# `test01`'s tensors equal `test02`'s, because `nn.LayerNorm` is the formula by hand. The cell below
# compares all 24 numbers, per token.

# %%
per_token = nn.LayerNorm(normalized_shape=dim, eps=1e-5, elementwise_affine=False)(batch_inputs)  # test01's
by_hand = (batch_inputs - batch_inputs.mean(dim=2, keepdim=True)) / torch.sqrt(batch_inputs.var(dim=2, unbiased=False, keepdim=True) + 1e-5)
print("per token, nn.LayerNorm equals the formula:", torch.allclose(per_token, by_hand, atol=1e-6))

# %% [markdown]
# ## Your turn: per sentence, any batch size
#
# `test02`'s `.view(2, 1, 1)` works for a batch of 2 only. Make `my_sentence_layer_norm(x)` work
# for **any** batch size and length (no $\gamma$, $\beta$). The stub, `test02`'s code, fails on purpose.

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
# - LN first keeps tanh's input off the flat tails when the weights grow, though with small weights
#   it puts more values there. Trained MLPs could not tell the two orders apart.
# - `normalized_shape=d_model` normalises per token, as Transformers do. `(seq_len, d_model)`
#   normalises per sentence, which fits only unpadded inputs in a model that is not causal.
# - LN keeps no running statistics, so it computes the same in training and in `eval()` mode.
#
# Next: [02 · LayerNorm in a Transformer](02_layernorm_in_a_transformer.ipynb).

# %% [markdown]
# ## References
#
# - S. Ioffe, C. Szegedy, *Batch Normalization*, 2015, section 3.2 (the norm before the
#   non-linearity), [arXiv:1502.03167](https://arxiv.org/abs/1502.03167).
# - PyTorch, [`torch.nn.LayerNorm`](https://docs.pytorch.org/docs/stable/generated/torch.nn.LayerNorm.html)
#   and [`torch.nn.BatchNorm1d`](https://docs.pytorch.org/docs/stable/generated/torch.nn.BatchNorm1d.html).
