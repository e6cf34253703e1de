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

helpers.set_language("zh")

# %% [markdown]
# # 01 · 放在激活函数之前，以 token 为单位
#
# **你将学到**：原课程为什么把 LN 放在激活函数之前，其中哪些是对的；以 token 为单位还是以句子为单位，各在什么时候用；LN 为什么没有滑动统计量。[在 Colab 中打开](https://colab.research.google.com/github/layernorm-hands-on/layernorm-hands-on/blob/main/notebooks/zh/01_before_the_activation_per_token.ipynb)

# %%
import matplotlib.pyplot as plt
import torch
from torch import nn

from helpers.exercises.layer_norm import check_sentence_layer_norm
from helpers.widgets.activation_input import activation_input_demo

# %% [markdown] lesson_point=5
# ## 5 · 原课程：LN 放在激活函数之前
#
# 原课程写道：“LN 和 BN 一样，通常用在激活函数之前。”它给出的理由是：如果把 LN 放在激活函数之后，它“会在已经非线性的输出上再做标准化，这可能破坏网络的表达能力”。
#
# 下面给出一个具体的理由，也说明它的局限。tanh 的输出超出 ±0.97 之后（输入超过约 ±2.1，`atanh(0.97)` 是 2.09），曲线几乎是平的，我们把这两段叫作 tanh *平坦的两端*。在这里，不同的输入得到几乎相同的输出。`tanh(3)` 是 0.995，`tanh(6)` 是 1.000，相差 3 的两个输入几乎分不出来了，经过它们的梯度也都接近 0。
#
# 什么时候会这样？当进入 tanh 的值离散程度很大时，比如训练中某一层的权重变大了。下面 Linear 的输入已经在同一个尺度上。它的权重先取 PyTorch 的初始值，再放大 8 倍。

# %%
torch.manual_seed(0)
h = torch.randn(256, 16)  # the previous layer's output: 256 tokens of 16 features, on one scale
ln = nn.LayerNorm(16)
for growth in (1, 8):
    linear = nn.Linear(16, 16)
    with torch.no_grad():
        linear.weight *= growth  # weights that grew in training
    z = linear(h)
    first, plain = ((t.abs() > 0.97).float().mean() for t in (torch.tanh(ln(z)), torch.tanh(z)))
    print(f"weights x{growth}: on tanh's flat tails, {first:.0%} of values with LN first, {plain:.0%} with no LN")

# %% [markdown]
# 权重变大、又不加 LN 时，大部分值落在了平坦的两端。先做 LN 时，不管权重多大，这个比例都很小，因为 LN 去掉了输入的尺度。
#
# 它的局限：用初始权重时，先做 LN 反而比不加 LN 有*更多*的值落在两端。而且 $\gamma$ 可以学着把值重新推到两端。所以这是“LN 放在 tanh 之前可能有帮助”的一个理由，而不是“总是有帮助”的规律。把 LN 放在 tanh 之后，只能重新缩放 tanh 留下的结果，被平坦两端抹掉的差别再也回不来了。
#
# ReLU 在正的一侧没有平坦段。先做 LN 会把每个 token 的中心移到 0，所以 ReLU 会把每个 token 大约一半的特征置零。$\beta$ 可以改变这个比例。

# %%
for beta in (0.0, 0.5):  # beta added after LN, as a learned beta would
    print(f"ReLU after LN, beta {beta}: {(torch.relu(ln(z) + beta) == 0).float().mean():.0%} of values zeroed")

# %% [markdown]
# ### 动手看：进入 tanh、ReLU 和 GELU 的值
#
# 滑块移动 `z`（Linear 的输出）的中心和离散程度；下拉菜单把 tanh 换成 ReLU（负值变零）或 GELU（平滑的 ReLU）。左图先 LN，右图后 LN。蓝线是进入激活函数的值，红线是 LN 与激活函数合起来的输出。
#
# 请留意哪些地方不动。左图在任何设置下都一样：LN 会去掉任何中心和离散程度，所以 `a * z + c` 的 LN 就是 `z` 的 LN。右图里，激活函数看到的就是 `z` 本身。选 ReLU 时，先做 LN 在任何设置下都把每个 token 大约一半的值置零；后做 LN 时，被置零的比例从一个都没有到全部都有可能，取决于中心的位置。

