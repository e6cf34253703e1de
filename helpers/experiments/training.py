"""The parts of a training loop the stored experiments share: many models trained at once along a
leading model dim, each with its own learning rate and its own gradient norm.

- :func:`adam`: one Adam step (torch's defaults), a rate per model.
- :func:`clip_per_model`: each model's gradient clipped to its own global norm.
- :func:`finite_or_inf`: a loss with every NaN or infinity as ``inf`` (in a stored table NaN means
  "not measured").
- :func:`keep_rows`: the rows of a run with held-out evaluations that are stored.
"""

from __future__ import annotations

import math

import pandas as pd
import torch

from helpers.evidence import runner


def adam(params, lrs, step: int, moments: dict) -> None:
    """One Adam step (torch's defaults): rate ``lrs``, or ``lrs[m]`` for model ``m`` (the leading dim)."""
    with torch.no_grad():
        for p in params:
            if p.grad is None:  # a 1-layer RNN's empty w_up
                continue
            grad = p.grad.nan_to_num(0.0, 0.0, 0.0)
            m1, m2 = moments.setdefault(p, (torch.zeros_like(p), torch.zeros_like(p)))
            m1.lerp_(grad, 0.1)
            m2.lerp_(grad * grad, 0.001)
            update = (m1 / (1 - 0.9 ** (step + 1))) / ((m2 / (1 - 0.999 ** (step + 1))).sqrt() + 1e-8)
            p -= (lrs.view(-1, *[1] * (p.ndim - 1)) if isinstance(lrs, torch.Tensor) else lrs) * update


def clip_per_model(params, clip: float) -> torch.Tensor:
    """Clip each model's gradient to global norm ``clip``: returns the norms before clipping.

    Model ``m``'s norm is taken over ``p.grad[m]`` of every parameter ``p`` (the leading dim is the
    model), as :func:`torch.nn.utils.clip_grad_norm_` takes it over one model's parameters; a model
    whose norm is above ``clip`` has its gradients scaled by ``clip / (norm + 1e-6)``, the others
    are left alone. NaN and infinite gradients (a diverged model) are set to 0 first.
    """
    grads = [p.grad for p in params if p.grad is not None]
    with torch.no_grad():
        for grad in grads:
            torch.nan_to_num(grad, 0.0, 0.0, 0.0, out=grad)
        norms = torch.stack([g.flatten(1).pow(2).sum(1) for g in grads]).sum(0).sqrt()
        scale = (clip / (norms + 1e-6)).clamp(max=1.0)
        for grad in grads:
            grad.mul_(scale.view(-1, *[1] * (grad.ndim - 1)))
    return norms


def finite_or_inf(t: torch.Tensor) -> torch.Tensor:
    """``t`` with every NaN or infinity as ``inf``: in the table, NaN means "not measured"."""
    return torch.where(torch.isfinite(t), t, math.inf)


def keep_rows(frame: pd.DataFrame) -> pd.DataFrame:
    """The rows to store: every run's first :data:`helpers.evidence.runner.REPRO_STEPS` steps and its
    evaluation steps (where ``eval_loss`` was measured); the minibatch-loss columns of the others are
    not needed."""
    return frame[(frame["step"] < runner.REPRO_STEPS) | frame["eval_loss"].notna()]
