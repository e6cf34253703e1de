# ---
# jupyter:
#   jupytext:
#     cell_metadata_filter: -all
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
# # 16 · Sequences: padding, causal masks, and what real models normalise over
#
# Core notebook [01](01_before_the_activation_per_token.ipynb) shows what `normalized_shape` decides: one
# mean and variance per token (`normalized_shape=dim`) or per sentence (`(seq_len, dim)`); the lesson
# says the choice "depends on the task". This notebook asks what per-sentence LN costs on real
# sequences.
#
# ## The answer
#
# **Per token, for every sequence model.** Per-sentence LN accepts one sentence length only; padding
# changes the real tokens' statistics unless the norm itself is masked; and in a left-to-right
# model it lets every position see the future, even inside a causally masked block. Per-token LN has
# none of these problems, and the Transformer, BERT, GPT-2 and LLaMA all normalise per token, as
# their own code shows. A whole sample is the right unit only where there is no sequence: images.
# No stored training run is involved; each point is shown below with code.
#
# **In this notebook you will**
#
# 1. see three costs of per-sentence LN: it accepts one sentence length only; padding changes the
#    real tokens' statistics (and a masked LN that fixes it); in a left-to-right model it lets every
#    token see the future;
# 2. check what the Transformer, BERT, GPT-2 and LLaMA do (all per token), in their own code;
# 3. write a masked per-sentence LN yourself, with instant feedback.

# %%
# %matplotlib inline
import matplotlib.pyplot as plt
import pandas as pd
import torch
import torch.nn.functional as F
from IPython.display import display
from torch import nn

from helpers.evidence import claims
from helpers.exercises.checking import compare
from helpers.lessons.group_stats import group_stats
from helpers.lessons.sequence import (
    CausalBlock,
    check_masked_sentence_layer_norm,
    dependency_matrix,
    future_leak,
    masked_layer_norm,
    output_change,
    pad_batch,
    reduced_dims,
    token_jacobian_norm,
)
from helpers.plots import dependency_figure
from helpers.widgets.token_or_sentence import token_or_sentence_demo

# %% [markdown]
# ## The lesson's batch, and a third `normalized_shape`
#
# What `normalized_shape` decides, per token or per sentence, is core notebook
# [01](01_before_the_activation_per_token.ipynb)'s (section 6; section 8 prints the lesson's batch,
# 2 sentences of 3 tokens of 4 features, digit for digit). This table adds a third choice, the
# whole batch, and checks `helpers.LayerNorm` against `nn.LayerNorm` for each:

# %%
def below(table, bound):
    """compare()'s table as every CPU prints it: max_abs_diff checked, and shown as "< bound".

    The last bits of a float32 sum depend on the order the CPU adds in, so the difference
    itself does too; that it stays below `bound` holds everywhere.
    """
    assert (table["max_abs_diff"] < bound).all(), table
    return table.drop(columns="exact").assign(max_abs_diff=f"< {bound:.0e}")


torch.manual_seed(42)
batch, seq_len, dim = 2, 3, 4
batch_inputs = torch.rand(size=(batch, seq_len, dim))  # the lesson's batch

rows = []
for shape in [(dim,), (seq_len, dim), (batch, seq_len, dim)]:
    theirs, ours = nn.LayerNorm(shape), helpers.LayerNorm(shape)
    stats = group_stats(batch_inputs, reduced_dims(batch_inputs.ndim, shape))
    assert theirs.weight.shape == ours.weight.shape == shape == theirs.bias.shape == ours.bias.shape
    assert torch.allclose(ours(batch_inputs), theirs(batch_inputs), atol=1e-6)
    rows.append({"parameters of shape normalized_shape, outputs equal":
                 theirs.weight.shape == ours.weight.shape == shape == theirs.bias.shape == ours.bias.shape
                 and torch.allclose(ours(batch_inputs), theirs(batch_inputs), atol=1e-6),
                 "normalized_shape": str(shape),
                 "reduced dims": str(reduced_dims(batch_inputs.ndim, shape)),
                 "groups": len(stats), "values per group": stats["count"].iloc[0],
                 "gamma, beta shape": str(tuple(theirs.weight.shape))})
shapes = pd.DataFrame(rows).set_index("normalized_shape")
shapes.drop(columns="parameters of shape normalized_shape, outputs equal")

# %% [markdown]
# `(batch, seq_len, dim)` puts every value in one group. Legal, but it mixes sentences: no longer
# a normalization of *each* sample, and none of the models below does it. (Per sentence, keep in
# mind that `gamma` has one entry per **position and** feature.)
#
# The function form is stricter than the module: `F.layer_norm` and `helpers.layer_norm` want
# a tuple (or list), and refuse a bare int. The lesson's `elementwise_affine=False, bias=False`
# keeps no parameters at all:

# %%
lesson_layer = nn.LayerNorm(normalized_shape=(seq_len, dim), eps=1e-5, elementwise_affine=False, bias=False)
assert lesson_layer.weight is None and lesson_layer.bias is None
assert helpers.LayerNorm((seq_len, dim), elementwise_affine=False, bias=False).weight is None
print("weight:", lesson_layer.weight, "| bias:", lesson_layer.bias,
      "| state_dict keys:", list(lesson_layer.state_dict()))

# %% [markdown]
# ### See it: one token scaled
#
# 6 tokens × 256 features; the slider scales token 2 (red). Left: each token's inputs; right:
# its LN outputs. Per sentence, the scaled token spreads out and squeezes the others.

# %%
# NBVAL_IGNORE_OUTPUT
# displays a widget: a dropdown, a slider and their live figure
demo = token_or_sentence_demo()
demo

# %% [markdown]
# Per sentence, token 2 scaled by 5: its outputs spread out and the other tokens' shrink; per
# token, every token's outputs keep spread 1.

# %%
demo.snapshot(unit="per sentence: normalized_shape=(seq_len, dim)", scale=5.0)
plt.show()

# %% [markdown]
# ## 1 · Per-sentence LN accepts one sentence length only
#
# `nn.LayerNorm((seq_len, dim))` owns a `gamma` and a `beta` of shape `(3, 4)`. A batch of
# 5-token sentences has no parameters for positions 3 and 4, and the layer refuses it (so
# does `helpers.LayerNorm`). The cell catches the error to print it:

# %%
longer = torch.rand(2, 5, dim, generator=torch.Generator().manual_seed(0))  # 2 sentences of 5 tokens
refused = []  # the per-sentence layers that raised
for layer in (nn.LayerNorm((seq_len, dim)), helpers.LayerNorm((seq_len, dim))):
    try:
        layer(longer)
    except RuntimeError as error:
        refused.append(layer)
        print(f"{type(layer).__module__}.LayerNorm -> RuntimeError: {error}")
    else:
        raise AssertionError("a (3, 4) LayerNorm accepted 5-token sentences")

token_layer = nn.LayerNorm(dim)  # gamma, beta of shape (4,): the same for every position
print("per token:", tuple(token_layer(longer).shape), tuple(token_layer(batch_inputs[:, :1]).shape))

# %% [markdown]
# Per token, the same layer takes 1 token or 5, since its parameters belong to the features,
# not to positions. Real batches hold sentences of every length, and a language model must run
# on 1 token, then 2, then 3 as it generates: a per-sentence LN cannot.
#
# (Without `gamma` and `beta`, `F.layer_norm(x, x.shape[-2:])` runs on any length; section 2
# shows what happens to the statistics when lengths are evened out with padding.)
#
# ## 2 · Padding changes the real tokens' statistics
#
# To batch sentences of different lengths, the short ones are padded. Keep the lesson's
# sentence 0 (3 tokens) and only the first 2 tokens of sentence 1, and pad sentence 1 with a
# token of zeros. `mask` is `True` for a real token:

# %%
sentences = [batch_inputs[0], batch_inputs[1, :2]]  # 3 tokens and 2 tokens
padded, mask = pad_batch(sentences)
print(padded)
print(mask)

# %% [markdown]
# Per sentence, the pad's 4 zeros enter sentence 1's mean and variance: the mean drops from
# the real tokens' value, and the variance grows. Every real token of sentence 1 is then
# normalized with the wrong numbers:

# %%
pd.concat({"sentence 1, real tokens only": group_stats(sentences[1], dims=(0, 1)),
           "sentence 1, padded": group_stats(padded[1], dims=(0, 1))}).droplevel(1).round(4)

# %% [markdown]
# Three ways to normalize the padded batch, each compared, on sentence 1's two real tokens,
# with what that sentence gets when it is alone (unpadded):
#
# - per sentence, pads counted: `F.layer_norm(padded, (3, dim))`;
# - per sentence, pads ignored: `helpers.lessons.sequence.masked_layer_norm(padded, mask)`: the sums
#   for the mean and the variance run over the real tokens only, and the pads' outputs are 0;
# - per token: `F.layer_norm(padded, (dim,))`: each token has its own statistics, so a pad
#   elsewhere cannot touch it.

# %%
alone_sentence = F.layer_norm(sentences[1], (2, dim))  # sentence 1 without its pad
alone_token = F.layer_norm(sentences[1], (dim,))
counted = F.layer_norm(padded, (seq_len, dim))
ignored = masked_layer_norm(padded, mask)
by_token = F.layer_norm(padded, (dim,))

