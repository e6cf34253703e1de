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
# # 02 · Transformer 中的层归一化
#
# 本笔记本用你自己写的 `LayerNorm` 搭出 Transformer 块的两种形式，即 Pre-LN 和 Post-LN，说明 Pre-LN 为什么后来成了主流、模型末尾的 LN 放在哪里，最后看实验对原课程的各个说法有什么结论。[在 Colab 中打开](https://colab.research.google.com/github/layernorm-hands-on/layernorm-hands-on/blob/main/notebooks/zh/02_layernorm_in_a_transformer.ipynb)

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
# Transformer 由一个个块堆叠而成，每个块有两个子层。注意力（attention）子层让每个 token 从其他 token 那里汇集信息。它分成几个头（head）并行计算，每个头处理宽度的一部分，头数即代码里的 `n_heads`。本笔记本搭的是因果模型，因果掩码（causal mask）让每个 token 只能关注它自己和前面的 token，这样预测下一个 token 的模型就无法偷看答案。MLP 子层（d2l-zh 称基于位置的前馈网络）对每个 token 单独计算，结构是 `Linear → GELU → Linear`。这里只需知道 LN 放在哪里。
#
# 每个子层的输出都加回到它的输入上，这叫残差连接（residual connection）。在块与块之间流动的这个累加和叫残差流（residual stream）。LN 可以放在两个位置。
#
# - **Pre-LN**（GPT-2）把 LN 放在每个子层的输入处，先算 `x = x + attn(LN(x))`，再算 `x = x + mlp(LN(x))`。残差流本身从不做归一化。
# - **Post-LN**（2017 年最初的 Transformer）把 LN 放在每次相加之后，先算 `x = LN(x + attn(x))`，再算 `x = LN(x + mlp(x))`。每经过一个子层，残差流都被归一化一次。
#
# 在 Pre-LN 的 MLP 子层中，顺序是 `LN → Linear → GELU → Linear`。LN 在激活函数之前，符合原课程“通常用在激活函数之前”的说法，但中间隔着一个 Linear 层，GELU 输入的尺度由这个 Linear 层的权重决定。笔记本 01 的论证是，不论权重多大，LN 都让激活函数的输入保持在同一个尺度上。这个论证在这里不成立。

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
# 下面两张图画的就是这两个块。作图时用 `torch.fx` 追踪各自的 `forward`，记下代码执行的每一步。橙色方框是 LN。蓝色弧线是残差连接，它把子层的输入绕过子层送到 `+` 处，与子层的输出相加。在 Pre-LN 中，这些弧线连成一条从 `x` 到 `out` 的通路，途中不经过任何 LN。在 Post-LN 中，每条通路都要经过 LN。

# %%
torch.manual_seed(0)
fig = block_diagrams_figure({"Pre-LN": PreLN(32, 4), "Post-LN": PostLN(32, 4)})
plt.show()

# %% [markdown]
# ## 11 · 为什么后来 Pre-LN 成了主流
#
# Pre-LN 先有人用，后来才有人解释它为什么好用。GPT-2（2019）用了它，Wang 等人（2019）也选了它，因为深层的 Post-LN 模型很难训练。Xiong 等人（2020）给出了解释。在 Pre-LN 中，残差连接构成一条恒等通路，输入只经过加法就到达最后的 LN，梯度也只经过加法就传回来。在初始化时，Post-LN 中靠近输出的几层权重梯度很大，而且模型再深也不会变小，Pre-LN 的这些梯度则随模型加深而变小。梯度本来就大，一开始学习率又不小，最初几步的训练就容易不稳定。所以 Post-LN 需要学习率预热（warm-up，让学习率从很小逐渐增大）或较小的学习率，而 Pre-LN 不用精心预热也能稳定训练。深入专题 [12](../12_where_the_norm_goes.ipynb) 测量了这些梯度，发现 Pre-LN 的梯度变小得比预测的慢得多。
#
# Post-LN 也有它的长处。Liu 等人（2020）报告，Post-LN 一旦训练得起来，最终效果往往比 Pre-LN 更好。原始的 Transformer 和 BERT 都是 Post-LN，训练时分别预热 4000 步和 10000 步。把归一化放在每个子层输入处的大模型也仍然使用预热，如 GPT-3 和 LLaMA。本套实验里那些很短的预热并没有让 Post-LN 训练得更快（深入专题 [13](../13_does_it_speed_up_training.ipynb)）。

# %% [markdown]
# ### 交互图 · 残差流和注意力层的输入
#
# 这里是八个 Pre-LN 块，权重随机，未经训练。输入是 16 个序列，每个含 16 个宽度为 64 的 token，从标准正态分布中随机抽取。左图是进入每个块的残差流 `x`，右图是归一化层交给注意力的输入，颜色表示块的编号。滑块缩放每个子层加到残差流上的输出，下拉菜单选择归一化层。RMSNorm 不减均值，直接除以均方根，通常也没有 β，LLaMA 用的就是它（深入专题 [15](../15_the_normalization_family.ipynb)）。
#
# 图中英文标签的中文对照见第一个笔记本的[术语表](00_what_layernorm_computes.ipynb)。
#
# 拖动滑块，残差流会变。但只要选的是 LayerNorm 或 RMSNorm，注意力的输入标准差就始终是 1（RMSNorm 是近似如此），因为归一化层除掉了残差流的尺度。选“不加归一化”时，注意力层的输入就是残差流本身，它增长得很快，所以坐标轴在 ±1 以外改用对数刻度（symlog）。为了在 8 个块之内就看清这种增长，交互图有意把权重取得比 PyTorch 的默认值大。如果改用 PyTorch 的默认权重（卡片里的 Transformer 就是这样），同样不加归一化，进入第 8 个块的残差流标准差只有 1.4 左右，而这里滑块为 1 时是 37。

