"""helpers.exercises.checking: compare() and the exercise checker, run on an exercise of its own
(one token's LayerNorm, no gamma or beta) with the cases and mistakes a real one has."""

from __future__ import annotations

import math

import pandas as pd
import pytest
import torch
import torch.nn.functional as F

from helpers.exercises import checking
from helpers.exercises.checking import Case, Exercise, check, compare

# ---------------------------------------------------------------- compare


def test_identical_tensors_are_exact():
    x = torch.randn(3, 4)
    row = compare(x, x.clone(), name="x")
    assert row.index.tolist() == ["x"]
    assert list(row.columns) == ["exact", "close", "max_abs_diff", "dtype"]
    assert row.loc["x"].tolist() == [True, True, 0.0, "float32"]


def test_a_tiny_difference_is_close_not_exact_and_measured():
    ref = torch.tensor([1.0, 2.0, 3.0])
    mine = ref.clone()
    mine[1] = torch.nextafter(ref[1], torch.tensor(3.0))  # one float32 step above 2.0
    row = compare(mine, ref).iloc[0]
    assert not row["exact"] and row["close"]
    assert row["max_abs_diff"] == 2.0**-22  # float32's spacing at 2.0


def test_a_real_difference_is_neither():
    row = compare(torch.tensor([1.0, 2.5]), torch.tensor([1.0, 2.0])).iloc[0]
    assert not row["exact"] and not row["close"] and row["max_abs_diff"] == 0.5


def test_default_tolerances_follow_the_dtype_and_can_be_overridden():
    ref = torch.tensor([1.0])
    off = torch.tensor([1.0 + 1e-4])
    assert not compare(off, ref)["close"].item()
    assert compare(off, ref, atol=1e-3)["close"].item()
    assert compare(off.half(), ref.half())["close"].item()  # float16: rtol 1e-3
    assert checking.default_tolerances(torch.float32) == (1.3e-6, 1e-5)
    assert checking.default_tolerances(torch.float32, torch.float16) == (1e-3, 1e-5)


def test_dtype_mismatch_is_reported_and_never_exact():
    x = torch.tensor([0.5, 0.25])
    row = compare(x.double(), x).iloc[0]
    assert row["dtype"] == "float64 vs float32"
    assert not row["exact"] and row["close"] and row["max_abs_diff"] == 0.0


def test_nan_and_inf_in_the_same_places_match():
    a = torch.tensor([1.0, math.nan, math.inf])
    row = compare(a, a.clone()).iloc[0]
    assert row["exact"] and row["close"] and row["max_abs_diff"] == 0.0
    one_sided = compare(torch.tensor([1.0, math.nan]), torch.tensor([1.0, 2.0])).iloc[0]
    assert not one_sided["close"] and math.isnan(one_sided["max_abs_diff"])


@pytest.mark.parametrize("mine, ref", [
    (torch.zeros(3), torch.zeros(1, 3)),
    (torch.zeros(2, 3), torch.zeros(3)),
    (torch.zeros(4, 1), torch.zeros(4, 4)),
])
def test_shape_mismatch_raises_instead_of_broadcasting(mine, ref):
    with pytest.raises(ValueError, match=r"shapes differ: mine has shape .* reference has shape .*nothing is broadcast"):
        compare(mine, ref)


def test_accepts_lists_and_tensors_that_require_grad():
    w = torch.ones(2, requires_grad=True)
    assert compare(w * 2, [2.0, 2.0])["close"].item()
    with pytest.raises(TypeError, match=r"argument 'reference' must be a tensor"):
        compare(torch.zeros(1), object())


def test_rows_concatenate_into_a_table():
    table = pd.concat([compare(torch.ones(2), torch.ones(2), name="a"),
                       compare(torch.ones(2), torch.zeros(2), name="b")])
    assert table.index.tolist() == ["a", "b"] and table["close"].tolist() == [True, False]


# ---------------------------------------------------------------- exercises


def _randn_token(n, mean=0.0, std=1.0):
    return lambda g: (torch.randn(n, generator=g) * std + mean,)