assert not torch.allclose(counted[1, :2], alone_sentence, atol=0.1)  # the pad shifts real tokens
assert torch.allclose(ignored[1, :2], alone_sentence, atol=1e-6)  # the mask puts them back
assert torch.equal(ignored[1, 2], torch.zeros(dim))  # and the pad's output is 0
assert torch.equal(by_token[1, :2], alone_token)  # per token: untouched, bit for bit
assert torch.equal(by_token[1, 2], torch.zeros(dim))  # and a pad of zeros stays zeros
table = pd.concat([
    compare(counted[1, :2], alone_sentence, name="per sentence, pads counted"),
    compare(ignored[1, :2], alone_sentence, name="per sentence, masked_layer_norm"),
    compare(by_token[1, :2], alone_token, name="per token"),
])
# max_abs_diff as every CPU prints it: the pad's effect to 2 decimals, float32 rounding as a bound
diff = table["max_abs_diff"]
assert diff.iloc[1] < 2e-6 and diff.iloc[2] == 0
table.drop(columns="exact").assign(max_abs_diff=[f"{diff.iloc[0]:.2f}", "< 2e-06", "0 (bit for bit)"])

# %% [markdown]
# Per token, a pad of zeros comes out as zeros (`eps` keeps 0 / 0 away), and real tokens need
# no mask in the norm at all; the pads are kept out of attention instead (BERT's
# `create_attention_mask_from_input_mask`, in its `modeling.py`). Per sentence, every padded
# batch needs a mask inside the norm itself.
#
# ## 3 · In a left-to-right model, per-sentence LN leaks the future
#
# GPT-style models read left to right: the output at position $i$ may use tokens
# $0, \dots, i$ only, because during training it predicts token $i + 1$ and must not see it,
# and during generation the later tokens do not exist yet. Attention enforces this with a
# **causal mask**: before the softmax that turns position $i$'s scores into attention weights,
# the scores of every later position $j > i$ are set to $-\infty$, so their weights are exactly
# 0. A norm must not undo it.
#
# `dependency_matrix(fn, sentence)` measures it. The **Jacobian** of a function is the table of
# all its partial derivatives: entry $(a, b)$ says how much output $a$ moves per small move of
# input $b$. Its block $\partial\,\text{out}_i / \partial\,\text{in}_j$ is the `dim × dim` part
# that links input token $j$ to output token $i$, and the **Frobenius norm** of that block, the
# square root of the sum of its squared entries, is one number for its size: entry $[i, j]$ of
# the matrix. It is zero exactly when output token $i$ does not depend on input token $j$ **to
# first order**, that is, for changes small enough that the output moves linearly with them,
# $\text{out}(\text{in} + \delta) \approx \text{out}(\text{in}) + J\,\delta$ (the replacement
# test further down checks a large change too). Anything above the diagonal (hatched) is the
# future leaking in. First the two norms alone, on sentence 0:

# %%
sentence0 = batch_inputs[0]  # 3 tokens x 4 features
norms = {"LayerNorm(dim): per token": nn.LayerNorm(dim),
         "LayerNorm((seq_len, dim)): per sentence": nn.LayerNorm((seq_len, dim))}
deps = {name: dependency_matrix(norm, sentence0) for name, norm in norms.items()}
for name, matrix in deps.items():
    print(f"{name}: future leak {future_leak(matrix):.4f}\n{matrix.round(decimals=4)}")
assert future_leak(deps["LayerNorm(dim): per token"]) == 0.0
assert future_leak(deps["LayerNorm((seq_len, dim)): per sentence"]) > 0.1
dependency_figure(deps)
plt.show()

# %% [markdown]
# Per token, each output depends on its own input only (a diagonal matrix, zeros exactly).
# Per sentence, every output depends on every input, later ones included.
#
# **Where 6.05, 6.92 and 4.28 come from.** For one token of $n$ features, LN's Jacobian is
# $\frac{1}{\sigma}\big(I - \frac{1}{n}\mathbf{1}\mathbf{1}^\top - \frac{1}{n} y y^\top\big)$ with
# $\sigma = \sqrt{\mathrm{Var}[x] + \epsilon}$ and $y$ the token's output. The bracket removes two
# directions (moving every feature by the same amount, and scaling the token), which LN cannot
# see, so its Frobenius norm is $\sqrt{n - 2}$ when `eps` is negligible, and exactly
# $\sqrt{n - 2 + (1 - r)^2}$ with $r = \mathrm{Var}/(\mathrm{Var} + \epsilon)$
# (`helpers.lessons.sequence.token_jacobian_norm`). So the diagonal is about $\sqrt{2}/\sigma$ here: a
# token with a small spread is made *more* sensitive to its inputs, by $1/\sigma$, and `eps`,
# inside $\sigma$, is what caps that sensitivity for a token whose features are all nearly equal.
# In float64, from each token's variance (the lesson's: 0.0546, 0.0418, 0.1090):

