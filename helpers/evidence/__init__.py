"""The evidence machinery: experiments declared once and run by one runner, the statistics their
verdicts rest on, and their stored results.

- :mod:`helpers.evidence.runner`: :class:`~helpers.evidence.runner.Experiment`, the cached,
  resumable runner (``python -m helpers.evidence.runner``) and :func:`~helpers.evidence.runner.load`.
- :mod:`helpers.evidence.statistics`: t-intervals over seeds, time to threshold (censored runs),
  tuned learning rates and verdicts in words.
- ``results/``: every stored experiment's table (``<name>.csv.gz``) and metadata
  (``<name>.json``), shipped as package data.

It imports only the drop-in library; the experiments (:mod:`helpers.experiments`) declare
themselves here.
"""
