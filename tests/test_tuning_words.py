"""The words for each arm's tuned learning rate, shared by the stored experiments."""

from __future__ import annotations

import pandas as pd

from helpers.experiments.tuning_words import best_rate_words

RATES = (1e-3, 3e-3, 1e-2, 3e-2, 1e-1)
PILOT = pd.DataFrame({"seed": [102, 100, 101]})


def _scores(**arms):
    return pd.DataFrame([{"arm": arm, "lr": lr, "score": s} for arm, scores in arms.items()
                         for lr, s in zip(RATES, scores, strict=True)])


def test_best_rate_words_say_inside_the_grid_on_its_edge_or_none_in_steps_by_default():
    words = best_rate_words(_scores(stuck=[400] * 5, inside=[300, 200, 100, 150, 390], edge=[300, 200, 100, 50, 30]),
                            PILOT, learned_below=400)
    assert words == {
        "stuck": "none: no pilot run reached the threshold within 400 steps at any rate",
        "inside": "0.01, inside the grid (0.001 to 0.1); restricted mean 100 steps to the threshold "
                  "over pilot seeds 100, 101, 102",
        "edge": "0.1, on the grid's edge: a better rate may lie beyond it (0.001 to 0.1); restricted mean "
                "30 steps to the threshold over pilot seeds 100, 101, 102",
    }


def test_best_rate_words_take_the_score_the_none_words_and_each_arms_rates_as_given():
    def rate(arm, lr):  # arm "b8" runs at a quarter of the grid's rates
        return f"{lr / 4:g}" if arm == "b8" else f"{lr:g}"

    words = best_rate_words(_scores(b8=[0.5, 0.3, 0.2, 0.25, 0.4], b2=[0.95] * 5), PILOT, learned_below=0.9,
                            score="mean error {:.1%}", none="none: at no rate of the grid ({grid}) below {cap:g}",
                            rate=rate, best=lambda arm, lr: f"{rate(arm, lr)} (scaled from {lr:g})")
    assert words == {"b8": "0.0025 (scaled from 0.01), inside the grid (0.00025 to 0.025); mean error 20.0% "
                           "over pilot seeds 100, 101, 102",
                     "b2": "none: at no rate of the grid (0.001 to 0.1) below 0.9"}
