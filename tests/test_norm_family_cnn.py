"""helpers.experiments.norm_family_cnn: the image task, each norm's statistics in the stacked CNN, BN's two modes,
the stacking, the rate scaling, the training runs' rows and pairing, the verdicts' words and the
declaration of ``norm_family_cnn``."""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pytest
import torch
import torch.nn.functional as F

from helpers.evidence import runner
from helpers.experiments import norm_family_cnn as nf
from helpers.experiments.tuning_words import grid_resolution


def _words(verdicts):
    """The verdicts' records, in words."""
    return {key: str(said) for key, said in verdicts.items()}



def _gens(*seeds):
    return [torch.Generator().manual_seed(s) for s in seeds]


@pytest.fixture(scope="module")
def tiny_task():
    return nf.make_task(96, 48, 48, seed=7)


# ------------------------------------------------------------------ the task


def test_images_have_the_declared_shapes_and_balanced_classes():
    x, y = nf.make_images(61, torch.Generator().manual_seed(0))
    assert x.shape == (61, 1, 16, 16) and x.dtype == torch.float32
    assert y.shape == (61,) and y.dtype == torch.int64
    counts = torch.bincount(y, minlength=len(nf.CLASSES))
    assert counts.tolist() == [11, 10, 10, 10, 10, 10]  # 61 = 6 * 10 + 1
    assert not torch.equal(y[:12], torch.arange(12) % 6)  # shuffled, not in class order


def test_images_are_fixed_by_the_generator_and_change_with_its_seed():
    a = nf.make_images(24, torch.Generator().manual_seed(1))
    b = nf.make_images(24, torch.Generator().manual_seed(1))
    c = nf.make_images(24, torch.Generator().manual_seed(2))
    assert torch.equal(a[0], b[0]) and torch.equal(a[1], b[1])
    assert not torch.equal(a[0], c[0])


def _along(img, du, dv):
    """Mean squared change between pixels (u, v) and (u + du, v + dv), in float64."""
    img = img.double()
    h, w = img.shape[-2:]
    u0, u1 = max(0, -du), h - max(0, du)
    v0, v1 = max(0, -dv), w - max(0, dv)
    return (img[..., u0 + du:u1 + du, v0 + dv:v1 + dv] - img[..., u0:u1, v0:v1]).pow(2).mean().item()


@pytest.mark.parametrize(("label", "flat", "across"), [
    (0, (1, 0), (0, 1)),    # vertical stripes: constant down a column, changing along a row
    (2, (0, 1), (1, 0)),    # horizontal stripes
    (1, (-1, 1), (1, 1)),   # "/": constant going up and to the right
    (3, (1, 1), (-1, 1)),   # "\": constant going down and to the right
])
def test_stripes_run_as_their_class_names_say(label, flat, across):
    x, y = nf.make_images(600, torch.Generator().manual_seed(3), noise=0.0)
    stripes = x[y == label, 0]
    assert _along(stripes, *flat) < 0.5 * _along(stripes, *across)


def test_without_noise_the_offset_is_the_only_thing_far_from_the_pattern():
    # blob and ring images without noise are s * a * p + o with p in [0, 1]: o at the corners
    x, y = nf.make_images(300, torch.Generator().manual_seed(4), noise=0.0)
    blobs = x[y == 4, 0]
    assert (blobs.amax((1, 2)) - blobs.amin((1, 2)) <= 1.5 + 1e-5).all()  # contrast at most 1.5
    assert (blobs.amax((1, 2)) - blobs.amin((1, 2)) >= 0.3 * 0.5).all()   # and visible


def test_the_fixed_sets_are_fixed_distinct_and_sized(tiny_task):
    again = nf.make_task(96, 48, 48, seed=7)
    other = nf.make_task(96, 48, 48, seed=8)
    assert again is tiny_task
    assert tiny_task.x_train.shape == (96, 1, 16, 16) and tiny_task.y_valid.shape == (48,)
    assert not torch.equal(tiny_task.x_valid, tiny_task.x_test)
    assert not torch.equal(tiny_task.x_train, other.x_train)


