"""helpers.experiments.small_transformer: the copy task and its two levels, the three placements of the norm,
causality, the stacking, the warm-up, the timing hook and the declaration of ``small_transformer``."""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pytest
import torch

from helpers.evidence import runner, statistics
from helpers.experiments import small_transformer as st
from helpers.experiments import training


def _gens(*seeds):
    return [torch.Generator().manual_seed(s) for s in seeds]


def _model(placement, *seeds, n_lrs=1, **kw):
    kw = {"width": 8, "blocks": 2, "heads": 2, "seq_len": 7, "vocab": 5, **kw}
    return st.StackedDecoder(len(seeds), n_lrs, placement=placement, generators=_gens(*seeds), **kw)


def _randomize_norms(model, seed=3):
    """Move every LN gain and bias off 1 and 0, so that each one is tested."""
    g = torch.Generator().manual_seed(seed)
    with torch.no_grad():
        for name, p in model.named_parameters():
            if "norm" in name:
                p.add_(0.3 * torch.randn(p.shape, generator=g))


# ------------------------------------------------------------------ the task and its levels


def test_copy_task_shapes_and_the_second_half_is_the_first():
    seqs = st.copy_task(64, 6, 11, torch.Generator().manual_seed(0))
    assert seqs.shape == (64, 12) and seqs.dtype == torch.int64
    assert int(seqs.min()) >= 0 and int(seqs.max()) < 11
    torch.testing.assert_close(seqs[:, 6:], seqs[:, :6], rtol=0, atol=0)
    again = st.copy_task(64, 6, 11, torch.Generator().manual_seed(0))
    torch.testing.assert_close(seqs, again, rtol=0, atol=0)
    assert len(set(seqs[:, 0].tolist())) > 1  # drawn, not constant


class _Predictor(st.StackedDecoder):
    """A stand-in whose logits are given: the loss is the model's own :meth:`loss`."""

    def __init__(self, logits_of):
        super().__init__(1, placement="none", vocab=4, seq_len=3, width=2, blocks=1, heads=1,
                         generators=_gens(0))
        self.logits_of = logits_of

    def forward(self, idx):
        return self.logits_of(idx)


@pytest.mark.parametrize(("n", "vocab"), [(8, 16), (5, 3), (12, 16)])
def test_an_oracle_scores_the_floor_and_a_uniform_predictor_the_no_copy_level(n, vocab):
    seqs = st.copy_task(200, n, vocab, torch.Generator().manual_seed(1))[None]  # one model

    def oracle(idx):  # causal: at input position t >= n - 1 the next token is idx[t + 1 - n]
        logits = torch.zeros(*idx.shape, vocab)
        t = torch.arange(n - 1, 2 * n - 1)
        logits[:, :, t] = -1e4 * (1 - torch.nn.functional.one_hot(idx[:, :, t + 1 - n], vocab).float())
        return logits

    floor = _Predictor(oracle).loss(seqs)
    assert floor.item() == pytest.approx(st.copy_floor(n, vocab), rel=1e-6)
    uniform = _Predictor(lambda idx: torch.zeros(*idx.shape, vocab)).loss(seqs)
    assert uniform.item() == pytest.approx(st.no_copy_level(n, vocab), rel=1e-6)
    # the same two numbers from the definition, in float64: ln V on the first n - 1 targets, 0 after
    targets = seqs[0, :, 1:]
    ln_v = torch.tensor(math.log(vocab), dtype=torch.float64)
    per_target = torch.where(torch.arange(2 * n - 1) < n - 1, ln_v, torch.zeros((), dtype=torch.float64))
    assert per_target.expand(targets.shape).mean().item() == pytest.approx(st.copy_floor(n, vocab), rel=1e-12)


def test_the_threshold_is_halfway_and_fixed_before_any_run():
    assert st.NO_COPY == st.no_copy_level(st.N_COPY, st.VOCAB) == pytest.approx(math.log(st.VOCAB))
    assert st.FLOOR == pytest.approx((st.N_COPY - 1) / (2 * st.N_COPY - 1) * math.log(st.VOCAB))
    assert st.THRESHOLD == statistics.threshold_level(st.NO_COPY, st.FLOOR, 0.5)
    assert st.THRESHOLD == pytest.approx((st.NO_COPY + st.FLOOR) / 2)


