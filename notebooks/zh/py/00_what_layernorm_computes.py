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
# # 00 · 层归一化算的是什么
#
# **你将学到**：深层网络为什么需要归一化；批量归一化（BatchNorm，BN）和层归一化（LayerNorm，LN）是同一段代码，只是作用在不同的维度上；LN 的公式，由你亲手写出来；然后是 `gamma` 和 `beta`。[在 Colab 中打开](https://colab.research.google.com/github/layernorm-hands-on/layernorm-hands-on/blob/main/notebooks/zh/00_what_layernorm_computes.ipynb)
#
# 本套笔记本依据一篇中文课程（下称“原课程”），引用时给出原文。核心路线共三个笔记本，这是第一个。各节编号贯穿三个笔记本：第 1 到 8 节在笔记本 00 和 01 里，依次对应原课程的八个要点；第 9 到 13 节在笔记本 02 里，超出了原课程的范围。代码、图中标签和表格保持英文，术语表在末尾。

# %%
import matplotlib.pyplot as plt
import torch
from torch import nn

from helpers.exercises.layer_norm import check_layer_norm_last_dim
from helpers.widgets.deep_stack import deep_stack_demo

# %% [markdown] lesson_point=1
# ## 1 · 深层网络为什么需要它
#
# 原课程从深层序列模型讲起。*RNN*（循环神经网络）逐个读入句子里的 token，把状态从一步传到下一步。*Transformer* 一次读入全部 token，由一个个模块堆叠而成（笔记本 02 会搭建一个）。原课程说，在这类模型里，“随着训练推进，各层的输入分布不断变化，训练会变慢，甚至无法收敛”。
#
# LN *标准化*每一层的输出：减去均值，再除以标准差，让下一层的值处在同一尺度上，本笔记本末尾的小部件会展示这一点。它是否真能加速训练，是一个需要检验的说法，笔记本 02 的最后一节给出实验结果。

# %% [markdown] lesson_point=2
# ## 2 · BN 与 LN：同一段代码，作用在不同的维度上
#
# **BN** 对每个*特征*，在整个批次上做标准化（矩阵里的一列）。**LN** 对每个*样本*，在它自己的所有特征上做标准化（矩阵里的一行）。原课程说“假设我们有以下两个样本组成一个批次”，却没有给出例子，这里补上。

# %%
x = torch.tensor([[1.0, 2.0, 3.0],  # sample 0
                  [30.0, 10.0, 20.0]])  # sample 1


def standardize(x, dim):
    mean = x.mean(dim=dim, keepdim=True)
    var = ((x - mean) ** 2).mean(dim=dim, keepdim=True)  # n: the number of values averaged
    return (x - mean) / torch.sqrt(var + 1e-5)  # 1e-5 and keepdim: see "The formula" below


print("BN, each column:\n", standardize(x, dim=0))
print("LN, each row:\n", standardize(x, dim=-1))

# %% [markdown]
# 批次里只有两个样本时，BN 把每一列都变成了 −1 和 +1：每个值都离这两个数的均值正好一个标准差，所以只剩下“哪个样本更大”这一点信息。
#
# LN 保留了每个样本自己各个特征之间的大小顺序，但丢掉了样本自身的尺度。`[1, 2, 3]` 和 `[30, 10, 20]` 都变成了 −1.22、0 和 1.22，只是顺序各不相同。样本 1 比样本 0 大十倍这件事，LN 之后就看不出来了。
#
# 而且 BN 对样本 0 的输出还取决于样本 1：

# %%
other = x.clone()
other[1] = torch.tensor([0.0, 50.0, 7.0])  # replace sample 1 only
print("BN, sample 0's output changed:", not torch.equal(standardize(other, 0)[0], standardize(x, 0)[0]))
print("LN, sample 0's output changed:", not torch.equal(standardize(other, -1)[0], standardize(x, -1)[0]))
# PyTorch's BN and LN give the same. affine=False: no learned scale and shift (gamma and beta, below)
assert torch.allclose(standardize(x, 0), nn.BatchNorm1d(3, affine=False)(x), atol=1e-4)
assert torch.allclose(standardize(x, -1), nn.LayerNorm(3, elementwise_affine=False)(x), atol=1e-4)