def test_example_images_give_each_class_in_order():
    ex = nf.example_images(2)
    assert ex["label"].tolist() == [k for k in range(len(nf.CLASSES)) for _ in range(2)]
    assert ex["name"].iloc[0] == nf.CLASSES[0]
    assert all(img.shape == (16, 16) for img in ex["image"])


# ------------------------------------------------------------------ the norms and the model


def _standardised_over(out, shape, dims):
    """Mean 0 and biased variance ~1 over ``dims`` of ``out`` viewed as ``shape`` (LN's own output has
    variance v / (v + eps), v the input's)."""
    o = out.double().reshape(shape)
    mean, var = o.mean(dims), o.var(dims, correction=0)
    torch.testing.assert_close(mean, torch.zeros_like(mean), rtol=0, atol=1e-6)
    torch.testing.assert_close(var, torch.ones_like(var), rtol=0, atol=1e-3)


S, C, N, H = 3, 8, 5, 4


@pytest.fixture
def x():
    g = torch.Generator().manual_seed(0)
    # each (sample, channel) with its own offset and scale, so that any wrong grouping shows
    return torch.randn(N, S * C, H, H, generator=g) * (1 + 3 * torch.rand(N, S * C, 1, 1, generator=g)) \
        + 5 * torch.randn(N, S * C, 1, 1, generator=g)


def test_each_norm_takes_its_statistics_over_its_own_dims(x):
    with torch.no_grad():
        bn, gn, ln, inorm = (nf.norm_layer(n, C, S)(x) for n in nf.NORMS)
    _standardised_over(bn.transpose(0, 1), (S * C, -1), 1)                 # channel: over (N, H, W)
    _standardised_over(gn, (N, S * nf.GROUPS, -1), 2)                      # sample, group: (C/G, H, W)
    _standardised_over(ln, (N, S, -1), 2)                                  # sample, model: (C, H, W)
    _standardised_over(inorm, (N, S * C, -1), 2)                           # sample, channel: (H, W)
    # and not over other dims: LN's channels keep their differences, GN's groups are not instances
    assert ln.reshape(N, S * C, -1).mean(2).abs().max() > 0.1
    assert gn.reshape(N, S * C, -1).mean(2).abs().max() > 0.1


def test_layer_norm_arm_is_layer_norm_over_c_h_w(x):
    ln = nf.norm_layer("LayerNorm", C, S)
    with torch.no_grad():
        out = ln(x).reshape(N, S, C, H, H)
        ref = F.layer_norm(x.reshape(N, S, C, H, H), (C, H, H))
    torch.testing.assert_close(out, ref, rtol=1e-5, atol=1e-5)
    # per-channel affine parameters, not LayerNorm's per-element ones
    assert ln.weight.shape == (S * C,)


@pytest.mark.parametrize("norm", nf.NORMS)
def test_stacked_norm_is_each_model_s_own_norm(norm, x):
    stacked = nf.norm_layer(norm, C, S)
    g = torch.Generator().manual_seed(1)
    with torch.no_grad():
        stacked.weight.copy_(torch.randn(S * C, generator=g))
        stacked.bias.copy_(torch.randn(S * C, generator=g))
        out = stacked(x)
        for m in range(S):
            one = nf.norm_layer(norm, C)
            one.weight.copy_(stacked.weight[m * C:(m + 1) * C])
            one.bias.copy_(stacked.bias[m * C:(m + 1) * C])
            block = slice(m * C, (m + 1) * C)
            torch.testing.assert_close(out[:, block], one(x[:, block]), rtol=1e-5, atol=1e-5)
            if norm == "BatchNorm":
                torch.testing.assert_close(stacked.running_mean[block], one.running_mean)
                torch.testing.assert_close(stacked.running_var[block], one.running_var)