# ------------------------------------------------------------------ the placements


def test_post_ln_standardises_every_block_output_and_pre_ln_leaves_the_stream_alone():
    idx = torch.randint(0, 5, (2, 4, 7), generator=torch.Generator().manual_seed(2))
    post = _model("post", 0, 1)
    stream = post.stream(idx)  # gains 1, biases 0: LN's output itself
    torch.testing.assert_close(stream.mean(-1), torch.zeros(stream.shape[:-1]), rtol=0, atol=1e-5)
    var = stream.var(-1, unbiased=False)
    assert ((var > 0.99) & (var <= 1.0 + 1e-5)).all()
    pre = _model("pre", 0, 1)
    stream = pre.stream(idx)
    assert (stream.mean(-1).abs() > 1e-3).float().mean() > 0.9  # not centred ...
    assert (stream.var(-1, unbiased=False) - 1).abs().max() > 0.1  # ... nor scaled
    # the read-out of Pre-LN reads the final LN's output (gains 1, biases 0): standardised
    readout = pre.apply_norm(stream, 2 * pre.n_blocks)
    torch.testing.assert_close(readout.mean(-1), torch.zeros(readout.shape[:-1]), rtol=0, atol=1e-5)


def test_each_sublayer_sits_where_its_placement_says():
    g = torch.Generator().manual_seed(4)
    x = torch.randn(2, 3, 5, 8, generator=g)
    gain, bias = 1 + 0.3 * torch.randn(2, 1, 1, 8, generator=g), 0.3 * torch.randn(2, 1, 1, 8, generator=g)
    w = torch.randn(8, 8, generator=g)

    def f(z):
        return torch.tanh(z @ w)

    ln = torch.nn.functional.layer_norm
    expected = {"none": x + f(x),
                "pre": x + f(ln(x, (8,)) * gain + bias),
                "post": ln(x + f(x), (8,)) * gain + bias}
    for placement, want in expected.items():
        model = _model(placement, 0, 1)
        with torch.no_grad():  # norm 0: the first block's attention norm
            model.blocks[0].norms[0].copy_(gain)
            model.blocks[0].norms[1].copy_(bias)
        got = model.residual(x, f, 0)
        torch.testing.assert_close(got, want, rtol=1e-5, atol=1e-5, msg=placement)


def test_no_norm_uses_no_layer_norm_and_the_others_use_theirs(monkeypatch):
    calls = []
    real = st.layer_norm
    monkeypatch.setattr(st, "layer_norm", lambda x, shape: calls.append(1) or real(x, shape))
    idx = torch.randint(0, 5, (1, 2, 7), generator=torch.Generator().manual_seed(5))
    for placement, expected in (("none", 0), ("pre", 2 * 2 + 1), ("post", 2 * 2)):
        calls.clear()
        _model(placement, 0)(idx)
        assert len(calls) == expected, placement


def test_the_forward_equals_a_plain_per_model_loop_with_torch_ops():
    """The stacked forward against one model written out with torch's own LayerNorm, GELU and
    attention (scaled_dot_product_attention with is_causal), in float64."""
    F = torch.nn.functional
    for placement in st.PLACEMENTS:
        model = _model(placement, 7, 8).double()
        _randomize_norms(model)
        idx = torch.randint(0, 5, (2, 3, 7), generator=torch.Generator().manual_seed(6))
        logits = model(idx)
        for m in range(2):
            x = model.tok[m][idx[m]] + model.pos[m]
            for block in model.blocks:
                g1, b1, g2, b2 = (p[m, 0, 0] for p in block.norms)

                def attn(z, block=block, m=m):
                    q, k, v = (z @ block.w_qkv[m] + block.b_qkv[m]).view(3, 7, 3, 2, 4).permute(2, 0, 3, 1, 4)
                    y = F.scaled_dot_product_attention(q, k, v, is_causal=True)
                    return y.transpose(1, 2).reshape(3, 7, 8) @ block.w_o[m] + block.b_o[m]

                def mlp(z, block=block, m=m):
                    return F.gelu(z @ block.w_1[m] + block.b_1[m]) @ block.w_2[m] + block.b_2[m]

                for f, gain, bias in ((attn, g1, b1), (mlp, g2, b2)):
                    if placement == "pre":
                        x = x + f(F.layer_norm(x, (8,), gain, bias))
                    elif placement == "post":
                        x = F.layer_norm(x + f(x), (8,), gain, bias)
                    else:
                        x = x + f(x)
            if placement == "pre":
                x = F.layer_norm(x, (8,), model.final_norm[0][m, 0, 0], model.final_norm[1][m, 0, 0])
            torch.testing.assert_close(logits[m], x @ model.w_out[m] + model.b_out[m], rtol=1e-10, atol=1e-10)


