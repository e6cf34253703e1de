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
# # 00 · Start here: Layer Normalization, hands-on
#
# This set teaches **Layer Normalization** (LN, 层归一化) by building it, checking it against
# PyTorch and watching it work. Each notebook is built to run top to bottom in seconds on a
# laptop CPU.
#
# **In this notebook you will**
#
# 1. find your way around the set (the map);
# 2. learn how its interactive widgets work, in JupyterLab and in Google Colab;
# 3. meet the Chinese terms of the lesson this set grows from, next to their English names;
# 4. see the lesson's first contrast on a 2 × 4 batch: BatchNorm (BN) normalizes each feature
#    over the batch, LN each sample over its own features, and only BN's output for one sample
#    depends on the other samples; that is why LN was invented;
# 5. compute LN of the same batch with the set's own `helpers.layer_norm`, check it against
#    PyTorch, and see every sample come out with mean 0 and variance (almost) 1;
# 6. move one sample with two sliders and watch its LN output stay where it was, then check
#    that with numbers;
# 7. write LN of one token yourself and get instant feedback.
#
# The cell above makes `helpers`, the set's small package, importable (in Colab it installs it).

# %% [markdown]
# ## The map
#
# | notebook | what it shows | in Colab |
# |---|---|---|
# | `00_start_here.ipynb` | this map, the widgets, a glossary, a first taste of LN | **here** ([open](https://colab.research.google.com/github/layernorm-hands-on/layernorm-hands-on/blob/main/notebooks/00_start_here.ipynb)) |
# | [`01_layernorm_from_the_formula.ipynb`](01_layernorm_from_the_formula.ipynb) | why deep stacks need it (drift, measured); the formula term by term: mean, biased variance, `eps`, learned `gamma` and `beta` | [open](https://colab.research.google.com/github/layernorm-hands-on/layernorm-hands-on/blob/main/notebooks/01_layernorm_from_the_formula.ipynb) |
# | [`02_token_vs_sentence.ipynb`](02_token_vs_sentence.ipynb) | normalizing per token (`normalized_shape=dim`) or per sentence (`(seq_len, dim)`); the lesson's code, digit for digit; padding and causal pitfalls | [open](https://colab.research.google.com/github/layernorm-hands-on/layernorm-hands-on/blob/main/notebooks/02_token_vs_sentence.ipynb) |
# | [`03_layernorm_vs_batchnorm.ipynb`](03_layernorm_vs_batchnorm.ipynb) | the two-sample example the lesson promises; whose statistics, what depends on the batch, batch size, train vs eval, padding, and Ba et al.'s invariance table measured | [open](https://colab.research.google.com/github/layernorm-hands-on/layernorm-hands-on/blob/main/notebooks/03_layernorm_vs_batchnorm.ipynb) |
# | [`04_before_the_activation.ipynb`](04_before_the_activation.ipynb) | where the norm goes: before or after the activation, measured for tanh, ReLU and GELU; Pre-LN vs Post-LN Transformers | [open](https://colab.research.google.com/github/layernorm-hands-on/layernorm-hands-on/blob/main/notebooks/04_before_the_activation.ipynb) |
# | [`05_does_it_speed_up_training.ipynb`](05_does_it_speed_up_training.ipynb) | the lesson's headline claim tested: 1- and 3-layer RNNs and a Transformer with and without LN, learning-rate sweep, internal covariate shift and noisy LN measured | [open](https://colab.research.google.com/github/layernorm-hands-on/layernorm-hands-on/blob/main/notebooks/05_does_it_speed_up_training.ipynb) |
# | [`06_backward_numerics_speed.ipynb`](06_backward_numerics_speed.ipynb) | the backward pass by hand, one-pass vs two-pass vs Welford variance, saved bytes, and speed against PyTorch's kernel | [open](https://colab.research.google.com/github/layernorm-hands-on/layernorm-hands-on/blob/main/notebooks/06_backward_numerics_speed.ipynb) |
# | [`07_the_normalization_family.ipynb`](07_the_normalization_family.ipynb) | the family as one operation over different dims (BN, LN, IN, GN, RMSNorm) on one picture; LN's geometry in 3-D; GN vs BN vs LN vs IN at batch 2, 8 and 32, measured; RMSNorm, DyT and no norm in a small Transformer, and whether a trained LN's map is S-shaped; which norm well-known models use | [open](https://colab.research.google.com/github/layernorm-hands-on/layernorm-hands-on/blob/main/notebooks/07_the_normalization_family.ipynb) |
#
# Every notebook of the set is here.