# %%
closed_form = token_jacobian_norm(sentence0)  # sqrt(n - 2 + (1 - r)^2) / sqrt(Var + eps), float64
sqrt_2_over_sigma = 2**0.5 / torch.sqrt(sentence0.double().var(-1, unbiased=False) + 1e-5)
diagonal = deps["LayerNorm(dim): per token"].diagonal().double()
assert torch.allclose(diagonal, closed_form, rtol=1e-5) and torch.allclose(closed_form, sqrt_2_over_sigma, rtol=1e-6)
pd.DataFrame({"autograd diagonal": diagonal.numpy(), "sqrt(n-2+(1-r)^2)/sigma": closed_form.numpy(),
              "sqrt(2)/sigma": sqrt_2_over_sigma.numpy()}, index=pd.Index(range(seq_len), name="token")).round(3)

# %% [markdown]
# Now the same inside a model: `CausalBlock` is the first half of a **pre-LN** GPT block,
# `x + attention(norm(x))`, with a causal mask that stops position $i$ from attending to
# $j > i$. Pre-LN means the norm sits at the input of each sub-block, inside the residual
# branch, as in GPT-2 and LLaMA; the original Transformer normalised after the residual sum,
# `norm(x + attention(x))` ("post-LN"); deep dive [12](12_where_the_norm_goes.ipynb) compares the two. Two blocks with the same
# seeded weights, differing only in their norm:

# %%
blocks = {unit: CausalBlock(dim, seq_len, unit=unit, seed=0) for unit in ("token", "sentence")}
block_deps = {f"causal block, LN per {unit}": dependency_matrix(block, sentence0)
              for unit, block in blocks.items()}
assert future_leak(block_deps["causal block, LN per token"]) == 0.0
assert future_leak(block_deps["causal block, LN per sentence"]) > 0.1
dependency_figure(block_deps)
plt.show()

# %% [markdown]
# With a per-token LN the block is causal: a lower-triangular matrix, the future exactly 0.
# With a per-sentence LN, the mask is still there, yet every position depends on later
# tokens: the norm mixed the whole sentence's mean and variance into each token *before*
# attention, where no mask can reach.
#
# The same without derivatives: replace the **last** token of each sentence and measure how
# far each position's output moves.

# %%
new_last = torch.tensor([1.0, 0.0, 1.0, 0.0])
moves = {f"LN per {unit}": output_change(block, batch_inputs, new_last)[0]
         for unit, block in blocks.items()}  # sentence 0: one number per position
assert torch.equal(moves["LN per token"][:2], torch.zeros(2))  # tokens 0 and 1 do not move
assert moves["LN per sentence"][0] > 0.01  # the first token sees the last one
pd.DataFrame({k: v.numpy() for k, v in moves.items()},
             index=pd.Index(range(seq_len), name="position")).round(4)

# %% [markdown]
# A consequence for generation: with per-token LN, appending a token leaves every earlier
# position's output as it was. In attention, every position computes a *key* and a *value*
# vector from its (normalised) input; a model that generates one token at a time keeps the
# earlier positions' keys and values in memory, the **KV cache**, and computes only the new
# token's at each step (GPT-2's `past`, LLaMA's `cache_k`/`cache_v`). That is correct only if
# appending a token does not change what the earlier positions computed. A per-sentence LN would change them
# all at every step, and with a fixed `(seq_len, dim)` it cannot even run on the shorter
# prefix.

# %%
token_block = blocks["token"]
prefix = batch_inputs[:, :2]  # the first 2 tokens of each sentence
prefix_reused = torch.allclose(token_block(prefix), token_block(batch_inputs)[:, :2], atol=1e-6)
assert prefix_reused
print("per token: the first 2 positions' outputs are the same with or without token 3")