# %%
# NBVAL_IGNORE_OUTPUT
# 显示交互图（widget）：一个下拉菜单、一个滑块和随之重画的图
demo = residual_stream_demo()
demo

# %% [markdown]
# 下图选的是 LayerNorm，子层输出放大 2 倍。经过七个块，残差流的标准差增大到原来的五倍左右，而注意力层输入的标准差始终是 1。红字说明，进入第 8 个块的残差流有 27% 落在 ±6 之外，超出了坐标轴。

# %%
demo.snapshot(norm="LayerNorm", branch_scale=2.0)
plt.show()

# %% [markdown]
# ### 最后的 LN
#
# Pre-LN 的残差流从不做归一化，会随深度增加而变大，只是用默认权重时增长得很慢。所以 Pre-LN 模型末尾还要再加一个 LN，即最后的 LN（GPT-2 中的 `ln_f`），在预测下一个 token 的那一层之前把残差流拉回同一个尺度。Post-LN 的最后一步本来就是 LN，不需要它。

# %% [markdown]
# ## 动手练习 · 最后的 LN 放在哪里
#
# 写出 `model_forward(x, blocks, ln_f, head, norm_first)`。它依次运行各个块，模型需要时再做最后的 LN `ln_f`，最后经过输出层 `head`。与 PyTorch 的 `nn.TransformerEncoderLayer` 一样，`norm_first` 为 `True` 表示 Pre-LN 块。

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
# 卡片先列原课程的说法。最后四行检验另外两个说法，一个是 Pre-LN 与 Post-LN 的对比，一个是能否承受更大的学习率。关于 Transformer 的每个说法，都在复制任务和英文文本上各测一次。每种配置用 10 个随机种子各训练一次（漂移那一行用 20 个），各用调出的最佳学习率（漂移那一行用三种学习率，最后两行用更大的学习率）。LSTM 是一种 RNN，用门控决定状态里保留什么，Ba 等人当年就在这类 RNN 上检验 LN。训练步数指损失降到事先定好的目标值所需的步数，一次训练结束时损失低于这个目标值，就算训练成功。

# %%
HTML(evidence_card())

# %% [markdown]
# 写着“分不出”的行，表示这些实验不足以对这个说法下结论。可能是测不出差别，可能是测到的差别比把学习率换到相邻一档带来的变化还小，可能是换一种度量方式，结论就反了过来，也可能是做了很多次比较，校正之后差别就站不住了。比如在复制任务上，每个随机种子下 Pre-LN 用的训练步数都比不加归一化少，平均少约 27%。但学习率换一档，不加归一化的步数变化就比这还大。“分不出”不等于 LN 没有用。
#
# 在英文文本上，Post-LN 用的训练步数还比不加归一化多约 86%（深入专题 13）。所以在这个任务上，两种形式之间的差距主要反映的是 Post-LN 慢，而不是 LN 的功劳。
#
# 实验如何得出结论，见深入专题 [10](../10_how_a_claim_is_tested.ipynb)。

# %% [markdown]
# ## 小结
#
# - Pre-LN 对每个子层的输入做归一化，即 `x + attn(LN(x))`。它的残差流从不做归一化，所以模型末尾还要加一个 LN。Post-LN 在每次相加之后做归一化，即 `LN(x + attn(x))`。
# - Pre-LN 成为默认选择，是因为它训练稳定，需要调的地方少（Xiong 等人，2020）。
# - 在卡片上，Pre-LN 比 Post-LN 少用了约 61%（复制任务）和 45%（英文文本）的训练步数。在复制任务上，它还能在不加归一化会失败的学习率下训练成功。LN 还减少了 LSTM 所需的训练步数。每批只有 2 个样本时 LN 胜过 BN，而 BN 停在随机猜测的水平（50%）。其余各行都是“分不出”。

# %% [markdown]
# ## 参考文献
#
# - A. Vaswani et al., *Attention Is All You Need*, NeurIPS 2017, 第 3.1 节（Post-LN）和第 5.3 节（预热 4000 步）, [arXiv:1706.03762](https://arxiv.org/abs/1706.03762).
# - J. Devlin et al., *BERT*, NAACL 2019, 第 3 节（沿用原始 Transformer 的编码器）和附录 A.2（预热 10000 步）, [arXiv:1810.04805](https://arxiv.org/abs/1810.04805).
# - L. Liu et al., *Understanding the Difficulty of Training Transformers*, EMNLP 2020, [arXiv:2004.08249](https://arxiv.org/abs/2004.08249).
# - Q. Wang et al., *Learning Deep Transformer Models for Machine Translation*, ACL 2019, [arXiv:1906.01787](https://arxiv.org/abs/1906.01787).
# - R. Xiong et al., *On Layer Normalization in the Transformer Architecture*, ICML 2020, [arXiv:2002.04745](https://arxiv.org/abs/2002.04745).
# - A. Radford et al., *Language Models are Unsupervised Multitask Learners*, OpenAI, 2019, 第 2.3 节, [PDF](https://cdn.openai.com/better-language-models/language_models_are_unsupervised_multitask_learners.pdf).
