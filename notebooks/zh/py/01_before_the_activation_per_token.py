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
# **你将学到**：LN 为什么放在激活函数之前；以 token 为单位还是以句子为单位；LN 没有滑动统计量；原课程的代码，结果逐位一致。

# %%
import matplotlib.pyplot as plt
import torch
from torch import nn

from helpers.exercises.layer_norm import check_sentence_layer_norm
from helpers.widgets.activation_input import activation_input_demo
from helpers.widgets.token_or_sentence import token_or_sentence_demo

# %% [markdown] lesson_point=5
# ## 5 · LN 放在激活函数之前
#
# 原课程写道：“LN 和 BN 一样，通常用在激活函数之前。……激活函数的作用是引入非线性，让神经网络能够学习复杂的模式和函数。如果把 LN 放在激活函数之后，它就会在已经非线性的输出上再做标准化，这可能破坏网络的表达能力和非线性特性。”下面以 tanh 为例，输入远离均值 0、标准差 1：

# %%
torch.manual_seed(0)
linear, ln = nn.Linear(16, 16), nn.LayerNorm(16)
z = linear(torch.randn(256, 16) * 4 + 3)  # 256 tokens; Linear outputs far from mean 0, std 1

ln_first = torch.tanh(ln(z))  # the lesson's order: Linear -> LN -> tanh
ln_last = ln(torch.tanh(z))  # the other order: Linear -> tanh -> LN
print(f"tanh outputs beyond ±0.97, LN first: {(ln_first.abs() > 0.97).float().mean():.0%}, "
      f"LN last: {(torch.tanh(z).abs() > 0.97).float().mean():.0%}")

# %% [markdown]
# 超过 ±0.97 之后 tanh 几乎是平的（梯度不到 0.06）：它前面的权重几乎学不到东西。先做 LN，交给 tanh 的是标准化后的 token，落在它弯曲的那一段；后做 LN，只能重新缩放 tanh 留下的结果，被平坦两端抹掉的差别再也回不来了。
#
# ### 动手看：进入 tanh、ReLU 和 GELU 的值
#
# 滑块移动 `z` 的中心和离散程度。左图：先 LN（LN -> tanh）；右图：后 LN（tanh -> LN）。蓝线（enters tanh）是进入激活函数的值，红线（leaves the pair）是离开这一对运算的值。

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
# 一批句子的形状是 `(batch, seq_len, dim)`。`nn.LayerNorm(normalized_shape)` 在**最后** `len(normalized_shape)` 个维度上求平均；前面那些维度的每一个下标是一个*组*，各有自己的均值和方差；$\gamma$ 和 $\beta$ 的形状就是 `normalized_shape`：

# %%
torch.manual_seed(42)
batch, seq_len, dim = 2, 3, 4
x = torch.rand(batch, seq_len, dim)  # the lesson's batch: 2 sentences x 3 tokens x 4 features

for shape in [(dim,), (seq_len, dim)]:
    means = x.mean(dim=tuple(range(-len(shape), 0)))  # one mean per group
    print(f"normalized_shape={shape}: {means.numel()} groups, gamma of shape {tuple(nn.LayerNorm(shape).weight.shape)}")

# %% [markdown]
# 以 token 为单位时，每个 token 单独归一化；以句子为单位时，一个句子的 12 个值放在一起归一化，而且 $\gamma$ 每个位置各有一项，所以只适用于一种句子长度。原课程说 LN “可以选择以 sentence 或 token 为单位进行归一化，具体取决于任务需求和应用场景”；Transformer 都以 token 为单位（填充和掩码见深入专题 [16](../16_sequences_padding_and_masks.ipynb)）。
#
# ### 动手看：放大一个 token
#
# 6 个 token × 256 个特征；滑块放大 token 2（红线，灰线是其他 token）。左图：每个 token 的输入（input）；右图：它们经过 LN 的输出（output）。以句子为单位时，被放大的 token 会散开，把其他 token 挤到一起。

# %%
# NBVAL_IGNORE_OUTPUT
# displays a widget: a dropdown, a slider and their live figure
demo = token_or_sentence_demo()
demo

# %% [markdown]
# 以句子为单位，token 2 放大 5 倍：

# %%
demo.snapshot(unit="per sentence: normalized_shape=(seq_len, dim)", scale=5.0)
plt.show()

# %% [markdown] lesson_point=7
# ## 7 · 没有滑动统计量
#
# *buffer*（缓冲区）是模块自己更新（不经过梯度）、并和权重一起保存的张量。BN 在训练时累计 `running_mean` 和 `running_var`，在 `eval()` 模式下使用它们。原课程指出：“LN 不需要像 BN 那样在训练时累计 running_mean 和 running_var 值。”LN 的一切都从眼前这个 token 算出：

# %%
tokens = x.reshape(-1, dim)  # the 6 tokens as a (6, 4) batch
for norm in (nn.BatchNorm1d(dim), nn.LayerNorm(dim)):
    train_out = norm.train()(tokens)
    same = torch.equal(train_out, norm.eval()(tokens))
    print(f"{type(norm).__name__}: buffers {[n for n, _ in norm.named_buffers()]}, train == eval: {same}")

# %% [markdown] lesson_point=8
# ## 8 · 原课程的代码，原样照搬
#
# 除了在中文注释旁加了英文，代码一字未改（注释“以句子为单词”是原课程的笔误，应为“以句子为单位”）。`test01` 用 `nn.LayerNorm` 两种方式各做一次；`test02` 手工计算，并打印均值和方差。`elementwise_affine=False, bias=False` 关掉了 $\gamma$ 和 $\beta$。

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
# 与原课程打印的结果（“程序执行结果”）一字不差；有一个测试专门比对二者。

# %% [markdown]
# ## 动手练习：以句子为单位，任意批量大小
#
# `test02` 里的 `.view(2, 1, 1)` 只适用于批量为 2 的情况。让 `my_sentence_layer_norm(x)` 适用于**任意**批量大小和句子长度（不带 $\gamma$、$\beta$）。初始代码就是 `test02` 的写法。

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
#
# </details>
#
# ## 小结
#
# - LN 放在激活函数之前，激活函数的输入就落在弯曲的那一段；放在之后，被平坦段抹掉的差别就找不回来了。
# - `normalized_shape=dim`：以 token 为单位；`(seq_len, dim)`：以句子为单位。LN 没有滑动统计量。
#
# 下一步：[02 · Transformer 中的层归一化](02_layernorm_in_a_transformer.ipynb)。
#
# ## 参考文献
#
# - S. Ioffe, C. Szegedy, *Batch Normalization*, 2015, 第 3.2 节（归一化放在非线性之前），[arXiv:1502.03167](https://arxiv.org/abs/1502.03167).
# - PyTorch，[`torch.nn.LayerNorm`](https://docs.pytorch.org/docs/stable/generated/torch.nn.LayerNorm.html) 和 [`torch.nn.BatchNorm1d`](https://docs.pytorch.org/docs/stable/generated/torch.nn.BatchNorm1d.html)。