# %%
# NBVAL_IGNORE_OUTPUT
# displays a widget: a dropdown, two sliders and their live figure
demo = activation_input_demo()
demo

# %% [markdown]
# tanh，`z` 以 2 为中心、标准差为 3。左图中，tanh 的输出堆积在 ±1 附近，形成两个红色的峰。右图中，`z` 的大部分落在 +1 一侧平坦的一端，tanh 对它们给出几乎相同的输出；LN 再把这一个值变成那根高高的红色尖峰。被 tanh 抹掉的差别，放在后面的 LN 无法恢复。

# %%
demo.snapshot(activation="tanh", shift=2.0, scale=3.0)
plt.show()

# %% [markdown]
# 训练时顺序重要吗？事先做过的实验训练了一些小 MLP，分别把 LN 放在 tanh 和 ReLU 之前和之后。实验结果在笔记本 02 末尾的卡片上，实验是怎么做的见深入专题 [12](../12_where_the_norm_goes.ipynb)。

# %% [markdown] lesson_point=6
# ## 6 · `normalized_shape` 决定了什么
#
# 一批句子的形状是 `(batch, seq_len, dim)`。`nn.LayerNorm(normalized_shape)` 的参数 `normalized_shape`，是共用一个均值和方差的那些值的形状。LN 在**最后** `len(normalized_shape)` 个维度上求平均；前面那些维度上的每一种下标组合构成一个*组*，每组有自己的均值和方差。$\gamma$ 和 $\beta$ 的形状就是 `normalized_shape`。
#
# 下面把原课程的这批数据按两种单位各归一化一次，同时把句子 0 的第 2 个 token 放大 100 倍。第 0 个 token 的输出会变吗？

# %%
torch.manual_seed(42)
batch, seq_len, dim = 2, 3, 4
x = torch.rand(batch, seq_len, dim)  # the lesson's batch: 2 sentences x 3 tokens x 4 features
loud = x.clone()
loud[0, 2] *= 100  # sentence 0, token 2: a loud token
for shape in [(dim,), (seq_len, dim)]:
    norm = nn.LayerNorm(shape)
    print(f"normalized_shape={shape}: {x.numel() // norm.weight.numel()} groups, gamma of shape",
          f"{tuple(norm.weight.shape)}, token 0 changed: {not torch.equal(norm(loud)[0, 0], norm(x)[0, 0])}")

# %% [markdown]
# 以 token 为单位：2 × 3 = 6 组。以句子为单位：2 组，每组 12 个值。原课程说，选哪一种“取决于任务需求和应用场景”。
#
# 该用哪一种，什么时候用？Transformer 以 token 为单位做归一化，原因有四个。
#
# - 句子长短不一。以句子为单位时，`normalized_shape` 把长度也固定了，所以 `nn.LayerNorm((3, 4))` 不接受形状为 `(2, 5, 4)` 的批次。
# - 一个批次会把短句子填充（padding）到同一长度。以句子为单位时，填充的值会混进每个真实 token 的均值和方差。
# - 因果模型根据前面的 token 预测下一个 token。以句子为单位时，每个 token 的均值和方差都包含了后面的 token，等于泄露了未来的信息。
# - 以句子为单位时，一个很大的 token 会改变所有其他 token 的结果，上面第 0 个 token 就是这样。以 token 为单位时，每个 token 的输出只取决于它自己。
#
# 标准的 Transformer 都不以句子为单位做归一化：GPT-2、BERT 和 LLaMA 都是对每个 token 在它的特征上做归一化。对整个样本做归一化，适合形状固定的输入，比如图像。图像模型 PoolFormer（Yu 等，2022）就是这样做的，用只分一组的 `nn.GroupNorm`，在每张图像的所有通道和像素上做归一化。真实模型在哪些维度上归一化，以及填充和掩码，见深入专题 [16](../16_sequences_padding_and_masks.ipynb)。