def test_rmsnorm_and_dyt_arms_equal_their_formulas_in_a_plain_loop():
    """Pre-RMSNorm and DyT against one model written out with torch's own ops, in float64: every
    norm (the final one too) is ``x / RMS(x) * gain`` (no bias) or ``tanh(alpha x) * gain + bias``."""
    F = torch.nn.functional
    idx = torch.randint(0, 5, (2, 3, 7), generator=torch.Generator().manual_seed(16))
    for norm in ("RMSNorm", "DyT"):
        model = _model("pre", 7, 8, norm=norm, alpha=0.7).double()
        _randomize_norms(model)
        if norm == "DyT":
            with torch.no_grad():
                for k, a in enumerate(model.alphas):
                    a.fill_(0.3 + 0.2 * k)
        logits = model(idx)

        def n(z, k, m, model=model, norm=norm):
            gain, bias = (p[m, 0, 0] for p in model._gain_bias(k))
            if norm == "RMSNorm":
                return F.rms_norm(z, (8,), gain, eps=torch.finfo(z.dtype).eps)
            return torch.tanh(model.alphas[k][m, 0, 0, 0] * z) * gain + bias

        for m in range(2):
            x = model.tok[m][idx[m]] + model.pos[m]
            for i, block in enumerate(model.blocks):
                x = x + model.attention(block, n(x, 2 * i, m)[None].expand(2, -1, -1, -1))[m]
                x = x + model.mlp(block, n(x, 2 * i + 1, m)[None].expand(2, -1, -1, -1))[m]
            x = n(x, 2 * model.n_blocks, m)
            torch.testing.assert_close(logits[m], x @ model.w_out[m] + model.b_out[m], rtol=1e-10, atol=1e-10,
                                       msg=norm)


def test_rmsnorm_and_dyt_arms_start_from_the_same_weights_and_dyt_alpha_from_its_arm():
    base = dict(_model("pre", 3, 4).named_parameters())
    for norm in ("RMSNorm", "DyT"):
        other = dict(_model("pre", 3, 4, norm=norm, alpha=2.0).named_parameters())
        for name, p in base.items():
            torch.testing.assert_close(other[name], p, rtol=0, atol=0)
        extra = set(other) - set(base)
        assert extra == ({f"alphas.{k}" for k in range(2 * 2 + 1)} if norm == "DyT" else set())
        for name in extra:
            assert other[name].shape == (2, 1, 1, 1) and (other[name] == 2.0).all()
    for name, arm in st.ARMS.items():
        assert arm.norm in st.NORMS and arm.placement in st.PLACEMENTS, name
    assert [a.alpha for a in st.ARMS.values() if a.norm == "DyT"] == list(st.DYT_ALPHAS)


def test_rmsnorm_leaves_its_biases_without_a_gradient_and_dyt_learns_alpha():
    idx = torch.randint(0, 5, (2, 3, 7), generator=torch.Generator().manual_seed(17))
    for norm in ("RMSNorm", "DyT"):
        model = _model("pre", 0, 1, norm=norm)
        model(idx).square().mean().backward()
        biases = [model.blocks[0].norms[1], model.final_norm[1]]
        if norm == "RMSNorm":
            assert all(b.grad is None for b in biases)
        else:
            assert all(b.grad is not None for b in biases)
            assert all(a.grad is not None and a.grad.abs().sum() > 0 for a in model.alphas)


def test_norm_maps_records_each_ln_input_and_its_standardised_output():
    model = _model("pre", 0, 1)
    _randomize_norms(model)
    seqs = st.copy_task(3, 4, 5, torch.Generator().manual_seed(18))
    maps = model.norm_maps(seqs)
    assert len(maps) == 2 * 2 + 1 and model.recorded is None
    for x, y in maps:
        assert x.shape == y.shape == (2, 3, 7, 8)
        torch.testing.assert_close(y, torch.nn.functional.layer_norm(x, (8,)), rtol=1e-5, atol=1e-5)
    # the first norm reads the embeddings themselves
    torch.testing.assert_close(maps[0][0][0], model.tok[0][seqs[:, :-1]] + model.pos[0], rtol=0, atol=0)


