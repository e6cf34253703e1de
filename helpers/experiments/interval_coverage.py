"""Do the set's 95% intervals cover the truth 95% of the time? A simulation at the seed counts it uses.

Every paired verdict rests on a 95% interval over 8 to 20 seeds
(:func:`helpers.evidence.statistics.paired_difference_ci`). "95%" is a promise about repetitions: over
many repetitions of the whole experiment, 95% of such intervals should contain the true difference.
At 10 seeds from skewed, capped samples an interval method may keep that promise or not, and only a
simulation tells: draw many paired samples from a distribution whose true difference is known,
compute each method's interval on each, and count how often it contains the truth (its *coverage*).

The stored experiment ``interval_coverage`` does that for :data:`SCENARIOS`, distributions shaped like
the stored experiments' per-seed values (each says which, and why), at :data:`SIZES` seeds, for
:data:`METHODS`:

- ``"t"``: Student's t on the per-seed differences (absolute) or on the per-seed log-ratios
  (relative), the method :func:`~helpers.evidence.statistics.paired_difference_ci` uses
  (:data:`helpers.evidence.statistics.INTERVAL_METHOD`). Its relative estimate is one minus the
  geometric mean of the per-seed ratios ``a / b``; its truth is ``1 - exp(E[log(a / b)])``.
- ``"BCa"``: SciPy's BCa bootstrap (9,999 resamples) of the mean difference or of
  ``1 - mean(a) / mean(b)``, the method the set used before.
- ``"Fieller"`` (relative only): the t-interval for a ratio of means (Fieller 1954): every ``r`` for
  which the per-seed ``a - r b`` have a t-interval that holds 0.
- ``"studentized bootstrap"``: the bootstrap-t (2,000 resamples) of the mean difference or of the
  ratio of means, each resample divided by its own standard error (the delta method's for a ratio).

The last three estimate ``E[a - b]`` or ``1 - E[a] / E[b]``. Each method is scored against its own
truth, computed from 4 million draws of the scenario. In a capped scenario the draws are capped before
the truth is taken, so the truth is the *capped* ratio (a run stopped at the cap counts as the cap, as
in the stored verdicts), not the ratio that uncapped runs would give: where the slower arm has capped
runs, that is a bound on the uncapped one (the verdicts then say "at least"). Each scenario has a ``use``: ``"used"``, like
comparisons the verdicts make, where the method in use must reach :data:`REQUIRED`; ``"stress"``,
beyond what any method can do at these seed counts (its description says why), which shows where
the intervals stop working; ``"not used"``, a comparison the set no longer makes, kept to show why.

Why these scenarios. Pooled over the stored comparisons (each comparison's per-seed values
standardized, then pooled), the per-seed log-ratios have skewness -0.07 and excess kurtosis 0.10, and
the absolute differences (``batch_size``, accuracy points) 0.23 and -0.69: nearly symmetric. But single
comparisons are skewed (a slow or diverged seed), spreads reach a log-sd of 1.7 (``lstm_adding``'s LSTM
final losses), and up to half of an arm's runs sit at the step cap. The scenarios span those.
"""

from __future__ import annotations

import functools
import inspect
import math
import warnings
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np
import pandas as pd
from scipy import stats

from helpers.evidence import runner
from helpers.evidence.statistics import INTERVAL_METHOD, paired_difference_ci

#: The interval methods compared, in the order the tables show them.
METHODS = ("t", "BCa", "Fieller", "studentized bootstrap")

#: The seed counts the stored experiments report on: 10 (most), 8 (``placement_tuned``'s converged
#: seeds), 17 (``drift``'s seeds where neither run diverged) and 20.
SIZES = (8, 10, 17, 20)

#: Coverage a method must reach in every scenario marked "used" (a 95% interval may fall a
#: little short at 8 seeds; 93% is within what 2,000 repetitions can tell from 95%).
REQUIRED = 0.93

#: The repetitions per seed of the experiment (4 seeds: 2,000 per scenario and size).
REPS = 500