# %% [markdown]
# ## How the widgets work
#
# - **Run everything first**: JupyterLab *Run → Run All Cells*; Colab *Runtime → Run all*.
#   A widget is live only while the kernel that ran its cell is running; a stored notebook
#   shows at most a still picture of it.
# - **Sliders redraw when you let go**, not while you drag, so each position is computed
#   once. You can also click a slider and use the arrow keys, or type into its number box.
# - **Every control changes what is shown**, and under each widget a *check it* cell states
#   the same thing in numbers, with `assert`s: nothing rests on a picture alone.
# - **Colab**: widgets work out of the box. Colab ships ipywidgets 7.7 (the versions this set
#   is tested against in Colab's configuration are in `requirements-colab.txt`); the widgets
#   here use only what ipywidgets 7.7 and 8 share.
# - **If a widget shows as a line of text** (its class name and children) or as
#   "Loading widget...", the front end did not draw it: run the cell again in a running
#   kernel. Outside JupyterLab and Colab (classic Notebook, VS Code), the ipywidgets
#   extension for that front end must be installed; `make lab` sets all of this up.

# %% [markdown]
# ## Glossary: English ↔ the lesson's Chinese
#
# The lesson (`layer_normalization_lesson.zh.txt`, in Chinese) uses these words; the set uses
# the English ones.
#
# | English | 中文 (the lesson's words) | note |
# |---|---|---|
# | Layer Normalization, LN | 层归一化 | normalizes each sample over its own features |
# | Batch Normalization, BN | 批量归一化 | normalizes each feature over the batch |
# | standardize, normalize | 标准化 | subtract the mean, divide by the standard deviation |
# | mean | 均值 | `E[x]` |
# | variance | 方差 | `Var[x]`, biased (divide by n: `unbiased=False` in the lesson's code) |
# | batch | 批次 | |
# | sample | 样本 | one row of the batch |
# | feature | 特征 | one entry of a sample |
# | token | token | the lesson keeps the English word |
# | sentence | sentence, 句子 | a sequence of tokens |
# | per token / per sentence | 以 token 为单位 / 以 sentence 为单位 | what one mean and variance are computed over |
# | small constant `eps` (1e-5) | 小常数 | "用于避免除以零", to avoid dividing by zero |
# | learnable parameter | 可学习参数, 学习参数 | `gamma` (γ) and `beta` (β) |
# | scale | 缩放, 尺度 | what γ controls |
# | shift | 平移 | what β controls |
# | backpropagation | 反向传播 | how γ and β are updated |
# | activation function | 激活函数 | |
# | nonlinearity | 非线性 | |
# | input distribution | 输入分布 | of a layer, which keeps changing during training |
# | convergence | 收敛 | |
# | training stability | 训练稳定性 | |
# | expressive power | 表达能力 | |
# | `running_mean`, `running_var` | running_mean, running_var | BN accumulates (累计) them during training; LN keeps none |

# %% [markdown]
# ## First contrast: BN or LN, whose mean and variance?
#
# The lesson sets LN against **Batch Normalization** (BN, 批量归一化) before it writes any formula.
# Both subtract a mean and divide by a standard deviation; they differ in *which numbers* share
# that mean:
#
# - **BN** takes each **feature** (a column) over the **batch**: one mean and variance per
#   feature, computed from all the samples together (dim 0 of a `(batch, features)` tensor);
# - **LN** takes each **sample** (a row) over **its own features**: one mean and variance per
#   sample (dim -1).
#
# A batch of 2 samples × 4 features, the second sample being the first one times 10 plus 5,
# normalized both ways (`both_ways`: BN in training mode, LN, both with `eps = 1e-5`, no
# `gamma` or `beta`):

# %%
# %matplotlib inline
import pandas as pd
import torch
import torch.nn.functional as F
from IPython.display import display
from torch import nn

from helpers.exercises.checking import compare
from helpers.exercises.layer_norm import check_layer_norm_one_token
from helpers.lessons.bn_vs_ln import batch_dependence, both_ways, state_and_modes
from helpers.lessons.group_stats import group_stats, rounded
from helpers.widgets import shift_scale_demo, shift_scale_state

x = torch.tensor([[1.0, 2.0, 3.0, 4.0],
                  [15.0, 25.0, 35.0, 45.0]])  # 2 samples x 4 features; row 1 = 10 * row 0 + 5
rounded(both_ways(x), 4)