# %% [markdown]
# ## 4 · What real models do: per token, every one
#
# | model | norm | normalized over | in the authors' code |
# |---|---|---|---|
# | Transformer (Vaswani et al., 2017) | LayerNorm, `LayerNorm(x + Sublayer(x))` | the last dim, `d_model` | tensor2tensor `common_layers.layer_norm`: "Layer normalize the tensor x, averaging over the last dimension", scale and bias of shape `[filters]`, eps 1e-6 |
# | BERT (Devlin et al., 2019) | LayerNorm | the last dim, `hidden_size` | google-research/bert `modeling.py`: `layer_norm` "on the last dimension of the tensor" (`begin_norm_axis=-1, begin_params_axis=-1`) |
# | GPT-2 (Radford et al., 2019) | LayerNorm at each sub-block's input (`ln_1`, `ln_2`) and at the end (`ln_f`) | the last dim, `n_embd` | openai/gpt-2 `src/model.py`: `norm(x, scope, *, axis=-1, epsilon=1e-5)`, `g` and `b` of shape `[n_state]` |
# | LLaMA (Touvron et al., 2023) | RMSNorm (Zhang & Sennrich, 2019) at each sub-layer's input | the last dim, `dim` | meta-llama/llama `llama/model.py`: `x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + self.eps)`, `weight` of shape `(dim,)` |
#
# The Transformer paper writes `LayerNorm(x + Sublayer(x))` without naming the axis; its
# authors' code (tensor2tensor) shows it is the last one. PyTorch ports use
# `nn.LayerNorm(hidden_size)` for BERT and GPT-2 (Hugging Face `transformers`' `modeling_bert.py`
# and `modeling_gpt2.py`) and keep LLaMA's RMSNorm over the last dim.
# None normalizes per sentence.
#
# **RMSNorm differs from LN in two ways.** It does not centre: no mean is subtracted, and it
# divides by the root mean square $\sqrt{\mathrm{mean}(x^2) + \epsilon}$ instead of the standard
# deviation. And it has no $\beta$: only a per-feature gain, `weight`. Zhang and Sennrich (2019)
# argue that LN's benefit comes from the re-scaling rather than the re-centring, and drop the
# latter to save computation. On a token whose mean is 0 the two agree (up to their `eps`);
# on any other token they differ. `llama_rms_norm` below has no mean and no `b`.
#
# Below, GPT-2's `norm` and LLaMA's `RMSNorm` are rewritten in PyTorch line for line (TensorFlow's
# `reduce_mean(..., axis=-1, keepdims=True)` is `mean(-1, keepdim=True)`) and run on a batch
# the size of GPT-2 small's (`n_embd = 768`), with random `gamma`, `beta` and RMSNorm weight.
# They match `nn.LayerNorm(768)`, `nn.RMSNorm(768)` and the set's own functions, to float32
# rounding (under 1e-5 on every CPU; outputs reach 7.7, where the float32 spacing is 4.8e-7):

# %%
def gpt2_norm(x, g, b, epsilon=1e-5):
    """openai/gpt-2 src/model.py `norm`, axis=-1, in PyTorch."""
    u = x.mean(dim=-1, keepdim=True)
    n = x - u
    s = (n * n).mean(dim=-1, keepdim=True)
    x = n * torch.rsqrt(s + epsilon)
    return x * g + b


def llama_rms_norm(x, weight, eps=1e-6):
    """meta-llama/llama llama/model.py `RMSNorm._norm`, then `* self.weight`."""
    return x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + eps) * weight


gen = torch.Generator().manual_seed(0)
n_embd = 768
x = torch.randn(2, 5, n_embd, generator=gen)
g, b, w = torch.randn(n_embd, generator=gen), torch.randn(n_embd, generator=gen), torch.randn(n_embd, generator=gen)

ln, rms = nn.LayerNorm(n_embd), nn.RMSNorm(n_embd, eps=1e-6)
with torch.no_grad():
    ln.weight.copy_(g)
    ln.bias.copy_(b)
    rms.weight.copy_(w)
    model_norms = pd.concat([
        compare(gpt2_norm(x, g, b), ln(x), name="GPT-2 norm vs nn.LayerNorm(768)"),
        compare(helpers.layer_norm(x, (n_embd,), g, b), ln(x), name="helpers.layer_norm vs nn.LayerNorm(768)"),
        compare(llama_rms_norm(x, w), rms(x), name="LLaMA RMSNorm vs nn.RMSNorm(768)"),
        compare(helpers.rms_norm(x, (n_embd,), w, eps=1e-6), rms(x), name="helpers.rms_norm vs nn.RMSNorm(768)"),
    ])
assert model_norms["close"].all()
below(model_norms, bound=1e-5)

