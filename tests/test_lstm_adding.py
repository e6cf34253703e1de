"""helpers.experiments.lstm_adding: the LSTM, LN-LSTM and ablation cells against torch's, the input embedding (and
why the 2-feature input made LN's win true by construction), the stacking, the held-out batch, the clipping, the
verdicts, the stored rows and the threshold of the experiment ``lstm_adding``."""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pytest
import torch
import torch.nn.functional as F
from torch import nn

from helpers.evidence import runner, statistics
from helpers.experiments import lstm_adding, training


def _words(verdicts):
    """The verdicts' records, in words."""
    return {key: str(said) for key, said in verdicts.items()}



def _gens(*seeds):
    return [torch.Generator().manual_seed(s) for s in seeds]


def _randomize(model: lstm_adding.StackedLSTM, seed: int = 7) -> None:
    """Move every bias, gain and shift off its initial value, so that each one is tested."""
    g = torch.Generator().manual_seed(seed)
    with torch.no_grad():
        for name in ("bias", "bias_o", "gain_x", "gain_h", "gain_c", "shift_x", "shift_h", "shift_c"):
            p = getattr(model, name)
            p.add_(0.3 * torch.randn(p.shape, generator=g))


def test_initial_weights_forget_bias_and_pairing_across_variants():
    model = lstm_adding.StackedLSTM(2, 1, variants=lstm_adding.VARIANTS, hidden=4, generators=_gens(0, 1))
    assert model.variant_of() == ["LSTM", "LSTM", "LN-LSTM", "LN-LSTM", "LN-LSTM without input LN",
                                  "LN-LSTM without input LN"]
    assert model.w_e.shape == (6, 2, 4) and model.bias_e.shape == (6, 1, 4) and model.w_x.shape == (6, 4, 16)
    for name in ("w_e", "bias_e", "w_x", "w_h", "w_o"):  # seed s has the same weights in every arm
        p = getattr(model, name)
        for m in (2, 4):
            torch.testing.assert_close(p[0], p[m], rtol=0, atol=0)
            torch.testing.assert_close(p[1], p[m + 1], rtol=0, atol=0)
        assert not torch.equal(p[0], p[1])
    bound = 1 / math.sqrt(2)  # the embedding as torch.nn.Linear(2, H) draws it: bias included
    assert model.w_e.abs().max() <= bound and model.bias_e.abs().max() <= bound and model.bias_e.abs().min() > 0
    expected = torch.cat([torch.zeros(4), torch.ones(4), torch.zeros(8)])  # i, f, g, o: f is 1
    for m in range(6):
        torch.testing.assert_close(model.bias[m, 0], expected, rtol=0, atol=0)
    alone = lstm_adding.StackedLSTM(1, 1, variants=("LN-LSTM",), hidden=4, generators=_gens(1))
    torch.testing.assert_close(alone.w_h[0], model.w_h[3], rtol=0, atol=0)
    # without the embedding the weights are drawn as before it existed: W_x (2, 4H) first
    bare = lstm_adding.StackedLSTM(1, 1, variants=("LSTM",), hidden=4, generators=_gens(0), embed=False)
    assert not hasattr(bare, "w_e") and bare.w_x.shape == (1, 2, 16)
    g = torch.Generator().manual_seed(0)
    torch.testing.assert_close(bare.w_x[0], (torch.rand(2, 16, generator=g) * 2 - 1) / 2, rtol=0, atol=0)


