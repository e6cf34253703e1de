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
# 这个单元格不必细读，它让本套笔记本的 `helpers` 包可以导入。
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
# 本笔记本回答三个问题。原课程为什么把 LN 放在激活函数之前，这个说法有几分道理？以 token 为单位和以句子为单位做归一化，各在什么时候用？LN 为什么没有移动平均值？[在 Colab 中打开](https://colab.research.google.com/github/layernorm-hands-on/layernorm-hands-on/blob/main/notebooks/zh/01_before_the_activation_per_token.ipynb)

# %%
import matplotlib.pyplot as plt
import torch
from torch import nn

from helpers.exercises.layer_norm import check_sentence_layer_norm
from helpers.widgets.activation_input import activation_input_demo

# %% [markdown] lesson_point=5
# ## 5 · 原课程说 LN 放在激活函数之前
#
# 原课程写道，“LN 和 BN 一样，通常用在激活函数之前”。Ioffe 和 Szegedy（2015）提出 BN 时就是这样放的。原课程的理由是，LN 放在激活函数之后，就“会在已经非线性的输出上再做标准化，这可能破坏网络的表达能力”。
#
# 原课程没有演示这种破坏，本节末尾的训练实验也没有发现它。下面给出另一个具体的理由，说明 LN 为什么该放在 tanh 之前，也指出这个理由的局限。tanh 的输出绝对值超过 0.97 以后，曲线几乎是平的，这时输入的绝对值大约超过 2.1（`atanh(0.97)` 等于 2.09）。这两段叫作 tanh 的饱和区。那里 tanh 的斜率小于 1 − 0.97² = 0.059，梯度经过它只剩不到原来的 6%。落进饱和区的输入即使相差很大，输出也几乎相同。`tanh(3)` 是 0.995，`tanh(6)` 是 1.000，输入相差 3，输出却几乎一样。
#
# 什么时候会这样？进入 tanh 的值分散得很开时，比如训练中某层的权重变大了。下面把 Linear 层的输出记作 z，即激活前的值。不加 LN 时它直接进入 tanh，先做 LN 时进入 tanh 的是 LN(z)。Linear 层的输入已在同一个尺度上，权重先取 PyTorch 的初始值，再换一组放大到 8 倍的新权重。

# %%
torch.manual_seed(0)
h = torch.randn(256, 16)  # 上一层的输出：256 个 token，各 16 个特征，尺度相同
ln = nn.LayerNorm(16)
for growth in (1, 8):
    linear = nn.Linear(16, 16)
    with torch.no_grad():
        linear.weight *= growth  # 模拟训练中变大的权重
    z = linear(h)
    first, plain = ((t.abs() > 0.97).float().mean() for t in (torch.tanh(ln(z)), torch.tanh(z)))
    print(f"weights x{growth}: on tanh's flat tails, {first:.0%} of values with LN first, {plain:.0%} with no LN")

# %% [markdown]
# 权重变大又不加 LN 时，大部分值落进了饱和区。先做 LN 时，不论权重多大，这个比例都很小，因为 LN 去掉了输入的尺度。
#
# 局限在于，用初始权重时，Linear 层输出的标准差约为 0.6，LN 会把它放大到 1，所以先做 LN 时落进饱和区的值反而比不加 LN 时**更多**。而且 $\gamma$ 在训练中也可能变大，把值重新推向两端。所以 LN 放在 tanh 之前可能有帮助，但不一定。反过来，LN 放在 tanh 之后只能重新缩放 tanh 的输出，被饱和区抹掉的差别找不回来。
#
# ReLU 在正半轴上没有饱和区。先做 LN 会把每个 token 的中心移到 0，于是 ReLU 把每个 token 大约一半的特征置为零，$\beta$ 可以改变这个比例。下面的单元格沿用上面最后得到的 `z`（权重放大 8 倍），并给所有特征加上同一个 $\beta$。

# %%
for beta in (0.0, 0.5):  # 所有特征共用一个 beta，加在 LN 之后，相当于把 LN 的 β 设成这个值
    print(f"ReLU after LN, beta {beta}: {(torch.relu(ln(z) + beta) == 0).float().mean():.0%} of values zeroed")

