"""Experiments: small, seeded training runs that return tidy pandas DataFrames.

Each run takes a fraction of a second on a laptop CPU, is seeded through its own
``torch.Generator`` (the global RNG is never touched), and returns one row per
observation, so that a notebook can table it, plot it (:mod:`helpers.plots`) and
assert on it. ``progress=True`` shows a ``tqdm.auto`` bar; the notebooks leave it off
so that their stored outputs are exactly what a fresh run prints.

- :func:`drift_runs` trains the same deep MLP with and without LayerNorm and records,
  at every step, the distribution of the values that enter one hidden layer's
  activation: the lesson's claim that a layer's input distribution keeps changing
  during training (输入分布不断变化), and what LayerNorm does to it.
- :func:`fit_gamma_beta` trains only a LayerNorm's ``weight`` (gamma) and ``bias``
  (beta) on a target that undoes the normalization: the learned parameters find
  the scale and shift that LayerNorm removed.

The stored experiment ``drift`` (:mod:`helpers.runner`) is :func:`drift_runs` for 20
seeds, made ahead of time; notebook 01 reads its table (``runner.load("drift")``),
summarises it per seed with :func:`drift_by_seed` and prints the verdicts of
:func:`drift_verdicts`, so that its numbers are the same on every CPU.

The other notebooks' runs live in the modules named for their topic, with the same
conventions: :mod:`helpers.bn_vs_ln` (03), :mod:`helpers.placement` (04), and for 05 :mod:`helpers.lstm`,
:mod:`helpers.rnn_regimes`, :mod:`helpers.small_transformer` and :mod:`helpers.step_times`.
"""

from __future__ import annotations

import math

import pandas as pd
import torch
from torch import nn

from helpers import runner

__all__ = [
    "DRIFT_SEEDS",
    "PERCENTILES",
    "deep_mlp",
    "drift_by_seed",
    "drift_intervals",
    "drift_runs",
    "drift_summary",
    "drift_verdicts",
    "fit_gamma_beta",
    "hidden_drift",
]

#: The percentiles :func:`hidden_drift` records, as fractions, and their column names.
PERCENTILES = {"p05": 0.05, "p25": 0.25, "p50": 0.50, "p75": 0.75, "p95": 0.95}
_MODELS = {False: "no norm", True: "LayerNorm"}


def _steps(n: int, progress: bool, desc: str):
    if not progress:
        return range(n)
    from tqdm.auto import tqdm  # only when asked: the notebooks run without a bar

    return tqdm(range(n), desc=desc, leave=False)


def deep_mlp(in_features: int, width: int, depth: int, *, layer_norm: bool,
             generator: torch.Generator) -> nn.Sequential:
    """``depth`` blocks ``Linear -> [LayerNorm] -> ReLU``, then ``Linear(width, 1)``.

    The weights are He-initialised (normal, std ``sqrt(2 / fan_in)``, the usual choice
    before a ReLU) from ``generator`` and the biases are zero, so two calls with equally
    seeded generators give the same weights with and without LayerNorm: the runs differ
    only by the normalization. LayerNorm sits before the activation, as in the lesson.
    """
    layers: list[nn.Module] = []
    fan_in = in_features
    with torch.random.fork_rng(devices=[]):  # nn.Linear's own init draws from the global RNG
        for _ in range(depth):
            layers.append(_he_linear(fan_in, width, generator))
            if layer_norm:
                layers.append(nn.LayerNorm(width))
            layers.append(nn.ReLU())
            fan_in = width
        layers.append(_he_linear(fan_in, 1, generator))
    return nn.Sequential(*layers)


def _he_linear(fan_in: int, fan_out: int, generator: torch.Generator) -> nn.Linear:
    linear = nn.Linear(fan_in, fan_out)
    with torch.no_grad():
        linear.weight.copy_(torch.randn(fan_out, fan_in, generator=generator) * math.sqrt(2 / fan_in))
        linear.bias.zero_()
    return linear


