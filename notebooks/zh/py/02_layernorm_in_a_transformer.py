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
# # 02 · Transformer 中的层归一化
#
# **你将学到**：用你在 00 里写的 `LayerNorm` 搭一个 Transformer 模块；它的两种形式 Pre-LN 和 Post-LN，各自与 PyTorch 自带的层对照检查；Pre-LN 为什么胜出；模型最后的 LN 放在哪里；以及已存储的实验对 Pre-LN 和原课程各个说法的评判。[在 Colab 中打开](https://colab.research.google.com/github/layernorm-hands-on/layernorm-hands-on/blob/main/notebooks/zh/02_layernorm_in_a_transformer.ipynb)

# %%
import matplotlib.pyplot as plt
import torch
from IPython.display import HTML
from torch import nn

from helpers.evidence import runner
from helpers.evidence.card import evidence_card
from helpers.exercises.layer_norm_at_work import check_final_ln
from helpers.plots.blocks import block_diagrams_figure
from helpers.widgets.residual_stream import residual_stream_demo

# %% [markdown]
# ## 1 · 再写一遍你的 LayerNorm
#
# 这就是你在 00 里写的模块。这里再写一遍，让这个笔记本可以单独运行。下面的模块都用它来搭。

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
# ## 2 · Transformer 模块的两种形式
#
# *Transformer* 由一个个模块堆叠而成。每个模块有两个子层。*注意力*（attention）让每个 token 从它前面的 token 收集信息；*因果掩码*（causal mask）把后面的 token 遮住，这样预测下一个 token 的模型就偷看不到答案。*MLP* 对每个 token 单独计算（`Linear → GELU → Linear`；GELU 是平滑版的 ReLU）。这里不需要了解注意力内部怎么算，只需要知道 LN 放在哪里。
#
# 每个子层的输出都加回到它的输入上，这叫*残差连接*。在模块之间一路传下去的这个累加和，叫*残差流*。LN 可以放在两个位置：
#
# - **Pre-LN**（GPT-2）：LN 放在每个子层的输入处，`x + attn(LN(x))`。残差流本身从不做归一化。
# - **Post-LN**（2017 年最初的 Transformer）：LN 放在每次相加之后，`LN(x + attn(x))`。每个子层之后，残差流都被归一化一次。

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
# 下面这两个模块的图，是从它们自己的 `forward` 画出来的（用 `torch.fx` 追踪，它会记录代码执行的每一步）。橙色方框是 LN，蓝色弧线是残差连接。在 Pre-LN 里，这些弧线连成一条从 `x` 到 `out` 的通路，途中不经过任何 LN。在 Post-LN 里，每条通路都要经过 LN。

# %%
torch.manual_seed(0)
fig = block_diagrams_figure({"Pre-LN": PreLN(32, 4), "Post-LN": PostLN(32, 4)})
plt.show()

# %% [markdown]
# ## 3 · 与 PyTorch 的编码器层一致
#
# PyTorch 把这两种形式都做成了 `nn.TransformerEncoderLayer`：`norm_first=True` 是 Pre-LN，`norm_first=False` 是 Post-LN。给它和我们相同的设置（不用 dropout，`activation="gelu"`，`dim_feedforward=4 * d_model`），按它的参数名把我们的权重复制进去（`KEY_MAP`），并把因果掩码作为 `src_mask` 传入。两个模块都处于训练模式（`.train()`，dropout 只在这种模式下起作用；LN 在两种模式下完全一样）。输出和梯度都必须一致。

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
# ## 4 · Pre-LN 为什么胜出
#
# Xiong 等（2020）给出了原因。在 Pre-LN 里，残差连接构成一条恒等通路：输入只经过加法就到达输出，梯度也只经过加法就传回来。在 Post-LN 里，每个模块都对相加的结果做归一化，所以每条通路都要经过 LN。在初始化时，Post-LN 靠近输出的那些权重的梯度很大，而且无论模型多深都一样大；Pre-LN 的这些梯度则随着模型加深而变小。所以 Xiong 等发现，Post-LN 需要*学习率预热*（warm-up，学习率从很小开始逐渐增大）或者较小的学习率，而 Pre-LN 不需要。

# %% [markdown]
# ### 动手看：残差流，以及注意力看到的输入
#
# 八个 Pre-LN 模块。左图：进入每个模块的残差流 `x`（深色：第 1 个模块，浅色：第 8 个）；右图：归一化层交给注意力的输入。滑块缩放每个子层加到残差流上的输出；下拉菜单选择归一化方式。滑块会让残差流变化，但注意力的输入在任何设置下标准差都保持 1：归一化把残差流的尺度除掉了。选 “no norm” 时，注意力看到的就是残差流本身，它变得很大，大部分都超出了图的范围（图的标题里给出了它的标准差）。

# %%
# NBVAL_IGNORE_OUTPUT
# displays a widget: a dropdown, a slider and their live figure
demo = residual_stream_demo()
demo

# %% [markdown]
# 选 LayerNorm，把子层输出放大 2 倍：经过八个模块，残差流的标准差增大到原来的约五倍，而注意力输入的标准差始终是 1。

# %%
demo.snapshot(norm="LayerNorm", branch_scale=2.0)
plt.show()

# %% [markdown]
# ### 最后的 LN
#
# 所以 Pre-LN 模型的最后还要再加一个 LN。它的残差流从不做归一化：残差流是输入加上每个子层的输出，随着深度增加而变大（上面的小部件展示了这一点）。最后的 LN（GPT-2 里的 `ln_f`）在预测下一个 token 的那一层之前，把它重新拉回同一个尺度。在 Xiong 等的分析里，也正是这个最后的 LN 除以了随深度变大的残差流，Pre-LN 靠近输出的梯度才会变小。Post-LN 不需要最后的 LN：它的最后一步本来就是 LN。