# %% [markdown]
# **BN** (per column): with only two samples, each feature's two values lie one standard
# deviation either side of their mean, so every entry becomes −1 or +1 (to 4 decimals) and the
# pattern *inside* a sample (1 < 2 < 3 < 4) is gone. **LN** (per row): each sample keeps its own
# pattern, and the two rows come out (almost) the same, because one is a scaled and shifted
# copy of the other.
#
# **What depends on the batch.** Replace sample 1 by `[4, 3, 2, 1]` and normalize again. Sample 0
# did not change, yet its BN output does; its LN output is bit for bit what it was:

# %%
dependence = batch_dependence(x, torch.tensor([4.0, 3.0, 2.0, 1.0]), sample=0, other=1)
assert not dependence.loc["BatchNorm", "unchanged"] and dependence.loc["LayerNorm", "unchanged"]
rounded(dependence, 4)

# %% [markdown]
# **What each module keeps.** A *parameter* is a tensor that training updates (here `weight` =
# `gamma` and `bias` = `beta`); a *buffer* is a tensor a module stores and updates itself, not by
# gradients. Both go into the module's *state dict*, the dictionary of named tensors that
# `torch.save` writes and `load_state_dict` reads back. `nn.BatchNorm1d` keeps buffers: the
# running mean and variance (and a counter) it accumulates during training and uses in `eval()`
# mode instead of the batch's statistics. Below, each module is called on `x` once in `train()`
# mode and then in `eval()` mode: BN's outputs differ (its running statistics, after one update
# with momentum 0.1, are still far from this batch's), LN's are bit for bit the same, since it
# has nothing but the sample to compute from.

# %%
modes = state_and_modes(x)
assert modes.loc["nn.LayerNorm(4)", "train == eval"] and not modes.loc["nn.BatchNorm1d(4)", "train == eval"]
assert modes.loc["nn.LayerNorm(4)", "buffers"] == "(none)"
rounded(modes, 4)

# %% [markdown]
# **Why LN was invented.** Ba, Kiros and Hinton (2016) start from exactly this: BN's statistics
# come from the batch, so it needs a batch, and its output for one sample depends on the others.
# With a batch of 1, each feature has a single value, its variance over the batch is 0, and BN
# cannot train at all: PyTorch refuses. In a recurrent network (RNN), every time step would
# need its own statistics, and sequences have different lengths. LN computes everything from
# the one sample in front of it, so it works at any batch size, batch size 1 included, and the
# same at training and at test time:

# %%
try:
    nn.BatchNorm1d(4)(x[:1])  # one sample, in training mode
except ValueError as error:
    print("BatchNorm1d, batch of 1:", error)
print("LayerNorm, batch of 1:  ", nn.LayerNorm(4)(x[:1]).detach().numpy().round(4))

# %% [markdown]
# Notebook 03 (`03_layernorm_vs_batchnorm`) takes this contrast apart: batch size, train vs
# eval, padding, and Ba et al.'s table of invariances.
#
# ## First taste: LN of a 2 × 4 batch
#
# LN looks at **one sample at a time**. For each sample it computes the mean and the
# variance of that sample's own features, then
#
# $$y = \frac{x - \mathrm{E}[x]}{\sqrt{\mathrm{Var}[x] + \epsilon}} \cdot \gamma + \beta,
# \qquad \epsilon = 10^{-5},$$
#
# with the biased variance (divide by the number of features). `gamma` starts at 1 and
# `beta` at 0, and without them (as here) LN is just the fraction. Notebooks 01 and 02
# take the formula apart; here we only run it.
#
# Below, the same batch `x`. `helpers.layer_norm` is the
# set's own, written from scratch with the signature of `torch.nn.functional.layer_norm`;
# `compare` puts it next to PyTorch's.

# %%
y = helpers.layer_norm(x, normalized_shape=(4,))
print(y)
compare(y, F.layer_norm(x, normalized_shape=(4,)), name="helpers.layer_norm vs torch")

# %% [markdown]
# `close` means equal within float32's usual tolerance, `max_abs_diff` is the largest
# difference (0 when `exact`). The two rows of `y` print alike to 4 decimals, but they are not
# equal: they differ by up to $5.4 \cdot 10^{-6}$ (computed below in float64). Row 1 is
# 10 × row 0 + 5, so after centring it is 10 times row 0's, and its variance is 100 times
# (125 against 1.25). LN divides row 0 by $\sqrt{1.25 + \epsilon}$ and row 1 by
# $10\sqrt{1.25 + \epsilon / 100}$: the same up to `eps`, which weighs 100 times less in row 1.
# So LN does not see where a sample sits or how spread out it is, only the pattern of its
# features, as long as the spread is large next to `eps` (more on that below):

