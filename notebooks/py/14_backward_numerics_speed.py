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
# # 14 · The backward pass by hand, numerical stability, and speed
#
# ## The answer
#
# - **LN's gradient** has a closed form: $d\beta = \sum dy$, $d\gamma = \sum dy\,\hat{x}$ and
#   $dx = r\,(g - \bar{g} - \hat{x}\,\overline{g\hat{x}})$. Written by hand it equals autograd and
#   PyTorch's kernel, and it needs to keep only two numbers per row (the mean and $1/\sigma$).
# - **The variance must be computed in two passes** (or by Welford's method): the one-pass
#   $\mathrm{E}[x^2] - \mathrm{E}[x]^2$ cancels catastrophically when a row's mean is large next
#   to its spread, even giving NaN. LN uses the **biased** variance, and `eps` inside the root
#   decides how much a nearly constant row is flattened.
# - **LN is memory-bound**: its speed is set by how fast the data moves, not by its arithmetic.
#
# Each is shown below with code and measured numbers; no stored training run is involved.
#
# This notebook looks inside LayerNorm (LN, 层归一化) the way the people who write its kernels do.
# Four questions, each answered with code and measured numbers, then four exercises:
#
# 1. **What is LN's gradient?** We derive $dx$, $d\gamma$ and $d\beta$ by hand, write them as a
#    `torch.autograd.Function` that keeps only the input, the weight and two numbers per row
#    (as PyTorch's kernel does), and check it against autograd and PyTorch (with a loss that can
#    catch a wrong backward); then sum $d\gamma$ and $d\beta$ over the rows in two stages, as
#    parallel kernels do, and watch them train;
# 2. **How much memory does the backward pass keep alive?** Measured with
#    `torch.autograd.graph.saved_tensors_hooks`, for four implementations;
# 3. **Can the variance be computed wrongly?** Yes: the one-pass formula $E[x^2]-E[x]^2$
#    cancels catastrophically. We compare it with the two-pass and Welford algorithms on
#    adversarial rows, read PyTorch's own history of this bug, and try it in a widget; then why
#    LN's variance is the biased one, and what `eps` does;
# 4. **How fast can it be?** LN is memory-bound; we read `make bench`'s results (time and
#    achieved bandwidth against the machine's copy bandwidth) and re-measure one small size live;
#    and we compare RMSNorm with LN.
#
# The exercises: write the biased variance, the gradient, Chan's merge and LN's output variance
# yourself, with instant feedback.
#
# Every claim is shown by a cell below or cited; the claims ledger at the end lists which, with its outcome.

# %%
# %matplotlib inline
import inspect

import matplotlib.pyplot as plt
import pandas as pd
import torch
import torch.nn.functional as F
from IPython.display import display
from torch import nn
from torch.utils import benchmark

from helpers import LayerNormFunction, plots
from helpers.evidence import claims
from helpers.exercises.checking import compare
from helpers.exercises.layer_norm import check_biased_variance, check_output_variance
from helpers.exercises.numerics import check_chan_merge_m2, check_layer_norm_backward
from helpers.experiments.drift import fit_gamma_beta
from helpers.lessons.memory_and_speed import count_full_passes, load_results, saved_bytes_table
from helpers.lessons.param_grad_reduction import (
    column_sum_errors,
    layer_norm_param_grads,
    two_stage_column_sum,
)
from helpers.lessons.variance import adversarial_rows, error_table, layer_norm_error, welford_var
from helpers.plots import bandwidth_figure, saved_bytes_figure
from helpers.plots.memory_and_speed import partial_sums_figure
from helpers.speed import one_pass
from helpers.widgets import eps_state, stability_demo

torch.set_num_threads(2)  # fixed, as in `make bench`
torch.manual_seed(0)
pd.set_option("display.width", 120)

# %% [markdown]
# ## 1. The gradient, derived
#
# Take one row $x \in \mathbb{R}^N$ (LN treats every row alike). The forward pass:
#
# $$\mu = \frac{1}{N}\sum_i x_i,\qquad \sigma^2 = \frac{1}{N}\sum_i (x_i-\mu)^2,\qquad
#   r = \frac{1}{\sqrt{\sigma^2+\epsilon}},\qquad \hat{x}_i = (x_i-\mu)\,r,\qquad
#   y_i = \gamma_i\hat{x}_i + \beta_i .$$
#
# The backward pass receives $dy_i = \partial L/\partial y_i$.
#
# **$d\gamma$ and $d\beta$.** $y_i$ is elementwise in $\gamma_i$ and $\beta_i$, and every row
# shares them, so their gradients add up over the rows:
#
# $$d\gamma_i = \sum_{\text{rows}} dy_i\,\hat{x}_i,\qquad d\beta_i = \sum_{\text{rows}} dy_i .$$
#
# **$dx$.** Let $g_i = dy_i\,\gamma_i$, the gradient with respect to $\hat{x}_i$. Each
# $\hat{x}_j$ depends on every $x_i$ of its row, directly and through $\mu$ and $r$. With
# $\partial\mu/\partial x_i = 1/N$ and $\partial\sigma^2/\partial x_i = \frac{2}{N}(x_i-\mu)$
# (the $\mu$ terms vanish because the centred values sum to 0),
#
# $$\frac{\partial r}{\partial x_i} = -\tfrac12 r^3\cdot\tfrac{2}{N}(x_i-\mu) = -\frac{r^2}{N}\hat{x}_i,
# \qquad
# \frac{\partial\hat{x}_j}{\partial x_i} = r\Big(\delta_{ij}-\frac1N\Big) + (x_j-\mu)\frac{\partial r}{\partial x_i}
# = \frac{r}{N}\big(N\delta_{ij} - 1 - \hat{x}_j\hat{x}_i\big).$$
#
# Contracting with $g_j$ gives the **compact form**, in terms of $\hat{x}$ only:
#
# $$\boxed{\,dx_i = r\Big(g_i - \frac1N\sum_j g_j - \hat{x}_i\,\frac1N\sum_j g_j\hat{x}_j\Big)\,}$$
#
# Three readable terms: the gradient, minus its mean (a shift of the whole row cannot change
# LN's output, so the gradient has no component along $(1,\dots,1)$), minus its component
# along $\hat{x}$ (nor can a rescaling of the centred row). Two consequences we will check:
#
# - $\sum_i dx_i = 0$ for every row, exactly (the sum of the bracket is $N\bar{g} - N\bar{g} - 0$,
#   since $\sum_i \hat{x}_i = 0$);
# - $\sum_i dx_i\,\hat{x}_i = r\,(g\cdot\hat{x})\,(1 - \frac1N\sum_i\hat{x}_i^2)$, and
#   $\frac1N\sum_i\hat{x}_i^2 = \sigma^2/(\sigma^2+\epsilon)$: so $dx\cdot\hat{x} = 0$ exactly when
#   $\epsilon = 0$, and is $r\,(g\cdot\hat{x})\,\epsilon/(\sigma^2+\epsilon)$, tiny, otherwise.
#
# ## `helpers.LayerNormFunction`: the derivation as code
#
# The forward pass saves only `input`, `weight` and, per row, `mean` and `rstd` ($r$); the
# backward pass recomputes $\hat{x}$ from them (one cheap pass) rather than storing an
# $M\times N$ tensor. Here is its backward, from `helpers/autograd.py`:

# %%
print(inspect.getsource(LayerNormFunction.backward))

# %% [markdown]
# **Check it.** `gradcheck` compares the hand-derived backward with finite differences, in
# float64 (in float32 the finite differences themselves are too coarse):

# %%
g = torch.Generator().manual_seed(0)
x64 = torch.randn(4, 8, generator=g, dtype=torch.float64, requires_grad=True)
w64 = torch.randn(8, generator=g, dtype=torch.float64, requires_grad=True)
b64 = torch.randn(8, generator=g, dtype=torch.float64, requires_grad=True)
gradcheck_ok = torch.autograd.gradcheck(LayerNormFunction.apply, (x64, (8,), w64, b64, 1e-5), raise_exception=False)
print("gradcheck:", gradcheck_ok)

# %% [markdown]
# And on a float64 batch `(16, 32, 64)`, forward and all three gradients against autograd
# through `helpers.layer_norm` and against PyTorch's own kernel (`compare` from
# `helpers.exercises.checking`: close within float64 tolerances, and the largest difference). They add
# the same numbers in different orders, so they differ in the last bits, and which bits
# depends on the CPU (how many values its vector registers add at once). The table shows
# what holds on every CPU, checked in the cell: a float64 spacing near 1 is 2.2e-16, `y`
# and `dx` take a few roundings each and stay under 1e-13, and $d\gamma$ and $d\beta$ add
# 512 rows and stay under 1e-12. In float32 they agree too, up to the same summation order
# (`tests/test_autograd.py` checks float32 and half inputs with a tolerance for that).

