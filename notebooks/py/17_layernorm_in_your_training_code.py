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
# # 17 · LayerNorm in your own training code
#
# The other notebooks ask what LayerNorm (LN) computes and whether it helps. This one takes the
# questions people bring from their own training scripts. Each question is a section, and each
# answer is run in a cell and checked against PyTorch, or against the same computation in float64.
#
# **The questions**, one section each:
#
# 1. Why does my LayerNorm give NaN, or all zeros, in float16? And does autocast run it in float32?
# 2. Should I apply weight decay to LayerNorm's gamma and beta?
# 3. Can I drop LayerNorm's bias (`bias=False`)?
# 4. Which `eps` should I use, and must it match a pretrained checkpoint's?
# 5. How do I apply LayerNorm to images, `(N, C, H, W)`?
# 6. How do I put LayerNorm inside an LSTM cell?
# 7. Is my Transformer block the same as PyTorch's, and can I swap its LayerNorm?
#
# ## The answer
#
# 1. **Half precision.** A hand-written LN in float16 squares each centred value. Once
#    $|x - \mathrm{E}[x]|$ reaches 256, the square passes float16's largest number, 65,504, and the
#    whole row comes out as zeros; written with `.sum()`, far earlier. An `eps` of `1e-12` rounds to
#    0 in float16, and a constant row gives $0/0$, NaN. `nn.LayerNorm`, `F.layer_norm` and
#    `helpers.layer_norm` compute in float32 and return the right values, though at `eps = 1e-12` a
#    constant row's gradient still overflows. CPU autocast leaves LN in its input's dtype; CUDA
#    autocast runs it in float32, as PyTorch documents.
# 2. **Weight decay.** Common practice exempts gamma, beta and every bias, because decay pulls gamma
#    towards 0 rather than towards its starting value, 1. Two parameter groups do it. Group by module
#    type: the popular "decay what is 2-D or more" rule decays a per-sentence LN's gamma and beta.
# 3. **No bias.** Where a Linear layer with a bias follows, dropping beta costs nothing: that bias
#    absorbs it exactly. Where nothing biased follows, the model can no longer add a constant there.
# 4. **`eps`.** Frameworks differ (1e-5, 1e-6, 1e-12, 1e-3), and `eps` is not saved in the
#    `state_dict`, so a checkpoint loads into a layer with another `eps` without a word. On rows of
#    variance near 1 the mismatch moves outputs by a few parts in a million, on nearly constant rows
#    by percent. Use the checkpoint's `eps`. For a new model, keep the default, 1e-5.
# 5. **Images.** "LayerNorm" on images means one of two things: per pixel over the channels
#    (ConvNeXt, on a channels-last tensor), or over each whole image `(C, H, W)`, which is GroupNorm
#    with one group. They normalize different things. `nn.LayerNorm(C)` applied to an
#    `(N, C, H, W)` tensor is neither: it normalizes over the width.
# 6. **LSTM.** Ba et al.'s cell normalizes $W_x x_t$ and $W_h h_{t-1}$ separately, and the cell
#    before its output `tanh`. It takes a dozen lines, checked here against `nn.LSTMCell` and against
#    the LN-LSTM that deep dive [13](13_does_it_speed_up_training.ipynb) trains.
# 7. **Your own block.** Core notebook 02's Pre-LN and Post-LN blocks give the same outputs and
#    gradients as `nn.TransformerEncoderLayer` with `norm_first=True` and `False`, once their weights
#    are copied in under its names. A hand-written LN, `helpers.LayerNorm` and `nn.LayerNorm` share
#    the names `weight` and `bias`, so a block's weights load across all three.

# %%
import pandas as pd
import torch
import torch.nn.functional as F
from IPython.display import display
from torch import nn

from helpers.evidence import claims
from helpers.exercises.checking import compare
from helpers.experiments.lstm_adding import StackedLSTM

pd.set_option("display.width", 120)


def agree(table, bound):
    """compare()'s table as every CPU prints it: max_abs_diff checked, and shown as "< bound".

    The last bits of a float32 sum depend on the order the CPU adds in; that the difference
    stays below `bound` holds everywhere.
    """
    assert (table["max_abs_diff"] < bound).all(), table
    return table.drop(columns="exact").assign(max_abs_diff=f"< {bound:.0e}")


# %% [markdown]
# ## 1 · Why does my LayerNorm give NaN, or all zeros, in float16?
#
# Many training scripts write LN by hand, in whatever dtype the activations have. Here it is,
# with the same code run in float64 as the reference:

# %%
def hand_layer_norm(x, eps=1e-5):
    """LN as a training script writes it: every step in x's own dtype."""
    mean = x.mean(-1, keepdim=True)
    var = ((x - mean) ** 2).mean(-1, keepdim=True)
    return (x - mean) / torch.sqrt(var + eps)


def hand_layer_norm_sum(x, eps=1e-5):
    """The same, with the variance written as a sum divided by n."""
    n = x.shape[-1]
    mean = x.sum(-1, keepdim=True) / n
    var = ((x - mean) ** 2).sum(-1, keepdim=True) / n
    return (x - mean) / torch.sqrt(var + eps)


f16, bf16 = torch.finfo(torch.float16), torch.finfo(torch.bfloat16)
print(f"float16: largest {f16.max:,.0f}; 255² = {255**2:,}, 256² = {256**2:,}")
print(f"bfloat16: largest {bf16.max:.2e}, spacing just above 1: {bf16.eps} (float16's: {f16.eps})")

# %% [markdown]
# **Overflow.** One row of 768 features (GPT-2 small's width), alternately $-s$ and $+s$: its mean
# is 0, each centred value is $\pm s$, and the right output is $\pm 1$. The table shows the first
# two outputs of each way of computing LN in float16:

# %%
overflow_rows, errors = {}, {}
for s in (1.0, 9.0, 10.0, 255.0, 256.0, 1000.0):
    x = (s * torch.tensor([-1.0, 1.0]).repeat(384)).half()
    ref = hand_layer_norm(x.double())
    outs = {"hand-written, .mean()": hand_layer_norm(x),
            "hand-written, .sum() / n": hand_layer_norm_sum(x),
            "hand-written, in float32": hand_layer_norm(x.float()).half(),
            "F.layer_norm": F.layer_norm(x, (768,)),
            "helpers.layer_norm": helpers.layer_norm(x, (768,))}
    overflow_rows[f"s = {s:g}"] = {name: out[:2].tolist() for name, out in outs.items()}
    errors[s] = {name: (out.double() - ref).abs().max().item() for name, out in outs.items()}
errors = pd.DataFrame(errors).T
# against float64, within float16's half spacing at 1 (4.9e-4): the three that compute in float32, at every s
assert (errors[["hand-written, in float32", "F.layer_norm", "helpers.layer_norm"]] < 5e-4).all().all()
assert (errors.loc[[1.0, 9.0, 10.0, 255.0], "hand-written, .mean()"] < 5e-4).all()
assert (errors.loc[[256.0, 1000.0], "hand-written, .mean()"] > 0.999).all()  # every output 0
assert (errors.loc[[10.0, 255.0, 256.0, 1000.0], "hand-written, .sum() / n"] > 0.999).all()
pd.DataFrame(overflow_rows).T

