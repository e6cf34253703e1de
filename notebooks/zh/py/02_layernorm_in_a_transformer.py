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
# # 02 · Transformer 中的层归一化
#
# 本笔记本用你自己写的 `LayerNorm` 搭出 Transformer 块的两种形式，即 Pre-LN 和 Post-LN。接着说明为什么后来 Pre-LN 成了主流，以及模型末尾那个 LN 该放在哪里。最后看实验对原课程的各个说法给出了什么结论。[在 Colab 中打开](https://colab.research.google.com/github/layernorm-hands-on/layernorm-hands-on/blob/main/notebooks/zh/02_layernorm_in_a_transformer.ipynb)

# %%
import matplotlib.pyplot as plt
import torch
from IPython.display import HTML
from torch import nn

from helpers.evidence.card import evidence_card
from helpers.exercises.layer_norm_at_work import check_final_ln
from helpers.plots.blocks import block_diagrams_figure
from helpers.widgets.residual_stream import residual_stream_demo

# %% [markdown]
# ## 9 · 再写一遍你的 LayerNorm
#
# 这就是笔记本 00 里的那个模块。这里重写一遍，好让本笔记本能单独运行。

# %%
class LayerNorm(nn.Module):
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
# ## 10 · Transformer 块的两种形式
#
# Transformer 由一个个块堆叠而成，每个块有两个子层。注意力（attention）子层让每个 token 从它前面的 token 那里汇集信息。注意力可以分成几个头（head）并行计算，每个头处理宽度的一部分，头数即代码里的 `n_heads`。因果掩码（causal mask）把后面的 token 遮住，只让每个 token 关注自己和前面的 token，这样预测下一个 token 的模型就无法偷看答案。MLP 子层对每个 token 单独计算，结构是 `Linear → GELU → Linear`。这里不需要了解注意力的内部细节，只需要知道 LN 放在哪里。
#
# 每个子层的输出都会加回到它的输入上，这叫作残差连接（residual connection）。在块与块之间流动的这个累加和，叫作残差流（residual stream）。LN 可以放在两个位置。
#
# - **Pre-LN**（GPT-2）把 LN 放在每个子层的输入处，即 `x + attn(LN(x))`。残差流本身从不做归一化。
# - **Post-LN**（2017 年最初的 Transformer）把 LN 放在每次相加之后，即 `LN(x + attn(x))`。每经过一个子层，残差流都被归一化一次。
#
# 在 Pre-LN 的 MLP 子层中，顺序是 `LN → Linear → GELU → Linear`。LN 在激活函数之前，符合原课程“通常用在激活函数之前”的说法，但中间隔着一个 Linear 层。因此 GELU 的输入是标准化后的值再做一次线性变换，尺度由 Linear 层的权重决定，不像笔记本 01 中那样直接就是 LN 的输出。

# %%
def causal_mask(n):
    return torch.ones(n, n, dtype=torch.bool).triu(1)  # True 表示不能关注（是后面的 token）


class CausalSelfAttention(nn.MultiheadAttention):
    def forward(self, x):
        return super().forward(x, x, x, attn_mask=causal_mask(x.shape[1]), need_weights=False)[0]


class PreLN(nn.Module):
    def __init__(self, d_model, n_heads, norm=LayerNorm):
        super().__init__()
        self.ln_1, self.ln_2 = norm(d_model), norm(d_model)
        self.attn = CausalSelfAttention(d_model, n_heads, batch_first=True)
        self.mlp = nn.Sequential(nn.Linear(d_model, 4 * d_model), nn.GELU(), nn.Linear(4 * d_model, d_model))

    def forward(self, x):
        x = x + self.attn(self.ln_1(x))
        return x + self.mlp(self.ln_2(x))


class PostLN(PreLN):  # 组成部分相同，只是 LN 的位置不同
    def forward(self, x):
        x = self.ln_1(x + self.attn(x))
        return self.ln_2(x + self.mlp(x))

# %% [markdown]
# 下面两张图画的就是这两个块，图由它们自己的 `forward` 生成，做法是用 `torch.fx` 追踪代码执行的每一步。橙色方框是 LN。蓝色弧线是残差连接，它把子层的输入绕过子层，直接送到 `+` 处，与子层的输出相加。在 Pre-LN 中，这些弧线连成一条从 `x` 到 `out` 的通路，途中一个 LN 也不经过。在 Post-LN 中，每条通路都要经过 LN。

# %%
torch.manual_seed(0)
fig = block_diagrams_figure({"Pre-LN": PreLN(32, 4), "Post-LN": PostLN(32, 4)})
plt.show()

