"""A first BN-vs-LN contrast that no notebook calls now (both_ways, batch_dependence, state_and_modes),
and deep dive 11's shift feature by feature."""

from __future__ import annotations

import pytest
import torch
import torch.nn.functional as F
from torch import nn

from helpers.lessons.bn_vs_ln import batch_dependence, both_ways, state_and_modes


def _batch(seed=0, n=3, c=5):
    g = torch.Generator().manual_seed(seed)
    return torch.randn(n, c, generator=g) * torch.tensor([1.0, 10.0, 100.0, 0.1, 3.0])[:c] + 2.0


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_both_ways_is_torch_batch_norm_over_dim_0_and_layer_norm_over_dim_minus_1(seed):
    x = _batch(seed)
    table = both_ways(x)
    assert table.index.names == ["norm", "sample"]
    assert table.columns.tolist() == [f"feature {j}" for j in range(5)]
    torch.testing.assert_close(torch.tensor(table.loc["input"].to_numpy()), x.double())
    bn = F.batch_norm(x, None, None, training=True)
    ln = F.layer_norm(x, (5,))
    torch.testing.assert_close(torch.tensor(table.loc["BatchNorm"].to_numpy(), dtype=torch.float32), bn)
    torch.testing.assert_close(torch.tensor(table.loc["LayerNorm"].to_numpy(), dtype=torch.float32), ln)
    # properties, from a float64 reference: BN's columns and LN's rows are standardised
    x64 = x.double()
    ref_bn = (x64 - x64.mean(0)) / torch.sqrt(x64.var(0, unbiased=False) + 1e-5)
    ref_ln = (x64 - x64.mean(1, keepdim=True)) / torch.sqrt(x64.var(1, unbiased=False, keepdim=True) + 1e-5)
    torch.testing.assert_close(torch.tensor(table.loc["BatchNorm"].to_numpy()), ref_bn, atol=1e-5, rtol=1e-5)
    torch.testing.assert_close(torch.tensor(table.loc["LayerNorm"].to_numpy()), ref_ln, atol=1e-5, rtol=1e-5)


def test_two_samples_under_bn_become_plus_and_minus_one():
    x = torch.tensor([[1.0, 2.0, 3.0, 4.0], [15.0, 25.0, 35.0, 45.0]])
    bn = both_ways(x).loc["BatchNorm"].to_numpy()
    assert bn[0] == pytest.approx([-1.0] * 4, abs=1e-5) and bn[1] == pytest.approx([1.0] * 4, abs=1e-5)


@pytest.mark.parametrize("sample, other", [(0, 1), (0, 2), (2, 1)])
def test_batch_dependence_bn_moves_and_ln_is_bit_for_bit_unchanged(sample, other):
    x = _batch(3)
    new = torch.randn(5, generator=torch.Generator().manual_seed(9)) * 50
    table = batch_dependence(x, new, sample=sample, other=other)
    column = f"largest change of sample {sample}"
    assert table.index.tolist() == ["BatchNorm", "LayerNorm"]
    changed = x.clone()
    changed[other] = new
    expected_bn = (F.batch_norm(changed, None, None, training=True)[sample]
                   - F.batch_norm(x, None, None, training=True)[sample]).abs().max().item()
    assert table.loc["BatchNorm", column] == pytest.approx(expected_bn, rel=1e-4, abs=1e-5)
    assert expected_bn > 0.1 and not table.loc["BatchNorm", "unchanged"]
    assert table.loc["LayerNorm", column] == 0.0 and table.loc["LayerNorm", "unchanged"]


