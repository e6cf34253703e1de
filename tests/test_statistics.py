"""helpers.evidence.statistics: intervals over seeds, Kaplan-Meier time to threshold, tuned rates, verdicts,
each against a case computed by hand."""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pytest
from scipy import stats

from helpers.evidence.statistics import (
    EQUIVALENCE_MARGIN,
    Interval,
    TimeToThreshold,
    best_rate_check,
    best_rates,
    grid_resolution,
    grid_step,
    holm,
    one_sample_ci,
    paired_difference_ci,
    threshold_level,
    time_to_threshold,
    verdict,
)


def said_by(interval, **how) -> str:
    """:func:`verdict`'s record for ``interval``, in words."""
    return verdict(interval, **how).words


#: Steps to threshold of 10 seeds, skewed right as such samples are.
STEPS = [181, 175, 190, 168, 203, 177, 185, 172, 195, 240]


# ----------------------------------------------------------------------------- one_sample_ci


def test_one_sample_ci_of_the_mean_is_students_t_by_hand():
    x = np.asarray(STEPS, dtype=float)
    half = stats.t.ppf(0.975, x.size - 1) * x.std(ddof=1) / math.sqrt(x.size)
    ci = one_sample_ci(STEPS)
    assert ci.estimate == pytest.approx(x.mean())
    assert (ci.low, ci.high) == pytest.approx((x.mean() - half, x.mean() + half), rel=1e-12)
    assert ci.n == 10 and ci.confidence == 0.95 and ci.note == ""


def test_one_sample_ci_of_the_mean_is_the_paired_interval_on_the_differences():
    # a paired t-interval is this interval on the differences: the coverage stored for "t" is its own
    rng = np.random.default_rng(3)
    a, b = rng.lognormal(0, 0.5, 10), rng.lognormal(0, 0.5, 10)
    one, paired = one_sample_ci(a - b), paired_difference_ci(a, b)
    assert (one.estimate, one.low, one.high) == pytest.approx((paired.estimate, paired.low, paired.high), rel=1e-12)


def test_one_sample_ci_of_the_median_is_between_order_statistics():
    ordered = sorted(STEPS)
    ci = one_sample_ci(STEPS, "median")
    # at 10 values the 2nd smallest and the 2nd largest: 1 - 2 P(Bin(10, 1/2) <= 1) = 1 - 22/1024
    assert (ci.estimate, ci.low, ci.high) == (np.median(STEPS), ordered[1], ordered[8])


def _median_ranks(n):
    """The ranks (1-based) of the order statistics one_sample_ci's median interval takes at n values."""
    ci = one_sample_ci(np.arange(1.0, n + 1), "median")
    return int(ci.low), int(ci.high)


@pytest.mark.parametrize("n", range(6, 41))
def test_median_ranks_reach_the_confidence_and_are_the_narrowest_that_do(n):
    r, s = _median_ranks(n)
    assert s == n + 1 - r
    assert 1 - 2 * stats.binom.cdf(r - 1, n, 0.5) >= 0.95
    if r < n // 2:  # one rank further in falls short
        assert 1 - 2 * stats.binom.cdf(r, n, 0.5) < 0.95


def test_median_interval_covers_at_least_95_percent_on_skewed_tied_samples():
    # capped lognormal steps on an evaluation grid of 10 (ties): the guarantee holds for any distribution
    rng = np.random.default_rng(0)
    truth = np.median(np.minimum(np.ceil(rng.lognormal(np.log(300), 0.6, 4_000_000) / 10) * 10, 600))
    covered = 0
    for _ in range(2000):
        x = np.minimum(np.ceil(rng.lognormal(np.log(300), 0.6, 10) / 10) * 10, 600)
        ci = one_sample_ci(x, "median")
        covered += ci.low <= truth <= ci.high
    # 2,000 draws: 95% is within 1 point (2 standard errors); the bound at 10 values is 97.9%
    assert covered / 2000 >= 0.95


def test_one_sample_ci_of_the_median_is_refused_below_six_values():
    with pytest.raises(ValueError, match=r"'values'.*at least 6 values.*median.*got 5"):
        one_sample_ci([1, 2, 3, 4, 5], "median")
    assert _median_ranks(6) == (1, 6)


def test_one_sample_ci_narrows_as_seeds_are_added():
    rng = np.random.default_rng(0)
    sample = rng.normal(100, 10, size=160)
    widths = [(ci.high - ci.low) for ci in (one_sample_ci(sample[:n]) for n in (10, 40, 160))]
    assert widths[0] > widths[1] > widths[2]
    # The standard error falls as 1/sqrt(n): 16 times the seeds, about a quarter of the width.
    assert widths[2] / widths[0] == pytest.approx(0.25, rel=0.5)


@pytest.mark.parametrize("statistic", ["mean", "median"])
def test_one_sample_ci_wider_at_higher_confidence(statistic):
    ci90 = one_sample_ci(STEPS * 2, statistic, confidence=0.9)
    ci99 = one_sample_ci(STEPS * 2, statistic, confidence=0.99)
    assert ci99.low < ci90.low and ci99.high > ci90.high


@pytest.mark.parametrize("statistic", ["mean", "median"])
def test_one_sample_ci_constant_sample_is_degenerate_not_nan(statistic):
    # Every seed hit the step cap: no spread, and a t-interval's sd would be 0 (NaN ends from SciPy).
    ci = one_sample_ci([300] * 10, statistic)
    assert (ci.estimate, ci.low, ci.high) == (300, 300, 300)


