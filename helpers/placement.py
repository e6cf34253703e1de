"""Where the norm goes (notebook 04): before or after the activation, Pre-LN or Post-LN.

- :class:`PlacementMLP`: many deep MLPs trained at once as one stacked network, one per
  (activation, placement, seed), in the style of :class:`helpers.bn_vs_ln.StackedMLP`.
- :func:`placement_runs`: train them briefly on :func:`helpers.bn_vs_ln.make_task` and
  record, per model and layer, the activations' histogram, % saturated (tanh), % dead (ReLU)
  and the weight-gradient norm, at initialisation and after training.
- :class:`TinyTransformer`: a small Transformer written with :class:`helpers.LayerNorm`, in
  Post-LN or Pre-LN form; :func:`transformer_grad_norms` and :func:`warmup_runs`.
- :data:`NORM_PLACEMENT`: where the norm sits in well-known models, with references.
"""

from __future__ import annotations

import math

import pandas as pd
import torch
import torch.nn.functional as F
from torch import nn

from helpers.bn_vs_ln import make_task
from helpers.checks import Case, Exercise, Verdict, check, register
from helpers.functional import layer_norm
from helpers.modules import LayerNorm

__all__ = [
    "ACTIVATIONS",
    "BINS",
    "DEAD",
    "NORM_PLACEMENT",
    "PLACEMENTS",
    "SATURATED",
    "PlacementMLP",
    "TinyTransformer",
    "dead_fraction",
    "placement_runs",
    "placement_state",
    "trained_state",
    "check_pre_ln_residual",
    "check_saturated_fraction",
    "check_dead_fraction",
    "placement_summary",
    "saturated_fraction",
    "transformer_grad_norms",
    "warmup_runs",
]

#: The activations compared.
ACTIVATIONS = ("tanh", "relu", "gelu")
#: The arrangements compared, as the notebook names them.
PLACEMENTS = ("LN -> act", "act -> LN", "no norm")
#: A tanh unit is saturated when ``|tanh| > SATURATED`` (its local gradient is then below 0.06).
SATURATED = 0.97
#: What counts as "dead" for ReLU: a unit that is 0 on every sample of the probe batch.
DEAD = 0.0
#: Histogram bin edges for every activation (values outside are clamped into the end bins).
BINS = torch.linspace(-3.0, 3.0, 61)

_ACT = {"tanh": torch.tanh, "relu": torch.relu, "gelu": F.gelu}
# Init gains (torch.nn.init.calculate_gain; GELU is given ReLU's, as is usual).
_GAIN = {"tanh": 5 / 3, "relu": math.sqrt(2), "gelu": math.sqrt(2)}


def saturated_fraction(t: torch.Tensor) -> torch.Tensor:
    """Fraction of tanh outputs ``t`` with ``|t| > SATURATED``, over all but the last dim (per unit -> mean)."""
    return (t.abs() > SATURATED).float().mean()


def dead_fraction(a: torch.Tensor) -> torch.Tensor:
    """Fraction of units (last dim) whose ReLU output ``a`` is 0 for every sample (all other dims)."""
    alive = (a.reshape(-1, a.shape[-1]) > DEAD).any(dim=0)
    return 1.0 - alive.float().mean()


