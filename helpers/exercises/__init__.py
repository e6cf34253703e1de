"""The exercises' checkers, over one shared checking machinery.

- :mod:`~helpers.exercises.checking`: :func:`~helpers.exercises.checking.compare`,
  :class:`~helpers.exercises.checking.Exercise`, :func:`~helpers.exercises.checking.check` and
  the registry; while a check runs, torch's norm functions and the set's own refuse to run.
- :mod:`~helpers.exercises.layer_norm`: LayerNorm by hand (notebooks 00, 01 and 02).
- :mod:`~helpers.exercises.core_path`: LN before the activation and RMSNorm by hand (the core
  path's notebooks 01 and 03).
- :mod:`~helpers.exercises.training_speed`: notebook 05's exercises.
- :mod:`~helpers.exercises.numerics`: the input gradient by hand and Chan's merge (06).
- :mod:`~helpers.exercises.norm_family`: GroupNorm by hand, LayerNorm as geometry (07).

Exercises built on a lesson's own functions or data are declared beside them, over the
same machinery (:mod:`helpers.lessons.bn_vs_ln`, :mod:`helpers.lessons.sequence`,
:mod:`helpers.lessons.placement`). This folder imports only the drop-in library.
"""