# %%
def tiny_gpt(norm, d_model=32, n_heads=4):
    return nn.Sequential(PreLN(d_model, n_heads, norm), PreLN(d_model, n_heads, norm), norm(d_model))


torch.manual_seed(0)
gpt = tiny_gpt(LayerNorm)
print("LayerNorms:", [name for name, m in gpt.named_modules() if isinstance(m, LayerNorm)])

# %% [markdown]
# 两个模块，然后是最后的 LN（这里叫 `2`，即它在 `nn.Sequential` 里的位置）。

# %% [markdown]
# ### 已存储的实验怎么说
#
# 一个小 Transformer 在 CPU 上学习复制 token，每种形式都用它最合适的学习率，从若干个随机起点训练。衡量的是训练步数：损失下降到离最低可能损失还差一半时所需的步数。

# %%
stored = runner.load("deep_transformer").records
steps = stored["steps, Pre-LN vs Post-LN"]
assert steps.favoured == "Pre-LN" and steps.low > 0  # fewer steps, by a clear margin
for arm in ("Post-LN", "Post-LN + warm-up"):  # fails at Pre-LN's best rate: no seed gets below the target
    assert stored[f"at Pre-LN's best rate, {arm}"].answer == "yes"

# %% [markdown]
# Pre-LN 用更少的步数就达到了目标，少多少见最后的卡片。在 Pre-LN 的最佳学习率下，即使加上短暂的学习率预热，Post-LN 也训练不起来：这与 Xiong 等报告的方向一致。这里的预热只有 20 步，比他们的短得多；它带来了什么变化，见卡片中关于预热的一行。实验是怎么做的，见深入专题 [12](../12_where_the_norm_goes.ipynb)。

# %% [markdown]
# ## 5 · 换成 `helpers.LayerNorm` 或 `nn.LayerNorm`
#
# 你的 `LayerNorm`、`helpers.LayerNorm`（同一个公式，写在本课程的包里）和 PyTorch 的 `nn.LayerNorm` 都用 `weight` 和 `bias` 这两个参数名。所以同一组权重可以载入这三个模型（`load_state_dict`），三者的输出都相同。（00 已经把你的梯度和 `nn.LayerNorm` 的对照过了。）

# %%
for name, norm in (("helpers.LayerNorm", helpers.LayerNorm), ("nn.LayerNorm", nn.LayerNorm)):
    other = tiny_gpt(norm)
    other.load_state_dict(gpt.state_dict())
    print(f"{name}: same outputs:", torch.allclose(other(x), gpt(x), atol=1e-5))

# %% [markdown]
# LLaMA 在同样的位置用 RMSNorm 取代了 LN：见[深入专题 15](../15_the_normalization_family.ipynb)。

# %% [markdown]
# ## 动手练习：最后的 LN 放在哪里
#
# 写出一个小模型的前向计算 `model_forward(x, blocks, ln_f, head, norm_first)`。先按顺序运行各个模块，再在模型需要的地方加上最后的 LN，即 `ln_f`，最后过 `head`，也就是预测下一个 token 的那一层。`norm_first` 为 `True` 表示 Pre-LN 模块，为 `False` 表示 Post-LN 模块，与 PyTorch 的约定相同。初始代码从不使用 `ln_f`。

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
# 原课程的各个说法，外加两条关于 Pre-LN 的说法，都在小实验里反复运行检验过；每一行都由存储的结果算出，并链接到对应的深入专题（英文）。*训练步数*：损失降到目标值所需的步数。

# %%
HTML(evidence_card())

# %% [markdown]
# 如果某一行分不出高下，或与 00 §1 的说法相反，说明原课程给出的理由只是引入 LN 的出发点，并不是保证：LN 对训练有什么作用，要看具体的模型。实验如何得出结论，见 [10](../10_how_a_claim_is_tested.ipynb)。

# %% [markdown]
# ## 小结
#
# - 你用自己的 `LayerNorm` 搭出了 Transformer 模块的两种形式，并分别与 `nn.TransformerEncoderLayer` 对照检查。`helpers.LayerNorm` 和 `nn.LayerNorm` 都可以直接替换你的 LN。
# - Pre-LN：`x + attn(LN(x))`、`x + mlp(LN(x))`，最后再加一个 LN，因为残差流本身从不做归一化。Post-LN：`LN(x + attn(x))`、`LN(x + mlp(x))`。
# - Pre-LN 胜出，是因为它的恒等通路让靠近输出的梯度在初始化时保持较小，所以不需要学习率预热就能训练（Xiong 等，2020）。存储的实验结果在小模型上与这个方向一致；关于预热和更大的学习率，实验结果分辨不出来（见卡片）。
# - 归一化让每个子层的输入保持在同一个尺度上。
# - LN 能否加速训练取决于模型：见上面的卡片。

# %% [markdown]
# ## 参考文献
#
# - A. Vaswani et al., *Attention Is All You Need*, NeurIPS 2017，第 3.1 节（Post-LN），[arXiv:1706.03762](https://arxiv.org/abs/1706.03762)。
# - R. Xiong et al., *On Layer Normalization in the Transformer Architecture*, ICML 2020，[arXiv:2002.04745](https://arxiv.org/abs/2002.04745)。
# - A. Radford et al., *Language Models are Unsupervised Multitask Learners*, OpenAI, 2019，第 2.3 节，[PDF](https://cdn.openai.com/better-language-models/language_models_are_unsupervised_multitask_learners.pdf)。
