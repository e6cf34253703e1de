"""The stored experiments, one module per experiment (or closely related pair), and the building
blocks they share. Each declares itself to :mod:`helpers.evidence.runner`; ``make experiments``
runs them and the notebooks read what they stored.

- :mod:`~helpers.experiments.drift`: a deep MLP's hidden-layer distributions during training,
  with and without LayerNorm (deep dive 13).
- :mod:`~helpers.experiments.batch_size`: BatchNorm, LayerNorm and no norm at small batches (deep
  dive 11).
- :mod:`~helpers.experiments.placement_tuned`: the norm before or after the activation, and
  Pre-LN vs Post-LN gradient norms, ``xiong_grad_norms`` (deep dive 12).
- :mod:`~helpers.experiments.rnn_regimes`, :mod:`~helpers.experiments.lstm_adding`,
  :mod:`~helpers.experiments.small_transformer`, :mod:`~helpers.experiments.deep_transformer` (a
  deeper Transformer on a harder copy task, where the placements part ways),
  :mod:`~helpers.experiments.text_transformer` (a character-level Transformer on real prose,
  :mod:`~helpers.experiments.text_corpus`) and :mod:`~helpers.experiments.step_times`:
  does LayerNorm speed up training (deep dive 13), over :mod:`~helpers.experiments.rnn_models` (the
  adding task, stacked tanh RNNs, paired verdicts) and :mod:`~helpers.experiments.threshold_runs`
  (steps to a loss threshold, in words), and read as one table by
  :mod:`~helpers.experiments.training_speed_table`.
- :mod:`~helpers.experiments.ln_input_output` and :mod:`~helpers.experiments.norm_family_cnn`:
  LayerNorm's input-to-output map in a trained Transformer, and the family on a small CNN (deep
  dive 15).

The shared parts of their training loops (per-model Adam and clipping, the rows stored) are in
:mod:`~helpers.experiments.training`, and each tuned rate is said by
:mod:`~helpers.experiments.tuning_words`. They import the evidence machinery, the exercises' checking machinery and the drop-in library,
never plots or widgets.
"""
