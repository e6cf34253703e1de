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
# # 01 · Before the activation
#
# **What you will learn**: where the lesson puts LN (before the activation) and why; what tanh,
# ReLU and GELU receive with LN before and after them; a `Linear → LN → tanh` block by hand.

# %%
import matplotlib.pyplot as plt
import torch
from IPython.display import display
from torch import nn

from helpers.exercises.core_path import check_ln_before_activation
from helpers.widgets.activation_input import activation_input_demo

# %% [markdown] lesson_point=5
# ## 5 · LN goes before the activation
#
# The lesson: LN, like BN, usually sits **before** the activation function (激活函数), the source
# of non-linearity (非线性); after it, LN would standardise already non-linear outputs and may
# damage the expressive power (表达能力). For tanh, on inputs far from mean 0 and std 1:

# %%
torch.manual_seed(0)
linear, ln = nn.Linear(16, 16), nn.LayerNorm(16)
z = linear(torch.randn(256, 16) * 4 + 3)  # 256 tokens; Linear outputs far from mean 0, std 1

ln_first = torch.tanh(ln(z))  # the lesson's order: Linear -> LN -> tanh
ln_last = ln(torch.tanh(z))  # the other order: Linear -> tanh -> LN
print(f"tanh outputs beyond ±0.97, LN first: {(ln_first.abs() > 0.97).float().mean():.0%}, "
      f"LN last: {(torch.tanh(z).abs() > 0.97).float().mean():.0%}")

# %% [markdown]
# Beyond ±0.97 tanh is almost flat (gradient under 0.06): the weights before it barely learn.
# LN first hands tanh standardised tokens, on its curved part; LN last rescales what tanh left,
# but what its flat tails erased does not come back.
#
# ### See it: what enters tanh, ReLU and GELU
#
# Sliders move `z`'s centre and spread. Left: LN first; right: LN last. Blue enters the
# activation, red leaves the pair.

# %%
# NBVAL_IGNORE_OUTPUT
# displays a widget: a dropdown, two sliders and their live figure
demo = activation_input_demo()
display(demo)

# %% [markdown]
# tanh, `z` centred at 2 with spread 3: on the right most of `z` lands on tanh's flat tails.

# %%
demo.snapshot(activation="tanh", shift=2.0, scale=3.0)
plt.show()

# %% [markdown]
# How the order changes *training*: deep dive [12](12_where_the_norm_goes.ipynb).
#
# ## Your turn: a Linear → LN → tanh block
#
# Write `my_block(x, weight, bias, gamma, beta)`: `x @ weight.T + bias`, then LN by hand over
# the last dim, then tanh. PyTorch's norms refuse to run inside the check. As shipped, tanh
# comes first.

# %%
def my_block(x, weight, bias, gamma, beta, eps=1e-5):
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
# - LN before the activation hands it standardised tokens, on its curved part, whatever the
#   weights do; after it, what fell on a flat part (tanh's tails, ReLU's zeros) stays lost.
#
# Next: [02 · Per token or per sentence](02_per_token_or_per_sentence.ipynb).
#
# ## References
#
# - S. Ioffe, C. Szegedy, *Batch Normalization*, 2015, section 3.2 (the norm before the
#   non-linearity), [arXiv:1502.03167](https://arxiv.org/abs/1502.03167).