def _regression_task(n: int, in_features: int, generator: torch.Generator):
    """A synthetic task: ``y = sin(x @ w)`` for Gaussian inputs ``x`` and a fixed ``w``."""
    x = torch.randn(n, in_features, generator=generator)
    w = torch.randn(in_features, 1, generator=generator)
    return x, torch.sin(x @ w)


def hidden_drift(layer_norm: bool, *, layer: int = 6, depth: int = 8, width: int = 32,
                 in_features: int = 16, steps: int = 40, lr: float = 0.05, batch_size: int = 32,
                 n_train: int = 512, n_probe: int = 64, seed: int = 0,
                 progress: bool = False) -> pd.DataFrame:
    """Train :func:`deep_mlp` with plain SGD; record what enters one hidden activation.

    At step 0 (before any update) and after each of ``steps`` SGD steps on minibatches
    of the synthetic task ``y = sin(x @ w)``, the same fixed probe batch of ``n_probe``
    inputs goes through the network, and the values entering the ReLU of hidden block
    ``layer`` (0-based) are recorded: the Linear's output without LayerNorm, LayerNorm's
    output (gamma and beta included) with it. Each probe input gives one row of ``width``
    values there: one *token*, in the lesson's words.

    Args:
        layer_norm: put ``nn.LayerNorm(width)`` between each Linear and its ReLU.
        layer: which hidden block to watch, ``0 <= layer < depth``.
        depth, width, in_features: the network's shape.
        steps, lr, batch_size: the training run (``torch.optim.SGD``, MSE loss).
        n_train, n_probe: sizes of the training set and of the probe batch.
        seed: seeds the data, the weights and the minibatch order.
        progress: show a ``tqdm.auto`` progress bar.

    Returns:
        One row per step ``0..steps``, columns ``model`` (``"no norm"`` or
        ``"LayerNorm"``), ``step``, ``loss`` (the probe batch's MSE), the recorded
        values' ``mean``, ``std`` (biased) and percentiles ``p05`` ... ``p95``, and the
        per-token statistics: ``token_mean_absmax`` (the largest ``|mean|`` of a token),
        ``token_std_min`` and ``token_std_max`` (a token's smallest and largest std);
        with LayerNorm, how far that block's gamma and beta have moved from their
        initial 1 and 0: ``gamma_max_change`` (``max |gamma - 1|``) and ``beta_max_abs``
        (``max |beta|``), NaN without LayerNorm.
    """
    if not 0 <= layer < depth:
        raise ValueError(f"hidden_drift(): argument 'layer' must be in [0, {depth - 1}] "
                         f"(depth={depth}), got {layer}")
    generator = torch.Generator().manual_seed(seed)
    x, y = _regression_task(n_train, in_features, generator)
    probe_x, probe_y = x[:n_probe], y[:n_probe]
    model = deep_mlp(in_features, width, depth, layer_norm=layer_norm, generator=generator)
    activation = [m for m in model if isinstance(m, nn.ReLU)][layer]
    norm = [m for m in model if isinstance(m, nn.LayerNorm)][layer] if layer_norm else None
    seen: dict[str, torch.Tensor] = {}
    activation.register_forward_pre_hook(lambda _module, args: seen.update(x=args[0].detach()))
    optimizer = torch.optim.SGD(model.parameters(), lr=lr)

    def observe(step: int) -> dict:
        with torch.no_grad():
            loss = nn.functional.mse_loss(model(probe_x), probe_y).item()
        affine = {"gamma_max_change": math.nan, "beta_max_abs": math.nan}
        if norm is not None:
            affine = {"gamma_max_change": (norm.weight - 1).abs().max().item(),
                      "beta_max_abs": norm.bias.abs().max().item()}
        return {"model": _MODELS[layer_norm], "step": step, "loss": loss, **_describe(seen["x"]),
                **affine}

    rows = [observe(0)]
    for step in _steps(steps, progress, _MODELS[layer_norm]):
        batch = torch.randint(0, n_train, (batch_size,), generator=generator)
        loss = nn.functional.mse_loss(model(x[batch]), y[batch])
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        rows.append(observe(step + 1))
    return pd.DataFrame(rows)