# %% [markdown]
# ### 交互图 · 进入 tanh、ReLU 和 GELU 的值
#
# 两个滑块调节 Linear 层输出 `z` 的均值和标准差。它由 512 个宽度为 64 的 token 组成，从以此为均值和标准差的正态分布中随机抽取。下拉菜单切换激活函数，其中 GELU 是平滑版的 ReLU，Transformer 中常用。左图先做 LN 再激活，右图先激活再做 LN。蓝色曲线是进入激活函数的值，红色曲线是 LN 和激活函数合起来的输出。图中英文标签的中文对照见第一个笔记本的[术语表](00_what_layernorm_computes.ipynb)。
#
# 不管滑块怎么拖，左图都不变（换激活函数时才会变）。LN 会去掉输入的均值和尺度，所以对任意 a > 0，`a * z + c` 和 `z` 经过 LN 的结果相同。选 ReLU 时，左图（先做 LN）总把每个 token 大约一半的值置为零。右图（后做 LN）中激活函数的输入就是 `z` 本身，置零的比例从零到全部都有可能，取决于均值在哪里。

# %%
# NBVAL_IGNORE_OUTPUT
# 显示交互图（widget）：一个下拉菜单、两个滑块和随之重画的图
demo = activation_input_demo()
demo

# %% [markdown]
# 下图选的是 tanh，`z` 的均值为 2，标准差为 3。左图 LN 在前，红色曲线的峰在 ±0.95 附近，刚好在饱和区之前，tanh 在那里把 LN 输出中较大的值挤到了一起。超过 ±0.97 的只有 4%。右图中 `z` 约有 48% 落在 +1 一侧的饱和区，tanh 给它们的输出几乎一样，LN 再把这个值变成那根高高的红色尖峰。另有约 9% 落在另一侧的饱和区，标题里的百分比把两侧都算在内。红字说明，`z` 有 17% 落在 ±5 之外，超出了坐标轴，没有画出来。

# %%
demo.snapshot(activation="tanh", shift=2.0, scale=3.0)
plt.show()

# %% [markdown]
# 那么真正训练时，这个顺序重要吗？我们用小型 MLP（多层感知机，由 `Linear` 层和激活函数堆叠而成）做了实验。每个 MLP 有 8 层，每层 16 个单元（即神经元），学习模仿一个权重固定的随机网络。LN 分别放在 tanh 或 ReLU 之前和之后，每种做法用 10 个随机种子各训练一次。最终损失相差约 1%，无论哪边高，最多也只差 2%，实验分不出两种顺序的高下。所以“通常用在激活函数之前”只是一种惯例，这些实验既不能证实它，也不能否定它（深入专题 [12](../12_where_the_norm_goes.ipynb)）。

# %% [markdown] lesson_point=6
# ## 6 · `normalized_shape` 决定了什么
#
# 一批句子的形状是 `(batch, seq_len, d_model)`，其中 `d_model` 是宽度。`nn.LayerNorm(normalized_shape)` 的参数 `normalized_shape` 指定哪些值放在一起求均值和方差，写的就是这些值合起来的形状。LN 在**最后** `len(normalized_shape)` 个轴上求平均，前面那些轴上的每个位置（比如每个句子里的每个 token）各成一组，各算各的均值和方差。$\gamma$ 和 $\beta$ 的形状就是 `normalized_shape`。
#
# 下面取原课程代码（见第 8 节）随机生成的那批数据，把句子 0 的 token 2 放大 100 倍，得到另一批。两种做法都把原数据和放大后的数据各归一化一次，看同一句里 token 0 的输出变不变。

# %%
torch.manual_seed(42)
batch, seq_len, d_model = 2, 3, 4
x = torch.rand(batch, seq_len, d_model)  # 原课程的那批数据：2 个句子 × 3 个 token × 4 个特征
loud = x.clone()
loud[0, 2] *= 100  # 把句子 0 的 token 2 变成特别大的 token
for shape in [(d_model,), (seq_len, d_model)]:
    norm = nn.LayerNorm(shape)
    print(f"normalized_shape={shape}: {x.numel() // norm.weight.numel()} groups, gamma of shape",
          f"{tuple(norm.weight.shape)}, token 0 changed: {not torch.equal(norm(loud)[0, 0], norm(x)[0, 0])}")