# %% [markdown]
# At $s = 256$ each square is $65{,}536$, more than float16 holds: it becomes `inf`, the variance is
# `inf`, and every output is $x / \infty = 0$. No NaN and no warning, just a row of zeros. Written
# with `.sum()`, the sum of 768 squares passes 65,504 already at $s = 10$ ($768 \cdot 100 = 76{,}800$).
# `.mean()` survives longer, because torch adds a float16 tensor's values in float32 before it
# divides; each square is still rounded to float16 first. Computing in float32 and casting back,
# `hand_layer_norm(x.float()).half()`, fixes both. `nn.LayerNorm`, `F.layer_norm` and
# `helpers.layer_norm` do that for you.
#
# **NaN.** The other failure is `eps`. float16's smallest positive number is
# $2^{-24} \approx 6 \times 10^{-8}$, so BERT's `eps = 1e-12` rounds to 0, while bfloat16 (8 bits of
# exponent, like float32) keeps it:

# %%
print("1e-12 in float16:", torch.tensor(1e-12, dtype=torch.float16).item(),
      "  in bfloat16:", torch.tensor(1e-12, dtype=torch.bfloat16).item())
constant = torch.full((768,), 3.0)  # a row whose features are all equal: variance 0 (a pad token of zeros is one)
nan_rows = {}
for dtype, eps in ((torch.float16, 1e-12), (torch.float16, 1e-5), (torch.bfloat16, 1e-12)):
    row = constant.to(dtype)
    nan_rows[f"{str(dtype)[6:]}, eps={eps:g}"] = {
        "hand-written": hand_layer_norm(row, eps)[0].item(),
        "F.layer_norm": F.layer_norm(row, (768,), eps=eps)[0].item(),
        "helpers.layer_norm": helpers.layer_norm(row, (768,), eps=eps)[0].item()}
nan_rows = pd.DataFrame(nan_rows).T
assert pd.isna(nan_rows.loc["float16, eps=1e-12", "hand-written"])  # 0 / 0
assert (nan_rows.loc["float16, eps=1e-12", ["F.layer_norm", "helpers.layer_norm"]] == 0.0).all()
assert (nan_rows.drop(index="float16, eps=1e-12") == 0.0).all().all()
nan_rows

# %% [markdown]
# ### Does torch's own LayerNorm fail the same way?
#
# No. The hand-written LN computes $0 / \sqrt{0 + 0} = 0/0$. Torch's kernel and `helpers.layer_norm`
# add `eps` in float32, where `1e-12` is not 0, and return 0.
#
# **The gradient is a different matter.** For a constant row the centred values are 0, and LN's
# gradient (derived in deep dive [14](14_backward_numerics_speed.ipynb)) reduces to
# $dx = (g - \bar g)/\sqrt{\epsilon}$ for $\gamma = 1$, where $g$ is the gradient arriving from
# above. At `eps = 1e-12` that is $10^6$ times $g$, far beyond float16's range. The forward pass
# stays finite, and the backward pass does not:

# %%
upstream = torch.arange(8.0)  # the gradient arriving from above, g
grad_rows = {}
for eps in (1e-12, 1e-5):
    expected = (upstream - upstream.mean()) / eps**0.5  # (g - mean g) / sqrt(eps), in float32
    for name, fn in (("F.layer_norm", F.layer_norm), ("helpers.layer_norm", helpers.layer_norm)):
        grads = {}
        for dtype in (torch.float32, torch.float16):
            row = torch.full((8,), 3.0, dtype=dtype, requires_grad=True)
            fn(row, (8,), eps=eps).backward(upstream.to(dtype))
            grads[dtype] = row.grad
        assert torch.allclose(grads[torch.float32], expected, rtol=1e-5)
        grad_rows[(f"eps={eps:g}", name)] = {"largest |dx|, float32": f"{grads[torch.float32].abs().max():.4g}",
                                             "float16 gradient finite": bool(grads[torch.float16].isfinite().all())}
grad_rows = pd.DataFrame(grad_rows).T
assert not grad_rows.loc["eps=1e-12", "float16 gradient finite"].any()
assert grad_rows.loc["eps=1e-05", "float16 gradient finite"].all()
grad_rows

# %% [markdown]
# So in float16, an `eps` as small as `1e-12` protects the forward pass only. Exactly constant rows
# are rare, but any row whose variance is far below $10^{-5}$ is amplified the same way, by
# $1/\sqrt{\mathrm{Var} + \epsilon}$. Section 4 comes back to choosing `eps`.
#
# ### Does autocast run LayerNorm in float32?
#
# `torch.autocast` casts each operation to the dtype its op list names. On the CPU, `linear`
# runs in the low-precision dtype, and `layer_norm` is on no list: it runs in the dtype of what it
# is given.

# %%
linear, norm = nn.Linear(16, 16), nn.LayerNorm(16)
x = torch.randn(4, 16, generator=torch.Generator().manual_seed(0))
autocast_rows = {}
for dtype in (torch.bfloat16, torch.float16):
    with torch.autocast("cpu", dtype=dtype):
        hidden = linear(x)
        autocast_rows[f"autocast('cpu', {dtype})"] = {"Linear output": str(hidden.dtype),
                                                      "LayerNorm of it": str(norm(hidden).dtype),
                                                      "LayerNorm of float32 x": str(norm(x).dtype)}
autocast_rows = pd.DataFrame(autocast_rows).T
for dtype in (torch.bfloat16, torch.float16):
    row = autocast_rows.loc[f"autocast('cpu', {dtype})"]
    assert row["Linear output"] == row["LayerNorm of it"] == str(dtype) and row["LayerNorm of float32 x"] == "torch.float32"
autocast_rows

# %% [markdown]
# On a GPU it is different. PyTorch's documentation lists `layer_norm` (and `group_norm`) among the
# "CUDA Ops that can autocast to float32": under `torch.autocast("cuda")` a float16 input is cast
# up, and the output is float32. The cells here run on the CPU, but torch registers its autocast
# rules even in a CPU-only build, and they can be read: `layer_norm` has a CUDA rule and no CPU one,
# while `linear` has both.

# %%
has_rule = torch._C._dispatch_has_kernel_for_dispatch_key  # torch's dispatcher: is a kernel registered for this key?
rules = pd.DataFrame({op: {"CUDA autocast rule": has_rule(f"aten::{op}", "AutocastCUDA"),
                           "CPU autocast rule": has_rule(f"aten::{op}", "AutocastCPU")}
                      for op in ("layer_norm", "group_norm", "linear")}).T
assert rules.loc["layer_norm"].tolist() == [True, False] and rules.loc["linear"].tolist() == [True, True]
rules

