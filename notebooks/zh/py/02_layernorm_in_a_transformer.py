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
# 本笔记本用你自己写的 `LayerNorm` 搭出 Transformer 块的两种形式，即 Pre-LN 和 Post-LN，并与 PyTorch 自带的实现对照。接着说明 Pre-LN 为什么胜出，以及模型末尾那个 LN 该放在哪里。最后看实验对原课程的各个说法给出了什么结论。[在 Colab 中打开](https://colab.research.google.com/github/layernorm-hands-on/layernorm-hands-on/blob/main/notebooks/zh/02_layernorm_in_a_transformer.ipynb)

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
# 这就是你在笔记本 00 里写的模块。这里重写一遍，好让本笔记本能单独运行。下面的块都用它来搭。

# %%
class LayerNorm(nn.Module):
    def __init__(self, dim, eps=1e-5):
        super().__init__()
        self.eps = eps
        self.weight = nn.Parameter(torch.ones(dim))  # gamma，初始为 1
        self.bias = nn.Parameter(torch.zeros(dim))  # beta，初始为 0

    def forward(self, x):
        mean = x.mean(dim=-1, keepdim=True)
        var = x.var(dim=-1, unbiased=False, keepdim=True)  # 有偏方差，除以 dim
        return (x - mean) / torch.sqrt(var + self.eps) * self.weight + self.bias

# %% [markdown]
# ## 10 · Transformer 块的两种形式
#
# Transformer 由一个个块堆叠而成，每个块有两个子层。注意力（attention）子层让每个 token 从它前面的 token 那里汇集信息。因果掩码（causal mask）把后面的 token 遮住，这样预测下一个 token 的模型就无法偷看答案。MLP 子层对每个 token 单独计算，结构是 `Linear → GELU → Linear`，其中 GELU 是平滑版的 ReLU。这里不需要了解注意力的内部细节，只需要知道 LN 放在哪里。
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
# 下面两张图画的就是这两个块，图由它们自己的 `forward` 生成，做法是用 `torch.fx` 追踪代码执行的每一步。每个箭头把一个值传给下一步。橙色方框是 LN。蓝色弧线是残差连接，它把子层的输入绕过子层，直接送到 `+` 处，与子层的输出相加。在 Pre-LN 中，这些弧线连成一条从 `x` 到 `out` 的通路，途中一个 LN 也不经过。在 Post-LN 中，每条通路都要经过 LN。

# %%
torch.manual_seed(0)
fig = block_diagrams_figure({"Pre-LN": PreLN(32, 4), "Post-LN": PostLN(32, 4)})
plt.show()

# %% [markdown]
# ## 11 · 与 PyTorch 的编码器层一致
#
# PyTorch 把这两种形式都做进了 `nn.TransformerEncoderLayer`，`norm_first=True` 是 Pre-LN，`norm_first=False` 是 Post-LN。我们给它同样的设置（`activation="gelu"` 和 `dim_feedforward=4 * d_model`），按它的参数名把我们的权重复制过去（`KEY_MAP`），再把因果掩码作为 `src_mask` 传入。两边都以训练模式运行（`.train()`），因为训练时用的就是这个模式。在训练模式下，PyTorch 的这一层会做 dropout，即随机把一些值置为零，所以要用 `dropout=0.0` 把它关掉。LN 在两种模式下的计算相同。两边的输出和梯度都应当一致。

# %%
KEY_MAP = {"ln_1.": "norm1.", "ln_2.": "norm2.", "attn.": "self_attn.", "mlp.0.": "linear1.", "mlp.2.": "linear2."}


def torch_name(name):  # 把我们的参数名换成 nn.TransformerEncoderLayer 的参数名
    prefix = next(p for p in KEY_MAP if name.startswith(p))
    return KEY_MAP[prefix] + name[len(prefix):]