def _describe(values: torch.Tensor) -> dict:
    """Mean, std, percentiles of all values; per-token extremes over the last dim (float64)."""
    v = values.double()
    quantiles = torch.quantile(v.flatten(), torch.tensor(list(PERCENTILES.values()), dtype=v.dtype))
    token_mean = v.mean(-1)
    token_std = (v - token_mean[:, None]).square().mean(-1).sqrt()
    return {
        "mean": v.mean().item(),
        "std": (v - v.mean()).square().mean().sqrt().item(),
        **dict(zip(PERCENTILES, quantiles.tolist(), strict=True)),
        "token_mean_absmax": token_mean.abs().max().item(),
        "token_std_min": token_std.min().item(),
        "token_std_max": token_std.max().item(),
    }


def drift_runs(progress: bool = False, **kwargs) -> pd.DataFrame:
    """:func:`hidden_drift` without and with LayerNorm (same seed, same weights), stacked.

    Keyword arguments go to :func:`hidden_drift`. The result has both runs' rows,
    ``"no norm"`` first, with a fresh index.
    """
    return pd.concat([hidden_drift(norm, progress=progress, **kwargs) for norm in (False, True)],
                     ignore_index=True)


def drift_summary(frame: pd.DataFrame) -> pd.DataFrame:
    """How far each model's recorded distribution moved from step 0.

    Returns:
        One row per model (in the frame's order), with columns

        - ``std at step 0``, ``std at the end``: of all recorded values;
        - ``largest std change``: ``max_t |std_t / std_0 - 1|``, 0.5 when the spread
          has grown or shrunk by half at some step;
        - ``largest mean shift``: ``max_t |mean_t - mean_0|``, in units of ``std_0``;
        - ``largest percentile drift``: ``max_t`` of the mean over the five recorded
          percentiles of ``|p_t - p_0|``, in units of ``std_0`` (a coarse 1-D
          Wasserstein distance: it also sees changes of shape, not only of centre and
          spread);
        - ``worst token |mean|``, ``worst token |std - 1|``: over every token and step.

        A run that diverged (NaN or inf values) shows NaN or inf where it did.
    """
    rows = {}
    for model, run in frame.groupby("model", sort=False):
        run = run.sort_values("step")
        first = run.iloc[0]
        moved = (run[list(PERCENTILES)] - first[list(PERCENTILES)]).abs().mean(axis=1, skipna=False)
        rows[model] = {
            "std at step 0": first["std"],
            "std at the end": run["std"].iloc[-1],
            "largest std change": _largest((run["std"] / first["std"] - 1).abs()),
            "largest mean shift": _largest((run["mean"] - first["mean"]).abs()) / first["std"],
            "largest percentile drift": _largest(moved) / first["std"],
            "worst token |mean|": _largest(run["token_mean_absmax"]),
            "worst token |std - 1|": _largest(
                pd.concat([run["token_std_min"], run["token_std_max"]]).sub(1).abs()),
        }
    summary = pd.DataFrame.from_dict(rows, orient="index")
    summary.index.name = "model"
    return summary


def drift_by_seed(frame: pd.DataFrame) -> pd.DataFrame:
    """:func:`drift_summary` of each seed's runs: the stored ``drift`` table, summarised.

    Args:
        frame: :func:`drift_runs` rows of several seeds, with a ``seed`` column (as
            ``runner.load("drift").frame`` has).

    Returns:
        One row per (seed, model), seeds in increasing order and each seed's models in the
        frame's order, indexed by ``seed`` and ``model``, with :func:`drift_summary`'s columns.
    """
    return pd.concat({seed: drift_summary(runs) for seed, runs in frame.groupby("seed", sort=True)},
                     names=["seed"])