# %%
def grads(fn, x, w, b, dy):
    """fn's output and its gradients for x, weight, bias, on fresh leaf copies."""
    leaves = [t.detach().clone().requires_grad_() for t in (x, w, b)]
    y = fn(leaves[0], (x.shape[-1],), leaves[1], leaves[2], 1e-5)
    y.backward(dy)
    return [y.detach()] + [t.grad for t in leaves]


x = 1 + 2 * torch.randn(16, 32, 64, generator=g, dtype=torch.float64)
w, b = torch.randn(64, generator=g, dtype=torch.float64), torch.randn(64, generator=g, dtype=torch.float64)
dy = torch.randn(16, 32, 64, generator=g, dtype=torch.float64)
mine = grads(LayerNormFunction.apply, x, w, b, dy)
bounds = {"y": 1e-13, "dx": 1e-13, "dgamma": 1e-12, "dbeta": 1e-12}  # what every CPU stays under
table = pd.concat(
    [compare(m, r, name=f"{n} vs {who}").assign(bound=bounds[n])
     for who, fn in [("autograd", helpers.layer_norm), ("torch", F.layer_norm)]
     for n, m, r in zip(bounds, mine, grads(fn, x, w, b, dy), strict=True)])
assert (table["max_abs_diff"] < table["bound"]).all(), table
table = table.assign(max_abs_diff=table["bound"].map(lambda v: f"< {v:.0e}"))[["close", "max_abs_diff", "dtype"]]
table

# %%
assert table["close"].all()

# %% [markdown]
# The per-row properties of the derivation, in float64, with $\epsilon = 0$ and with the
# default $\epsilon = 10^{-5}$. A quantity that is 0 in exact arithmetic comes out as float64
# rounding (around 1e-15, its digits set by the CPU's order of addition), so the cell checks
# and prints a bound, 1e-13, that holds on every CPU:

# %%
x = 5 + 2 * torch.randn(16, 32, generator=g, dtype=torch.float64)
w, dy = torch.randn(32, generator=g, dtype=torch.float64), torch.randn(16, 32, generator=g, dtype=torch.float64)
row_checks = {}  # eps: (largest |sum(dx)| of a row, whether dx . x_hat matches its prediction)
for eps in (0.0, 1e-5):
    leaf = x.clone().requires_grad_()
    LayerNormFunction.apply(leaf, (32,), w, None, eps).backward(dy)
    var = x.var(-1, correction=0, keepdim=True)
    x_hat = (x - x.mean(-1, keepdim=True)) / (var + eps).sqrt()
    predicted = ((dy * w * x_hat).sum(-1) * eps / (var.squeeze(-1) + eps) / (var.squeeze(-1) + eps).sqrt())
    row_checks[eps] = (leaf.grad.sum(-1).abs().max().item(),
                       torch.allclose((leaf.grad * x_hat).sum(-1), predicted, atol=1e-13, rtol=1e-9))
    assert leaf.grad.sum(-1).abs().max() < 1e-13  # 0, up to float64 rounding
    torch.testing.assert_close((leaf.grad * x_hat).sum(-1), predicted, atol=1e-13, rtol=1e-9)
    print(f"eps={eps:g}: every row has |sum(dx)| < 1e-13, and dx . x_hat within 1e-13 of its "
          f"prediction (largest {predicted.abs().max():.1e})")

# %% [markdown]
# ### The hard part: summing $d\gamma$ and $d\beta$ over the rows
#
# $dx$ is row-wise: a row's $dx$ needs only that row, so threads (on a GPU, program instances)
# can each take a share of the rows and never meet. $d\gamma_j = \sum_{\text{rows}} dy_j\hat{x}_j$
# and $d\beta_j = \sum_{\text{rows}} dy_j$ are the opposite: every row adds into the same $N$
# numbers. With one accumulator per column, the threads would have to take turns
# (serialise) or add with atomic operations. Kernels split the sum in two stages instead:
#
# 1. **partial sums**: the rows are cut into blocks; each block (one thread's share) adds its
#    rows into its own $N$ partial sums, shared with nobody;
# 2. **a second reduction**: the partial sums of each column are added together.
#
# PyTorch's CPU kernel (`aten/src/ATen/native/cpu/layer_norm_kernel.cpp`) keeps a
# `(2, num_threads, N)` buffer for the partials, filled while each thread computes its rows'
# $dx$, then sums it over the threads in a second parallel loop over the columns. Triton's
# LayerNorm tutorial does it on a GPU: each program instance adds into one of `GROUP_SIZE_M`
# partial buffers, and a second kernel sums them. `helpers.lessons.param_grad_reduction` writes the same
# two stages out, with the block size an argument; the figure shows them on 12 rows of 8 columns,
# in blocks of 4:

# %%
small = torch.randn(12, 8, generator=g, dtype=torch.float64)
fig = partial_sums_figure(small, block_rows=4)
plt.show()

# %% [markdown]
# The two-stage sum is the one-shot sum, up to rounding: in float64, for any block size, and
# `layer_norm_param_grads` (the two stages on $dy\cdot\hat{x}$ and $dy$) gives PyTorch's
# $d\gamma$ and $d\beta$:

# %%
x = 1 + 2 * torch.randn(16, 32, 64, generator=g, dtype=torch.float64)
dy = torch.randn(16, 32, 64, generator=g, dtype=torch.float64)
values = (dy * (x - x.mean(-1, keepdim=True)) / (x.var(-1, correction=0, keepdim=True) + 1e-5).sqrt()).reshape(-1, 64)
two_stage_gaps = {block_rows: (two_stage_column_sum(values, block_rows) - values.sum(0)).abs().max().item()
                  for block_rows in (1, 7, 64, 512, 1000)}
assert max(two_stage_gaps.values()) < 1e-12
w, b = torch.randn(64, generator=g, dtype=torch.float64), torch.randn(64, generator=g, dtype=torch.float64)
_, _, torch_dgamma, torch_dbeta = grads(F.layer_norm, x, w, b, dy)
param_grad_gaps = {}  # block rows: the largest difference from torch's dgamma and dbeta
for block_rows in (8, 64):
    dgamma, dbeta = layer_norm_param_grads(x, dy, (64,), block_rows=block_rows)
    param_grad_gaps[block_rows] = max((dgamma - torch_dgamma).abs().max().item(), (dbeta - torch_dbeta).abs().max().item())
assert max(param_grad_gaps.values()) < 1e-12
print("two-stage = one-shot sum within 1e-12 for blocks of 1, 7, 64, 512 and 1000 rows (512 rows in all);")
print("layer_norm_param_grads = torch's dgamma and dbeta within 1e-12 for blocks of 8 and 64")

# %% [markdown]
# **The split also makes the float32 sum more accurate.** Added one after another, every
# partial result is rounded, and the worst-case error of a value that goes through $k$
# additions is $\gamma_k\sum_i|v_i|$ with $\gamma_k = ku/(1-ku)$, $u = 2^{-24}$ in float32
# (Higham 2002, §4.2). One accumulator over $M$ rows: $k = M-1$. Two stages with blocks of $B$:
# $k = (B-1) + (\lceil M/B\rceil - 1)$, smallest near $B=\sqrt{M}$. `column_sum_errors` measures
# both on 16384 float32 rows of 64 columns with a positive mean (so the running sums grow, as
# $d\beta$'s do when the gradients share a sign), against the float64 sum of the same values,
# each error relative to its column's $\sum|v|$. Every sum here is a fixed sequence of
# elementwise additions, so these are the same bits on every CPU; the cell prints one digit:

# %%
reduction = column_sum_errors(rows=16384, columns=64, block_rows=128)
assert (reduction["max error"] <= reduction["bound"]).all()  # both within their n·u bounds
sequential, two_stage = reduction["median error"]
assert two_stage < sequential / 4
reduction.assign(**{c: reduction[c].map(lambda v: f"{v:.0e}") for c in ["max error", "median error", "bound"]})

# %% [markdown]
# Both sums stay far inside their worst-case bounds (rounding errors partly cancel), and the
# two-stage sum's error is about ten times smaller: its values go through 254 roundings, not
# 16383. A GPU kernel that adds every row into one accumulator with atomics would also add in
# whatever order the rows arrive, so its $d\gamma$ would change from run to run; fixed
# blocks and a fixed second stage give the same bits every time.

# %% [markdown]
# ### Checking a backward: why the loss is a cube
#
# `helpers.layer_norm` and `helpers.LayerNorm` are this set's own, written with the operations
# of the forward pass (no call to PyTorch's fused kernel) and with PyTorch's exact signatures and parameter
# names, so a state dict moves from one to the other. On the lesson's shape `(2, 3, 4)`, with
# random $\gamma$ and $\beta$: the outputs, and the gradients of a loss with respect to the input,
# $\gamma$ and $\beta$.

# %%
def shown(table, below):
    """compare()'s rows, each max_abs_diff under `below` written as "< below": the same on every CPU."""
    assert (table["max_abs_diff"][table["close"]] < below).all()
    return table.assign(max_abs_diff=[f"< {below:g}" if d < below else f"{d:.3g}" for d in table["max_abs_diff"]])