def test_a_later_token_does_not_change_earlier_logits():
    idx = torch.randint(0, 5, (2, 4, 7), generator=torch.Generator().manual_seed(8))
    changed = idx.clone()
    changed[:, :, 4] = (changed[:, :, 4] + 1) % 5
    for placement in st.PLACEMENTS:
        model = _model(placement, 0, 1)
        before, after = model(idx), model(changed)
        torch.testing.assert_close(after[:, :, :4], before[:, :, :4], rtol=0, atol=1e-6, msg=placement)
        assert not torch.allclose(after[:, :, 4:], before[:, :, 4:]), placement


# ------------------------------------------------------------------ stacking and pairing


def test_arms_of_one_seed_share_their_initial_weights_and_a_stack_holds_each_seed_alone():
    models = {p: _model(p, 3, 4, n_lrs=2) for p in st.PLACEMENTS}
    alone = _model("post", 4)
    names = [n for n, _ in models["none"].named_parameters()]
    for name in names:
        ref = dict(models["none"].named_parameters())[name]
        for p in ("pre", "post"):
            torch.testing.assert_close(dict(models[p].named_parameters())[name], ref, rtol=0, atol=0)
        # model m is rate m // n_seeds and seed m % n_seeds: models 1 and 3 are seed 4
        one = dict(alone.named_parameters())[name]
        torch.testing.assert_close(ref[1:2], one, rtol=0, atol=0)
        torch.testing.assert_close(ref[3:4], one, rtol=0, atol=0)
    for name, p in models["pre"].named_parameters():
        if "norm" in name:  # gains 1, biases 0
            assert set(p.unique().tolist()) <= {0.0, 1.0}
    assert not torch.equal(models["none"].tok[0], models["none"].tok[1])


def test_a_model_in_a_stack_equals_the_same_seed_alone():
    idx = torch.randint(0, 5, (3, 4, 8), generator=torch.Generator().manual_seed(9))
    for placement in st.PLACEMENTS:
        stacked = _model(placement, 10, 11, 12)
        _randomize_norms(stacked)
        loss = stacked.loss(idx)
        for m, seed in enumerate((10, 11, 12)):
            alone = _model(placement, seed)
            with torch.no_grad():
                for (_, p), (_, q) in zip(alone.named_parameters(), stacked.named_parameters(), strict=True):
                    p.copy_(q[m:m + 1])
            torch.testing.assert_close(alone.loss(idx[m:m + 1]), loss[m:m + 1], rtol=1e-6, atol=1e-6)


def test_training_a_model_alone_or_stacked_gives_the_same_run():
    kw = {"steps": 5, "n": 4, "vocab": 6, "width": 8, "blocks": 2, "batch": 8, "eval_every": 2}
    stacked = st.copy_runs(seeds=(0, 1), lrs=(1e-3, 3e-2), variant="Post-LN", **kw)
    alone = st.copy_runs(seeds=(1,), lrs=(3e-2,), variant="Post-LN", **kw)
    part = stacked[(stacked["seed"] == 1) & (stacked["lr"] == 3e-2)]
    np.testing.assert_allclose(part["loss"], alone["loss"], rtol=1e-5)
    np.testing.assert_allclose(part["eval_loss"], alone["eval_loss"], rtol=1e-5)
    assert sorted(part.loc[part["eval_loss"].notna(), "step"]) == [0, 2, 4, 5]
    # every arm draws the same weights from a seed's generator, so the batches drawn after them are
    # the same too; with the same placement, a warm-up arm's first loss is the plain arm's
    states = {arm: st._setup((0, 1), (1e-3,), arm, 4, 6, 8, 2, 2)[0] for arm in st.ARMS}
    for arm, gens in states.items():
        for g, ref in zip(gens, states["no norm"], strict=True):
            assert torch.equal(g.get_state(), ref.get_state()), arm
    pre = st.copy_runs(seeds=(0, 1), lrs=(1e-3,), variant="Pre-LN + warm-up", warmup=3, **kw)
    plain = st.copy_runs(seeds=(0, 1), lrs=(1e-3,), variant="Pre-LN", **kw)
    np.testing.assert_array_equal(pre.loc[pre["step"] == 0, "loss"], plain.loc[plain["step"] == 0, "loss"])


