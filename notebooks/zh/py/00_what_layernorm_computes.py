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
# # 00 · 层归一化算的是什么
#
# 本笔记本先说明深层网络为什么需要归一化，再用同一段代码写出批量归一化（BatchNorm，BN）和层归一化（LayerNorm，LN），两者只是沿不同的轴（axis，PyTorch 的参数名是 dim）计算。然后你会亲手写出 LN 的公式，再看 `gamma` 和 `beta` 的作用。[在 Colab 中打开](https://colab.research.google.com/github/layernorm-hands-on/layernorm-hands-on/blob/main/notebooks/zh/00_what_layernorm_computes.ipynb)
#
# 核心路线共三个笔记本，这是第一个。它们围绕一篇讲 LN 的中文短教程（无标题，无署名）展开，下文称原课程，引用时给出原文。第 1 到 8 节在笔记本 00 和 01 中，对应原课程的八个要点。第 9 到 11 节在笔记本 02 中，把 LN 放进 Transformer。图中文字和打印输出是英文，中英对照见末尾的术语表。检查器的反馈、交互图的标题和滑块，以及核心路线末尾的实验结果卡片是中文。

# %%
import matplotlib.pyplot as plt
import torch
from torch import nn

from helpers.exercises.layer_norm import check_layer_norm_last_dim
from helpers.widgets.deep_stack import deep_stack_demo

# %% [markdown] lesson_point=1
# ## 1 · 原课程说深层网络需要归一化
#
# 原课程从深层序列模型讲起。RNN（循环神经网络）逐个读入句子中的 token（词或词的一部分），每读一个就把状态往下传一步。Transformer 则一次读入所有 token，由许多块堆叠而成。原课程指出，在这类模型中“随着训练推进，各层的输入分布不断变化，训练会变慢，甚至无法收敛”。
#
# LN 把送进来的每一组值标准化，即减去均值、再除以标准差，让后面的层拿到的值始终在同一个尺度上。这里的归一化就是这种标准化，不是把值压缩到零和一之间。
#
# 笔记本 02 末尾的实验结果表（下文称卡片）在小模型上检验了这个说法。加了 LN，LSTM 需要的训练步数少了约 45%，在复制任务上，用 Pre-LN 的小型 Transformer 能在不加归一化就会失败的学习率下训练成功。至于训练步数，小型 RNN 加不加 LN、Transformer 用 Pre-LN 还是不加归一化，实验都分不出高下。原课程给出的理由是每个单元激活前的值在训练中会漂移，加不加 LN，这种漂移的大小实验也分不出差别（深入专题 [13](../13_does_it_speed_up_training.ipynb)）。

# %% [markdown] lesson_point=2
# ## 2 · BN 和 LN 是同一段代码，只是换了轴
#
# 把一个批次排成矩阵，每行是一个样本，每列是一个特征。BN 对每个特征在整个批次上做标准化，处理的是一列。LN 对每个样本在它自己的全部特征上做标准化，处理的是一行。原课程说要举个例子，“假设我们有以下两个样本组成一个批次”，后面却没有给出。下面补上。

# %%
x = torch.tensor([[1.0, 2.0, 3.0],  # 样本 0
                  [30.0, 10.0, 20.0]])  # 样本 1


def standardize(x, axis):
    mean = x.mean(dim=axis, keepdim=True)
    var = ((x - mean) ** 2).mean(dim=axis, keepdim=True)  # 除以 n，即参与平均的值的个数
    return (x - mean) / torch.sqrt(var + 1e-5)  # 1e-5 和 keepdim 的作用见下面“公式”一节


print("BN, each column:\n", standardize(x, axis=0))
print("LN, each row:\n", standardize(x, axis=-1))

# %% [markdown]
# 批次里只有两个样本时，BN 把每一列都变成 −1 和 +1。两个数离均值都恰好是一个标准差，标准化之后只剩下哪个样本更大这一点信息。
#
# LN 保留了每个样本内部各特征的大小顺序，却丢掉了样本本身的均值和尺度。`[1, 2, 3]` 和 `[30, 10, 20]` 都变成了 −1.22、0 和 1.22，只是顺序不同。两个样本的均值 2 和 20 相差十倍，经过 LN 就看不出来了。$\gamma$ 和 $\beta$ 也找不回它们，因为这两个参数对所有样本都一样。
#
# 此外，样本 0 经过 BN 的结果还取决于批次里的另一个样本。把样本 1 换掉试试。