g = torch.Generator().manual_seed(1)
x3 = torch.randn(2, 3, 4, generator=g)
theirs = nn.LayerNorm(4)
with torch.no_grad():
    theirs.weight.copy_(1 + 0.5 * torch.randn(4, generator=g))
    theirs.bias.copy_(torch.randn(4, generator=g))
mine = helpers.LayerNorm(4)
mine.load_state_dict(theirs.state_dict())  # the same keys: weight, bias

x_theirs, x_mine = x3.clone().requires_grad_(), x3.clone().requires_grad_()
out_theirs, out_mine = theirs(x_theirs), mine(x_mine)
(out_theirs**3).sum().backward()
(out_mine**3).sum().backward()
shown(pd.concat([
    compare(helpers.layer_norm(x3, (4,), mine.weight, mine.bias),
            F.layer_norm(x3, (4,), theirs.weight, theirs.bias), name="helpers.layer_norm vs F.layer_norm"),
    compare(out_mine, out_theirs, name="helpers.LayerNorm vs nn: output"),
    compare(x_mine.grad, x_theirs.grad, name="gradient wrt x"),
    compare(mine.weight.grad, theirs.weight.grad, name="gradient wrt gamma"),
    compare(mine.bias.grad, theirs.bias.grad, name="gradient wrt beta"),
]), below=1e-3)  # the gradients reach about 130: a few of float32's last bits there are ~1e-5

# %% [markdown]
# `close` in every row: the same numbers to float32's usual tolerance (the two compute the same
# sums in a different order, so the last bits may differ).
#
# Why the loss `(out**3).sum()` and not simply `out.sum()`? Because with $\gamma = 1$ (a fresh
# LN) every output token sums to $\sum_j \beta_j$ whatever the input (its $\hat{x}$ sums to 0),
# so the gradient of `out.sum()` with respect to the input is 0: a wrong backward would pass
# that check as well as a right one. `(out**2).sum()` is no better: $\sum_j \hat{x}_j^2 =
# n \cdot \mathrm{Var}/(\mathrm{Var} + \epsilon)$ is fixed too, up to `eps`. A cube gives every
# output its own, uneven gradient, which the backward must carry through the mean and the
# variance correctly. On a fresh `nn.LayerNorm(4)`, the largest input gradient of each loss:

# %%
def largest_input_gradient(loss_of):
    x_in = x3.clone().requires_grad_()
    loss_of(nn.LayerNorm(4)(x_in)).backward()  # a fresh LN: gamma = 1, beta = 0
    return x_in.grad.abs().max().item()


grads = {name: largest_input_gradient(fn) for name, fn in
         [("out.sum()", lambda o: o.sum()), ("(out**2).sum()", lambda o: (o**2).sum()),
          ("(out**3).sum()", lambda o: (o**3).sum())]}
assert grads["out.sum()"] < 1e-5 and grads["(out**2).sum()"] < 1e-3 < 1 < grads["(out**3).sum()"]
{name: "< 1e-3" if g < 1e-3 else "> 1" for name, g in grads.items()}

# %% [markdown]
# ### $d\gamma$ and $d\beta$ at work: gamma and beta learn
#
# The gradients above are what train $\gamma$ and $\beta$. `fit_gamma_beta` builds 64 tokens `x = 2 + 3 · z` from exactly
# standardised tokens `z`, so every token has mean 2 and standard deviation 3. The model is a
# single fresh `helpers.LayerNorm(4)`, and the target is `x` itself: the input *before*
# normalization. LN removes the 2 and the 3; only $\gamma$ and $\beta$ can put them back, and the
# loss is 0 at $\gamma = \sqrt{9 + \epsilon} \approx 3$, $\beta = 2$. Plain SGD (learning rate
# 0.5) on the mean squared error, 30 steps, feature 0 every 5 steps:

# %%
fit = fit_gamma_beta(scale=3.0, shift=2.0, steps=30, lr=0.5, seed=0)
feature_0 = fit[fit["feature"] == 0].set_index("step").iloc[::5]
feature_0[["gamma", "beta"]].round(4).assign(loss=feature_0["loss"].map("{:.1e}".format))

# %%
fig = plots.gamma_beta_fit_figure(fit, targets={"gamma": 3.0, "beta": 2.0})
plt.show()

# %%
end = fit[fit["step"] == 30]
assert ((end["gamma"] - 3.0).abs() < 3e-3).all() and ((end["beta"] - 2.0).abs() < 3e-3).all()
loss = fit.groupby("step")["loss"].first()
assert loss[0] / loss[30] > 1e6  # the loss fell by more than a million times
print("after 30 steps: gamma", end["gamma"].round(4).tolist(), " beta", end["beta"].round(4).tolist())

# %% [markdown]
# Every feature's $\gamma$ climbs from 1 to 3 and $\beta$ from 0 to 2, and the loss falls by a
# factor of more than a million: the network has undone the normalization because the target
# asked for it. Ioffe and Szegedy (2015, section 3) make this argument for BatchNorm: with
# $\gamma = \sqrt{\mathrm{Var}[x]}$ and $\beta = \mathrm{E}[x]$ the layer can represent the
# identity. For LN it works exactly only when every token has the same mean and variance, as
# here: $\gamma$ and $\beta$ are per feature and shared by all tokens, so they can restore a
# common scale and shift, but not each token's own statistics, which LN discards.

# %% [markdown]
# ## 2. Memory: what the backward pass keeps alive
#
# Autograd hands every tensor it saves for the backward pass to the *pack* hook of
# `torch.autograd.graph.saved_tensors_hooks`; `helpers.lessons.memory_and_speed.saved_bytes` counts those
# tensors' storages (each once), apart from the ones the caller already holds (`x`, `gamma`,
# `beta`), which cost nothing extra. A float32 `(64, 256)` input is 64 KiB:
#
# - **naive composition**: `(x - mean) / sqrt(var + eps)`, written as a beginner would;
# - **`helpers.layer_norm`**: the set's from-scratch function, differentiated by autograd;
# - **`LayerNormFunction`**: the hand-derived backward;
# - **torch**: `F.layer_norm`, PyTorch's fused kernel.

# %%
memory = saved_bytes_table(rows=64, width=256)
memory

# %%
fig = saved_bytes_figure(memory)
plt.show()

# %%
assert memory.loc["LayerNormFunction", "new bytes"] <= memory.loc["torch (F.layer_norm)", "new bytes"]
assert memory.loc["LayerNormFunction", "new bytes"] == 2 * 64 * 4  # mean and rstd: 2 floats per row
assert memory.loc["naive composition", "new bytes"] > memory.loc["helpers.layer_norm", "new bytes"]

# %% [markdown]
# Autograd on the composition keeps two (`helpers.layer_norm`) or three (naive) extra copies of
# the whole input alive until the backward pass; `LayerNormFunction`, like PyTorch's kernel,
# keeps 512 bytes: one mean and one rstd per row. In a Transformer with many LN layers, that is
# activation memory saved at every layer.
#
# ## 3. Numerical stability: three ways to compute a variance
#
# `helpers/lessons/variance.py` has three readable algorithms, each returning a row's mean and biased
# variance:
#
# - **one-pass**: $E[x^2] - E[x]^2$: one sweep, but when the mean is large next to the spread
#   both terms are huge and nearly equal, and their difference is mostly rounding error;
# - **two-pass**: the mean first, then the mean of $(x-\mu)^2$: stable, two sweeps;
# - **Welford + Chan**: one sweep keeping a running mean and $M_2 = \sum (x_i - \bar{x})^2$,
#   updated element by element (Welford 1962), within contiguous blocks of 8 columns whose
#   results are merged by Chan's rule (Chan, Golub and LeVeque 1979):
#   $M_2 = M_{2,a} + M_{2,b} + \delta^2\,\frac{n_a n_b}{n_a+n_b}$ with $\delta = \bar{x}_b - \bar{x}_a$,
#   how a vectorised or multi-threaded kernel combines partial results.

# %%
print(inspect.getsource(welford_var))

# %% [markdown]
# Adversarial rows (4 rows of 256, float64 data cast to each dtype): **standard** (mean 0,
# std 1), **offset** (mean $10^4$, std $10^{-2}$) and **constant** (every value
# $10^4 + 0.1$). The table gives each algorithm's largest *relative* variance error against
# float64 arithmetic on the same rounded data (absolute for constant rows, whose variance is 0),
# and, first, how much of the variance rounding the input to that dtype already destroyed.
#
# How a row is added up matters here too. torch's own `sum` and `mean` cut a row into chunks
# as wide as the CPU's vector registers (16 float32 values with AVX-512, 8 with AVX2, 4 with
# NEON), so their last bits, and with them every digit of a cancellation error, change from
# one CPU to the next. The three algorithms therefore add with `helpers.lessons.variance.row_sum`:
# 16 running sums over the row, as one AVX-512 register holds, then the 16 lanes pairwise,
# each step an elementwise addition that rounds the same on every CPU. The table below is the
# same, bit for bit, everywhere.