# %% [markdown]
# **What to do.** In half precision, use `nn.LayerNorm` or `F.layer_norm`: they compute in float32
# and return the input's dtype. If you write your own norm, compute it in float32 and cast the
# result back (`x.float()`, then `.to(x.dtype)`). In float16, do not use an `eps` as small as
# 1e-12: 1e-5 caps a constant row's gradient at 316 times $g$. bfloat16 has float32's range, so
# neither overflow arises there, but it keeps 8 significant bits to float16's 11.
#
# What rounding the *input* to half precision does to a row with a large mean is deep dive
# [14](14_backward_numerics_speed.ipynb)'s, in *Numerical stability: three ways to compute a variance*.

# %% [markdown]
# ## 2 · Should I apply weight decay to LayerNorm's gamma and beta?
#
# Weight decay shrinks every parameter it touches towards 0. For a weight matrix that is the point.
# For LN's gamma it pulls the layer's output scale towards 0, away from its starting value, 1, and
# for beta it pulls the shift towards 0. Common practice excludes both, and every bias:
#
# - nanoGPT: "all weight tensors in matmuls + embeddings decay, all biases and layernorms don't",
#   by the rule `p.dim() >= 2`;
# - BERT: `exclude_from_weight_decay=["LayerNorm", "layer_norm", "bias"]`;
# - Hugging Face's `Trainer`: no decay for the parameters of `nn.LayerNorm` modules and for every bias.
#
# Two parameter groups do it. Grouping by module type, with `isinstance`, also catches a subclass
# of `nn.LayerNorm` (`helpers.LayerNorm` is one) and an LN whose gamma is 2-D:

# %%
NORMS = (nn.LayerNorm, nn.GroupNorm, nn.RMSNorm, nn.modules.batchnorm._BatchNorm)  # norm layers' gamma and beta


def decay_groups(model, weight_decay):
    """AdamW's parameter groups: decay for the weights, none for every norm's parameters and every bias."""
    decay, no_decay = [], []
    for module in model.modules():
        for name, p in module.named_parameters(recurse=False):
            (no_decay if isinstance(module, NORMS) or name == "bias" else decay).append(p)
    return [{"params": decay, "weight_decay": weight_decay}, {"params": no_decay, "weight_decay": 0.0}]


torch.manual_seed(0)
model = nn.Sequential(nn.Linear(8, 16), helpers.LayerNorm(16), nn.GELU(), nn.Linear(16, 8),
                      nn.Unflatten(-1, (2, 4)), nn.LayerNorm((2, 4)))  # the last: per sentence, 2 tokens x 4 features
groups = decay_groups(model, weight_decay=0.1)
optimizer = torch.optim.AdamW(groups, lr=0.01)
names = {id(p): n for n, p in model.named_parameters()}
grouped = [[names[id(p)] for p in g["params"]] for g in groups]
assert sorted(grouped[0] + grouped[1]) == sorted(names.values())  # every parameter in exactly one group
by_dim_rule = [n for n, p in model.named_parameters() if p.dim() >= 2]  # nanoGPT's rule
pd.DataFrame({"weight_decay": [g["weight_decay"] for g in optimizer.param_groups],
              "parameters": [", ".join(g) for g in grouped],
              "of which p.dim() >= 2 would decay": [", ".join(n for n in g if n in by_dim_rule) for g in grouped]})

# %% [markdown]
# The `p.dim() >= 2` rule would decay `5.weight` and `5.bias`, the per-sentence LN's gamma and beta,
# both of shape `(2, 4)`; grouping by module type does not.
#
# **The effect on the optimizer.** AdamW subtracts `lr * weight_decay * p` from each parameter of a
# decayed group at every step, whatever the gradient. To see that term alone, give every parameter
# a zero gradient, so that Adam's own step is exactly 0, and take 100 steps with the groups above
# and with one group that decays everything:

# %%
def after_zero_gradient_steps(param_groups, params, steps=100):
    """Each parameter after `steps` AdamW steps whose gradients are all 0: only the decay moves it."""
    opt = torch.optim.AdamW(param_groups, lr=0.01)
    for _ in range(steps):
        for p in params:
            p.grad = torch.zeros_like(p)
        opt.step()
    return opt


gamma = model[1].weight
start = {n: p.detach().clone() for n, p in model.named_parameters()}
opt_grouped = after_zero_gradient_steps(decay_groups(model, 0.1), list(model.parameters()))
gamma_grouped = gamma.detach().clone()
with torch.no_grad():  # back to the start, then decay everything
    for n, p in model.named_parameters():
        p.copy_(start[n])
after_zero_gradient_steps([{"params": list(model.parameters()), "weight_decay": 0.1}], list(model.parameters()))
gamma_all = gamma.detach().clone()
assert torch.equal(gamma_grouped, torch.ones(16))  # excluded: untouched
assert torch.allclose(gamma_all, torch.full((16,), (1 - 0.01 * 0.1) ** 100), rtol=1e-5)  # (1 - lr·wd)^steps, 100 float32 roundings
saved = opt_grouped.state_dict()["param_groups"]
print("gamma of the LN after 100 steps: excluded", gamma_grouped[0].item(), "| decayed", round(gamma_all[0].item(), 4),
      f"= (1 - 0.01 * 0.1)^100 = {(1 - 0.01 * 0.1) ** 100:.4f}")
print("what the optimizer's state_dict saves per group:",
      [{"weight_decay": g["weight_decay"], "params": g["params"]} for g in saved])

# %% [markdown]
# The excluded gamma stays at 1; the decayed one has lost 9.5% of its scale in 100 steps, a pull
# that the loss's gradient must keep undoing. The groups and their `weight_decay` are part of the
# optimizer's `state_dict`, so a resumed run keeps them.
#
# Does excluding them train better? Here that is the field's practice, not a measured result. LN
# adds a twist for the weights *before* it: scaling them all together leaves LN's output unchanged,
# so decaying them changes their effective learning rate rather than the function the network
# computes (van Laarhoven, 2017).

# %% [markdown]
# ## 3 · Can I drop LayerNorm's bias (`bias=False`)?
#
# Yes. `nn.LayerNorm(d, bias=False)` keeps gamma and drops beta (PyTorch 2.1 and later), as
# nanoGPT's `bias=False` setting does ("a bit better and faster", its author writes).
# `helpers.LayerNorm` takes the same argument. Here it is checked against torch's: outputs,
# gradients and `state_dict` keys.

# %%
torch.manual_seed(0)
theirs, ours = nn.LayerNorm(16, bias=False), helpers.LayerNorm(16, bias=False)
with torch.no_grad():
    theirs.weight.copy_(torch.randn(16))
    ours.weight.copy_(theirs.weight)
x = torch.randn(4, 16)
x_theirs, x_ours = x.clone().requires_grad_(), x.clone().requires_grad_()
y_theirs, y_ours = theirs(x_theirs), ours(x_ours)
(y_theirs**3).sum().backward()  # a cube, so that a wrong backward cannot hide (deep dive 14)
(y_ours**3).sum().backward()
keys = list(theirs.state_dict()), list(ours.state_dict())
assert keys[0] == keys[1] == ["weight"] and theirs.bias is None and ours.bias is None
print("state_dict keys:", keys[0], "and", keys[1])
agree(pd.concat([compare(y_ours, y_theirs, name="output"),
                 compare(x_ours.grad, x_theirs.grad, name="gradient, input"),
                 compare(ours.weight.grad, theirs.weight.grad, name="gradient, gamma")]), bound=1e-4)