def test_batch_norm_arm_uses_batch_statistics_in_train_and_running_ones_in_eval(x):
    bn = nf.norm_layer("BatchNorm", C, S)
    with torch.no_grad():
        train = bn(x)
        mean, var = x.mean((0, 2, 3)), x.var((0, 2, 3), correction=0)
        torch.testing.assert_close(train, (x - mean.view(1, -1, 1, 1)) / (var.view(1, -1, 1, 1) + 1e-5).sqrt(),
                                   rtol=1e-5, atol=1e-5)
        n = N * H * H
        torch.testing.assert_close(bn.running_mean, 0.1 * mean)
        torch.testing.assert_close(bn.running_var, 0.9 + 0.1 * var * n / (n - 1))
        bn.eval()
        evaluated = bn(x)
        ref = (x - bn.running_mean.view(1, -1, 1, 1)) / (bn.running_var.view(1, -1, 1, 1) + 1e-5).sqrt()
        torch.testing.assert_close(evaluated, ref, rtol=1e-5, atol=1e-5)
        assert (evaluated - train).abs().max() > 1.0  # the two modes differ after one batch
        # the other norms compute the same in both modes
        for norm in nf.NORMS[1:]:
            layer = nf.norm_layer(norm, C, S)
            torch.testing.assert_close(layer(x), layer.eval()(x))


@pytest.mark.parametrize("norm", nf.NORMS)
def test_a_stack_trains_as_its_models_would_one_by_one(norm):
    """The stack's logits, gradients and BN's running statistics are each model's own."""
    g = torch.Generator().manual_seed(5)
    xs = torch.randn(2, 4, 1, 16, 16, generator=g)
    ys = torch.randint(0, 6, (2, 4), generator=g)
    stack = nf.StackedCNN(norm, _gens(3, 9), channels=(8, 8, 8))
    singles = [nf.StackedCNN(norm, _gens(s), channels=(8, 8, 8)) for s in (3, 9)]
    logits = stack(xs)
    F.cross_entropy(logits.flatten(0, 1), ys.flatten(), reduction="none").view(2, 4).mean(1).sum().backward()
    for m, one in enumerate(singles):
        out = one(xs[m:m + 1])
        torch.testing.assert_close(logits[m:m + 1], out, rtol=1e-5, atol=1e-5)
        F.cross_entropy(out[0], ys[m]).backward()
        torch.testing.assert_close(stack.weights[1].grad[8 * m:8 * (m + 1)], one.weights[1].grad, rtol=1e-4, atol=1e-6)
        torch.testing.assert_close(stack.w_out.grad[m], one.w_out.grad[0], rtol=1e-4, atol=1e-6)
        if norm == "BatchNorm":
            torch.testing.assert_close(stack.norms[2].running_var[8 * m:8 * (m + 1)], one.norms[2].running_var)


def test_a_seed_starts_from_the_same_weights_whatever_the_norm():
    models = [nf.StackedCNN(norm, _gens(4)) for norm in nf.NORMS]
    for a in models[1:]:
        for w, v in zip(models[0].parameters(), a.parameters(), strict=True):
            assert torch.equal(w, v)


# ------------------------------------------------------------------ the rate and the runs


def test_rates_scale_linearly_with_the_batch():
    assert nf.scaled_lr(0.1, 32) == 0.1
    assert nf.scaled_lr(0.1, 2) == pytest.approx(0.00625)
    assert nf.scaled_lr(0.1, 8) == pytest.approx(0.025)
    assert nf.scaled_lr(0.3, 4, base=8) == pytest.approx(0.15)


def test_a_seed_sees_the_same_images_in_the_same_order_at_every_batch_size():
    order = nf._sample_order(_gens(0, 1), 250, 96)
    assert order.shape == (2, 250)
    assert sorted(order[0, :96].tolist()) == list(range(96))  # a permutation per pass
    assert not torch.equal(order[0], order[1])
    again = nf._sample_order(_gens(0, 1), 250, 96)
    assert torch.equal(order, again)