# %%
errors = error_table()
errors.map(lambda v: f"{v:.1e}")

# %%
assert errors.loc[("offset", "float32"), "one-pass E[x²]−E[x]²"] > 1  # more than 100% wrong
assert errors.loc[("offset", "float32"), ["two-pass", "Welford + Chan"]].max() < 0.05
assert errors.loc[("offset", "float32"), "Welford + Chan"] > 4 * errors.loc[("offset", "float32"), "two-pass"]
assert errors.loc[("constant", "float32"), "one-pass E[x²]−E[x]²"] > 1  # variance 0, computed 16
assert errors.loc[("offset", "float16"), "rounding the input"] == 1.0

# %% [markdown]
# Read it row by row:
#
# - on ordinary rows all three agree to float32 precision;
# - at mean $10^4$, std $10^{-2}$, the one-pass variance is off by a factor of about $10^5$ (it
#   can even come out **negative**, and then `rsqrt` gives NaN); two-pass and Welford stay
#   within a few percent, the limit set by representing a mean of $10^4$ in float32 (spacing
#   $\approx 10^{-3}$, a tenth of the std). They are not equally accurate: Welford's error
#   (2.5e-2) is about five times two-pass's (4.8e-3). Welford rounds its running mean to that
#   spacing at every update and uses it in every $M_2$ term; two-pass rounds its mean once;
# - a constant row has variance 0; the one-pass formula reports 16 ($E[x^2] \approx 10^8$,
#   where float32's spacing is 8, so its error comes in steps of 8);
# - in float16 and bfloat16 the offset rows are **already constant** after rounding: float16
#   has spacing 8 near $10^4$, bfloat16 64, so 100% of the variance is lost before any
#   algorithm runs. Accumulating in float32 (which all three do for half inputs, as torch does)
#   cannot bring it back: keep activations whose mean is large next to their spread out of
#   half precision, or centre them first.
#
# **PyTorch's own history of this bug.** PyTorch's LayerNorm and GroupNorm kernels once used
# the one-pass formula. Issue
# [pytorch/pytorch#40302](https://github.com/pytorch/pytorch/issues/40302) (June 2020) reported
# that for `torch.randn(1024, 32768) * 0.01 + 100.0` "the internal computed variance will be
# all zeros"; PRs [#40307](https://github.com/pytorch/pytorch/pull/40307) (CPU) and
# [#40308](https://github.com/pytorch/pytorch/pull/40308) (CUDA) improved it. Issue
# [#51102](https://github.com/pytorch/pytorch/issues/51102) (January 2021, "LayerNorm does not
# behave as documented") showed a CPU LayerNorm on `torch.randn(5, 4) + 2000` returning
# outputs with variance 30822 instead of 1; PR [#55044](https://github.com/pytorch/pytorch/pull/55044)
# diagnosed it ("both kernels compute the squared sum which causes low precision for large
# values") and discussed two-pass against Welford, and the issue was closed by PRs
# [#54921](https://github.com/pytorch/pytorch/pull/54921) and
# [#59987](https://github.com/pytorch/pytorch/pull/59987), which moved the kernels to Welford.
# Today the CPU kernel computes each row's moments with `RowwiseMoments`
# (`aten/src/ATen/native/cpu/moments_utils.h`): Welford updates on vector lanes over chunks,
# combined with the pairwise merge above. PyTorch's float32 LN on our offset rows:

# %%
rows = adversarial_rows("offset", rows=4, width=256)
torch_error = (F.layer_norm(rows.float(), (256,)).double() - F.layer_norm(rows.float().double(), (256,))).abs().max()
assert not torch_error.isnan() and torch_error < 0.3  # at most 3 float32 steps near 1e4, over the std
print("torch float32 LayerNorm, mean 1e4 / std 1e-2: no NaN, max error < 0.3")
one_pass_error = layer_norm_error(rows, torch.float32, 1e-5, "one-pass E[x²]−E[x]²")
assert not (one_pass_error <= 1).any()  # every row off by more than 1, or NaN

# %% [markdown]
# That error is float32's own limit: near $10^4$ its spacing is $9.8\cdot10^{-4}$, a tenth of the
# std, so a mean off by one step moves every $\hat{x}$ by about 0.1. PyTorch stays within three
# such steps (its exact digits follow the CPU's lanes, so the cell prints the bound it checks,
# not this machine's digits); the one-pass formula on the same rows is off by more than 1, or
# gives NaN.
#
# ### See it: move the mean away from zero
#
# Rows $\text{offset} + \text{scale}\cdot z$ (8 rows of 256, $z$ standard normal, float64),
# rounded to **dtype**; each bar is the largest error of the LN output when its variance comes
# from that algorithm, against float64 LN on the same rounded data (red: above 0.1, or NaN).
# The table gives each algorithm's mean variance next to the true one.
#
# Try: offset $10^4$, scale $10^{-2}$ in float32 (one-pass gives NaN); lower the offset to 1
# (all agree); raise **eps** to $10^{-1}$, larger than the variance $10^{-4}$ (every error
# shrinks: eps hides a small variance, and also changes the output); choose float16 (the row
# is constant after rounding, so every algorithm agrees on 0).

# %%
# NBVAL_IGNORE_OUTPUT
# displays a widget: offset, scale, dtype and eps controls, with their live figure and table
demo = stability_demo()
display(demo)

# %% [markdown]
# The same dashboard for a reader without a kernel, at its default setting: the one-pass variance
# of float32 rows far from 0 comes out NaN (the red bar), the two-pass and Welford ones do not.

# %%
demo.snapshot()
plt.show()

# %% [markdown]
# ### Which variance: the biased one
#
# (The formula itself is core notebook [00](00_what_layernorm_computes.ipynb), section 3; here, why
# its variance divides by $n$.) A variance averages squared deviations from the mean. Dividing their sum by $n$ gives the
# **biased** (population) variance; dividing by $n - 1$ gives the **unbiased** estimate
# (Bessel's correction), which is the better guess of a whole population's variance from a
# sample of $n$. `torch.var` divides by $n - 1$ unless told otherwise: `unbiased=False` (the
# lesson's code) or, in newer code, `correction=0` mean divide by $n$.
#
# LN does not estimate anything: it standardises exactly the $n$ numbers in front of it, so it
# divides by $n$. So do Ba et al. (their $\sigma$ divides by $H$, the number of hidden units)
# and PyTorch ("the variance is calculated via the biased estimator"). On a 4-feature token the
# two differ by the factor $n / (n - 1) = 4/3$; at a Transformer's width the difference is small
# (at $n = 768$, as in BERT-base and GPT-2 small, $768 / 767 = 1.0013$, and the outputs differ by
# a factor $\sqrt{767/768} = 0.99935$), so the choice matters most for narrow layers like this one:

# %%
token = torch.tensor([1.0, 2.0, 3.0, 6.0])  # n = 4 features, mean 3
squares = (token - token.mean()) ** 2
print("squared deviations:", squares.tolist(), " sum:", squares.sum().item())
variances = pd.DataFrame({
    "sum / n or sum / (n - 1)": [squares.sum().item() / 4, squares.sum().item() / 3],
    "torch.var(unbiased=...)": [token.var(unbiased=False).item(), token.var(unbiased=True).item()],
    "torch.var(correction=...)": [token.var(correction=0).item(), token.var(correction=1).item()],
}, index=["biased (divide by n)", "unbiased (divide by n - 1)"])
ratio = token.var() / token.var(unbiased=False)
assert abs(ratio.item() - 4 / 3) < 1e-6
print("unbiased / biased =", round(ratio.item(), 6), "= 4/3")
variances

# %% [markdown]
# LN by hand with each variance, against `nn.LayerNorm` on a tiny tensor `tiny` of 3 tokens (token 2's
# features barely differ, on purpose): only the biased
# one matches. With the unbiased one, the outputs of tokens 0 and 1 are shrunk by
# $\sqrt{3/4} = 0.866$ (token 2's by less: there `eps` dominates the variance anyway).

# %%
tiny = torch.tensor([[1.0, 2.0, 3.0, 6.0], [-4.0, 0.0, 4.0, 8.0], [0.0, 0.002, -0.002, 0.0]])  # 3 tokens
with torch.no_grad():
    torch_y = nn.LayerNorm(4)(tiny)


def layer_norm_by_hand(x, unbiased, eps=1e-5):
    mean = x.mean(dim=-1, keepdim=True)
    var = x.var(dim=-1, unbiased=unbiased, keepdim=True)
    return (x - mean) / torch.sqrt(var + eps)