# %%
other = x.clone()
other[1] = torch.tensor([0.0, 50.0, 7.0])  # 只换掉样本 1
print("BN, sample 0's output changed:", not torch.equal(standardize(other, 0)[0], standardize(x, 0)[0]))
print("LN, sample 0's output changed:", not torch.equal(standardize(other, -1)[0], standardize(x, -1)[0]))
# 与 PyTorch 的 BN 和 LN 结果相同。affine=False 表示不带可学习的 gamma 和 beta（见下文）
assert torch.allclose(standardize(x, 0), nn.BatchNorm1d(3, affine=False)(x), atol=1e-4)
assert torch.allclose(standardize(x, -1), nn.LayerNorm(3, elementwise_affine=False)(x), atol=1e-4)

# %% [markdown]
# 可见 BN 的结果变了，LN 的没变。LN 只需要眼前这一个样本，所以批量大小随意，训练和测试时的计算也完全一样。Ba、Kiros 和 Hinton（2016）提出 LN，看中的正是这两点，也是为了用在 RNN 上。RNN 每读一个 token 走一步，用 BN 就得每一步各统计一套均值和方差，而测试序列比训练序列长时，多出的步没有统计量可用。
#
# 不过在用大批量训练的图像卷积网络（如 ResNet）中，BN 通常仍是首选。卷积网络里的特征叫作通道。BN 给每个通道算一套统计量，用的是这个通道在所有图像、所有像素上的值，数以千计，所以很稳定。BN 在测试时怎样计算，在 ImageNet 上表现如何，见深入专题 [11](../11_batchnorm_in_depth.ipynb)。

# %% [markdown] lesson_point=3
# ## 3 · 公式
#
# $$y = \frac{x - \mathrm{E}[x]}{\sqrt{\mathrm{Var}[x] + \epsilon}} \cdot \gamma + \beta$$
#
# token 在模型里表示为一组数，即它的特征。特征的个数叫作模型的宽度，代码里写作 `d_model`。LN 处理每个 token 的方式，和上一节处理每个样本相同。$\mathrm{E}[x]$ 和 $\mathrm{Var}[x]$ 是这些特征的均值和**有偏**方差。有偏是指除以 `d_model`，而不是除以 `d_model - 1`（`unbiased=False`）。
#
# 缩放参数 $\gamma$ 和平移参数 $\beta$ 每个特征各有一个，通过反向传播学习，初始值分别是 1 和 0。
#
# $\epsilon = 10^{-5}$ 放在根号**里面**，原课程说它“用于避免除以零的情况”。特征全都相等时方差为零，有了它，标准化的结果是 0 而不是 0 / 0，输出就等于平移参数。
#
# 写成代码时，`x.mean(dim=-1, keepdim=True)` 沿最后一个轴求平均，并保留这个轴，长度变为 1。对形状为 `(batch, seq_len, d_model)` 的一批数据，均值的形状就是 `(batch, seq_len, 1)`。计算 `x - mean` 时，PyTorch 用广播机制把长度为 1 的这个轴扩展到所有特征上，于是每个特征都减去所在 token 自己的均值。

# %% [markdown]
# ### 动手练习 · 写出 LN
#
# 写一个函数 `my_layer_norm(x, gamma, beta, eps=1e-5)`，在 `x` 的最后一个轴上做 LN，其中 `gamma` 和 `beta` 的形状都是 `(d_model,)`。上一节的 `standardize` 函数已经做了大部分工作。检查器用七组输入测试，并告诉你还差什么。最后一组传入 `eps=0.1`，所以要用参数 `eps`，不要直接写 1e-5 这个数。

# %%
def my_layer_norm(x, gamma, beta, eps=1e-5):
    return torch.zeros_like(x)  # TODO：照上面的公式实现


check_layer_norm_last_dim(my_layer_norm)

# %% [markdown]
# <details><summary>参考答案</summary>
#
# ```python
# def my_layer_norm(x, gamma, beta, eps=1e-5):
#     mean = x.mean(dim=-1, keepdim=True)  # E[x]，每个 token 一个
#     var = ((x - mean) ** 2).mean(dim=-1, keepdim=True)  # 有偏的 Var[x]，除以 d_model
#     return (x - mean) / torch.sqrt(var + eps) * gamma + beta
# ```
#
# </details>

# %% [markdown]
# ### 把 LayerNorm 写成模块
#
# 在模型里，LN 是一个模块。它把 $\gamma$ 和 $\beta$ 存为 `nn.Parameter`，这类张量在反向传播中得到梯度，由优化器更新。模块的 `forward` 就是你刚写的函数。PyTorch 把 $\gamma$ 叫作 `weight`，把 $\beta$ 叫作 `bias`，这个模块也沿用这两个名字，以便载入 `nn.LayerNorm` 保存的权重。

# %%
class LayerNorm(nn.Module):
    """LayerNorm over the last axis, with a learned scale (gamma) and shift (beta) per feature."""

    def __init__(self, d_model, eps=1e-5):
        super().__init__()
        self.eps = eps
        self.weight = nn.Parameter(torch.ones(d_model))  # gamma，初始为 1
        self.bias = nn.Parameter(torch.zeros(d_model))  # beta，初始为 0

    def forward(self, x):
        mean = x.mean(dim=-1, keepdim=True)
        var = x.var(dim=-1, unbiased=False, keepdim=True)  # 有偏方差，除以 d_model
        return (x - mean) / torch.sqrt(var + self.eps) * self.weight + self.bias