@pytest.fixture(scope="module")
def runs(tiny_task):
    kw = dict(samples=96, evals=2, lr=0.05, task=tiny_task)
    return {"bn8": nf.cnn_runs("BatchNorm", (0, 1), batch=8, **kw),
            "gn8": nf.cnn_runs("GroupNorm", (0, 1), batch=8, **kw),
            "gn8_alone": nf.cnn_runs("GroupNorm", (1,), batch=8, **kw),
            "gn8_capped": nf.cnn_runs("GroupNorm", (0, 1), batch=8, steps=5, **kw),
            "bn2": nf.cnn_runs("BatchNorm", (0, 1), batch=2, **kw)}


def test_runs_record_the_first_steps_the_evaluations_and_the_end(runs):
    bn = runs["bn8"]
    assert sorted(bn["step"].unique()) == list(range(13))  # 12 steps, all among the first 20, and the end
    evals = bn[bn["eval_error"].notna()]
    assert sorted(evals["step"].unique()) == [0, 6, 12]
    assert (bn["samples_seen"] == bn["step"] * 8).all()
    assert bn.loc[bn["step"] == 12, "loss"].isna().all() and bn.loc[bn["step"] < 12, "loss"].notna().all()
    assert evals.loc[evals["step"] > 0, "train_loss"].notna().all()
    # BN's train-mode error at the end only; none for GroupNorm
    assert bn.loc[bn["step"] == 12, "train_mode_error"].notna().all()
    assert bn.loc[bn["step"] < 12, "train_mode_error"].isna().all()
    assert runs["gn8"]["train_mode_error"].isna().all()
    assert set(bn["eval_set"]) == {"test"} and set(bn["lr"]) == {0.05}
    big = runs["bn2"]
    assert big["step"].max() == 48 and sorted(big.loc[big["eval_error"].notna(), "step"].unique()) == [0, 24, 48]
    assert set(big["step"]) == {*range(20), 24, 48}


def test_runs_pair_by_seed_and_stack_without_changing_a_model(runs):
    both, alone = runs["gn8"], runs["gn8_alone"]
    one = both[both["seed"] == 1].reset_index(drop=True)
    pd.testing.assert_frame_equal(one.drop(columns="seed"), alone.drop(columns="seed"), rtol=1e-4, atol=1e-5)
    # the seeds differ: their initial weights and minibatches give different first losses
    first = both[both["step"] == 0].set_index("seed")["loss"]
    assert first[0] != first[1]


def test_a_capped_run_is_the_start_of_the_full_one(runs):
    full, capped = runs["gn8"], runs["gn8_capped"]
    head = full[full["step"] < 5].reset_index(drop=True)
    pd.testing.assert_frame_equal(capped[capped["step"] < 5].reset_index(drop=True), head)
    assert capped["step"].max() == 5 and capped.loc[capped["step"] == 5, "eval_error"].notna().all()


def test_training_learns_the_noise_free_task():
    task = nf.make_task(512, 64, 256, seed=11, noise=0.0)
    run = nf.cnn_runs("BatchNorm", (0,), batch=16, lr=0.1, samples=1024, evals=1, task=task)
    start, end = run[run["step"] == 0].iloc[0], run[run["step"] == 64].iloc[0]
    assert start["eval_error"] > 0.75 and end["eval_error"] < 0.5  # chance: 5/6
    assert end["eval_loss"] < start["eval_loss"] - 0.4


# ------------------------------------------------------------------ tables and verdicts


def _final_frame(errors, *, noise=0.002, seeds=range(10), lrs=None):
    """A hand-made stored table: one final row per (norm, batch, seed) of the reported runs, error =
    ``errors[norm][batch]`` plus a seed's own offset (shared by all arms: pairing cancels it) plus an
    arm's jitter, ``+-noise`` times the arm's index, its sign alternating over the seeds (so that two
    arms of equal error differ by 0 on average, symmetrically); loss = 3 * error; BN's train-mode error
    0.1 above its error."""
    rng = np.random.default_rng(0)
    offset = {s: 0.05 * rng.standard_normal() for s in seeds}
    rows = []
    for norm, by_batch in errors.items():
        for b, e in by_batch.items():
            arm = len(rows) // len(seeds)
            for s in seeds:
                err = e + offset[s] + noise * (-1) ** s * arm
                rows.append({"stage": "report", "norm": norm, "batch_size": b, "seed": s,
                             "lr": (lrs or {}).get(norm, 0.1) * b / 32, "eval_set": "test", "step": 100,
                             "eval_error": err, "eval_loss": 3 * err,
                             "train_mode_error": err + 0.1 if norm == "BatchNorm" else math.nan})
    return pd.DataFrame(rows)