# %% [markdown]
# ## 11 · 为什么后来 Pre-LN 成了主流
#
# Xiong 等人（2020）给出了原因。在 Pre-LN 中，残差连接构成一条恒等通路，输入只经过加法就能到达输出，梯度也只经过加法就能传回来。初始化时，Post-LN 靠近输出的几层，其权重的梯度很大，而且不论模型多深都一样大。Pre-LN 的这些梯度则随着模型加深而变小。梯度很大时，一开始就用完整的学习率，训练会不稳定。因此 Xiong 等人发现，Post-LN 需要学习率预热（warm-up，让学习率从很小开始逐渐增大），或者只能用较小的学习率。Pre-LN 不用精心预热也能稳定训练，所以成了默认选择。深入专题 [12](../12_where_the_norm_goes.ipynb) 在一个小型 Transformer 上测量了这些梯度，深度从 2 个块到 24 个块。Pre-LN 的梯度确实像 Xiong 等人预测的那样随深度变小，但比他们预测的慢得多。Post-LN 的梯度则略有增大。
#
# Post-LN 也有它自己的长处。原始的 Transformer（Vaswani 等人，2017）就是 Post-LN，沿用其结构的 BERT（Devlin 等人，2019）也是。两者训练时都用了学习率预热，分别预热 4000 步和 10000 步，深度在 6 到 24 个块之间。Liu 等人（2020）报告，Post-LN 一旦训练得起来，最终效果往往比 Pre-LN 更好。不过，GPT-3 和 LLaMA 这样的大型 Pre-LN 模型仍然使用预热（见深入专题 [12](../12_where_the_norm_goes.ipynb)）。

# %% [markdown]
# ### 交互图 · 残差流和注意力层的输入
#
# 这里是八个 Pre-LN 块，每个块有一个注意力头，权重随机，没有训练过。输入是 16 个序列，每个序列 16 个宽度为 64 的 token，从标准正态分布中随机抽取。左图是进入每个块的残差流 `x`，右图是归一化层交给注意力的输入，颜色表示块的编号。滑块缩放每个子层加到残差流上的输出，下拉菜单选择归一化层。RMSNorm 就是不减均值的 LN，LLaMA 用的就是它，详见深入专题 [15](../15_the_normalization_family.ipynb)。
#
# 图中的标签是英文，中文对照见第一个笔记本末尾的[术语表](00_what_layernorm_computes.ipynb)。
#
# 拖动滑块，残差流会变。但只要选的是 LayerNorm 或 RMSNorm，不管滑块在哪里，注意力的输入标准差都保持为 1，因为归一化层除掉了残差流的尺度。选“不加归一化”时，注意力层的输入就是残差流本身。它会增长好几个数量级，所以坐标轴在 ±1 以外改用对数刻度（symlog）。这个交互图有意把权重的方差取为 PyTorch 默认值的三倍，好让这种增长看得清楚。卡片里的 Transformer 用的是 PyTorch 的默认权重。同样不加归一化，换成这样的权重，进入第 8 个块的残差流标准差只有 1.4 左右，而这里滑块为 1 时是 37。

# %%
# NBVAL_IGNORE_OUTPUT
# 显示交互图（widget）：一个下拉菜单、一个滑块和随之重画的图
demo = residual_stream_demo()
demo

# %% [markdown]
# 下图选的是 LayerNorm，子层输出放大 2 倍。经过前七个块，到进入第八个块时，残差流的标准差已增大到原来的五倍左右，而注意力层输入的标准差始终是 1。

# %%
demo.snapshot(norm="LayerNorm", branch_scale=2.0)
plt.show()

# %% [markdown]
# ### 最后的 LN
#
# 所以 Pre-LN 模型的末尾还要再加一个 LN。它的残差流从不做归一化，会随深度增加而变大，只是用默认权重时增长得很慢。最后的 LN（GPT-2 中的 `ln_f`）在预测下一个 token 的那一层之前，把残差流拉回同一个尺度。Post-LN 不需要最后的 LN，因为它的最后一步本身就是 LN。

# %% [markdown]
# ## 动手练习 · 最后的 LN 放在哪里
#
# 写出 `model_forward(x, blocks, ln_f, head, norm_first)`。它先依次运行各个块，在模型需要时接着做最后的 LN，即 `ln_f`，最后经过输出层 `head`。与 PyTorch 的 `nn.TransformerEncoderLayer` 一样，`norm_first` 为 `True` 表示 Pre-LN 块。