biased_y = layer_norm_by_hand(tiny, unbiased=False)
unbiased_y = layer_norm_by_hand(tiny, unbiased=True)
for name, out in [("biased Var:  ", biased_y), ("unbiased Var:", unbiased_y)]:
    print("output std per token,", name, [round(s, 4) for s in out.std(-1, correction=0).tolist()])
variance_match = pd.concat([compare(biased_y, torch_y, name="biased Var (unbiased=False) vs nn.LayerNorm"),
                            compare(unbiased_y, torch_y, name="unbiased Var (torch.var's default) vs nn.LayerNorm")])
shown(variance_match, below=1e-6)

# %% [markdown]
# ### eps: never divide by zero
#
# The lesson: $\epsilon$ is a small constant, 1e-5, "to avoid dividing by zero" (用于避免除以零).
# A token whose features are all equal has variance 0, and its centred values are all 0, so
# without `eps` LN computes $0 / 0$, which is `nan`; a `nan` then spreads to everything it
# touches downstream, the loss included. With `eps` it is $0 / \sqrt{10^{-5}} = 0$:

# %%
constant = torch.full((4,), 2.5)  # a token whose features are all equal
centred_c = constant - constant.mean()
var_c = (centred_c**2).mean()
print("x - E[x]:", centred_c.tolist(), " Var[x]:", var_c.item())
print("eps = 0:    ", (centred_c / torch.sqrt(var_c + 0.0)).tolist())
print("eps = 1e-5: ", (centred_c / torch.sqrt(var_c + 1e-5)).tolist())
print("F.layer_norm, eps=0:   ", F.layer_norm(constant, (4,), eps=0.0).tolist())
print("F.layer_norm, default: ", F.layer_norm(constant, (4,)).tolist())

# %% [markdown]
# `eps` does more than avoid $0 / 0$: for a token whose variance is comparable to `eps`, it
# decides how much the token is flattened (its output variance is
# $\mathrm{Var}/(\mathrm{Var} + \epsilon)$: exercise 4 below). Without it, LN would blow differences of any size,
# however tiny, up to a standard deviation of 1; `eps` decides where that stops.
#
# Which `eps` to pick in your own model, what float16 does to a small one, and why a pretrained
# checkpoint's must be matched: deep dive [17](17_layernorm_in_your_training_code.ipynb).

# %% [markdown]
# One token of 8 features, `1 + 0.003 · randn`: its variance, 1.26e-5, is about the default `eps`.
# At five values of `eps` (`helpers.widgets.eps_state`, which computes LN of the token at any
# `eps`), the measured variance of LN's output equals $\mathrm{Var}/(\mathrm{Var} + \epsilon)$,
# and it falls from 1 to almost 0 as `eps` passes the token's variance.

# %%
demo_token = 1.0 + 0.003 * torch.randn(8, generator=torch.Generator().manual_seed(0))
rows = [eps_state(demo_token, e)["table"].iloc[0] for e in (1e-9, 1e-7, 1e-5, 1e-3, 1e-1)]
eps_table = pd.DataFrame(rows).reset_index(drop=True)
assert ((eps_table["output var (measured)"] - eps_table["var / (var + eps)"]).abs() < 1e-5).all()
assert eps_table["output std"].is_monotonic_decreasing
assert eps_table["output std"].iloc[0] > 0.999 and eps_table["output std"].iloc[-1] < 0.02
eps_table.map("{:.3e}".format)

# %% [markdown]
# ## 4. Speed: LN is memory-bound
#
# LN does about ten floating-point operations per element, and a CPU core does billions a
# second; it moves every element through memory at least twice (forward: read $x$, write $y$)
# and three more times in the backward pass (read $x$ and $dy$, write $dx$). So its speed limit
# is memory bandwidth, and the machine's **copy bandwidth** (`y.copy_(x)`: read once, write
# once) is the practical ceiling. `helpers.lessons.memory_and_speed.bytes_moved` writes that model out:
# forward $2MN$ elements, forward+backward $5MN$.
#
# `make bench` (`benchmarks/run.py`, a few minutes) times, on 2 threads, the naive composition,
# `helpers.layer_norm` (eager), `LayerNormFunction` (eager), `torch.compile(helpers.layer_norm)`,
# `CompiledLayerNormFunction` (section 4.1), the RMSNorm counterparts and PyTorch's kernels, forward,
# backward and forward+backward. It reads the last-level cache size at run time and sweeps tensors
# from 8 KiB (inside L1) to twice that cache (a copy's working set 4x the cache), widths 64 to 8192;
# every implementation and the copy write into reused memory, and allocation is timed apart
# (section 4.2). Each size runs 10 interleaved rounds (25 at the headline size, $4096\times1024$);
# the CSV keeps the fastest and the median round, and `ratio_vs_torch` is median over median. It
# writes `helpers/data/layernorm_cpu.csv`, headed by a description of the machine; here we
# read the stored results (no fresh run needed):

# %%
# make bench's stored measurements: the same on every machine (a new `make bench` rewrites them)
results, machine = load_results()
for key, value in machine.items():
    print(f"{key}: {value}")
reused = results[results.outputs == "preallocated"]
headline = reused[(reused.rows == 4096) & (reused.width == 1024) & (reused.direction != "copy")]
ratios = headline.pivot(index="implementation", columns="direction", values="ratio_vs_torch")
ratios[["forward", "backward", "forward+backward"]].round(2)

# %% [markdown]
# The table is median time relative to PyTorch's kernel in the same run, at $4096\times1024$
# float32 (16 MiB). Where the hand-written function's time goes: count its full passes over
# $M\times N$ data. Its backward recomputes $\hat{x}$ (read $x$, write), forms one product
# $dy\cdot\hat{x}$ shared by $d\gamma$ (its column sums) and by $\frac1N\sum g\hat{x}$ (a
# matrix-vector product with $\gamma$, no new $M\times N$ tensor), gets $\frac1N\sum g$ the same
# way from $dy$, and builds $dx$ in $\hat{x}$'s buffer with in-place operations. Each is a
# separate eager operation and a full pass through memory; `helpers.lessons.memory_and_speed.count_full_passes`
# lists the operations on $M\times N$ tensors that autograd runs in the backward:

# %%
passes = {name: count_full_passes(fn) for name, fn in
          [("LayerNormFunction", LayerNormFunction.apply), ("torch (F.layer_norm)", F.layer_norm)]}
for name, ops in passes.items():
    print(f"{name:21s} {len(ops):2d} operations: {', '.join(ops)}")
assert len(passes["LayerNormFunction"]) == 12 and passes["torch (F.layer_norm)"] == ["native_layer_norm_backward"]

# %% [markdown]
# PyTorch's backward is one operation, `native_layer_norm_backward`, a fused C++ kernel
# (`aten/src/ATen/native/cpu/layer_norm_kernel.cpp`): each thread takes a block of rows and,
# for each row, while its `x` and `dy` sit in the L1 cache, adds them into the thread's
# $d\gamma$/$d\beta$ partial sums, computes the two row sums, and writes `dx`; so `x` and `dy`
# come from memory once. The eager versions pay twice on a busy machine: every operation is its
# own parallel region, and a thread that loses its core stalls the others until it returns; one
# fused kernel meets that risk once.
#
# ### 4.1 A compiled path: the $d\gamma/d\beta$ reduction split, then done in the same pass
#
# `torch.compile(helpers.layer_norm)` fuses the forward well, but its backward is slow: Inductor
# puts the per-row sums for $dx$ and the per-column sums for $d\gamma$, $d\beta$ in one kernel,
# which walks 16 columns at a time down all rows, a new page of memory at every step ("fused by
# Inductor" below). Splitting the reduction as PyTorch's kernel does (section 3's two stages),
# $dx$ row by row and $d\gamma$, $d\beta$ as partial sums over blocks of rows followed by a second,
# small reduction (`helpers.speed.compiled.blocked_column_sum`), fixes the walk ("split"). But Inductor
# runs the two parts as two loop nests, one after the other, so the split backward reads $x$ and
# $dy$ from memory twice: 5 passes over the $M\times N$ data where 3 would do. Its C++ code
# generator nests two loop nests under one outer loop only when one consumes what the other
# produces and their outer loops have the same ranges (rows for $dx$; blocks and columns for the
# partial sums), and this backward meets neither condition.
#
# `helpers.speed.one_pass` writes the loop that PyTorch's kernel runs as plain Python, which Numba
# compiles to machine code: each thread takes blocks of rows; for each row it computes the two row
# sums, then walks the row again, now in the L1 cache, writing $dx$ and adding into its block's
# partial $d\gamma$ and $d\beta$ rows; stage 2 adds the blocks' partial rows. This is
# `CompiledLayerNormFunction`'s backward when it trains (float32 and float64; elsewhere it runs the
# split graph):

# %%
print(inspect.getsource(one_pass.kernels().layer_norm_kernel.py_func))

# %% [markdown]
# The backward alone, from the same run (the three compiled backwards, and PyTorch's kernel
# called directly):