CONFIDENCE = 0.95
BCA_RESAMPLES = 9999
STUDENTIZED_RESAMPLES = 2000
TRUTH_DRAWS = 4_000_000


@dataclass(frozen=True)
class Scenario:
    """One distribution of paired per-seed values.

    Args:
        relative: whether the verdicts on such values are relative (steps, losses) or absolute
            (accuracy points).
        draw: ``draw(rng, size) -> (a, b)``, arrays of ``size`` paired values.
        like: which stored comparisons it stands for, and how its numbers were chosen.
        use: ``"used"``, ``"stress"`` or ``"not used"`` (see the module's docstring).
    """

    relative: bool
    draw: Callable[[np.random.Generator, int], tuple[np.ndarray, np.ndarray]]
    like: str
    use: str = "used"


def _normals(rng: np.random.Generator, size, rho: float) -> tuple[np.ndarray, np.ndarray]:
    """Two standard normal arrays of shape ``size`` with correlation ``rho`` (a seed's pairing)."""
    zb = rng.standard_normal(size)
    return rho * zb + math.sqrt(1 - rho * rho) * rng.standard_normal(size), zb


def _lognormal(median_a: float, median_b: float, spread_a: float, spread_b: float, rho: float, *,
               grid: float | None = None, cap: float | None = None):
    """Lognormal pairs (log-sd ``spread``), rounded up to multiples of ``grid`` (evaluations every
    ``grid`` steps) and capped at ``cap`` (runs that never got there, counted at the cap)."""
    def draw(rng, size):
        za, zb = _normals(rng, size, rho)
        a, b = median_a * np.exp(spread_a * za), median_b * np.exp(spread_b * zb)
        if grid is not None:
            a, b = np.ceil(a / grid) * grid, np.ceil(b / grid) * grid
        if cap is not None:
            a, b = np.minimum(a, cap), np.minimum(b, cap)
        return a, b
    return draw


def _failing(fail_a: float, fail_b: float, *, median_a: float, median_b: float, spread: float, failed: float,
             rho: float = 0.3):
    """Lognormal losses, each seed failing (counted at ``failed``, the learned-nothing level) with
    chance ``fail_a`` / ``fail_b``."""
    def draw(rng, size):
        za, zb = _normals(rng, size, rho)
        a, b = median_a * np.exp(spread * za), median_b * np.exp(spread * zb)
        return (np.where(rng.random(size) < fail_a, failed, a), np.where(rng.random(size) < fail_b, failed, b))
    return draw


def _accuracy(error_a: float, error_b: float, spread_a: float, spread_b: float, rho: float, *,
              chance: float | None = None):
    """Test accuracy in points, 100 minus a lognormal error, floored at ``chance``."""
    def draw(rng, size):
        za, zb = _normals(rng, size, rho)
        a, b = 100 - error_a * np.exp(spread_a * za), 100 - error_b * np.exp(spread_b * zb)
        if chance is not None:
            a, b = np.maximum(a, chance), np.maximum(b, chance)
        return a, b
    return draw


def _skewed_difference(shift: float, scale: float, spread: float):
    """Accuracy points whose per-seed difference is ``shift`` plus a centred lognormal."""
    def draw(rng, size):
        b = 80 + 5 * rng.standard_normal(size)
        noise = np.exp(spread * rng.standard_normal(size)) - math.exp(spread * spread / 2)
        return b + shift + scale * noise, b
    return draw


def _above_floor(floor: float, excess_a: float, excess_b: float, spread: float, rho: float):
    """Losses just above a floor: ``floor`` plus a lognormal excess, compared as raw losses."""
    def draw(rng, size):
        za, zb = _normals(rng, size, rho)
        return floor + excess_a * np.exp(spread * za), floor + excess_b * np.exp(spread * zb)
    return draw


def _rare_failure(rate: float, *, median: float, spread: float, cap: float):
    """Steps: both arms alike, but A's run fails (ends at the cap) at a rate of ``rate`` per seed."""
    def draw(rng, size):
        za, zb = _normals(rng, size, 0.5)
        a, b = median * np.exp(spread * za), median * np.exp(spread * zb)
        return np.where(rng.random(size) < rate, cap, a), b
    return draw