# %% [markdown]
# 以 token 为单位时，共有 2 × 3 = 6 组，每组 4 个值，放大的 token 不影响 token 0（False）。以句子为单位时，共有 2 组，每组 12 个值，token 0 的输出也跟着变了（True）。原课程只说要根据“任务需求和应用场景”来选。
#
# 那么实际该选哪一种？Transformer 都以 token 为单位做归一化，理由有四条。
#
# - 句子长短不一。以句子为单位的 `nn.LayerNorm` 只适用于一种长度，`nn.LayerNorm((3, 4))` 就不接受形状为 `(2, 5, 4)` 的批次，即使不用 γ 和 β 也一样。它的 γ 和 β 对每个位置的每个特征各有一个值。自己动手按句子算均值和方差，则对任意长度都可行（见下面的练习）。
# - 一个批次要把短句子填充到同一长度。以句子为单位时，填充的值会混进每个真实 token 的均值和方差。
# - 因果模型根据前面的 token 预测下一个 token。以句子为单位时，除最后一个 token 外，每个 token 的均值和方差都包含了它后面的 token，等于泄露了未来的信息。
# - 以句子为单位时，一个特别大的 token 会改变其他所有 token 的输出，上面的 token 0 就是这样。以 token 为单位时，每个 token 的输出只取决于它自己。
#
# GPT-2 和 BERT 用 LN 对每个 token 在它自己的特征上做归一化，LLaMA 用的则是 RMSNorm（见笔记本 02）。
#
# 以句子为单位只适合没有填充、模型也不是因果模型的情况，用 `nn.LayerNorm` 时还要求输入长度相同，语言模型很少满足这些条件。即使满足，第四条的代价依然存在。图像模型中也有给每个样本只算一套均值和方差，范围是一张图的所有通道和所有像素，`nn.GroupNorm(1, C)` 就是这样做的。它等于 `normalized_shape` 取 `(C, H, W)` 的 LN，只是它的 γ 和 β 每个通道各有一个值。真实模型在哪些轴上归一化，怎样处理填充、掩码和图像，见深入专题 [16](../16_sequences_padding_and_masks.ipynb)。

# %% [markdown] lesson_point=7
# ## 7 · 没有移动平均值
#
# 原课程指出，“LN 不需要像 BN 那样在训练时累计 running_mean 和 running_var 值”。这两个量是 BN 在训练中不断更新的移动平均值。每训练完一个批次，它们与这个批次的均值和**无偏**方差（分母是个数减一）之间的差距就缩小十分之一，这个比例就是 BN 的 `momentum`，即 0.1。测试时切换到 `eval()` 模式，BN 就用移动平均值代替当前批次的均值和方差，所以输出与训练时不同。LN 用不着移动平均值，因为它的统计量来自样本本身，测试时也现成可得，所以训练时和 `eval()` 模式下的计算完全相同。BN 的移动平均值实际怎样起作用，见深入专题 [11](../11_batchnorm_in_depth.ipynb)。

# %% [markdown] lesson_point=8
# ## 8 · 原课程的代码，原样照搬
#
# 下面是原课程的代码，除了补充的注释，一字未改。`test01` 用 `nn.LayerNorm` 按两种方式各算一次，`test02` 手工计算，并打印均值和方差。注释里的“以句子为单词”是原课程的笔误，应为“以句子为单位”。代码里有两种 dim，不要混淆。变量 `dim` 是原课程对宽度的叫法，这里是 4。`torch.mean` 的关键字参数 `dim=` 则指定沿哪个轴求平均，`dim=2` 是三个轴中的最后一个，即特征所在的轴。`elementwise_affine=False` 关掉了 $\gamma$ 和 $\beta$。

# %%
import torch.nn as nn  # noqa: I001 (原课程先导入 torch.nn)
import torch


torch.manual_seed(42)
batch, seq_len, dim = 2, 3, 4
batch_inputs = torch.rand(size=(batch, seq_len, dim))