def test_one_sample_ci_mean_notes_a_sample_without_spread():
    assert one_sample_ci([300] * 10).note == "all seeds equal: no spread between seeds"
    # rounding noise is no spread either
    ci = one_sample_ci(np.log(0.7 * np.array([3.0, 7.0, 11.0])) - np.log([3.0, 7.0, 11.0]))
    assert ci.low == ci.high == ci.estimate and "no spread" in ci.note


def test_one_sample_ci_is_cut_to_the_possible_range():
    # nine seeds close the whole gap, one closes a tenth: the symmetric t-interval reaches past 1
    closed = [0.99, 0.995, 0.99, 0.998, 0.994, 0.1, 0.997, 0.996, 0.995, 0.993]
    free, cut = one_sample_ci(closed), one_sample_ci(closed, bounds=(0, 1))
    assert free.high > 1
    assert (cut.estimate, cut.low, cut.high) == (free.estimate, free.low, 1.0)
    assert "cut to the possible range [0, 1]" in cut.note
    # inside the range nothing changes, and no note is added
    assert one_sample_ci(STEPS, bounds=(0, 1000)) == one_sample_ci(STEPS)
    with pytest.raises(ValueError, match=r"'values'.*within bounds=\(0, 1\).*0.1 to 2"):
        one_sample_ci([0.1, 2.0, 0.5], bounds=(0, 1))


def test_one_sample_ci_argument_errors_name_the_argument():
    with pytest.raises(ValueError, match=r"'values'.*at least 2.*got 1"):
        one_sample_ci([1.0])
    with pytest.raises(ValueError, match=r"'values'.*finite.*nan"):
        one_sample_ci([1.0, float("nan"), 2.0])


def test_interval_str():
    assert str(Interval(0.1234, 0.081, 0.1666, 10)) == "0.123 (95% CI 0.081 to 0.167)"
    assert Interval(0.1234, 0.081, 0.1666, 10, 0.9).format(".2f") == "0.12 (90% CI 0.08 to 0.17)"
    assert str(Interval(3, 3, 3, 4, note="all seeds equal")) == "3 (95% CI 3 to 3; all seeds equal)"


# ----------------------------------------------------------------------- paired_difference_ci


def test_paired_difference_is_the_paired_t_interval_by_hand():
    a = np.array([12.0, 15, 11, 14, 13])
    b = np.array([10.0, 12, 10, 11, 12])
    d = a - b  # 2, 3, 1, 3, 1: mean 2, sd 1
    half = stats.t.ppf(0.975, 4) * 1.0 / math.sqrt(5)
    ci = paired_difference_ci(a, b)
    assert (ci.estimate, ci.n, ci.note) == (2.0, 5, "")
    assert ci.low == pytest.approx(2 - half) and ci.high == pytest.approx(2 + half)
    ref = stats.ttest_rel(a, b).confidence_interval()
    assert (ci.low, ci.high) == pytest.approx((ref.low, ref.high))
    assert d.std(ddof=1) == 1.0


def test_paired_relative_difference_is_the_t_interval_of_the_log_ratios_mapped_back():
    rng = np.random.default_rng(0)
    b = rng.uniform(100, 300, size=12)
    a = b * rng.uniform(0.5, 0.9, size=12)
    d = np.log(a / b)
    ref = stats.ttest_1samp(d, 0.0).confidence_interval(0.9)
    ci = paired_difference_ci(a, b, relative=True, confidence=0.9)
    # 1 - (geometric mean of a / b); the log-ratio's high end is the relative difference's low end
    assert ci.estimate == pytest.approx(1 - np.exp(d.mean()))
    assert ci.low == pytest.approx(1 - np.exp(ref.high)) and ci.high == pytest.approx(1 - np.exp(ref.low))
    assert 0 < ci.low < ci.estimate < ci.high < 1 and ci.confidence == 0.9


def test_paired_relative_difference_is_symmetric_on_the_log_scale():
    # A twice B on one seed, half on the other: the geometric mean of the ratios is 1, no difference
    ci = paired_difference_ci([200.0, 50.0], [100.0, 100.0], relative=True)
    assert ci.estimate == pytest.approx(0.0, abs=1e-12)


def test_paired_difference_constant_shift_is_exact():
    b = np.array(STEPS, dtype=float)
    ci = paired_difference_ci(b + 1, b)
    assert (ci.estimate, ci.low, ci.high, ci.n) == (1, 1, 1, 10)
    assert "same amount" in ci.note


def test_paired_relative_difference_of_a_proportional_arm():
    # A takes 30% fewer steps than B on every seed: every log-ratio is log(0.7), no spread.
    b = np.array(STEPS, dtype=float)
    ci = paired_difference_ci(0.7 * b, b, relative=True)
    assert ci.estimate == pytest.approx(0.3)
    assert ci.low == ci.high == ci.estimate
    assert "same ratio" in ci.note


def test_pairing_cancels_what_a_seed_does_to_both_arms():
    # Seeds differ a lot (100 to 300 steps), but A is 10 steps faster on each, give or take 1.
    rng = np.random.default_rng(0)
    b = rng.uniform(100, 300, size=10)
    a = b - 10 + rng.normal(0, 1, size=10)
    paired = paired_difference_ci(a, b)
    assert paired.low < -10 + 2 and paired.high > -10 - 2
    assert paired.low < paired.estimate < paired.high < 0
    # The spread of the difference if the arms were independent: sqrt(var a / n + var b / n).
    unpaired_se = math.sqrt(np.var(a, ddof=1) / 10 + np.var(b, ddof=1) / 10)
    assert paired.high - paired.low < 0.05 * (2 * 1.96 * unpaired_se)