#: The scenarios, by name. Spreads are log-standard deviations; correlations are between the arms of
#: a seed (on the log scale).
SCENARIOS: dict[str, Scenario] = {
    "steps, lognormal, spread 0.3": Scenario(True, _lognormal(70, 100, 0.3, 0.3, 0.3), (
        "steps to a threshold, A 30% faster: rnn_regimes at T 10, small_transformer, step_times (log-sd 0.1 to "
        "0.6)")),
    "losses, lognormal, spread 1": Scenario(True, _lognormal(0.5, 1.0, 1.0, 1.0, 0.3), (
        "final losses, A half of B: rnn_mechanism and rnn_regimes (log-sd up to 1.7)")),
    "losses, spreads 0.2 and 1.7": Scenario(True, _lognormal(0.3, 1.0, 0.2, 1.7, 0.0), (
        "one arm tight, the other spread over decades: lstm_adding's final losses (log-sd 0.9 and 1.7), "
        "rnn_mechanism's noise at lr 0.003 (0.02 and 1.7)")),
    "steps, a quarter of B capped": Scenario(True, _lognormal(300, 400, 0.6, 0.6, 0.5, grid=10, cap=600), (
        "steps on an evaluation grid of 10, about a quarter of B's runs at the cap: rnn_regimes at T 50")),
    "steps, half of B capped": Scenario(True, _lognormal(150, 1000, 0.4, 0.7, 0.2, grid=50, cap=1000), (
        "steps on an evaluation grid of 50, half of B's runs at the cap: lstm_adding, rnn_mechanism")),
    "losses, failed seeds": Scenario(True, _failing(0.05, 0.15, median_a=0.05, median_b=0.1, spread=0.5,
                                                    failed=1.0), (
        "final losses where a seed may fail and count at the learned-nothing level (5% of A's seeds, 15% of "
        "B's): rnn_regimes, placement_tuned, small_transformer")),
    "accuracy, skewed errors": Scenario(False, _accuracy(20, 24, 0.15, 0.25, 0.5), (
        "test accuracy in points, skewed errors: batch_size (per-seed differences' sd 1.4 to 4.6 points)")),
    "accuracy, at a chance floor": Scenario(False, _accuracy(30, 45, 0.3, 0.3, 0.5, chance=50), (
        "test accuracy floored at chance (50), a third of B's runs there: batch_size's BatchNorm at batch 2")),
    "stress: differences with skewness 2": Scenario(False, _skewed_difference(2, 3, 0.6), (
        "per-seed differences with skewness 2.3, ten times the stored absolute differences' 0.23 (pooled)"),
        use="stress"),
    "stress: a rare failure in one arm": Scenario(True, _rare_failure(0.1, median=50, spread=0.2, cap=400), (
        "arms alike but for one in ten of A's runs failing at the cap, 8 times the typical time, as one "
        "Post-LN seed did in small_transformer: in a third of the samples of 10 no failure shows, and no "
        "interval over those seeds can allow for it"), use="stress"),
    "raw losses just above a floor": Scenario(True, _above_floor(1.294, 0.01, 0.02, 1.0, 0.3), (
        "raw losses 0.01 to 0.02 above the copy task's floor of 1.294, the excess spread as "
        "small_transformer's (log-sd 0.4 to 1.8): compared raw, the per-seed log-ratios are skewed by "
        "the excess. small_transformer's final losses are compared on the excess over the floor "
        "instead, a lognormal-like quantity (the scenarios above)"), use="not used"),
}


# ------------------------------------------------------------------ the methods