ONE_TOKEN = Exercise(
    name="layer_norm_one_token",
    reference=lambda x: F.layer_norm(x, x.shape[-1:], eps=1e-5),
    cases=[
        Case("4 features from randn", _randn_token(4)),
        Case("8 features, mean 3 and std 10", _randn_token(8, mean=3.0, std=10.0)),
        Case("8 features that barely differ (std 0.01)", _randn_token(8, mean=1.0, std=0.01)),
        Case("all 4 features equal", lambda g: (torch.full((4,), 2.5),)),
        Case("16 features around 10000 (std 500)", _randn_token(16, mean=1e4, std=500.0)),
    ],
    mistakes={
        "`x.var()` divides by n - 1 (unbiased); LayerNorm divides by n.":
            lambda x: (x - x.mean()) / torch.sqrt(x.var() + 1e-5),
        "eps goes inside the square root: `torch.sqrt(var + eps)`, not `torch.sqrt(var) + eps`.":
            lambda x: (x - x.mean()) / (x.var(unbiased=False).sqrt() + 1e-5),
        "divide by the standard deviation `sqrt(var + eps)`, not by the variance.":
            lambda x: (x - x.mean()) / (x.var(unbiased=False) + 1e-5),
        "subtract the mean before dividing: LayerNorm centres, then scales.":
            lambda x: x / torch.sqrt(x.var(unbiased=False) + 1e-5),
        "now divide the centred values by `sqrt(var + eps)`.": lambda x: x - x.mean(),
        "add eps = 1e-5 under the square root.": lambda x: (x - x.mean()) / x.var(unbiased=False).sqrt(),
    },
    hint="LayerNorm of one token is (x - mean) / sqrt(var + 1e-5), with the biased variance.",
)


def check_layer_norm_one_token(fn):
    return check(ONE_TOKEN, fn)


def correct(x, eps=1e-5):
    mean = x.mean()
    var = ((x - mean) ** 2).mean()
    return (x - mean) / torch.sqrt(var + eps)


def test_a_correct_one_token_layer_norm_passes():
    verdict = check_layer_norm_one_token(correct)
    assert verdict.passed and bool(verdict)
    assert repr(verdict).startswith("✅ layer_norm_one_token: all 5 cases match")
    assert verdict.table["ok"].all() and len(verdict.table) == 5


def test_handing_in_torch_itself_fails_and_a_solution_by_hand_passes():
    verdict = check_layer_norm_one_token(lambda x: F.layer_norm(x, x.shape))
    assert not verdict
    assert "your function called torch.nn.functional.layer_norm, which hands in the answer" in repr(verdict)
    assert check_layer_norm_one_token(correct)


WRONG = {
    "unbiased variance": (lambda x: (x - x.mean()) / torch.sqrt(x.var() + 1e-5), "n - 1"),
    "eps outside the sqrt": (
        lambda x: (x - x.mean()) / (x.var(unbiased=False).sqrt() + 1e-5), "inside the square root"),
    "divides by the variance": (lambda x: (x - x.mean()) / (x.var(unbiased=False) + 1e-5),
                                "standard deviation"),
    "does not centre": (lambda x: x / torch.sqrt(x.var(unbiased=False) + 1e-5), "subtract the mean"),
    "only centres": (lambda x: x - x.mean(), "now divide"),
    "no eps": (lambda x: (x - x.mean()) / x.var(unbiased=False).sqrt(), "add eps"),
    "does nothing": (lambda x: x, "LayerNorm of one token is"),
    "raises": (lambda x: x.no_such_method(), "read the error"),
    "returns a list": (lambda x: correct(x).tolist(), "return the tensor"),
    "adds a dim": (lambda x: correct(x)[None], "the input's shape"),
    "float64": (lambda x: correct(x.double()), "keep the input's dtype"),
}