WU_HE = {"BatchNorm": {2: 0.35, 8: 0.25, 32: 0.21}, "GroupNorm": {2: 0.241, 8: 0.241, 32: 0.241},
         "LayerNorm": {2: 0.253, 8: 0.253, 32: 0.253}, "InstanceNorm": {2: 0.284, 8: 0.284, 32: 0.284}}


def test_final_errors_is_one_tidy_row_per_run():
    frame = _final_frame(WU_HE)
    early = frame.assign(step=0, eval_error=0.8)
    finals = nf.final_errors(pd.concat([early, frame]))
    assert len(finals) == 4 * 3 * 10
    assert list(finals.columns) == ["stage", "norm", "batch_size", "lr", "seed", "eval_set", "error", "loss",
                                    "train_mode_error"]
    assert finals["norm"].unique().tolist() == list(nf.NORMS)
    assert (finals["error"] < 0.6).all()  # the last step's, not step 0's


def test_verdicts_follow_the_intervals():
    frame = _final_frame(WU_HE)
    verdicts = _words(nf.norm_family_verdicts(frame))
    finals = nf.final_errors(frame)
    gn, bn = (finals[(finals["norm"] == n) & (finals["batch_size"] == 2)]["error"].mean()
              for n in ("GroupNorm", "BatchNorm"))
    said = verdicts["error, batch 2: GroupNorm vs BatchNorm"]
    assert said.startswith(f"at batch 2, GroupNorm has {round(100 * (1 - gn / bn))}% lower test error than "
                           f"BatchNorm (95% CI ")
    assert said.endswith(f"; means {gn:.1%} and {bn:.1%}")
    assert verdicts["error, BatchNorm: batch 2 vs 32"].startswith("BatchNorm at batch 2 has ")
    assert "higher test error than at batch 32" in verdicts["error, BatchNorm: batch 2 vs 32"]
    # a norm whose computation does not depend on the batch, at equal errors: the same within the margin
    assert verdicts["error, GroupNorm: batch 2 vs 32"].startswith("the same test error within ±10%: GroupNorm at batch 2")
    # BN at 32 below GN (as Wu and He found, by less): no claim is made at 32, so no "opposite"
    assert verdicts["error, batch 32: GroupNorm vs BatchNorm"].startswith("at batch 32, GroupNorm has ")
    assert "higher test error" in verdicts["error, batch 32: GroupNorm vs BatchNorm"]
    assert "lower test loss" in verdicts["loss, batch 2: GroupNorm vs BatchNorm"]
    assert "in eval() mode has" in verdicts["error, BatchNorm, batch 8: eval vs train mode"]
    assert verdicts["runs, BatchNorm, batch 2"].startswith("at lr 0.00625: test error 3")
    assert "train() mode" in verdicts["runs, BatchNorm, batch 2"]
    assert "train() mode" not in verdicts["runs, GroupNorm, batch 2"]


def test_a_result_against_the_claim_is_called_the_opposite():
    flipped = {**WU_HE, "GroupNorm": {2: 0.45, 8: 0.241, 32: 0.241}}
    said = _words(nf.norm_family_verdicts(_final_frame(flipped)))["error, batch 2: GroupNorm vs BatchNorm"]
    assert said.startswith("at batch 2, the opposite of the claim: GroupNorm has ")