class PlacementMLP(nn.Module):
    """``len(ACTIVATIONS) * len(PLACEMENTS) * n_seeds`` deep MLPs, stacked along a model dim.

    Model ``m`` has configuration ``configs[m // n_seeds]`` (an ``(activation, placement)``
    pair) and the weights of seed ``m % n_seeds``. Each hidden layer is ``Linear`` followed by
    ``LN -> act``, ``act -> LN`` or just ``act``; LN has no gamma/beta here, so the arrangements
    differ only by where the normalisation sits. The weights are stacked and applied with
    ``torch.baddbmm``; the loss is a sum over models, so no model's gradient depends on another's.
    """

    def __init__(self, depth: int, n_seeds: int, *, in_features: int = 8, width: int = 32):
        super().__init__()
        self.depth, self.n_seeds, self.width = depth, n_seeds, width
        self.configs = [(a, p) for a in ACTIVATIONS for p in PLACEMENTS]
        shapes = [(in_features, width)] + [(width, width)] * (depth - 1) + [(width, 1)]
        self.weights, self.biases = nn.ParameterList(), nn.ParameterList()
        gens = [torch.Generator().manual_seed(s) for s in range(n_seeds)]
        gains = torch.tensor([_GAIN[a] for a, _ in self.configs]).repeat_interleave(n_seeds)
        for fan_in, fan_out in shapes:
            per_seed = torch.stack([torch.randn(fan_in, fan_out, generator=g) for g in gens]) / math.sqrt(fan_in)
            w = per_seed.repeat(len(self.configs), 1, 1)
            if fan_out > 1:
                w = w * gains[:, None, None]
            self.weights.append(nn.Parameter(w))
            self.biases.append(nn.Parameter(torch.zeros(len(w), 1, fan_out)))
        per_model = [c for c in self.configs for _ in range(n_seeds)]
        mask = lambda pred: torch.tensor([pred(a, p) for a, p in per_model])[:, None, None]  # noqa: E731
        self.register_buffer("_ln_first", mask(lambda a, p: p == "LN -> act"), persistent=False)
        self.register_buffer("_ln_after", mask(lambda a, p: p == "act -> LN"), persistent=False)
        self._act = {name: mask(lambda a, p, n=name: a == n) for name in _ACT}

    def forward(self, x: torch.Tensor, keep: list | None = None) -> torch.Tensor:
        """``x`` ``(models, batch, in)`` -> logits ``(models, batch)``; appends each layer's activation to ``keep``."""
        h = x
        for layer in range(self.depth):
            z = torch.baddbmm(self.biases[layer], h, self.weights[layer])
            # every model's arrangement at once, chosen per model by masks (cheaper than slicing)
            pre = torch.where(self._ln_first, layer_norm(z, (self.width,)), z)
            a = sum(torch.where(self._act[name], fn(pre), 0.0) for name, fn in _ACT.items())
            h = torch.where(self._ln_after, layer_norm(a, (self.width,)), a)
            if keep is not None:
                keep.append(a.detach())
        return torch.baddbmm(self.biases[-1], h, self.weights[-1]).squeeze(-1)