# %% [markdown]
# All four are per token. In the lesson's words, the choice "depends on the task"; the
# evidence above says which one for sequences: a task that needs sentences of different
# lengths, padding or left-to-right generation needs per-token normalization, and the models
# that define the field use it.
#
# **Where a whole sample is the right unit: images.** A convolutional network's activations
# have shape `(N, C, H, W)`: no sequence to keep causal, and every image the same size. There
# LN over a whole sample, `nn.LayerNorm((C, H, W))`, is legitimate: Ba et al. (2016, section 6.7)
# tried it on convolutional networks (faster than no normalization, slower than BatchNorm in
# their preliminary experiments). Its statistics are those of GroupNorm with one group,
# `nn.GroupNorm(1, C)` (Wu & He 2018 describe LN as that special case), but the learned
# parameters differ: GroupNorm's $\gamma$ and $\beta$ have one entry per channel, `(C,)`, LN's one
# per element, `(C, H, W)` (compared below). The image model PoolFormer (Yu et al. 2022) uses
# `nn.GroupNorm` with one group: its tokens are image patches, and each image is normalised over all
# its patches and channels at once. The cost is the one per-sentence LN pays: one loud patch moves
# every other patch's output.

# %%
images = torch.randn(2, 3, 4, 4, generator=torch.Generator().manual_seed(0)) * 3 + 1  # (N, C, H, W)
whole_ln, group_1 = nn.LayerNorm((3, 4, 4)), nn.GroupNorm(1, 3)
with torch.no_grad():
    same_stats = F.layer_norm(images, (3, 4, 4)), F.group_norm(images, 1)  # no gamma, beta
assert torch.allclose(*same_stats, atol=1e-5)
print("LayerNorm((C, H, W)) weight:", tuple(whole_ln.weight.shape), "  GroupNorm(1, C) weight:",
      tuple(group_1.weight.shape))
below(compare(*same_stats, name="F.layer_norm over (C, H, W) vs F.group_norm, 1 group"), bound=1e-5)

# %% [markdown]
# ## Exercise: a masked per-sentence LN
#
# Write `my_masked_layer_norm(x, mask)`: per sentence, the mean and the biased variance over
# the **real** tokens only (`mask` is `True` for a real token, shape `(batch, seq_len)`), then
# $(x - \mathrm{E}[x]) / \sqrt{\mathrm{Var}[x] + 10^{-5}}$ for the real tokens and 0 for the
# pads. `check_masked_sentence_layer_norm` tries batches padded with 0, one padded with 7.0 (a
# pad value that would show if it leaked in) and one without pads, and compares with
# `helpers.lessons.sequence.masked_layer_norm` (which, like torch's norms, refuses to run inside your
# function while it is checked). As shipped, it ignores the mask.

# %%
def my_masked_layer_norm(x, mask, eps=1e-5):
    """LayerNorm per sentence over the real tokens (mask True) only; 0 at the pads."""
    mean = x.mean(dim=(1, 2), keepdim=True)
    var = ((x - mean) ** 2).mean(dim=(1, 2), keepdim=True)
    return (x - mean) / torch.sqrt(var + eps)  # TODO: leave the pads out, and zero them


check_masked_sentence_layer_norm(my_masked_layer_norm)

# %% [markdown]
# <details><summary>Solution</summary>
#
# ```python
# def my_masked_layer_norm(x, mask, eps=1e-5):
#     real = mask[..., None]  # (batch, seq_len, 1)
#     count = real.sum(dim=(1, 2), keepdim=True) * x.shape[-1]  # real values per sentence
#     mean = torch.where(real, x, 0.0).sum(dim=(1, 2), keepdim=True) / count
#     centred = torch.where(real, x - mean, 0.0)  # 0 at the pads
#     var = (centred ** 2).sum(dim=(1, 2), keepdim=True) / count
#     return centred / torch.sqrt(var + eps)
# ```
#
# `torch.where` rather than `x * mask`: a pad holding `nan` or `inf` stays out too.
#
# </details>

# %% [markdown]
# ## Claims ledger
#
# Each claim this notebook makes, its outcome and its evidence. No stored experiment is involved:
# a claim resting on a check in the cells above gets "supported" when that check, evaluated here on
# the cells' results, holds and "refuted" when it does not; a claim resting on a citation alone is
# "not tested".

