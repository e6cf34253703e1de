"""Swap torch's norm layers in any model for helpers' drop-in ones, weights and all.

>>> import torch
>>> from torch import nn
>>> model = nn.Sequential(nn.Linear(4, 8), nn.LayerNorm(8), nn.ReLU())
>>> swap_norms(model)
Sequential(
  (0): Linear(in_features=4, out_features=8, bias=True)
  (1): LayerNorm((8,), eps=1e-05, elementwise_affine=True, bias=True)
  (2): ReLU()
)
>>> type(model[1]).__module__, isinstance(model[1], nn.LayerNorm)
('helpers.modules', True)
"""

from __future__ import annotations

from torch import nn

from helpers import modules as HM

__all__ = ["swap_norms"]

#: torch's class -> helpers' class. Exact types: a subclass of torch's class (a library's
#: own LayerNorm, or helpers' already) may compute something else, so it is left alone.
SWAPS: dict[type[nn.Module], type[nn.Module]] = {
    nn.LayerNorm: HM.LayerNorm,
    nn.RMSNorm: HM.RMSNorm,
    nn.GroupNorm: HM.GroupNorm,
    nn.BatchNorm1d: HM.BatchNorm1d,
    nn.BatchNorm2d: HM.BatchNorm2d,
    nn.InstanceNorm1d: HM.InstanceNorm1d,
    nn.InstanceNorm2d: HM.InstanceNorm2d,
}


def _constructor_args(module: nn.Module) -> tuple[tuple, dict]:
    """The arguments that build ``module`` again, read from its attributes."""
    has_bias = getattr(module, "bias", None) is not None
    if isinstance(module, nn.LayerNorm):
        return (module.normalized_shape, module.eps, module.elementwise_affine), {"bias": has_bias}
    if isinstance(module, nn.RMSNorm):
        return (module.normalized_shape, module.eps, module.elementwise_affine), {}
    if isinstance(module, nn.GroupNorm):
        return (module.num_groups, module.num_channels, module.eps, module.affine), {
            "bias": has_bias
        }
    # BatchNorm and InstanceNorm: torch's _NormBase
    args = (module.num_features, module.eps, module.momentum, module.affine)
    return (*args, module.track_running_stats), {"bias": has_bias}


def _swapped(module: nn.Module) -> nn.Module:
    """helpers' twin of one of torch's norm modules: same arguments, state, device, dtype, mode."""
    state = module.state_dict()
    floating = [t for t in state.values() if t.is_floating_point()]
    factory = {"device": floating[0].device, "dtype": floating[0].dtype} if floating else {}
    args, kwargs = _constructor_args(module)
    twin = SWAPS[type(module)](*args, **kwargs, **factory)
    twin.load_state_dict(state, strict=True)
    return twin.train(module.training)


def swap_norms(module: nn.Module) -> nn.Module:
    """Replace each of torch's norm layers in ``module`` with helpers' class of the same name.

    Every ``nn.LayerNorm``, ``nn.RMSNorm``, ``nn.GroupNorm``, ``nn.BatchNorm1d/2d`` and
    ``nn.InstanceNorm1d/2d`` (exactly these types) is rebuilt from its own arguments as
    ``helpers.LayerNorm`` etc., on the same device and in the same dtype, and loads the
    original's ``state_dict`` strictly (running statistics and ``num_batches_tracked``
    included); it keeps the original's training or evaluation mode. Like
    ``nn.SyncBatchNorm.convert_sync_batchnorm``, children are replaced in place, and a
    norm passed as ``module`` itself is returned as its replacement.

    A library's own norm classes (Hugging Face's ``LlamaRMSNorm``, ``T5LayerNorm``) are not
    torch's and stay as they are. Hooks registered on a replaced module are not carried over.

    Args:
        module: any module.

    Returns:
        ``module``, with its norms replaced (or the replacement, if ``module`` is a norm).

    Examples::

        >>> layer = nn.TransformerEncoderLayer(8, 2, 16, batch_first=True)
        >>> state = layer.state_dict()
        >>> layer = swap_norms(layer)
        >>> type(layer.norm1).__module__
        'helpers.modules'
        >>> layer.load_state_dict(state, strict=True)
        <All keys matched successfully>
    """
    if type(module) in SWAPS:
        return _swapped(module)
    for name, child in module.named_children():
        module.add_module(name, swap_norms(child))
    return module
