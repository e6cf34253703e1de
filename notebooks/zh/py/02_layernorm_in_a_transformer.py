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
# **你将学到**：Transformer 模块的两种形式 Pre-LN 和 Post-LN，用你自己写的 `LayerNorm` 搭出来，并与 PyTorch 自带的层对照检查；Pre-LN 为什么胜出，模型最后的 LN 放在哪里；实验对原课程各个说法的评判。[在 Colab 中打开](https://colab.research.google.com/github/layernorm-hands-on/layernorm-hands-on/blob/main/notebooks/zh/02_layernorm_in_a_transformer.ipynb)

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
# 这就是你在笔记本 00 里写的模块。这里再写一遍，让这个笔记本可以单独运行。下面的模块都用它来搭。

# %%
class LayerNorm(nn.Module):
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
# ## 10 · Transformer 模块的两种形式
#
# *Transformer* 由一个个模块堆叠而成。每个模块有两个子层。*注意力*（attention）让每个 token 从它前面的 token 收集信息；*因果掩码*（causal mask）把后面的 token 遮住，这样预测下一个 token 的模型就无法偷看答案。*MLP* 对每个 token 单独计算，结构是 `Linear → GELU → Linear`，GELU 是平滑版的 ReLU。这里不需要了解注意力的内部细节，只需要知道 LN 放在哪里。
#
# 每个子层的输出都加回到它的输入上，这叫*残差连接*（residual connection）。在模块之间流动的这个累加和叫*残差流*（residual stream）。LN 可以放在两个位置。
#
# - **Pre-LN**（GPT-2）把 LN 放在每个子层的输入处：`x + attn(LN(x))`。残差流本身从不做归一化。
# - **Post-LN**（2017 年最初的 Transformer）把 LN 放在每次相加之后：`LN(x + attn(x))`。每个子层之后，残差流都被归一化一次。
#
# 在 Pre-LN 的 MLP 里，顺序是 `LN → Linear → GELU → Linear`。LN 确实在激活函数之前，符合原课程“通常用在激活函数之前”的说法，但两者之间隔着一个 Linear。GELU 看到的是标准化之后的值经过一次线性变换的结果，其尺度由 Linear 的权重决定，而不是像笔记本 01 里那样直接是 LN 的输出。

# %%
def causal_mask(n):
    return torch.ones(n, n, dtype=torch.bool).triu(1)  # True: may not attend (a later token)


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


class PostLN(PreLN):  # the same parts, LN in other places
    def forward(self, x):
        x = self.ln_1(x + self.attn(x))
        return self.ln_2(x + self.mlp(x))

# %% [markdown]
# 下面两张图画的就是这两个模块，由它们自己的 `forward` 画出（用 `torch.fx` 追踪，它会记录代码执行的每一步）。每个箭头把一个值传给下一步。橙色方框是 LN。蓝色弧线是残差连接：它把一个值越过下方的方框，送到一个 `+`，在那里与这些方框的输出相加。在 Pre-LN 里，这些弧线连成一条从 `x` 到 `out`、不经过任何 LN 的通路。在 Post-LN 里，每条通路都要经过 LN。

# %%
torch.manual_seed(0)
fig = block_diagrams_figure({"Pre-LN": PreLN(32, 4), "Post-LN": PostLN(32, 4)})
plt.show()

# %% [markdown]
# ## 11 · 与 PyTorch 的编码器层相同
#
# PyTorch 把这两种形式都做成了 `nn.TransformerEncoderLayer`：`norm_first=True` 是 Pre-LN，`norm_first=False` 是 Post-LN。给它我们的设置（`activation="gelu"`，`dim_feedforward=4 * d_model`），按它的参数名把我们的权重复制进去（`KEY_MAP`），再把因果掩码作为 `src_mask` 传入。两个模块都在训练模式下运行（`.train()`）。在训练模式下，PyTorch 的层会做 *dropout*（随机把一些值置零），所以用 `dropout=0.0` 把它关掉。LN 在两种模式下算的都一样。输出和梯度都必须一致。

# %%
KEY_MAP = {"ln_1.": "norm1.", "ln_2.": "norm2.", "attn.": "self_attn.", "mlp.0.": "linear1.", "mlp.2.": "linear2."}


def torch_name(name):  # our parameter's name -> nn.TransformerEncoderLayer's
    prefix = next(p for p in KEY_MAP if name.startswith(p))
    return KEY_MAP[prefix] + name[len(prefix):]