def _fieller(a: np.ndarray, b: np.ndarray) -> tuple[float, float]:
    """The relative difference ``1 - r`` for every ratio of means ``r`` whose ``a - r b`` has a
    t-interval holding 0: the roots of ``(mean(a) - r mean(b))^2 = t^2 var(mean(a) - r mean(b))``. The
    whole line where ``mean(b)`` is not clearly above 0."""
    n = a.size
    t2 = stats.t.ppf((1 + CONFIDENCE) / 2, n - 1) ** 2
    ma, mb = a.mean(), b.mean()
    (saa, sab), (_, sbb) = np.cov(a, b, ddof=1) / n
    qa, qb, qc = mb * mb - t2 * sbb, -2 * (ma * mb - t2 * sab), ma * ma - t2 * saa
    disc = qb * qb - 4 * qa * qc
    if qa <= 0 or disc < 0:
        return -math.inf, math.inf
    low, high = (-qb - math.sqrt(disc)) / (2 * qa), (-qb + math.sqrt(disc)) / (2 * qa)
    return 1 - high, 1 - low


def _bca(a: np.ndarray, b: np.ndarray, relative: bool, rng: np.random.Generator) -> tuple[float, float]:
    """SciPy's BCa interval of ``mean(a - b)`` or ``1 - mean(a) / mean(b)``, as the set computed it before:
    a point where the resamples do not spread, the percentile interval where BCa is undefined."""
    if relative:
        data, paired = (a, b), True

        def statistic(x, y, axis=-1):
            return 1.0 - np.mean(x, axis=axis) / np.mean(y, axis=axis)
    else:
        data, paired, statistic = (a - b,), False, np.mean
    estimate = float(statistic(*data))
    if not relative and np.ptp(data[0]) == 0:
        return estimate, estimate
    options = dict(paired=paired, confidence_level=CONFIDENCE, vectorized=True)
    # the keyword of the generator: `rng` from SciPy 1.15 on, `random_state` before
    options["rng" if "rng" in inspect.signature(stats.bootstrap).parameters else "random_state"] = rng
    with np.errstate(all="ignore"), warnings.catch_warnings():
        warnings.simplefilter("ignore")  # BCa's NaN where it is undefined is handled below
        result = stats.bootstrap(data, statistic, n_resamples=BCA_RESAMPLES, method="BCa", **options)
        if np.ptp(result.bootstrap_distribution) <= 1e-12 * max(1.0, abs(estimate)):
            return estimate, estimate
        ci = result.confidence_interval
        if not (np.isfinite(ci.low) and np.isfinite(ci.high)):
            ci = stats.bootstrap(data, statistic, n_resamples=0, method="percentile", bootstrap_result=result,
                                 **options).confidence_interval
    return float(ci.low), float(ci.high)


def _studentized(a: np.ndarray, b: np.ndarray, relative: bool, rng: np.random.Generator) -> tuple[float, float]:
    """The bootstrap-t interval of ``mean(a - b)`` or ``1 - mean(a) / mean(b)``: the quantiles of
    ``(estimate* - estimate) / se*`` over resampled seeds, each with its own standard error (for the
    ratio, the delta method's: the sd of ``(a - r b) / mean(b)`` over sqrt(n))."""
    n = a.size
    index = rng.integers(0, n, size=(STUDENTIZED_RESAMPLES, n))

    def estimate_and_se(x, y):
        if relative:
            ratio = x.mean(-1) / y.mean(-1)
            linear = (x - ratio[..., None] * y) / y.mean(-1)[..., None]
            return ratio, linear.std(-1, ddof=1) / math.sqrt(n)
        d = x - y
        return d.mean(-1), d.std(-1, ddof=1) / math.sqrt(n)

    estimate, se = estimate_and_se(a, b)
    if se == 0:
        value = 1 - estimate if relative else estimate
        return float(value), float(value)
    star, se_star = estimate_and_se(a[index], b[index])
    with np.errstate(divide="ignore", invalid="ignore"):
        t_star = (star - estimate) / se_star
    t_star = t_star[np.isfinite(t_star)]
    q_low, q_high = np.quantile(t_star, [(1 - CONFIDENCE) / 2, (1 + CONFIDENCE) / 2])
    low, high = estimate - q_high * se, estimate - q_low * se
    return (float(1 - high), float(1 - low)) if relative else (float(low), float(high))