def test_a_diverged_model_does_not_touch_the_others():
    gens = _gens(0)
    model = st.StackedDecoder(1, 2, placement="pre", vocab=6, seq_len=7, width=8, blocks=2, generators=gens)
    clean_gens = _gens(0)
    clean = st.StackedDecoder(1, 1, placement="pre", vocab=6, seq_len=7, width=8, blocks=2, generators=clean_gens)
    with torch.no_grad():
        model.blocks[0].w_1[1].fill_(math.nan)  # model 1 is broken
    seed_of = torch.zeros(2, dtype=torch.long)
    draw = st.copy_source(4, 6).draw
    loss = st._train_step(model, gens, seed_of, torch.tensor([1e-2, 1e-2]), 0, {}, draw=draw, batch=8, clip=1.0)
    clean_loss = st._train_step(clean, clean_gens, torch.zeros(1, dtype=torch.long), torch.tensor([1e-2]), 0, {},
                                draw=draw, batch=8, clip=1.0)
    assert math.isnan(loss[1]) and torch.isfinite(loss[0])
    torch.testing.assert_close(loss[0:1], clean_loss, rtol=1e-6, atol=1e-7)
    for (name, p), (_, q) in zip(model.named_parameters(), clean.named_parameters(), strict=True):
        torch.testing.assert_close(p[0:1], q, rtol=1e-6, atol=1e-7, msg=name)
    assert training.finite_or_inf(loss)[1] == math.inf


# ------------------------------------------------------------------ warm-up and timing


def test_the_warm_up_is_linear_and_does_not_depend_on_the_cap():
    assert [st.warmup_factor(s, 4) for s in range(6)] == [0.25, 0.5, 0.75, 1.0, 1.0, 1.0]
    assert [st.warmup_factor(s, 0) for s in range(3)] == [1.0, 1.0, 1.0]
    # the first update of a warm-up arm is the plain arm's at a quarter of the rate (warm-up 4)
    kw = {"seeds": (0,), "steps": 1, "n": 4, "vocab": 6, "width": 8, "blocks": 2, "batch": 8, "eval_every": 1}
    warm = st.copy_runs(lrs=(4e-2,), variant="Post-LN + warm-up", warmup=4, **kw)
    quarter = st.copy_runs(lrs=(1e-2,), variant="Post-LN", **kw)
    full = st.copy_runs(lrs=(4e-2,), variant="Post-LN", **kw)
    assert warm["eval_loss"].iloc[-1] == quarter["eval_loss"].iloc[-1] != full["eval_loss"].iloc[-1]
    # a plain arm ignores the warm-up argument
    pd.testing.assert_frame_equal(st.copy_runs(lrs=(4e-2,), variant="Post-LN", warmup=4, **kw), full)


# ------------------------------------------------------------------ summaries and the declaration


def _frame(curves, stage="pilot", variant="Pre-LN", lr=1e-3):
    rows = []
    for seed, curve in curves.items():
        for step, value in zip((0, 10, 20, 30), curve, strict=True):
            rows.append({"step": step, "seed": seed, "variant": variant, "lr": lr, "loss": 1.0,
                         "eval_loss": value, "stage": stage})
    return pd.DataFrame(rows)


def test_pilot_scores_count_a_run_that_never_gets_there_as_the_cap():
    high, low = st.NO_COPY, st.FLOOR
    frame = _frame({0: [high, high, low, low], 1: [high] * 4, 2: [high, low, high, low]})
    assert st.pilot_scores(frame)["score"].tolist() == [pytest.approx((20 + 30 + 10) / 3)]


