# ---
# jupyter:
#   jupytext:
#     cell_metadata_filter: -all
#     text_representation:
#       extension: .py
#       format_name: percent
#       format_version: '1.3'
#       jupytext_version: 1.19.6
#   kernelspec:
#     display_name: Python 3 (ipykernel)
#     language: python
#     name: python3
# ---

# %%
# You need not read this cell. It makes `helpers`, this set's package, importable.
import importlib.util, os, pathlib, subprocess, sys  # noqa: E401, I001
REPO_URL = os.environ.get("LAYERNORM_HANDS_ON_REPO", "https://github.com/layernorm-hands-on/layernorm-hands-on")
clone = next((p for p in [pathlib.Path.cwd(), *pathlib.Path.cwd().parents] if (p / "helpers" / "__init__.py").is_file()), None)
if importlib.util.find_spec("helpers") is None and clone is not None:
    sys.path.insert(0, str(clone))
elif importlib.util.find_spec("helpers") is None and "google.colab" in sys.modules:
    subprocess.run([sys.executable, "-m", "pip", "install", "-q", f"git+{REPO_URL}"], check=True)
elif importlib.util.find_spec("helpers") is None:
    raise ModuleNotFoundError(f"`helpers` is not installed: run `make lab` in a clone of {REPO_URL}, or `pip install git+{REPO_URL}` here")
import helpers  # noqa: E402,F401


# %% [markdown]
# # 10 · How a claim is tested
#
# The deep dives test the lesson's claims ("LN speeds up training", "the norm goes before the
# activation", "BN fails at small batches") with stored training runs, and state each result as a
# sentence such as *"LN-LSTM needs 45% fewer steps to the threshold than LSTM (95% CI 30% to 58%)"*.
# This notebook is the one place that says how such a sentence is made; the others link here.
#
# ## The answer
#
# A verdict here is never one run. Each arm (one variant of the network: with LN, without, ...)
# trains at its own tuned learning rate on at least 10 fresh seeds; arms that share seeds are
# compared seed by seed; the difference gets a 95% confidence interval, of a kind whose coverage at
# these seed counts was checked by simulation; runs that never reach the target are kept, as
# censored runs. The words follow the interval, and only four kinds of sentence are allowed: the
# claim (with its interval), "no difference detectable with N seeds", "the opposite of the claim",
# or "the same ... within ±10%" where a margin was declared for the comparison. Where a comparison
# was declared under two measures and they disagree, the sentence starts "depends on the measure".
# How often each kind occurs among all stored verdicts:

# %%
import importlib.resources

import matplotlib.pyplot as plt
import numpy as np
import pandas as pd
from scipy import stats

from helpers.evidence import runner
from helpers.evidence.statistics import paired_difference_ci, time_to_threshold, verdict
from helpers.experiments import lstm_adding

results = importlib.resources.files("helpers.evidence") / "results"  # every stored experiment's verdicts
records = [record for f in sorted(results.iterdir(), key=lambda f: f.name) if f.name.endswith(".json")
           for record in runner.load(f.name.removesuffix(".json")).records.values()]


def sentence_kind(record):
    """Which kind of sentence a stored verdict's record makes, from its numbers."""
    if not record.has_interval:
        return "a count, a rate or a level (no comparison)"
    if not record.agree:
        return "depends on the measure"
    if record.same:
        return "the same, within a margin"
    if record.direction is None:
        return "no difference detectable"
    opposite = record.claim not in (record.direction, None)
    return "the opposite of the claim" if opposite else "a difference, with its interval"


kinds = pd.Series([sentence_kind(record) for record in records])
kinds.value_counts().rename("stored verdicts")

# %% [markdown]
# The rest of this notebook takes one stored experiment apart, `lstm_adding` (an LSTM with and
# without LN on a long sequence; deep dive [13](13_does_it_speed_up_training.ipynb) reads it),
# and recomputes its verdict on steps from the stored runs, one term at a time.
#
# ## 1 · Seeds: one run is an anecdote
#
# A **seed** is the number that starts a random number generator. It fixes everything random in a
# run: the initial weights, the order of the minibatches, the data drawn. Two runs that differ only
# in their seed can end far apart, so one run per arm says as much about the seed as about the arm.
# Here, each of the 10 reported seeds of each arm, and the first evaluation step at which its
# held-out loss fell below the threshold, fixed before any run; `NaN` means it never did:

# %%
stored = runner.load("lstm_adding")
cap = int(stored.frame["step"].max())  # the step cap: no run trains longer
report = stored.frame[stored.frame["stage"] == "report"]
reached = lstm_adding.lstm_steps_to_threshold(report)  # one row per run: its steps, NaN if never
steps = reached.pivot_table(index="seed", columns="variant", values="steps", dropna=False)[["LSTM", "LN-LSTM"]]
print(f"threshold {lstm_adding.THRESHOLD:.3f}; step cap {cap}; rates: " + ", ".join(f"{v} {r:g}" for v, r in reached.groupby("variant")["lr"].first().items()))
steps.T

# %% [markdown]
# ## 2 · Each arm at its own learning rate: pilot seeds, then fresh seeds
#
# A network with LN may want another learning rate than one without. Comparing both at one rate
# would test the rate as much as LN. So each arm's rate is **tuned**: a grid of rates (neighbours a
# factor of about 3 apart) is tried on 3 **pilot seeds**, and the rate with the best mean score wins.
# The best rate must lie **inside** the grid, not on its edge, or a better one may lie beyond it.
# Then the arm is trained at that rate on **fresh seeds** (here 0 to 9; the pilots were 100 to
# 102), and only those are reported, so the report is not made of the lucky draws the tuning
# picked. The stored words of the tuning:

# %%
runner.print_verdicts("lstm_adding", "best rate, LSTM", "best rate, LN-LSTM")

# %% [markdown]
# A rate that looks best on 3 pilot seeds can sit next to a cliff, where a fresh seed stays stuck.
# So the report checks each arm's best rate on its fresh seeds: it counts the report seeds that
# learned nothing (never reached the threshold, or ended at the learned-nothing level) and compares
# that share with the pilot runs at the two neighbouring rates. It **does not hold** where more
# report seeds are stuck than at a neighbour, and the deep dive says so beside the verdicts:

# %%
runner.print_verdicts("lstm_adding", "best rate on the report seeds, LSTM")
runner.print_verdicts("batch_size", "best rate on the report seeds, BatchNorm, batch 2")

# %% [markdown]
# ## 3 · Runs that never get there: censoring, Kaplan-Meier, restricted means
#
# A run that never reaches the threshold within the cap (a `NaN`: every reported run above got
# there, but the LSTM's pilot runs at rates 0.03 and 0.1 did not) is the hard case. Dropping
# it would make its arm look faster than it is; counting it as "cap steps" would pretend we know when it would
# have got there. Statistics calls such a run **censored**: we know only that its time is more
# than the cap. The **Kaplan-Meier** curve (Kaplan and Meier 1958) uses every run: at each step it
# gives the fraction of runs still above the threshold, with censored runs counted as still on
# their way. Two summaries come from it:
#
# - the **median**: the first step at which half the runs got there ("median not reached" when
#   more than half never did);
# - the **restricted mean**: the area under the curve up to the cap, which is the mean time if
#   every censored run had arrived exactly at the cap. It can only understate the slower arm's time.
#
# `time_to_threshold` wraps SciPy's `ecdf` on `CensoredData`; the same curve drawn from SciPy
# directly:

# %%
fig, ax = plt.subplots(figsize=(6, 3))
for variant, colour in (("LSTM", "tab:grey"), ("LN-LSTM", "tab:blue")):
    done = steps[variant].dropna().to_numpy()
    censored = np.full(steps[variant].isna().sum(), float(cap))
    curve = stats.ecdf(stats.CensoredData(uncensored=done, right=censored)).sf
    ax.step(np.r_[0, curve.quantiles], np.r_[1, curve.probabilities], where="post", color=colour, label=variant)
    print(f"{variant}: {time_to_threshold(steps[variant], cap)}; "
          f"restricted mean {time_to_threshold(steps[variant], cap).restricted_mean:.0f} steps")
