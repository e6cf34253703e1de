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
# **你将学到**：用 `nn.LayerNorm` 搭一个 Pre-LN Transformer 模块，再换成 `helpers.LayerNorm`；LN 在 GPT 中的位置，以及 LLaMA 在这些位置用的 RMSNorm；已存储的实验结果如何评判原课程的各个说法。[在 Colab 中打开](https://colab.research.google.com/github/layernorm-hands-on/layernorm-hands-on/blob/main/notebooks/zh/02_layernorm_in_a_transformer.ipynb)

# %%
import matplotlib.pyplot as plt
import torch
from IPython.display import HTML
from torch import nn

from helpers.evidence.card import evidence_card
from helpers.exercises.layer_norm_at_work import check_rms_norm
from helpers.widgets.residual_stream import residual_stream_demo

# %% [markdown]
# ## 一个 Pre-LN 模块
#
# 两个子层：注意力（每个 token 从它前面的 token 汇集信息，分成 `n_heads` 个并行的“头”；*因果掩码*，即 causal mask，遮住后面的 token）和一个 MLP（多层感知机：`Linear → GELU → Linear`；GELU 是平滑版的 ReLU），各自的输出都加回到自己的输入上（*残差连接*，residual connection）。**Pre-LN** 把 LN 放在每个子层的输入处，GPT-2 就是这样做的。注意力内部怎么算不必深究，只需看 LN 放在哪里。

# %%
class Block(nn.Module):
    """Pre-LN: x + attention(LN(x)), then x + MLP(LN(x)); `norm` builds the two LNs."""

    def __init__(self, d_model, n_heads, norm=nn.LayerNorm):
        super().__init__()
        self.ln_1, self.ln_2 = norm(d_model), norm(d_model)
        self.attn = nn.MultiheadAttention(d_model, n_heads, batch_first=True)
        self.mlp = nn.Sequential(nn.Linear(d_model, 4 * d_model), nn.GELU(), nn.Linear(4 * d_model, d_model))

    def forward(self, x):
        causal = torch.ones(x.shape[1], x.shape[1], dtype=torch.bool).triu(1)  # True: may not attend
        h = self.ln_1(x)
        x = x + self.attn(h, h, h, attn_mask=causal, need_weights=False)[0]
        return x + self.mlp(self.ln_2(x))

# %% [markdown]
# 这里的 LN 放在每个子层的第一个 Linear 之前，而不像 01 §5 那样放在 Linear 和激活函数之间；无论哪种，后面的运算看到的都是同一尺度的值。GPT 把若干模块堆叠起来，并在预测下一个 token 之前再加一个最终的 LN（GPT-2 里的 `ln_1`、`ln_2`、`ln_f`；在这里，与 `ln_f` 对应的那一层名叫 `2`）：

# %%
def tiny_gpt(norm, d_model=32, n_heads=4):
    return nn.Sequential(Block(d_model, n_heads, norm), Block(d_model, n_heads, norm), norm(d_model))


torch.manual_seed(0)
gpt = tiny_gpt(nn.LayerNorm)
print("LayerNorms:", [name for name, m in gpt.named_modules() if isinstance(m, nn.LayerNorm)])

# %% [markdown]
# LN 分别在注意力之前、MLP 之前和最末尾。**替换**：`helpers.LayerNorm` 就是 00 §3 的公式写成的模块：权重相同（`load_state_dict`），训练模式（`.train()`），输出和梯度也相同。损失取输出的立方和：LN 的输出均值为 0，直接求和传不回梯度。

# %%
ours = tiny_gpt(helpers.LayerNorm)
ours.load_state_dict(gpt.state_dict())
x = torch.randn(2, 5, 32)  # 2 sequences of 5 token embeddings
out_torch, out_ours = gpt.train()(x), ours.train()(x)
((out_torch**3).sum() + (out_ours**3).sum()).backward()
pairs = zip(gpt.parameters(), ours.parameters(), strict=True)
same_grads = all(torch.allclose(p.grad, q.grad, atol=1e-4) for p, q in pairs)
print("same outputs:", torch.allclose(out_torch, out_ours, atol=1e-5), "| same gradients:", same_grads)