# %%
def model_forward(x, blocks, ln_f, head, norm_first):
    for block in blocks:
        x = block(x)
    return head(x)  # TODO：ln_f 该放在哪里？哪种形式需要它？


check_final_ln(model_forward)

# %% [markdown]
# <details><summary>参考答案</summary>
#
# ```python
# def model_forward(x, blocks, ln_f, head, norm_first):
#     for block in blocks:
#         x = block(x)
#     if norm_first:  # 只有 Pre-LN 需要
#         x = ln_f(x)
#     return head(x)
# ```
#
# </details>

# %% [markdown]
# ## 实验结果怎么说
#
# 原课程的各个说法，以及卡片最后六行的另外三个关于 Pre-LN 和 Post-LN 的说法，都在小实验里检验过，每种配置都用 10 个不同的随机种子各训练一次。MLP 是由 `Linear` 层和激活函数堆叠成的网络。LSTM 是一种 RNN，它用门控决定状态里保留什么，Ba 等人当年就是在这类 RNN 上检验 LN 的。训练步数指损失降到事先定好的目标值所需的步数。一次训练结束时损失低于这个目标值，就算训练成功。

# %%
HTML(evidence_card())

# %% [markdown]
# Pre-LN 与 Post-LN 对比的那两行，两种形式各用自己最合适的学习率，模型也很小。写着“分不出”的行，只说明这个小实验中看不出明显差别，并不等于 LN 没有用。不过这些行也提醒我们，原课程给出的理由只是引入 LN 的动机，而不是保证。
#
# 在英文文本上，预热占了 60 步中的前 12 步。预热期间学习率还没升到设定值，所以必然多用步数。预热那两行只检验预热能不能加快训练，没有检验 Xiong 等人的说法，即 Post-LN 不预热会不稳定，或在较大学习率下失败，也没有检验原始 Transformer 和 BERT 那种长达数千步的预热。
#
# 两行 RNN 的模型不同，序列长度也不同，这些实验说不清是哪一点造成了结果的差别。实验如何得出结论，见深入专题 [10](../10_how_a_claim_is_tested.ipynb)。

# %% [markdown]
# ## 小结
#
# - 你用自己的 `LayerNorm` 搭出了 Pre-LN 和 Post-LN 两种块，深入专题 [17](../17_layernorm_in_your_training_code.ipynb) 把它们与 `nn.TransformerEncoderLayer` 做了对照。
# - Pre-LN 是 `x + attn(LN(x))`，它的残差流从不做归一化，所以模型末尾还要加一个 LN。Post-LN 是 `LN(x + attn(x))`。
# - Pre-LN 成了主流，是因为它靠近输出的梯度在初始化时随深度变小，而 Post-LN 的这些梯度不论模型多深都很大，所以 Post-LN 需要学习率预热（Xiong 等人，2020）。深入专题 12 发现，这种随深度变化的趋势比预言的弱。
# - 在卡片上，LN 让 LSTM 少用了训练步数。每批只有 2 个样本时，LN 的准确率比 BN 约高 36 个百分点。Pre-LN 比 Post-LN 少用了约 61%（复制任务）和 45%（英文文本）的训练步数，而 Post-LN 本身比不加归一化用的步数还多。在复制任务上，取两者都试过的最大学习率，用 Pre-LN 时训练成功的次数占比，比不加归一化时约高 90 个百分点。对 tanh RNN，以及 Pre-LN 与不加归一化在训练步数上的对比，实验中都看不出明显差别。

# %% [markdown]
# ## 参考文献
#
# - A. Vaswani et al., *Attention Is All You Need*, NeurIPS 2017, 第 3.1 节（Post-LN）和第 5.3 节（预热 4000 步）, [arXiv:1706.03762](https://arxiv.org/abs/1706.03762).
# - J. Devlin et al., *BERT*, NAACL 2019, 第 3 节（沿用原始 Transformer 的编码器）和附录 A.2（预热 10000 步）, [arXiv:1810.04805](https://arxiv.org/abs/1810.04805).
# - L. Liu et al., *Understanding the Difficulty of Training Transformers*, EMNLP 2020, [arXiv:2004.08249](https://arxiv.org/abs/2004.08249).
# - R. Xiong et al., *On Layer Normalization in the Transformer Architecture*, ICML 2020, [arXiv:2002.04745](https://arxiv.org/abs/2002.04745).
# - A. Radford et al., *Language Models are Unsupervised Multitask Learners*, OpenAI, 2019, 第 2.3 节, [PDF](https://cdn.openai.com/better-language-models/language_models_are_unsupervised_multitask_learners.pdf).