# %% [markdown]
# LN 只需要眼前这一个样本：批次多大都行，训练和测试时算法完全一样。正因如此，Ba、Kiros 和 Hinton（2016）为 RNN 设计了 LN：RNN 每个 token 走一步，如果用 BN，每一步都需要单独的批次统计量。
#
# 在用大批量训练的图像卷积网络（比如 ResNet）里，BN 仍然是更好的选择。那里 BN 的每个统计量都汇集了一个通道在整批所有图像、所有像素上的值，成千上万个，所以很稳定。测试时 BN 使用训练中累计好的固定平均值，于是它变成一个固定的缩放和平移，可以并入前面的卷积层，不额外花费任何计算。LN 则在测试时也必须为每个样本计算均值和方差。在 ImageNet 上，Wu 和 He（2018）报告：用 BN 的 ResNet-50 错误率为 23.6%，用 LN 的为 25.3%。BN 的更多内容见深入专题 [11](../11_batchnorm_in_depth.ipynb)。

# %% [markdown] lesson_point=3
# ## 3 · 公式
#
# $$y = \frac{x - \mathrm{E}[x]}{\sqrt{\mathrm{Var}[x] + \epsilon}} \cdot \gamma + \beta$$
#
# *token* 是句子里的一个词（或词的一部分），由 `dim` 个数字表示，这些数字就是它的*特征*。LN 把每个 token 当作上一节里的一个样本。$\mathrm{E}[x]$ 和 $\mathrm{Var}[x]$ 是这些特征的均值和**有偏**方差。有偏的意思是除以 `dim`，而不是 `dim - 1`（`unbiased=False`）。$\epsilon = 10^{-5}$ 放在根号**里面**，原课程说它“用于避免除以零的情况”：特征全部相等时结果是 0，而不是 0 / 0。$\gamma$ 和 $\beta$ 每个特征各一个，通过反向传播学习，初始值分别是 1 和 0。
#
# 写成代码时，`x.mean(dim=-1, keepdim=True)` 在最后一维上求平均，并把这一维保留下来，长度为 1。对形状为 `(batch, seq_len, dim)` 的一批数据，均值的形状就是 `(batch, seq_len, 1)`，于是 `x - mean` 从每个 token 的特征里减去的是这个 token 自己的均值。

# %% [markdown]
# ### 动手练习：自己写出来
#
# 写一个 `my_layer_norm(x, gamma, beta, eps=1e-5)`：在 `x` 的最后一维上做 LN，`gamma` 和 `beta` 的形状都是 `(dim,)`。上一节的函数 `standardize` 已经完成了大部分工作。检查器会试六组输入，其中一些专门用来发现常见错误，并告诉你还缺什么。

# %%
def my_layer_norm(x, gamma, beta, eps=1e-5):
    return torch.zeros_like(x)  # TODO: the formula above


check_layer_norm_last_dim(my_layer_norm)

# %% [markdown]
# <details><summary>参考答案</summary>
#
# ```python
# def my_layer_norm(x, gamma, beta, eps=1e-5):
#     mean = x.mean(dim=-1, keepdim=True)  # E[x]: one per token
#     var = ((x - mean) ** 2).mean(dim=-1, keepdim=True)  # Var[x], biased: divide by dim
#     return (x - mean) / torch.sqrt(var + eps) * gamma + beta
# ```
#
# </details>

# %% [markdown]
# ### 把 LayerNorm 写成模块
#
# 在模型里，LN 是一个模块。它把 $\gamma$ 和 $\beta$ 存成 `nn.Parameter`：反向传播会为这种张量算出梯度，优化器会更新它们。它的 `forward` 就是你刚写的函数，所以请先做完上面的练习，再看下一个单元。PyTorch 把 $\gamma$ 叫作 `weight`，把 $\beta$ 叫作 `bias`，这个模块也用这两个名字，这样它就能载入从 `nn.LayerNorm` 保存下来的权重。