# %% [markdown]
# ### 动手看：残差流，以及注意力看到的输入
#
# 八个 Pre-LN 模块。左图：进入每个模块的*残差流* `x`，即沿残差连接一路累加各子层输出的主干（深色：第 1 个模块）；右图：归一化层交给注意力的值。残差流越来越分散，注意力的输入不变。下拉菜单可换成 RMSNorm（见下文）或不加归一化。

# %%
# NBVAL_IGNORE_OUTPUT
# displays a widget: a dropdown, a slider and their live figure
demo = residual_stream_demo()
demo

# %% [markdown]
# 选 LayerNorm，把子层输出（branch outputs）放大 2 倍：经过八个模块，残差流的离散程度（标准差）增大到原来的约五倍，而注意力输入的标准差始终保持在 1。

# %%
demo.snapshot(norm="LayerNorm", branch_scale=2.0)
plt.show()

# %% [markdown]
# ## LLaMA：在同样的位置用 RMSNorm
#
# LLaMA 一类的模型（Touvron 等，2023）保留了这些位置，但用的是 **RMSNorm**（Zhang 和 Sennrich，2019）：不减均值，没有 $\beta$；每个 token 除以它的均方根，再乘以可学习的 `weight`（即下式中的 γ）：
#
# $$y = \frac{x}{\sqrt{\mathrm{mean}(x^2) + \epsilon}} \cdot \gamma$$

# %% [markdown]
# ## 动手练习：手写 RMSNorm
#
# 写出 `my_rms_norm(x, weight)`，在最后一维上做 RMSNorm，取 `eps = 1e-6`（LLaMA 的取值）。初始代码其实是 LN，所以检查故意不会通过。

# %%
def my_rms_norm(x, weight, eps=1e-6):
    mean = x.mean(dim=-1, keepdim=True)  # TODO: does RMSNorm centre?
    var = ((x - mean) ** 2).mean(dim=-1, keepdim=True)
    return (x - mean) / torch.sqrt(var + eps) * weight


check_rms_norm(my_rms_norm)

# %% [markdown]
# <details><summary>参考答案</summary>
#
# ```python
# def my_rms_norm(x, weight, eps=1e-6):
#     return x * torch.rsqrt(x.pow(2).mean(dim=-1, keepdim=True) + eps) * weight  # rsqrt(a) = 1 / sqrt(a)
# ```
#
# </details>

# %% [markdown]
# ## 实验结果怎么说
#
# 原课程的各个说法，外加一条关于 Post-LN 的说法，都在小实验里反复运行检验过；每一行都由存储的结果算出，并链接到对应的深入专题（英文）。*训练步数*：损失降到目标值所需的步数；*Post-LN*：LN 放在每次残差相加之后（原始的 Transformer）；*学习率预热*（warm-up）：学习率从很小开始。

# %%
HTML(evidence_card())

# %% [markdown]
# 如果某一行与 00 §1 的说法不符，说明原课程给出的理由只是引入 LN 的出发点，并不是保证：LN 对训练有什么作用，要看具体的模型。实验如何得出结论，见 [10](../10_how_a_claim_is_tested.ipynb)。

# %% [markdown]
# ## 小结
#
# - Pre-LN：`x + attention(LN(x))`、`x + MLP(LN(x))`，最后再加一个 LN；`helpers.LayerNorm` 可以直接替换进去。
# - 归一化让每个子层的输入保持在同一个尺度上；LLaMA 在这些位置用 RMSNorm。
# - LN 能否加速训练取决于模型：见上面的卡片。

# %% [markdown]
# ## 参考文献
#
# - A. Radford et al., *Language Models are Unsupervised Multitask Learners*, OpenAI, 2019，第 2.3 节，[PDF](https://cdn.openai.com/better-language-models/language_models_are_unsupervised_multitask_learners.pdf)。
# - H. Touvron et al., *LLaMA: Open and Efficient Foundation Language Models*, 2023, 第 2 节，[arXiv:2302.13971](https://arxiv.org/abs/2302.13971)。
# - B. Zhang, R. Sennrich, *Root Mean Square Layer Normalization*, NeurIPS 2019, [arXiv:1910.07467](https://arxiv.org/abs/1910.07467)。
