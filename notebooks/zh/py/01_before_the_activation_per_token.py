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

helpers.set_language("zh")

# %% [markdown]
# # 01 · 放在激活函数之前，以 token 为单位
#
# **你将学到**：LN 为什么放在激活函数之前；以 token 为单位还是以句子为单位；LN 没有滑动统计量；原课程的代码，结果逐位一致。[在 Colab 中打开](https://colab.research.google.com/github/layernorm-hands-on/layernorm-hands-on/blob/main/notebooks/zh/01_before_the_activation_per_token.ipynb)

# %%
import matplotlib.pyplot as plt
import torch
from torch import nn

from helpers.exercises.layer_norm import check_sentence_layer_norm
from helpers.widgets.activation_input import activation_input_demo

# %% [markdown] lesson_point=5
# ## 5 · LN 放在激活函数之前
#
# 原课程写道：“LN 和 BN 一样，通常用在激活函数之前。……激活函数的作用是引入非线性，让神经网络能够学习复杂的模式和函数。如果把 LN 放在激活函数之后，它就会在已经非线性的输出上再做标准化，这可能破坏网络的表达能力和非线性特性。”原课程对这个理由只是一笔带过。下面以 tanh 为例给出一个具体的理由，所用输入的分布远离均值 0、标准差 1：

# %%
torch.manual_seed(0)
linear, ln = nn.Linear(16, 16), nn.LayerNorm(16)
z = linear(torch.randn(256, 16) * 4 + 3)  # 256 tokens, far from mean 0 and std 1

ln_first = torch.tanh(ln(z))  # the lesson's order: Linear -> LN -> tanh
no_ln = torch.tanh(z)  # no LN before tanh (as when LN comes after it)
for name, t in [("LN first", ln_first), ("no LN before tanh", no_ln)]:
    print(f"{name}: {(t.abs() > 0.97).float().mean():.0%} beyond ±0.97, average slope {(1 - t**2).mean():.2f}")

# %% [markdown]
# tanh 的输出一旦超出 ±0.97，曲线就几乎是平的。它的斜率 $1 - \tanh^2$ 会乘进反向传播到它前面那些权重的梯度里（打印出的 average slope 就是平均斜率）。在这个例子里，先做 LN 时的平均斜率大约是不做 LN 时的两倍。把 LN 放在 tanh 之后，只能重新缩放 tanh 留下的结果，被平坦两端抹掉的差别再也回不来了。

# %% [markdown]
# ### 动手看：进入 tanh、ReLU 和 GELU 的值
#
# 同样的效果，可以自己调。滑块移动 `z` 的中心和离散程度；下拉菜单把 tanh 换成 ReLU（负值变零）或 GELU（平滑的 ReLU）。左图先 LN，右图后 LN。蓝线：进入激活函数的值；红线：LN 与激活函数合起来的输出。

# %%
# NBVAL_IGNORE_OUTPUT
# displays a widget: a dropdown, two sliders and their live figure
demo = activation_input_demo()
demo

# %% [markdown]
# tanh，`z` 以 2 为中心、标准差为 3：右图中 `z` 的大部分落在了 tanh 平坦的两端（图中的 saturated，即饱和）。

# %%
demo.snapshot(activation="tanh", shift=2.0, scale=3.0)
plt.show()

# %% [markdown]
# 顺序对*训练*有什么影响：见深入专题 [12](../12_where_the_norm_goes.ipynb)。

# %% [markdown] lesson_point=6
# ## 6 · `normalized_shape` 决定了什么
#
# 一批句子的形状是 `(batch, seq_len, dim)`。`nn.LayerNorm(normalized_shape)` 在**最后** `len(normalized_shape)` 个维度上求平均；前面那些维度上的每一种下标组合构成一个*组*，每组有自己的均值和方差；$\gamma$ 和 $\beta$ 的形状就是 `normalized_shape`：

# %%
torch.manual_seed(42)
batch, seq_len, dim = 2, 3, 4
x = torch.rand(batch, seq_len, dim)  # the lesson's batch: 2 sentences x 3 tokens x 4 features

for shape in [(dim,), (seq_len, dim)]:
    gamma = nn.LayerNorm(shape).weight
    print(f"normalized_shape={shape}: {x.numel() // gamma.numel()} groups, gamma of shape {tuple(gamma.shape)}")