# %%
backward = headline[headline.direction == "backward"].set_index("implementation")
backwards = backward.loc[["torch kernel (native_layer_norm_backward)",
                          "compiled backward, one pass (Numba; block partial sums)",
                          "compiled backward, split (dx; block partial sums)",
                          "compiled backward, fused by Inductor (one graph)"], ["median_ms", "time_ms"]]
backwards.rename(columns={"median_ms": "median ms", "time_ms": "fastest ms"}).round(2)

# %%
one, split, fused = backwards["median_ms"].iloc[1:]
assert one < split < fused  # each step of the argument saves time
compiled_ratio = ratios.loc["CompiledLayerNormFunction"]
assert compiled_ratio["forward+backward"] <= 1.25  # the goal, in this stored run
print(f"CompiledLayerNormFunction / PyTorch (medians): forward {compiled_ratio['forward']:.2f}, "
      f"backward {compiled_ratio['backward']:.2f}, forward+backward {compiled_ratio['forward+backward']:.2f}")

# %% [markdown]
# In the stored run the one-pass backward takes less time than PyTorch's kernel, the split one
# about as long, and the fused one much longer. `CompiledLayerNormFunction`'s forward (Inductor's)
# takes somewhat longer than PyTorch's, its backward less, and forward+backward is within the
# 1.25x goal at the headline size. A new `make bench` gives other numbers (each process places
# its buffers and threads differently, and the cores may be shared); compare ratios from one run,
# not times. Across sizes, at width 1024:

# %%
compiled = reused[(reused.implementation == "CompiledLayerNormFunction") & (reused.direction == "forward+backward")
                  & (reused.width == 1024)]
compiled.set_index("MiB")[["rows", "ratio_vs_torch"]].round(2).T

# %% [markdown]
# Small tensors pay the compiled Function's call overhead (Python, Dynamo's guards, Numba's
# dispatch and thread wake-up: several times PyTorch's time below 1 MiB, where a whole call takes
# tens of microseconds). From about the size where the data no longer fit in the last-level cache,
# it takes about PyTorch's time or less: both now move the data through memory the same number of
# times (forward: read $x$, write $y$; backward: read $x$ and $dy$, write $dx$).
#
# The bandwidth picture at width 1024, forward+backward, every implementation on reused outputs:

# %%
fig = bandwidth_figure(results, width=1024, direction="forward+backward")
plt.show()

# %% [markdown]
# Left: the fastest round's time per call against tensor size (log axes); right: the achieved GB/s
# under the bytes model at that time, with the copy bandwidth dashed. The distance from a curve to
# the dashed line is how much memory traffic an implementation spends beyond the minimum (extra
# passes, temporaries). The copy itself climbs from about 40 GB/s at the smallest sizes (call
# overhead) to about 150 GB/s around 1 MiB, holds above 100 GB/s while the data fit in the
# last-level cache, and falls to about 35 GB/s beyond it. Compare ratios from one run, not absolute
# times across machines.
#
# ### 4.2 The allocation cliff
#
# Every call of `F.layer_norm` allocates its output (and the backward its `dx`). Timed apart, with
# the allocator's defaults: a fresh output (`x.clone()`) against a copy into reused memory
# (`y.copy_(x)`), `torch.empty_like` alone, and `faults_per_call`, the minor page faults per call:

# %%
at = results[results.width == 1024].set_index(["implementation", "MiB"]).sort_index()
sizes = [4.0, 16.0, 32.0, 64.0]
cliff = pd.DataFrame({
    "copy into reused memory, ms": at.loc["copy (y.copy_(x))"].query("outputs != 'preallocated'")["median_ms"],
    "fresh output (x.clone()), ms": at.loc["copy, fresh output (x.clone())", "median_ms"],
    "faults per clone": at.loc["copy, fresh output (x.clone())", "faults_per_call"],
    "torch.empty_like alone, ms": at.loc["allocation alone (torch.empty_like(x))", "median_ms"],
}).loc[sizes]
cliff.round(3)

# %%
assert cliff.loc[64.0, "faults per clone"] > 1000 and cliff.loc[4.0, "faults per clone"] == 0
assert cliff.loc[64.0, "fresh output (x.clone()), ms"] > 2 * cliff.loc[64.0, "copy into reused memory, ms"]

# %% [markdown]
# Below 32 MiB a fresh copy costs nothing extra: glibc hands back a freed block. From 32 MiB on,
# glibc maps every such allocation afresh from the kernel (above its mmap threshold) and unmaps it
# on free, and the first write to each 4 KiB page faults: 8,193 faults per 32 MiB copy, about
# 1 µs each, which makes the copy several times slower than into reused memory. `torch.empty_like`
# alone stays cheap (the pages are only reserved); the cost lands on the first write. (PyTorch's
# forward+backward with fresh outputs keeps several buffers alive at once and faults from 16 MiB
# on: about 3,700 faults per call there, 32,770 at 64 MiB, in the CSV's "fresh outputs" rows.)
# That is why every timing above writes into reused memory, and why a training loop's allocator
# (PyTorch's caching allocator on GPUs) keeps freed blocks.
#
# **Re-measured live**, one small size ($256\times1024$, 1 MiB), forward+backward; your numbers
# will differ:

# %%
# NBVAL_IGNORE_OUTPUT
# prints a timing
x = torch.randn(256, 1024, requires_grad=True)
w, b = torch.randn(1024, requires_grad=True), torch.randn(1024, requires_grad=True)
dy = torch.randn(256, 1024)
live = {}
for name, fn in [("torch (F.layer_norm)", F.layer_norm), ("LayerNormFunction", LayerNormFunction.apply)]:
    timer = benchmark.Timer("torch.autograd.grad(fn(x, (1024,), w, b, 1e-5), (x, w, b), dy)",
                            globals={"torch": torch, "fn": fn, "x": x, "w": w, "b": b, "dy": dy}, num_threads=2)
    live[name] = min(timer.blocked_autorange(min_run_time=0.2).times) * 1e3
    print(f"{name:22s} {live[name]:.3f} ms")
print(f"ratio: {live['LayerNormFunction'] / live['torch (F.layer_norm)']:.2f}x")

# %% [markdown]
# ### RMSNorm against LayerNorm
#
# RMSNorm (Zhang and Sennrich 2019) drops the mean: $y = x / \sqrt{\overline{x^2} + \epsilon}\cdot\gamma$.
# The authors report that it "reduces the running time by 7%∼64% on different models" (their
# abstract): the time of a whole model, end to end, with RMSNorm in place of LN, not of the
# norm alone. 64% less time is 1/0.36 = 2.8x faster, 7% less is 1.08x. How much of a model's
# time its norms take sets how far an op-level difference can move that figure, so it cannot be
# compared with the op-level ratios below.
#
# `make bench` measured three pairs, each RMSNorm against the matching LN:
#
# - `helpers.rms_norm` against `helpers.layer_norm`: two eager compositions of tensor
#   operations, differentiated by autograd. RMSNorm has fewer operations (no mean, no
#   subtraction), and each is a pass through memory, so this ratio mostly counts operations;
# - PyTorch's `F.rms_norm` against `F.layer_norm`: not like for like in this build (below);
# - `CompiledRMSNormFunction` against `CompiledLayerNormFunction`: both compiled the same way,
#   like for like.

# %%
ok = reused[reused.status == "ok"].set_index(["implementation", "direction", "rows", "width"])["median_ms"]
pairs = {"torch: F.rms_norm / F.layer_norm": ("torch (F.rms_norm)", "torch (F.layer_norm)"),
         "helpers: rms_norm / layer_norm": ("helpers.rms_norm", "helpers.layer_norm"),
         "compiled: RMSNorm / LayerNorm": ("CompiledRMSNormFunction", "CompiledLayerNormFunction")}
rms = pd.DataFrame({label: (ok[rms_name] / ok[ln_name]) for label, (rms_name, ln_name) in pairs.items()})
rms = rms.dropna().groupby("direction").median()
assert (rms["helpers: rms_norm / layer_norm"] < 1).all() and (rms["torch: F.rms_norm / F.layer_norm"] > 1).all()
rms.round(2)

# %% [markdown]
# Median time of RMSNorm over median time of LN, the median over the shapes both were timed at in
# the stored run (a ratio below 1: RMSNorm took less time). The from-scratch RMSNorm takes less
# time than the from-scratch LN, and PyTorch's `F.rms_norm` takes *more* than `F.layer_norm`. The
# reason is in the next cell: in this CPU build `F.rms_norm` is a composite, a sequence of eager
# operations (its output comes from a `Mul` node), while `F.layer_norm` is one fused kernel
# (`NativeLayerNorm`). The like-for-like pair is the compiled one: there RMSNorm saves a little,
# about what skipping one reduction per row is worth when both are memory-bound (each still reads
# $x$ and writes $y$ once). That op-level saving reaches a whole model's time only in proportion
# to the share of the time its norms take, so end to end it is at most the op-level saving; Zhang
# and Sennrich's larger figures (up to 64% less time) come from models and implementations in
# which LN itself took a large share of the time.

