"""helpers.experiments.rnn_regimes: the held-out measures of the tiny-RNN experiments (per-unit moments, drift,
Santurkar's ICS) against direct computations, and the protocol of ``rnn_regimes``/``rnn_mechanism``."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
import torch

from helpers.evidence import runner
from helpers.experiments import lstm_adding, rnn_regimes
from helpers.experiments.rnn_models import StackedRNN


def _gens(*seeds):
    return [torch.Generator().manual_seed(s) for s in seeds]


def _model(depth=2, variants=("no norm", "LayerNorm", "noisy LayerNorm"), noises=(0.5,)):
    model = StackedRNN(2, 1, variants=variants, noises=noises, depth=depth, hidden=5, generators=_gens(0, 1))
    g = torch.Generator().manual_seed(3)
    with torch.no_grad():  # move biases and gains off 0 and 1, so that each one matters
        for p in (model.bias, model.gain):
            p.add_(0.3 * torch.randn(p.shape, generator=g))
    return model


# A batch in chunks of 16 against the whole batch of 40: the matrix products may block the rows
# differently, so the two forwards may round differently. Measured, as the largest difference in
# float32 ulps of the values' scale: 0 on every kernel path of an AMD EPYC (AVX2 and default
# capability, MKL_CBWR=COMPATIBLE, 1 and 2 threads; mean and std within 0.4 ulps of their float64
# values); 2.3 on an Intel Xeon (AVX-512, AMX: 4.6e-7 at a scale of 1.65). The bound is 10 times
# the largest.
MOMENTS_ULPS = 23


def test_unit_moments_are_the_mean_and_std_over_batch_and_time_in_eval_mode(assert_within_ulps):
    model = _model()
    x, y = lstm_adding.heldout_batch(7, size=40)
    prediction, mean, std = rnn_regimes.unit_moments(model, x, chunk=16)
    assert model.training  # put back as it was
    model.eval()
    with torch.no_grad():
        expected_prediction, pre = model(x.expand(model.n_models, *x.shape))
    pre = pre.double()  # (models, batch * seq_len, hidden)
    assert_within_ulps(prediction, expected_prediction, MOMENTS_ULPS, "prediction")
    assert_within_ulps(mean, pre.mean(1).float(), MOMENTS_ULPS, "mean")
    assert_within_ulps(std, pre.std(1, unbiased=False).float(), MOMENTS_ULPS, "std")
    assert mean.shape == std.shape == (model.n_models, 5)


def _top_grad_by_hand(model: StackedRNN, params: dict, x, y) -> torch.Tensor:
    """The top layer's weight gradient, by an ordinary backward pass through a fresh copy of the model."""
    copy = StackedRNN(2, 1, variants=("no norm", "LayerNorm", "noisy LayerNorm"), noises=(0.5,), depth=model.depth,
                      hidden=5, generators=_gens(0, 1))
    with torch.no_grad():
        for name, p in copy.named_parameters():
            p.copy_(params[name])
    copy.eval()  # no noise, so that the comparison needs no generator
    prediction, _ = copy(x)
    ((prediction - y) ** 2).mean(1).sum().backward()
    return torch.cat([copy.w_h.grad[:, -1].flatten(1), copy.w_up.grad[:, -1].flatten(1)], 1)


def test_ics_updates_only_the_layers_below_the_top_and_matches_an_ordinary_backward_pass():
    model = _model(depth=3)
    model.eval()
    g = torch.Generator().manual_seed(5)
    x, y = torch.rand(model.n_models, 8, 6, 2, generator=g), torch.rand(model.n_models, 8, generator=g)
    before = {k: p.detach().clone() for k, p in model.named_parameters()}
    after = {k: v + 0.05 * torch.randn(v.shape, generator=g) for k, v in before.items()}
    noise_gen = torch.Generator().manual_seed(1)
    shift, cos = rnn_regimes.ics(model, before, after, x, y, noise_gen.get_state(), noise_gen)

    mixed = dict(before)
    mixed["w_x"] = after["w_x"]
    for name in ("w_h", "bias", "gain"):  # layers 0 and 1 of 3
        mixed[name] = torch.cat([after[name][:, :2], before[name][:, 2:]], 1)
    mixed["w_up"] = torch.cat([after["w_up"][:, :1], before["w_up"][:, 1:]], 1)  # w_up[0] feeds layer 1
    g0, g1 = _top_grad_by_hand(model, before, x, y), _top_grad_by_hand(model, mixed, x, y)
    torch.testing.assert_close(shift, (g0 - g1).norm(dim=1) / g0.norm(dim=1), rtol=1e-4, atol=1e-6)
    torch.testing.assert_close(cos, torch.nn.functional.cosine_similarity(g0, g1, dim=1), rtol=1e-4, atol=1e-6)
    assert (shift > 0).all()

    # nothing below the top moved (only the top layer and the read-out did): no shift at all
    top_only = dict(before)
    for name in ("w_o", "bias_o"):
        top_only[name] = after[name]
    shift, cos = rnn_regimes.ics(model, before, top_only, x, y, noise_gen.get_state(), noise_gen)
    torch.testing.assert_close(shift, torch.zeros_like(shift), rtol=0, atol=0)
    torch.testing.assert_close(cos, torch.ones_like(cos), rtol=1e-6, atol=1e-6)