# %%
class LayerNorm(nn.Module):
    """LayerNorm over the last dim, with a learned scale (gamma) and shift (beta) per feature."""

    def __init__(self, dim, eps=1e-5):
        super().__init__()
        self.eps = eps
        self.weight = nn.Parameter(torch.ones(dim))  # gamma, starts at 1
        self.bias = nn.Parameter(torch.zeros(dim))  # beta, starts at 0

    def forward(self, x):
        mean = x.mean(dim=-1, keepdim=True)
        var = x.var(dim=-1, unbiased=False, keepdim=True)  # biased: divide by dim
        return (x - mean) / torch.sqrt(var + self.eps) * self.weight + self.bias

# %% [markdown]
# 现在在原课程的形状 `(batch, seq_len, dim)` 上把它和 `nn.LayerNorm` 比一比，两者用同一组随机的 $\gamma$ 和 $\beta$。模块的 `state_dict` 是一个字典，按名字存放它要保存的张量。两个模块的名字必须相同，输出必须相同，对 `x`、$\gamma$ 和 $\beta$ 的梯度也必须相同。

# %%
torch.manual_seed(0)
ours, torchs = LayerNorm(4), nn.LayerNorm(4)
with torch.no_grad():  # random gamma and beta, the same in both
    ours.weight.normal_()
    ours.bias.normal_()
torchs.load_state_dict(ours.state_dict())
x = (torch.randn(2, 3, 4) * 3 + 5).requires_grad_()  # (batch, seq_len, dim)
out1, out2 = ours(x), torchs(x)
upstream = torch.randn(2, 3, 4)  # a gradient arriving from the layers above
grads1 = torch.autograd.grad(out1, [x, ours.weight, ours.bias], upstream)
grads2 = torch.autograd.grad(out2, [x, torchs.weight, torchs.bias], upstream)
print("state_dict keys:", list(ours.state_dict()), list(torchs.state_dict()))
print("same outputs:", torch.allclose(out1, out2, atol=1e-5), "| same gradients for x, gamma and beta:",
      all(torch.allclose(a, b, atol=1e-4) for a, b in zip(grads1, grads2, strict=True)))

# %% [markdown] lesson_point=4
# ## 4 · 均值 0、方差 1，然后是 gamma 和 beta
#
# 原课程说：“经过 LN 后，每个 Token 的分布被调整为均值为 0、方差为 1”。新建的 `LayerNorm(4)` 从 $\gamma = 1$、$\beta = 0$ 开始，它的输出在每个 token 上均值都是 0、方差都是 1（保留 4 位小数），与原课程说的均值 0、方差 1 一致。

# %%
ln = LayerNorm(4)
y = ln(x).detach()  # detach: only the values, no gradient
print("mean of each token:\n", y.mean(dim=-1).abs().round(decimals=4))
print("variance of each token:\n", y.var(dim=-1, unbiased=False).round(decimals=4))

# %% [markdown]
# 为什么先标准化、再缩放？$\gamma$ 和 $\beta$ 按特征学习，让网络给每个特征设定下一层需要的尺度和中心，比如深入 tanh（S 形、两端平坦）曲线的程度。初始值是 1 和 0，所以 LN 起初就是单纯的标准化。如果每个特征的 $\gamma$ 和 $\beta$ 都相同，每个 token 的均值就变成 $\beta$，标准差变成 $\gamma$，下面的图会展示这一点。训练之后，每个特征有自己的 $\gamma$ 和 $\beta$，一个 token 的均值和标准差也就不再恰好是 $\beta$ 和 $\gamma$ 了。