# %%
centred = x.double() - x.double().mean(-1, keepdim=True)
row0 = centred[0] / torch.sqrt(1.25 + torch.tensor(1e-5, dtype=torch.float64))
row1 = centred[1] / torch.sqrt(125 + torch.tensor(1e-5, dtype=torch.float64))
gap = (row1 - row0).abs().max().item()  # in float64: the exact effect of eps
assert 5e-6 < gap < 6e-6 and (y[1] - y[0]).abs().max().item() < 1e-5
print(f"largest difference between the rows, in float64: {gap:.1e}")

# %% [markdown]
#
# `group_stats` gives one row per group that LN normalizes: here, one row per sample, the
# mean and biased variance computed in float64.

# %%
names = ("sample", "feature")
stats = pd.concat({"input x": group_stats(x, dims=-1, names=names),
                   "output y": group_stats(y, dims=-1, names=names)}, axis=1)
rounded(stats, 6)  # 6 decimals; -0.0 shown as 0.0

# %% [markdown]
# Every output row has mean 0 and variance **almost** 1: LN divides by
# $\sqrt{\mathrm{Var}[x] + \epsilon}$, so the output's variance is
# $\mathrm{Var}[x] / (\mathrm{Var}[x] + \epsilon)$: $1.25 / 1.25001 = 0.999992$ for sample 0, and
# $125 / 125.00001 = 0.99999992$ for sample 1, which shows as 1.000000 at 6 decimals.

# %%
var_x, var_y = stats["input x"]["var"], stats["output y"]["var"]
assert (stats["output y"]["mean"].abs() < 1e-6).all()
assert ((var_y - var_x / (var_x + 1e-5)).abs() < 1e-6).all()
var_y.round(6)

# %% [markdown]
# ## See it: move one sample
#
# A seeded batch of 4 samples × 8 features. The sliders scale sample 0 (by a positive
# factor) and then shift it: sample 0 becomes `scale · x + shift`.
#
# - **left**: the inputs. Sample 0 (blue) moves; a pale band marks where it was; the axis
#   and the title follow the data.
# - **right**: LN's outputs, on a fixed axis. Sample 0's line stays on its pale band.
# - **table**: each sample's mean and standard deviation, before and after LN. Sample 0's
#   input mean follows the shift and its input std the scale; the outputs stay at 0 and 1.

# %%
# NBVAL_IGNORE_OUTPUT
# displays a widget: two sliders, their live figure and table
demo = shift_scale_demo(seed=0)
display(demo)

# %% [markdown]
# The same dashboard for a reader without a kernel (on GitHub, on nbviewer, or before you run
# anything), at shift 3.5 and scale 2.5: the input moves, its LayerNorm output stays where it was.

# %%
import matplotlib.pyplot as plt

demo.snapshot(shift=3.5, scale=2.5)
plt.show()

# %% [markdown]
# ## Check it: the same claim in numbers
#
# The picture says sample 0's output did not move. Here it is with `assert`s, on the
# widget's own batch (`demo.state` holds what the widget shows now).

# %%
x8 = demo.state["original_inputs"]  # the widget's batch: 4 samples x 8 features
moved = x8.clone()
moved[0] = 3.0 * x8[0] + 5.0  # scale sample 0 by 3, then shift it by 5

before = helpers.layer_norm(x8, (8,))
after = helpers.layer_norm(moved, (8,))

assert (moved[0] - x8[0]).abs().max() > 1.0  # sample 0's input really moved...
assert torch.allclose(after[0], before[0], atol=1e-5)  # ...its output did not
assert torch.equal(after[1:], before[1:])  # and the other samples are untouched: LN never mixes samples
print("all three hold")

# %% [markdown]
# The same for a few slider positions, read from `shift_scale_state`, the plain function
# behind the widget. The last row scales sample 0 by 0.001, far below the slider's range:

# %%
rows = []
for shift, scale in [(0.0, 1.0), (5.0, 1.0), (0.0, 4.0), (-5.0, 0.25), (0.0, 0.001)]:
    state = shift_scale_state(x8, shift, scale)
    table = state["table"]
    rows.append({
        "shift": shift, "scale": scale,
        "input mean": table.loc[0, "input mean"], "input std": table.loc[0, "input std"],
        "output std": table.loc[0, "output std"],
        "largest output change": (state["outputs"][0] - state["original_outputs"][0]).abs().max().item(),
    })
