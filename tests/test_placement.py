"""Notebook 04: the stacked placement MLPs, their diagnostics, the Transformer forms, the widget."""

import pytest
import torch
import torch.nn.functional as F

from helpers import layer_norm, placement, plots, runner, widgets
from helpers.plots import find_line


def test_saturated_and_dead_fractions_on_known_values():
    t = torch.tensor([[0.99, -0.98, 0.5, 0.0]])
    assert placement.saturated_fraction(t).item() == 0.5
    a = torch.tensor([[0.0, 1.0, 0.0], [0.0, 0.0, 2.0]])  # unit 0 is 0 on both samples
    assert placement.dead_fraction(a).item() == pytest.approx(1 / 3)


@pytest.mark.parametrize("config", [("relu", "act -> LN"), ("tanh", "LN -> act"), ("gelu", "no norm")])
def test_stacked_model_equals_the_plain_mlp(config):
    torch.manual_seed(0)
    model = placement.PlacementMLP(4, 2, width=8)
    m = model.configs.index(config) * 2 + 1  # seed 1
    x = torch.randn(len(model.configs) * 2, 5, 8)
    act = {"tanh": torch.tanh, "relu": torch.relu, "gelu": F.gelu}[config[0]]
    h = x[m]
    for w, b in zip(model.weights[:-1], model.biases[:-1], strict=True):
        z = h @ w[m] + b[m]
        if config[1] == "LN -> act":
            h = act(layer_norm(z, (8,)))
        elif config[1] == "act -> LN":
            h = layer_norm(act(z), (8,))
        else:
            h = act(z)
    expected = (h @ model.weights[-1][m] + model.biases[-1][m]).squeeze(-1)
    torch.testing.assert_close(model(x)[m], expected)


def test_seeds_share_weights_across_configs_and_models_are_independent():
    model = placement.PlacementMLP(3, 2, width=8)
    w = model.weights[1]
    # tanh (gain 5/3) and relu (gain sqrt 2) models of seed 0 differ only by the gain
    torch.testing.assert_close(w[0] / (5 / 3), w[6] / 2 ** 0.5)
    x = torch.randn(len(model.configs) * 2, 4, 8)
    model(x)[3].sum().backward()
    grads = model.weights[0].grad.flatten(1).norm(dim=1)
    assert grads[3] > 0 and (grads[torch.arange(len(grads)) != 3] == 0).all()


def test_placement_runs_rows_and_histograms():
    runs = placement.placement_runs(depths=(3,), seeds=(0, 1, 2), steps=2, n_train=64, n_probe=32)
    train = runs[runs.stage == "train"]
    assert len(train) == 9 * 3 * 2 and set(train.step) == {0, 1}  # configs x seeds x steps: the training losses
    assert train.loss.notna().all() and train[list(placement.HIST_COLUMNS) + ["layer"]].isna().all().all()
    rows = runs[runs.stage != "train"]
    assert len(rows) == 2 * 9 * 3 * 3  # stages x configs x seeds x layers
    assert set(rows.stage) == {"init", "trained"} and set(rows.step) == {0, 2}
    counts = rows[list(placement.HIST_COLUMNS)].sum(axis=1)
    assert (counts == 32 * 32).all()  # every probe sample x unit falls in one bin
    summary = placement.placement_summary(rows, 3)
    assert list(summary.index) == [(a, p) for a in placement.ACTIVATIONS for p in placement.PLACEMENTS]
    assert (summary["loss min"] <= summary["loss mean"]).all() and (summary["loss mean"] <= summary["loss max"]).all()
    state = placement.trained_state(rows, "relu", "no norm", 3, seed=2)
    assert state["hist"].shape == (3, len(placement.BINS) - 1)
    torch.testing.assert_close(state["hist"].sum(1), torch.ones(3, dtype=torch.float64))
    with pytest.raises(ValueError, match="depths"):
        placement.trained_state(rows, "relu", "no norm", 8)


def test_a_seed_gets_the_same_models_whichever_seeds_it_is_stacked_with():
    both = placement.placement_runs(depths=(3,), seeds=(4, 7), steps=3, n_train=64, n_probe=32, hist_seeds=(7,))
    alone = placement.placement_runs(depths=(3,), seeds=(7,), steps=3, n_train=64, n_probe=32)
    mine = both[both.seed == 7].reset_index(drop=True)
    torch.testing.assert_close(torch.tensor(mine.loss.to_numpy()), torch.tensor(alone.loss.to_numpy()))
    probed = both.stage != "train"
    assert both[probed & (both.seed == 4)][list(placement.HIST_COLUMNS)].isna().all().all()
    assert mine[mine.stage != "train"][list(placement.HIST_COLUMNS)].notna().all().all()


def test_placement_state_and_every_widget_control_changes_the_figure():
    state = placement.placement_state("tanh", "act -> LN", 8)
    assert len(state["saturated"]) == len(state["grad_norm"]) == 8
    torch.testing.assert_close(state["hist"].sum(1), torch.ones(8))
    # LN after tanh feeds variance-1 inputs to the next tanh: more saturation than LN before it
    assert placement.placement_state("tanh", "LN -> act", 8)["saturated"][-1] < state["saturated"][-1]
    demo = widgets.placement_demo()
    for name, value in (("activation", "relu"), ("placement", "no norm"), ("depth", 16)):
        before = [find_line(demo.figure.axes[0], "layer 1").get_ydata().tolist(),
                  find_line(demo.figure.axes[1], "grad_norm").get_ydata().tolist()]
        demo.controls[name].value = value
        after = [find_line(demo.figure.axes[0], "layer 1").get_ydata().tolist(),
                 find_line(demo.figure.axes[1], "grad_norm").get_ydata().tolist()]
        assert before != after, name
    assert len(demo.figure.axes[1].get_lines()[0].get_xdata()) == 16
    assert "relu" in demo.figure.axes[0].get_title()
    with pytest.raises(ValueError, match="activation"):
        placement.placement_state("sigmoid", "no norm", 4)