def interval(method: str, a: np.ndarray, b: np.ndarray, relative: bool, rng: np.random.Generator) -> tuple[float, float]:
    """``method``'s 95% interval for arms ``a`` and ``b`` paired by position (see the module's
    docstring): relative, ``1 - a / b`` (positive when A has less); absolute, ``a - b``."""
    if method == "t":  # the set's own function, as the verdicts call it
        ci = paired_difference_ci(a, b, relative=relative, confidence=CONFIDENCE)
        return ci.low, ci.high
    if method == "BCa":
        return _bca(a, b, relative, rng)
    if method == "Fieller":
        return _fieller(a, b) if relative else interval("t", a, b, relative, rng)
    if method == "studentized bootstrap":
        return _studentized(a, b, relative, rng)
    raise ValueError(f"interval(): argument 'method' must be one of {METHODS}, got {method!r}")


def _methods(scenario: Scenario) -> tuple[str, ...]:
    return METHODS if scenario.relative else tuple(m for m in METHODS if m != "Fieller")


@functools.cache
def _truth(name: str) -> dict[str, float]:
    """Each method's true value in scenario ``name``, from :data:`TRUTH_DRAWS` draws: the t's relative
    truth is ``1 - exp(E[log(a / b)])``, the others' ``1 - E[a] / E[b]``; absolute, ``E[a - b]``."""
    scenario = SCENARIOS[name]
    a, b = scenario.draw(np.random.default_rng(20260), TRUTH_DRAWS)
    if not scenario.relative:
        return dict.fromkeys(_methods(scenario), float(np.mean(a - b)))
    ratio_of_means = 1 - float(np.mean(a) / np.mean(b))
    out = dict.fromkeys(_methods(scenario), ratio_of_means)
    out["t"] = -float(np.expm1(np.mean(np.log(a) - np.log(b))))
    return out


def coverage_runs(*, scenario: str, n: int, seeds, steps: int = 1, reps: int = REPS, in_use: str = INTERVAL_METHOD,
                  **_) -> pd.DataFrame:
    """One unit of ``interval_coverage``: for each seed of ``seeds``, ``reps`` paired samples of ``n`` from
    ``scenario``, each method's interval on each, and how many contain the method's truth.

    ``steps`` is the runner's and unused; ``in_use`` names the method that
    :func:`~helpers.evidence.statistics.paired_difference_ci` uses (it is stored in the config, so
    that a change of method calls for a new simulation). A seed draws everything from its own
    generator, seeded by (seed, scenario, n).

    Returns:
        One row per (seed, method): ``scenario``, ``n``, ``seed``, ``method``, ``reps``, ``covered``
        (how many intervals contained the truth), ``width`` (their median width; Fieller's is infinite
        where the mean of B is not clearly above 0), ``use``.
    """
    spec, truth = SCENARIOS[scenario], _truth(scenario)
    index = list(SCENARIOS).index(scenario)
    rows = []
    for seed in seeds:
        rng = np.random.default_rng([seed, index, n])
        covered = dict.fromkeys(truth, 0)
        widths = {m: [] for m in truth}
        for _ in range(reps):
            a, b = spec.draw(rng, n)
            for method in truth:
                low, high = interval(method, a, b, spec.relative, rng)
                covered[method] += bool(low <= truth[method] <= high)
                widths[method].append(high - low)
        rows += [{"scenario": scenario, "n": n, "seed": seed, "method": m, "reps": reps, "covered": covered[m],
                  "width": float(np.median(widths[m])), "use": spec.use} for m in truth]
    return pd.DataFrame(rows)


def coverage_table(frame: pd.DataFrame) -> pd.DataFrame:
    """Coverage per (scenario, n, method) over every seed of the stored table: a DataFrame indexed by
    (scenario, n), one column per method (a fraction; NaN where a method does not apply), plus
    ``use``, scenarios in :data:`SCENARIOS`' order."""
    sums = frame.groupby(["scenario", "n", "method"], sort=False)[["covered", "reps"]].sum()
    table = (sums["covered"] / sums["reps"]).unstack("method")
    table = table[[m for m in METHODS if m in table.columns]]
    order = [(s, n) for s in SCENARIOS for n in sorted(frame["n"].unique()) if (s, n) in table.index]
    table = table.loc[order]
    return table.assign(use=[SCENARIOS[s].use for s, _ in table.index])


