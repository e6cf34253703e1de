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

# %% [markdown]
# # 02 · LayerNorm in a Transformer
#
# **What you will learn.** A Transformer block in its two forms, Pre-LN and Post-LN, built with your
# own `LayerNorm`. Why Pre-LN became the default, and where the final LN goes. What
# experiments found about the lesson's claims.
# [Open in Colab](https://colab.research.google.com/github/layernorm-hands-on/layernorm-hands-on/blob/main/notebooks/02_layernorm_in_a_transformer.ipynb)

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
# ## 9 · Your LayerNorm, again
#
# This is the module from notebook 00, typed again so that this notebook runs on its own.

# %%
class LayerNorm(nn.Module):
    def __init__(self, d_model, eps=1e-5):
        super().__init__()
        self.eps = eps
        self.weight = nn.Parameter(torch.ones(d_model))  # gamma, starts at 1
        self.bias = nn.Parameter(torch.zeros(d_model))  # beta, starts at 0

    def forward(self, x):
        mean = x.mean(dim=-1, keepdim=True)
        var = x.var(dim=-1, unbiased=False, keepdim=True)  # biased: divide by d_model
        return (x - mean) / torch.sqrt(var + self.eps) * self.weight + self.bias

# %% [markdown]
# ## 10 · A Transformer block, in two forms
#
# A *Transformer* is a stack of blocks. Each block has two sub-layers. *Attention* lets each token
# gather information from the other tokens. It runs as `n_heads` *heads*, each on a slice of the width. A *causal mask* limits it to the token itself and those before it, so a model
# that predicts the next token cannot peek at it. The *MLP* works on each token alone, as
# `Linear → GELU → Linear`.
#
# Each sub-layer's output is added to its input, which is called a *residual connection*. The
# running sum that flows from block to block is the *residual stream*. LN can sit in two places.
#
# - **Pre-LN** (GPT-2) puts LN at each sub-layer's input: `x = x + attn(LN(x))`, then
#   `x = x + mlp(LN(x))`. The stream itself is never normalised.
# - **Post-LN** (the original Transformer of 2017) puts LN after each addition:
#   `x = LN(x + attn(x))`, then `x = LN(x + mlp(x))`. The stream is normalised after every sub-layer.
#
# In a Pre-LN MLP the order is `LN → Linear → GELU → Linear`. LN comes before the activation, as
# the lesson's "通常用在激活函数之前" (usually before the activation) says, but a Linear sits
# between them, and its weights set the scale of what GELU sees. So notebook 01's argument, that LN
# keeps the activation's input on one scale whatever the weights, does not hold here.

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
# The two blocks, drawn from their own `forward` (traced with `torch.fx`, which records the code's
# steps). An orange box is an LN. A blue arc is a
# residual connection, carrying a sub-layer's input past it to the `+`. In Pre-LN the arcs join into one path from `x` to `out` that no
# LN touches. In Post-LN every path passes through an LN.

# %%
torch.manual_seed(0)
fig = block_diagrams_figure({"Pre-LN": PreLN(32, 4), "Post-LN": PostLN(32, 4)})
plt.show()

# %% [markdown]
# ## 11 · Why Pre-LN became the default
#
# GPT-2 (2019) used Pre-LN, and Wang et al. (2019) chose it
# because deep Post-LN models were hard to train. Xiong et al. (2020) gave the explanation. In Pre-LN, the
# input reaches the model's last LN through additions only (an identity path), and so does the gradient on
# its way back. At initialisation, the gradients of Post-LN's weights near the output are large at
# any depth, while Pre-LN's shrink as the model gets deeper. Large gradients at a full rate make the
# first steps unstable. So Post-LN needs a *warm-up* (a rate that starts small and grows) or small
# rates, while Pre-LN trains stably without a careful warm-up. Deep dive
# [12](12_where_the_norm_goes.ipynb) measures these gradients. Pre-LN's shrink far more slowly than
# predicted.
#
# Post-LN has merits of its own. Liu et al. (2020) report that Post-LN, when it trains, often ends
# better than Pre-LN. The original Transformer and BERT are Post-LN, trained with warm-ups of 4000
# and 10000 steps. Large models with the norm at each sub-layer's input, such as GPT-3 and LLaMA,
# still use a warm-up. (This set's short warm-ups did not speed Post-LN up: deep dive
# [13](13_does_it_speed_up_training.ipynb).)

# %% [markdown]
# ### See it: the residual stream and what attention sees
#
# Eight Pre-LN blocks with random weights, fed 16 sequences of 16 tokens of width 64 drawn from a
# standard normal. The left panel
# shows the residual stream `x` entering each block, the right one what the norm hands to attention,
# coloured by block. The slider scales what each sub-layer adds to the stream. The dropdown picks
# the norm. RMSNorm, which LLaMA uses, is LN without subtracting the mean (deep dive
# [15](15_the_normalization_family.ipynb)).
#
# The slider moves the stream, but attention's input keeps spread 1 at
# every setting, because the norm divides out the stream's scale. With "no norm", attention sees the
# stream itself. It grows fast, so the axis turns logarithmic beyond ±1 (symlog).
# This widget draws larger weights than PyTorch's default, so that the growth shows within 8 blocks.
# With "no norm" and PyTorch's default weights, as in the card's Transformer, the stream entering
# block 8 has spread about 1.4, against 37 here at slider 1.

