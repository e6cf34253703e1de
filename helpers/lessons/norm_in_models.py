"""Which normalization well-known models use, over what, where, and the reason their papers give.

:data:`NORM_IN_MODELS` is deep dive 15's closing table: one row per model, with the paper it comes
from. "Over" names the cells that share one statistic, in the notation of the notebook's figure:
``(N, C, H, W)`` for images, ``(B, T, D)`` for token sequences. The "why" column paraphrases the
cited paper; where a paper gives no reason, it says so.
"""

from __future__ import annotations

import pandas as pd

_COLUMNS = ["model", "domain", "norm", "statistics over", "where", "why (as its paper says)", "source"]

#: Where well-known models use which norm, with sources.
NORM_IN_MODELS = pd.DataFrame([
    ("ResNet (2015)", "images", "BatchNorm", "(N, H, W) per channel; running statistics at test time",
     "after each convolution, before the ReLU", "BN 'right after each convolution and before activation', "
     "following Ioffe and Szegedy", "He et al. 2015, arXiv:1512.03385, sec. 3.4"),
    ("Instance Norm (2016)", "style transfer", "InstanceNorm", "(H, W) per image and channel",
     "in the generator, replacing BN", "the stylised image should not depend on the content image's "
     "contrast: normalise each image on its own, at test time too", "Ulyanov et al. 2016, arXiv:1607.08022"),
    ("Transformer (2017)", "text", "LayerNorm", "D per token", "after each residual sum (Post-LN)",
     "no reason given beyond citing Ba et al.", "Vaswani et al. 2017, arXiv:1706.03762, sec. 3.1"),
    ("Group Norm (2018)", "detection, video", "GroupNorm (32 groups)", "(C/G, H, W) per image and group",
     "where BN was", "BN's error grows at small batches (1 or 2 images per GPU in detection); GN's does not "
     "depend on the batch", "Wu and He 2018, arXiv:1803.08494"),
    ("GPT-2 (2019)", "text", "LayerNorm", "D per token", "before each sublayer (Pre-LN), and after the last "
     "block", "'similar to a pre-activation residual network'", "Radford et al. 2019, sec. 2.3"),
    ("T5 (2019)", "text", "scale-only LN (RMSNorm)", "D per token, no centring, no bias",
     "before each sublayer", "a 'simplified version of layer normalization where the activations are only "
     "rescaled and no additive bias is applied'", "Raffel et al. 2019, arXiv:1910.10683, sec. 2.1"),
    ("DDPM (2020)", "image diffusion", "GroupNorm", "(C/G, H, W) per image and group",
     "throughout the U-Net", "it replaced PixelCNN++'s weight normalization 'to make the implementation "
     "simpler'", "Ho et al. 2020, arXiv:2006.11239, sec. 4"),
    ("ViT (2020)", "images", "LayerNorm", "D per patch token", "before each sublayer (Pre-LN)",
     "as in the Transformer; Pre-LN as in later language models", "Dosovitskiy et al. 2020, arXiv:2010.11929, "
     "sec. 3.1"),
    ("ConvNeXt (2022)", "images", "LayerNorm", "C per pixel (channels last)", "one per block, after the "
     "depthwise convolution", "replacing BN by LN in the modernised ResNet gives slightly better accuracy",
     "Liu et al. 2022, arXiv:2201.03545, sec. 2.6"),
    ("LLaMA (2023)", "text", "RMSNorm", "D per token, no centring", "before each sublayer (pre-norm)",
     "'to improve the training stability', as GPT-3; RMSNorm from Zhang and Sennrich",
     "Touvron et al. 2023, arXiv:2302.13971, sec. 2.2"),
    ("ViT-22B (2023)", "images", "LayerNorm, plus QK-norm", "D per token; queries and keys per head",
     "Pre-LN, and LN on the queries and keys before their dot product", "without it, attention logits grew "
     "and training diverged after a few thousand steps", "Dehghani et al. 2023, arXiv:2302.05442, sec. 2"),
    ("Gemma 2 (2024)", "text", "RMSNorm", "D per token", "before and after each sublayer (sandwich)",
     "'to stabilize training'", "Gemma Team 2024, arXiv:2408.00118, sec. 2"),
    ("OLMo 2 (2024)", "text", "RMSNorm, plus QK-norm", "D per token", "on each sublayer's output, inside "
     "the residual; and on queries and keys", "training stability", "OLMo et al. 2024, arXiv:2501.00656, "
     "sec. 3"),
    ("DyT (2025)", "images, text", "none: Dynamic Tanh", "nothing: elementwise tanh(alpha x)",
     "wherever the model had a norm", "trained LNs' input-output maps look like tanh; DyT matches their "
     "results without computing any statistic", "Zhu et al. 2025, arXiv:2503.10622"),
], columns=_COLUMNS)
