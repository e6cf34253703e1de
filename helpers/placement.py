"""Where the norm goes (notebook 04): before or after the activation, Pre-LN or Post-LN.

- :class:`PlacementMLP`: many deep MLPs trained at once as one stacked network, one per
  (activation, placement, seed), in the style of :class:`helpers.bn_vs_ln.StackedMLP`.
- :func:`placement_runs`: train them briefly on :func:`helpers.bn_vs_ln.make_task` and
  record, per model and layer, the activations' histogram, % saturated (tanh), % dead (ReLU)
  and the weight-gradient norm, at initialisation and after training.
- :class:`TinyTransformer`: a small Transformer written with :class:`helpers.LayerNorm`, in
  Post-LN or Pre-LN form; :func:`transformer_grad_norms` and :func:`warmup_runs`.
- :data:`NORM_PLACEMENT`: where the norm sits in well-known models, with references.
- Three stored experiments (``python -m helpers.runner --only NAME``), 10 seeds each, that the
  notebook reads: ``placement`` (:func:`placement_runs`), ``transformer_grad_norms`` and
  ``warmup`` (:func:`warmup_runs`); :func:`per_seed` and :func:`compare` turn them into paired
  intervals over seeds.
"""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
import torch
import torch.nn.functional as F
from torch import nn

from helpers import runner
from helpers.bn_vs_ln import make_task
from helpers.checks import Case, Exercise, Verdict, check, register
from helpers.functional import layer_norm
from helpers.inference import Interval, bootstrap_ci, paired_difference_ci, verdict
from helpers.modules import LayerNorm

__all__ = [
    "ACTIVATIONS",
    "BINS",
    "DEAD",
    "FORMS",
    "HIST_COLUMNS",
    "NORM_PLACEMENT",
    "PLACEMENTS",
    "SEEDS",
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
    "compare",
    "final_losses",
    "grad_comparisons",
    "grad_ratios",
    "per_seed",
    "placement_comparisons",
    "warmup_comparisons",
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
#: The columns of :func:`placement_runs`' rows that hold a layer's histogram counts over :data:`BINS`.
HIST_COLUMNS = tuple(f"h{i:02d}" for i in range(len(BINS) - 1))
#: The seeds of the stored experiments.
SEEDS = tuple(range(10))

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
    pair) and the weights of seed ``seeds[m % n_seeds]``. Each hidden layer is ``Linear`` followed by
    ``LN -> act``, ``act -> LN`` or just ``act``; LN has no gamma/beta here, so the arrangements
    differ only by where the normalisation sits. The weights are stacked and applied with
    ``torch.baddbmm``; the loss is a sum over models, so no model's gradient depends on another's.

    Args:
        depth: hidden layers.
        n_seeds: seeds ``0 .. n_seeds - 1``, unless ``seeds`` names them.
        seeds: the seeds of the initial weights (each its own generator, so seed ``s`` gets the
            same weights whichever other seeds are stacked with it).
    """

    def __init__(self, depth: int, n_seeds: int = 1, *, seeds=None, in_features: int = 8, width: int = 32):
        super().__init__()
        self.seeds = tuple(range(n_seeds)) if seeds is None else tuple(seeds)
        self.depth, self.n_seeds, self.width = depth, len(self.seeds), width
        self.configs = [(a, p) for a in ACTIVATIONS for p in PLACEMENTS]
        shapes = [(in_features, width)] + [(width, width)] * (depth - 1) + [(width, 1)]
        self.weights, self.biases = nn.ParameterList(), nn.ParameterList()
        gens = [torch.Generator().manual_seed(s) for s in self.seeds]
        gains = torch.tensor([_GAIN[a] for a, _ in self.configs]).repeat_interleave(self.n_seeds)
        for fan_in, fan_out in shapes:
            per_seed = torch.stack([torch.randn(fan_in, fan_out, generator=g) for g in gens]) / math.sqrt(fan_in)
            w = per_seed.repeat(len(self.configs), 1, 1)
            if fan_out > 1:
                w = w * gains[:, None, None]
            self.weights.append(nn.Parameter(w))
            self.biases.append(nn.Parameter(torch.zeros(len(w), 1, fan_out)))
        per_model = [c for c in self.configs for _ in range(self.n_seeds)]
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


def _histogram(a: torch.Tensor) -> torch.Tensor:
    """Counts of ``a``'s values over :data:`BINS`, values outside clamped into the end bins."""
    return torch.histc(a.clamp(BINS[0], BINS[-1]), bins=len(BINS) - 1, min=BINS[0].item(), max=BINS[-1].item())