rounded(pd.DataFrame(rows), 4)

# %% [markdown]
# The invariance holds while the sample's spread is large next to `eps`: at the slider's
# smallest scale, 0.25, the output already moves in the fourth decimal. Scaling by $a$
# multiplies the variance by $a^2$, so the output becomes
# $(x - \mathrm{E}[x]) / \sqrt{\mathrm{Var}[x] + \epsilon / a^2}$: for $a = 0.001$,
# $\epsilon / a^2 = 10$ swamps a variance near 1 and the output shrinks toward 0. That is
# `eps` at work: it also keeps a sample whose features are all equal from giving 0 / 0.

# %%
a = 0.001
var0 = x8[0].double().var(unbiased=False)
expected_std = torch.sqrt(var0 / (var0 + 1e-5 / a**2)).item()
assert abs(rows[-1]["output std"] - expected_std) < 1e-4
round(expected_std, 4)

# %% [markdown]
# ## Your turn: LN of one token
#
# Write `my_layer_norm(x)` for a single token `x` of shape `(dim,)`, with no `gamma` or
# `beta`: the mean, the **biased** variance, then $(x - \mathrm{E}[x]) / \sqrt{\mathrm{Var}[x] + 10^{-5}}$.
# `check_layer_norm_one_token` runs it on 4 seeded tokens (easy ones first, then features that
# barely differ, then features that are all equal) and compares it with
# `torch.nn.functional.layer_norm`.
#
# As shipped, the function only centres, so the verdict is ❌ with a hint. Finish it and run
# the cell again until you see ✅.

# %%
def my_layer_norm(x, eps=1e-5):
    """LayerNorm of one token x, shape (dim,), without gamma and beta."""
    mean = x.mean()
    centred = x - mean
    return centred  # TODO: divide by sqrt(var + eps), with var the biased variance


check_layer_norm_one_token(my_layer_norm)

# %% [markdown]
# The checker knows the usual slips. `x.var()`, for one, divides by n − 1 (unbiased):

# %%
check_layer_norm_one_token(lambda x: (x - x.mean()) / torch.sqrt(x.var() + 1e-5))

# %% [markdown]
# Handing in PyTorch's own `F.layer_norm` does not count: while the checker runs, torch's norm
# functions and the set's own refuse to run, and the verdict says so.
#
# <details><summary>Solution</summary>
#
# ```python
# def my_layer_norm(x, eps=1e-5):
#     mean = x.mean()
#     var = ((x - mean) ** 2).mean()  # biased: divide by n, as LayerNorm does
#     return (x - mean) / torch.sqrt(var + eps)
# ```
#
# </details>

# %% [markdown]
# ## Summary
#
# - LN normalizes **each sample over its own features**: afterwards every sample has mean 0
#   and variance $\mathrm{Var}/(\mathrm{Var} + \epsilon)$, a hair under 1.
# - Shifting a sample, or scaling it by a positive factor, leaves its LN output unchanged as
#   long as its spread is large next to `eps`; the other samples are never affected.
# - The tools of the set: `helpers.layer_norm` and friends (drop-in for PyTorch's),
#   `helpers.lessons.group_stats.group_stats` (one row per normalized group), `helpers.exercises.checking.compare`
#   (exact / close / max difference) and `helpers.exercises.checking` exercises (instant feedback).
#
# Next: [`01_layernorm_from_the_formula.ipynb`](01_layernorm_from_the_formula.ipynb).
#
# ## References
#
# - J. L. Ba, J. R. Kiros, G. E. Hinton, *Layer Normalization*, 2016,
#   [arXiv:1607.06450](https://arxiv.org/abs/1607.06450). Its analysis section,
#   *Invariance under weights and data transformations* (Table 1 and equation 7), shows LN's
#   invariance to re-scaling a single training case and to re-centering the weight matrix
#   (which shifts all of a case's summed inputs by the same amount): the widget's two sliders.
# - PyTorch, [`torch.nn.LayerNorm`](https://docs.pytorch.org/docs/stable/generated/torch.nn.LayerNorm.html)
#   and [`torch.nn.functional.layer_norm`](https://docs.pytorch.org/docs/stable/generated/torch.nn.functional.layer_norm.html):
#   the formula, `eps=1e-5` and the biased variance.
# - [ipywidgets documentation](https://ipywidgets.readthedocs.io/): sliders, `Image`, `HTML` and
#   `continuous_update`.
# - The lesson this set grows from, in Chinese (its terms are in the glossary above).