# %%
x = torch.randn(4, 8, requires_grad=True)
grad_fns = {name: type(fn(x, (8,)).grad_fn).__name__ for name, fn in [("F.layer_norm", F.layer_norm),
                                                                      ("F.rms_norm", F.rms_norm)]}
print("F.layer_norm's output comes from", grad_fns["F.layer_norm"])
print("F.rms_norm's output comes from  ", grad_fns["F.rms_norm"])

# %% [markdown]
# ## Exercises
#
# **1.** The biased variance. Return the biased variance of each token of `x` over its
# last dim, shape `x.shape[:-1]`, by hand: `torch.var` and `torch.std` refuse to run while it is
# checked. One case has tokens around 10000 with a spread of 1: the shortcut
# $\mathrm{E}[x^2] - \mathrm{E}[x]^2$ fails there, in float32. Try it and see why.

# %%
def my_biased_var(x):
    """The biased variance of each token of x (over the last dim), shape x.shape[:-1]."""
    centred = x - x.mean(dim=-1, keepdim=True)
    return (centred**2).sum(dim=-1) / (x.shape[-1] - 1)  # TODO: is this LayerNorm's variance?


check_biased_variance(my_biased_var)

# %% [markdown]
# <details><summary>Solution</summary>
#
# ```python
# def my_biased_var(x):
#     centred = x - x.mean(dim=-1, keepdim=True)  # centre first: no catastrophic cancellation
#     return (centred**2).mean(dim=-1)  # divide by n
# ```
#
# </details>

# %% [markdown]
# **2.** Write LN's input gradient (no $\gamma$, $\beta$; over the last dim) from the boxed
# formula, with $g = dy$. `check_layer_norm_backward` runs it on three cases against autograd
# and names the usual mistakes.

# %%
def layer_norm_backward(x, dy, eps):
    mean = x.mean(-1, keepdim=True)
    rstd = ((x - mean) ** 2).mean(-1, keepdim=True).add(eps).rsqrt()
    x_hat = (x - mean) * rstd  # noqa: F841 (the draft forgets to use it)
    return rstd * (dy - dy.mean(-1, keepdim=True))  # TODO: one term is missing


check_layer_norm_backward(layer_norm_backward)

# %% [markdown]
# That draft drops a term, and the check says which. (Autograd does not count: while the checker
# runs, `backward` and `torch.autograd.grad` refuse to run, as do torch's norm functions.)
#
# <details><summary>Solution</summary>
#
# ```python
# def layer_norm_backward(x, dy, eps):
#     mean = x.mean(-1, keepdim=True)
#     rstd = ((x - mean) ** 2).mean(-1, keepdim=True).add(eps).rsqrt()
#     x_hat = (x - mean) * rstd
#     return rstd * (dy - dy.mean(-1, keepdim=True) - x_hat * (dy * x_hat).mean(-1, keepdim=True))
# ```
#
# </details>

# %% [markdown]
# **3.** Chan's merge: given two blocks' counts, means and $M_2$ (sums of squared deviations
# from their own means), return the $M_2$ of their union.

# %%
def merge_m2(n_a, mean_a, m2_a, n_b, mean_b, m2_b):
    return m2_a + m2_b  # TODO: the two means differ


check_chan_merge_m2(merge_m2)

# %% [markdown]
# <details><summary>Solution</summary>
#
# ```python
# def merge_m2(n_a, mean_a, m2_a, n_b, mean_b, m2_b):
#     delta = mean_b - mean_a  # the distance between the two blocks' means
#     return m2_a + m2_b + delta * delta * n_a * n_b / (n_a + n_b)
# ```
#
# </details>

# %% [markdown]
# **4.** How far under 1? LN's output variance prints as 1, yet is just under it. For small
# variances, like the lesson's in core notebook [01](01_before_the_activation_per_token.ipynb),
# it shows in the 4th decimal. Write `my_output_var(var, eps)`: LN's output variance (no
# $\gamma$, $\beta$) for tokens of biased variance `var`. The stub fails on purpose.

# %%
def my_output_var(var, eps):
    return torch.ones_like(var)  # TODO: exactly 1, always?


check_output_variance(my_output_var)

# %% [markdown]
# <details><summary>Solution</summary>
#
# Dividing every value by $c$ divides the variance by $c^2$: dividing by $\sqrt{\mathrm{Var} + \epsilon}$
# divides it by $\mathrm{Var} + \epsilon$.
#
# ```python
# def my_output_var(var, eps):
#     return var / (var + eps)
# ```
#
# </details>

# %% [markdown]
# ## Claims ledger
#
# Each claim this notebook makes, its outcome and its evidence. No stored experiment is involved:
# a claim resting on a check in the cells above gets "supported" when that check, evaluated here on
# the cells' results, holds and "refuted" when it does not; a claim resting on a citation or on an
# argument alone is "not tested".

# %%
def sci(v):
    """One significant digit: how the cells above print errors."""
    return f"{v:.0e}"