def test_the_largest_stable_rate_and_learns_follow_their_definitions():
    rates = (1e-3, 3e-3, 1e-2, 3e-2, 1e-1)
    ends = {1e-3: [st.NO_COPY + 0.01] * 3, 3e-3: [1.4, 1.5, 1.3], 1e-2: [1.4, 1.3, 1.9],
            3e-2: [1.3, math.inf, 1.4], 1e-1: [1.3, 1.3, 1.3]}
    pilot = pd.concat([_frame({s: [st.NO_COPY, 2.0, 1.8, e] for s, e in enumerate(ends[r])}, lr=r)
                       for r in rates])
    words = st._largest_stable(pilot, "Pre-LN", 30)
    assert words.startswith("0.1 on 3 pilot seeds") and "largest rate, so a larger one" in words
    pilot = pilot[pilot["lr"] < 0.1]
    words = st._largest_stable(pilot, "Pre-LN", 30)
    assert words.startswith("0.01 on 3 pilot seeds") and "at 0.03, 1 of 3 end at or above it" in words
    assert "there they end at 1.300 to 1.900" in words
    pilot = pilot.assign(eval_loss=pilot["eval_loss"].replace(1.9, 2.1))  # above the threshold: not learning
    assert st._largest_stable(pilot, "Pre-LN", 30).startswith("0.003 on 3 pilot seeds")
    assert "1 of them with a non-finite loss" in words
    finals = pd.DataFrame({"final": [st.FLOOR] * 9 + [math.inf], "lr": 1e-2, "variant": "Pre-LN"})
    assert st._learns(finals).words.startswith("yes, at lr 0.01") and "9/10 seeds end below" in st._learns(finals).words
    assert st._learns(finals).answer == "yes"
    gap = st.NO_COPY - st.FLOOR
    finals = pd.DataFrame({"final": st.NO_COPY - gap * np.linspace(0.05, 0.2, 10), "lr": 1e-2})
    assert st._learns(finals).words.startswith("no, at lr 0.01") and st._learns(finals).answer == "no"  # about 12%
    finals = pd.DataFrame({"final": st.NO_COPY - gap * np.linspace(0.1, 0.9, 10), "lr": 1e-2})
    assert st._learns(finals).words.startswith("undecided with 10 seeds")  # about half, give or take
    assert st._learns(finals).answer is None


def test_the_experiment_is_declared_as_tuned_with_small_units():
    exp = runner.experiment("small_transformer")
    assert exp.tuning is not None and exp.tuning.key == "lr"
    rates = np.array(sorted(exp.tuning.rates))
    assert len(rates) >= 6 and (rates[1:] / rates[:-1] <= 10 / 3 * (1 + 1e-9)).all()
    assert exp.tuning.pilot_seeds == (100, 101, 102) and exp.seeds == tuple(range(10))
    assert exp.threshold == st.THRESHOLD and exp.tuning.learned_below == exp.steps
    assert exp.fixed["warmup"] == exp.steps // 10
    assert set(exp.grid["variant"]) == set(st.ARMS)
    best = {(arm,): rates[2] for arm in st.ARMS}
    for unit in runner.units(exp, best):
        lrs = unit["params"]["lr"]
        assert len(lrs if isinstance(lrs, tuple) else (lrs,)) * len(unit["seeds"]) <= 15


def test_the_stored_best_rates_are_inside_the_grid():
    stored = runner.load("small_transformer")
    assert stored.meta["best_rates"], "no best rates stored"
    for row in stored.meta["best_rates"]:
        assert not row["on_edge"], row


def test_the_best_rate_check_counts_the_report_seeds_that_never_reach_the_threshold():
    from helpers.experiments.threshold_runs import steps_to_threshold

    stored = runner.load("small_transformer")
    report = stored.frame[stored.frame["stage"] == "report"]
    reached = steps_to_threshold(report, st.THRESHOLD)
    for arm in st.ARMS:
        never = int(reached.loc[reached["variant"] == arm, "steps"].isna().sum())
        words = stored.verdicts[f"best rate on the report seeds, {arm}"]
        assert words.split(": ", 1)[1].startswith(f"{never} of 10 report seeds did not reach the threshold "
                                                  f"before step {st.STEPS} at "), arm
    # at Post-LN's best rate one report seed never reached the threshold; every pilot run at the rate below it did
    assert stored.verdicts["best rate on the report seeds, Post-LN"].startswith("does not hold: 1 of 10 ")


def test_the_arm_groups_cover_every_arm_and_notebook_13_reads_only_the_placement_arms():
    from helpers.experiments import training_speed_table

    assert set(st.PLACEMENT_ARMS) | set(st.NORM_FREE_ARMS) == set(st.ARMS)
    transformer = [s for s in training_speed_table.settings() if s.experiment == "small_transformer"]
    assert transformer and dict(transformer[0].where)["variant"] == st.PLACEMENT_ARMS
