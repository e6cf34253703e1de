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
# # 01 · Before the activation
#
# **What you will learn**
#
# - where the lesson puts LN, before the activation function, and its reason;
# - what tanh, ReLU and GELU receive when LN comes before them and when it comes after;
# - to write a `Linear → LN → tanh` block yourself.

# %%
import matplotlib.pyplot as plt
import torch
from IPython.display import display
from torch import nn

from helpers.core_path_exercises import check_ln_before_activation
from helpers.widgets.activation_input import activation_input_demo, activation_input_state

# %% [markdown] lesson_point=5
# ## 5 · LN goes before the activation
#
# The lesson: LN, like BN, usually sits **before** the activation function (激活函数). The
# activation is what makes a network non-linear (非线性), so that it can learn complex patterns.
# Put LN after it, and LN standardises outputs that are already non-linear, which may damage the
# network's expressive power (表达能力).
#
# Here is what that means for tanh. Its inputs `z` come from a Linear layer whose output is far
# from mean 0 and standard deviation 1, as a layer's outputs can be once training has moved its
# weights. The same `z` goes through both orders:

# %%
torch.manual_seed(0)
linear, ln = nn.Linear(16, 16), nn.LayerNorm(16)
z = linear(torch.randn(256, 16) * 4 + 3)  # 256 tokens; Linear outputs far from mean 0, std 1

ln_first = torch.tanh(ln(z))  # the lesson's order: Linear -> LN -> tanh
ln_last = ln(torch.tanh(z))  # the other order: Linear -> tanh -> LN


def saturated(a):  # the share of tanh outputs on its flat tails
    return f"{(a.abs() > 0.97).float().mean().item():.0%}"


print("tanh outputs beyond ±0.97, LN first:", saturated(ln_first), "| LN last:", saturated(torch.tanh(z)))

# %% [markdown]
# Where |tanh| is above 0.97, tanh is almost flat: its gradient is under 0.06, so the weights
# before it barely learn, and the output says little more than the sign of `z`. With LN first,
# tanh always receives standardised tokens, where it is curved but not flat. With LN last, tanh
# takes `z` as it comes; LN then rescales what tanh left, but what the flat tails erased does not
# come back.
#
# ### See it: what enters tanh, ReLU and GELU
#
# The activation is a dropdown; the sliders move the centre and the spread of `z`, as training
# moves the weights. Left: LN first. Right: LN last. Blue is what enters the activation, red what
# leaves the pair; each title gives the share of values on the activation's flat part.

# %%
# NBVAL_IGNORE_OUTPUT
# displays a widget: a dropdown, two sliders and their live figure
demo = activation_input_demo()
display(demo)

# %% [markdown]
# For a reader without a kernel, tanh with `z` centred at 2 with spread 3: on the left tanh
# sees the same bell as always; on the right most of `z` lands on tanh's flat tails.

# %%
demo.snapshot(activation="tanh", shift=2.0, scale=3.0)
plt.show()

# %% [markdown]
# **Check it**: with LN first, what enters the activation does not depend on where `z` sits;
# with LN last, it is `z` itself.

# %%
lines = []
for shift, scale in [(0.0, 1.0), (2.0, 3.0), (-3.0, 0.5)]:
    state = activation_input_state("tanh", shift, scale)
    assert torch.allclose(state["LN first"], activation_input_state("tanh", 0.0, 1.0)["LN first"], atol=1e-3)
    lines.append(f"z at {shift:g}, spread {scale:g}: beyond ±0.97, LN first {saturated(state['LN first'])}, "
                 f"LN last {saturated(torch.tanh(state['z']))}")
print("\n".join(lines))

# %% [markdown]
# The lesson says "usually": whether the order changes how well a network *trains* is a
# question for experiments, answered in deep dive [12](12_where_the_norm_goes.ipynb) and in the
# card at the end of notebook 03. In a Transformer, LN sits at the input of each sub-layer
# (notebook 03): there too the MLP's activation comes after a norm and a Linear.
#
# ## Your turn: a Linear → LN → tanh block
#
# Write `my_block(x, weight, bias, gamma, beta)`: the Linear layer `x @ weight.T + bias`, then LN
# over the last dim by hand (mean, biased variance, `eps` inside the root, `gamma`, `beta`), then
# tanh. While the checker runs, PyTorch's norm functions refuse to run. As shipped, the block
# applies tanh first.

# %%
def my_block(x, weight, bias, gamma, beta, eps=1e-5):
    """Linear, then LayerNorm (by hand), then tanh."""
    z = torch.tanh(x @ weight.T + bias)  # TODO: the lesson's order
    mean = z.mean(dim=-1, keepdim=True)
    var = ((z - mean) ** 2).mean(dim=-1, keepdim=True)
    return (z - mean) / torch.sqrt(var + eps) * gamma + beta


check_ln_before_activation(my_block)

# %% [markdown]
# <details><summary>Solution</summary>
#
# ```python
# def my_block(x, weight, bias, gamma, beta, eps=1e-5):
#     z = x @ weight.T + bias
#     mean = z.mean(dim=-1, keepdim=True)
#     var = ((z - mean) ** 2).mean(dim=-1, keepdim=True)
#     return torch.tanh((z - mean) / torch.sqrt(var + eps) * gamma + beta)
# ```
#
# </details>
#
# ## Summary
#
# - The lesson puts LN before the activation: the activation then always sees standardised
#   tokens, on its curved part, whatever the weights before it do.
# - After the activation, LN would standardise outputs that are already non-linear; values that
#   fell on a flat part (tanh's tails, ReLU's zeros) stay lost.
#
# | English | 中文 |
# |---|---|
# | activation function | 激活函数 |
# | non-linearity | 非线性 |
# | expressive power | 表达能力 |
#
# Next: [02 · Per token or per sentence](02_per_token_or_per_sentence.ipynb).
#
# ## References
#
# - S. Ioffe, C. Szegedy, *Batch Normalization*, 2015, section 3.2 (the norm before the
#   non-linearity), [arXiv:1502.03167](https://arxiv.org/abs/1502.03167).
# - J. L. Ba, J. R. Kiros, G. E. Hinton, *Layer Normalization*, 2016,
#   [arXiv:1607.06450](https://arxiv.org/abs/1607.06450).