ax.axhline(0.5, color="k", lw=0.6, ls=":")
ax.set(xlabel="training step", ylabel="runs not yet below the threshold", xlim=(0, cap),
       title="Kaplan-Meier curves of the 10 reported seeds (dotted: the median)")
ax.title.set_fontsize(9)
ax.legend()
plt.show()

# %% [markdown]
# ## 4 · Paired differences and a confidence interval
#
# Both arms of one seed start from the same weights and see the same minibatches: they are
# **paired** by seed. A seed that is hard for both moves both, and their difference cancels it, so
# each seed gives one difference, and the comparison uses those. For steps and losses the
# difference is a ratio: each seed's LN-LSTM steps over its LSTM steps (a censored run counted at the
# cap), taken on a log scale, where a seed twice as slow and one twice as fast cancel, and the few
# very slow seeds that skew steps and losses weigh less.
#
# How sure is a difference measured on 10 seeds? A **95% confidence interval** (CI) is a range built
# so that, over many repetitions of the whole experiment, 95% of such ranges would contain the true
# difference. The set uses **Student's t-interval** on the per-seed log-ratios (`scipy.stats.ttest_1samp`):
# their mean, plus and minus t(9) = 2.26 standard errors, mapped back, so that "LN-LSTM needs 45%
# fewer steps" means its steps are 0.55 times the LSTM's, the geometric mean over seeds. Absolute
# differences (accuracy points) get the same interval on the per-seed differences (`scipy.stats.ttest_rel`).

# %%
at_cap = steps.fillna(cap)  # a censored run counts as the cap
ratios = at_cap["LN-LSTM"] / at_cap["LSTM"]  # one ratio per seed
interval = paired_difference_ci(at_cap["LN-LSTM"], at_cap["LSTM"], relative=True)
assert abs(interval.estimate - (1 - np.exp(np.log(ratios).mean()))) < 1e-12  # 1 - their geometric mean
print(f"LN-LSTM needs {interval.estimate:.0%} fewer steps (95% CI {interval.low:.0%} to {interval.high:.0%}), "
      f"{interval.n} paired seeds")
said = verdict(interval, a="LN-LSTM", b="LSTM", claim="fewer", quantity="steps to the threshold")
record = stored.records["steps"]  # the stored verdict, recomputed from the stored runs: the same numbers
assert record.n == said.n  # (the same to the last digits a library version can move)
assert np.allclose([record.estimate, record.low, record.high], [said.estimate, said.low, said.high], rtol=1e-9)
print("recomputed:", said)
print("stored verdict:", record)

# %% [markdown]
# Why t, and not the bootstrap (resampling the seeds with replacement, Efron 1979), which the set
# used before? "95%" is a promise about repetitions, and at 10 seeds an interval method may not keep
# it. The stored experiment `interval_coverage` checks: it draws 2,000 paired samples from each of a
# dozen distributions shaped like the stored experiments' per-seed values (skewed steps and losses,
# runs capped at the step cap, seeds that fail, accuracy floored at chance), computes each method's
# 95% interval on each sample, and counts how often the interval contains the true value. Where runs
# are capped, the true value is the ratio of the *capped* times, as the verdicts count them: a run
# stopped at the cap counts as the cap. So where the slower arm has capped runs, the interval covers
# a bound on the uncapped ratio, and the verdicts say "at least". At 10 seeds (the other seed counts,
# 8, 17 and 20, are stored too):

# %%
from helpers.experiments import interval_coverage

coverage = interval_coverage.coverage_table(runner.load("interval_coverage").frame).xs(10, level="n")
coverage[list(interval_coverage.METHODS)].map(lambda c: "" if np.isnan(c) else f"{c:.1%}").assign(use=coverage["use"])

# %% [markdown]
# SciPy's BCa bootstrap, the method before, covers the truth in as few as 7 of 10 repetitions
# where one arm's values spread over decades: its intervals are too narrow at 10 seeds. The t-interval
# on the log-ratios keeps near 95% in every scenario marked `used`; the ratio-of-means methods
# (Fieller's t, the studentized bootstrap) do not where one arm is heavy-tailed. Two kinds of sample
# are beyond the t-interval (marked `stress`): differences far more skewed than any stored
# comparison's (there only the studentized bootstrap keeps 93%), and a failure that strikes one seed
# in ten, which a sample of 10 seeds often does not contain at all and which defeats every method: a
# verdict that rests on one failed seed is as weak as that. Raw losses just above a floor
# (`not used`) are why such losses are compared on their excess over the floor. The stored summary:

# %%
runner.print_verdicts("interval_coverage", "in use", "methods that reach 93%")

# %% [markdown]
# ## 5 · The words follow the interval
#
# - The whole interval on the claim's side of 0: the claim, with its size and interval.
# - The interval contains 0: **"no difference detectable with N seeds"**. That is not "the same":
#   with more seeds a difference might show.
# - The whole interval on the other side: **"the opposite of the claim"**.
# - **"The same ... within ±10%"** only where an equivalence margin was declared for the comparison
#   (`EQUIVALENCE_MARGIN` in `helpers.evidence.statistics`: where one arm is said to *match* another)
#   and the whole interval lies inside it, as printed too. Else the words add whether the interval
#   lies wholly beyond the margin or only partly.
# - Steps to a threshold are counted two ways, both declared before the runs: to the **first
#   crossing**, and until the run **stays below** the threshold to the end (a run that crosses and
#   then blows up never does: it is censored). The stored sentence gives both. Where they disagree
#   in direction, or one finds a difference and the other none, it starts **"depends on the
#   measure"**, and the verdict decides nothing.
#
# Flags follow the sentence: a difference **smaller than** the evaluation interval (how often the
# held-out loss was measured) or than one step of the tuning grid (how much a neighbouring learning
# rate moves an arm's pilot score), which the seeds cannot see; **fragile** when the interval's
# end nearer 0 prints as 0, with the seed count: a few more seeds could move it across; and **rests
# on one seed** (or on single seeds) when leaving out one seed's pair makes the interval include 0:
# each such seed is named, since a fresh draw of seeds without it could undo the verdict. Stored
# examples, from the Transformer runs of deep dive [13](13_does_it_speed_up_training.ipynb), the CNN
# of [15](15_the_normalization_family.ipynb) and the MLPs of [12](12_where_the_norm_goes.ipynb):

# %%
runner.print_verdicts("small_transformer", "steps, Pre-LN + warm-up vs Pre-LN", "final loss, Pre-LN vs no norm",
                      "steps, Pre-LN vs no norm")
runner.print_verdicts("norm_family_cnn", "error, batch 32: GroupNorm vs InstanceNorm")
runner.print_verdicts("placement_tuned", "final loss, tanh, LN -> act vs no norm")
runner.print_verdicts("small_transformer", "steps, DyT, alpha0 0.5 vs Pre-LN")

# %% [markdown]
# Each deep dive ends with a **claims ledger**: every claim it tests, its **outcome**, the stored
# verdict word for word, and where it is stored. A stored verdict is a record of numbers (the arms,
# the measure, the estimate and its interval, the seeds, the margin, the flags), and its words are
# written from that record. The outcome is computed from the numbers, never from the words, by one
# function, `helpers.evidence.claims.outcome`, against what the claim says: that one arm comes out better
# (*supported* when the interval lies on its side of 0, *refuted* on the other side or within the
# margin, *undecided* when it holds 0), that two arms are the same (*supported* only inside the
# margin, *refuted* only wholly beyond it), or that one is at least as good; *not tested* where no
# stored result holds it.
#
# Two rules keep a ledger honest about how much it tests. A ledger of 30 comparisons at 95% each
# would show one or two differences by chance alone, so its comparisons are corrected together with
# **Holm's step-down method** (`helpers.evidence.statistics.holm`): sort the p-values of the t-tests
# behind the intervals; the smallest must be below 0.05/m, the next below 0.05/(m − 1), and so on,
# and the first that fails stops the list. A difference that does not survive it decides nothing.
# Nor does a **flagged** one (smaller than the experiment resolves, fragile, or resting on one seed):
# such a claim is *undecided*. A theorem's bound is *consistent* with a measurement, or its
# *assumptions are not met* by the model measured; a model outside its assumptions never refutes it.
# The core path's closing card reads the same outcomes, each as its deep dive's ledger decides it. Where a deep dive's
# claims rest on its own cells rather than on training runs (an identity checked against torch, a
# measured error against its bound: deep dives 11, 14 and 16), the ledger evaluates each check in
# its cell, *supported* when it holds and *refuted* when it does not, and marks a claim that rests
# on a citation alone *not tested*.