# %% [markdown]
# **What dropping beta costs depends on what follows.** When a Linear layer with a bias comes next,
# nothing: $W(\gamma \odot \hat x + \beta) + b = W(\gamma \odot \hat x) + (W\beta + b)$, so a
# bias-free LN followed by a Linear with bias $W\beta + b$ computes the same function. That is the
# case of every LN in a Pre-LN Transformer block with biased Linears: the next layers are the
# query, key and value projections and the MLP's first Linear.

# %%
d, k = 16, 8
gen = torch.Generator().manual_seed(1)
with_beta, after = nn.LayerNorm(d).double(), nn.Linear(d, k).double()  # float64: the identity, without rounding
with torch.no_grad():
    with_beta.weight.copy_(torch.randn(d, generator=gen))
    with_beta.bias.copy_(torch.randn(d, generator=gen))
    without_beta, absorbed = nn.LayerNorm(d, bias=False).double(), nn.Linear(d, k).double()
    without_beta.weight.copy_(with_beta.weight)
    absorbed.weight.copy_(after.weight)
    absorbed.bias.copy_(after.weight @ with_beta.bias + after.bias)  # b' = W beta + b
    x = torch.randn(32, d, generator=gen, dtype=torch.float64)
    absorbed_diff = (absorbed(without_beta(x)) - after(with_beta(x))).abs().max().item()
assert absorbed_diff < 1e-12
print("LN with beta, then Linear  vs  LN without beta, then Linear with bias W beta + b: "
      "largest difference < 1e-12")

# %% [markdown]
# When nothing biased follows (nanoGPT with `bias=False` drops the Linears' biases too; LLaMA's
# RMSNorm has no beta and its Linears no bias), the shift is gone for good. A bias-free LN followed
# by a bias-free Linear is an odd function, $f(-x) = -f(x)$: it cannot add a constant to its output.
# With beta, $f(x) + f(-x) = 2(W\beta + b)$, whatever $x$:

# %%
def odd_part(f, x):
    """f(x) + f(-x): 0 for an odd function, 2 * (the constant it adds) for an odd one plus a constant."""
    return f(x) + f(-x)


with torch.no_grad():
    bare = nn.Sequential(nn.LayerNorm(d, bias=False), nn.Linear(d, k, bias=False)).double()
    bare[0].weight.copy_(with_beta.weight)
    bare[1].weight.copy_(after.weight)
    shifted = nn.Sequential(with_beta, after)
    bare_sum, shifted_sum = odd_part(bare, x), odd_part(shifted, x)
assert bare_sum.abs().max() < 1e-12
assert torch.allclose(shifted_sum, (2 * (after.weight @ with_beta.bias + after.bias)).expand(32, k), atol=1e-12)
print("bias-free LN, bias-free Linear: largest |f(x) + f(-x)| < 1e-12")
print("with beta: f(x) + f(-x) = 2 (W beta + b) for all 32 inputs; its first entries:",
      [round(v, 3) for v in shifted_sum[0, :4].tolist()])

# %% [markdown]
# Whether a model misses that constant is an empirical question, not measured here. The LSTM cell
# of section 6 is another place where beta is redundant: the gate bias absorbs it.

# %% [markdown]
# ## 4 · Which `eps` should I use, and must it match a pretrained checkpoint's?
#
# Each framework picks its own default, and so does each model:
#
# | where | LN's `eps` |
# |---|---|
# | PyTorch `nn.LayerNorm`, `F.layer_norm` | 1e-5 (printed below) |
# | GPT-2 (`openai/gpt-2`, `model.py`: `norm(..., epsilon=1e-5)`) | 1e-5 |
# | Flax `nn.LayerNorm`; the Transformer's tensor2tensor code; ConvNeXt | 1e-6 |
# | BERT (Hugging Face `BertConfig.layer_norm_eps`) | 1e-12 |
# | Keras `LayerNormalization` | 1e-3 |
#
# `eps` is a constructor argument, not a parameter or a buffer, so **it is not in the
# `state_dict`**. A checkpoint trained with one `eps` loads into a layer built with another, with
# no error and no warning:

# %%
print("nn.LayerNorm's default eps:", nn.LayerNorm(8).eps)
checkpoint = nn.LayerNorm(768, eps=1e-12).state_dict()  # a BERT-like LN's saved weights
loaded = nn.LayerNorm(768)  # built with the default, 1e-5
result = loaded.load_state_dict(checkpoint)  # strict by default, and it still passes
assert not result.missing_keys and not result.unexpected_keys and loaded.eps == 1e-5
print("keys saved:", list(checkpoint), "| loaded into eps =", loaded.eps, "|", result)

# %% [markdown]
# How much does the mismatch matter? Take a row of variance $v$. The layer loaded with `eps = 1e-5`
# returns the outputs of the one trained with `1e-12` times $\sqrt{(v + 10^{-12})/(v + 10^{-5})}$,
# so each output shrinks by 1 minus that factor. Measured in float64 on rows of four variances,
# against the formula:

# %%
gen = torch.Generator().manual_seed(2)
base = torch.randn(768, generator=gen, dtype=torch.float64)
base = (base - base.mean()) / base.std(correction=0)  # variance exactly 1
eps_rows, eps_measured, eps_formula = {}, {}, {}
for v in (1.0, 1e-2, 1e-4, 1e-6):
    row = base * v**0.5
    checkpoint_out, loaded_out = F.layer_norm(row, (768,), eps=1e-12), F.layer_norm(row, (768,), eps=1e-5)
    measured = ((checkpoint_out - loaded_out).abs() / checkpoint_out.abs()).max().item()
    formula = 1 - ((v + 1e-12) / (v + 1e-5)) ** 0.5
    assert abs(measured - formula) <= 1e-9 * max(formula, 1e-3)
    eps_measured[v], eps_formula[v] = measured, formula
    eps_rows[f"{v:g}"] = {"relative change, measured": f"{measured:.2e}", "1 - sqrt((v + 1e-12)/(v + 1e-5))": f"{formula:.2e}"}
pd.DataFrame(eps_rows).T.rename_axis("row variance v")

# %% [markdown]
# A row of variance near 1 moves by 5 parts in a million; a row of variance $10^{-4}$ by 4.7%,
# and a nearly constant row of variance $10^{-6}$ by 70%. Matching costs nothing: read `eps` from
# the checkpoint's configuration (for Hugging Face models, `config.layer_norm_eps`) and build with
# it, or set it after loading:

# %%
def set_eps(model, eps):
    """Give every LayerNorm in `model` the checkpoint's eps (it is an attribute, read at each call)."""
    for module in model.modules():
        if isinstance(module, nn.LayerNorm):
            module.eps = eps


