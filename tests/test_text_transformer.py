"""helpers.experiments.text_transformer: the model's arms on real text, the probe's sizing and rule, and the
declaration it fixed."""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pytest
import torch

from helpers.experiments import small_transformer as st
from helpers.experiments import text_corpus as tc
from helpers.experiments import text_transformer as tt

# ------------------------------------------------------------------ the model on real text


def test_every_arm_trains_a_few_steps_on_text_with_finite_losses_in_bits():
    kw = {"steps": 3, "blocks": 2, "eval_every": 1, "warmup": 2, "heldout_size": 4}
    first = {}
    for arm in tt.ARMS:
        runs = tt.text_runs((0, 1), (1e-3, 1e-2), variant=arm, **kw)
        assert len(runs) == 4 * 4 and set(runs["variant"]) == {arm}
        assert np.isfinite(runs.loc[runs["step"] < 3, "loss"]).all() and np.isfinite(runs["eval_loss"]).all()
        assert (runs.groupby(["seed", "lr"])["loss"].first() > 0).all()
        first[arm] = runs.loc[(runs["step"] == 0) & (runs["seed"] == 0), "eval_loss"].iloc[0]
    # the placements and norms are different functions of the same weights; warm-up only scales the rate
    assert len({first[a] for a in tt.ARMS if a != "Post-LN + warm-up"}) == len(tt.ARMS) - 1
    assert first["Post-LN + warm-up"] == first["Post-LN"]


def test_the_losses_are_the_decoders_in_bits_per_character():
    task = tc.text_source(tt.CONTEXT, 4)
    model, nats = st.trained_decoder((5,), (3e-3,), variant="Pre-LN", steps=2, width=tt.WIDTH, blocks=2,
                                     heads=tt.HEADS, batch=tt.BATCH, eval_every=1, task=task)
    bits = tt.text_runs((5,), (3e-3,), variant="Pre-LN", steps=2, blocks=2, eval_every=1, heldout_size=4)
    np.testing.assert_allclose(bits["eval_loss"], nats["eval_loss"] / math.log(2), rtol=1e-12)
    np.testing.assert_allclose(bits["loss"], nats["loss"] / math.log(2), rtol=1e-12)
    # the held-out loss is the model's mean next-character cross-entropy on the held-out windows
    seqs = task.heldout
    with torch.no_grad():
        logits = model(seqs[:, :-1].expand(1, *seqs[:, :-1].shape))
    expected = torch.nn.functional.cross_entropy(logits[0].flatten(0, 1).double(), seqs[:, 1:].flatten())
    assert bits["eval_loss"].iloc[-1] == pytest.approx(float(expected) / math.log(2), rel=1e-5)


def test_the_arms_of_a_seed_see_the_same_text():
    draws = {}
    for arm in tt.ARMS:
        gens, _, _, _ = st._setup((0,), (1e-3,), arm, 0, len(tc.vocabulary()), tt.WIDTH, 2, tt.HEADS, tt.CONTEXT)
        draws[arm] = tc.text_source(tt.CONTEXT, 4).draw(tt.BATCH, gens[0])
    for arm, batch in draws.items():
        assert torch.equal(batch, draws["no norm"]), arm


# ------------------------------------------------------------------ the probe


def test_each_depth_gets_the_same_block_steps_about_two_dozen_evaluations_and_a_fifth_of_warm_up():
    for blocks in tt.PROBE_BLOCKS:
        size = tt.sized(blocks)
        assert size["steps"] == tt.BLOCK_STEPS // blocks and size["blocks"] == blocks
        assert 20 <= size["steps"] / size["eval_every"] <= 24
        assert size["warmup"] == size["steps"] // 5 >= size["steps"] / 10
    assert tt.PROBE_SEED not in range(10) and tt.PROBE_SEED not in (100, 101, 102)
    assert set(tt.PROBE_ARMS) <= set(tt.ARMS) and len(tt.PROBE_RATES) == 3


def _table(finals: dict[int, dict[str, tuple[float, float, float]]]) -> pd.DataFrame:
    rows = [{"blocks": b, "steps": tt.BLOCK_STEPS // b, "variant": arm, "lr": lr, "seed": tt.PROBE_SEED, "final": f}
            for b, arms in finals.items() for arm, values in arms.items()
            for lr, f in zip(tt.PROBE_RATES, values, strict=True)]
    return pd.DataFrame(rows)


def test_the_probe_rule_separates_where_post_ln_fails_at_pre_lns_best_rate_and_no_norm_somewhere():
    unigram = 4.0
    table = _table({
        4: {"Pre-LN": (3.0, 2.5, 2.0), "Post-LN": (2.9, 2.6, 3.2), "no norm": (2.8, 2.6, 2.4)},   # no norm fine
        8: {"Pre-LN": (3.0, 2.2, 2.5), "Post-LN": (2.9, 3.1, 4.0), "no norm": (3.2, 2.6, math.inf)},
        12: {"Pre-LN": (3.0, 2.0, 2.5), "Post-LN": (2.9, 3.0, 4.0), "no norm": (2.8, 2.6, 2.4)},  # no norm fine
    })
    levels = tt.probe_levels(table, unigram).set_index("blocks")
    assert levels.loc[4, "reference"] == 2.0 and levels.loc[4, "threshold"] == 3.0
    assert levels.loc[8, "reference"] == 2.2 and levels.loc[8, "threshold"] == pytest.approx(3.1)
    assert levels.loc[8, "pre_ln_best"] == 3e-3 and levels.loc[8, "post_ln_there"] == 3.1
    assert levels.loc[8, "no_norm_worst"] == math.inf
    # depth 4: Post-LN ends at 3.2 >= 3.0 at Pre-LN's best (0.01), but no norm never ends at or above 3.0
    assert list(levels["separates"]) == [False, True, False]
    assert tt.chosen_blocks(levels.reset_index()) == 8
    # ties at the threshold count as failing; no depth separating: the deepest
    assert tt.chosen_blocks(levels.reset_index().assign(separates=False)) == 12
    assert tt.chosen_blocks(levels.reset_index().assign(separates=True)) == 4