def test_post_ln_block_output_is_normalised_and_pre_ln_is_not():
    torch.manual_seed(0)
    x = 3 * torch.randn(2, 5, 16) + 1
    post = placement.Block(16, 2, pre_ln=False)(x)
    pre = placement.Block(16, 2, pre_ln=True)(x)
    torch.testing.assert_close(post.mean(-1), torch.zeros(2, 5), atol=1e-5, rtol=0)
    assert pre.std(-1).mean() > 2  # the residual stream keeps x's scale


def test_transformer_grad_norms_profile():
    grads = placement.transformer_grad_norms(layers=(6,), seeds=(0,))
    assert len(grads) == 2 * 6 and (grads.grad_norm > 0).all()
    fig = plots.transformer_grad_figure(grads)
    assert len(find_line(fig.axes[0], "Post-LN 6").get_ydata()) == 6


def test_warmup_runs_shape_and_first_steps_do_not_depend_on_the_step_count():
    runs = placement.warmup_runs(n_layers=1, steps=3)
    assert len(runs) == 2 * 2 * 1 * 3 and runs.loss.notna().all() and list(runs.step[:3]) == [0, 1, 2]
    state = torch.get_rng_state()
    short = placement.warmup_runs(seeds=(2,), forms=("Post-LN",), n_layers=1, steps=5)
    assert torch.equal(torch.get_rng_state(), state)  # the global generator is left alone
    longer = placement.warmup_runs(seeds=(2,), forms=("Post-LN",), n_layers=1, steps=8)
    assert longer[longer.step < 5].reset_index(drop=True).equals(short)
    with pytest.raises(ValueError, match="forms"):
        placement.warmup_runs(forms=("Sandwich",))


def test_compare_words_follow_the_interval():
    low, high = [1.0, 1.1, 0.9, 1.05, 0.95], [2.0, 2.2, 1.9, 2.1, 1.8]
    ci, words = placement.compare(low, high, a="A", b="B", quantity="loss")
    assert ci.high < 0 and words.startswith("A has 1.0000 lower loss than B (95% CI")
    _, words = placement.compare(high, low, a="A", b="B", quantity="loss")
    assert words.startswith("the opposite of the claim: A has 1.0000 higher loss than B")
    _, words = placement.compare(high, low, a="A", b="B", quantity="loss", claim="higher")
    assert words.startswith("A has 1.0000 higher loss")
    _, words = placement.compare(low, [1.05, 1.0, 1.0, 0.95, 1.0], a="A", b="B", quantity="loss")
    assert words.startswith("no difference detectable with 5 seeds: A vs B, ")
    with pytest.raises(ValueError, match="claim"):
        placement.compare(low, high, a="A", b="B", quantity="loss", claim="fewer")


@pytest.mark.parametrize("name", ["placement", "transformer_grad_norms", "warmup"])
def test_stored_experiments_are_declared_and_their_verdicts_recompute(name):
    exp = runner.experiment(name)
    assert exp.notebook == "04_before_the_activation" and len(exp.seeds) >= 10
    stored = runner.load(name)
    assert set(stored.frame.seed) == set(exp.seeds)
    assert exp.summarize(stored.frame) == stored.verdicts


def test_comparison_tables_on_the_stored_results():
    verdicts = placement.placement_comparisons(runner.load("placement").frame)
    assert len(verdicts) == 2 * 3 + 2 and (verdicts.low <= verdicts.estimate).all()
    assert (verdicts.estimate <= verdicts.high).all()
    grads = runner.load("transformer_grad_norms").frame
    ratios = placement.grad_ratios(grads)
    assert list(ratios.columns) == list(placement.FORMS) and len(ratios) == 2 * 10
    assert len(placement.grad_comparisons(grads)) == 2 * 3
    final = placement.final_losses(runner.load("warmup").frame)
    assert final.shape == (2 * 10, 2)


def test_exercises_accept_the_reference_and_hint_the_mistakes():
    assert "hands in the answer" in repr(placement.check_saturated_fraction(placement.saturated_fraction))
    assert placement.check_saturated_fraction(lambda t: (t.abs() > 0.97).float().mean())
    verdict = placement.check_saturated_fraction(lambda t: (t > 0.97).float().mean())
    assert not verdict and "-1 too" in repr(verdict)
    assert "hands in the answer" in repr(placement.check_dead_fraction(placement.dead_fraction))
    assert placement.check_dead_fraction(lambda a: 1.0 - (a.reshape(-1, a.shape[-1]) > 0).any(dim=0).float().mean())
    assert "EVERY sample" in repr(placement.check_dead_fraction(lambda a: (a == 0).float().mean()))
    def ln(h):
        m = h.mean(-1, keepdim=True)
        return (h - m) / torch.sqrt(((h - m) ** 2).mean(-1, keepdim=True) + 1e-5)

    assert "hands in the answer" in repr(placement.check_pre_ln_residual(lambda x, w: x + layer_norm(x, (x.shape[-1],)) @ w))
    assert placement.check_pre_ln_residual(lambda x, w: x + ln(x) @ w)
    verdict = placement.check_pre_ln_residual(lambda x, w: ln(x + x @ w))
    assert "Post-LN" in repr(verdict)


def test_norm_placement_table_has_a_reference_per_row():
    table = placement.NORM_PLACEMENT
    assert {"Transformer (2017)", "BERT (2018)", "GPT-2 (2019)", "LLaMA (2023)"} <= set(table.index)
    assert table.reference.str.contains("20").all()