x = torch.randn(2, 5, 32, requires_grad=True)  # 2 sequences of 5 tokens, 32 features each
upstream = torch.randn(2, 5, 32)  # a gradient arriving from above
for Block, norm_first in ((PreLN, True), (PostLN, False)):
    ours = Block(32, 4).train()
    theirs = nn.TransformerEncoderLayer(32, 4, dim_feedforward=4 * 32, dropout=0.0, activation="gelu",
                                        batch_first=True, norm_first=norm_first).train()
    theirs.load_state_dict({torch_name(k): v for k, v in ours.state_dict().items()})
    out1, out2 = ours(x), theirs(x, src_mask=causal_mask(5))
    params2 = [theirs.get_parameter(torch_name(k)) for k, _ in ours.named_parameters()]  # in our order
    grads1 = torch.autograd.grad(out1, [x, *ours.parameters()], upstream)
    grads2 = torch.autograd.grad(out2, [x, *params2], upstream)
    print(f"{Block.__name__} vs norm_first={norm_first}: same outputs:", torch.allclose(out1, out2, atol=1e-5),
          "| same gradients:", all(torch.allclose(a, b, atol=1e-4) for a, b in zip(grads1, grads2, strict=True)))

# %% [markdown]
# ## 12 · Pre-LN 为什么胜出
#
# Xiong 等（2020）给出了原因。在 Pre-LN 里，残差连接构成一条恒等通路：输入只经过加法就到达输出，梯度也只经过加法就传回来。在 Post-LN 里，每个模块都对相加的结果做归一化，所以每条通路都要经过 LN。在初始化时，Post-LN 靠近输出的那些权重的梯度很大，而且无论模型多深都一样大；Pre-LN 的这些梯度则随着模型加深而变小。所以 Xiong 等发现，Post-LN 需要*学习率预热*（warm-up，学习率从很小开始逐渐增大）或者较小的学习率，而 Pre-LN 不需要。

# %% [markdown]
# ### 动手看：残差流，以及注意力看到的输入
#
# 八个 Pre-LN 模块，权重是随机的，没有训练过。左图是进入每个模块的残差流 `x`，右图是归一化层交给注意力的输入，颜色按模块区分。滑块缩放每个子层加到残差流上的输出，下拉菜单选择归一化方式。RMSNorm 是不减去均值的 LN，LLaMA 用的就是它（深入专题 [15](../15_the_normalization_family.ipynb)）。每张图都标出了有多少值超出了坐标轴范围（beyond the axis）。
#
# 请留意哪些地方不动。滑块会让残差流变化，但注意力的输入在任何设置下标准差都保持 1，因为归一化把残差流的尺度除掉了。选 “no norm” 时，注意力看到的就是残差流本身。它会增大好几个数量级，所以坐标轴在 ±1 以外改用对数刻度（symlog）。这种增长来自这里的权重：它们的方差是 PyTorch 默认值的三倍，使每个子层加上的量和它读到的量差不多大。卡片里的六层 Transformer 从 PyTorch 的默认权重开始，不加归一化也训练过。它因此是否比 Pre-LN 需要更多步数，见卡片。

# %%
# NBVAL_IGNORE_OUTPUT
# displays a widget: a dropdown, a slider and their live figure
demo = residual_stream_demo()
demo

# %% [markdown]
# 选 LayerNorm，把子层输出放大 2 倍。经过八个模块，残差流的标准差增大到原来的约五倍，而注意力输入的标准差始终是 1。

# %%
demo.snapshot(norm="LayerNorm", branch_scale=2.0)
plt.show()

# %% [markdown]
# ### 最后的 LN
#
# 所以 Pre-LN 模型的最后还要再加一个 LN。它的残差流从不做归一化：残差流是输入加上每个子层的输出，随着深度增加而变大，上面的小部件展示了这一点。最后的 LN（GPT-2 里的 `ln_f`）在预测下一个 token 的那一层之前，把它重新拉回同一个尺度。在 Xiong 等的分析里，也正是这个最后的 LN 除以了随深度变大的残差流，Pre-LN 靠近输出的梯度才会变小。Post-LN 不需要最后的 LN，因为它的最后一步本来就是 LN。

