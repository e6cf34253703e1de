"""Each deep dive's claims on stored verdicts: the rows of its claims ledger that stored experiments
decide, declared once here so that the ledger and the core path's card decide them together.

A ledger corrects its comparisons for their number (Holm's correction over the ledger's comparisons:
:func:`helpers.evidence.claims.ledger_outcomes`), so a claim's outcome depends on the other claims
of its ledger. The deep dives print their ledgers from :data:`LEDGERS` (11 beside the checks it
computes in its cells), and the card (:func:`helpers.evidence.card.card_outcome`) looks each of its
rows up in its deep dive's ledger here, so the two always agree.

The grids the keys run over (activations, sequence lengths and widths, DyT's alphas) are the stored
experiments' (a test checks them against the experiments' own constants).
"""

from __future__ import annotations

from helpers.evidence.claims import Claim

_ACTIVATIONS = ("tanh", "relu", "gelu")  # helpers.experiments.placement_tuned.ACTIVATIONS
_SEQ_LENS, _HIDDEN = (10, 50), (16, 64, 128)  # helpers.experiments.rnn_regimes.SEQ_LENS, HIDDEN
_DYT_ALPHAS = (0.1, 0.5, 2.0)  # helpers.experiments.small_transformer.DYT_ALPHAS
_TEXT_DYT_ALPHAS = (0.5, 2.0)  # the DyT arms of helpers.experiments.text_transformer.ARMS
_BATCH_SIZES = (2, 4, 8, 32, 128)  # helpers.experiments.batch_size.BATCH_SIZES

_11 = "11_batchnorm_in_depth.ipynb"
_12 = "12_where_the_norm_goes.ipynb"
_13 = "13_does_it_speed_up_training.ipynb"
_15 = "15_the_normalization_family.ipynb"


def _batch(text: str, key: str) -> Claim:
    """A claim of 11 on the stored ``batch_size`` (test accuracy: higher is better), favouring LN."""
    return Claim(text, "batch_size", key, "LayerNorm", _11)