def test_comparisons_table_has_every_pair_and_batch():
    table = nf.comparisons(_final_frame(WU_HE))
    norms = table[table["kind"] == "norms"]
    assert len(norms) == 2 * 3 * len(nf.PAIRS)
    assert len(table[table["kind"] == "batch"]) == 2 * 4 * 2
    assert len(table[table["kind"] == "BN mode"]) == 3
    row = norms[(norms["measure"] == "error") & (norms["batch_size"] == 2) & (norms["a"] == "GroupNorm")
                & (norms["b"] == "BatchNorm")].iloc[0]
    finals = nf.final_errors(_final_frame(WU_HE))
    per_seed = finals[finals["batch_size"] == 2].pivot_table(index="seed", columns="norm", values="error")
    ratio = per_seed["GroupNorm"] / per_seed["BatchNorm"]  # one minus their geometric mean
    assert row["low"] > 0 and row["estimate"] == pytest.approx(1 - np.exp(np.log(ratio).mean()))


def _pilot_frame(best_at, width=1.0):
    """Pilot rows for every (norm, batch size): each scored by its distance from ``best_at[norm]`` in
    grid units (batch-32 rates), at the batch size's scaled rate, ``width`` per decade."""
    rows = []
    for norm in nf.NORMS:
        for b in nf.BATCH_SIZES:
            for lr in nf.RATES:
                for s in nf.PILOT_SEEDS:
                    rows.append({"stage": "pilot", "norm": norm, "batch_size": b, "seed": s, "lr": nf.scaled_lr(lr, b),
                                 "eval_set": "validation", "step": 10,
                                 "eval_error": 0.2 + width * abs(math.log10(lr / best_at[norm])),
                                 "eval_loss": 1.0, "train_mode_error": math.nan})
    return pd.DataFrame(rows)


def test_each_batch_size_is_tuned_on_its_own_scaled_grid():
    best = {n: 0.1 for n in nf.NORMS} | {"InstanceNorm": nf.RATES[-1]}
    frame = pd.concat([_pilot_frame(best), _final_frame(WU_HE)], ignore_index=True)
    scores = nf.pilot_scores(frame[frame["stage"] == "pilot"])
    assert len(scores) == len(nf.NORMS) * len(nf.BATCH_SIZES) * len(nf.RATES)
    assert set(scores["lr"]) == set(nf.RATES)  # the scaled rates map back onto the grid exactly
    verdicts = _words(nf.norm_family_verdicts(frame))
    assert verdicts["best rate, GroupNorm, batch 32"].startswith("0.1 (0.1 scaled from batch 32 to 32), inside the grid (0.01 to 1)")
    assert verdicts["best rate, GroupNorm, batch 2"].startswith("0.00625 (0.1 scaled from batch 32 to 2), inside the grid (0.000625 to 0.0625)")
    assert "on the grid's edge" in verdicts["best rate, InstanceNorm, batch 8"]


def test_grid_rate_inverts_the_scaling_and_grid_step_reads_the_neighbours():
    for lr in nf.RATES:
        for b in nf.BATCH_SIZES:
            assert nf.grid_rate(nf.scaled_lr(lr, b), b) == lr
    scores = nf.pilot_scores(_pilot_frame({n: 0.1 for n in nf.NORMS}, width=0.1))
    # best 0.2 at 0.1; the neighbours 0.03 and 0.3 are log10(10/3) and log10(3) decades away
    scores = scores.assign(arm=scores["norm"] + ", batch " + scores["batch_size"].astype(str))
    said = grid_resolution(scores, ["LayerNorm, batch 8"], lambda arm, step: f"{arm} by {step:.3f}")
    assert said[0] == pytest.approx(0.1 * math.log10(3) / 0.2)
    assert grid_resolution(scores.assign(score=math.nan), ["LayerNorm, batch 8"], lambda arm, step: "") is None