def _diagnose(model: PlacementMLP, x: torch.Tensor, y: torch.Tensor, stage: str, step: int, hist_seeds) -> list:
    """Per model and layer: activation stats, histogram counts (seeds in ``hist_seeds``, or all when it is
    ``None``; ``None`` counts otherwise) and weight-gradient norms on the probe batch."""
    keep: list = []
    model.zero_grad()
    logits = model(x, keep)
    losses = F.binary_cross_entropy_with_logits(logits, y, reduction="none").mean(1)
    losses.sum().backward()
    rows = []
    s = model.n_seeds
    for m in range(len(model.configs) * s):
        act, place = model.configs[m // s]
        seed = model.seeds[m % s]
        for layer, a in enumerate(keep):
            am = a[m]
            counts = _histogram(am).int().tolist() if hist_seeds is None or seed in hist_seeds else None
            hist = dict(zip(HIST_COLUMNS, counts or [None] * len(HIST_COLUMNS), strict=True))
            rows.append({"activation": act, "placement": place, "depth": model.depth, "seed": seed,
                         "stage": stage, "step": step, "layer": layer + 1, "mean": am.mean().item(),
                         "std": am.std().item(), "saturated": saturated_fraction(am).item(),
                         "dead": dead_fraction(am).item(), "grad_norm": model.weights[layer].grad[m].norm().item(),
                         "loss": losses[m].item(), **hist})
    model.zero_grad()
    return rows


def placement_runs(depths=(8,), seeds=(0, 1, 2), *, steps: int = 50, lr: float = 3e-3,
                   batch: int = 64, n_train: int = 2048, n_probe: int = 256, hist_seeds=None,
                   progress: bool = False) -> pd.DataFrame:
    """Train every (activation, placement, seed) MLP of each depth for ``steps`` Adam steps.

    All models share the data and the minibatch order (the task is fixed); the seed decides the
    initial weights, which the models of one seed share up to the activation's init gain.
    Diagnostics are taken on a held-out probe batch at initialisation (``stage="init"``,
    ``step=0``) and after training (``stage="trained"``, ``step=steps``); in between, each
    model's training loss on every step's batch (``stage="train"``, ``step`` counting updates
    from 0, the loss before that update; the other columns empty).

    Returns:
        One row per (activation, placement, depth, seed, stage, layer): ``step``, ``mean``,
        ``std``, ``saturated``, ``dead``, ``grad_norm``, the model's probe ``loss`` (float32) and the
        layer's activation histogram as counts over :data:`BINS` (columns :data:`HIST_COLUMNS`, nullable
        ints): for the seeds in ``hist_seeds`` only (``<NA>`` for the others), or for all when it is ``None``.
    """
    g = torch.Generator().manual_seed(1234)
    x_train, y_train = make_task(n_train, g)
    x_probe, y_probe = make_task(n_probe, g)
    order = torch.randint(0, n_train, (steps, batch), generator=g)
    iterator = depths
    if progress:
        from tqdm.auto import tqdm

        iterator = tqdm(depths, desc="depths", leave=False)
    rows = []
    for depth in iterator:
        model = PlacementMLP(depth, seeds=seeds)
        n_models = len(model.configs) * model.n_seeds
        xp, yp = x_probe.expand(n_models, -1, -1), y_probe.expand(n_models, -1)
        rows += _diagnose(model, xp, yp, "init", 0, hist_seeds)
        optimizer = torch.optim.Adam(model.parameters(), lr=lr)
        names = [(*model.configs[m // model.n_seeds], model.seeds[m % model.n_seeds]) for m in range(n_models)]
        for step, idx in enumerate(order):
            logits = model(x_train[idx].expand(n_models, -1, -1))
            losses = F.binary_cross_entropy_with_logits(logits, y_train[idx].expand(n_models, -1),
                                                        reduction="none").mean(1)
            optimizer.zero_grad()
            losses.sum().backward()
            optimizer.step()
            rows += [{"activation": act, "placement": place, "depth": depth, "seed": seed, "stage": "train",
                      "step": step, "loss": value} for (act, place, seed), value in zip(names, losses.tolist(),
                                                                                        strict=True)]
        rows += _diagnose(model, xp, yp, "trained", steps, hist_seeds)
    frame = pd.DataFrame(rows)
    return frame.astype({**{c: "float32" for c in ("mean", "std", "saturated", "dead", "grad_norm", "loss")},
                         "layer": "Int64", **{c: "Int32" for c in HIST_COLUMNS}})


def placement_summary(rows: pd.DataFrame, depth: int) -> pd.DataFrame:
    """Per (activation, placement): final probe loss (mean, min, max over seeds), % saturated / % dead
    (mean over layers and seeds, at init and trained), and the ratio of first to last layer's gradient norm
    at init (mean over seeds)."""
    d = rows[(rows.depth == depth) & (rows.stage != "train")]
    d = d.astype({c: "float64" for c in ("loss", "saturated", "dead", "grad_norm")})
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
    return out.reindex(order).astype("float64")


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


def _model(seed: int, vocab: int, dim: int, n_layers: int, pre_ln: bool) -> TinyTransformer:
    """A :class:`TinyTransformer` whose weights come from ``seed``, leaving torch's global generator alone.

    Post-LN and Pre-LN draw the same weights for the same seed (the LNs have none to draw)."""
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(seed)
        return TinyTransformer(vocab, dim, n_layers, pre_ln=pre_ln)


def transformer_grad_norms(layers=(6, 12), seeds=(0, 1, 2), *, dim: int = 32, batch: int = 32) -> pd.DataFrame:
    """Gradient norm of each block's last MLP weight (``fc2``) at initialisation, Post-LN and Pre-LN.

    For each seed, both forms start from the same weights and see the same batch.

    Returns:
        One row per (form, n_layers, seed, layer): ``grad_norm`` (float32), and ``step`` = 0
        (before any update).
    """
    rows = []
    for n_layers in layers:
        for seed in seeds:
            g = torch.Generator().manual_seed(seed)
            x, y = _copy_task(batch, g)
            for form, pre in (("Post-LN", False), ("Pre-LN", True)):
                model = _model(seed, 16, dim, n_layers, pre)
                F.cross_entropy(model(x).flatten(0, 1), y.flatten()).backward()
                for i, block in enumerate(model.blocks):
                    rows.append({"form": form, "n_layers": n_layers, "seed": seed, "step": 0, "layer": i + 1,
                                 "grad_norm": block.fc2.weight.grad.norm().item()})
    return pd.DataFrame(rows).astype({"grad_norm": "float32"})


#: The two Transformer forms, as :func:`warmup_runs` names them, and whether each is Pre-LN.
FORMS = {"Post-LN": False, "Pre-LN": True}


def warmup_runs(seeds=(0,), *, forms=tuple(FORMS), n_layers: int = 4, dim: int = 16, steps: int = 30,
                lr: float = 1e-2, warmup: int = 10, batch: int = 16, progress: bool = False) -> pd.DataFrame:
    """Train Post-LN and Pre-LN :class:`TinyTransformer` s on the lag-copy task, with and without warm-up.

    Warm-up raises the learning rate linearly from ``lr / warmup`` to ``lr`` over ``warmup`` steps;
    without it, Adam starts at ``lr``. The schedule does not depend on ``steps``: a run's first
    ``k`` steps are the same whatever ``steps`` is. Each (form, seed) starts from the same weights
    and sees the same batches with and without warm-up (and Post-LN and Pre-LN share them too).

    Returns:
        One row per (form, warmup, seed, step), ``step`` counting updates from 0: ``loss`` (float32),
        the training loss on that step's batch, before its update.
    """
    unknown = [f for f in forms if f not in FORMS]
    if unknown:
        raise ValueError(f"warmup_runs(): argument 'forms' must hold forms from {tuple(FORMS)}, got {unknown}")
    runs = [(form, FORMS[form], w, seed) for form in forms for w in (False, True) for seed in seeds]
    if progress:
        from tqdm.auto import tqdm

        runs = tqdm(runs, desc="runs", leave=False)
    rows = []
    for form, pre, w, seed in runs:
        g = torch.Generator().manual_seed(100 + seed)
        model = _model(seed, 16, dim, n_layers, pre)
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
            rows.append({"form": form, "warmup": w, "seed": seed, "step": step, "loss": loss.item()})
    return pd.DataFrame(rows).astype({"loss": "float32"})


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


def trained_state(rows: pd.DataFrame, activation: str, placement: str, depth: int, stage: str = "trained",
                  seed: int = 0) -> dict:
    """:func:`placement_state`'s dict, read from :func:`placement_runs`' rows (the stored ``placement``
    experiment, for one) instead of a fresh model: one seed's model at ``stage`` ``"init"`` or ``"trained"``."""
    d = rows[(rows.activation == activation) & (rows.placement == placement) & (rows.depth == depth)
             & (rows.stage == stage) & (rows.seed == seed)].sort_values("layer")
    if len(d) != depth:
        raise ValueError(f"trained_state(): no rows for ({activation!r}, {placement!r}, depth={depth}, "
                         f"stage={stage!r}, seed={seed}); the rows hold depths {sorted(rows.depth.unique())}, "
                         f"seeds {sorted(rows.seed.unique())}")
    counts = torch.tensor(d[list(HIST_COLUMNS)].to_numpy(dtype="float64"))
    values = d.saturated if activation == "tanh" else d.dead
    what = "saturated" if activation == "tanh" else "dead"
    return {"activation": activation, "placement": placement, "depth": depth,
            "hist": counts / counts.sum(dim=1, keepdim=True),
            "saturated": d.saturated.tolist(), "dead": d.dead.tolist(), "grad_norm": d.grad_norm.tolist(),
            "readout": f"{activation}, {placement}, {stage}, seed {seed}: {what} mean {100 * values.mean():.1f}%"}


# ------------------------------------------------------------------ exercises


def _randn(*shape, scale: float = 1.0):
    return lambda g: (torch.randn(*shape, generator=g) * scale,)


register(Exercise(
    name="saturated_fraction", reference=saturated_fraction,
    cases=[Case("tanh of N(0, 1)", lambda g: (torch.tanh(torch.randn(64, 8, generator=g)),)),
           Case("tanh of N(0, 9)", lambda g: (torch.tanh(3 * torch.randn(64, 8, generator=g)),))],
    mistakes={"count |t| > 0.97, not t > 0.97: a unit saturates at -1 too.": lambda t: (t > SATURATED).float().mean(),
              "return the fraction (a mean), not the count.": lambda t: (t.abs() > SATURATED).float().sum()},
    hint="compare |t| with 0.97 entry by entry, then average the booleans (as floats) over all entries.",
    example="torch.tanh(torch.randn(4, 3))", shape_hint="return a 0-d tensor: one fraction.",
    forbidden=("helpers.placement.saturated_fraction",),
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
    hint="a unit (a column of the last dim) is dead when it is 0 on every sample: find the units "
         "positive on at least one sample (`.any` over the samples), then average over the units.",
    example="torch.relu(torch.randn(4, 3))", shape_hint="return a 0-d tensor: one fraction.",
    forbidden=("helpers.placement.dead_fraction",),
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
              lambda x, w: x + layer_norm(x @ w, (x.shape[-1],)),
              "that is the sublayer alone, f(LN(x)): add the residual, x + f(LN(x)).":
              lambda x, w: layer_norm(x, (x.shape[-1],)) @ w,
              "that is the residual step without a norm, x + f(x): normalise f's input first.":
              lambda x, w: x + x @ w},
    hint="Pre-LN: x + f(LN(x)) with f(h) = h @ w and LN over the last dim written by hand "
         "(mean, biased variance, eps = 1e-5, no gamma or beta).",
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


# ------------------------------------------------------------------ verdicts over seeds


def compare(a_values, b_values, *, a: str, b: str, quantity: str, claim: str = "lower",
            fmt: str = ".4f") -> tuple[Interval, str]:
    """The mean per-seed difference ``a - b`` (paired by seed) with its bootstrap interval, in words.

    The words are :func:`helpers.inference.verdict`'s: entirely below 0, ``"{a} has 0.0396 lower
    {quantity} than {b} (95% CI 0.0214 to 0.0654)"`` (above 0: "higher"); containing 0,
    ``"no difference detectable with 10 seeds: ..."``; on the side opposite ``claim`` (``"lower"``
    or ``"higher"``: what is claimed of ``a``), it starts with ``"the opposite of the claim: "``.

    Returns:
        ``(interval, words)``, the interval being :func:`helpers.inference.paired_difference_ci`'s,
        of ``mean(a - b)``.
    """
    if claim not in ("lower", "higher"):
        raise ValueError(f"compare(): argument 'claim' must be 'lower' or 'higher', got {claim!r}")
    ci = paired_difference_ci(np.asarray(a_values, dtype=np.float64), np.asarray(b_values, dtype=np.float64))
    return ci, verdict(ci, a=a, b=b, quantity=quantity, claim="fewer" if claim == "lower" else "more",
                       relative=False, verb="has", words=("lower", "higher"), fmt=fmt)


def _table(items: list) -> pd.DataFrame:
    """``[(keys dict, interval, words)]`` as one row each: the keys, ``estimate``, ``low``, ``high``, ``verdict``."""
    return pd.DataFrame([{**keys, "estimate": ci.estimate, "low": ci.low, "high": ci.high, "verdict": words}
                         for keys, ci, words in items])


def per_seed(rows: pd.DataFrame, value: str, *, depth: int, stage: str) -> pd.DataFrame:
    """One row per seed, one column per (activation, placement): ``value`` averaged over layers
    (the probe ``loss`` is one number per model anyway), as float64."""
    d = rows[(rows.depth == depth) & (rows.stage == stage)]
    return d.groupby(["activation", "placement", "seed"])[value].mean().astype("float64").unstack(
        ["activation", "placement"])


def placement_comparisons(rows: pd.DataFrame, depth: int = 8) -> pd.DataFrame:
    """The notebook's claims about the placement MLPs of ``depth``, each a paired interval over seeds.

    - per activation, the final probe loss of ``LN -> act`` against ``act -> LN``, and against no norm
      (claim: ``LN -> act`` is lower);
    - at initialisation, tanh's % saturated and ReLU's % dead units with ``act -> LN`` against
      ``LN -> act`` (mean over layers; claims: more saturated, fewer dead).

    Returns:
        One row per claim: ``activation``, ``quantity``, ``a``, ``b``, ``estimate`` (mean of ``a - b``
        over seeds), ``low``, ``high`` and ``verdict`` (words, from :func:`compare`).
    """
    loss = per_seed(rows, "loss", depth=depth, stage="trained")
    items = []
    for act in ACTIVATIONS:
        for b in ("act -> LN", "no norm"):
            ci, words = compare(loss[act, "LN -> act"], loss[act, b], a="LN -> act", b=b, quantity="probe loss")
            items.append(({"activation": act, "quantity": "probe loss (trained)", "a": "LN -> act", "b": b},
                          ci, words))
    for act, value, quantity, claim in (("tanh", "saturated", "% saturated", "higher"),
                                        ("relu", "dead", "% dead", "lower")):
        pct = 100 * per_seed(rows, value, depth=depth, stage="init")[act]
        ci, words = compare(pct["act -> LN"], pct["LN -> act"], a="act -> LN", b="LN -> act", quantity=quantity,
                            claim=claim, fmt=".1f")
        items.append(({"activation": act, "quantity": f"{quantity} (init)", "a": "act -> LN", "b": "LN -> act"},
                      ci, words))
    return _table(items)


def grad_ratios(grads: pd.DataFrame) -> pd.DataFrame:
    """Per (n_layers, seed), one column per form: the last block's ``fc2`` gradient norm over the first's."""
    g = grads.astype({"grad_norm": "float64"})
    first = g[g.layer == 1].set_index(["n_layers", "seed", "form"]).grad_norm
    last = g[g.layer == g.n_layers].set_index(["n_layers", "seed", "form"]).grad_norm
    return (last / first).unstack("form")


def grad_comparisons(grads: pd.DataFrame) -> pd.DataFrame:
    """Xiong et al.'s profile at initialisation, per depth: each form's last/first gradient-norm ratio
    with its interval over seeds (is it above or below 1?), and Post-LN's ratio against Pre-LN's
    (paired by seed; claim: higher).

    Returns:
        One row per (n_layers, what): ``estimate``, ``low``, ``high``, ``verdict`` (words).
    """
    ratios = grad_ratios(grads)
    items = []
    for n in sorted(ratios.index.get_level_values("n_layers").unique()):
        r = ratios.loc[n]
        for form in FORMS:
            ci = bootstrap_ci(r[form])
            side = "above 1" if ci.low > 1 else "below 1" if ci.high < 1 else "1 inside the interval"
            items.append(({"n_layers": n, "what": f"{form} last/first"}, ci,
                          f"{form}, {n} layers: last/first = {ci.format('.2f')}: {side}"))
        ci, words = compare(r["Post-LN"], r["Pre-LN"], a="Post-LN", b="Pre-LN", quantity="last/first ratio",
                            claim="higher", fmt=".2f")
        items.append(({"n_layers": n, "what": "Post-LN - Pre-LN"}, ci, f"{n} layers: {words}"))
    return _table(items)


def final_losses(runs: pd.DataFrame, last: int = 10) -> pd.DataFrame:
    """Per (form, seed), one column per ``warmup``: the mean training loss over the ``last`` steps of each run."""
    end = runs.step.max() + 1
    tail = runs[runs.step >= end - last].astype({"loss": "float64"})
    return tail.groupby(["form", "seed", "warmup"]).loss.mean().unstack("warmup")


def warmup_comparisons(runs: pd.DataFrame, last: int = 10) -> pd.DataFrame:
    """Warm-up against none, per form, on the mean loss over the ``last`` steps (paired by seed; the
    claim being tested is that warm-up lowers it), and whether it changes Post-LN's loss more than
    Pre-LN's (the difference of the two differences, paired by seed: both forms share weights and batches).

    Returns:
        One row per comparison: ``what``, ``estimate``, ``low``, ``high``, ``verdict`` (words).
    """
    final = final_losses(runs, last)
    items = []
    for form in FORMS:
        ci, words = compare(final.loc[form][True], final.loc[form][False], a=f"{form} with warm-up", b="without",
                            quantity="final loss")
        items.append(({"what": f"{form}: warm-up - none"}, ci, words))
    effect = {form: final.loc[form][True] - final.loc[form][False] for form in FORMS}
    ci, words = compare(effect["Post-LN"], effect["Pre-LN"], a="Post-LN", b="Pre-LN",
                        quantity="loss change from warm-up")
    items.append(({"what": "Post-LN change - Pre-LN change"}, ci, words))
    return _table(items)


def _verdicts(table: pd.DataFrame) -> dict[str, str]:
    keys = [c for c in table.columns if c not in ("estimate", "low", "high", "verdict")]
    return {", ".join(str(v) for v in row[keys]): row["verdict"] for _, row in table.iterrows()}


# ------------------------------------------------------------------ stored experiments (make experiments)


def _placement_unit(*, depth: int, seeds, steps: int, lr: float, batch: int, hist_seeds) -> pd.DataFrame:
    """One unit of ``placement``: the 9 (activation, placement) MLPs of one depth and seed, stacked."""
    return placement_runs(depths=(depth,), seeds=seeds, steps=steps, lr=lr, batch=batch, hist_seeds=hist_seeds)


def _grad_norm_unit(*, n_layers: int, seeds, steps: int, dim: int, batch: int) -> pd.DataFrame:
    """One unit of ``transformer_grad_norms``: Post-LN and Pre-LN at init (``steps`` is unused: no training)."""
    return transformer_grad_norms(layers=(n_layers,), seeds=seeds, dim=dim, batch=batch)


def _warmup_unit(*, form: str, seeds, steps: int, n_layers: int, dim: int, lr: float, warmup: int,
                 batch: int) -> pd.DataFrame:
    """One unit of ``warmup``: one form and seed, with and without warm-up."""
    return warmup_runs(seeds=seeds, forms=(form,), n_layers=n_layers, dim=dim, steps=steps, lr=lr, warmup=warmup,
                       batch=batch)


runner.register(runner.Experiment(
    name="placement", notebook="04_before_the_activation", train=_placement_unit,
    grid={"depth": (8, 16)}, seeds=SEEDS, steps=50, fixed={"lr": 3e-3, "batch": 64, "hist_seeds": (0,)},
    budget_s=120, summarize=lambda frame: _verdicts(placement_comparisons(frame)), version=2,
    # histogram counts: on another CPU a value can land across a bin edge (seen: one count off by 1)
    repro_atol_by_column={r"h\d+": 2.0}))
runner.register(runner.Experiment(
    name="transformer_grad_norms", notebook="04_before_the_activation", train=_grad_norm_unit,
    grid={"n_layers": (6, 12)}, seeds=SEEDS, steps=1, fixed={"dim": 32, "batch": 32}, budget_s=60,
    summarize=lambda frame: _verdicts(grad_comparisons(frame))))
runner.register(runner.Experiment(
    name="warmup", notebook="04_before_the_activation", train=_warmup_unit,
    grid={"form": tuple(FORMS)}, seeds=SEEDS, steps=30,
    fixed={"n_layers": 4, "dim": 16, "lr": 1e-2, "warmup": 10, "batch": 16}, budget_s=120,
    summarize=lambda frame: _verdicts(warmup_comparisons(frame))))