@pytest.mark.parametrize("embed", [True, False])
def test_plain_lstm_equals_torch_lstm_cell_step_by_step(embed):
    hidden = 8
    model = lstm_adding.StackedLSTM(2, 1, variants=("LSTM",), hidden=hidden, generators=_gens(3, 4), embed=embed)
    _randomize(model)
    x = torch.rand(2, 5, 7, 2)
    states = model.states(x)
    for m in range(2):
        front = nn.Sequential(nn.Linear(2, hidden), nn.Tanh()) if embed else nn.Identity()
        cell = nn.LSTMCell(hidden if embed else 2, hidden)
        with torch.no_grad():
            if embed:
                front[0].weight.copy_(model.w_e[m].T)
                front[0].bias.copy_(model.bias_e[m, 0])
            cell.weight_ih.copy_(model.w_x[m].T)
            cell.weight_hh.copy_(model.w_h[m].T)
            cell.bias_ih.copy_(model.bias[m, 0])
            cell.bias_hh.zero_()
        h = c = torch.zeros(5, hidden)
        for t in range(7):
            h, c = cell(front(x[m, :, t]), (h, c))
            torch.testing.assert_close(states[m, :, t], h, rtol=1e-5, atol=1e-6)
    prediction = model(x)
    readout = states[:, :, -1] @ model.w_o + model.bias_o
    torch.testing.assert_close(prediction, readout.squeeze(-1), rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("variant", ["LN-LSTM", "LN-LSTM without input LN"])
def test_ln_variants_equal_a_per_model_loop_with_torch_layer_norm(variant):
    hidden = 8
    model = lstm_adding.StackedLSTM(3, 1, variants=(variant,), hidden=hidden, generators=_gens(5, 6, 7))
    _randomize(model)
    x = torch.rand(3, 4, 6, 2)
    states = model.states(x)
    with torch.no_grad():
        for m in range(3):
            h = c = torch.zeros(4, hidden)
            for t in range(6):
                xw = torch.tanh(x[m, :, t] @ model.w_e[m] + model.bias_e[m, 0]) @ model.w_x[m]
                if variant == "LN-LSTM":
                    xw = F.layer_norm(xw, (4 * hidden,), model.gain_x[m, 0], model.shift_x[m, 0])
                a = (xw + F.layer_norm(h @ model.w_h[m], (4 * hidden,), model.gain_h[m, 0], model.shift_h[m, 0])
                     + model.bias[m, 0])
                i, f, g, o = a.split(hidden, dim=-1)
                c = torch.sigmoid(f) * c + torch.sigmoid(i) * torch.tanh(g)
                h = torch.sigmoid(o) * torch.tanh(F.layer_norm(c, (hidden,), model.gain_c[m, 0], model.shift_c[m, 0]))
                torch.testing.assert_close(states[m, :, t], h, rtol=1e-5, atol=1e-5)


def _unmarked_input_terms(embed: bool, values=(0.1, 0.3, 0.5, 0.7, 0.9)) -> torch.Tensor:
    """The LN-LSTM's input term ``N_x`` at one unmarked step ``x_t = (v, 0)`` for each ``v`` of ``values``:
    ``(len(values), 4H)``, at the initial weights of seed 0 (gain 1, bias 0)."""
    model = lstm_adding.StackedLSTM(1, 1, variants=("LN-LSTM",), hidden=64, generators=_gens(0), embed=embed)
    x = torch.tensor(values).view(1, -1, 1, 1) * torch.tensor([1.0, 0.0])  # (models, batch, seq_len 1, 2)
    with torch.no_grad():
        (term,) = model.input_terms(x)
    return term[0]


def _cosines(terms: torch.Tensor) -> torch.Tensor:
    return F.cosine_similarity(terms[:, None], terms[None], dim=-1)


def test_the_embedded_input_term_after_ln_changes_with_the_value():
    # What the fix is for: at an unmarked step the LN-LSTM must still see the distractor's value, so that
    # ignoring it is something it has to learn, as the plain LSTM does. The term's direction changes with v.
    terms = _unmarked_input_terms(embed=True)
    off_diagonal = ~torch.eye(len(terms), dtype=torch.bool)
    assert _cosines(terms)[off_diagonal].max() < 0.99, _cosines(terms)
    gaps = torch.cdist(terms, terms) / terms.norm(dim=1).max()
    assert gaps[off_diagonal].min() > 0.1, gaps
    assert (gaps[0, 1:].diff() > 0).all(), gaps[0]  # farther values, farther terms: the value is encoded


def test_without_the_embedding_ln_erases_the_value_at_every_unmarked_step():
    # The property that made the 2-feature result true by construction: x_t W_x = v w_0, and LN(v w_0) has
    # the direction of w_0 for every v > 0 and its length too once v*std(w_0) is well above sqrt(eps)
    # (here within 1% from v = 0.3 on), so the 98 distractors are nearly one and the same input.
    values = (0.1, 0.3, 0.5, 0.7, 0.9)
    terms = _unmarked_input_terms(embed=False, values=values)
    torch.testing.assert_close(_cosines(terms), torch.ones(5, 5), rtol=0, atol=1e-6)
    from_03 = terms[1:]
    assert ((from_03 - from_03[-1]).norm(dim=1) / from_03[-1].norm()).max() < 0.01
    # and a bias-free linear embedding fixes nothing: LN(v w_0 U) is parallel to LN(w_0 U)
    u = torch.randn(2, 64, generator=torch.Generator().manual_seed(1))
    w_x = torch.randn(64, 256, generator=torch.Generator().manual_seed(2)) / 8
    x = torch.tensor([[v, 0.0] for v in values])
    torch.testing.assert_close(_cosines(F.layer_norm(x @ u @ w_x, (256,))), torch.ones(5, 5), rtol=0, atol=1e-6)
    # the plain LSTM's input term v w_0 does carry the value: only LN removed it
    plain = lstm_adding.StackedLSTM(1, 1, variants=("LSTM",), hidden=64, generators=_gens(0), embed=False)
    with torch.no_grad():
        (term,) = plain.input_terms(x.view(1, 5, 1, 2))
    torch.testing.assert_close(term[0, 4], 9 * term[0, 0])


def _loss_and_grads(model, x, y):
    model.zero_grad()
    loss = ((model(x) - y) ** 2).mean(1)
    loss.sum().backward()
    return loss.detach(), {n: torch.zeros_like(p) if p.grad is None else p.grad.clone()
                          for n, p in model.named_parameters()}


def test_models_in_a_stack_do_not_affect_each_other():
    seeds, hidden = (11, 12, 13), 6
    stacked = lstm_adding.StackedLSTM(3, 1, variants=lstm_adding.VARIANTS, hidden=hidden, generators=_gens(*seeds))
    x, y = torch.rand(3, 5, 9, 2), torch.rand(3, 5)
    order = [0, 1, 2] * 3  # model m is seed order[m]; the LSTMs first, then LN-LSTMs, then the ablation
    loss, grads = _loss_and_grads(stacked, x[order], y[order])
    for m, variant in enumerate(stacked.variant_of()):
        s = order[m]
        alone = lstm_adding.StackedLSTM(1, 1, variants=(variant,), hidden=hidden, generators=_gens(seeds[s]))
        loss1, grads1 = _loss_and_grads(alone, x[s:s + 1], y[s:s + 1])
        torch.testing.assert_close(loss[m:m + 1], loss1, rtol=1e-6, atol=1e-7)
        for name, g in grads1.items():
            torch.testing.assert_close(grads[name][m:m + 1], g, rtol=1e-5, atol=1e-7, msg=f"{variant} {name}")


def test_training_a_model_alone_or_stacked_gives_the_same_run():
    kw = dict(steps=6, seq_len=8, hidden=6, eval_every=3)
    stacked = lstm_adding.lstm_runs(seeds=(0, 1), lrs=(1e-3, 3e-1), variants=lstm_adding.VARIANTS, **kw)
    alone = lstm_adding.lstm_runs(seeds=(1,), lrs=(3e-1,), variants=("LN-LSTM",), **kw)
    part = stacked[(stacked["seed"] == 1) & (stacked["lr"] == 3e-1) & (stacked["variant"] == "LN-LSTM")]
    np.testing.assert_allclose(part["loss"], alone["loss"], rtol=1e-5)
    np.testing.assert_allclose(part["eval_loss"], alone["eval_loss"], rtol=1e-5)


def test_the_heldout_batch_is_fixed_and_evaluation_does_not_change_training():
    x1, y1 = lstm_adding.heldout_batch(12)
    x2, y2 = lstm_adding.heldout_batch(12)
    assert x1.shape == (lstm_adding.HELDOUT_SIZE, 12, 2)
    torch.testing.assert_close(x1, x2, rtol=0, atol=0)
    torch.testing.assert_close(y1, y2, rtol=0, atol=0)
    kw = dict(seeds=(0, 1), lrs=(1e-2,), variants=lstm_adding.VARIANTS, steps=6, seq_len=12, hidden=4)
    a, b = lstm_adding.lstm_runs(eval_every=2, **kw), lstm_adding.lstm_runs(eval_every=3, **kw)
    pd.testing.assert_series_equal(a["loss"], b["loss"])
    assert sorted(a.loc[a["eval_loss"].notna(), "step"].unique()) == [0, 2, 4, 6]
    assert sorted(b.loc[b["eval_loss"].notna(), "step"].unique()) == [0, 3, 6]
    first = a[a["step"] == 0]
    model = lstm_adding.StackedLSTM(2, 1, variants=lstm_adding.VARIANTS, hidden=4, generators=_gens(0, 1))
    expected = lstm_adding.heldout_loss(model, x1, y1)
    np.testing.assert_allclose(first["eval_loss"], expected.numpy(), rtol=1e-6)
    torch.testing.assert_close(lstm_adding.heldout_loss(model, x1, y1, chunk=512), expected, rtol=1e-6, atol=0)


def test_clipping_is_per_model_and_bounds_each_models_gradient():
    a = torch.zeros(3, 4, requires_grad=True)
    b = torch.zeros(3, 2, 2, requires_grad=True)
    a.grad = torch.tensor([[0.3, 0.0, 0.0, 0.0], [6.0, 0.0, 0.0, 0.0], [math.nan, 1.0, 0.0, 0.0]])
    b.grad = torch.tensor([[[0.4, 0.0], [0.0, 0.0]], [[8.0, 0.0], [0.0, 0.0]], [[math.inf, 0.0], [0.0, 0.0]]])
    norms = training.clip_per_model([a, b], clip=1.0)
    torch.testing.assert_close(norms, torch.tensor([0.5, 10.0, 1.0]))
    torch.testing.assert_close(a.grad[0], torch.tensor([0.3, 0.0, 0.0, 0.0]))  # under the clip: untouched
    after = (a.grad.flatten(1) ** 2).sum(1) + (b.grad.flatten(1) ** 2).sum(1)
    assert after[1].sqrt() <= 1.0 + 1e-6 and after[1].sqrt() > 0.999
    torch.testing.assert_close(a.grad[1, 0] / b.grad[1, 0, 0], torch.tensor(6.0 / 8.0))  # direction kept
    assert torch.isfinite(a.grad).all() and torch.isfinite(b.grad).all()


def test_clipping_bounds_each_models_gradient_without_touching_the_others():
    # model 0's loss is scaled by 1e6, model 1's is not: only model 0 is clipped
    model = lstm_adding.StackedLSTM(1, 2, variants=("LSTM",), hidden=4, generators=_gens(0))
    x, y = torch.rand(2, 3, 5, 2), torch.rand(2, 3)

    def grads(scale):
        model.zero_grad()
        (((model(x) - y) ** 2).mean(1) * scale).sum().backward()
        params = [p for p in model.parameters() if p.grad is not None]
        norms = training.clip_per_model(params, clip=1.0)
        return norms, [p.grad.clone() for p in params]

    free_norms, free = grads(torch.tensor([0.1, 0.1]))
    assert (free_norms < 1.0).all()  # nothing to clip at this scale
    norms, clipped = grads(torch.tensor([1e5, 0.1]))
    torch.testing.assert_close(norms, free_norms * torch.tensor([1e6, 1.0]))
    total = sum((g.flatten(1) ** 2).sum(1) for g in clipped).sqrt()
    torch.testing.assert_close(total[0], torch.tensor(1.0))
    for g, g_free in zip(clipped, free, strict=True):
        torch.testing.assert_close(g[1], g_free[1], rtol=0, atol=0)  # model 1: untouched
        torch.testing.assert_close(g[0], g_free[0] / free_norms[0], rtol=1e-4, atol=1e-8)  # same direction


def test_keep_rows_keeps_the_first_steps_and_the_evaluations():
    frame = lstm_adding.lstm_runs(seeds=(0,), lrs=(1e-2,), variants=("LSTM",), steps=45, seq_len=5, hidden=4,
                           eval_every=10)
    assert len(frame) == 46 and frame["loss"].isna().sum() == 1  # no minibatch after the last update
    kept = training.keep_rows(frame)
    assert sorted(kept["step"]) == [*range(runner.REPRO_STEPS), 20, 30, 40, 45]
    assert sorted(kept.loc[kept["eval_loss"].notna(), "step"]) == [0, 10, 20, 30, 40, 45]


def test_the_threshold_is_fixed_before_any_run():
    assert lstm_adding.THRESHOLD == statistics.threshold_level(1 / 6, 0.0, 0.7)
    assert lstm_adding.THRESHOLD == pytest.approx(0.05)


def test_steps_to_threshold_and_scores_count_censored_runs_as_the_cap():
    rows = []
    for seed, curve in ((0, [0.2, 0.1, 0.04, 0.03]), (1, [0.2, 0.2, 0.2, 0.2]), (2, [0.2, 0.04, 0.2, 0.01])):
        for step, value in zip((0, 10, 20, 30), curve, strict=True):
            rows.append({"step": step, "seed": seed, "variant": "LSTM", "lr": 1e-3, "loss": 1.0,
                         "eval_loss": value})
    frame = pd.DataFrame(rows)
    reached = lstm_adding.lstm_steps_to_threshold(frame)
    assert reached["steps"].tolist()[0] == 20 and math.isnan(reached["steps"].tolist()[1])
    assert reached["steps"].tolist()[2] == 10
    scores = lstm_adding.pilot_scores(frame)
    assert scores["score"].tolist() == [pytest.approx((20 + 30 + 10) / 3)]


def test_the_experiment_is_declared_as_tuned_with_small_units():
    exp = runner.experiment("lstm_adding")
    assert exp.tuning is not None and exp.tuning.key == "lr"
    rates = np.array(sorted(exp.tuning.rates))
    assert len(rates) >= 5 and (rates[1:] / rates[:-1] <= 10 / 3 * (1 + 1e-9)).all()
    assert exp.seeds == tuple(range(10)) and not set(exp.seeds) & set(exp.tuning.pilot_seeds)
    assert exp.threshold == lstm_adding.THRESHOLD and exp.tuning.learned_below == exp.steps
    best = {(v,): rates[2] for v in lstm_adding.VARIANTS}
    for unit in runner.units(exp, best):
        lrs = unit["params"]["lr"]
        assert len(lrs if isinstance(lrs, tuple) else (lrs,)) * len(unit["seeds"]) <= 15


def test_the_stored_best_rates_are_inside_the_grid():
    stored = runner.load("lstm_adding")
    assert stored.meta["best_rates"], "no best rates stored"
    for row in stored.meta["best_rates"]:
        assert row["learned"] and not row["on_edge"], row


def _synthetic_runs(first_below: dict[str, int], cap: int = 40) -> pd.DataFrame:
    """Pilot and report rows whose held-out loss drops below the threshold at ``first_below[variant]``
    (plus the seed, in steps of 10) and ends at a level that falls with it."""
    rows = []
    rates = (1e-3, 3e-3, 1e-2, 3e-2, 1e-1)
    for stage, seeds in (("pilot", (100, 101, 102)), ("report", tuple(range(10)))):
        for variant, at in first_below.items():
            for lr in rates if stage == "pilot" else (1e-2,):
                for seed in seeds:
                    start = at + 10 * (seed % 2) + (0 if lr == 1e-2 else 10)
                    for step in range(0, cap + 1, 10):
                        level = 0.001 * at * (1 + seed % 3) if step >= start else 0.2
                        rows.append({"stage": stage, "step": step, "seed": seed, "variant": variant, "lr": lr,
                                     "loss": 1.0, "eval_loss": level})
    return pd.DataFrame(rows)


def test_the_verdicts_compare_each_ln_arm_with_the_lstm_and_with_each_other():
    verdicts = _words(lstm_adding.lstm_verdicts(_synthetic_runs({"LSTM": 30, "LN-LSTM": 10, "LN-LSTM without input LN": 20})))
    variants = lstm_adding.VARIANTS
    assert set(verdicts) == {*(f"best rate, {v}" for v in variants), *(f"time, {v}" for v in variants),
                             *(f"best rate on the report seeds, {v}" for v in variants),
                             "steps", "final loss",
                             "steps, LN-LSTM without input LN vs LSTM", "final loss, LN-LSTM without input LN vs LSTM",
                             "steps, LN-LSTM vs LN-LSTM without input LN",
                             "final loss, LN-LSTM vs LN-LSTM without input LN"}
    assert verdicts["best rate, LSTM"].startswith("0.01, inside the grid")
    assert verdicts["steps"].startswith("LN-LSTM needs") and verdicts["steps"].endswith(")")
    assert "than LSTM (95% CI" in verdicts["steps"]
    assert verdicts["steps, LN-LSTM without input LN vs LSTM"].startswith("LN-LSTM without input LN needs")
    assert "fewer steps" in verdicts["steps, LN-LSTM vs LN-LSTM without input LN"]
    # the claim of the ablation comparison is nothing: the other way round is no "opposite"
    reverse = _words(lstm_adding.lstm_verdicts(_synthetic_runs({"LSTM": 30, "LN-LSTM": 20, "LN-LSTM without input LN": 10})))
    assert reverse["steps, LN-LSTM vs LN-LSTM without input LN"].startswith("LN-LSTM needs")
    assert "more steps" in reverse["steps, LN-LSTM vs LN-LSTM without input LN"]
    assert reverse["steps"].startswith("LN-LSTM needs") and "fewer" in reverse["steps"]
    # the final loss is the excess over the task's floor 0, i.e. the loss itself, relative
    assert "lower final held-out loss than LSTM" in verdicts["final loss"]


def test_a_report_seed_stuck_at_the_best_rate_is_said_plainly():
    frame = _synthetic_runs({"LSTM": 30, "LN-LSTM": 10, "LN-LSTM without input LN": 20})
    key = "best rate on the report seeds, LN-LSTM"
    assert _words(lstm_adding.lstm_verdicts(frame))[key].startswith("holds: 0 of 10 report seeds did not reach the threshold "
                                                             "before step 40 at 0.01; ")
    # plant one report seed that never gets below the threshold
    stuck = (frame["stage"] == "report") & (frame["variant"] == "LN-LSTM") & (frame["seed"] == 4)
    said = _words(lstm_adding.lstm_verdicts(frame.assign(eval_loss=frame["eval_loss"].where(~stuck, 0.2))))[key]
    assert said == ("does not hold: 1 of 10 report seeds did not reach the threshold before step 40 at 0.01; of the "
                    "pilot runs at the neighbouring rates, 0 of 3 did at 0.003 and 0 of 3 at 0.03")


def test_the_core_paths_claim_still_reads_the_lstm_verdict():
    from helpers.evidence import card

    (claim,) = [c for c in card.CORE_CLAIMS if c.experiment == "lstm_adding"]
    assert (claim.key, claim.favours) == ("steps", "LN-LSTM")
    assert claim.key in runner.load("lstm_adding").verdicts