def test_a_difference_below_the_grid_step_is_flagged():
    close = {**WU_HE, "GroupNorm": {2: 0.245, 8: 0.241, 32: 0.241}, "LayerNorm": {2: 0.25, 8: 0.253, 32: 0.253}}
    coarse = pd.concat([_pilot_frame({n: 0.1 for n in nf.NORMS}, width=1.0), _final_frame(close)], ignore_index=True)
    said = _words(nf.norm_family_verdicts(coarse))["error, batch 2: GroupNorm vs LayerNorm"]
    assert "smaller than one step of the tuning grid" in said
    fine = pd.concat([_pilot_frame({n: 0.1 for n in nf.NORMS}, width=0.001), _final_frame(close)], ignore_index=True)
    assert "tuning grid" not in _words(nf.norm_family_verdicts(fine))["error, batch 2: GroupNorm vs LayerNorm"]


# ------------------------------------------------------------------ the declaration


def test_a_report_seed_stuck_at_chance_at_the_best_rate_is_said_plainly():
    frame = pd.concat([_pilot_frame({n: 0.1 for n in nf.NORMS}), _final_frame(WU_HE)], ignore_index=True)
    key = "best rate on the report seeds, GroupNorm, batch 2"
    assert _words(nf.norm_family_verdicts(frame))[key] == (
        "holds: 0 of 10 report seeds ended with an error at or above chance (83.3%) at 0.00625; of the pilot runs "
        "at the neighbouring rates, 0 of 3 did at 0.001875 and 0 of 3 at 0.01875")
    stuck = (frame["stage"] == "report") & (frame["norm"] == "GroupNorm") & (frame["batch_size"] == 2) \
        & (frame["seed"] == 5)
    said = _words(nf.norm_family_verdicts(frame.assign(eval_error=frame["eval_error"].where(~stuck, nf.CHANCE_ERROR))))[key]
    assert said.startswith("does not hold: 1 of 10 report seeds ended with an error at or above chance (83.3%) "
                           "at 0.00625; ")


def test_the_experiment_is_declared_as_the_protocol_says():
    assert "helpers.experiments.norm_family_cnn" in runner.experiment_modules()
    exp = runner.experiment("norm_family_cnn")
    assert exp.budget_s <= 5500
    assert len(exp.seeds) >= 10 and not set(exp.seeds) & set(exp.tuning.pilot_seeds)
    assert len(exp.tuning.rates) >= 5
    assert exp.grid == {"norm": nf.NORMS, "batch_size": nf.BATCH_SIZES}  # every batch size tuned on its own
    every = runner.units(exp, {(n, b): 0.1 for n in nf.NORMS for b in nf.BATCH_SIZES})
    assert every[exp.repro_unit]["stage"] == "report" and every[exp.repro_unit]["params"]["norm"] == "GroupNorm"
    assert exp.steps == nf.SAMPLES // min(nf.BATCH_SIZES)
    for b in nf.BATCH_SIZES:  # every batch size: whole steps, evaluations at whole steps
        assert nf.SAMPLES % b == 0 and (nf.SAMPLES // b) % nf.EVALS == 0


def test_evaluation_uses_bn_running_statistics_and_leaves_the_model_as_it_was(tiny_task):
    model = nf.StackedCNN("BatchNorm", _gens(0, 1), channels=(8, 8, 8))
    with torch.no_grad():  # a few training-mode batches, so that the running statistics are not the initial ones
        for k in range(3):
            model(tiny_task.x_train[8 * k:8 * (k + 1)].expand(2, -1, -1, -1, -1))
    before = {k: v.clone() for k, v in model.state_dict().items()}
    x, y = tiny_task.x_test[:40], tiny_task.y_test[:40]
    loss, error = nf._eval_mode_metrics(model, x, y)
    assert model.training
    with torch.no_grad():
        logits = model.eval()(x.expand(2, -1, -1, -1, -1))
    model.train()
    expected = (logits.argmax(-1) != y).double().mean(1)
    torch.testing.assert_close(error, expected)
    torch.testing.assert_close(loss, F.cross_entropy(logits.transpose(1, 2), y.expand(2, -1), reduction="none")
                               .double().mean(1), rtol=1e-6, atol=1e-6)
    train_mode = nf._train_mode_error(model, x, y, batch=4)
    assert not torch.equal(train_mode, error)
    for k, v in model.state_dict().items():
        assert torch.equal(v, before[k]), k
