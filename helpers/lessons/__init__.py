"""The lessons' tables and demos: plain functions that return tensors or tidy DataFrames, which the
notebooks show and the tests assert on.

- :mod:`~helpers.lessons.group_stats`: one row per normalized group (mean, variance, ...).
- :mod:`~helpers.lessons.bn_vs_ln`: BatchNorm against LayerNorm (deep dive 11).
- :mod:`~helpers.lessons.sequence`: per token or per sentence, padding, who depends on whom (deep
  dive 16).
- :mod:`~helpers.lessons.placement`: the norm before or after the activation (deep dive 12).
- :mod:`~helpers.lessons.variance`, :mod:`~helpers.lessons.param_grad_reduction` and
  :mod:`~helpers.lessons.memory_and_speed`: numerics, the parameter gradients' reduction, memory
  and speed (deep dive 14).
- :mod:`~helpers.lessons.norm_family`, :mod:`~helpers.lessons.geometry` and
  :mod:`~helpers.lessons.norm_in_models`: the normalization family (deep dive 15).

They import the stored experiments, the evidence machinery, the exercises' checking machinery and
the drop-in library, never plots or widgets.
"""