def test_paired_difference_argument_errors():
    with pytest.raises(ValueError, match=r"'a' and 'b'.*len\(a\)=3 and len\(b\)=2"):
        paired_difference_ci([1, 2, 3], [1, 2])
    with pytest.raises(ValueError, match=r"'b'.*finite.*inf"):
        paired_difference_ci([1, 2, 3], [1, 2, float("inf")])
    with pytest.raises(ValueError, match=r"'a'.*finite.*nan"):
        paired_difference_ci([1, float("nan"), 3], [1, 2, 3])
    with pytest.raises(ValueError, match=r"'b'.*positive.*relative.*0\.0"):
        paired_difference_ci([1, 2, 3], [1, 0, 3], relative=True)
    with pytest.raises(ValueError, match=r"'a'.*positive.*relative.*-1\.0"):
        paired_difference_ci([1, -1, 3], [1, 2, 3], relative=True)


# ------------------------------------------------------------------------- time_to_threshold


def test_time_to_threshold_matches_a_hand_computed_kaplan_meier():
    # 5 runs, 2 never reach it within 50 steps. At risk 5, 4, 3 at steps 10, 20, 30, one
    # reaching each time: S = 4/5 = 0.8, 0.8 * 3/4 = 0.6, 0.6 * 2/3 = 0.4 (the 2 censored runs
    # stay at 0.4 to the cap).
    t = time_to_threshold([10, 20, float("nan"), 30, float("nan")], cap=50)
    assert (t.n, t.reached, t.fraction_reached, t.cap) == (5, 3, 0.6, 50)
    assert t.median == 30  # S first <= 0.5 at step 30
    assert t.restricted_mean == pytest.approx(10 * 1 + 10 * 0.8 + 10 * 0.6 + 20 * 0.4)  # 32
    assert str(t) == "median 30 steps, 3/5 reached"


def test_time_to_threshold_censored_runs_are_not_dropped():
    # Dropping the 2 runs that never got there would give median 20 and mean 20.
    kept = time_to_threshold([10, 20, 30, None, None], cap=50)
    assert kept.median == 30 and kept.restricted_mean > 20


def test_time_to_threshold_all_reached_is_the_plain_median_and_mean():
    t = time_to_threshold([40, 10, 30, 20], cap=100)
    # S = 0.75, 0.5, 0.25, 0 at 10, 20, 30, 40: first <= 0.5 at 20; area = the plain mean.
    assert t.median == 20 and t.restricted_mean == pytest.approx(25)
    assert t.fraction_reached == 1 and str(t) == "median 20 steps, 4/4 reached"


def test_time_to_threshold_none_reached():
    t = time_to_threshold([None, None, None], cap=300)
    assert t == TimeToThreshold(n=3, reached=0, fraction_reached=0.0, median=None,
                                restricted_mean=300.0, cap=300)
    assert str(t) == "median not reached (0/3 reached within 300 steps)"


def test_time_to_threshold_median_not_reached_when_more_than_half_censored():
    t = time_to_threshold([50, None, 120, None, None], cap=200)
    # S = 0.8 at 50, 0.8 * 3/4 = 0.6 at 120: never <= 0.5.
    assert t.median is None
    assert t.restricted_mean == pytest.approx(50 * 1 + 70 * 0.8 + 80 * 0.6)
    assert str(t) == "median not reached (2/5 reached within 200 steps)"


def test_time_to_threshold_reached_at_the_cap_counts_as_reached():
    # Reaching it at step 50 is an event; at a tie, events come before censoring.
    t = time_to_threshold([10, 20, 50, None], cap=50)
    assert t.reached == 3 and t.median == 20
    assert t.restricted_mean == pytest.approx(10 * 1 + 10 * 0.75 + 30 * 0.5)


def test_time_to_threshold_argument_errors():
    with pytest.raises(ValueError, match=r"'steps'.*\[0, cap=50\].*\[60\.0\]"):
        time_to_threshold([10, 60], cap=50)
    with pytest.raises(ValueError, match=r"'steps'.*\[-1\.0\]"):
        time_to_threshold([-1, 10], cap=50)
    with pytest.raises(ValueError, match=r"'steps'.*at least one run"):
        time_to_threshold([], cap=50)


# --------------------------------------------------------------------------- threshold_level


def test_threshold_level_closes_a_fraction_of_the_gap():
    assert threshold_level(1.0, 0.0, 0.9) == pytest.approx(0.1)
    # Adding problem: predicting the mean scores 1/6; floor 0.01; closing 70% leaves 30% of 1/6 - 0.01.
    assert threshold_level(1 / 6, 0.01, 0.7) == pytest.approx(0.01 + 0.3 * (1 / 6 - 0.01))
    assert threshold_level(2.3, 1.3, 0.5) == pytest.approx(1.8)


# ------------------------------------------------------------------------------- best_rates

#: Half a decade apart: 1e-3, 3.16e-3, 1e-2, ..., 3.16e-1.
GRID = [10 ** (k / 2) for k in range(-6, 0)]


def _scores(**arms) -> pd.DataFrame:
    return pd.DataFrame([{"arm": name, "lr": lr, "score": s}
                         for name, scores in arms.items() for lr, s in zip(GRID, scores, strict=True)])


