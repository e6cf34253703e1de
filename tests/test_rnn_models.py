"""Deep dive 13's building blocks (helpers.experiments.rnn_models): the adding task, the stacked RNN, the
paired verdicts; and its exercises (helpers.exercises.training_speed)."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
import torch

from helpers.evidence.statistics import paired_difference_ci, verdict
from helpers.exercises import training_speed as ex
from helpers.exercises.checking import check
from helpers.experiments import rnn_models as rm
from helpers.experiments.rnn_regimes import rnn_eval_runs


def test_adding_task_marks_two_positions_one_per_half():
    x, y = rm.adding_task(64, 10, torch.Generator().manual_seed(0))
    marks = x[..., 1]
    assert (marks.sum(1) == 2).all()
    assert (marks[:, :5].sum(1) == 1).all() and (marks[:, 5:].sum(1) == 1).all()
    assert torch.allclose(y, (x[..., 0] * marks).sum(1))
    assert ((x[..., 0] >= 0) & (x[..., 0] < 1)).all()


def _plain_rnn(model: rm.StackedRNN, m: int, x: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """Model ``m`` of the stack as a plain layer-by-layer, step-by-step loop: (prediction, top layer's pre)."""
    batch, seq_len, _ = x.shape
    normed = m >= model.n_plain
    h = [torch.zeros(batch, model.hidden) for _ in range(model.depth)]
    pres = []
    for t in range(seq_len):
        below = x[:, t]
        for layer in range(model.depth):
            w_in = model.w_x[m] if layer == 0 else model.w_up[m, layer - 1]
            a = below @ w_in + h[layer] @ model.w_h[m, layer]
            if normed:
                a = torch.nn.functional.layer_norm(a, (model.hidden,)) * model.gain[m, layer]
            pre = a + model.bias[m, layer]
            h[layer] = below = torch.tanh(pre)
        pres.append(pre)
    return (h[-1] @ model.w_o[m] + model.bias_o[m]).squeeze(-1), torch.cat(pres)


@pytest.mark.parametrize("depth", [1, 3])
def test_stacked_rnn_models_match_plain_layer_by_layer_loops(depth):
    """The wavefront computes, for every model, what a plain RNN loop with its weights computes."""
    gens = [torch.Generator().manual_seed(s) for s in (0, 1)]
    model = rm.StackedRNN(2, 1, depth=depth, generators=gens).eval()
    with torch.no_grad():  # give every layer its own gain and bias, so that a mix-up shows
        model.gain.uniform_(0.5, 1.5, generator=torch.Generator().manual_seed(3))
        model.bias.uniform_(-0.5, 0.5, generator=torch.Generator().manual_seed(4))
    x = rm.adding_task(4, 6, torch.Generator().manual_seed(9))[0]
    prediction, pre = model(x.expand(model.n_models, -1, -1, -1))
    assert [v for v, _ in model.arms] == list(rm.VARIANTS) and model.n_plain == 2
    for m in range(model.n_models):
        expected, expected_pre = _plain_rnn(model, m, x)
        torch.testing.assert_close(prediction[m], expected)
        torch.testing.assert_close(pre[m], expected_pre)
    # the same seed starts from the same weights in every variant
    torch.testing.assert_close(model.w_h[0], model.w_h[2])
    torch.testing.assert_close(model.w_h[0], model.w_h[4])
    assert not torch.equal(model.w_h[0], model.w_h[1])
    assert pre.shape == (model.n_models, 4 * 6, 16)


def test_noisy_models_get_their_own_noise_in_training_only():
    gens = [torch.Generator().manual_seed(0)]
    model = rm.StackedRNN(1, 1, noises=(0.1, 0.5), depth=2, generators=gens)
    assert model.arms == [("no norm", 0.0), ("LayerNorm", 0.0), ("noisy LayerNorm", 0.1), ("noisy LayerNorm", 0.5)]
    x = rm.adding_task(4, 6, torch.Generator().manual_seed(1))[0]
    x[1] = x[0]  # two identical sequences: per-activation noise treats them differently
    stacked = x.expand(model.n_models, -1, -1, -1)
    prediction, _ = model(stacked, torch.Generator().manual_seed(2))
    for m in (0, 1):  # no norm and plain LN: no noise
        torch.testing.assert_close(prediction[m], _plain_rnn(model, m, x)[0])
    assert prediction[1, 0] == prediction[1, 1]
    assert (prediction[2:, 0] != prediction[2:, 1]).all()  # each sequence its own noise
    again, _ = model(stacked, torch.Generator().manual_seed(2))
    torch.testing.assert_close(again, prediction)  # the generator decides the noise
    with torch.no_grad():
        evaluated = model.eval()(stacked)[0]
    torch.testing.assert_close(evaluated[1], evaluated[2])  # in eval mode noisy LN is LN
    torch.testing.assert_close(evaluated[1], evaluated[3])


def test_the_noise_has_mean_one_scale_per_activation_and_a_shift_whose_mean_moves():
    g = torch.Generator().manual_seed(0)
    normed = torch.ones(1, 1, 200_000, 1)
    for s in (0.1, 0.5, 1.0):
        mu = torch.tensor(0.3 * s).view(1, 1, 1, 1)
        strength = torch.tensor(s).view(1, 1, 1, 1)
        scale = rm.StackedRNN.noisy(normed, strength, torch.zeros_like(mu), g)  # shifts of mean 0
        both = rm.StackedRNN.noisy(2 * normed, strength, mu, g)
        # a ~ U(1 - s, 1 + s), b ~ N(mu, s^2): E[a x + b] = x + mu, Var = x^2 s^2 / 3 + s^2
        assert abs(scale.mean().item() - 1) < 0.01 and abs(scale.var().item() - (s**2 / 3 + s**2)) < 0.02 * (1 + s)
        assert abs(both.mean().item() - (2 + 0.3 * s)) < 0.01
        assert abs(both.var().item() - (4 * s**2 / 3 + s**2)) < 0.03 * (1 + s)
    zero = rm.StackedRNN.noisy(normed, torch.zeros(1, 1, 1, 1), torch.zeros(1, 1, 1, 1), g)
    assert torch.equal(zero, normed)  # strength 0: no noise at all


def test_deeper_stacks_keep_the_first_layers_weights():
    """A seed's layer-0 and read-out weights do not depend on the depth: depths differ only by the extra layers."""
    one, three = (rm.StackedRNN(1, 1, depth=d, generators=[torch.Generator().manual_seed(0)]) for d in (1, 3))
    torch.testing.assert_close(one.w_x, three.w_x)
    torch.testing.assert_close(one.w_o, three.w_o)
    torch.testing.assert_close(one.w_h[:, 0], three.w_h[:, 0])
    assert one.w_up.shape == (3, 0, 16, 16) and three.w_up.shape == (3, 2, 16, 16)


def test_arms_validate_their_arguments():
    assert rm.arms(("LayerNorm", "no norm")) == [("no norm", 0.0), ("LayerNorm", 0.0)]  # VARIANTS order


def test_stacked_models_do_not_share_gradients():
    gens = [torch.Generator().manual_seed(0)]
    model = rm.StackedRNN(1, 1, generators=gens)
    x, y = rm.adding_task(4, 6, torch.Generator().manual_seed(1))
    prediction, _ = model(x.expand(model.n_models, -1, -1, -1), torch.Generator().manual_seed(2))
    ((prediction[1] - y) ** 2).mean().backward()  # only the LayerNorm model's loss
    assert model.w_h.grad[1].abs().sum() > 0
    assert model.w_h.grad[0].abs().sum() == 0 and model.w_h.grad[2].abs().sum() == 0


def test_layer_norm_input_starts_standardized_and_no_norm_does_not():
    """Before any update, LN's tanh input is LN(a) * 1 + 0: mean 0 and std 1 for every token (a
    little under 1 where the summed inputs are tiny and eps counts), so over all tokens too."""
    gens = [torch.Generator().manual_seed(s) for s in (0, 1)]
    model = rm.StackedRNN(2, 1, variants=("no norm", "LayerNorm"), generators=gens)
    x, _ = rm.stacked_batch(gens, torch.arange(model.n_models) % 2, 32, 10)
    with torch.no_grad():
        _, pre = model(x)  # (models, batch * seq_len, hidden); models 0, 1: no norm, 2, 3: LayerNorm
    ln, plain = pre[model.n_plain:], pre[:model.n_plain]
    assert ln.mean(-1).abs().max() < 1e-5
    assert (ln.std(-1, unbiased=False) <= 1 + 1e-5).all()
    assert (ln.flatten(1).std(1) - 1).abs().max() < 1e-3
    assert (plain.flatten(1).std(1) - 1).abs().max() > 0.05


def test_training_lowers_the_held_out_loss_at_a_small_rate():
    runs = rnn_eval_runs(seeds=(0, 1), lrs=(0.01,), variants=("no norm", "LayerNorm"), steps=40, eval_every=20)
    held_out = runs.pivot_table(index="step", columns="variant", values="eval_loss")
    assert list(held_out.index) == [0, 20, 40]
    assert (held_out.loc[40] < held_out.loc[0]).all()


def _arm_table(column: str, ln, plain, noisy=None) -> pd.DataFrame:
    """One row per (variant, seed) of ``column``; a noisy arm, when given, at strength 0.5."""
    rows = [("LayerNorm", 0.0, ln), ("no norm", 0.0, plain)] + ([("noisy LayerNorm", 0.5, noisy)] if noisy else [])
    return pd.DataFrame([{"seed": s, "variant": v, "noise": n, column: value}
                         for v, n, values in rows for s, value in enumerate(values)])


def test_normed_vs_plain_pairs_by_seed_counts_censored_runs_as_the_cap_and_caps_the_loss():
    ln_steps, plain_steps = [10.0, 12.0, 15.0, 11.0, 9.0, 14.0], [40.0, np.nan, 50.0, 45.0, 38.0, 60.0]
    ln_final, plain_final = [0.01, 0.02, 0.015, 0.01, 0.012, 0.02], [0.05, np.inf, 0.3, 0.06, 0.04, 0.08]
    reached = _arm_table("steps", ln_steps, plain_steps, noisy=[np.nan] * 6)  # the noisy arm is left out
    finals = _arm_table("final", ln_final, plain_final, noisy=[np.inf] * 6)
    out = {key: str(said) for key, said in rm.normed_vs_plain(reached, finals, cap=100).items()}
    assert list(out) == ["steps", "final loss"]
    # the run that never got there counts as the cap, the diverged and the worse-than-the-mean
    # runs as having learned nothing
    capped = np.array([40.0, 100.0, 50.0, 45.0, 38.0, 60.0])
    learned = np.array([0.05, rm.LEARNED_NOTHING, rm.LEARNED_NOTHING, 0.06, 0.04, 0.08])
    # no norm, the slower arm, has a run stopped at the cap: its ratio is a bound, and the words say so
    assert out["steps"] == verdict(paired_difference_ci(np.array(ln_steps), capped, relative=True),
                                   a="LayerNorm", b="no norm", quantity="steps to the threshold",
                                   suffix="; at least that: 1 of no norm's runs was stopped at the cap (100 steps)").words
    assert out["final loss"] == verdict(paired_difference_ci(np.array(ln_final), learned, relative=True),
                                        a="LayerNorm", b="no norm", quantity="final loss", verb="ends with",
                                        words=("lower", "higher")).words
    assert out["steps"].startswith("LayerNorm needs") and "fewer steps to the threshold than no norm" in out["steps"]
    assert out["final loss"].startswith("LayerNorm ends with") and "lower final loss" in out["final loss"]

    # other arms' names and the quantity's wording pass through
    renamed = rm.normed_vs_plain(reached.replace({"LayerNorm": "LN-LSTM", "no norm": "LSTM"}),
                                 finals.replace({"LayerNorm": "LN-LSTM", "no norm": "LSTM"}), cap=100,
                                 a="LN-LSTM", b="LSTM", final="final held-out loss")
    renamed = {key: str(said) for key, said in renamed.items()}
    assert renamed["steps"] == out["steps"].replace("LayerNorm", "LN-LSTM").replace("no norm", "LSTM")
    assert "LN-LSTM ends with" in renamed["final loss"] and "lower final held-out loss than LSTM" in renamed["final loss"]


def test_normed_vs_plain_says_so_when_neither_arm_gets_anywhere():
    nowhere = [np.nan] * 4
    out = rm.normed_vs_plain(_arm_table("steps", nowhere, nowhere), _arm_table("final", [0.2, np.inf, 0.17, 0.5],
                             [np.inf, 0.3, 0.2, 1.0]), cap=300)
    assert {key: said.words for key, said in out.items()} == {
        "steps": "no run of either variant reaches the threshold within 300 steps",
        "final loss": "no run of either variant ends below the learned-nothing level (0.167)"}
    assert all(said.outcome == "undecided" and said.favoured is None for said in out.values())


def test_exercises_accept_the_reference_and_name_the_mistakes():
    assert check("first_step_below", ex._first_below)
    last = check("first_step_below", lambda loss, t: torch.nonzero(loss < t)[-1, 0] if (loss < t).any() else torch.tensor(-1))
    assert not last and "LAST" in last.message
    assert "hands in the answer" in ex.check_noisy_layer_norm(ex._noisy_reference).message

    def by_hand(a, shift, scale):
        mean = a.mean(-1, keepdim=True)
        return (a - mean) / torch.sqrt(((a - mean) ** 2).mean(-1, keepdim=True) + 1e-5) * scale + shift

    assert ex.check_noisy_layer_norm(by_hand)
    wrong = ex.check_noisy_layer_norm(lambda a, shift, scale: a * scale + shift)
    assert not wrong and "normalize first" in wrong.message


def _curves(losses_by_variant: dict[str, list[list[float]]]) -> pd.DataFrame:
    """Evaluation rows: ``{variant: [one run's held-out losses at steps 0, 10, 20, ...] per seed]}``."""
    return pd.DataFrame([{"variant": v, "seed": s, "step": 10 * i, "eval_loss": loss}
                         for v, runs in losses_by_variant.items() for s, run in enumerate(runs)
                         for i, loss in enumerate(run)])


def test_a_run_that_crosses_and_then_blows_up_counts_only_under_the_first_crossing():
    from helpers.experiments.threshold_runs import steps_staying_below, steps_to_threshold

    frame = _curves({"a": [[1.0, 0.1, 0.1, 0.1]], "b": [[1.0, 0.1, np.inf, 0.1]], "c": [[0.1, 0.1, 0.1, 0.9]]})
    first, stays = steps_to_threshold(frame, 0.5), steps_staying_below(frame, 0.5)
    assert first["steps"].tolist() == [10.0, 10.0, 0.0]
    assert stays["steps"].tolist()[:2] == [10.0, 30.0] and np.isnan(stays["steps"].iloc[2])  # c ends above


def test_the_steps_verdict_depends_on_the_measure_where_the_plain_arm_blows_up_after_crossing():
    # the plain arm crosses first on every seed, then climbs back until late; LN crosses later and stays
    rng = np.random.default_rng(0)
    ln = [[1.0] * (3 + int(rng.integers(2))) + [0.01] * 20 for _ in range(10)]
    plain = [[1.0] + [0.01] * 2 + [1.0] * (10 + int(rng.integers(4))) + [0.01] * 10 for _ in range(10)]
    report = _curves({"LayerNorm": [r[:23] for r in ln], "no norm": [r[:23] for r in plain]})
    from helpers.experiments.threshold_runs import steps_staying_below, steps_to_threshold

    finals = _arm_table("final", [0.01] * 10, [0.01] * 10)
    first_only = rm.normed_vs_plain(steps_to_threshold(report, 0.05), finals, cap=220)["steps"]
    both = rm.normed_vs_plain(steps_to_threshold(report, 0.05), finals, cap=220,
                              staying=steps_staying_below(report, 0.05))["steps"]
    assert first_only.outcome == "refuted" and first_only.favoured == "no norm"  # LN first crosses later
    assert both.alternates[0].favoured == "LayerNorm"  # but stays below sooner
    assert not both.agree and both.outcome == "undecided" and both.favoured is None
    assert both.words.startswith("depends on the measure: the opposite of the claim: LayerNorm needs")
    assert "; staying below to the end: LayerNorm needs " in both.words
