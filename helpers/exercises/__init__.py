"""The exercises' checkers, over one shared checking machinery.

- :mod:`~helpers.exercises.checking`: :func:`~helpers.exercises.checking.compare`,
  :class:`~helpers.exercises.checking.Exercise`, :func:`~helpers.exercises.checking.check` and
  the registry; while a check runs, torch's norm functions and the set's own refuse to run.
- :mod:`~helpers.exercises.layer_norm`: LayerNorm by hand (core notebooks 00 and 01, deep dive 14).
- :mod:`~helpers.exercises.layer_norm_at_work`: a Linear -> LN -> tanh block (deep dive 12), a
  model's final LN (core notebook 02) and RMSNorm (deep dive 15) by hand.
- :mod:`~helpers.exercises.training_speed`: deep dive 13's exercises.
- :mod:`~helpers.exercises.numerics`: the input gradient by hand and Chan's merge (deep dive 14).
- :mod:`~helpers.exercises.norm_family`: GroupNorm by hand, LayerNorm as geometry (deep dive 15).

Exercises built on a lesson's own functions or data are declared beside them, over the
same machinery (:mod:`helpers.lessons.bn_vs_ln`, :mod:`helpers.lessons.sequence`,
:mod:`helpers.lessons.placement`). This folder imports only the drop-in library.
"""