#: ``{deep dive: its claims on stored verdicts, in the ledger's order}``.
LEDGERS: dict[str, tuple[Claim, ...]] = {
    _11: (
        *(_batch(f"BN ({how}) has lower accuracy than LN at batch {b}", f"batch {b}: {arm} vs LayerNorm")
          for arm, how in [("BatchNorm", "eval()"), ("BatchNorm, precise statistics", "precise statistics"),
                           ("BatchNorm, train mode", "train mode")] for b in (2, 4, 8)),
        *(_batch(f"LN has higher accuracy than BN at batch {b}, as at the smaller batches",
                 f"batch {b}: BatchNorm vs LayerNorm") for b in (32, 128)),
        *(_batch(f"LN has higher accuracy than no norm at batch {b}", f"batch {b}: LayerNorm vs no norm")
          for b in _BATCH_SIZES),
    ),
    _12: (
        *(Claim(f"LN -> act ends lower than act -> LN ({a})", "placement_tuned",
                f"final loss, {a}, LN -> act vs act -> LN", "LN -> act", _12) for a in _ACTIVATIONS),
        *(Claim(f"... also where both converged: the expressiveness reason ({a})", "placement_tuned",
                f"at convergence, {a}, LN -> act vs act -> LN", "LN -> act", _12) for a in _ACTIVATIONS),
        *(Claim(f"LN -> act ends lower than no norm ({a})", "placement_tuned", f"final loss, {a}, LN -> act vs no norm",
                "LN -> act", _12) for a in _ACTIVATIONS),
        # 12's model is not one Theorem 1 assumes (its embeddings dominate the stream at initialisation)
        Claim("Post-LN: last block's FFN gradient flat in depth at init (Xiong et al.)", "xiong_grad_norms",
              "slope, Post-LN, W_2", deep_dive=_12, kind="bound", assumptions_met=False),
        Claim("Pre-LN: last block's FFN gradient like 1/sqrt(L) at init (Xiong et al.)", "xiong_grad_norms",
              "slope, Pre-LN, W_2", deep_dive=_12, kind="bound", assumptions_met=False),
        Claim("Pre-LN trains faster than no norm (4 blocks)", "small_transformer", "steps, Pre-LN vs no norm", "Pre-LN",
              _12),
        Claim("Post-LN trains faster than no norm (4 blocks)", "small_transformer", "steps, Post-LN vs no norm",
              "Post-LN", _12),
        Claim("Post-LN needs warm-up", "small_transformer", "steps, Post-LN + warm-up vs Post-LN", "Post-LN + warm-up",
              _12),
        Claim("Pre-LN trains at larger rates", "small_transformer", "largest stable rate, Pre-LN", deep_dive=_12,
              kind="level"),
        Claim("... than Post-LN", "small_transformer", "largest stable rate, Post-LN", deep_dive=_12, kind="level"),
    ),
    _13: (
        Claim("LN speeds up training: LSTM, T 100 (Ba et al.'s architecture, a synthetic task)", "lstm_adding", "steps", "LN-LSTM", _13),
        Claim("LN improves convergence: LSTM, T 100", "lstm_adding", "final loss", "LN-LSTM", _13),
        Claim("LN on the recurrent term and cell alone speeds up training: LSTM, T 100", "lstm_adding",
              "steps, LN-LSTM without input LN vs LSTM", "LN-LSTM without input LN", _13),
        Claim("LN on the recurrent term and cell alone improves convergence: LSTM, T 100", "lstm_adding",
              "final loss, LN-LSTM without input LN vs LSTM", "LN-LSTM without input LN", _13),
        *(Claim(f"LN speeds up training: tiny tanh RNN, T {t}, hidden {h}", "rnn_regimes", f"steps, T {t}, hidden {h}",
                "LayerNorm", _13) for t in _SEQ_LENS for h in _HIDDEN),
        Claim("LN speeds up training: 4-block Transformer, Pre-LN", "small_transformer", "steps, Pre-LN vs no norm",
              "Pre-LN", _13),
        Claim("LN speeds up training: 4-block Transformer, Post-LN", "small_transformer", "steps, Post-LN vs no norm",
              "Post-LN", _13),
        Claim("Post-LN needs warm-up (Xiong et al.)", "small_transformer", "steps, Post-LN + warm-up vs Post-LN",
              "Post-LN + warm-up", _13),
        *(Claim(f"LN lets larger rates train: Transformer, {arm}", "small_transformer", f"largest stable rate, {arm}",
                deep_dive=_13, kind="level") for arm in ("no norm", "Pre-LN", "Pre-LN + warm-up")),
        Claim("LN speeds up training: 6-block Transformer, Pre-LN", "deep_transformer", "steps, Pre-LN vs no norm",
              "Pre-LN", _13),
        Claim("Pre-LN needs fewer steps than Post-LN: 6-block Transformer", "deep_transformer",
              "steps, Pre-LN vs Post-LN", "Pre-LN", _13),
        Claim("Post-LN needs warm-up (Xiong et al.): 6-block Transformer, 20-step warm-up", "deep_transformer",
              "steps, Post-LN + warm-up vs Post-LN", "Post-LN + warm-up", _13),
        Claim("Post-LN fails at the rate Pre-LN trains best at (Xiong et al.): 6-block Transformer",
              "deep_transformer", "at Pre-LN's best rate, Post-LN", deep_dive=_13, kind="answer"),
        Claim("LN lets larger rates train: 6-block Transformer, Pre-LN vs no norm (seeds that end below, 10 each)",
              "deep_transformer", "stable seeds at the largest rate both ran, Pre-LN vs no norm", "Pre-LN", _13),
        Claim("Pre-LN trains at larger rates than Post-LN: 6-block Transformer (seeds that end below, 10 each)",
              "deep_transformer", "stable seeds at the largest rate both ran, Pre-LN vs Post-LN", "Pre-LN", _13),
        # The same questions on English text (12 blocks × width 64, 60 steps: the first phase of learning)
        Claim("LN speeds up training: 12-block Transformer on English text, Pre-LN", "text_transformer",
              "steps, Pre-LN vs no norm", "Pre-LN", _13),
        Claim("LN ends with a lower held-out loss: 12-block Transformer on English text, Pre-LN", "text_transformer",
              "final loss, Pre-LN vs no norm", "Pre-LN", _13),
        Claim("Pre-LN needs fewer steps than Post-LN: 12-block Transformer on English text", "text_transformer",
              "steps, Pre-LN vs Post-LN", "Pre-LN", _13),
        Claim("Post-LN needs warm-up (Xiong et al.): 12-block Transformer on English text, 12-step warm-up",
              "text_transformer", "steps, Post-LN + warm-up vs Post-LN", "Post-LN + warm-up", _13),
        Claim("Post-LN fails at the rate Pre-LN trains best at (Xiong et al.): 12-block Transformer on English text",
              "text_transformer", "at Pre-LN's best rate, Post-LN", deep_dive=_13, kind="answer"),
        Claim("LN lets larger rates train: 12-block Transformer on English text, Pre-LN vs no norm (seeds that end "
              "below, 10 each)", "text_transformer", "stable seeds at the largest rate both ran, Pre-LN vs no norm",
              "Pre-LN", _13),
        Claim("Pre-LN trains at larger rates than Post-LN: 12-block Transformer on English text (seeds that end "
              "below, 10 each)", "text_transformer", "stable seeds at the largest rate both ran, Pre-LN vs Post-LN",
              "Pre-LN", _13),
        Claim("A warm-up lets Post-LN train at larger rates: 12-block Transformer on English text (seeds that end "
              "below, 10 each)", "text_transformer",
              "stable seeds at the largest rate both ran, Post-LN + warm-up vs Post-LN", "Post-LN + warm-up", _13),
        Claim("LN speeds up training in wall-clock time: LSTM, T 100", "step_times",
              "wall-clock, LSTM, T 100, hidden 64, LN-LSTM", "LN-LSTM", _13),
        Claim("LN speeds up training in wall-clock time: 6-block Transformer, Pre-LN", "step_times",
              "wall-clock, Deep Transformer, Pre-LN", "Pre-LN", _13),
        Claim("With LN, what enters the activation drifts less (deep MLP, spread)", "drift",
              "activation input: largest std change", "LayerNorm's activation input", _13),
        Claim("With LN, the Linear output before LN drifts less too (deep MLP, spread)", "drift",
              "Linear output: largest std change", "LayerNorm's Linear output", _13),
        Claim("With LN, each unit of what enters the activation drifts less, in its own spread (deep MLP, 3 rates, "
              "every seed)", "drift", "activation input: largest unit mean drift, every rate",
              "LayerNorm's activation input", _13),
        Claim("... and each unit of the Linear output before LN (deep MLP, 3 rates, every seed)", "drift",
              "Linear output: largest unit mean drift, every rate", "LayerNorm's Linear output", _13),
        Claim("LN reduces the drift of each unit's input mean, in absolute units: LN's bounded scale wins it by "
              "construction (3-layer RNN, rate 0.01)", "rnn_mechanism", "drift of the unit means, lr 0.01", "LayerNorm",
              _13),
        Claim("LN reduces the drift of each unit's input std (3-layer RNN, rate 0.01)", "rnn_mechanism",
              "drift of the unit stds, lr 0.01", "LayerNorm", _13),
        Claim("LN reduces internal covariate shift, Santurkar's definition (3-layer RNN, rate 0.01)", "rnn_mechanism",
              "ics, lr 0.01", "LayerNorm", _13),
        Claim("Noise after LN (strength 0.5) costs the trained network nothing (3-layer RNN, rate 0.01)",
              "rnn_mechanism", "noise 0.5, lr 0.01", "noisy LayerNorm 0.5", _13, kind="same"),
    ),
    _15: (
        Claim("BN's error grows at small batches (batch 2 vs 32)", "norm_family_cnn", "error, BatchNorm: batch 2 vs 32",
              "at batch 32", _15),
        Claim("GroupNorm's does not grow (batch 2 vs 32)", "norm_family_cnn", "error, GroupNorm: batch 2 vs 32",
              "GroupNorm at batch 2", _15, kind="at least as good"),
        Claim("GroupNorm beats BN at batch 2", "norm_family_cnn", "error, batch 2: GroupNorm vs BatchNorm", "GroupNorm",
              _15),
        Claim("... and at batch 8", "norm_family_cnn", "error, batch 8: GroupNorm vs BatchNorm", "GroupNorm", _15),
        Claim("BN's error is no higher than GN's at batch 32 (lower, or the same within ±10%)", "norm_family_cnn",
              "error, batch 32: GroupNorm vs BatchNorm", "BatchNorm", _15, kind="at least as good"),
        Claim("GroupNorm beats LN (batch 32)", "norm_family_cnn", "error, batch 32: GroupNorm vs LayerNorm", "GroupNorm",
              _15),
        Claim("GroupNorm beats InstanceNorm (batch 32)", "norm_family_cnn", "error, batch 32: GroupNorm vs InstanceNorm",
              "GroupNorm", _15),
        Claim("RMSNorm needs the same steps as LN, within ±10% (Pre-norm Transformer)", "small_transformer",
              "steps, Pre-RMSNorm vs Pre-LN", "Pre-RMSNorm", _15, kind="same"),
        Claim("... and ends the same distance above the floor, within ±10%", "small_transformer",
              "final loss, Pre-RMSNorm vs Pre-LN", "Pre-RMSNorm", _15, kind="same"),
        *(Claim(f"DyT (alpha0 {a:g}) needs the same steps as LN, within ±10%", "small_transformer",
                f"steps, DyT, alpha0 {a:g} vs Pre-LN", f"DyT, alpha0 {a:g}", _15, kind="same") for a in _DYT_ALPHAS),
        *(Claim(f"DyT (alpha0 {a:g}) ends the same distance above the floor as LN, within ±10%", "small_transformer",
                f"final loss, DyT, alpha0 {a:g} vs Pre-LN", f"DyT, alpha0 {a:g}", _15, kind="same")
          for a in _DYT_ALPHAS),
        # The same replacements on English text, where the arms' stability can part (12 blocks × width 64)
        Claim("RMSNorm needs the same steps as LN, within ±10% (12-block Transformer on English text)",
              "text_transformer", "steps, Pre-RMSNorm vs Pre-LN", "Pre-RMSNorm", _15, kind="same"),
        Claim("... and ends with the same held-out loss, within ±10%", "text_transformer",
              "final loss, Pre-RMSNorm vs Pre-LN", "Pre-RMSNorm", _15, kind="same"),
        *(Claim(f"DyT (alpha0 {a:g}) needs the same steps as LN, within ±10% (English text)", "text_transformer",
                f"steps, DyT, alpha0 {a:g} vs Pre-LN", f"DyT, alpha0 {a:g}", _15, kind="same") for a in _TEXT_DYT_ALPHAS),
        *(Claim(f"DyT (alpha0 {a:g}) ends with the same held-out loss as LN, within ±10% (English text)",
                "text_transformer", f"final loss, DyT, alpha0 {a:g} vs Pre-LN", f"DyT, alpha0 {a:g}", _15, kind="same")
          for a in _TEXT_DYT_ALPHAS),
        Claim("DyT (alpha0 0.5) keeps the norm's stability: it trains at larger rates than no norm (English text, "
              "seeds that end below, 10 each)", "text_transformer",
              "stable seeds at the largest rate both ran, DyT, alpha0 0.5 vs no norm", "DyT, alpha0 0.5", _15),
        Claim("A 4-block Transformer learns the task with no norm at all", "small_transformer", "learns, no norm",
              deep_dive=_15, kind="answer"),
        Claim("A trained LN's input-output map is S-shaped (the LNs after block 1)", "ln_input_output",
              "S-shaped, LNs after block 1, trained", deep_dive=_15, kind="answer"),
        Claim("... and not at initialisation", "ln_input_output", "S-shaped, LNs after block 1, init", deep_dive=_15,
              kind="answer", expects="no"),
    ),
}
