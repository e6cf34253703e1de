"""Layer Normalization, hands-on: from-scratch, drop-in normalization layers.

Everything here mirrors ``torch.nn.functional`` and ``torch.nn`` exactly (same
signatures, defaults, parameter and buffer names, results and errors), written with
tensor operations a learner can read instead of torch's fused norm kernels.

This top level is the drop-in library (and :func:`set_language`, the language of the checkers'
feedback: ``"zh"`` in the core path's Chinese edition). The course's parts sit in folders, each importing only
the layers below it: ``helpers.evidence`` (runner, statistics, stored results),
``helpers.exercises`` (checkers) and ``helpers.speed`` (LayerNorm and RMSNorm compiled), then
``helpers.lessons`` (tables and demos) and ``helpers.experiments`` (the stored experiments), then
``helpers.plots``, then ``helpers.widgets``.

>>> import torch, helpers
>>> x = torch.randn(2, 3, 4)
>>> torch.allclose(helpers.layer_norm(x, (4,)), torch.nn.functional.layer_norm(x, (4,)), atol=1e-6)
True
"""

import torch.fx

from helpers.autograd import LayerNormFunction
from helpers.functional import (
    batch_norm,
    group_norm,
    instance_norm,
    layer_norm,
    normalize,
    rms_norm,
)
from helpers.language import set_language
from helpers.modules import (
    BatchNorm1d,
    BatchNorm2d,
    DyT,
    GroupNorm,
    InstanceNorm2d,
    LayerNorm,
    RMSNorm,
)

# A model's forward may call helpers.layer_norm(...) directly: torch.fx.symbolic_trace then
# records it as one call here too, as it does through helpers.functional.
for _name in ("batch_norm", "group_norm", "instance_norm", "layer_norm", "normalize", "rms_norm"):
    torch.fx.wrap(_name)
del _name

__all__ = [
    "BatchNorm1d",
    "BatchNorm2d",
    "DyT",
    "GroupNorm",
    "InstanceNorm2d",
    "LayerNorm",
    "LayerNormFunction",
    "RMSNorm",
    "batch_norm",
    "group_norm",
    "instance_norm",
    "layer_norm",
    "normalize",
    "rms_norm",
    "set_language",
]