def test_batch_dependence_refuses_bad_arguments():
    x = _batch()
    with pytest.raises(ValueError, match=r"argument 'new' must have shape \(5,\).*got \(4,\)"):
        batch_dependence(x, torch.zeros(4))
    with pytest.raises(ValueError, match="'sample' and 'other' must be two different rows of the 3 samples, got 1 and 1"):
        batch_dependence(x, torch.zeros(5), sample=1, other=1)
    with pytest.raises(ValueError, match="got 0 and 3"):
        batch_dependence(x, torch.zeros(5), sample=0, other=3)
    for fn in (both_ways, state_and_modes):
        with pytest.raises(ValueError, match=r"argument 'x' must be 2-D .*at least 2 samples, got shape \(1, 5\)"):
            fn(x[:1])
        with pytest.raises(ValueError, match=r"got shape \(3,\)"):
            fn(x[0, :3])


def test_state_and_modes_names_bn_buffers_and_ln_agrees_in_both_modes():
    x = _batch(4, n=6)
    table = state_and_modes(x)
    bn, ln = table.loc["nn.BatchNorm1d(5)"], table.loc["nn.LayerNorm(5)"]
    assert bn["buffers"] == ", ".join(n for n, _ in nn.BatchNorm1d(5).named_buffers())
    assert bn["buffers"] == "running_mean, running_var, num_batches_tracked" and ln["buffers"] == "(none)"
    assert bn["parameters"] == ln["parameters"] == "weight, bias"
    assert bn["state dict keys"] == 5 and ln["state dict keys"] == 2
    assert ln["train == eval"] and ln["largest |train - eval|"] == 0.0
    # BN's eval output uses running statistics after one update with momentum 0.1 (unbiased variance)
    mean = 0.1 * x.mean(0)
    var = 0.9 + 0.1 * x.var(0, unbiased=True)
    expected = ((x - mean) / torch.sqrt(var + 1e-5) - F.batch_norm(x, None, None, training=True)).abs().max()
    assert not bn["train == eval"]
    assert bn["largest |train - eval|"] == pytest.approx(expected.item(), rel=1e-4)


# ------------------------------------------------------------- deep dive 11: a shift feature by feature


def test_shift_robustness_bn_passes_a_per_feature_shift_and_ln_does_not_undo_it():
    from helpers.lessons.bn_vs_ln import shift_robustness

    shift, scale = torch.tensor([3.0, -2.0, 0.0, 1.0]), torch.tensor([2.0, 0.5, 1.0, 1.0])
    table = shift_robustness(shift, scale, n=2048)
    bn_in = table.loc[("BatchNorm1d, eval()", "in distribution")]
    bn_out = table.loc[("BatchNorm1d, eval()", "shifted")]
    # converged running statistics (mean 0, var 1): in distribution BN standardises ...
    assert all(abs(bn_in[f"feature {j} mean"]) < 0.1 and abs(bn_in[f"feature {j} std"] - 1) < 0.1 for j in range(4))
    # ... and a shifted feature comes out shifted and scaled
    for j in range(4):
        assert bn_out[f"feature {j} mean"] == pytest.approx(shift[j].item(), abs=0.2)
        assert bn_out[f"feature {j} std"] == pytest.approx(scale[j].item(), rel=0.15)
    assert table.loc[("LayerNorm", "shifted"), "largest change from in distribution"] > 0.3
    assert (table.xs("in distribution", level="data")["largest change from in distribution"] == 0).all()


def test_shift_robustness_ln_removes_a_shift_common_to_every_feature():
    from helpers.lessons.bn_vs_ln import shift_robustness

    table = shift_robustness(torch.full((5,), 3.0), torch.full((5,), 2.0), n=1024)
    assert table.loc[("LayerNorm", "shifted"), "largest change from in distribution"] < 1e-4
    assert table.loc[("BatchNorm1d, eval()", "shifted"), "largest change from in distribution"] > 2.5


def test_shift_robustness_refuses_mismatched_arguments():
    from helpers.lessons.bn_vs_ln import shift_robustness

    with pytest.raises(ValueError, match=r"'shift' and 'scale' must be 1-D of one length, got shapes \(3,\) and \(4,\)"):
        shift_robustness(torch.zeros(3), torch.ones(4))