# %%
# NBVAL_IGNORE_OUTPUT
# displays a widget: a dropdown, a slider and their live figure
demo = residual_stream_demo()
demo

# %% [markdown]
# LayerNorm, with sub-layer outputs scaled by 2. The stream's spread grows about fivefold over
# seven blocks, and attention's input stays at 1. The red note says that 27% of the stream entering
# block 8 lies beyond ±6, off the axis.

# %%
demo.snapshot(norm="LayerNorm", branch_scale=2.0)
plt.show()

# %% [markdown]
# ### The final LN
#
# A Pre-LN model's stream is never normalised, and it grows with depth, slowly with default
# weights. So a Pre-LN model ends with one more LN. This final LN (GPT-2's `ln_f`) puts the stream
# back on one scale before the layer that predicts the next token. Post-LN needs no final LN, because its last step already is
# one.

# %% [markdown]
# ## Your turn: where the final LN goes
#
# Write `model_forward(x, blocks, ln_f, head, norm_first)`. It runs the blocks in order, then the
# final LN `ln_f` where the model needs one, then the output layer `head`.
# `norm_first` is `True` for Pre-LN blocks, as in `nn.TransformerEncoderLayer`.

# %%
def model_forward(x, blocks, ln_f, head, norm_first):
    for block in blocks:
        x = block(x)
    return head(x)  # TODO: where does ln_f go, and for which form?


check_final_ln(model_forward)

# %% [markdown]
# <details><summary>Solution</summary>
#
# ```python
# def model_forward(x, blocks, ln_f, head, norm_first):
#     for block in blocks:
#         x = block(x)
#     if norm_first:  # Pre-LN only
#         x = ln_f(x)
#     return head(x)
# ```
#
# </details>

# %% [markdown]
# ## What the evidence says
#
# The lesson's claims come first. Then come two more, Pre-LN against Post-LN and larger rates,
# in the last four rows. Each Transformer claim was tested on a copy task and on English text. Each
# variant ran from 10 random starts (20 for the drift row), at its own best learning rate (the
# drift row at three rates, the larger-rates rows at larger ones). An *LSTM* is an RNN with gates, the kind Ba et
# al. tested LN on. *Steps* count training steps until the loss
# reaches a target fixed in advance. A run *trains* if its loss ends below it.

# %%
HTML(evidence_card())

# %% [markdown]
# "Cannot tell" means the runs do not decide the claim. Either no difference showed, or the one
# that showed was smaller than what one step of the learning-rate grid changes, or it reversed
# under a second measure, or it did not hold up once corrected for the many comparisons made. On the copy task, for instance, Pre-LN needed fewer steps than no norm
# from every start, about 27% fewer on average, but one step of the grid moves no norm's steps by more. "Cannot tell"
# does not mean that LN does nothing.
#
# On English text, Post-LN also needed about 86% more steps than no norm (deep dive 13). So the gap
# between the two forms there reflects Post-LN's slowness more than LN's help.
#
# How the runs decide is in deep dive [10](10_how_a_claim_is_tested.ipynb).

# %% [markdown]
# ## Summary
#
# - Pre-LN normalises each sub-layer's input, `x + attn(LN(x))`, and ends with a final LN, because
#   its stream is never normalised. Post-LN normalises after each addition, `LN(x + attn(x))`.
# - Pre-LN is the default because it trains stably with less tuning (Xiong et al. 2020).
# - On the card, Pre-LN needed about 61% (copy task) and 45% (English text) fewer steps than
#   Post-LN, and on the copy task it trained at a rate where no norm failed. LN cut the LSTM's
#   steps, and at batches of 2 beat BN, which stayed at chance (50%). The other rows say "cannot tell".

# %% [markdown]
# ## References
#
# - A. Vaswani et al., *Attention Is All You Need*, NeurIPS 2017, section 3.1 (Post-LN) and
#   section 5.3 (a warm-up of 4000 steps), [arXiv:1706.03762](https://arxiv.org/abs/1706.03762).
# - J. Devlin et al., *BERT*, NAACL 2019, section 3 (the original Transformer's encoder) and
#   appendix A.2 (a warm-up of 10000 steps), [arXiv:1810.04805](https://arxiv.org/abs/1810.04805).
# - L. Liu et al., *Understanding the Difficulty of Training Transformers*, EMNLP 2020,
#   [arXiv:2004.08249](https://arxiv.org/abs/2004.08249).
# - Q. Wang et al., *Learning Deep Transformer Models for Machine Translation*, ACL 2019,
#   [arXiv:1906.01787](https://arxiv.org/abs/1906.01787).
# - R. Xiong et al., *On Layer Normalization in the Transformer Architecture*, ICML 2020,
#   [arXiv:2002.04745](https://arxiv.org/abs/2002.04745).
# - A. Radford et al., *Language Models are Unsupervised Multitask Learners*, OpenAI, 2019
#   section 2.3,
#   [PDF](https://cdn.openai.com/better-language-models/language_models_are_unsupervised_multitask_learners.pdf).