# %% [markdown]
# 下面在原课程的形状 `(batch, seq_len, d_model)` 上把它和 `nn.LayerNorm` 对比，两者装入同一组随机的 $\gamma$ 和 $\beta$。模块的 `state_dict`（状态字典）按名字存放它要保存的张量。两者的键名、输出以及对 `x`、$\gamma$ 和 $\beta$ 的梯度都应当相同。

# %%
torch.manual_seed(0)
ours, torchs = LayerNorm(4), nn.LayerNorm(4)
with torch.no_grad():  # 两边用同一组随机的 gamma 和 beta
    ours.weight.normal_()
    ours.bias.normal_()
torchs.load_state_dict(ours.state_dict())
x = (torch.randn(2, 3, 4) * 3 + 5).requires_grad_()  # (batch, seq_len, d_model)
out1, out2 = ours(x), torchs(x)
upstream = torch.randn(2, 3, 4)  # 假想的上游梯度（从后面各层反传回来）
grads1 = torch.autograd.grad(out1, [x, ours.weight, ours.bias], upstream)
grads2 = torch.autograd.grad(out2, [x, torchs.weight, torchs.bias], upstream)
print("state_dict keys:", list(ours.state_dict()), list(torchs.state_dict()))
print("same outputs:", torch.allclose(out1, out2, atol=1e-5), "| same gradients for x, gamma and beta:",
      all(torch.allclose(a, b, atol=1e-4) for a, b in zip(grads1, grads2, strict=True)))

# %% [markdown] lesson_point=4
# ## 4 · 均值 0、方差 1，然后是 gamma 和 beta
#
# 严格地说，只有标准化这一步的结果才是均值为 0、方差为 1（方差的精确值是 $\mathrm{Var}[x] / (\mathrm{Var}[x] + \epsilon)$）。再乘以 $\gamma$、加上 $\beta$ 之后，均值和方差就由这两个参数决定了。原课程说“经过 LN 后，每个 Token 的分布被调整为均值为 0、方差为 1”，指的是这两个参数取初始值的情形。新建的 `LayerNorm(4)` 从 $\gamma = 1$、$\beta = 0$ 开始，所以它的输出保留 4 位小数后，每个 token 的均值为 0，方差为 1。

# %%
ln = LayerNorm(4)
y = ln(x).detach()  # detach 只取数值，不带梯度
print("mean of each token:\n", y.mean(dim=-1).abs().round(decimals=4))
print("variance of each token:\n", y.var(dim=-1, unbiased=False).round(decimals=4))

# %% [markdown]
# 为什么先标准化，再缩放？标准化让下一层不受前面权重尺度的影响。$\gamma$ 和 $\beta$ 每个特征各有一个，靠训练学出来。有了它们，网络就能按下一层的需要，给每个特征换上合适的尺度和中心，比如决定这个特征有多少值落进 tanh 的弯曲段，甚至落进饱和区（tanh 两端几乎平坦的部分）。如果所有特征共用同一个 $\gamma$ 和 $\beta$，每个 token 的均值就是 $\beta$，标准差就是 $|\gamma|$。训练之后各特征的参数不再相同，这就不成立了。

# %% [markdown]
# ### 交互图 · 深层网络里加不加 LN
#
# 这是八层的 `Linear → tanh` 网络，左图不加 LN，右图在每个 tanh 之前加 LN。每条曲线是进入某一层 tanh 的值的分布，颜色表示层号（见右侧色条）。纵轴是这一层的值落进横轴上每一小段的比例。第一个滑块缩放权重，模拟训练中权重的变化，另两个给所有特征设定 $\gamma$ 和 $\beta$。输入是 512 个宽度为 64 的 token，从标准正态分布中随机抽取。
#
# 拖动权重滑块，左图会变，右图却不变。权重放大或缩小多少倍，进入 LN 的值也跟着变多少倍，LN 会把这个倍数除掉。右图中只有 $\gamma$ 和 $\beta$ 能让这些值移动。

# %%
# NBVAL_IGNORE_OUTPUT
# 显示交互图（widget）：三个滑块和随之重画的图
demo = deep_stack_demo()
demo