def test_grid_step_reads_the_nearer_neighbour_of_the_best_rate_in_any_order():
    rates, scores = [0.3, 0.01, 0.1, 0.03, 1.0], [0.5, 0.9, 0.4, 0.45, np.nan]
    assert grid_step(rates, scores) == pytest.approx(0.05 / 0.4)  # 0.03's 0.45, not 0.3's 0.5
    assert grid_step(rates, scores, relative=False) == pytest.approx(0.05)
    # a diverged neighbour is not a step: only the finite one counts
    assert grid_step([0.01, 0.03, 0.1], [np.inf, 1.0, 1.5]) == pytest.approx(0.5)
    assert grid_step([0.01, 0.03], [np.nan, 1.0]) == math.inf
    assert grid_step([], []) == math.inf  # an arm nothing was tuned for
    # the best rate as best_rates picks it: on a tie, the smaller rate
    assert grid_step([0.01, 0.03, 0.1], [2.0, 1.0, 1.0]) == 0.0


def test_grid_resolution_takes_the_coarser_finite_step_in_words():
    said = grid_resolution({"LN": 0.03, "no norm": 0.08, "BN": math.inf}, lambda arm, step: f"{arm}'s loss by {step:.0%}")
    assert said == (0.08, "one step of the tuning grid (a neighbouring rate moves no norm's loss by 8%)")
    assert grid_resolution({"LN": math.inf}, lambda arm, step: "") is None


def test_grid_step_rejects_mismatched_shapes():
    with pytest.raises(ValueError, match=r"grid_step\(\): arguments 'rates' and 'scores' must be 1-D and of one length, got shapes \(2,\) and \(3,\)"):
        grid_step([0.1, 0.3], [1.0, 2.0, 3.0])


def test_best_rates_interior_edge_and_did_not_learn():
    scores = _scores(inside=[0.9, 0.5, 0.2, 0.1, 0.3, 0.8],
                     edge=[0.9, 0.7, 0.5, 0.3, 0.2, 0.1],
                     stuck=[1.0, 1.0, 0.99, 1.0, 1.0, float("nan")])
    out = best_rates(scores, learned_below=0.95)
    assert list(out.columns) == ["arm", "best_lr", "best_score", "on_edge", "learned", "note"]
    rows = out.set_index("arm")
    assert rows.loc["inside"].tolist() == [GRID[3], 0.1, False, True, ""]
    assert rows.loc["edge"].tolist() == [GRID[5], 0.1, True, True, "best rate on the grid's edge"]
    assert rows.loc["stuck"].tolist() == [GRID[2], 0.99, False, False,
                                          "did not learn at any rate in the grid"]


def test_best_rates_a_diverged_rate_never_wins_and_columns_can_be_renamed():
    scores = _scores(a=[0.9, 0.5, 0.2, float("nan"), 0.3, 0.8]).rename(
        columns={"arm": "variant", "lr": "rate", "score": "median_loss"})
    out = best_rates(scores, arm="variant", lr="rate", score="median_loss", learned_below=1)
    assert out["variant"].tolist() == ["a"] and out["best_lr"].tolist() == [GRID[2]]


def test_best_rates_accepts_an_exact_half_decade_grid():
    # sqrt(10) apart up to rounding, in any row order.
    scores = pd.DataFrame({"arm": "a", "lr": np.sqrt(10) ** np.arange(-8, -3)[::-1],
                           "score": [4, 3, 2, 3, 4]})
    assert best_rates(scores, learned_below=10)["best_lr"].tolist() == [pytest.approx(1e-3)]


def test_best_rates_rejects_a_coarse_or_short_grid():
    # the familiar 1-3-10 grid: its best rate, inside it
    one_three = pd.DataFrame({"arm": "a", "lr": [1e-3, 3e-3, 1e-2, 3e-2, 1e-1],
                              "score": [5, 4, 3, 4, 5]})
    assert best_rates(one_three, learned_below=10)["best_lr"].tolist() == [pytest.approx(1e-2)]


def test_best_rates_rejects_missing_columns_and_repeated_rates():
    twice = pd.concat([_scores(a=[5, 4, 3, 2, 3, 4])] * 2)
    with pytest.raises(ValueError, match=r"'scores'.*one row per \(arm, lr\).*more than once"):
        best_rates(twice, learned_below=10)


# ---------------------------------------------------------------------------------- verdict


def test_verdict_relative_three_cases():
    ln, none = "LayerNorm", "no norm"
    assert (said_by(Interval(0.31, 0.18, 0.41, 10), a=ln, b=none)
            == "LayerNorm needs 31% fewer steps than no norm (95% CI 18% to 41%)")
    assert (said_by(Interval(0.12, -0.05, 0.30, 10), a=ln, b=none)
            == "no difference detectable with 10 seeds: LayerNorm vs no norm, -12% (95% CI -30% to 5%)")
    assert (said_by(Interval(-0.12, -0.20, -0.04, 10), a=ln, b=none)
            == "the opposite of the claim: LayerNorm needs 12% more steps than no norm (95% CI 4% to 20%)")


def test_verdict_claim_more_and_options():
    up = Interval(-0.25, -0.40, -0.10, 10, confidence=0.9)
    assert (said_by(up, a="A", b="B", quantity="loss spikes", claim="more")
            == "A needs 25% more loss spikes than B (90% CI 10% to 40%)")
    down = Interval(0.25, 0.10, 0.40, 12)
    assert (said_by(down, a="A", b="B", claim="more")
            == "the opposite of the claim: A needs 25% fewer steps than B (95% CI 10% to 40%)")
    assert said_by(Interval(0.0, -0.1, 0.1, 12), a="A", b="B", n_seeds=20).startswith(
        "no difference detectable with 20 seeds: A vs B, +0% ")