x = torch.randn(2, 5, 32, requires_grad=True)  # 2 个序列，各 5 个 token，每个 token 32 个特征
upstream = torch.randn(2, 5, 32)  # 从上面传回来的梯度
for Block, norm_first in ((PreLN, True), (PostLN, False)):
    ours = Block(32, 4).train()
    theirs = nn.TransformerEncoderLayer(32, 4, dim_feedforward=4 * 32, dropout=0.0, activation="gelu",
                                        batch_first=True, norm_first=norm_first).train()
    theirs.load_state_dict({torch_name(k): v for k, v in ours.state_dict().items()})
    out1, out2 = ours(x), theirs(x, src_mask=causal_mask(5))
    params2 = [theirs.get_parameter(torch_name(k)) for k, _ in ours.named_parameters()]  # 按我们的参数顺序
    grads1 = torch.autograd.grad(out1, [x, *ours.parameters()], upstream)
    grads2 = torch.autograd.grad(out2, [x, *params2], upstream)
    print(f"{Block.__name__} vs norm_first={norm_first}: same outputs:", torch.allclose(out1, out2, atol=1e-5),
          "| same gradients:", all(torch.allclose(a, b, atol=1e-4) for a, b in zip(grads1, grads2, strict=True)))

# %% [markdown]
# ## 12 · Pre-LN 为什么胜出
#
# Xiong 等人（2020）给出了原因。在 Pre-LN 中，残差连接构成一条恒等通路，输入只经过加法就能到达输出，梯度也只经过加法就能传回来。在 Post-LN 中，每个块都要对相加的结果做归一化，所以每条通路都要经过 LN。初始化时，Post-LN 中靠近输出的那些权重梯度很大，而且不论模型多深都一样大。Pre-LN 的这些梯度则随着模型加深而变小。因此 Xiong 等人发现，Post-LN 需要学习率预热（warm-up，让学习率从很小开始逐渐增大），或者只能用较小的学习率，而 Pre-LN 不需要。

# %% [markdown]
# ### 交互图 · 残差流和注意力看到的输入
#
# 这里是八个 Pre-LN 块，权重随机，没有训练过。左图是进入每个块的残差流 `x`，右图是归一化层交给注意力的输入，颜色表示块的编号。滑块缩放每个子层加到残差流上的输出，下拉菜单选择归一化层。RMSNorm 就是不减均值的 LN，LLaMA 用的就是它，详见深入专题 [15](../15_the_normalization_family.ipynb)。每张图都注明了有多少值落在坐标轴范围之外。
#
# 拖动滑块，残差流会变。但只要选的是 LayerNorm 或 RMSNorm，不管滑块在哪里，注意力的输入标准差都保持为 1，因为归一化层除掉了残差流的尺度。选“不加归一化”时，注意力看到的就是残差流本身。残差流会增长好几个数量级，所以坐标轴在 ±1 以外改用对数刻度（symlog）。这种增长来自这里的权重，它们的方差是 PyTorch 默认值的三倍，使每个子层加上的量与它读到的量大致相当。卡片里六个块的 Transformer 用的是 PyTorch 的默认初始化，也在不加归一化时训练过。它是否因此比用 Pre-LN 时需要更多训练步数，见卡片。

# %%
# NBVAL_IGNORE_OUTPUT
# 显示交互图（widget）：一个下拉菜单、一个滑块和随之重画的图
demo = residual_stream_demo()
demo

# %% [markdown]
# 下图选的是 LayerNorm，子层输出放大 2 倍。经过八个块，残差流的标准差增大到原来的五倍左右，而注意力输入的标准差始终是 1。

# %%
demo.snapshot(norm="LayerNorm", branch_scale=2.0)
plt.show()

# %% [markdown]
# ### 最后的 LN
#
# 所以 Pre-LN 模型的末尾还要再加一个 LN。它的残差流从不做归一化，等于输入加上所有子层的输出，会随深度增加而变大，上面的交互图已经展示了这一点。最后的 LN（GPT-2 中的 `ln_f`）在预测下一个 token 的那一层之前，把残差流拉回同一个尺度。在 Xiong 等人的分析中，这个 LN 要除以随深度增大的残差流，所以 Pre-LN 靠近输出的梯度会变小。Post-LN 不需要最后的 LN，因为它的最后一步本身就是 LN。