def _diagnose(model: PlacementMLP, x: torch.Tensor, y: torch.Tensor, stage: str, depth: int) -> tuple[list, dict]:
    """Per model and layer: activation stats and weight-gradient norms on the probe batch."""
    keep: list = []
    model.zero_grad()
    logits = model(x, keep)
    losses = F.binary_cross_entropy_with_logits(logits, y, reduction="none").mean(1)
    losses.sum().backward()
    rows, hists = [], {}
    s = model.n_seeds
    for m in range(len(model.configs) * s):
        act, place = model.configs[m // s]
        seed = m % s
        for layer, a in enumerate(keep):
            am = a[m]
            rows.append({"activation": act, "placement": place, "depth": depth, "seed": seed, "stage": stage,
                         "layer": layer + 1, "mean": am.mean().item(), "std": am.std().item(),
                         "saturated": saturated_fraction(am).item(), "dead": dead_fraction(am).item(),
                         "grad_norm": model.weights[layer].grad[m].norm().item(),
                         "loss": losses[m].item()})
            if seed == 0:
                counts = torch.histc(am.clamp(BINS[0], BINS[-1]), bins=len(BINS) - 1,
                                     min=BINS[0].item(), max=BINS[-1].item())
                hists[(act, place, depth, stage, layer + 1)] = counts / counts.sum()
    model.zero_grad()
    return rows, hists


def placement_runs(depths=(8, 12, 16), n_seeds: int = 3, *, steps: int = 100, lr: float = 3e-3,
                   batch: int = 64, n_train: int = 2048, n_probe: int = 256,
                   progress: bool = False) -> tuple[pd.DataFrame, dict]:
    """Train every (activation, placement, seed) MLP of each depth for ``steps`` Adam steps.

    All models of a seed share the data, the minibatch order and (up to the activation's init
    gain) the initial weights. Diagnostics are taken on a held-out probe batch at
    initialisation (``stage="init"``) and after training (``stage="trained"``).

    Returns:
        ``(rows, hists)``: a DataFrame with one row per (activation, placement, depth, seed,
        stage, layer): ``mean``, ``std``, ``saturated``, ``dead``, ``grad_norm`` and the model's
        probe ``loss``; and ``hists[(activation, placement, depth, stage, layer)]``, seed 0's
        activation histogram over :data:`BINS` (fractions summing to 1).
    """
    g = torch.Generator().manual_seed(1234)
    x_train, y_train = make_task(n_train, g)
    x_probe, y_probe = make_task(n_probe, g)
    order = torch.randint(0, n_train, (steps, batch), generator=g)
    iterator = depths
    if progress:
        from tqdm.auto import tqdm

        iterator = tqdm(depths, desc="depths", leave=False)
    rows, hists = [], {}
    for depth in iterator:
        model = PlacementMLP(depth, n_seeds)
        n_models = len(model.configs) * n_seeds
        xp, yp = x_probe.expand(n_models, -1, -1), y_probe.expand(n_models, -1)
        r, h = _diagnose(model, xp, yp, "init", depth)
        rows += r
        hists.update(h)
        optimizer = torch.optim.Adam(model.parameters(), lr=lr)
        for idx in order:
            logits = model(x_train[idx].expand(n_models, -1, -1))
            loss = F.binary_cross_entropy_with_logits(logits, y_train[idx].expand(n_models, -1),
                                                      reduction="none").mean(1).sum()
            optimizer.zero_grad()
            loss.backward()
            optimizer.step()
        r, h = _diagnose(model, xp, yp, "trained", depth)
        rows += r
        hists.update(h)
    return pd.DataFrame(rows), hists


def placement_summary(rows: pd.DataFrame, depth: int) -> pd.DataFrame:
    """Per (activation, placement): final probe loss (mean, min, max over seeds), % saturated / % dead
    (mean over layers and seeds, at init and trained), and the ratio of first to last layer's gradient norm
    at init."""
    d = rows[rows.depth == depth]
    keys = ["activation", "placement"]
    trained = d[d.stage == "trained"]
    loss = trained.groupby(keys + ["seed"])["loss"].first().groupby(keys).agg(["mean", "min", "max"])
    loss.columns = ["loss mean", "loss min", "loss max"]
    out = loss
    for stage in ("init", "trained"):
        part = d[d.stage == stage].groupby(keys)[["saturated", "dead"]].mean() * 100
        part.columns = [f"% saturated ({stage})", f"% dead ({stage})"]
        out = out.join(part)
    init = d[d.stage == "init"].groupby(keys + ["layer"])["grad_norm"].mean().unstack("layer")
    out["grad first/last (init)"] = init[init.columns.min()] / init[init.columns.max()]
    order = pd.MultiIndex.from_tuples([(a, p) for a in ACTIVATIONS for p in PLACEMENTS], names=keys)
    return out.reindex(order)


# ------------------------------------------------------------------ Transformers


class Block(nn.Module):
    """One Transformer block: causal self-attention and an MLP, each with a residual.

    ``pre_ln=False`` (Post-LN, Vaswani et al. 2017; BERT): ``x = LN(x + f(x))``.
    ``pre_ln=True`` (Pre-LN, GPT-2 and most models since): ``x = x + f(LN(x))``.
    """

    def __init__(self, dim: int, heads: int, pre_ln: bool):
        super().__init__()
        self.heads, self.pre_ln = heads, pre_ln
        self.ln1, self.ln2 = LayerNorm(dim), LayerNorm(dim)
        self.qkv, self.proj = nn.Linear(dim, 3 * dim), nn.Linear(dim, dim)
        self.fc1, self.fc2 = nn.Linear(dim, 4 * dim), nn.Linear(4 * dim, dim)

    def attn(self, x: torch.Tensor) -> torch.Tensor:
        b, t, d = x.shape
        q, k, v = self.qkv(x).view(b, t, 3, self.heads, d // self.heads).permute(2, 0, 3, 1, 4)
        y = F.scaled_dot_product_attention(q, k, v, is_causal=True)
        return self.proj(y.transpose(1, 2).reshape(b, t, d))

    def mlp(self, x: torch.Tensor) -> torch.Tensor:
        return self.fc2(F.gelu(self.fc1(x)))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        if self.pre_ln:
            x = x + self.attn(self.ln1(x))
            return x + self.mlp(self.ln2(x))
        x = self.ln1(x + self.attn(x))
        return self.ln2(x + self.mlp(x))


class TinyTransformer(nn.Module):
    """Token + position embeddings, ``n_layers`` :class:`Block` s, (Pre-LN only) a final LN, a linear head."""

    def __init__(self, vocab: int, dim: int, n_layers: int, *, pre_ln: bool, heads: int = 2, seq_len: int = 16):
        super().__init__()
        self.tok, self.pos = nn.Embedding(vocab, dim), nn.Embedding(seq_len, dim)
        self.blocks = nn.ModuleList(Block(dim, heads, pre_ln) for _ in range(n_layers))
        self.ln_f = LayerNorm(dim) if pre_ln else nn.Identity()
        self.head = nn.Linear(dim, vocab)

    def forward(self, idx: torch.Tensor) -> torch.Tensor:
        x = self.tok(idx) + self.pos(torch.arange(idx.shape[1]))
        for block in self.blocks:
            x = block(x)
        return self.head(self.ln_f(x))


def _copy_task(n: int, g: torch.Generator, vocab: int = 16, seq_len: int = 16, lag: int = 3):
    """Random tokens; the target at position t is the token at t - lag (0 for the first ``lag``)."""
    x = torch.randint(1, vocab, (n, seq_len), generator=g)
    y = torch.cat([torch.zeros(n, lag, dtype=torch.long), x[:, :-lag]], dim=1)
    return x, y


def transformer_grad_norms(layers=(6, 12), seeds=(0, 1, 2), *, dim: int = 32, batch: int = 32) -> pd.DataFrame:
    """Gradient norm of each block's last MLP weight (``fc2``) at initialisation, Post-LN and Pre-LN.

    Returns:
        One row per (form, n_layers, seed, layer): ``grad_norm``.
    """
    rows = []
    for n_layers in layers:
        for seed in seeds:
            g = torch.Generator().manual_seed(seed)
            x, y = _copy_task(batch, g)
            for form, pre in (("Post-LN", False), ("Pre-LN", True)):
                torch.manual_seed(seed)
                model = TinyTransformer(16, dim, n_layers, pre_ln=pre)
                F.cross_entropy(model(x).flatten(0, 1), y.flatten()).backward()
                for i, block in enumerate(model.blocks):
                    rows.append({"form": form, "n_layers": n_layers, "seed": seed, "layer": i + 1,
                                 "grad_norm": block.fc2.weight.grad.norm().item()})
    return pd.DataFrame(rows)


def warmup_runs(seeds=(0,), *, n_layers: int = 4, dim: int = 16, steps: int = 30, lr: float = 1e-2,
                warmup: int = 10, batch: int = 16, progress: bool = False) -> pd.DataFrame:
    """Train Post-LN and Pre-LN :class:`TinyTransformer` s on the lag-copy task, with and without warm-up.

    Warm-up raises the learning rate linearly from ``lr / warmup`` to ``lr`` over ``warmup`` steps;
    without it, Adam starts at ``lr``. Each (form, seed) starts from the same weights and sees the
    same batches with and without warm-up.

    Returns:
        One row per (form, warmup, seed, step): ``loss`` (the training loss at that step).
    """
    runs = [(form, pre, w, seed) for form, pre in (("Post-LN", False), ("Pre-LN", True))
            for w in (False, True) for seed in seeds]
    if progress:
        from tqdm.auto import tqdm

        runs = tqdm(runs, desc="runs", leave=False)
    rows = []
    for form, pre, w, seed in runs:
        g = torch.Generator().manual_seed(100 + seed)
        torch.manual_seed(seed)
        model = TinyTransformer(16, dim, n_layers, pre_ln=pre)
        optimizer = torch.optim.Adam(model.parameters(), lr=lr)
        schedule = torch.optim.lr_scheduler.LambdaLR(
            optimizer, (lambda s: min(1.0, (s + 1) / warmup)) if w else (lambda s: 1.0))
        for step in range(steps):
            x, y = _copy_task(batch, g)
            loss = F.cross_entropy(model(x).flatten(0, 1), y.flatten())
            optimizer.zero_grad()
            loss.backward()
            optimizer.step()
            schedule.step()
            rows.append({"form": form, "warmup": w, "seed": seed, "step": step + 1, "loss": loss.item()})
    return pd.DataFrame(rows)


#: Where the norm sits in well-known models.
NORM_PLACEMENT = pd.DataFrame(
    [
        ("Transformer (2017)", "LayerNorm", "Post-LN", "no", "Vaswani et al. 2017, arXiv:1706.03762, sec. 3.1"),
        ("BERT (2018)", "LayerNorm", "Post-LN", "no", "Devlin et al. 2018, arXiv:1810.04805 (uses the 2017 block)"),
        ("GPT-2 (2019)", "LayerNorm", "Pre-LN", "yes", "Radford et al. 2019, 'Language Models are "
         "Unsupervised Multitask Learners', sec. 2.3"),
        ("LLaMA (2023)", "RMSNorm", "Pre-LN", "yes", "Touvron et al. 2023, arXiv:2302.13971, sec. 2.2"),
        ("Gemma 2 (2024)", "RMSNorm", "Pre- and post-norm (sandwich)", "yes",
         "Gemma Team 2024, arXiv:2408.00118"),
        ("OLMo 2 (2024)", "RMSNorm", "post-norm inside the residual: x + LN(f(x))", "yes",
         "OLMo et al. 2024, arXiv:2501.00656"),
    ],
    columns=["model", "norm", "placement", "final norm", "reference"],
).set_index("model")


def placement_state(activation: str, placement: str, depth: int, *, seed: int = 0, n_probe: int = 256) -> dict:
    """One freshly initialised MLP of :class:`PlacementMLP` on a probe batch: what the widget shows.

    Returns:
        A dict: ``activation``, ``placement``, ``depth``; ``hist`` (``depth x len(BINS)-1``, per-layer
        activation histogram as fractions); per-layer lists ``saturated``, ``dead`` (fractions) and
        ``grad_norm`` (the layer weight's gradient norm); ``readout`` (one line of text).
    """
    if activation not in ACTIVATIONS or placement not in PLACEMENTS:
        raise ValueError(f"placement_state(): activation must be one of {ACTIVATIONS} and placement one of "
                         f"{PLACEMENTS}, got {activation!r}, {placement!r}")
    model = PlacementMLP(depth, 1)
    m = model.configs.index((activation, placement))
    g = torch.Generator().manual_seed(1234 + seed)
    x, y = make_task(n_probe, g)
    keep: list = []
    logits = model(x.expand(len(model.configs), -1, -1), keep)
    F.binary_cross_entropy_with_logits(logits[m], y).backward()
    hist = torch.stack([torch.histc(a[m].clamp(BINS[0], BINS[-1]), bins=len(BINS) - 1,
                                    min=BINS[0].item(), max=BINS[-1].item()) for a in keep])
    state = {"activation": activation, "placement": placement, "depth": depth,
             "hist": hist / hist.sum(dim=1, keepdim=True),
             "saturated": [saturated_fraction(a[m]).item() for a in keep],
             "dead": [dead_fraction(a[m]).item() for a in keep],
             "grad_norm": [model.weights[i].grad[m].norm().item() for i in range(depth)]}
    what = "saturated (|tanh| > 0.97)" if activation == "tanh" else "dead units (0 on every sample)"
    values = state["saturated"] if activation == "tanh" else state["dead"]
    state["readout"] = (f"{activation}, {placement}, {depth} layers: {what}: mean {100 * sum(values) / depth:.1f}%, "
                        f"last layer {100 * values[-1]:.1f}%")
    return state


def trained_state(rows: pd.DataFrame, hists: dict, activation: str, placement: str, depth: int,
                  stage: str = "trained") -> dict:
    """:func:`placement_state`'s dict, read from :func:`placement_runs`' results (seed 0) instead."""
    d = rows[(rows.activation == activation) & (rows.placement == placement) & (rows.depth == depth)
             & (rows.stage == stage) & (rows.seed == 0)].sort_values("layer")
    values = d.saturated if activation == "tanh" else d.dead
    what = "saturated" if activation == "tanh" else "dead"
    return {"activation": activation, "placement": placement, "depth": depth,
            "hist": torch.stack([hists[(activation, placement, depth, stage, i)] for i in range(1, depth + 1)]),
            "saturated": d.saturated.tolist(), "dead": d.dead.tolist(), "grad_norm": d.grad_norm.tolist(),
            "readout": f"{activation}, {placement}, {stage}: {what} mean {100 * values.mean():.1f}%"}


# ------------------------------------------------------------------ exercises


def _randn(*shape, scale: float = 1.0):
    return lambda g: (torch.randn(*shape, generator=g) * scale,)


register(Exercise(
    name="saturated_fraction", reference=saturated_fraction,
    cases=[Case("tanh of N(0, 1)", lambda g: (torch.tanh(torch.randn(64, 8, generator=g)),)),
           Case("tanh of N(0, 9)", lambda g: (torch.tanh(3 * torch.randn(64, 8, generator=g)),))],
    mistakes={"count |t| > 0.97, not t > 0.97: a unit saturates at -1 too.": lambda t: (t > SATURATED).float().mean(),
              "return the fraction (a mean), not the count.": lambda t: (t.abs() > SATURATED).float().sum()},
    example="torch.tanh(torch.randn(4, 3))", shape_hint="return a 0-d tensor: one fraction.",
))

register(Exercise(
    name="dead_fraction", reference=dead_fraction,
    cases=[Case("relu of a shifted batch", lambda g: (torch.relu(torch.randn(16, 8, generator=g) - 1.5),)),
           Case("relu, some units always negative",
                lambda g: (torch.relu(torch.randn(32, 8, generator=g) - torch.arange(8.0)),))],
    mistakes={"a unit is dead when it is 0 on EVERY sample: reduce over the batch (dim 0) with .any().":
              lambda a: (a == 0).float().mean(),
              "average over units (the last dim), after finding which are never positive.":
              lambda a: 1.0 - (a > 0).any(dim=1).float().mean()},
    example="torch.relu(torch.randn(4, 3))", shape_hint="return a 0-d tensor: one fraction.",
))


def _pre_ln(x: torch.Tensor, w: torch.Tensor) -> torch.Tensor:
    return x + layer_norm(x, (x.shape[-1],)) @ w


register(Exercise(
    name="pre_ln_residual", reference=_pre_ln,
    cases=[Case("4 tokens, dim 8", lambda g: (torch.randn(4, 8, generator=g), torch.randn(8, 8, generator=g) / 3)),
           Case("2 x 5 tokens, dim 6",
                lambda g: (3 * torch.randn(2, 5, 6, generator=g) + 1, torch.randn(6, 6, generator=g) / 3))],
    mistakes={"that is Post-LN, LN(x + f(x)); Pre-LN normalises the sublayer's INPUT: x + f(LN(x)).":
              lambda x, w: layer_norm(x + x @ w, (x.shape[-1],)),
              "the residual must carry the un-normalised x: x + f(LN(x)), not LN(x) + f(LN(x)).":
              lambda x, w: layer_norm(x, (x.shape[-1],)) * 1 + layer_norm(x, (x.shape[-1],)) @ w,
              "normalise the input to f, not f's output: x + f(LN(x)).":
              lambda x, w: x + layer_norm(x @ w, (x.shape[-1],))},
    example="torch.randn(4, 8), torch.randn(8, 8)",
))


def check_saturated_fraction(fn) -> Verdict:
    """Check ``fn(t) -> fraction of |t| > 0.97`` against :func:`saturated_fraction`."""
    return check("saturated_fraction", fn)


def check_dead_fraction(fn) -> Verdict:
    """Check ``fn(a) -> fraction of units 0 on every sample`` against :func:`dead_fraction`."""
    return check("dead_fraction", fn)


def check_pre_ln_residual(fn) -> Verdict:
    """Check ``fn(x, w) -> x + layer_norm(x) @ w`` (one Pre-LN residual step, ``f(h) = h @ w``)."""
    return check("pre_ln_residual", fn)