def coverage_verdicts(frame: pd.DataFrame) -> dict[str, str]:
    """The stored words of ``interval_coverage``:

    - ``"coverage, <scenario>, n <n>"``: each method's coverage there, of how many samples;
    - ``"in use"``: the method :func:`~helpers.evidence.statistics.paired_difference_ci` uses, its
      lowest coverage over the scenarios marked "used", and whether it reaches
      :data:`REQUIRED` in each;
    - ``"methods that reach 93%"``: every method that does, in every such scenario and size;
    - ``"stress"``, ``"not used"``: in those scenarios, the lowest coverage of the best method and of
      the method in use.
    """
    table = coverage_table(frame)
    reps = frame.groupby(["scenario", "n", "method"], sort=False)["reps"].sum().groupby(level=[0, 1]).first()
    methods = [m for m in METHODS if m in table.columns]
    out = {}
    for (scenario, n), row in table.iterrows():
        said = ", ".join(f"{m} {row[m]:.1%}" for m in methods if not math.isnan(row[m]))
        out[f"coverage, {scenario}, n {n}"] = f"{said}, of {reps[(scenario, n)]:,} samples each"
    plain = table[table["use"] == "used"]
    in_use = INTERVAL_METHOD
    worst = plain[in_use].idxmin()
    reaches = [m for m in methods if plain[m].min() >= REQUIRED]
    ok = plain[in_use].min() >= REQUIRED
    out["in use"] = (f"{in_use}: {'at least' if ok else 'below'} {REQUIRED:.0%} coverage of its 95% intervals in "
                     f"{'every' if ok else 'some'} scenario like the stored experiments, at {min(plain.index.get_level_values(1))} "
                     f"to {max(plain.index.get_level_values(1))} seeds; lowest {plain[in_use].min():.1%} "
                     f"({worst[0]}, n {worst[1]}); BCa, the method before, {plain['BCa'].min():.1%} to "
                     f"{plain['BCa'].max():.1%}")
    out["methods that reach 93%"] = (", ".join(reaches) if reaches else "none") + (
        f": the methods whose 95% intervals cover the truth at least {REQUIRED:.0%} of the time in every scenario "
        f"like the stored experiments, at every seed count")
    for use in ("stress", "not used"):
        part = table[table["use"] == use]
        if not part.empty:
            best = part[methods].min().idxmax()
            out[use] = (f"in the scenarios marked {use!r}, the best method at its worst, {best}, covers "
                        f"{part[best].min():.1%} ({part[best].idxmin()[0]}, n {part[best].idxmin()[1]}); "
                        f"{in_use} at its worst {part[in_use].min():.1%}")
    return out


# How it was sized: 2,000 repetitions per scenario and size give a coverage of 95% to within about
# 1 point (2 standard errors), enough to tell 93% from 95%.
runner.register(runner.Experiment(
    name="interval_coverage", notebook="10_how_a_claim_is_tested", train=coverage_runs,
    grid={"scenario": tuple(SCENARIOS), "n": SIZES}, seeds=(0, 1, 2, 3), steps=1,
    fixed={"reps": REPS, "in_use": INTERVAL_METHOD},
    summarize=coverage_verdicts, budget_s=2000,
    # numpy and SciPy only, no torch: the counts are the same on every kernel path; on another machine a
    # last-bit difference in numpy's log could move an interval end across the truth, which 1 count would
    # show, or a mean width in its last digits
    repro_rtol=0.0, repro_atol=0.0, repro_measured=0.0, repro_atol_by_column={"covered": 1.0, "width": 1e-9},
    repro_measured_by_column={"covered": 0.0, "width": 0.0}, repro_unit=0))