#: What :func:`drift_verdicts` compares, by :func:`drift_summary` column: how the words say it.
_DRIFT_QUANTITIES = {"largest std change": "in its spread",
                     "largest mean shift": "in its centre",
                     "largest percentile drift": "in its percentiles"}


def drift_verdicts(frame: pd.DataFrame) -> dict[str, str]:
    """The verdicts of the ``drift`` experiment, in words, from its stored table.

    - ``"diverged"``: at how many seeds each model's run diverged (NaN or inf), and which;
    - ``"LayerNorm's tokens"``: the worst token ``|mean|`` and ``|std - 1|`` with LN, over every
      seed and step;
    - one per column of :data:`_DRIFT_QUANTITIES` (``"largest std change"``, ...): LN against no
      norm, ``1 - mean(LN) / mean(no norm)`` with a 95 % BCa bootstrap interval paired by seed
      (:func:`drift_intervals`, in words by :func:`helpers.inference.verdict`), over the seeds
      where neither run diverged. Leaving out a diverged run without LN, whose drift is
      unbounded, can only favour the run without LN.
    """
    from helpers.inference import verdict

    by_seed = drift_by_seed(frame)
    finite = _finite_runs(by_seed)
    out = {}
    diverged = {model: [int(seed) for (seed, _), ok in runs.items() if not ok]
                for model, runs in finite.groupby(level="model", sort=False)}
    n = by_seed.index.get_level_values("seed").nunique()
    out["diverged"] = "; ".join(
        f"{model}: {len(seeds)} of {n} seeds diverged" + (f" (seeds {', '.join(map(str, seeds))})" if seeds else "")
        for model, seeds in diverged.items())
    ln = by_seed.xs("LayerNorm", level="model")
    out["LayerNorm's tokens"] = (f"over {n} seeds and every step, the worst token |mean| is "
                                 f"{ln['worst token |mean|'].max():.3f} and the worst token |std - 1| "
                                 f"{ln['worst token |std - 1|'].max():.3f}")
    for column, ci in drift_intervals(by_seed).items():
        words = verdict(ci, a="LayerNorm", b="no norm", quantity=_DRIFT_QUANTITIES[column], verb="drifts",
                        words=("less", "more"))
        out[column] = f"{words}, over the {ci.n} seeds where neither run diverged"
    return out


def drift_intervals(by_seed: pd.DataFrame) -> dict:
    """LN against no norm on each drift measure, paired by seed, over the seeds where neither diverged.

    Args:
        by_seed: what :func:`drift_by_seed` returns.

    Returns:
        ``{column: Interval}`` for ``"largest std change"``, ``"largest mean shift"`` and
        ``"largest percentile drift"``: ``1 - mean(LN) / mean(no norm)`` with its 95 % BCa
        bootstrap interval (:func:`helpers.inference.paired_difference_ci`), positive where
        LN's input drifts less. ``Interval.n`` is the number of seeds used.
    """
    from helpers.inference import paired_difference_ci

    finite = _finite_runs(by_seed).groupby(level="seed").all()
    kept = finite.index[finite]
    ln = by_seed.xs("LayerNorm", level="model").loc[kept]
    no = by_seed.xs("no norm", level="model").loc[kept]
    return {column: paired_difference_ci(ln[column].to_numpy(), no[column].to_numpy(), relative=True)
            for column in _DRIFT_QUANTITIES}


def _finite_runs(by_seed: pd.DataFrame) -> pd.Series:
    """Per (seed, model): True where the run did not diverge (every summary column finite)."""
    return by_seed.drop(columns=["std at step 0"]).apply(lambda row: row.map(math.isfinite).all(), axis=1)