# %%
PER_TOKEN, PER_SENTENCE = "LayerNorm(dim): per token", "LayerNorm((seq_len, dim)): per sentence"
CAUSAL_TOKEN, CAUSAL_SENTENCE = "causal block, LN per token", "causal block, LN per sentence"
groups = shapes["groups"].tolist()
LEDGER = [  # (claim, evidence, shown in): a check computed above, or None (a citation only)
    ("`normalized_shape` names the trailing dims to average over; the dims before index the groups (the whole "
     "batch too)", claims.Check(groups == [batch * seq_len, batch, 1], f"groups: {groups}"),
     "*The lesson's batch, and a third `normalized_shape`*; core 01"),
    ("`gamma` and `beta` have shape `normalized_shape`, for `nn.LayerNorm` and `helpers.LayerNorm` alike, and the "
     "two give the same outputs",
     claims.Check(shapes["parameters of shape normalized_shape, outputs equal"].all(),
                  f"{int(shapes['parameters of shape normalized_shape, outputs equal'].sum())} of {len(shapes)} shapes"),
     "*The lesson's batch, and a third `normalized_shape`*"),
    ("`elementwise_affine=False, bias=False` keeps no parameters",
     claims.Check(lesson_layer.weight is None and lesson_layer.bias is None and not lesson_layer.state_dict(),
                  f"state_dict keys: {list(lesson_layer.state_dict())}"), "*The lesson's batch*"),
    ("`LayerNorm((seq_len, dim))` refuses any other length; `LayerNorm(dim)` takes any",
     claims.Check(len(refused) == 2 and token_layer(longer).shape == longer.shape,
                  f"{len(refused)} of 2 per-sentence layers raised on 5 tokens"), "§1"),
    ("padding changes a per-sentence LN's output for the real tokens",
     claims.Check(not torch.allclose(counted[1, :2], alone_sentence, atol=0.1), f"moved by {diff.iloc[0]:.2f}"), "§2"),
    ("a masked per-sentence LN gives the unpadded result (to float32 rounding), and 0 at the pads",
     claims.Check(torch.allclose(ignored[1, :2], alone_sentence, atol=1e-6) and torch.equal(ignored[1, 2], torch.zeros(dim)),
                  f"against the unpadded sentence, tolerance 1e-6; the pad's largest output {ignored[1, 2].abs().max():g}"),
     "§2, `masked_layer_norm`"),
    ("per-token LN is untouched by padding, bit for bit",
     claims.Check(torch.equal(by_token[1, :2], alone_token),
                  f"largest difference {(by_token[1, :2] - alone_token).abs().max():g}"), "§2"),
    ("per-sentence LN makes every position depend on later tokens; per-token LN does not",
     claims.Check(future_leak(deps[PER_TOKEN]) == 0.0 and future_leak(deps[PER_SENTENCE]) > 0.1,
                  f"future leak {future_leak(deps[PER_TOKEN]):g} per token, {future_leak(deps[PER_SENTENCE]):.2f} per "
                  "sentence"), "§3, `dependency_matrix` of the norms"),
    ("... even inside a causally masked block; with per-token LN the block stays causal",
     claims.Check(future_leak(block_deps[CAUSAL_TOKEN]) == 0.0 and future_leak(block_deps[CAUSAL_SENTENCE]) > 0.1,
                  f"future leak {future_leak(block_deps[CAUSAL_TOKEN]):g} per token, "
                  f"{future_leak(block_deps[CAUSAL_SENTENCE]):.2f} per sentence"), "§3, `dependency_matrix` of the block"),
    ("... and replacing the last token moves the first position's output only under per-sentence LN",
     claims.Check(torch.equal(moves["LN per token"][:2], torch.zeros(2)) and moves["LN per sentence"][0] > 0.01,
                  f"first position moves by {moves['LN per sentence'][0]:.4f} per sentence, "
                  f"{moves['LN per token'][0]:g} per token"), "§3, `output_change`"),
    ("per-token LN lets a generator reuse earlier positions' outputs as tokens are appended",
     claims.Check(prefix_reused, "the first 2 positions with and without token 3, tolerance 1e-6"), "§3, last cell"),
    ("per-token LN's Jacobian has Frobenius norm √(n − 2 + (1 − r)²)/√(Var + ε)",
     claims.Check(torch.allclose(diagonal, closed_form, rtol=1e-5),
                  "autograd diagonal " + ", ".join(f"{v:.2f}" for v in diagonal.tolist())),
     "§3, `token_jacobian_norm` against autograd (tested in `tests/test_sequence.py`)"),
    ("the Transformer, BERT and GPT-2 use per-token LayerNorm, LLaMA per-token RMSNorm", None,
     "§4: the authors' code, cited"),
    ("GPT-2's and LLaMA's norms, rewritten line for line, equal `nn.LayerNorm(d)`, `nn.RMSNorm(d)` and the set's "
     "functions", claims.Check(model_norms["close"].all(), f"{int(model_norms['close'].sum())} of {len(model_norms)} "
                               "comparisons close"), "§4"),
    ("RMSNorm has no β: only a per-feature gain", claims.Check([n for n, _ in rms.named_parameters()] == ["weight"],
                                                              f"nn.RMSNorm's parameters: {[n for n, _ in rms.named_parameters()]}"),
     "§4, `llama_rms_norm`"),
    ("LN's benefit comes from the re-scaling rather than the re-centring", None, "Zhang & Sennrich 2019"),
    ("over a whole sample `(C, H, W)`, LN's statistics are GroupNorm(1, C)'s, its parameters per element rather "
     "than per channel",
     claims.Check(torch.allclose(*same_stats, atol=1e-5) and tuple(whole_ln.weight.shape) == (3, 4, 4)
                  and tuple(group_1.weight.shape) == (3,),
                  f"within 1e-5; weights {tuple(whole_ln.weight.shape)} and {tuple(group_1.weight.shape)}"),
     "§4, the image cell; Wu & He 2018"),
    ("LN over a whole sample trains convolutional networks faster than no normalization, slower than BatchNorm", None,
     "Ba et al. 2016 §6.7"),
]
ledger = claims.evidence_ledger(LEDGER)
with pd.option_context("display.max_colwidth", None):
    display(ledger)