def test01():
    # 以 Token 为单位
    layer_norm = nn.LayerNorm(normalized_shape=dim, eps=1e-5, elementwise_affine=False, bias=False)
    output = layer_norm(batch_inputs)
    print(output)

    # 以句子为单词
    layer_norm = nn.LayerNorm(normalized_shape=(seq_len, dim), eps=1e-5, elementwise_affine=False, bias=False)
    output = layer_norm(batch_inputs)
    print(output)


def test02():
    # 以 Token 为单位
    mean = torch.mean(batch_inputs, dim=2)
    var = torch.var(batch_inputs, dim=2, unbiased=False)
    print('均值:', mean, '方差:', var)
    outputs = (batch_inputs - mean.view(2, 3, 1)) / torch.sqrt(var.view(2, 3, 1) + 1e-5)
    print(outputs)

    # 以句子为单词
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
# 以上输出与原课程“程序执行结果”下印出的内容逐位相同。`test01` 打印的张量与 `test02` 的相同，因为 `nn.LayerNorm` 算的就是手写的那个公式。与其用眼睛比对 24 个数，不如让计算机来比。下面比较以 token 为单位的结果。

# %%
per_token = nn.LayerNorm(normalized_shape=dim, eps=1e-5, elementwise_affine=False)(batch_inputs)  # 即 test01 的做法
by_hand = (batch_inputs - batch_inputs.mean(dim=2, keepdim=True)) / torch.sqrt(batch_inputs.var(dim=2, unbiased=False, keepdim=True) + 1e-5)
print("per token, nn.LayerNorm equals the formula:", torch.allclose(per_token, by_hand, atol=1e-6))

# %% [markdown]
# ## 动手练习 · 以句子为单位，批量大小任意
#
# `test02` 里的 `.view(2, 1, 1)` 只在批量大小为 2 时可用。请改写 `my_sentence_layer_norm(x)`，让它适用于**任意**批量大小和句子长度，不需要 $\gamma$ 和 $\beta$。初始代码照搬 `test02` 的写法，故意通不过检查。

# %%
def my_sentence_layer_norm(x, eps=1e-5):
    mean = torch.mean(x, dim=(1, 2))
    var = torch.var(x, dim=(1, 2), unbiased=False)
    return (x - mean.view(2, 1, 1)) / torch.sqrt(var.view(2, 1, 1) + eps)  # TODO：改成适用于任意批量大小


check_sentence_layer_norm(my_sentence_layer_norm)

# %% [markdown]
# <details><summary>参考答案</summary>
#
# ```python
# def my_sentence_layer_norm(x, eps=1e-5):
#     mean = x.mean(dim=(1, 2), keepdim=True)  # 形状 (batch, 1, 1)，能与 x 对齐
#     var = ((x - mean) ** 2).mean(dim=(1, 2), keepdim=True)
#     return (x - mean) / torch.sqrt(var + eps)
# ```
#
# 写成 `mean.view(-1, 1, 1)` 也可以。
#
# </details>

# %% [markdown]
# ## 小结
#
# - 先做 LN，即使权重变大，tanh 的输入也不会大量落进饱和区。不过权重小的时候，它反而让更多的值落进去。训练好的 MLP 分不出两种顺序的高下。
# - `normalized_shape=d_model` 以 token 为单位做归一化，Transformer 都这样做。`(seq_len, d_model)` 则以句子为单位，只适合没有填充、模型也不是因果模型的情况。
# - LN 没有移动平均值，所以训练时和 `eval()` 模式下的计算完全相同。
#
# 下一个笔记本是 [02 · Transformer 中的层归一化](02_layernorm_in_a_transformer.ipynb)。

# %% [markdown]
# ## 参考文献
#
# - S. Ioffe, C. Szegedy, *Batch Normalization*, 2015, 第 3.2 节（归一化放在非线性之前）, [arXiv:1502.03167](https://arxiv.org/abs/1502.03167).
# - PyTorch, [`torch.nn.LayerNorm`](https://docs.pytorch.org/docs/stable/generated/torch.nn.LayerNorm.html), [`torch.nn.BatchNorm1d`](https://docs.pytorch.org/docs/stable/generated/torch.nn.BatchNorm1d.html).