# %% [markdown]
# ### 动手看：深层堆叠，加 LN 与不加 LN
#
# 八层 `Linear → tanh`：左图不加 LN，右图在每个 tanh 前加 LN。每条曲线是进入某一层 tanh 的值，颜色按层区分，右侧的色条标出层号。一个滑块缩放权重（训练中权重也会变大变小），另两个给所有特征设置 $\gamma$ 和 $\beta$。松开滑块后重绘。
#
# 请留意哪些地方不动。权重的缩放会改变不加 LN 的那张图，却不改变加了 LN 的那张图，因为 LN 会把输入的任何缩放都除掉。在那张图里，只有 $\gamma$ 和 $\beta$ 会让值移动。

# %%
# NBVAL_IGNORE_OUTPUT
# displays a widget: three sliders and their live figure
demo = deep_stack_demo()
demo

# %% [markdown]
# 权重缩放为 0.5，$\gamma = 2$，$\beta = 0.5$。不加 LN 时（左图 without LN），第 8 层的值几乎全都缩到了零附近。加了 LN（右图 with LN），每一层都以 0.5 为中心，标准差（图中的 std）为 2，有少量值超出了 ±5（图中 beyond the axis 标出了比例）。$\gamma$ 这么大，会把许多值推到 tanh 平坦的两端，笔记本 01 会解释这一点。

# %%
demo.snapshot(gain=0.5, gamma=2.0, beta=0.5)
plt.show()

# %% [markdown]
# ## 术语表：原课程的术语
#
# | 英文（图中、代码中） | 中文 |
# |---|---|
# | Layer / Batch Normalization (LN / BN) | 层归一化 / 批量归一化 |
# | mean, variance, std | 均值、方差、标准差 |
# | learnable parameter; scale, shift (gamma, beta) | 可学习参数；缩放、平移（γ、β） |
# | activation function, non-linearity | 激活函数、非线性 |
# | per token, per sentence; normalize | 以 token 为单位、以句子为单位；归一化方式 |
# | weights scaled by, weight scale; layer, block | 权重的缩放倍数；层、模块（色条上的编号） |
# | centre of z, spread of z | z 的中心、z 的离散程度 |
# | value entering tanh; fraction of values | 进入 tanh 的值；值所占的比例 |
# | on the flat tails; beyond the axis | 落在 tanh 平坦的两端；超出坐标轴范围（未画出） |
# | running statistics, buffer | 滑动统计量、缓冲区 |
# | residual stream; branch output scale; what attention sees | 残差流；子层输出的缩放倍数；注意力看到的输入 |

# %% [markdown]
# ## 小结
#
# - BN 和 LN 是同一段代码，只是作用在不同的维度上。LN 对每个样本单独做标准化，丢掉了样本自身的尺度。在用大批量训练的卷积网络里，BN 仍然更好。
# - LN 就是均值、有偏方差、$\epsilon$ 放在根号里面，然后 $\gamma$ 缩放、$\beta$ 平移，每个特征各一个。
#
# 下一步：[01](01_before_the_activation_per_token.ipynb)，然后是 [02](02_layernorm_in_a_transformer.ipynb)。再往后是深入专题（英文）：[10](../10_how_a_claim_is_tested.ipynb) 如何检验一个说法，[11](../11_batchnorm_in_depth.ipynb) BN，[12](../12_where_the_norm_goes.ipynb) 归一化放在哪里，[13](../13_does_it_speed_up_training.ipynb) 能否加速训练，[14](../14_backward_numerics_speed.ipynb) 反向传播与数值，[15](../15_the_normalization_family.ipynb) 归一化家族，[16](../16_sequences_padding_and_masks.ipynb) 序列与掩码，[17](../17_layernorm_in_your_training_code.ipynb) 你的训练代码。

# %% [markdown]
# ## 参考文献
#
# - J. L. Ba, J. R. Kiros, G. E. Hinton, *Layer Normalization*, 2016, [arXiv:1607.06450](https://arxiv.org/abs/1607.06450)。
# - Y. Wu, K. He, *Group Normalization*, ECCV 2018, Table 1（ResNet-50，ImageNet，每个 GPU 32 张图像），[arXiv:1803.08494](https://arxiv.org/abs/1803.08494)。