# %%
assert len(ledger) == len(LEDGER) and ledger["outcome"].isin(claims.OUTCOMES).all()

# %% [markdown]
# ## Glossary
#
# The lesson's words for per token and per sentence (以 token 为单位, 以句子为单位) are in core notebook
# [01](01_before_the_activation_per_token.ipynb). Padding, masks and causal (left-to-right) models are
# not in the lesson; they are this notebook's additions: a **pad** is a filler token that evens out
# sentence lengths in a batch, a **mask** marks which tokens are real, and a **causal mask** stops
# position $i$ from attending to later positions (section 3).
#
# ## References
#
# - J. L. Ba, J. R. Kiros, G. E. Hinton, *Layer Normalization*, 2016,
#   [arXiv:1607.06450](https://arxiv.org/abs/1607.06450); section 6.7: LN on convolutional networks.
# - A. Vaswani et al., *Attention Is All You Need*, NeurIPS 2017,
#   [arXiv:1706.03762](https://arxiv.org/abs/1706.03762), section 3.1: `LayerNorm(x + Sublayer(x))`;
#   the authors' code: [tensor2tensor `layers/common_layers.py`](https://github.com/tensorflow/tensor2tensor/blob/master/tensor2tensor/layers/common_layers.py),
#   `layer_norm` ("averaging over the last dimension").
# - J. Devlin, M.-W. Chang, K. Lee, K. Toutanova, *BERT: Pre-training of Deep Bidirectional
#   Transformers for Language Understanding*, NAACL 2019, [arXiv:1810.04805](https://arxiv.org/abs/1810.04805);
#   code: [google-research/bert `modeling.py`](https://github.com/google-research/bert/blob/master/modeling.py), `layer_norm`.
# - A. Radford, J. Wu, R. Child, D. Luan, D. Amodei, I. Sutskever, *Language Models are
#   Unsupervised Multitask Learners*, OpenAI, 2019 (section 2.3: layer normalization moved to
#   the input of each sub-block, plus one after the final block); code:
#   [openai/gpt-2 `src/model.py`](https://github.com/openai/gpt-2/blob/master/src/model.py), `norm` and `block`.
# - H. Touvron et al., *LLaMA: Open and Efficient Foundation Language Models*, 2023,
#   [arXiv:2302.13971](https://arxiv.org/abs/2302.13971) (section 2.2, pre-normalization with
#   RMSNorm); code: [meta-llama/llama `llama/model.py`](https://github.com/meta-llama/llama/blob/main/llama/model.py), `RMSNorm`.
# - B. Zhang, R. Sennrich, *Root Mean Square Layer Normalization*, NeurIPS 2019,
#   [arXiv:1910.07467](https://arxiv.org/abs/1910.07467).
# - Y. Wu, K. He, *Group Normalization*, ECCV 2018, [arXiv:1803.08494](https://arxiv.org/abs/1803.08494):
#   LayerNorm and InstanceNorm as GroupNorm with one group and with one channel per group.
# - W. Yu et al., *MetaFormer Is Actually What You Need for Vision*, CVPR 2022 (PoolFormer),
#   [arXiv:2111.11418](https://arxiv.org/abs/2111.11418).
# - PyTorch, [`torch.nn.LayerNorm`](https://docs.pytorch.org/docs/stable/generated/torch.nn.LayerNorm.html)
#   (the mean and variance over the last `len(normalized_shape)` dims; `weight` and `bias` of
#   shape `normalized_shape`) and [`torch.nn.RMSNorm`](https://docs.pytorch.org/docs/stable/generated/torch.nn.RMSNorm.html).