# %% [markdown]
# 下图中权重缩放到 0.5 倍，$\gamma = 2$，$\beta = 0.5$。不加 LN 时，每经过一层，值的标准差大约减半，到第 8 层几乎全缩到了零附近。这些很小的值正负各半，落进 0 两侧的两个小段里，所以后面几层的峰值只有 0.5 左右。加了 LN 之后，不论权重多大，每一层的全部值都以 0.5 为中心，标准差为 2。红字统计的是落在 ±5 之外、超出坐标轴的值。第 3 层约有 1.5%，四舍五入显示为 2%，其他各层也差不多。$\gamma$ 这么大，会把每层约 31% 的值推进 tanh 的饱和区，笔记本 01 会解释这为什么不好。
#
# 注意两幅图的纵轴刻度不同，每幅图各自确定纵轴范围。右图的值分散得宽，所以峰值低，约为 0.025，只有左图的二十分之一。

# %%
demo.snapshot(gain=0.5, gamma=2.0, beta=0.5)
plt.show()

# %% [markdown]
# ## 术语表
#
# 本套笔记本沿用原课程的术语。最后一列是 d2l-zh（《动手学深度学习》）的译法，“无”表示没有专门的译名。
#
# | 英文 | 本套笔记本 | d2l-zh |
# |---|---|---|
# | Layer Normalization (LN) | 层归一化 | 层规范化 |
# | Batch Normalization (BN) | 批量归一化 | 批量规范化 |
# | normalize / standardize | 归一化、标准化 | 规范化、标准化 |
# | token / feature / sample | token、特征、样本 | 词元、特征、样本 |
# | unit | 单元（神经元） | 隐藏单元 |
# | batch / batch size | 批次、批量大小 | 小批量、批量大小 |
# | biased variance | 有偏方差（除以 n） | 无 |
# | scale, shift (gamma, beta) | 缩放、平移 | 拉伸参数、偏移参数 |
# | flat tails (of tanh) | 饱和区 | 无 |
# | running statistics | 移动平均值 | 移动平均 |
# | train mode, eval mode | 训练模式、评估模式 | 训练模式、预测模式 |
# | module (nn.Module) | 模块 | 块 |
# | Transformer block / sub-layer | 块、子层 | 块、子层 |
# | MLP sub-layer | MLP 子层 | 基于位置的前馈网络 |
# | residual connection / residual stream | 残差连接、残差流 | 残差连接、无 |
# | attention / causal mask / padding | 注意力、因果掩码、填充 | 注意力、掩蔽、填充 |
# | learning rate / warm-up / dropout | 学习率、学习率预热、dropout | 学习率、预热、暂退法 |
# | MLP / RNN | MLP、RNN | 多层感知机、循环神经网络 |
# | widget / slider / dropdown | 交互图、滑块、下拉菜单 | 无 |
#
# 图中的英文标签对照如下。
#
# | 图中的英文 | 中文 |
# |---|---|
# | weights scaled by / layer / block | 权重缩放倍数、层、块 |
# | value entering tanh | 进入 tanh 的值 |
# | fraction of values | 落进每一小段的值所占比例 |
# | pre-activations z | 激活前的值 z |
# | what enters tanh (ReLU, GELU) / what leaves the pair | 进入 tanh（ReLU、GELU）的值、LN 与激活函数合起来的输出 |
# | on the flat tails / set to / below | 落在饱和区、被置为、低于 |
# | beyond the axis | 超出坐标轴范围 |
# | residual stream entering the block / what attention sees | 进入块的残差流、注意力层的输入 |
# | branch outputs scaled by | 子层输出的缩放倍数 |

# %% [markdown]
# ## 小结
#
# - BN 和 LN 是同一段代码，只是沿不同的轴计算。LN 对每个样本单独做标准化，因而丢掉了样本本身的均值和尺度。在用大批量训练的卷积网络中，BN 通常仍是首选。
# - LN 就是求均值、求有偏方差，并把 $\epsilon$ 放在根号里面。然后 $\gamma$ 负责缩放，$\beta$ 负责平移，每个特征各有一个。
#
# 接下来读 [01](01_before_the_activation_per_token.ipynb) 和 [02](02_layernorm_in_a_transformer.ipynb)，然后是几个深入专题（英文）。[10](../10_how_a_claim_is_tested.ipynb) 讲一个说法如何检验，[11](../11_batchnorm_in_depth.ipynb) 讲 BN，[12](../12_where_the_norm_goes.ipynb) 讲归一化放在哪里，[13](../13_does_it_speed_up_training.ipynb) 讲能否加快训练，[14](../14_backward_numerics_speed.ipynb) 讲反向传播与数值计算，[15](../15_the_normalization_family.ipynb) 讲归一化家族，[16](../16_sequences_padding_and_masks.ipynb) 讲序列与掩码，[17](../17_layernorm_in_your_training_code.ipynb) 讲在自己的训练代码里用 LN。

# %% [markdown]
# ## 参考文献
#
# - J. L. Ba, J. R. Kiros, G. E. Hinton, *Layer Normalization*, 2016, [arXiv:1607.06450](https://arxiv.org/abs/1607.06450).