# %% [markdown]
# ## 13 · 换成 `helpers.LayerNorm` 或 `nn.LayerNorm`
#
# 你的 `LayerNorm`、`helpers.LayerNorm`（同一个公式，写在本课程的包里）和 PyTorch 的 `nn.LayerNorm` 都用 `weight` 和 `bias` 这两个参数名。所以上面检查过的、用你的 LN 搭的 Post-LN 模块，它的权重可以载入用另外两种 LN 搭的 Post-LN 模块（`load_state_dict`），输出也相同。

# %%
for name, norm in (("helpers", helpers.LayerNorm), ("nn", nn.LayerNorm)):
    other = PostLN(32, 4, norm)
    other.load_state_dict(ours.state_dict())
    print(f"{name}.LayerNorm: same outputs:", torch.allclose(other(x), ours(x), atol=1e-5))

# %% [markdown]
# ## 动手练习：最后的 LN 放在哪里
#
# 写出 `model_forward(x, blocks, ln_f, head, norm_first)`。它先按顺序运行各个模块，再在模型需要的地方加上最后的 LN，即 `ln_f`，最后过 `head`，也就是预测下一个 token 的那一层。`norm_first` 为 `True` 表示 Pre-LN 模块，与 PyTorch 的约定相同。初始代码从不使用 `ln_f`。

# %%
def model_forward(x, blocks, ln_f, head, norm_first):
    for block in blocks:
        x = block(x)
    return head(x)  # TODO: ln_f 该放在哪里？哪种形式需要它？


check_final_ln(model_forward)

# %% [markdown]
# <details><summary>参考答案</summary>
#
# ```python
# def model_forward(x, blocks, ln_f, head, norm_first):
#     for block in blocks:
#         x = block(x)
#     if norm_first:  # Pre-LN: the stream was never normalised
#         x = ln_f(x)
#     return head(x)  # Post-LN: the last block already ended with an LN
# ```
#
# </details>

# %% [markdown]
# ## 实验结果怎么说
#
# 原课程的各个说法，外加两条关于 Pre-LN 的说法，都在小实验里检验过，每一组都从 10 个随机起点训练。每一行写明了所用的模型和任务。*MLP* 是由 `Linear` 层和激活函数堆叠成的网络。*LSTM* 是一种 RNN，用门控决定状态保留什么，Ba 等当年就在这类 RNN 上检验 LN。*训练步数*是损失降到事先定好的目标值所需的步数。每一行都链接到对应的深入专题（英文）。

# %%
HTML(evidence_card())

# %% [markdown]
# Pre-LN 与 Post-LN 那一行，两种形式各用自己最适合的学习率，模型很小。关于预热的那一行，预热只有 20 步，比 Xiong 等用的短得多。如果某一行分不出高下，或者结果恰恰相反，说明原课程给出的理由只是引入 LN 的出发点，并不是保证：LN 对训练有什么作用，要看具体的模型。实验如何得出结论，见深入专题 [10](../10_how_a_claim_is_tested.ipynb)。

# %% [markdown]
# ## 小结
#
# - 你用自己的 `LayerNorm` 搭出了 Pre-LN 和 Post-LN 两种模块，并与 `nn.TransformerEncoderLayer` 对照检查过。`helpers.LayerNorm` 和 `nn.LayerNorm` 都可以直接替换你的 LN。
# - Pre-LN 是 `x + attn(LN(x))`，模型最后还要加一个 LN，因为残差流从不做归一化。Post-LN 是 `LN(x + attn(x))`。
# - Pre-LN 胜出，是因为它靠近输出的梯度在初始化时就小，而 Post-LN 的无论多深都大，需要学习率预热（Xiong 等，2020）。
# - LN 能否加速训练取决于模型，见上面的卡片。

# %% [markdown]
# ## 参考文献
#
# - A. Vaswani et al., *Attention Is All You Need*, NeurIPS 2017，第 3.1 节（Post-LN），[arXiv:1706.03762](https://arxiv.org/abs/1706.03762)。
# - R. Xiong et al., *On Layer Normalization in the Transformer Architecture*, ICML 2020，[arXiv:2002.04745](https://arxiv.org/abs/2002.04745)。
# - A. Radford et al., *Language Models are Unsupervised Multitask Learners*, OpenAI, 2019，第 2.3 节，[PDF](https://cdn.openai.com/better-language-models/language_models_are_unsupervised_multitask_learners.pdf)。

