"""The speed path: LayerNorm and RMSNorm compiled, to come near PyTorch's own CPU kernels.

Apart from the drop-in library (``helpers`` at the top level), which is written to be read: here
the same formulas are compiled. :mod:`helpers.speed.compiled` holds
``CompiledLayerNormFunction`` and ``CompiledRMSNormFunction`` (forward and backward each compiled
by ``torch.compile``), :mod:`helpers.speed.one_pass` their training backward in one pass over the
data, a Numba kernel (:mod:`helpers.speed._one_pass_kernels`). Deep dive 14 and ``make bench``
use them; they import only the library.
"""
