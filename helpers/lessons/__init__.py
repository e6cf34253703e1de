"""The lessons' tables and demos: plain functions that return tensors or tidy DataFrames, which the
notebooks show and the tests assert on.

- :mod:`~helpers.lessons.group_stats`: one row per normalized group (mean, variance, ...).
- :mod:`~helpers.lessons.bn_vs_ln`: BatchNorm against LayerNorm (notebooks 00, 01, 03).
- :mod:`~helpers.lessons.sequence`: per token or per sentence, padding, who depends on whom (02).
- :mod:`~helpers.lessons.placement`: the norm before or after the activation (04).
- :mod:`~helpers.lessons.variance`, :mod:`~helpers.lessons.param_grad_reduction` and
  :mod:`~helpers.lessons.memory_and_speed`: numerics, the parameter gradients' reduction, memory
  and speed (06).
- :mod:`~helpers.lessons.norm_family`, :mod:`~helpers.lessons.geometry` and
  :mod:`~helpers.lessons.norm_in_models`: the normalization family (07).

They import the stored experiments, the evidence machinery, the exercises' checking machinery and
the drop-in library, never plots or widgets.
"""