# %% [markdown]
# ## 6 · What a verdict does not say
#
# An interval measures the noise between seeds, not whether the experiment asks the right
# question. Before trusting a verdict, ask what could make it true by construction: does one arm
# get an easier task (the first version of `lstm_adding` gave the LN-LSTM one: deep dive
# [13](13_does_it_speed_up_training.ipynb), section 5), is it scored in another regime than it trained in, is the task hard enough
# that the arms can differ at all, is a measure bounded by the arm's own construction? Each deep
# dive says what it checked and what its runs cannot reach (larger models, longer training).
#
# **Why stored runs.** A training run amplifies the last-bit differences between CPUs into a
# different curve. So the runs are made once by `make experiments`, stored with the package (seeds,
# torch version, CPU, commit), and the verdicts are computed there; the notebooks print them word
# for word and give the same output on every computer. A small *live* run stays where it shows the
# mechanics; its digits may differ on your machine.
#
# ## Glossary
#
# | term | here |
# |---|---|
# | arm | one variant of a network in a comparison (with LN, without, ...) |
# | seed | the number that fixes a run's randomness: initial weights, minibatches, data |
# | pilot seeds | the seeds a learning rate is tuned on; never reported |
# | censored run | one that never reached the threshold: its time is only known to exceed the cap |
# | Kaplan-Meier curve | the fraction of runs not yet there, step by step, censored runs included |
# | median (Kaplan-Meier) | the first step by which half the runs got there |
# | restricted mean | the mean time with censored runs counted at the cap |
# | paired by seed | both arms from the same weights and batches, compared seed by seed |
# | 95% confidence interval (CI) | a range that covers the true value in 95% of repeated experiments |
# | t-interval | mean ± t · standard error, here of the per-seed differences or log-ratios |
# | coverage | how often an interval method's intervals contain the truth, measured by simulation |
# | bootstrap, BCa | resampling the seeds with replacement; BCa corrects the percentile range for skew (the method before) |
# | equivalence margin | the band, fixed before the run, within which two arms count as the same |
#
# ## References
#
# - B. Efron, *Bootstrap Methods: Another Look at the Jackknife*, Annals of Statistics 7(1), 1979.
# - B. Efron, *Better Bootstrap Confidence Intervals*, JASA 82(397), 1987 (BCa).
# - Student, *The Probable Error of a Mean*, Biometrika 6(1), 1908 (the t-interval).
# - E. C. Fieller, *Some Problems in Interval Estimation*, JRSS B 16(2), 1954 (intervals for a ratio of means).
# - D. J. Schuirmann, *A Comparison of the Two One-Sided Tests Procedure and the Power Approach for
#   Assessing the Equivalence of Average Bioavailability*, J. Pharmacokinetics and Biopharmaceutics
#   15(6), 1987 (equivalence: the whole interval inside a margin).
# - E. L. Kaplan, P. Meier, *Nonparametric Estimation from Incomplete Observations*, JASA 53(282), 1958.
# - SciPy, [`scipy.stats.ttest_1samp`](https://docs.scipy.org/doc/scipy/reference/generated/scipy.stats.ttest_1samp.html),
#   [`scipy.stats.bootstrap`](https://docs.scipy.org/doc/scipy/reference/generated/scipy.stats.bootstrap.html)
#   and [`scipy.stats.ecdf`](https://docs.scipy.org/doc/scipy/reference/generated/scipy.stats.ecdf.html)
#   with `CensoredData`.
# - X. Bouthillier et al., *Accounting for Variance in Machine Learning Benchmarks*, MLSys 2021,
#   [arXiv:2103.03098](https://arxiv.org/abs/2103.03098): why one seed per arm misleads.