reference_model = nn.Sequential(nn.Linear(768, 768), nn.LayerNorm(768, eps=1e-12)).double()
rebuilt = nn.Sequential(nn.Linear(768, 768), nn.LayerNorm(768)).double()
rebuilt.load_state_dict(reference_model.state_dict())
inputs = 1e-3 * torch.randn(4, 768, generator=gen, dtype=torch.float64)  # small activations
before = (rebuilt(inputs) - reference_model(inputs)).abs().max().item()
set_eps(rebuilt, 1e-12)
after_fix = (rebuilt(inputs) - reference_model(inputs)).abs().max().item()
assert before > 1e-3 and after_fix == 0.0
print(f"largest output difference: {before:.2f} with eps 1e-5, {after_fix:g} with the checkpoint's eps")

# %% [markdown]
# **For a model you train yourself,** keep the default 1e-5 unless you have a reason. `eps` matters
# only for rows whose variance is comparable to it; deep dive [14](14_backward_numerics_speed.ipynb)
# shows how it flattens them, in *eps: never divide by zero*. It also caps LN's gradient at
# $1/\sqrt{\epsilon}$ times the incoming one: 316 at 1e-5, and $10^6$ at 1e-12, more than float16
# can hold.

# %% [markdown]
# ## 5 · How do I apply LayerNorm to images, `(N, C, H, W)`?
#
# Two different normalizations go by the name "LayerNorm" for images:
#
# - **Per pixel, over the channels.** Each of the $H \cdot W$ positions gets its own mean and
#   variance over its $C$ values, as in ConvNeXt. `nn.LayerNorm(C)` normalizes the *last* dim, so
#   the tensor must be channels-last, `(N, H, W, C)`. Either permute, normalize and permute back,
#   or write it with `mean(dim=1)`, as ConvNeXt's own `LayerNorm` does for `channels_first` input.
# - **Per image, over `(C, H, W)`.** One mean and variance per image, as Ba et al. tried on
#   convolutional networks. Its statistics are those of `nn.GroupNorm(1, C)`; deep dive
#   [15](15_the_normalization_family.ipynb) compares their parameters, in *One idea: standardise
#   over some dims*.
#
# Each form, computed and compared:

# %%
def per_pixel_permute(x, eps=1e-6):
    """(N, C, H, W) -> channels-last, LN over C at each pixel, then back."""
    return F.layer_norm(x.permute(0, 2, 3, 1), x.shape[1:2], eps=eps).permute(0, 3, 1, 2)


def per_pixel_mean_dim1(x, eps=1e-6):
    """ConvNeXt's `LayerNorm` for channels_first input, without its weight and bias."""
    u = x.mean(1, keepdim=True)
    s = (x - u).pow(2).mean(1, keepdim=True)
    return (x - u) / torch.sqrt(s + eps)


N, C, H, W = 2, 8, 5, 5
images = 3 * torch.randn(N, C, H, W, generator=torch.Generator().manual_seed(3)) + 1
channels_last = nn.LayerNorm(C, eps=1e-6, elementwise_affine=False)(images.permute(0, 2, 3, 1)).permute(0, 3, 1, 2)
reference_pixel = per_pixel_mean_dim1(images.double())
per_image = F.layer_norm(images, (C, H, W), eps=1e-6)
group_1 = nn.GroupNorm(1, C, eps=1e-6, affine=False)(images)
agree(pd.concat([
    compare(per_pixel_permute(images), reference_pixel.float(), name="per pixel: permute + F.layer_norm vs float64"),
    compare(per_pixel_mean_dim1(images), reference_pixel.float(), name="per pixel: mean(dim=1) vs float64"),
    compare(channels_last, per_pixel_permute(images), name="per pixel: nn.LayerNorm(C) channels-last vs permute"),
    compare(per_image, group_1, name="per image: F.layer_norm over (C, H, W) vs GroupNorm(1, C)"),
]), bound=1e-5)

# %% [markdown]
# The two are not interchangeable. Per pixel, each position's channel vector gets mean 0 and
# variance 1, so a pixel's overall brightness (its mean over the channels) is removed. Per image,
# only the whole image is standardized, and a bright region stays brighter than a dark one. Make
# the right half of an image 5 brighter in every channel:

# %%
half_bright = images.clone()
half_bright[..., W // 2 + 1:] = images[..., : W // 2] + 5.0  # columns 3-4 repeat columns 0-1, 5 brighter
left, right = (..., slice(0, W // 2)), (..., slice(W // 2 + 1, W))
pixel_out, image_out = per_pixel_permute(half_bright), F.layer_norm(half_bright, (C, H, W), eps=1e-6)
pixel_gap = (pixel_out[right] - pixel_out[left]).abs().max().item()
image_gap = (image_out[right] - image_out[left]).mean().item()
assert pixel_gap < 1e-5 and image_gap > 0.5
print("per pixel: right half minus left half, largest |difference| < 1e-5 (brightness removed)")
print(f"per image: right half minus left half, mean difference {image_gap:.2f} (brightness kept)")

# %% [markdown]
# **The classic mistake.** `nn.LayerNorm(C)` applied to an `(N, C, H, W)` tensor normalizes over
# its last dim, the width. If $W \ne C$ it raises; if $W = C$ it runs, and normalizes the wrong
# thing without a word:

# %%
square = torch.randn(2, 8, 8, 8, generator=torch.Generator().manual_seed(4))  # C = H = W = 8
wrong = nn.LayerNorm(8, elementwise_affine=False)(square)  # runs: over W
try:
    nn.LayerNorm(C)(images)  # C = 8, W = 5
except RuntimeError as error:
    mistake = str(error).splitlines()[0]
    print("W != C:", mistake)
else:
    raise AssertionError("nn.LayerNorm(C) accepted an (N, C, H, W) tensor with W != C")
assert torch.allclose(wrong.mean(dim=3), torch.zeros(2, 8, 8), atol=1e-6)  # mean 0 along W: the wrong dim
assert not torch.allclose(wrong, per_pixel_permute(square, eps=1e-5), atol=0.1)
print("W == C: runs, and its outputs have mean 0 along W, not along C")

# %% [markdown]
# Which one to use is a modelling choice. ConvNeXt normalizes per pixel over the channels: in its
# blocks on the channels-last tensor, before the pointwise Linear layers, and in its downsampling
# layers with `data_format="channels_first"`. Per image, GroupNorm generalizes LN over `(C, H, W)`
# by splitting the channels into groups (32 in Wu and He's experiments); one group is that LN.
# Deep dive [15](15_the_normalization_family.ipynb) measures the family at small batches.

# %% [markdown]
# ## 6 · How do I put LayerNorm inside an LSTM cell?
#
# Ba, Kiros and Hinton (2016, supplementary material) normalize the LSTM's two summed inputs
# separately, each over all $4H$ gate values with its own gain and bias, and the cell before its
# output `tanh`:
#
# $$\begin{pmatrix} i_t \\ f_t \\ g_t \\ o_t \end{pmatrix} = \mathrm{LN}(W_x x_t) + \mathrm{LN}(W_h h_{t-1}) + b,
#   \qquad c_t = \sigma(f_t) \odot c_{t-1} + \sigma(i_t) \odot \tanh(g_t),
#   \qquad h_t = \sigma(o_t) \odot \tanh\big(\mathrm{LN}(c_t)\big).$$
#
# The paper orders the gates $f, i, o, g$; the code below uses torch's order, $i, f, g, o$.
# Normalizing the two terms apart gives each the scale of its own gain, so a large recurrent term
# cannot swamp the input, nor the reverse. As a module, with `norm=False` giving the plain LSTM:

# %%
class LayerNormLSTMCell(nn.Module):
    """One LSTM step with LN on W_x x, on W_h h and on the cell (Ba et al. 2016); norm=False: a plain LSTM.

    Shapes: x (batch, input_size), h and c (batch, hidden_size); returns the new (h, c).
    """

    def __init__(self, input_size, hidden_size, norm=True):
        super().__init__()
        self.w_x = nn.Linear(input_size, 4 * hidden_size, bias=False)
        self.w_h = nn.Linear(hidden_size, 4 * hidden_size, bias=False)
        self.bias = nn.Parameter(torch.zeros(4 * hidden_size))  # b: it also absorbs the two LNs' betas
        make = nn.LayerNorm if norm else (lambda size: nn.Identity())
        self.ln_x, self.ln_h, self.ln_c = make(4 * hidden_size), make(4 * hidden_size), make(hidden_size)

    def forward(self, x, state):
        h, c = state
        a = self.ln_x(self.w_x(x)) + self.ln_h(self.w_h(h)) + self.bias
        i, f, g, o = a.chunk(4, dim=-1)  # torch's gate order
        c = torch.sigmoid(f) * c + torch.sigmoid(i) * torch.tanh(g)
        h = torch.sigmoid(o) * torch.tanh(self.ln_c(c))
        return h, c


def run(cell, xs, hidden_size):
    """Every hidden state of `cell` over xs (seq_len, batch, input_size), from a zero state."""
    h = c = torch.zeros(xs.shape[1], hidden_size)
    states = []
    for x in xs:
        h, c = cell(x, (h, c))
        states.append(h)
    return torch.stack(states)


# %% [markdown]
# Two checks. Without LN it must compute what `nn.LSTMCell` computes, given the same weights (torch
# keeps two biases, whose sum is our $b$). With LN it must be the LN-LSTM that deep dive
# [13](13_does_it_speed_up_training.ipynb) trains (`StackedLSTM`, with the inputs fed straight to the
# gates), given its weights, with random gains and biases so that every LN's parameters count:

# %%
n_in, n_hidden = 3, 8  # input features, hidden units
gen = torch.Generator().manual_seed(5)
xs = torch.randn(6, 2, n_in, generator=gen)  # 6 time steps, batch 2
plain, torch_cell = LayerNormLSTMCell(n_in, n_hidden, norm=False), nn.LSTMCell(n_in, n_hidden)
with torch.no_grad():
    plain.w_x.weight.copy_(torch_cell.weight_ih)
    plain.w_h.weight.copy_(torch_cell.weight_hh)
    plain.bias.copy_(torch_cell.bias_ih + torch_cell.bias_hh)
    torch_states = run(torch_cell, xs, n_hidden)

    experiment = StackedLSTM(1, variants=("LN-LSTM",), hidden=n_hidden, inputs=n_in, embed=False,
                             generators=[torch.Generator().manual_seed(6)])
    for p in (experiment.bias, experiment.gain_x, experiment.shift_x, experiment.gain_h, experiment.shift_h,
              experiment.gain_c, experiment.shift_c):
        p.copy_(torch.randn(p.shape, generator=gen))
    cell = LayerNormLSTMCell(n_in, n_hidden)
    cell.w_x.weight.copy_(experiment.w_x[0].T)  # the experiment multiplies x @ w_x; nn.Linear, x @ weight.T
    cell.w_h.weight.copy_(experiment.w_h[0].T)
    cell.bias.copy_(experiment.bias[0, 0])
    for ln, gain, shift in ((cell.ln_x, experiment.gain_x, experiment.shift_x),
                            (cell.ln_h, experiment.gain_h, experiment.shift_h),
                            (cell.ln_c, experiment.gain_c, experiment.shift_c)):
        ln.weight.copy_(gain[0, 0])
        ln.bias.copy_(shift[0, 0])
    experiment_states = experiment.states(xs.transpose(0, 1)[None])[0].transpose(0, 1)  # (seq_len, batch, H)
    lstm_checks = pd.concat([compare(run(plain, xs, n_hidden), torch_states, name="norm=False vs nn.LSTMCell"),
                             compare(run(cell, xs, n_hidden), experiment_states, name="LN cell vs deep dive 13's LN-LSTM")])
agree(lstm_checks, bound=1e-5)

# %% [markdown]
# What LN buys inside the cell: the gates no longer depend on the scale of $W_x$ and $W_h$. Scale
# both by 10, and the LN cell's hidden states stay the same (up to `eps`), while the plain LSTM's
# change:

# %%
with torch.no_grad():
    scaled_ln, scaled_plain = LayerNormLSTMCell(n_in, n_hidden), LayerNormLSTMCell(n_in, n_hidden, norm=False)
    scaled_ln.load_state_dict(cell.state_dict())
    scaled_plain.load_state_dict(plain.state_dict())
    for m in (scaled_ln, scaled_plain):
        m.w_x.weight.mul_(10)
        m.w_h.weight.mul_(10)
    ln_moved = (run(scaled_ln, xs, n_hidden) - run(cell, xs, n_hidden)).abs().max().item()
    plain_moved = (run(scaled_plain, xs, n_hidden) - run(plain, xs, n_hidden)).abs().max().item()
assert ln_moved < 1e-3 and plain_moved > 0.1
print(f"W_x and W_h scaled by 10: LN cell's hidden states move by < 1e-3, the plain LSTM's by {plain_moved:.2f}")

# %% [markdown]
# Whether it trains faster is another question. Deep dive [13](13_does_it_speed_up_training.ipynb)
# measures this cell against the plain LSTM on a 100-step task, each at its tuned learning rate, in
# *Ba et al.'s regime: an LSTM on a long sequence*.

# %% [markdown]
# ## 7 · Is my Transformer block the same as PyTorch's, and can I swap its LayerNorm?
#
# Core notebook [02](02_layernorm_in_a_transformer.ipynb) builds a Pre-LN and a Post-LN block with a
# LayerNorm written by hand. Here are its classes, typed again so that this notebook runs on its own.

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
# PyTorch ships both forms as `nn.TransformerEncoderLayer`. `norm_first=True` is Pre-LN and
# `norm_first=False` is Post-LN. Give it the blocks' settings (`activation="gelu"`,
# `dim_feedforward=4 * d_model`), copy their weights in under its names (`KEY_MAP`), and pass the
# causal mask as `src_mask`. Both modules run in training mode (`.train()`), as in training. There
# PyTorch's layer applies *dropout*, which zeroes values at random, so `dropout=0.0` turns it off.
# LN computes the same in both modes. Outputs and gradients must agree.

# %%
KEY_MAP = {"ln_1.": "norm1.", "ln_2.": "norm2.", "attn.": "self_attn.", "mlp.0.": "linear1.", "mlp.2.": "linear2."}


def torch_name(name):  # our parameter's name -> nn.TransformerEncoderLayer's
    prefix = next(p for p in KEY_MAP if name.startswith(p))
    return KEY_MAP[prefix] + name[len(prefix):]


torch.manual_seed(0)
x = torch.randn(2, 5, 32, requires_grad=True)  # 2 sequences of 5 tokens, width 32
upstream = torch.randn(2, 5, 32)  # a gradient arriving from above
same_as_torch = []
for Block, norm_first in ((PreLN, True), (PostLN, False)):
    ours = Block(32, 4).train()
    theirs = nn.TransformerEncoderLayer(32, 4, dim_feedforward=4 * 32, dropout=0.0, activation="gelu",
                                        batch_first=True, norm_first=norm_first).train()
    theirs.load_state_dict({torch_name(k): v for k, v in ours.state_dict().items()})
    out1, out2 = ours(x), theirs(x, src_mask=causal_mask(5))
    params2 = [theirs.get_parameter(torch_name(k)) for k, _ in ours.named_parameters()]  # in our order
    grads1 = torch.autograd.grad(out1, [x, *ours.parameters()], upstream)
    grads2 = torch.autograd.grad(out2, [x, *params2], upstream)
    same_as_torch += [torch.allclose(out1, out2, atol=1e-5),
                      all(torch.allclose(a, b, atol=1e-4) for a, b in zip(grads1, grads2, strict=True))]
    print(f"{Block.__name__} vs norm_first={norm_first}: same outputs:", same_as_torch[-2],
          "| same gradients:", same_as_torch[-1])

# %% [markdown]
# The hand-written `LayerNorm`, `helpers.LayerNorm` (the same formula, in this course's package) and
# PyTorch's `nn.LayerNorm` share the parameter names `weight` and `bias`. So the weights of a
# Post-LN block built with the hand-written one load into a Post-LN block built with either of the
# others (`load_state_dict`), and it gives the same outputs.

# %%
import helpers  # this course's package

with_yours = PostLN(32, 4)  # built with the hand-written LayerNorm
same_after_swap = []
for name, norm in (("helpers", helpers.LayerNorm), ("nn", nn.LayerNorm)):
    swapped = PostLN(32, 4, norm)
    swapped.load_state_dict(with_yours.state_dict())
    same_after_swap.append(torch.allclose(swapped(x), with_yours(x), atol=1e-5))
    print(f"{name}.LayerNorm: same outputs:", same_after_swap[-1])

# %% [markdown]
# ## Claims ledger
#
# Each claim this notebook makes, its outcome and its evidence. No stored experiment is involved:
# a claim resting on a check in the cells above gets "supported" when that check, evaluated here on
# the cells' results, holds and "refuted" when it does not; a claim resting on a citation alone is
# "not tested".

# %%
FLOAT32_WAYS = ["hand-written, in float32", "F.layer_norm", "helpers.layer_norm"]
LEDGER = [  # (claim, evidence, shown in): a check computed above, or None (a citation only)
    ("a hand-written LN in float16 returns all zeros once |x - mean| reaches 256 (its squares overflow)",
     claims.Check((errors.loc[[256.0, 1000.0], "hand-written, .mean()"] > 0.999).all()
                  and (errors.loc[[1.0, 255.0], "hand-written, .mean()"] < 5e-4).all(),
                  "right at s = 255, all zeros at s = 256 and 1000"), "§1, the overflow table"),
    ("... and with `.sum() / n`, already at s = 10 for 768 features",
     claims.Check((errors.loc[[10.0, 256.0], "hand-written, .sum() / n"] > 0.999).all()
                  and errors.loc[9.0, "hand-written, .sum() / n"] < 5e-4, "right at s = 9, all zeros at s = 10"),
     "§1, the overflow table"),
    ("`nn.LayerNorm`'s kernel, `helpers.layer_norm` and a hand-written LN computed in float32 give the float64 "
     "answer in float16 at every s", claims.Check((errors[FLOAT32_WAYS] < 5e-4).all().all(),
                                                 f"largest error {errors[FLOAT32_WAYS].max().max():.1e}"),
     "§1, the overflow table"),
    ("`eps = 1e-12` is 0 in float16 and not in bfloat16; a constant row then gives NaN by hand, 0 from torch "
     "and `helpers`",
     claims.Check(torch.tensor(1e-12, dtype=torch.float16).item() == 0.0
                  and torch.tensor(1e-12, dtype=torch.bfloat16).item() > 0
                  and (nan_rows.loc["float16, eps=1e-12", ["F.layer_norm", "helpers.layer_norm"]] == 0.0).all(),
                  "float16 row: NaN, 0, 0"), "§1, the NaN table"),
    ("a constant row's gradient is (g - mean g)/sqrt(eps): not finite in float16 at eps = 1e-12, finite at 1e-5",
     claims.Check(not grad_rows.loc["eps=1e-12", "float16 gradient finite"].any()
                  and grad_rows.loc["eps=1e-05", "float16 gradient finite"].all(),
                  "torch's kernel and helpers alike"), "§1, the gradient table"),
    ("under CPU autocast, `layer_norm` keeps its input's dtype while `linear` runs in the low-precision one",
     claims.Check((autocast_rows["Linear output"] == autocast_rows["LayerNorm of it"]).all()
                  and (autocast_rows["LayerNorm of float32 x"] == "torch.float32").all(), "bfloat16 and float16"),
     "§1, *Does autocast run LayerNorm in float32?*"),
    ("under CUDA autocast, `layer_norm` runs in float32", None,
     "PyTorch's AMP documentation; the registered rule is shown in §1"),
    ("grouping by module type leaves every norm's parameters and every bias undecayed; the `p.dim() >= 2` rule "
     "decays a per-sentence LN's gamma",
     claims.Check({"1.weight", "1.bias", "5.weight", "5.bias"} <= set(grouped[1]) and "5.weight" in by_dim_rule
                  and "5.bias" in by_dim_rule,
                  f"no-decay group: {grouped[1]}"), "§2"),
    ("AdamW's decay alone shrinks a decayed gamma by (1 - lr·wd) per step; an excluded one stays at 1",
     claims.Check(torch.equal(gamma_grouped, torch.ones(16))
                  and torch.allclose(gamma_all, torch.full((16,), (1 - 0.01 * 0.1) ** 100), rtol=1e-5),
                  f"after 100 steps: 1 and {gamma_all[0].item():.4f}"), "§2"),
    ("excluding gamma and beta from weight decay is the common practice (nanoGPT, BERT, Hugging Face)", None,
     "§2: their code, cited"),
    ("before an LN, weight decay changes the weights' effective learning rate rather than the function", None,
     "§2: van Laarhoven 2017"),
    ("`helpers.LayerNorm(bias=False)` matches `nn.LayerNorm(bias=False)`: outputs, gradients, state_dict keys",
     claims.Check(keys[0] == keys[1] == ["weight"] and torch.allclose(y_ours, y_theirs, atol=1e-4)
                  and torch.allclose(x_ours.grad, x_theirs.grad, atol=1e-4), f"keys {keys[0]}; within 1e-4"), "§3"),
    ("a following Linear with a bias absorbs beta exactly: its new bias is W beta + b",
     claims.Check(absorbed_diff < 1e-12, "float64, within 1e-12"), "§3"),
    ("a bias-free LN followed by a bias-free Linear is odd, so it cannot add a constant",
     claims.Check(bool(bare_sum.abs().max() < 1e-12), "|f(x) + f(-x)| < 1e-12"), "§3"),
    ("`eps` is not in the `state_dict`: a checkpoint loads into a layer with another `eps` without an error",
     claims.Check(list(checkpoint) == ["weight", "bias"] and not result.missing_keys and loaded.eps == 1e-5,
                  f"keys {list(checkpoint)}"), "§4"),
    ("an `eps` mismatch (1e-12 vs 1e-5) changes each output by 1 - sqrt((v + 1e-12)/(v + 1e-5)): 5e-6 at v = 1, "
     "4.7% at v = 1e-4",
     claims.Check(all(abs(eps_measured[v] - eps_formula[v]) <= 1e-9 * max(eps_formula[v], 1e-3) for v in eps_measured)
                  and 4e-6 < eps_measured[1.0] < 6e-6 and 0.04 < eps_measured[1e-4] < 0.06,
                  f"{eps_measured[1.0]:.1e} at v = 1, {eps_measured[1e-4]:.1%} at v = 1e-4"), "§4"),
    ("frameworks' default `eps` differ: 1e-5, 1e-6, 1e-12, 1e-3", None, "§4: each framework's documentation"),
    ("per pixel over C: permute + LN, the `mean(dim=1)` form and a channels-last `nn.LayerNorm(C)` agree; over "
     "(C, H, W), LN equals GroupNorm(1, C)",
     claims.Check(torch.allclose(per_pixel_permute(images), per_pixel_mean_dim1(images), atol=1e-5)
                  and torch.allclose(per_image, group_1, atol=1e-5), "within 1e-5"), "§5"),
    ("per-pixel LN removes a pixel's brightness; per-image LN keeps it",
     claims.Check(pixel_gap < 1e-5 and image_gap > 0.5, f"mean gap {image_gap:.2f} per image, < 1e-5 per pixel"),
     "§5"),
    ("`nn.LayerNorm(C)` on (N, C, H, W) normalizes over W: an error if W != C, silent if W = C",
     claims.Check(bool(torch.allclose(wrong.mean(dim=3), torch.zeros(2, 8, 8), atol=1e-6)) and bool(mistake),
                  "raised at W = 5; mean 0 along W at W = 8"), "§5"),
    ("the LN-LSTM cell in a few lines is `nn.LSTMCell` without LN and deep dive 13's LN-LSTM with it",
     claims.Check(lstm_checks["close"].all(), "both within 1e-5"), "§6"),
    ("with LN the cell does not depend on the scale of W_x and W_h (up to eps); without it, it does",
     claims.Check(ln_moved < 1e-3 and plain_moved > 0.1, f"moved by < 1e-3 and {plain_moved:.2f}"), "§6"),
    ("core notebook 02's Pre-LN and Post-LN blocks are `nn.TransformerEncoderLayer` with `norm_first=True` and "
     "`False`: outputs and gradients",
     claims.Check(all(same_as_torch), "outputs within 1e-5, gradients within 1e-4, both forms"), "§7"),
    ("a block's weights load across a hand-written LN, `helpers.LayerNorm` and `nn.LayerNorm`, with the same outputs",
     claims.Check(all(same_after_swap), "outputs within 1e-5"), "§7"),
]
ledger = claims.evidence_ledger(LEDGER)
with pd.option_context("display.max_colwidth", None):
    display(ledger)

# %%
assert len(ledger) == len(LEDGER) and ledger["outcome"].isin(claims.OUTCOMES).all()

# %% [markdown]
# ## References
#
# - J. L. Ba, J. R. Kiros, G. E. Hinton, *Layer Normalization*, 2016,
#   [arXiv:1607.06450](https://arxiv.org/abs/1607.06450): the LN-LSTM in the supplementary
#   material; LN on convolutional networks, section 6.7.
# - PyTorch, [Automatic Mixed Precision package, `torch.amp`](https://docs.pytorch.org/docs/stable/amp.html):
#   "CUDA Ops that can autocast to float32" lists `layer_norm` and `group_norm`; the CPU lists do not.
# - PyTorch, [`torch.nn.LayerNorm`](https://docs.pytorch.org/docs/stable/generated/torch.nn.LayerNorm.html)
#   (`eps=1e-05`, `bias`) and [`torch.optim.AdamW`](https://docs.pytorch.org/docs/stable/generated/torch.optim.AdamW.html)
#   (decoupled weight decay, `p ← p − lr · weight_decay · p`).
# - A. Karpathy, [nanoGPT `model.py`](https://github.com/karpathy/nanoGPT/blob/master/model.py):
#   `configure_optimizers` (decay for `p.dim() >= 2` only) and `GPTConfig.bias`.
# - Google Research, [BERT `optimization.py`](https://github.com/google-research/bert/blob/master/optimization.py):
#   `exclude_from_weight_decay=["LayerNorm", "layer_norm", "bias"]`.
# - Hugging Face `transformers`, `Trainer.get_decay_parameter_names` (no decay inside `nn.LayerNorm`
#   or for biases) and [`BertConfig`](https://huggingface.co/docs/transformers/model_doc/bert)
#   (`layer_norm_eps=1e-12`).
# - T. van Laarhoven, *L2 Regularization versus Batch and Weight Normalization*, 2017,
#   [arXiv:1706.05350](https://arxiv.org/abs/1706.05350).
# - [Keras `LayerNormalization`](https://keras.io/api/layers/normalization_layers/layer_normalization/)
#   (`epsilon=0.001`) and [Flax `nn.LayerNorm`](https://flax.readthedocs.io/en/latest/api_reference/flax.linen/layers.html)
#   (`epsilon=1e-06`); [openai/gpt-2 `src/model.py`](https://github.com/openai/gpt-2/blob/master/src/model.py) (`epsilon=1e-5`).
# - Z. Liu et al., *A ConvNet for the 2020s* (ConvNeXt), CVPR 2022,
#   [arXiv:2201.03545](https://arxiv.org/abs/2201.03545); code:
#   [facebookresearch/ConvNeXt `models/convnext.py`](https://github.com/facebookresearch/ConvNeXt/blob/main/models/convnext.py),
#   `LayerNorm` (`channels_last` and `channels_first`, `eps=1e-6`).
# - Y. Wu, K. He, *Group Normalization*, ECCV 2018, [arXiv:1803.08494](https://arxiv.org/abs/1803.08494).
# - Transformer: [tensor2tensor `layers/common_layers.py`](https://github.com/tensorflow/tensor2tensor/blob/master/tensor2tensor/layers/common_layers.py),
#   `layer_norm` (`epsilon=1e-6`). LLaMA: [meta-llama/llama `llama/model.py`](https://github.com/meta-llama/llama/blob/main/llama/model.py)
#   (`RMSNorm` with a weight only; its Linear layers built with `bias=False`).