def test_verdict_absolute_three_cases():
    # statistic(a - b): positive when A needs more.
    assert (said_by(Interval(-48.41, -60.42, -39.17, 10), a="A", b="B", relative=False)
            == "A needs 48.4 fewer steps than B (95% CI 39.2 to 60.4)")
    assert (said_by(Interval(3.21, -1.5, 8.0, 10), a="A", b="B", relative=False)
            == "no difference detectable with 10 seeds: A vs B, +3.21 (95% CI -1.5 to 8)")
    assert (said_by(Interval(12.0, 4.0, 20.0, 10), a="A", b="B", relative=False)
            == "the opposite of the claim: A needs 12 more steps than B (95% CI 4 to 20)")


def test_verdict_follows_a_real_paired_interval():
    b = np.array(STEPS, dtype=float)
    a = 0.7 * b + np.random.default_rng(0).normal(0, 3, size=10)
    words = said_by(paired_difference_ci(a, b, relative=True), a="LN", b="none")
    assert words.startswith("LN needs 3") and "fewer steps than none (95% CI" in words


def test_verdict_argument_errors():
    with pytest.raises(ValueError, match=r"'claim'.*'fewer', 'more' or None.*'faster'"):
        said_by(Interval(0.3, 0.1, 0.5, 10), a="A", b="B", claim="faster")


def test_verdict_says_it_in_the_words_it_is_given():
    lower = Interval(estimate=0.4, low=0.25, high=0.5, n=10)  # A's loss 40% below B's
    assert said_by(lower, a="LN", b="no norm", quantity="final loss", verb="ends with",
                   words=("lower", "higher")) == "LN ends with 40% lower final loss than no norm (95% CI 25% to 50%)"


def test_verdict_without_a_claim_says_only_which_way_and_formats_as_asked():
    above = Interval(estimate=0.6, low=0.1, high=1.3, n=20)  # absolute: A has more
    assert said_by(above, a="BN", b="LN", quantity="accuracy", claim=None, relative=False, verb="has",
                   words=("points lower", "points higher"), fmt=".1f") == \
        "BN has 0.6 points higher accuracy than LN (95% CI 0.1 to 1.3)"
    assert said_by(above, a="BN", b="LN", claim="fewer", relative=False, fmt=".2f").startswith(
        "the opposite of the claim: BN needs 0.60 more steps")


# ----------------------------------------------------------------- the same, resolution, fragile


def test_the_same_only_when_the_whole_interval_lies_inside_the_margin():
    inside = Interval(-0.02, -0.06, 0.03, 10)  # A needs 2% more steps than B, -3% to +6% in "more" terms
    assert said_by(inside, a="A", b="B", margin=0.1) == "the same steps within ±10%: A vs B, +2% (95% CI -3% to 6%)"
    # without a margin the same interval is only "no difference detectable"
    assert said_by(inside, a="A", b="B").startswith("no difference detectable with 10 seeds")
    # an interval that holds 0 but reaches beyond the margin
    wide = Interval(0.02, -0.05, 0.12, 10)
    assert said_by(wide, a="A", b="B", margin=0.1) == (
        "no difference detectable with 10 seeds: A vs B, -2% (95% CI -12% to 5%); not within the ±10% margin")
    # a detected difference wholly beyond the margin, and one that is not
    assert said_by(Interval(0.3, 0.2, 0.4, 10), a="A", b="B", margin=0.1).endswith("; beyond the ±10% margin")
    assert said_by(Interval(0.1, 0.05, 0.15, 10), a="A", b="B", margin=0.1).endswith("; not within the ±10% margin")
    # an interval touching the margin is not inside it
    assert not said_by(Interval(0.0, -0.1, 0.05, 10), a="A", b="B", margin=0.1).startswith("the same")
    # absolute: the margin in the interval's units
    assert said_by(Interval(0.2, -0.5, 0.8, 10), a="A", b="B", relative=False, margin=1.0, fmt=".1f",
                   quantity="accuracy", claim=None).startswith("the same accuracy within ±1.0: A vs B, +0.2 ")
    assert EQUIVALENCE_MARGIN == 0.1


def test_a_difference_below_the_resolution_is_flagged():
    small = Interval(0.04, 0.02, 0.06, 10)  # A 4% faster; one evaluation is 10% of B's steps
    flag = "smaller than the evaluation interval (5 steps)"
    assert said_by(small, a="A", b="B", resolution=(0.1, "the evaluation interval (5 steps)")).endswith(flag)
    assert flag not in said_by(Interval(0.3, 0.2, 0.4, 10), a="A", b="B", resolution=(0.1, "x"))
    # no difference detected: nothing to flag
    assert "smaller" not in said_by(Interval(0.04, -0.02, 0.06, 10), a="A", b="B", resolution=(0.1, "x"))


def test_an_interval_end_that_rounds_to_0_is_flagged_fragile_with_its_seed_count():
    assert said_by(Interval(0.01, 0.004, 0.02, 10), a="A", b="B") == (
        "A needs 1% fewer steps than B (95% CI 0% to 2%); fragile: an interval end rounds to 0 with 10 seeds")
    assert said_by(Interval(-0.01, -0.02, -0.004, 8), a="A", b="B").endswith("rounds to 0 with 8 seeds")
    assert "fragile" not in said_by(Interval(0.1, 0.006, 0.2, 10), a="A", b="B")  # 1%
    assert said_by(Interval(0.5, 0.04, 1.0, 10), a="A", b="B", relative=False, fmt=".1f").endswith(
        "fragile: an interval end rounds to 0 with 10 seeds")