# %% [markdown]
# ## 13 · 换成 `helpers.LayerNorm` 或 `nn.LayerNorm`
#
# 你的 `LayerNorm`、`helpers.LayerNorm`（同一个公式，在本套笔记本配套的包里）和 PyTorch 的 `nn.LayerNorm` 都用同样的参数名 `weight` 和 `bias`。上面检查过的 Post-LN 块用的是你的 LN。把其中的 LN 换成另外两种，这个块的权重照样能载入（`load_state_dict`），输出也相同。

# %%
for name, norm in (("helpers", helpers.LayerNorm), ("nn", nn.LayerNorm)):
    other = PostLN(32, 4, norm)
    other.load_state_dict(ours.state_dict())
    print(f"{name}.LayerNorm: same outputs:", torch.allclose(other(x), ours(x), atol=1e-5))

# %% [markdown]
# ## 动手练习 · 最后的 LN 放在哪里
#
# 写出 `model_forward(x, blocks, ln_f, head, norm_first)`。它先依次运行各个块，在模型需要时接着做最后的 LN，即 `ln_f`，最后经过 `head`，也就是预测下一个 token 的输出层。与 PyTorch 的约定一样，`norm_first` 为 `True` 表示 Pre-LN 块。初始代码从不调用 `ln_f`。

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
#     if norm_first:  # Pre-LN: the stream was never normalised
#         x = ln_f(x)
#     return head(x)  # Post-LN: the last block already ended with an LN
# ```
#
# </details>

# %% [markdown]
# ## 实验结果怎么说
#
# 原课程的各个说法，以及最后三行关于 Pre-LN 和 Post-LN 的说法，都在小实验里检验过，每种配置都从 10 个不同的随机起点开始训练。卡片的每一行都写明了所用的模型和任务。MLP 是由 `Linear` 层和激活函数堆叠成的网络。LSTM 是一种 RNN，它用门控决定状态里保留什么，Ba 等人当年就是在这类 RNN 上检验 LN 的。训练步数指损失降到事先定好的目标值所需的步数。

# %%
HTML(evidence_card())

# %% [markdown]
# Pre-LN 与 Post-LN 对比的那一行，两种形式各用自己最合适的学习率，模型也很小。预热那一行只预热了 20 步，比 Xiong 等人用的短得多。写着“分不出”的行，只说明这个小实验看不出差别，并不等于 LN 没有用。但这些行也提醒我们，原课程的理由只是引入 LN 的动机，不是保证。LN 对训练有什么作用，要看具体的模型。实验如何得出结论，见深入专题 [10](../10_how_a_claim_is_tested.ipynb)。

# %% [markdown]
# ## 小结
#
# - 你用自己的 `LayerNorm` 搭出了 Pre-LN 和 Post-LN 两种块，并与 `nn.TransformerEncoderLayer` 对照过。`helpers.LayerNorm` 和 `nn.LayerNorm` 都可以直接替换你的 LN。
# - Pre-LN 是 `x + attn(LN(x))`，它的残差流从不做归一化，所以模型末尾还要加一个 LN。Post-LN 是 `LN(x + attn(x))`。
# - Pre-LN 胜出，是因为它靠近输出的梯度在初始化时就小，而 Post-LN 的这些梯度不论模型多深都很大，需要学习率预热（Xiong 等人，2020）。卡片上的实验预热和训练都很短，分不出预热能否让 Post-LN 更快。
# - LN 能否加快训练取决于模型，见上面的卡片。

# %% [markdown]
# ## 参考文献
#
# - A. Vaswani et al., *Attention Is All You Need*, NeurIPS 2017, 第 3.1 节（Post-LN）, [arXiv:1706.03762](https://arxiv.org/abs/1706.03762).
# - R. Xiong et al., *On Layer Normalization in the Transformer Architecture*, ICML 2020, [arXiv:2002.04745](https://arxiv.org/abs/2002.04745).
# - A. Radford et al., *Language Models are Unsupervised Multitask Learners*, OpenAI, 2019, 第 2.3 节, [PDF](https://cdn.openai.com/better-language-models/language_models_are_unsupervised_multitask_learners.pdf).