def _drift_unit(*, seeds, steps: int, **kwargs) -> pd.DataFrame:
    """One unit of the ``drift`` experiment: :func:`drift_runs` for each seed, with a ``seed`` column.

    ``steps`` counts recorded steps, as the runner does: step 0 (before any update) to
    ``steps - 1``, so ``steps - 1`` SGD updates.
    """
    return pd.concat([drift_runs(seed=seed, steps=steps - 1, **kwargs).assign(seed=seed) for seed in seeds],
                     ignore_index=True)


def _largest(values: pd.Series) -> float:
    """The largest value, or NaN if any is NaN (a diverged run), without numpy's warning."""
    return math.nan if values.isna().any() else float(values.max())


def fit_gamma_beta(*, scale: float = 3.0, shift: float = 2.0, dim: int = 4, n_tokens: int = 64,
                   steps: int = 30, lr: float = 0.5, seed: int = 0, layer_norm: type | None = None,
                   progress: bool = False) -> pd.DataFrame:
    """Train only a LayerNorm's gamma and beta to give back its un-normalised input.

    Tokens ``x = shift + scale * z`` are built from ``z`` with every token exactly
    standardised (mean 0, biased std 1), so every token of ``x`` has mean ``shift`` and
    std ``scale``. The model is one ``LayerNorm(dim)``, fresh (gamma = 1, beta = 0); the
    target is ``x`` itself, the input *before* normalization. LayerNorm's output is
    ``z * sqrt(scale**2 / (scale**2 + eps)) * gamma + beta``, so the loss is 0 at
    ``gamma = sqrt(scale**2 + eps)`` (``scale`` to within eps) and ``beta = shift``:
    plain SGD on the mean squared error has to find them.

    Args:
        scale, shift: the std and mean that LayerNorm removes and gamma, beta must restore.
        dim, n_tokens: the shape of the data, ``(n_tokens, dim)``.
        steps, lr: the run (``torch.optim.SGD`` on ``weight`` and ``bias`` only).
        seed: seeds the data.
        layer_norm: the LayerNorm class to train, ``helpers.LayerNorm`` by default
            (``torch.nn.LayerNorm`` works the same).
        progress: show a ``tqdm.auto`` progress bar.

    Returns:
        One row per ``(step, feature)``, steps ``0..steps`` (0 is before any update):
        columns ``step``, ``feature``, ``gamma``, ``beta`` and ``loss`` (the MSE at that
        step, the same for each feature of a step).
    """
    if layer_norm is None:
        from helpers.modules import LayerNorm as layer_norm
    generator = torch.Generator().manual_seed(seed)
    z = torch.randn(n_tokens, dim, generator=generator)
    z = (z - z.mean(-1, keepdim=True)) / z.std(-1, unbiased=False, keepdim=True)
    x = shift + scale * z
    norm = layer_norm(dim)
    optimizer = torch.optim.SGD(norm.parameters(), lr=lr)

    def observe(step: int) -> list[dict]:
        with torch.no_grad():
            loss = nn.functional.mse_loss(norm(x), x).item()
        return [{"step": step, "feature": j, "gamma": g, "beta": b, "loss": loss}
                for j, (g, b) in enumerate(zip(norm.weight.tolist(), norm.bias.tolist(),
                                               strict=True))]

    rows = observe(0)
    for step in _steps(steps, progress, "gamma, beta"):
        loss = nn.functional.mse_loss(norm(x), x)
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        rows += observe(step + 1)
    return pd.DataFrame(rows)


# ------------------------------------------------------------ stored experiments (make experiments)

#: The seeds of the stored ``drift`` runs (40 SGD steps each: recorded steps 0 to 40).
DRIFT_SEEDS = tuple(range(20))

runner.register(runner.Experiment(
    name="drift", notebook="01_layernorm_from_the_formula", train=_drift_unit, grid={}, seeds=DRIFT_SEEDS,
    steps=41, fixed={"layer": 6, "depth": 8, "width": 32, "lr": 0.05, "batch_size": 32},
    summarize=drift_verdicts, budget_s=60,
    # percentiles and LN's centred means sit near 0, where only an absolute tolerance can serve
    repro_atol=1e-5))