def test_the_record_holds_the_interval_and_its_words_follow_it():
    for interval in (Interval(0.3, 0.2, 0.4, 10), Interval(-0.3, -0.4, -0.2, 10), Interval(0.0, -0.1, 0.1, 10),
                     Interval(0.01, -0.03, 0.05, 10), Interval(0.01, 0.004, 0.02, 10)):
        for margin in (None, 0.1):
            record = verdict(interval, a="A", b="B", margin=margin, resolution=(0.05, "x"))
            assert (record.estimate, record.low, record.high, record.n) == (interval.estimate, interval.low,
                                                                           interval.high, interval.n)
            inside = margin is not None and -margin < interval.low and interval.high < margin
            assert record.same == inside == record.words.startswith("the same ")
            if not inside and (interval.low > 0 or interval.high < 0):
                assert record.favoured == ("A" if interval.low > 0 else "B")
            elif not inside:
                assert record.favoured is None and record.words.startswith("no difference detectable")


# ----------------------------------------------------------------------------- leave one seed out


def _reference_rests_on(d, confidence=0.95):
    """The positions whose omission puts 0 inside SciPy's t-interval of the mean of the others."""
    out = []
    for i in range(len(d)):
        ci = stats.ttest_1samp(np.delete(d, i), 0.0).confidence_interval(confidence)
        if ci.low <= 0 <= ci.high:
            out.append(i)
    return out


def test_a_difference_one_seed_decides_is_caught_and_named():
    # a small, noisy difference, detected on all ten seeds; seed 7's gap (0.9) carries it
    b = np.array([10.0, 11, 12, 13, 14, 15, 16, 17, 18, 19])
    gap = np.array([-0.1, 1.5, 0.3, 0.2, 0.2, 0.0, 0.0, 0.9, 0.6, 1.3])
    seeds = [0, 1, 2, 3, 4, 5, 6, 7, 8, 9]
    ci = paired_difference_ci(b + gap, b, seeds=seeds)
    assert ci.low > 0  # detected with every seed
    without = stats.ttest_1samp(np.delete(gap, 7), 0.0).confidence_interval()
    assert without.low <= 0 <= without.high  # and not without seed 7
    assert ci.rests_on == ("seed 7",)
    words = said_by(ci, a="A", b="B", relative=False, claim="more")
    assert words.startswith("A needs ") and " more steps than B (95% CI " in words
    assert words.endswith("; rests on one seed: without seed 7 the interval includes 0")


def test_a_robust_difference_is_not_flagged():
    b = np.array([10.0, 11, 12, 13, 14, 15, 16, 17, 18, 19])
    gap = np.array([2.0, 2.3, 1.8, 2.1, 1.9, 2.2, 2.0, 2.4, 1.7, 2.1])
    ci = paired_difference_ci(b + gap, b, seeds=range(10))
    assert ci.low > 0 and ci.rests_on == ()
    assert _reference_rests_on(gap) == []
    assert "rests on" not in said_by(ci, a="A", b="B", relative=False, claim="more")


def test_nothing_detected_is_never_flagged_as_resting_on_a_seed():
    b = np.array([10.0, 11, 12, 13, 14, 15])
    ci = paired_difference_ci(b + np.array([1.0, -1, 2, -2, 0.5, -0.5]), b, seeds=range(6))
    assert ci.low < 0 < ci.high and ci.rests_on == ()
    assert said_by(ci, a="A", b="B", relative=False).startswith("no difference detectable")


@pytest.mark.parametrize("seed", range(12))
def test_leave_one_out_agrees_with_scipy_on_each_sub_sample(seed):
    rng = np.random.default_rng(seed)
    n = int(rng.integers(3, 15))
    b = rng.lognormal(5, 0.3, n)
    a = b * np.exp(rng.normal(-0.2, 0.25, n))  # relative: the log-ratios carry the interval
    ci = paired_difference_ci(a, b, relative=True, seeds=[f"s{i}" for i in range(n)])
    d = np.log(a) - np.log(b)
    expected = _reference_rests_on(d) if (ci.low > 0 or ci.high < 0) else []
    assert ci.rests_on == tuple(f"seed s{i}" for i in expected)


def test_several_deciding_seeds_are_all_named_and_pairs_without_seeds_by_position():
    # a borderline difference on 5 pairs: leaving out any of three of them puts 0 inside
    b = np.full(5, 10.0)
    gap = np.array([1.5, 0.7, 1.2, 0.6, 0.2])
    ci = paired_difference_ci(b + gap, b)
    assert ci.low > 0
    expected = _reference_rests_on(gap)
    assert expected == [1, 2, 3]
    assert ci.rests_on == tuple(f"pair {i + 1}" for i in expected)
    words = said_by(ci, a="A", b="B", relative=False, claim="more")
    listed = ", ".join(str(i + 1) for i in expected[:-1]) + f" or {expected[-1] + 1}"
    assert words.endswith(f"; rests on single seeds: without any one of pairs {listed} the interval includes 0")


def test_leave_one_out_needs_three_pairs_and_a_spread():
    assert paired_difference_ci([3.0, 4.0], [1.0, 1.5], seeds=[1, 2]).rests_on == ()  # one left: no interval
    same = paired_difference_ci([3.0, 4.0, 5.0], [1.0, 2.0, 3.0], seeds=[1, 2, 3])  # every pair differs by 2
    assert same.low == same.high == 2.0 and same.rests_on == ()


