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
# # 00 · 层归一化算的是什么
#
# **你将学到**：深层网络为什么需要归一化；批量归一化（BatchNorm，BN）和层归一化（LayerNorm，LN）是同一段代码，只是作用在不同的维度上；按公式亲手算一遍 LN；然后是 `gamma` 和 `beta`。本套笔记本依据一篇中文课程（下称“原课程”），核心路线共三个笔记本，这是第一个。代码、图中标签和表格保持英文，术语表在末尾。[在 Colab 中打开](https://colab.research.google.com/github/layernorm-hands-on/layernorm-hands-on/blob/main/notebooks/zh/00_what_layernorm_computes.ipynb)

# %%
import matplotlib.pyplot as plt
import torch
from torch import nn

from helpers.exercises.layer_norm import check_output_variance
from helpers.widgets.deep_stack import deep_stack_demo

# %% [markdown] lesson_point=1
# ## 1 · 深层网络为什么需要它
#
# 训练时权重不断更新，每一层的输入也跟着变化；网络越深，变化层层累积。原课程说，在 RNN、Transformer 里“训练会变慢，甚至无法收敛”。LN *标准化*每一层的输出（减去均值，再除以标准差），让下一层的值处在同一尺度上（§4 之后的小部件）。它是否真能加速训练？见笔记本 02 最后的卡片。

# %% [markdown] lesson_point=2
# ## 2 · BN 与 LN：同一段代码，作用在不同的维度上
#
# **BN** 对每个*特征*，在整个批次上做标准化（矩阵里的一列）；**LN** 对每个*样本*，在它自己的所有特征上做标准化（矩阵里的一行）。原课程说要拿“两个样本组成一个批次”举例，却没有给出例子，这里补上：

# %%
x = torch.tensor([[1.0, 2.0, 3.0],  # sample 0
                  [30.0, 10.0, 20.0]])  # sample 1


def standardize(x, dim):
    mean = x.mean(dim=dim, keepdim=True)
    var = ((x - mean) ** 2).mean(dim=dim, keepdim=True)  # n: the number of values averaged
    return (x - mean) / torch.sqrt(var + 1e-5)  # 1e-5 and keepdim: §3


print("BN, each column:\n", standardize(x, dim=0))
print("LN, each row:\n", standardize(x, dim=-1))

# %% [markdown]
# BN 把每一列都变成了 −1 和 +1：只剩下*哪个样本更大*这一点信息；LN 保留了每个样本自己各个特征之间的大小顺序。而且 BN 对样本 0 的输出还取决于样本 1：

# %%
other = x.clone()
other[1] = torch.tensor([0.0, 50.0, 7.0])  # replace sample 1 only
print("BN, sample 0's output changed:", not torch.equal(standardize(other, 0)[0], standardize(x, 0)[0]))
print("LN, sample 0's output changed:", not torch.equal(standardize(other, -1)[0], standardize(x, -1)[0]))
assert torch.allclose(standardize(x, 0), nn.BatchNorm1d(3, affine=False)(x), atol=1e-4)  # PyTorch's BN
assert torch.allclose(standardize(x, -1), nn.LayerNorm(3, elementwise_affine=False)(x), atol=1e-4)

# %% [markdown]
# LN 只需要眼前这一个样本：批次多大都行，训练和测试时算法完全一样（01 §7）。正因如此，Ba、Kiros 和 Hinton（2016）为 RNN 设计了 LN：RNN 按时间步逐个处理序列中的 token，如果用 BN，每个时间步上的批次统计量（整批数据的均值和方差）都不一样。BN 的细节见深入专题 [11](../11_batchnorm_in_depth.ipynb)。

# %% [markdown] lesson_point=3
# ## 3 · 公式
#
# $$y = \frac{x - \mathrm{E}[x]}{\sqrt{\mathrm{Var}[x] + \epsilon}} \cdot \gamma + \beta$$
#
# *token* 是句子里的一个词（或词的一部分），由 `dim` 个数字表示，这些数字就是它的*特征*；LN 把每个 token 当作 §2 里的一个样本。$\mathrm{E}[x]$ 和 $\mathrm{Var}[x]$ 是这些特征的均值和**有偏**方差：除以 `dim`，而不是 `dim - 1`（`unbiased=False`）；$\epsilon = 10^{-5}$ 放在根号**里面**（原课程说它“用于避免除以零的情况”：特征全部相等时结果是 0，而不是 0 / 0）；$\gamma$ 和 $\beta$ 每个特征各一个，通过反向传播学习，初始值分别是 1 和 0。下面用原课程的输入形状 `(batch, seq_len, dim)` 来算：

# %%
torch.manual_seed(0)
x = torch.randn(2, 3, 4) * 3 + 5  # (batch, seq_len, dim)
gamma, beta = torch.ones(4), torch.zeros(4)  # nn.LayerNorm(4)'s start
eps = 1e-5

mean = x.mean(dim=-1, keepdim=True)  # E[x]: one per token
var = ((x - mean) ** 2).mean(dim=-1, keepdim=True)  # Var[x], biased
y = (x - mean) / torch.sqrt(var + eps) * gamma + beta

# %% [markdown]
# `keepdim=True` 让 `mean` 的形状是 (2, 3, 1)，于是 `x - mean` 从每个 token 的 4 个特征里减去的是这个 token 自己的均值。PyTorch 的模块（`weight` 和 `bias` 就是 $\gamma$ 和 $\beta$）和本课程的 `helpers.layer_norm`（只用普通的张量运算写成）结果一致：