# %% [markdown] lesson_point=7
# ## 7 · 没有滑动统计量
#
# 原课程指出：“LN 不需要像 BN 那样在训练时累计 running_mean 和 running_var 值。”这两个量是 BN 的*滑动统计量*，即训练中见过的各批次均值和方差的平均值，`num_batches_tracked` 记录见过多少个批次。在用于测试的 `eval()` 模式下，BN 用它们代替当前批次自己的统计量；`.train()` 切换回训练模式。它们是 *buffer*（缓冲区）：模块自己更新（不经过梯度）、并和权重一起保存的张量。LN 一个也没有。

# %%
tokens = x.reshape(-1, dim)  # the 6 tokens as a (6, 4) batch
for norm in (nn.BatchNorm1d(dim), nn.LayerNorm(dim)):
    train_out = norm.train()(tokens)
    same = torch.equal(train_out, norm.eval()(tokens))
    print(f"{type(norm).__name__}: buffers {[n for n, _ in norm.named_buffers()]}, train == eval: {same}")

# %% [markdown]
# 只看过一个批次，BN 的滑动统计量从初始值（0 和 1）出发，只朝这个批次的统计量走了十分之一（即它的 `momentum`，0.1），所以 `eval()` 会改变它的输出。LN 的输出不可能改变。

# %% [markdown] lesson_point=8
# ## 8 · 原课程的代码，原样照搬
#
# 原课程的代码，除了在中文注释旁加了英文，一字未改（注释“以句子为单词”是原课程的笔误，应为“以句子为单位”）。`test01` 用 `nn.LayerNorm` 按两种单位各算一次；`test02` 手工计算，并打印均值和方差。`elementwise_affine=False` 关掉了 $\gamma$ 和 $\beta$，所以 `bias=False` 是多余的。`if __name__ == '__main__':` 在笔记本里同样为真。

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
# 上面的输出与原课程打印的结果（“程序执行结果”）逐位一致。`test01` 打印的张量和 `test02` 的相同，因为 `nn.LayerNorm` 算的正是手写的公式。与其用眼睛比对 24 个数，不如让计算机来比，这里比的是以 token 为单位的结果。

# %%
per_token = nn.LayerNorm(normalized_shape=dim, eps=1e-5, elementwise_affine=False)(batch_inputs)  # test01's
by_hand = (batch_inputs - batch_inputs.mean(dim=2, keepdim=True)) / torch.sqrt(batch_inputs.var(dim=2, unbiased=False, keepdim=True) + 1e-5)
print("per token, test01 equals test02:", torch.allclose(per_token, by_hand, atol=1e-6))

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
# - 先做 LN，即使权重变大，tanh 的输入也不会落到平坦的两端；不过权重小的时候，它反而让更多的值落在那里。训练实验的结果见笔记本 02 的卡片。
# - `normalized_shape=dim` 以 token 为单位，Transformer 都这样做；`(seq_len, dim)` 以句子为单位。
# - LN 没有滑动统计量，所以训练时和 `eval()` 模式下算的完全一样。
#
# 下一步：[02 · Transformer 中的层归一化](02_layernorm_in_a_transformer.ipynb)。

# %% [markdown]
# ## 参考文献
#
# - S. Ioffe, C. Szegedy, *Batch Normalization*, 2015, 第 3.2 节（归一化放在非线性之前），[arXiv:1502.03167](https://arxiv.org/abs/1502.03167)。
# - W. Yu 等, *MetaFormer Is Actually What You Need for Vision*, CVPR 2022（PoolFormer），[arXiv:2111.11418](https://arxiv.org/abs/2111.11418)。
# - PyTorch，[`torch.nn.LayerNorm`](https://docs.pytorch.org/docs/stable/generated/torch.nn.LayerNorm.html) 和 [`torch.nn.BatchNorm1d`](https://docs.pytorch.org/docs/stable/generated/torch.nn.BatchNorm1d.html)。