def test_seed_labels_print_as_integers():
    b = np.array([10.0, 11, 12, 13, 14, 15, 16, 17, 18, 19])
    gap = np.array([-0.1, 1.5, 0.3, 0.2, 0.2, 0.0, 0.0, 0.9, 0.6, 1.3])
    ci = paired_difference_ci(b + gap, b, seeds=pd.Index(np.arange(10, 20, dtype=np.float64)))
    assert ci.rests_on == ("seed 17",)


@pytest.mark.parametrize("seeds, match", [
    ([1, 2], "must name each of the 3 pairs once"),
])
def test_paired_difference_ci_checks_its_seeds(seeds, match):
    with pytest.raises(ValueError, match=f"argument 'seeds' {match}"):
        paired_difference_ci([1.0, 2.0, 3.0], [1.5, 2.5, 3.5], seeds=seeds)


def test_the_flag_sits_beside_the_other_flags_and_reading_still_reads_the_words():  # the record, not the words
    ci = Interval(-0.02, -0.03, -0.004, 10, rests_on=("seed 3",))
    words = said_by(ci, a="LN -> act", b="no norm", quantity="final loss", verb="ends with",
                    words=("lower", "higher"), resolution=(0.05, "one step of the tuning grid"))
    assert words == ("the opposite of the claim: LN -> act ends with 2% higher final loss than no norm "
                     "(95% CI 0% to 3%); smaller than one step of the tuning grid; fragile: an interval end rounds "
                     "to 0 with 10 seeds; rests on one seed: without seed 3 the interval includes 0")
    assert verdict(ci, a="LN -> act", b="no norm", resolution=(0.05, "x")).favoured == "no norm"
    margin = said_by(Interval(0.3, 0.2, 0.4, 10, rests_on=("seed 1", "seed 4")), a="A", b="B", margin=0.1)
    assert margin.endswith("; beyond the ±10% margin; rests on single seeds: without any one of seeds 1 or 4 "
                           "the interval includes 0")
    record = verdict(Interval(0.3, 0.2, 0.4, 10, rests_on=("seed 1", "seed 4")), a="A", b="B", margin=0.1)
    assert (record.favoured, record.same, record.beyond_margin) == ("A", False, True)
    # labels of no one kind are listed as they are
    assert said_by(Interval(0.3, 0.2, 0.4, 10, rests_on=("A7", "seed 2")), a="A", b="B").endswith(
        "; rests on single seeds: without any one of A7 or seed 2 the interval includes 0")
    # the same within the margin, or nothing detected: no leave-one-out flag, whatever rests_on says
    assert "rests on" not in said_by(Interval(0.02, -0.03, 0.05, 10, rests_on=("seed 1",)), a="A", b="B")
    same = said_by(Interval(0.03, 0.01, 0.05, 10, rests_on=("seed 1",)), a="A", b="B", margin=0.1)
    assert same.startswith("the same steps within ±10%") and "rests on" not in same


# ----------------------------------------------------------------------------- best_rate_check

RATE_GRID = (0.003, 0.01, 0.03, 0.1, 0.3)


def _runs(report_stuck=(), best=0.1, pilot_stuck=None, arm="relu, act -> LN", n_report=10, stuck_value=1.0):
    """Planted runs of one arm: 3 pilot seeds at every rate of :data:`RATE_GRID`, the report's ``n_report``
    seeds at ``best``; a run is stuck (``stuck_value``, at the learned-nothing level 1) where
    ``report_stuck`` names its seed, or, in the pilot, for the first ``pilot_stuck[rate]`` seeds."""
    pilot_stuck = {0.3: 3} if pilot_stuck is None else pilot_stuck
    rows = []
    for lr in RATE_GRID:
        for i, seed in enumerate((100, 101, 102)):
            rows.append({"arm": arm, "stage": "pilot", "lr": lr, "seed": seed,
                         "value": stuck_value if i < pilot_stuck.get(lr, 0) else 0.3})
    for seed in range(n_report):
        rows.append({"arm": arm, "stage": "report", "lr": best, "seed": seed,
                     "value": stuck_value if seed in report_stuck else 0.3})
    return pd.DataFrame(rows)


def test_a_planted_stuck_report_seed_fires_the_check():
    # as in the placement experiment's ReLU act -> LN: best at 0.1, every pilot seed stuck at 0.3, none at 0.03
    table = best_rate_check(_runs(report_stuck={7}), learned_below=1.0)
    row = table.iloc[0]
    assert row["suspect"] and row["stuck"] == 1 and row["seeds"] == 10
    assert row["neighbours"] == (0.03, 0.3) and row["pilot_stuck"] == (0, 3) and row["pilot_runs"] == (3, 3)
    assert row["words"] == ("does not hold: 1 of 10 report seeds learned nothing at 0.1; of the pilot runs at the "
                            "neighbouring rates, 0 of 3 did at 0.03 and 3 of 3 at 0.3")