@pytest.mark.parametrize("name", WRONG)
def test_a_wrong_implementation_fails_with_the_right_hint(name):
    fn, hint = WRONG[name]
    verdict = check_layer_norm_one_token(fn)
    assert not verdict.passed and not bool(verdict)
    message = repr(verdict)
    assert message.startswith("❌ layer_norm_one_token: case '")
    assert f"Hint: {hint}" in message or hint in message.split("Hint:")[1]
    assert not verdict.table["ok"].all()


def test_the_message_says_how_far_off():
    verdict = check_layer_norm_one_token(WRONG["eps outside the sqrt"][0])
    assert "case '8 features that barely differ (std 0.01)': max difference 0.16 from the reference" in repr(verdict)
    # The easy cases pass: eps only matters when the variance is small.
    assert verdict.table["ok"].tolist() == [True, True, False, True, True]


def test_the_learners_inputs_are_copies_and_changing_them_fails_with_its_hint():
    def destructive(x):
        out = correct(x.clone())
        x.zero_()
        return out
    verdict = check_layer_norm_one_token(destructive)
    assert not verdict and "in place" in verdict.message
    assert verdict.table["close"].all()  # every case still compared right: its copies were spoiled, not the cases


def test_cases_are_seeded_and_reproducible():
    exercise = ONE_TOKEN
    first, second = exercise.inputs(), exercise.inputs()
    assert all(torch.equal(a[0], b[0]) for a, b in zip(first, second, strict=True))
    assert not torch.equal(first[0][0], first[1][0][:4])


def test_a_later_notebook_can_register_its_own_exercise():
    exercise = Exercise(
        name="test_rms_norm_rows",
        reference=lambda x: F.rms_norm(x, x.shape[-1:], eps=1e-6),
        cases=[Case("2 x 8 randn", lambda g: (torch.randn(2, 8, generator=g),))],
        mistakes={"divide by the root mean square, not the mean absolute value":
                  lambda x: x / x.abs().mean(-1, keepdim=True)},
        hint="rms = sqrt(mean(x ** 2) + eps)",
    )
    try:
        checking.register(exercise)
        assert "test_rms_norm_rows" in sorted(checking._REGISTRY)
        good = check("test_rms_norm_rows", lambda x: x * torch.rsqrt((x * x).mean(-1, keepdim=True) + 1e-6))
        assert good.passed
        known = check("test_rms_norm_rows", lambda x: x / x.abs().mean(-1, keepdim=True))
        assert not known.passed and "Hint: divide by the root mean square" in repr(known)
        unknown = check("test_rms_norm_rows", lambda x: 2 * x)
        assert not unknown.passed and "Hint: rms = sqrt(mean(x ** 2) + eps)" in repr(unknown)
        assert check(exercise, lambda x: x * torch.rsqrt((x * x).mean(-1, keepdim=True) + 1e-6))
    finally:
        checking._REGISTRY.pop("test_rms_norm_rows", None)


def test_unknown_exercise_and_bad_arguments():
    with pytest.raises(TypeError, match=r"argument 'fn' must be a function"):
        check(Exercise("identity", reference=lambda x: x, cases=[]), 3)


def test_refusing_puts_everything_back_as_it_was_inherited_attributes_included():
    from helpers.autograd import LayerNormFunction
    from helpers.exercises.checking import ForbiddenCall, refusing

    names = ["torch.Tensor.var", "helpers.autograd.LayerNormFunction.apply", "torch.nn.functional.layer_norm",
             "torch.ops.aten.native_layer_norm"]
    before = (dict(torch.Tensor.__dict__), dict(LayerNormFunction.__dict__), F.layer_norm,
              torch.ops.aten.native_layer_norm)
    with refusing(names):
        for call in (lambda: torch.ones(3).var(), lambda: F.layer_norm(torch.ones(3), (3,)),
                     lambda: torch.ops.aten.native_layer_norm.default(torch.ones(3), [3], None, None, 1e-5)):
            with pytest.raises(ForbiddenCall):
                call()
    after = (dict(torch.Tensor.__dict__), dict(LayerNormFunction.__dict__), F.layer_norm,
             torch.ops.aten.native_layer_norm)
    assert after == before
    assert torch.ones(3).var().item() == 0.0