# %%
ln = nn.LayerNorm(4)
print("parameters:", [name for name, _ in ln.named_parameters()], "| learned:", ln.weight.requires_grad)
print("same as nn.LayerNorm and helpers.layer_norm:",
      torch.allclose(y, ln(x), atol=1e-5) and torch.allclose(y, helpers.layer_norm(x, (4,)), atol=1e-5))

# %% [markdown] lesson_point=4
# ## 4 · 均值 0、方差 1，然后是 gamma 和 beta
#
# 现在每个 token 的均值都是 0、方差都是 1（保留 4 位小数）：

# %%
print("mean of each token:\n", y.mean(dim=-1).abs().round(decimals=4))
print("variance of each token:\n", y.var(dim=-1, unbiased=False).round(decimals=4))

# %% [markdown]
# 为什么先标准化、再缩放？$\gamma$ 和 $\beta$ 按特征学习，让网络给每个特征设定下一层需要的尺度和中心，比如深入 tanh（S 形、两端平坦）曲线的程度。初始值是 1 和 0，所以 LN 起初就是单纯的标准化。取 $\gamma = 2$、$\beta = 0.5$：

# %%
gamma, beta = torch.full((4,), 2.0), torch.full((4,), 0.5)
y2 = (x - mean) / torch.sqrt(var + eps) * gamma + beta
print("token 0: mean", round(y2[0, 0].mean().item(), 4), "std", round(y2[0, 0].std(unbiased=False).item(), 4))

# %% [markdown]
# 现在每个 token 的均值就是 $\beta$，离散程度（标准差）就是 $\gamma$。

# %% [markdown]
# ### 动手看：深层堆叠，加 LN 与不加 LN
#
# 八层 `Linear → tanh`：左图不加 LN，右图在每个 tanh 前加 LN；画的是进入每个 tanh 的值（深色：第 1 层，浅色：第 8 层）。滑块缩放权重（训练中权重也会变大变小），并设置 $\gamma$、$\beta$；松开后重绘。

# %%
# NBVAL_IGNORE_OUTPUT
# displays a widget: three sliders and their live figure
demo = deep_stack_demo()
demo

# %% [markdown]
# 权重缩放为 0.5，$\gamma = 2$，$\beta = 0.5$：不加 LN 时（左图 without LN），第 8 层的值几乎全都缩到了零附近；加了 LN（右图 with LN），每一层都以 0.5 为中心，标准差（图中的 std）为 2（超出 ±5 的值都堆在图的左右边缘；$\gamma$ 这么大，会把许多值推到 tanh 平坦的两端，见 01 §5）。

# %%
demo.snapshot(gain=0.5, gamma=2.0, beta=0.5)
plt.show()

# %% [markdown]
# ## 动手练习：离 1 差多远？
#
# 上面的方差打印出来是 1，其实都略小于它；方差较小时，比如原课程里的那些（01 §8），差别在第四位小数就能看出来。写一个 `my_output_var(var, eps)`：对有偏方差为 `var` 的 token，求 LN 输出的方差（不带 $\gamma$、$\beta$）。初始代码故意是错的：把它改到检查通过为止。

# %%
def my_output_var(var, eps):
    return torch.ones_like(var)  # TODO: exactly 1, always?


check_output_variance(my_output_var)

# %% [markdown]
# <details><summary>参考答案</summary>
#
# 把每个值都除以 $c$，方差就被除以 $c^2$：除以 $\sqrt{\mathrm{Var} + \epsilon}$，方差就被除以 $\mathrm{Var} + \epsilon$。
#
# ```python
# def my_output_var(var, eps):
#     return var / (var + eps)
# ```
#
#
# </details>

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
# | weights scaled by, weight scale | 权重的缩放倍数 |
# | centre of z, spread of z | z 的中心、z 的离散程度 |
# | value entering tanh; fraction of values | 进入 tanh 的值；值所占的比例 |
# | saturated | 饱和（落在 tanh 平坦的两端） |
# | running statistics, buffer | 滑动统计量、缓冲区 |
# | residual stream; branch output scale; what attention sees | 残差流；子层输出的缩放倍数；注意力看到的输入 |

# %% [markdown]
# ## 小结
#
# BN 和 LN 是同一段代码，只是作用在不同的维度上。LN：均值、有偏方差、$\epsilon$ 放在根号里面，然后 $\gamma$ 缩放、$\beta$ 平移。
#
# 下一步：[01](01_before_the_activation_per_token.ipynb)、[02](02_layernorm_in_a_transformer.ipynb)。然后是深入专题（英文）：[10](../10_how_a_claim_is_tested.ipynb) 如何检验一个说法，[11](../11_batchnorm_in_depth.ipynb) BN，[12](../12_where_the_norm_goes.ipynb) 归一化放在哪里，[13](../13_does_it_speed_up_training.ipynb) 能否加速训练，[14](../14_backward_numerics_speed.ipynb) 反向传播与数值，[15](../15_the_normalization_family.ipynb) 归一化家族，[16](../16_sequences_padding_and_masks.ipynb) 序列与掩码。

# %% [markdown]
# ## 参考文献
#
# - J. L. Ba, J. R. Kiros, G. E. Hinton, *Layer Normalization*, 2016, [arXiv:1607.06450](https://arxiv.org/abs/1607.06450)。
