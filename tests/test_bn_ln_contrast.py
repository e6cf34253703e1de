"""Deep dive 11's shift feature by feature: BN with trained statistics and LN on shifted data."""

from __future__ import annotations

import pytest
import torch

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