def test_no_stuck_report_seed_or_no_more_than_a_neighbour_holds():
    clean = best_rate_check(_runs(), learned_below=1.0).iloc[0]
    assert not clean["suspect"] and clean["stuck"] == 0
    assert clean["words"].startswith("holds: 0 of 10 report seeds learned nothing at 0.1; ")
    # 1 of 10 stuck, against 1 of 3 at each neighbour: no more than their share
    even = best_rate_check(_runs(report_stuck={2}, pilot_stuck={0.03: 1, 0.3: 1}), learned_below=1.0).iloc[0]
    assert not even["suspect"] and even["stuck"] == 1
    assert even["words"] == ("no worse than its neighbours: 1 of 10 report seeds learned nothing at 0.1; of the pilot "
                             "runs at the neighbouring rates, 1 of 3 did at 0.03 and 1 of 3 at 0.3")
    # 4 of 10 against 1 of 3 at the better neighbour: more
    more = best_rate_check(_runs(report_stuck={0, 1, 2, 3}, pilot_stuck={0.03: 1, 0.3: 3}), learned_below=1.0)
    assert more["suspect"].iloc[0]


def test_stuck_is_the_learned_nothing_definition_and_a_diverged_run_counts():
    # learned_below is strict: a value at it is stuck, just below it is not
    assert best_rate_check(_runs(report_stuck={1}, stuck_value=1.0), learned_below=1.0)["stuck"].iloc[0] == 1
    assert best_rate_check(_runs(report_stuck={1}, stuck_value=0.999), learned_below=1.0)["stuck"].iloc[0] == 0
    diverged = best_rate_check(_runs(report_stuck={1, 2}, stuck_value=math.nan), learned_below=1.0).iloc[0]
    assert diverged["stuck"] == 2 and diverged["suspect"]
    steps = best_rate_check(_runs(report_stuck={1}, stuck_value=math.nan), learned_below=400,
                            stuck="did not reach the threshold before step 400")
    assert steps["words"].iloc[0].startswith("does not hold: 1 of 10 report seeds did not reach the threshold "
                                             "before step 400 at 0.1")


def test_a_best_rate_on_the_grid_edge_has_one_neighbour_and_arms_keep_their_order():
    runs = pd.concat([_runs(best=0.3, pilot_stuck={}, arm="b"), _runs(best=0.003, pilot_stuck={}, arm="a",
                                                                      report_stuck={0})])
    table = best_rate_check(runs, learned_below=1.0)
    assert table["arm"].tolist() == ["b", "a"]
    assert table["neighbours"].tolist() == [(0.1,), (0.01,)]
    assert table["words"].iloc[1] == ("does not hold: 1 of 10 report seeds learned nothing at 0.003; of the pilot "
                                      "runs at the neighbouring rate, 0 of 3 did at 0.01")


def test_a_rate_read_back_from_a_table_matches_its_grid_rate():
    runs = _runs(best=0.1)
    runs.loc[runs["stage"] == "report", "lr"] = 0.1 * 3 / 3 + 1e-17  # last-bit noise of a CSV round trip
    runs.loc[runs["stage"] == "pilot", "lr"] = runs.loc[runs["stage"] == "pilot", "lr"] * (1 + 1e-12)
    assert best_rate_check(runs, learned_below=1.0)["neighbours"].iloc[0] == pytest.approx((0.03, 0.3))


@pytest.mark.parametrize("change, match", [
    (lambda r: r.assign(stage=r["stage"].replace("report", "final")), "must have 'stage' 'pilot' or 'report' in every row, got \\['final'\\]"),
    (lambda r: pd.concat([r, r.tail(1)]), "must hold one row per run"),
    (lambda r: r.assign(lr=np.where((r["stage"] == "report") & (r["seed"] == 0), 0.03, r["lr"])),
     "must hold each arm's report runs at one rate \\(its best\\); arm 'relu, act -> LN' has them at \\[0.03, 0.1\\]"),
    (lambda r: r.assign(lr=np.where(r["stage"] == "report", 0.2, r["lr"])), "must hold each arm's report runs at a rate of its pilot grid; .* reports at 0.2"),
    (lambda r: r[r["stage"] == "report"], "must hold pilot and report runs of every arm; arm 'relu, act -> LN' has 0 pilot"),
    (lambda r: r[(r["stage"] == "report") | (r["lr"] == 0.1)], "must hold pilot runs at more than one rate"),
])
def test_best_rate_check_rejects_bad_runs_by_name(change, match):
    with pytest.raises(ValueError, match=f"best_rate_check\\(\\): argument 'runs' {match}"):
        best_rate_check(change(_runs()), learned_below=1.0)


def test_holm_steps_down_as_computed_by_hand():
    # m = 5, alpha 0.05: thresholds 0.01, 0.0125, 0.0167, 0.025, 0.05 for the sorted p-values
    p = [0.04, 0.001, 0.012, 0.03, 0.011]
    # sorted: 0.001 <= 0.01 yes; 0.011 <= 0.0125 yes; 0.012 <= 0.0167 yes; 0.03 > 0.025: stop (0.04 kept too)
    assert holm(p).tolist() == [False, True, True, False, True]
    assert holm([0.04, 0.001, 0.012, 0.02, 0.011]).tolist() == [True] * 5  # 0.02 <= 0.025, 0.04 <= 0.05
    assert holm([0.2, 0.001]).tolist() == [False, True] and holm([]).tolist() == []
    assert holm([0.011, 0.011], alpha=0.02).tolist() == [False, False]  # 0.011 > 0.02 / 2
    # never more rejections than Bonferroni's alpha/m loses, never more than uncorrected alpha keeps
    rng = np.random.default_rng(0)
    for _ in range(200):
        q = rng.uniform(0, 0.1, rng.integers(1, 12))
        assert ((q <= 0.05 / q.size) <= holm(q)).all() and (holm(q) <= (q <= 0.05)).all()
