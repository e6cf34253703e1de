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

# %% [markdown]
# # 02 · LayerNorm in a Transformer
#
# **What you will learn**: a Pre-LN Transformer block with `nn.LayerNorm`, then `helpers.LayerNorm`
# swapped in; where LN sits in GPT, and RMSNorm in LLaMA; what stored experiments say about the
# lesson's claims. [Open in Colab](https://colab.research.google.com/github/layernorm-hands-on/layernorm-hands-on/blob/main/notebooks/02_layernorm_in_a_transformer.ipynb)

# %%
import matplotlib.pyplot as plt
import torch
from IPython.display import HTML
from torch import nn

from helpers.evidence.card import evidence_card
from helpers.exercises.layer_norm_at_work import check_rms_norm
from helpers.widgets.residual_stream import residual_stream_demo

# %% [markdown]
# ## A Pre-LN block
#
# Two sub-layers: attention (each token gathers from earlier ones, in `n_heads` parallel parts;
# the *causal mask* hides later ones) and an MLP (`Linear → GELU → Linear`; GELU is a smooth ReLU),
# each added to its input (a *residual connection*). **Pre-LN**, as in GPT-2, puts LN at each
# sub-layer's input. You need not know attention's inside: only where LN sits.

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
# LN here comes before each sub-layer's first Linear, not between a Linear and its activation as in 01 §5;
# either way, what comes next sees values on one scale. GPT stacks blocks and adds a final LN
# before predicting the next token (GPT-2's `ln_1`, `ln_2`, `ln_f`; here `ln_f` is named `2`):

# %%
def tiny_gpt(norm, d_model=32, n_heads=4):
    return nn.Sequential(Block(d_model, n_heads, norm), Block(d_model, n_heads, norm), norm(d_model))


torch.manual_seed(0)
gpt = tiny_gpt(nn.LayerNorm)
print("LayerNorms:", [name for name, m in gpt.named_modules() if isinstance(m, nn.LayerNorm)])

# %% [markdown]
# LN before attention, before the MLP, and at the end. **The swap**: `helpers.LayerNorm` is 00 §3's
# formula as a module: same weights (`load_state_dict`), training mode (`.train()`), same outputs and
# gradients. The loss cubes the outputs: LN's outputs have mean 0, so a plain sum sends no gradient.

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
# ### See it: the residual stream and what attention sees
#
# Eight Pre-LN blocks. Left: the *residual stream* `x` entering each block (dark: block 1);
# right: what the norm hands to attention. The stream grows; attention's input does not.

# %%
# NBVAL_IGNORE_OUTPUT
# displays a widget: a dropdown, a slider and their live figure
demo = residual_stream_demo()
demo

# %% [markdown]
# LayerNorm, sub-layer outputs scaled by 2: the stream's spread grows about fivefold over eight
# blocks; attention's input stays at 1.

# %%
demo.snapshot(norm="LayerNorm", branch_scale=2.0)
plt.show()

# %% [markdown]
# ## LLaMA: RMSNorm in the same places
#
# LLaMA-style models (Touvron et al. 2023) keep these places but use **RMSNorm** (Zhang & Sennrich 2019): no mean
# subtracted, no $\beta$; each token divided by its root mean square, times a learned `weight`:
#
# $$y = \frac{x}{\sqrt{\mathrm{mean}(x^2) + \epsilon}} \cdot \gamma$$

# %% [markdown]
# ## Your turn: RMSNorm by hand
#
# Write `my_rms_norm(x, weight)` over the last dim, `eps = 1e-6` (LLaMA's). The stub, LN, fails
# on purpose.

# %%
def my_rms_norm(x, weight, eps=1e-6):
    mean = x.mean(dim=-1, keepdim=True)  # TODO: does RMSNorm centre?
    var = ((x - mean) ** 2).mean(dim=-1, keepdim=True)
    return (x - mean) / torch.sqrt(var + eps) * weight


check_rms_norm(my_rms_norm)

# %% [markdown]
# <details><summary>Solution</summary>
#
# ```python
# def my_rms_norm(x, weight, eps=1e-6):
#     return x * torch.rsqrt(x.pow(2).mean(dim=-1, keepdim=True) + eps) * weight  # rsqrt(a) = 1 / sqrt(a)
# ```
#
# </details>

# %% [markdown]
# ## What the evidence says
#
# The lesson's claims, and one on Post-LN, each tested in small experiments run many times; each
# line is computed from the stored results and links to its deep dive. *Steps*: training steps to a
# target loss; *Post-LN*: LN after each residual addition (the original Transformer); *warm-up*: a
# learning rate that starts small.

# %%
HTML(evidence_card())

# %% [markdown]
# Where a line disagrees with 00 §1, the lesson's reason is a motivation, not a guarantee: what LN
# does to training depends on the model. How the runs decide: [10](10_how_a_claim_is_tested.ipynb).

# %% [markdown]
# ## Summary
#
# - Pre-LN: `x + attention(LN(x))`, `x + MLP(LN(x))`, a final LN; `helpers.LayerNorm` drops in.
# - The norm keeps each sub-layer's input on one scale; LLaMA uses RMSNorm there.
# - Whether LN speeds training up depends on the model: the card above.

# %% [markdown]
# ## References
#
# - A. Radford et al., *Language Models are Unsupervised Multitask Learners*, OpenAI, 2019
#   section 2.3,
#   [PDF](https://cdn.openai.com/better-language-models/language_models_are_unsupervised_multitask_learners.pdf).
# - H. Touvron et al., *LLaMA: Open and Efficient Foundation Language Models*, 2023, section 2,
#   [arXiv:2302.13971](https://arxiv.org/abs/2302.13971).
# - B. Zhang, R. Sennrich, *Root Mean Square Layer Normalization*, NeurIPS 2019,
#   [arXiv:1910.07467](https://arxiv.org/abs/1910.07467).