def test_measuring_ics_and_evaluating_do_not_change_the_training():
    kw = dict(seeds=(0, 1), lrs=(1e-2, 1e-1), variants=("no norm", "LayerNorm", "noisy LayerNorm"), noises=(0.5,),
              depth=2, hidden=4, seq_len=5, steps=6)
    a = rnn_regimes.rnn_eval_runs(eval_every=2, measure_ics=True, **kw)
    b = rnn_regimes.rnn_eval_runs(eval_every=3, measure_ics=False, **kw)
    pd.testing.assert_series_equal(a["loss"], b["loss"])
    assert sorted(a.loc[a["eval_loss"].notna(), "step"].unique()) == [0, 2, 4, 6]
    assert sorted(a.loc[a["ics"].notna(), "step"].unique()) == [0, 2, 4]  # none after the last step
    assert "ics" not in b
    assert a.loc[a["step"] == 0, "drift_mean"].isna().all()  # no previous checkpoint yet
    assert (a.loc[a["step"] == 2, "drift_mean"] > 0).all()


def test_at_rate_zero_nothing_drifts_and_nothing_shifts():
    frame = rnn_regimes.rnn_eval_runs(seeds=(0,), lrs=(0.0,), variants=("no norm", "LayerNorm"), depth=2, hidden=4,
                                      seq_len=5, steps=4, eval_every=2, measure_ics=True)
    measured = frame[frame["step"] == 2]
    np.testing.assert_array_equal(measured["drift_mean"], 0.0)
    np.testing.assert_array_equal(measured["drift_std"], 0.0)
    np.testing.assert_array_equal(frame.loc[frame["ics"].notna(), "ics"], 0.0)
    # the same model evaluated three times: the same held-out loss
    assert frame.groupby("variant")["eval_loss"].nunique().eq(1).all()


def test_a_run_is_the_same_alone_or_stacked_and_arms_share_seeds():
    kw = dict(hidden=6, seq_len=5, steps=5, eval_every=5)
    stacked = rnn_regimes.rnn_eval_runs(seeds=(0, 1), lrs=(1e-2, 1e-1), variants=("no norm", "LayerNorm"), **kw)
    alone = rnn_regimes.rnn_eval_runs(seeds=(1,), lrs=(1e-1,), variants=("LayerNorm",), **kw)
    part = stacked[(stacked["seed"] == 1) & (stacked["lr"] == 1e-1) & (stacked["variant"] == "LayerNorm")]
    np.testing.assert_allclose(part["loss"], alone["loss"], rtol=1e-5)
    np.testing.assert_allclose(part["eval_loss"], alone["eval_loss"], rtol=1e-5)
    first = stacked[(stacked["step"] == 0) & (stacked["variant"] == "no norm")]
    assert first.groupby("seed")["loss"].nunique().eq(1).all()  # the same batch and weights at every rate


def test_the_experiments_are_declared_as_the_protocol_asks():
    exp = runner.experiment("rnn_regimes")
    assert exp.tuning is not None and exp.tuning.key == "lr"
    rates = np.array(sorted(exp.tuning.rates))
    assert len(rates) >= 5 and (rates[1:] / rates[:-1] <= 10 / 3 * (1 + 1e-9)).all()
    assert len(exp.seeds) >= 10 and not set(exp.seeds) & set(exp.tuning.pilot_seeds)
    assert set(exp.grid["hidden"]) == {16, 64, 128} and max(exp.grid["seq_len"]) >= 50
    mech = runner.experiment("rnn_mechanism")
    assert mech.fixed["measure_ics"] and mech.fixed["depth"] > 1 and len(mech.seeds) >= 10


@pytest.mark.parametrize("name", ["rnn_regimes"])
def test_no_stored_best_rate_sits_on_the_grids_edge(name):
    stored = runner.load(name)
    for row in stored.meta["best_rates"]:
        assert not (row["learned"] and row["on_edge"]), row