OFFSET32 = errors.loc[("offset", "float32")]
ONE_PASS = "one-pass E[x²]−E[x]²"
STORED_BENCH = "§4: `make bench`'s stored CSV"
LEDGER = [  # (claim, evidence, shown in): a check computed above, or None (a citation or an argument only)
    ("LN's hand-derived backward (dγ = Σ dy·x̂, dβ = Σ dy, dx = r(g − mean g − x̂·mean(g x̂))) passes "
     "`gradcheck` in float64", claims.Check(gradcheck_ok, f"gradcheck: {gradcheck_ok}"), "§1, `gradcheck`"),
    ("`LayerNormFunction` equals autograd on `helpers.layer_norm` and PyTorch's kernel, forward and all gradients",
     claims.Check(table["close"].all(), f"{int(table['close'].sum())} of {len(table)} comparisons close"),
     "§1, the `compare` table; `tests/test_autograd_shapes_and_memory.py` over many shapes"),
    ("Σ dx = 0 in every row; dx·x̂ = 0 at ε = 0 and r(g·x̂)ε/(σ² + ε) otherwise",
     claims.Check(all(total < 1e-13 and match for total, match in row_checks.values()),
                  "; ".join(f"eps {e:g}: |Σ dx| < 1e-13 {'yes' if t < 1e-13 else 'no'}, dx·x̂ as predicted "
                            f"{'yes' if m else 'no'}" for e, (t, m) in row_checks.items())), "§1, per-row properties"),
    ("dγ and dβ as block partial sums plus a second reduction equal the one-shot sum and PyTorch's (float64)",
     claims.Check(max(two_stage_gaps.values()) < 1e-12 and max(param_grad_gaps.values()) < 1e-12,
                  "largest difference " + ("< 1e-12" if max(*two_stage_gaps.values(), *param_grad_gaps.values()) < 1e-12
                                           else sci(max(*two_stage_gaps.values(), *param_grad_gaps.values())))),
     "*The hard part*; `tests/test_param_grad_reduction.py`"),
    ("in float32 both sums stay within their k·u bounds, and the two-stage error is less than a quarter of one "
     "accumulator's",
     claims.Check((reduction["max error"] <= reduction["bound"]).all() and two_stage < sequential / 4,
                  f"median errors {sci(sequential)} and {sci(two_stage)}"), "*The hard part*, `column_sum_errors`"),
    ("a loss of `out.sum()` or `(out**2).sum()` gives a fresh LN (near-)zero input gradients, a cube does not",
     claims.Check(grads["out.sum()"] < 1e-5 and grads["(out**2).sum()"] < 1e-3 < 1 < grads["(out**3).sum()"],
                  ", ".join(f"{name}: {'< 1e-3' if v < 1e-3 else '> 1'}" for name, v in grads.items())),
     "*Checking a backward*"),
    ("trained by their gradients, γ and β undo the normalization (3 and 2, within 3e-3, in 30 steps)",
     claims.Check(((end["gamma"] - 3.0).abs() < 3e-3).all() and ((end["beta"] - 2.0).abs() < 3e-3).all(),
                  f"γ {end['gamma'].min():.4f} to {end['gamma'].max():.4f}, β {end['beta'].min():.4f} to "
                  f"{end['beta'].max():.4f}"), "*dγ and dβ at work*"),
    ("`LayerNormFunction` saves 2 floats per row beyond the input and weight, no more than PyTorch's kernel",
     claims.Check(memory.loc["LayerNormFunction", "new bytes"] == 2 * 64 * 4
                  and memory.loc["LayerNormFunction", "new bytes"] <= memory.loc["torch (F.layer_norm)", "new bytes"],
                  f"{memory.loc['LayerNormFunction', 'new bytes']} bytes for 64 rows, PyTorch "
                  f"{memory.loc['torch (F.layer_norm)', 'new bytes']}"), "§2: table, bar chart"),
    ("autograd on the compositions keeps 2 (`helpers.layer_norm`) and 3 (naive) extra input-sized tensors",
     claims.Check(int(memory.loc["helpers.layer_norm", "new / x size"]) == 2
                  and int(memory.loc["naive composition", "new / x size"]) == 3,
                  f"{memory.loc['helpers.layer_norm', 'new / x size']:.3f} and "
                  f"{memory.loc['naive composition', 'new / x size']:.3f} input sizes"), "§2"),
    ("at mean 1e4, std 1e-2 in float32 the one-pass variance is off by more than 100%, and LN with it by more "
     "than 1 (or NaN) on every row",
     claims.Check(OFFSET32[ONE_PASS] > 1 and not (one_pass_error <= 1).any(),
                  f"relative variance error {OFFSET32[ONE_PASS]:.1e}"), "§3, the error table"),
    ("for a constant row the one-pass variance is not 0",
     claims.Check(errors.loc[("constant", "float32"), ONE_PASS] > 1,
                  f"{errors.loc[('constant', 'float32'), ONE_PASS]:g} instead of 0"), "§3, the error table"),
    ("two-pass and Welford stay within 5% there, Welford more than 4x less accurate than two-pass",
     claims.Check(OFFSET32[["two-pass", "Welford + Chan"]].max() < 0.05
                  and OFFSET32["Welford + Chan"] > 4 * OFFSET32["two-pass"],
                  f"two-pass {OFFSET32['two-pass']:.1e}, Welford {OFFSET32['Welford + Chan']:.1e}"),
     "§3, the error table"),
    ("in float16 and bfloat16 such rows are constant after rounding: no algorithm can recover the variance",
     claims.Check((errors.loc[[("offset", "float16"), ("offset", "bfloat16")], "rounding the input"] == 1.0).all(),
                  "variance lost by rounding the input: " + ", ".join(
                      f"{dtype} {errors.loc[('offset', dtype), 'rounding the input']:.0%}" for dtype in ("float16", "bfloat16"))), "§3, the error table's *rounding the input*"),
    ("PyTorch's float32 LN on those rows gives no NaN and an error under 0.3 (three float32 steps over the std)",
     claims.Check(not torch_error.isnan() and torch_error < 0.3,
                  "NaN" if torch_error.isnan() else "error < 0.3" if torch_error < 0.3 else f"error {torch_error:.2f}"), "§3, the float32 torch LN cell"),
    ("PyTorch had the one-pass bug and fixed it with two-pass and Welford; its CPU kernel uses `RowwiseMoments`",
     None, "§3: the cited issues and PRs, `aten/src/ATen/native/cpu/moments_utils.h`"),
    ("LN divides by n: by hand with the biased variance it matches `nn.LayerNorm`, with the unbiased one it does not",
     claims.Check(variance_match["close"].tolist() == [True, False],
                  "; ".join(f"{name}: {'close' if close else 'not close'}"
                            for name, close in zip(("biased", "unbiased"), variance_match["close"], strict=True))),
     "§3, *Which variance*"),
    ("`eps` sets how far a nearly constant token is flattened: its output variance is Var/(Var + ε)",
     claims.Check(((eps_table["output var (measured)"] - eps_table["var / (var + eps)"]).abs() < 1e-5).all()
                  and eps_table["output std"].is_monotonic_decreasing,
                  f"output std {eps_table['output std'].iloc[0]:.3f} at ε 1e-9 to "
                  f"{eps_table['output std'].iloc[-1]:.3f} at ε 1e-1"), "§3, *eps*"),
    ("LN is memory-bound: its speed is set by the bytes it moves, not by its arithmetic", None,
     "§4: an argument (about ten operations per element against the memory bandwidth); the stored bandwidths "
     "are compared with the copy's, not with the arithmetic limit"),
    ("`CompiledLayerNormFunction`'s forward+backward is within 1.25x of PyTorch's kernel at 4096 × 1024",
     claims.Check(compiled_ratio["forward+backward"] <= 1.25, f"{compiled_ratio['forward+backward']:.2f}x (medians)"),
     STORED_BENCH + ", 4.1"),
    ("the one-pass backward takes less time than the split one, and the split less than Inductor's fused one",
     claims.Check(one < split < fused, f"{one:.2f}, {split:.2f} and {fused:.2f} ms (medians)"),
     STORED_BENCH + ", 4.1; `tests/test_one_pass.py` (equality with PyTorch's kernel, `gradcheck`)"),
    ("from 32 MiB a fresh output costs page faults: a 64 MiB clone takes more than twice a copy into reused memory",
     claims.Check(cliff.loc[64.0, "faults per clone"] > 1000 and cliff.loc[4.0, "faults per clone"] == 0
                  and cliff.loc[64.0, "fresh output (x.clone()), ms"] > 2 * cliff.loc[64.0, "copy into reused memory, ms"],
                  f"{cliff.loc[64.0, 'fresh output (x.clone()), ms'] / cliff.loc[64.0, 'copy into reused memory, ms']:.1f}x"
                  f" at 64 MiB"), STORED_BENCH + ", 4.2"),
    ("Zhang & Sennrich's 7%-64% is less end-to-end running time per model (up to 2.8x faster), not an op-level "
     "figure", None, "their abstract"),
    ("`helpers.rms_norm` takes less time than `helpers.layer_norm` (two eager compositions)",
     claims.Check((rms["helpers: rms_norm / layer_norm"] < 1).all(),
                  f"ratio {rms['helpers: rms_norm / layer_norm'].min():.2f} to {rms['helpers: rms_norm / layer_norm'].max():.2f}"),
     STORED_BENCH + ", the RMSNorm table"),
    ("PyTorch's CPU `F.rms_norm` is a composite and takes more time than its fused `F.layer_norm`",
     claims.Check((rms["torch: F.rms_norm / F.layer_norm"] > 1).all() and "Norm" not in grad_fns["F.rms_norm"]
                  and "NativeLayerNorm" in grad_fns["F.layer_norm"],
                  f"ratio {rms['torch: F.rms_norm / F.layer_norm'].min():.2f} to "
                  f"{rms['torch: F.rms_norm / F.layer_norm'].max():.2f}; its output from {grad_fns['F.rms_norm']}"),
     STORED_BENCH + ", the RMSNorm table; the `grad_fn` cell"),
]
ledger = claims.evidence_ledger(LEDGER)
with pd.option_context("display.max_colwidth", None):
    display(ledger)

# %%
assert len(ledger) == len(LEDGER) and ledger["outcome"].isin(claims.OUTCOMES).all()

# %% [markdown]
# ## Glossary
#
# | English | 中文 | note |
# |---|---|---|
# | Layer Normalization | 层归一化 | |
# | mean, variance | 均值, 方差 | biased variance (divide by N) |
# | gradient, backpropagation | 梯度, 反向传播 | |
#
# ## References
#
# - J. L. Ba, J. R. Kiros, G. E. Hinton, *Layer Normalization*, 2016,
#   [arXiv:1607.06450](https://arxiv.org/abs/1607.06450).
# - A. Karpathy, llm.c, [`doc/layernorm/layernorm.md`](https://github.com/karpathy/llm.c/blob/master/doc/layernorm/layernorm.md):
#   the forward cache (mean, rstd) and the hand-derived backward.
# - N. J. Higham, *Accuracy and Stability of Numerical Algorithms*, 2nd ed., SIAM, 2002, §4.2
#   (error bounds of recursive summation).
# - B. P. Welford, *Note on a method for calculating corrected sums of squares and products*,
#   Technometrics 4(3), 1962.
# - T. F. Chan, G. H. Golub, R. J. LeVeque, *Updating formulae and a pairwise algorithm for
#   computing sample variances*, Stanford CS report STAN-CS-79-773, 1979.
# - PyTorch issues and PRs: [#40302](https://github.com/pytorch/pytorch/issues/40302),
#   [#40307](https://github.com/pytorch/pytorch/pull/40307),
#   [#51102](https://github.com/pytorch/pytorch/issues/51102),
#   [#55044](https://github.com/pytorch/pytorch/pull/55044),
#   [#54921](https://github.com/pytorch/pytorch/pull/54921),
#   [#59987](https://github.com/pytorch/pytorch/pull/59987); the CPU kernel:
#   `aten/src/ATen/native/cpu/layer_norm_kernel.cpp` and `moments_utils.h`.
# - B. Zhang, R. Sennrich, *Root Mean Square Layer Normalization*, NeurIPS 2019,
#   [arXiv:1910.07467](https://arxiv.org/abs/1910.07467).
# - P. Tillet et al., Triton tutorial *Layer Normalization*
#   ([05-layer-norm](https://triton-lang.org/main/getting-started/tutorials/05-layer-norm.html)):
#   a fused forward and backward, benchmarked on a GPU; its backward sums $d\gamma$/$d\beta$ in
#   `GROUP_SIZE_M` partial buffers, then in a second kernel.