# %% [markdown]
# 以 token 为单位：2 × 3 = 6 组。以句子为单位：2 组，每组 12 个值，而且 $\gamma$ 每个位置各有一项，只适用于一种句子长度（试试 `nn.LayerNorm((3, 4))(torch.rand(2, 5, 4))`）。Transformer 一律以 token 为单位（填充，以及一个放大单个 token 的滑块：见深入专题 [16](../16_sequences_padding_and_masks.ipynb)）。

# %% [markdown] lesson_point=7
# ## 7 · 没有滑动统计量
#
# *buffer*（缓冲区）是模块自己更新（不经过梯度）、并和权重一起保存的张量。BN 在训练时累计 `running_mean` 和 `running_var`，在 `eval()` 模式下使用它们。原课程指出：“LN 不需要像 BN 那样在训练时累计 running_mean 和 running_var 值。”LN 一个 buffer 都没有：

# %%
tokens = x.reshape(-1, dim)  # the 6 tokens as a (6, 4) batch
for norm in (nn.BatchNorm1d(dim), nn.LayerNorm(dim)):
    train_out = norm.train()(tokens)
    same = torch.equal(train_out, norm.eval()(tokens))
    print(f"{type(norm).__name__}: buffers {[n for n, _ in norm.named_buffers()]}, train == eval: {same}")

# %% [markdown]
# 只看过一个批次，BN 的滑动统计量仍接近初始值（0 和 1），所以 `eval()` 会改变它的输出；LN 的输出不可能改变。

# %% [markdown] lesson_point=8
# ## 8 · 原课程的代码，原样照搬
#
# 除了在中文注释旁加了英文，代码一字未改（注释“以句子为单词”是原课程的笔误，应为“以句子为单位”）。`test01` 用 `nn.LayerNorm` 按两种单位各算一次；`test02` 手工计算，并打印均值和方差。`elementwise_affine=False` 关掉了 $\gamma$ 和 $\beta$（`bias=False` 是多余的）；`if __name__ == '__main__':` 在笔记本里同样为真。

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
# 上面的输出与原课程打印的结果（“程序执行结果”）一字不差（`tests/test_lesson.py` 专门比对二者）。`test01` 打印的张量和 `test02` 的相同：`nn.LayerNorm` 算的正是手写的公式。

# %% [markdown]
# ## 动手练习：以句子为单位，任意批量大小
#
# `test02` 里的 `.view(2, 1, 1)` 只适用于批量大小为 2 的情况。让 `my_sentence_layer_norm(x)` 适用于**任意**批量大小（不带 $\gamma$、$\beta$）。初始代码照搬了 `test02` 的写法，所以检查故意不会通过。

# %%
def my_sentence_layer_norm(x, eps=1e-5):
    mean = torch.mean(x, dim=(1, 2))
    var = torch.var(x, dim=(1, 2), unbiased=False)
    return (x - mean.view(2, 1, 1)) / torch.sqrt(var.view(2, 1, 1) + eps)  # TODO: any batch size


check_sentence_layer_norm(my_sentence_layer_norm)

# %% [markdown]
# <details><summary>参考答案</summary>
#
# ```python
# def my_sentence_layer_norm(x, eps=1e-5):
#     mean = x.mean(dim=(1, 2), keepdim=True)  # (batch, 1, 1): lines up with x
#     var = ((x - mean) ** 2).mean(dim=(1, 2), keepdim=True)
#     return (x - mean) / torch.sqrt(var + eps)
# ```
#
# （`mean.view(-1, 1, 1)` 也可以。）
#
# </details>

# %% [markdown]
# ## 小结
#
# - LN 放在激活函数之前，激活函数的输入就落在弯曲的那一段；放在之后，被平坦段抹掉的差别就找不回来了。
# - `normalized_shape=dim`：以 token 为单位；`(seq_len, dim)`：以句子为单位。LN 没有滑动统计量。
#
# 下一步：[02 · Transformer 中的层归一化](02_layernorm_in_a_transformer.ipynb)。

# %% [markdown]
# ## 参考文献
#
# - S. Ioffe, C. Szegedy, *Batch Normalization*, 2015, 第 3.2 节（归一化放在非线性之前），[arXiv:1502.03167](https://arxiv.org/abs/1502.03167)。
# - PyTorch，[`torch.nn.LayerNorm`](https://docs.pytorch.org/docs/stable/generated/torch.nn.LayerNorm.html) 和 [`torch.nn.BatchNorm1d`](https://docs.pytorch.org/docs/stable/generated/torch.nn.BatchNorm1d.html)。
