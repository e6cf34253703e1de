"""Checks: compare a result with a reference, and give a learner instant feedback.

- :func:`compare` is makemore's ``cmp``: exact / close / max difference, as a one-row
  DataFrame (``pd.concat`` several to build a table).
- :class:`Exercise` describes one exercise: a reference callable, seeded input cases
  and the common mistakes worth a hint. :func:`check` runs a learner's function on every
  case and returns a :class:`Verdict` that shows as one friendly line ("✅ ..." / "❌ ...").
  Notebooks add their own with :func:`register`; the first one, ``"layer_norm_one_token"``,
  is registered below.
"""

from __future__ import annotations

import contextlib
import importlib
import math
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field

import pandas as pd
import torch
import torch.nn.functional as F

__all__ = [
    "ALWAYS_FORBIDDEN",
    "Case",
    "Exercise",
    "ForbiddenCall",
    "Verdict",
    "check",
    "check_layer_norm_one_token",
    "compare",
    "default_tolerances",
    "register",
    "registered",
    "refusing",
]

# torch.testing.assert_close's defaults: (rtol, atol) per dtype.
_TOLERANCES = {
    torch.float16: (1e-3, 1e-5),
    torch.bfloat16: (1.6e-2, 1e-5),
    torch.float32: (1.3e-6, 1e-5),
    torch.float64: (1e-7, 1e-7),
}


def default_tolerances(*dtypes: torch.dtype) -> tuple[float, float]:
    """``(rtol, atol)`` that ``torch.testing.assert_close`` uses for the least precise dtype."""
    found = [_TOLERANCES.get(d, (0.0, 0.0)) for d in dtypes]
    return max(r for r, _ in found), max(a for _, a in found)


def _as_tensor(value, arg: str) -> torch.Tensor:
    if isinstance(value, torch.Tensor):
        return value.detach()
    try:
        return torch.as_tensor(value)
    except (TypeError, ValueError, RuntimeError) as err:
        raise TypeError(
            f"compare(): argument '{arg}' must be a tensor (or convertible to one), "
            f"got {type(value).__name__}"
        ) from err


def compare(mine, reference, *, name: str | None = None, atol: float | None = None,
            rtol: float | None = None) -> pd.DataFrame:
    """Compare ``mine`` with ``reference``, element by element; nothing is broadcast.

    Args:
        mine: your result (a tensor, or anything ``torch.as_tensor`` accepts).
        reference: the result to match, with exactly the same shape.
        name: the row's label. Default: ``"mine"``.
        atol, rtol: tolerances for ``close`` (``|mine - reference| <= atol + rtol * |reference|``).
            Default: ``torch.testing.assert_close``'s for the less precise of the two dtypes
            (float32: ``rtol=1.3e-6, atol=1e-5``).

    Returns:
        A one-row DataFrame with columns ``exact`` (same dtype and every value equal,
        NaN where the reference has NaN), ``close`` (within the tolerances), ``max_abs_diff``
        (in float64; NaN where only one side is NaN) and ``dtype`` (``"float32"``, or
        ``"float64 vs float32"`` when they differ, which makes ``exact`` False).

    Raises:
        ValueError: the shapes differ.

    Example::

        >>> compare(torch.tensor([1.0, 2.0]), torch.tensor([1.0, 2.000001]), name="y")
           exact  close  max_abs_diff    dtype
        y  False   True  9.536743e-07  float32
    """
    a, b = _as_tensor(mine, "mine"), _as_tensor(reference, "reference")
    if a.shape != b.shape:
        raise ValueError(
            f"compare(): shapes differ: mine has shape {tuple(a.shape)}, reference has shape "
            f"{tuple(b.shape)} (nothing is broadcast; make them the same shape first)"
        )
    default_rtol, default_atol = default_tolerances(a.dtype, b.dtype)
    rtol = default_rtol if rtol is None else rtol
    atol = default_atol if atol is None else atol
    a64, b64 = a.to("cpu", torch.float64), b.to("cpu", torch.float64)
    both_nan = a64.isnan() & b64.isnan()
    diff = torch.where(both_nan, 0.0, (a64 - b64).abs())
    diff = torch.where((a64 == b64) & a64.isinf(), 0.0, diff)  # inf == inf, not inf - inf
    max_abs_diff = diff.max().item() if diff.numel() else 0.0
    exact = a.dtype == b.dtype and bool(((a64 == b64) | both_nan).all())
    close = bool(torch.allclose(a64, b64, rtol=rtol, atol=atol, equal_nan=True))
    dtype = str(a.dtype).removeprefix("torch.")
    if a.dtype != b.dtype:
        dtype += " vs " + str(b.dtype).removeprefix("torch.")
    return pd.DataFrame(
        {"exact": [exact], "close": [close], "max_abs_diff": [max_abs_diff], "dtype": [dtype]},
        index=pd.Index([name or "mine"]),
    )


# ---------------------------------------------------------------- exercises


@dataclass(frozen=True)
class Case:
    """One input for an exercise: ``make(generator)`` returns the positional arguments."""

    description: str
    make: Callable[[torch.Generator], tuple]


@dataclass(frozen=True)
class Exercise:
    """An exercise a learner's function is checked against.

    Args:
        name: the key in the registry, e.g. ``"layer_norm_one_token"``.
        reference: computes the right answer from a case's arguments (torch's own, ideally).
        cases: the inputs, each made from a seeded generator, easy ones first.
        mistakes: ``hint -> wrong implementation``; when a learner's output matches a wrong
            implementation's (and not the reference's), the verdict gives that hint.
        hint: what to say when the output is wrong in a way no mistake explains.
        seed: the first case's seed; case ``i`` uses ``seed + i``.
        example: code for an input to try the function on, suggested when it raises.
        shape_hint: what to say when the output's shape is wrong.
        forbidden: dotted names that a learner's function may not call in this exercise, on top
            of :data:`ALWAYS_FORBIDDEN` (for example ``"torch.Tensor.var"`` where the point is
            to compute the variance by hand).
    """

    name: str
    reference: Callable
    cases: Sequence[Case]
    mistakes: Mapping[str, Callable] = field(default_factory=dict)
    hint: str = "compare your steps with the formula, one line at a time."
    seed: int = 0
    example: str = "torch.randn(4)"
    shape_hint: str = "the output has the input's shape: one normalized value per input value."
    forbidden: tuple[str, ...] = ()

    def inputs(self) -> list[tuple]:
        """Each case's arguments, made afresh from its seed."""
        return [c.make(torch.Generator().manual_seed(self.seed + i)) for i, c in enumerate(self.cases)]


@dataclass(frozen=True)
class Verdict:
    """The outcome of :func:`check`: ``bool(verdict)`` is whether it passed; it shows as ``message``."""

    passed: bool
    message: str
    table: pd.DataFrame

    def __bool__(self) -> bool:
        return self.passed

    def __repr__(self) -> str:
        return self.message


_REGISTRY: dict[str, Exercise] = {}

#: What no learner's function may call while it is checked: torch's own norm functions and this
#: set's reference implementations. Handing one of them in would pass the check without
#: writing anything; while a check runs, each of them raises :class:`ForbiddenCall` instead.
ALWAYS_FORBIDDEN = (
    "torch.nn.functional.layer_norm", "torch.nn.functional.batch_norm", "torch.nn.functional.group_norm",
    "torch.nn.functional.instance_norm", "torch.nn.functional.rms_norm",
    "torch.layer_norm", "torch.batch_norm", "torch.group_norm", "torch.instance_norm", "torch.rms_norm",
    "torch.native_layer_norm", "torch.native_batch_norm",
    # the same kernels reached through the operator registry, every overload of each
    "torch.ops.aten.layer_norm", "torch.ops.aten.native_layer_norm", "torch.ops.aten.batch_norm",
    "torch.ops.aten.native_batch_norm", "torch.ops.aten._native_batch_norm_legit",
    "torch.ops.aten.group_norm", "torch.ops.aten.native_group_norm", "torch.ops.aten.instance_norm",
    "torch.ops.aten.rms_norm", "torch.ops.aten._fused_rms_norm",
    "helpers.functional.layer_norm", "helpers.functional.batch_norm", "helpers.functional.group_norm",
    "helpers.functional.rms_norm", "helpers.layer_norm", "helpers.batch_norm", "helpers.group_norm",
    "helpers.rms_norm", "helpers.autograd.LayerNormFunction.apply", "helpers.sequence.masked_layer_norm",
    "helpers.functional.instance_norm", "helpers.functional.normalize", "helpers.instance_norm",
    "helpers.normalize", "helpers.compiled_layer_norm", "helpers.compiled_rms_norm",
    "helpers.compiled.compiled_layer_norm", "helpers.compiled.compiled_rms_norm",
    "helpers.compiled.CompiledLayerNormFunction.apply", "helpers.compiled.CompiledRMSNormFunction.apply",
    "helpers.compiled.layer_norm_backward", "helpers.one_pass.layer_norm_backward",
    "helpers.one_pass.rms_norm_backward",
)


class ForbiddenCall(RuntimeError):
    """Raised by a forbidden function (:data:`ALWAYS_FORBIDDEN`) called while a check runs."""


def _resolve(dotted: str) -> tuple[object, str]:
    """``"a.b.C.f"`` -> ``(a.b.C, "f")``: the longest importable module, then attributes."""
    parts = dotted.split(".")
    for i in range(len(parts) - 1, 0, -1):
        try:
            owner = importlib.import_module(".".join(parts[:i]))
        except ImportError:
            continue
        for attr in parts[i:-1]:
            owner = getattr(owner, attr)
        return owner, parts[-1]
    raise ValueError(f"cannot resolve {dotted!r}")


class _Refuser:
    """Stands in for a forbidden function while a check runs: calling it raises, and so does
    calling any overload of it (``torch.ops.aten.native_layer_norm.default``)."""

    def __init__(self, name: str):
        self._name = name

    def __call__(self, *args, **kwargs):
        raise ForbiddenCall(self._name)

    def __getattr__(self, attr: str):
        if attr.startswith("__"):
            raise AttributeError(attr)
        return _Refuser(f"{self._name}.{attr}")


def _refusing_stand_in(name: str) -> Callable:
    return _Refuser(name)


_INHERITED = object()  # refusing()'s marker: the attribute came from a base class


@contextlib.contextmanager
def refusing(names: Sequence[str], namespaces: Sequence[dict] = ()) -> Iterator[None]:
    """While inside, every function named in ``names`` raises :class:`ForbiddenCall`.

    Each name is replaced where it lives (``torch.nn.functional.layer_norm`` in its module), and
    also wherever ``namespaces`` (a learner's globals) hold the same object under any name, so
    that ``from torch.nn.functional import layer_norm`` in an earlier cell does not slip past.
    Everything is put back on the way out, even after an error.
    """
    saved: list[tuple[object, str, object]] = []
    originals: dict[int, str] = {}
    try:
        for name in names:
            try:
                owner, attr = _resolve(name)
            except (ValueError, AttributeError):
                continue  # not in this torch: nothing to refuse
            if not hasattr(owner, attr):
                continue
            # a class's inherited attribute (Tensor.var, Function.apply) is not copied onto it: on
            # the way out the stand-in is deleted, and inheritance shows the original again
            inherited = isinstance(owner, type) and attr not in owner.__dict__
            original = _INHERITED if inherited else (
                owner.__dict__[attr] if isinstance(owner, type) else getattr(owner, attr))
            originals.setdefault(id(getattr(owner, attr)), name)
            saved.append((owner, attr, original))
            setattr(owner, attr, _refusing_stand_in(name))
        for namespace in namespaces:
            for key, value in list(namespace.items()):
                if callable(value) and id(value) in originals:
                    saved.append((namespace, key, value))
                    namespace[key] = _refusing_stand_in(originals[id(value)])
        yield
    finally:
        for owner, attr, original in reversed(saved):
            if isinstance(owner, dict):
                owner[attr] = original
            elif original is _INHERITED:
                delattr(owner, attr)
            else:
                setattr(owner, attr, original)


def _forbidden_name(fn: Callable, names: Sequence[str]) -> str | None:
    """The name in ``names`` of the function ``fn`` is (through a bound method or a partial), if any."""
    target = getattr(fn, "func", fn)  # functools.partial
    target = getattr(target, "__func__", target)  # a bound method
    for name in names:
        try:
            owner, attr = _resolve(name)
            original = getattr(owner, attr)
        except (ValueError, AttributeError):
            continue
        if getattr(original, "__func__", original) is target:
            return name
    return None


def register(exercise: Exercise) -> Exercise:
    """Add ``exercise`` to the registry under ``exercise.name`` (replacing one of that name)."""
    if not isinstance(exercise, Exercise):
        raise TypeError(f"register(): argument 'exercise' must be an Exercise, got {type(exercise).__name__}")
    _REGISTRY[exercise.name] = exercise
    return exercise


def registered() -> list[str]:
    """The names of the registered exercises."""
    return sorted(_REGISTRY)


def _clone(args: tuple) -> tuple:
    return tuple(a.clone() if isinstance(a, torch.Tensor) else a for a in args)


def _fmt(x: float) -> str:
    return f"{x:.2g}" if math.isfinite(x) else str(x)


def _run(exercise: Exercise, fn: Callable, args: tuple) -> tuple[str | None, str | None, dict]:
    """Run ``fn(*args)`` against the reference: (what is wrong, a hint, a table row); (None, None, row) if right."""
    expected = exercise.reference(*_clone(args))
    namespaces = [fn.__globals__] if isinstance(getattr(fn, "__globals__", None), dict) else []
    try:
        handed_in = _forbidden_name(fn, (*ALWAYS_FORBIDDEN, *exercise.forbidden))
        if handed_in is not None:  # the forbidden function itself, passed in as it is
            raise ForbiddenCall(handed_in)
        with refusing((*ALWAYS_FORBIDDEN, *exercise.forbidden), namespaces):
            got = fn(*_clone(args))
    except ForbiddenCall as err:
        why = f"your function called {err}, which hands in the answer instead of computing it"
        return why, "write it from the formula with elementary operations (mean, subtraction, a square root).", \
            {"ok": False}
    except Exception as err:  # the learner's code: any error is feedback, not a crash
        why = f"your function raised {type(err).__name__}: {err}"
        return why, f"read the error's last line; try your function on `{exercise.example}` in a cell of its own.", {"ok": False}
    if not isinstance(got, torch.Tensor):
        why = f"your function returned {type(got).__name__}, expected a torch.Tensor"
        return why, "return the tensor you computed, not a number or a list.", {"ok": False}
    if got.shape != expected.shape:
        why = f"your function returned shape {tuple(got.shape)}, expected {tuple(expected.shape)}"
        return why, exercise.shape_hint, {"ok": False}
    row = compare(got, expected).iloc[0].to_dict()
    if got.dtype != expected.dtype:
        why = f"your function returned dtype {got.dtype}, expected {expected.dtype}"
        return why, "keep the input's dtype (no `.double()` or float64 constants).", {**row, "ok": False}
    if not row["close"]:
        why = f"max difference {_fmt(row['max_abs_diff'])} from the reference"
        return why, _diagnose(exercise, got, args) or exercise.hint, {**row, "ok": False}
    return None, None, {**row, "ok": True}


def _diagnose(exercise: Exercise, got: torch.Tensor, args: tuple) -> str | None:
    """The hint of the first known mistake that reproduces ``got`` on ``args``."""
    for hint, wrong in exercise.mistakes.items():
        expected = wrong(*_clone(args))
        if got.shape == expected.shape and compare(got, expected)["close"].item():
            return hint
    return None


def check(exercise: str | Exercise, fn: Callable) -> Verdict:
    """Run ``fn`` on every case of ``exercise`` and compare it with the reference.

    Args:
        exercise: a registered exercise's name, or an :class:`Exercise`.
        fn: the learner's function; it gets each case's arguments (copies: changing
            them in place cannot spoil the check).

    Returns:
        A :class:`Verdict`: ``✅`` when every case matches the reference within
        :func:`compare`'s default tolerances (same shape and dtype too); otherwise ``❌``
        with the first failing case, how far off it is and a hint. ``verdict.table``
        has a row per case.
    """
    if isinstance(exercise, str):
        if exercise not in _REGISTRY:
            raise KeyError(f"check(): no exercise named {exercise!r}; registered: {registered()}")
        exercise = _REGISTRY[exercise]
    if not callable(fn):
        raise TypeError(f"check(): argument 'fn' must be a function, got {type(fn).__name__}")
    rows, failure = [], None
    for case, args in zip(exercise.cases, exercise.inputs(), strict=True):
        why, hint, row = _run(exercise, fn, args)
        rows.append({"case": case.description, **row})
        if why is not None and failure is None:
            failure = (case, why, hint)
    table = pd.DataFrame(rows).set_index("case")
    if failure is None:
        n = len(exercise.cases)
        return Verdict(True, f"✅ {exercise.name}: all {n} cases match the reference. Well done!", table)
    case, why, hint = failure
    return Verdict(False, f"❌ {exercise.name}: case '{case.description}': {why}.\n   Hint: {hint}", table)


# ------------------------------------------------ notebook 00: one token's LayerNorm

_ONE_PASS_HINT = (
    "E[x²] - E[x]² subtracts two huge, nearly equal numbers when the mean is large next to the "
    "spread, and float32 cancels catastrophically: centre first, then average the squares.")


def _one_pass_var(x: torch.Tensor, dims: tuple[int, ...], *, keepdim: bool = True) -> torch.Tensor:
    """The one-pass shortcut E[x²] - E[x]², a classic mistake in float32 at a large mean."""
    return (x * x).mean(dim=dims, keepdim=keepdim) - x.mean(dim=dims, keepdim=keepdim) ** 2



def _token_reference(x: torch.Tensor) -> torch.Tensor:
    return F.layer_norm(x, x.shape[-1:], eps=1e-5)


def _randn_token(n: int, mean: float = 0.0, std: float = 1.0) -> Callable[[torch.Generator], tuple]:
    return lambda g: (torch.randn(n, generator=g) * std + mean,)


register(Exercise(
    name="layer_norm_one_token",
    reference=_token_reference,
    cases=[
        Case("4 features from randn", _randn_token(4)),
        Case("8 features, mean 3 and std 10", _randn_token(8, mean=3.0, std=10.0)),
        Case("8 features that barely differ (std 0.01)", _randn_token(8, mean=1.0, std=0.01)),
        Case("all 4 features equal", lambda g: (torch.full((4,), 2.5),)),
        Case("16 features around 10000 (std 500)", _randn_token(16, mean=1e4, std=500.0)),
    ],
    mistakes={
        "`x.var()` divides by n - 1 (unbiased); LayerNorm divides by n: use "
        "`x.var(unbiased=False)` or `((x - mean) ** 2).mean()`.":
            lambda x: (x - x.mean()) / torch.sqrt(x.var() + 1e-5),
        "eps goes inside the square root: `torch.sqrt(var + eps)`, not `torch.sqrt(var) + eps`.":
            lambda x: (x - x.mean()) / (x.var(unbiased=False).sqrt() + 1e-5),
        "divide by the standard deviation `sqrt(var + eps)`, not by the variance.":
            lambda x: (x - x.mean()) / (x.var(unbiased=False) + 1e-5),
        "subtract the mean before dividing: LayerNorm centres, then scales.":
            lambda x: x / torch.sqrt(x.var(unbiased=False) + 1e-5),
        "now divide the centred values by `sqrt(var + eps)`.":
            lambda x: x - x.mean(),
        "add eps = 1e-5 under the square root: it matters when the features barely differ, "
        "and without it equal features give 0 / 0 = nan.":
            lambda x: (x - x.mean()) / x.var(unbiased=False).sqrt(),
        _ONE_PASS_HINT: lambda x: (x - x.mean()) / torch.sqrt(_one_pass_var(x, (-1,), keepdim=False) + 1e-5),
    },
    hint="LayerNorm of one token is (x - mean) / sqrt(var + 1e-5), with the biased variance.",
))


def check_layer_norm_one_token(fn: Callable[[torch.Tensor], torch.Tensor]) -> Verdict:
    """Check ``fn(x)``: LayerNorm (no gamma/beta, eps = 1e-5) of one token, ``x`` of shape ``(dim,)``."""
    return check("layer_norm_one_token", fn)


# ------------------------------------------------ notebook 02: LayerNorm per sentence

__all__ += ["check_masked_sentence_layer_norm", "check_sentence_layer_norm"]


def _sentence_reference(x: torch.Tensor) -> torch.Tensor:
    return F.layer_norm(x, x.shape[-2:], eps=1e-5)


def _randn_batch(batch: int, seq_len: int, dim: int, mean: float = 0.0,
                 std: float = 1.0) -> Callable[[torch.Generator], tuple]:
    return lambda g: (torch.randn(batch, seq_len, dim, generator=g) * std + mean,)


def _per_sentence(x: torch.Tensor, dims: tuple[int, ...], *, unbiased: bool = False,
                  eps_inside: bool = True) -> torch.Tensor:
    """(x - mean) / sqrt(var + eps) over ``dims``: the right answer for dims (1, 2), else a slip."""
    mean = x.mean(dim=dims, keepdim=True)
    var = x.var(dim=dims, unbiased=unbiased, keepdim=True)
    return (x - mean) / (torch.sqrt(var + 1e-5) if eps_inside else torch.sqrt(var) + 1e-5)


register(Exercise(
    name="sentence_layer_norm",
    reference=_sentence_reference,
    cases=[
        Case("the lesson's shape (2, 3, 4), from rand", lambda g: (torch.rand(2, 3, 4, generator=g),)),
        Case("3 sentences of 5 tokens x 8 features, mean 3 and std 10", _randn_batch(3, 5, 8, 3.0, 10.0)),
        Case("1 sentence of 7 tokens x 4 features", _randn_batch(1, 7, 4)),
        Case("2 sentences of 4 tokens x 8 features around 10000 (std 500)", _randn_batch(2, 4, 8, 1e4, 500.0)),
    ],
    mistakes={
        "you normalized each token (statistics over the last dim only): a sentence's mean and "
        "variance are over its tokens AND features, `dim=(1, 2)`.":
            lambda x: _per_sentence(x, (2,)),
        "you took one mean and variance for the whole batch: each sentence needs its own, "
        "`dim=(1, 2)` with `keepdim=True`.":
            lambda x: _per_sentence(x, (0, 1, 2)),
        "you averaged over the tokens only (`dim=1`), once per feature: take the features too, "
        "`dim=(1, 2)`.":
            lambda x: _per_sentence(x, (1,)),
        "`torch.var` divides by n - 1 unless you pass `unbiased=False`; LayerNorm divides by n.":
            lambda x: _per_sentence(x, (1, 2), unbiased=True),
        "eps goes inside the square root: `torch.sqrt(var + eps)`, not `torch.sqrt(var) + eps`.":
            lambda x: _per_sentence(x, (1, 2), eps_inside=False),
        _ONE_PASS_HINT:
            lambda x: (x - x.mean(dim=(1, 2), keepdim=True)) / torch.sqrt(_one_pass_var(x, (1, 2)) + 1e-5),
    },
    hint="per sentence: the mean and the biased variance over dims (1, 2) with `keepdim=True`, "
         "then (x - mean) / sqrt(var + 1e-5).",
    example="torch.rand(3, 5, 4)",
))


def check_sentence_layer_norm(fn: Callable[[torch.Tensor], torch.Tensor]) -> Verdict:
    """Check ``fn(x)``: LayerNorm per sentence (no gamma/beta, eps = 1e-5), ``x`` of shape
    ``(batch, seq_len, dim)``, any batch and length: ``F.layer_norm(x, x.shape[-2:])``."""
    return check("sentence_layer_norm", fn)


def _padded(lengths: Sequence[int], dim: int, pad: float = 0.0) -> Callable[[torch.Generator], tuple]:
    def make(g: torch.Generator) -> tuple:
        from helpers.sequence import pad_batch

        return pad_batch([torch.randn(n, dim, generator=g) for n in lengths], padding_value=pad)

    return make


def _masked_slip(x: torch.Tensor, mask: torch.Tensor, *, count_pads: bool = False,
                 zero_pads: bool = True) -> torch.Tensor:
    """Masked sentence LN, or a slip: dividing by every position's count, or leaving pads as they come."""
    real = mask[..., None]
    count = (x.shape[1] if count_pads else real.sum(dim=(1, 2), keepdim=True)) * x.shape[-1]
    mean = torch.where(real, x, 0.0).sum(dim=(1, 2), keepdim=True) / count
    var = torch.where(real, x - mean, 0.0).square().sum(dim=(1, 2), keepdim=True) / count
    y = (x - mean) / torch.sqrt(var + 1e-5)
    return torch.where(real, y, 0.0) if zero_pads else y


def _masked_reference(x: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
    from helpers.sequence import masked_layer_norm

    return masked_layer_norm(x, mask)


register(Exercise(
    name="masked_sentence_layer_norm",
    reference=_masked_reference,
    cases=[
        Case("2 sentences of 3 and 2 tokens x 4 features, padded with 0", _padded([3, 2], 4)),
        Case("3 sentences of 5, 1 and 3 tokens x 8 features, padded with 0", _padded([5, 1, 3], 8)),
        Case("2 sentences of 2 and 4 tokens, padded with 7.0", _padded([2, 4], 4, pad=7.0)),
        Case("2 sentences of 3 tokens: no pad at all", _padded([3, 3], 4)),
    ],
    mistakes={
        "the pads went into the mean and the variance: take them over the real tokens only "
        "(e.g. sums of `torch.where(mask[..., None], x, 0.0)`, divided by the number of real "
        "values), and set the pads' outputs to 0.":
            lambda x, mask: F.layer_norm(x, x.shape[-2:]),
        "the pads went into the mean and the variance (the pads' outputs are 0, good): take the "
        "statistics over the real tokens only.":
            lambda x, mask: F.layer_norm(x, x.shape[-2:]) * mask[..., None],
        "divide by the number of REAL values (real tokens x dim), not by seq_len x dim: the "
        "pads must not count.":
            lambda x, mask: _masked_slip(x, mask, count_pads=True),
        "the real tokens are right; now set the pads' outputs to 0, e.g. "
        "`torch.where(mask[..., None], y, 0.0)`.":
            lambda x, mask: _masked_slip(x, mask, zero_pads=False),
    },
    hint="per sentence, over its real tokens only: mean, then the biased variance of the "
         "centred values, then (x - mean) / sqrt(var + 1e-5); 0 at every pad.",
    example="helpers.sequence.pad_batch([torch.randn(3, 4), torch.randn(2, 4)])",
))


def check_masked_sentence_layer_norm(fn: Callable[[torch.Tensor, torch.Tensor], torch.Tensor]) -> Verdict:
    """Check ``fn(x, mask)``: LayerNorm per sentence over the real tokens only (``mask`` True),
    0 at the pads; ``x`` of shape ``(batch, seq_len, dim)``, ``mask`` ``(batch, seq_len)``."""
    return check("masked_sentence_layer_norm", fn)


# ------------------------------------------------ notebook 01: the formula, piece by piece

__all__ += ["check_biased_variance", "check_layer_norm_last_dim", "check_output_variance"]


def _last_dim_reference(x: torch.Tensor, gamma: torch.Tensor, beta: torch.Tensor) -> torch.Tensor:
    return F.layer_norm(x, x.shape[-1:], gamma, beta, eps=1e-5)


def _tokens(shape: tuple[int, ...], mean: float = 0.0, std: float = 1.0, *,
            affine: bool = True) -> Callable[[torch.Generator], tuple]:
    """``(x, gamma, beta)``: randn tokens, and random gamma/beta (or 1 and 0) of shape ``(dim,)``."""
    def make(g: torch.Generator) -> tuple:
        x = torch.randn(shape, generator=g) * std + mean
        dim = shape[-1]
        if not affine:
            return x, torch.ones(dim), torch.zeros(dim)
        return x, 1.0 + 0.5 * torch.randn(dim, generator=g), torch.randn(dim, generator=g)

    return make


def _affine_slip(x, gamma, beta, *, dims=(-1,), **kwargs) -> torch.Tensor:
    """A slip in the normalization (see ``_per_sentence``), then the right gamma and beta."""
    return _per_sentence(x, dims, **kwargs) * gamma + beta


def _without_keepdim(x: torch.Tensor, gamma: torch.Tensor, beta: torch.Tensor) -> torch.Tensor:
    """``x.mean(-1)`` without ``keepdim``: broadcasts against the features, or cannot broadcast."""
    try:
        mean, var = x.mean(-1), x.var(-1, unbiased=False)
        return (x - mean) / torch.sqrt(var + 1e-5) * gamma + beta
    except RuntimeError:  # shapes that do not broadcast: the learner's function raised as well
        return x.new_empty(0)


register(Exercise(
    name="layer_norm_last_dim",
    reference=_last_dim_reference,
    cases=[
        Case("4 tokens x 4 features, gamma 1 and beta 0", _tokens((4, 4), affine=False)),
        Case("the lesson's shape (2, 3, 4), random gamma and beta",
             lambda g: (torch.rand(2, 3, 4, generator=g), *_tokens((4,))(g)[1:])),
        Case("5 tokens x 8 features, mean 3 and std 10", _tokens((5, 8), 3.0, 10.0)),
        Case("3 tokens whose 8 features barely differ (std 0.003)", _tokens((3, 8), 0.0, 0.003)),
        Case("2 tokens whose 4 features are all equal", _tokens((2, 4), 0.5, 0.0)),
        Case("4 tokens x 8 features around 10000 (std 500), gamma 1 and beta 0",
             _tokens((4, 8), 1e4, 500.0, affine=False)),
    ],
    mistakes={
        "`x.mean(-1)` drops the last dim, so `x - mean` lines each token's mean up with the "
        "features, not with the token: pass `keepdim=True` to the mean and the variance.":
            _without_keepdim,
        "now divide the centred values by `sqrt(var + eps)`, then scale by gamma and shift by beta.":
            lambda x, gamma, beta: x - x.mean(-1, keepdim=True),
        "now scale and shift: multiply by gamma, then add beta.":
            lambda x, gamma, beta: _per_sentence(x, (-1,)),
        "scale first, then shift: `x_hat * gamma + beta`, not `(x_hat + beta) * gamma`.":
            lambda x, gamma, beta: (_per_sentence(x, (-1,)) + beta) * gamma,
        "gamma and beta are swapped: gamma (the weight) multiplies, beta (the bias) is added.":
            lambda x, gamma, beta: _per_sentence(x, (-1,)) * beta + gamma,
        "`x.var()` divides by n - 1 (unbiased); LayerNorm divides by n: "
        "`x.var(-1, unbiased=False, keepdim=True)`.":
            lambda x, gamma, beta: _affine_slip(x, gamma, beta, unbiased=True),
        "eps goes inside the square root: `torch.sqrt(var + eps)`, not `torch.sqrt(var) + eps`.":
            lambda x, gamma, beta: _affine_slip(x, gamma, beta, eps_inside=False),
        "divide by the standard deviation `sqrt(var + eps)`, not by the variance.":
            lambda x, gamma, beta: (x - x.mean(-1, keepdim=True))
            / (x.var(-1, unbiased=False, keepdim=True) + 1e-5) * gamma + beta,
        "add eps = 1e-5 under the square root: it matters when the features barely differ, "
        "and without it equal features give 0 / 0 = nan.":
            lambda x, gamma, beta: (x - x.mean(-1, keepdim=True))
            / x.var(-1, unbiased=False, keepdim=True).sqrt() * gamma + beta,
        "you took one mean and variance over the whole tensor: each token needs its own, over "
        "its features: `dim=-1, keepdim=True`.":
            lambda x, gamma, beta: _affine_slip(x, gamma, beta, dims=tuple(range(x.ndim))),
        "you averaged over dim 0, across tokens (that is BatchNorm's direction): LayerNorm "
        "averages each token over its own features, the last dim.":
            lambda x, gamma, beta: _affine_slip(x, gamma, beta, dims=(0,)),
        _ONE_PASS_HINT:
            lambda x, gamma, beta: (x - x.mean(-1, keepdim=True))
            / torch.sqrt(_one_pass_var(x, (-1,)) + 1e-5) * gamma + beta,
    },
    hint="per token: mean and biased variance over the last dim (keepdim=True), "
         "x_hat = (x - mean) / sqrt(var + 1e-5), then x_hat * gamma + beta.",
    example="torch.randn(2, 3, 4), torch.ones(4), torch.zeros(4)",
))


def check_layer_norm_last_dim(fn: Callable[[torch.Tensor, torch.Tensor, torch.Tensor], torch.Tensor]) -> Verdict:
    """Check ``fn(x, gamma, beta)``: LayerNorm over the last dim with eps = 1e-5, ``x`` of shape
    ``(*, dim)`` and ``gamma``, ``beta`` of shape ``(dim,)``: ``F.layer_norm(x, (dim,), gamma, beta)``."""
    return check("layer_norm_last_dim", fn)


register(Exercise(
    name="biased_variance",
    reference=lambda x: x.var(-1, correction=0),
    cases=[
        Case("one token [1, 2, 3, 4]", lambda g: (torch.tensor([1.0, 2.0, 3.0, 4.0]),)),
        Case("the lesson's shape (2, 3, 4), from rand", lambda g: (torch.rand(2, 3, 4, generator=g),)),
        Case("4 tokens of 8 features around 10000 (std 1)",
             lambda g: (1e4 + torch.randn(4, 8, generator=g),)),
    ],
    mistakes={
        "that divides by n - 1 (the unbiased estimate, torch.var's default); LayerNorm divides "
        "by n: the mean of the squared centred values, `((x - mean) ** 2).mean(-1)`.":
            lambda x: x.var(-1),
        _ONE_PASS_HINT: lambda x: _one_pass_var(x, (-1,), keepdim=False),
        "that is the standard deviation; the variance is its square (no square root).":
            lambda x: x.std(-1, correction=0),
    },
    hint="var = ((x - mean) ** 2).mean(-1) with mean = x.mean(-1, keepdim=True).",
    example="torch.rand(2, 3, 4)",
    shape_hint="one variance per token: reduce the last dim and drop it, shape x.shape[:-1] "
               "(`keepdim=False`).",
    forbidden=("torch.var", "torch.Tensor.var", "torch.std", "torch.Tensor.std", "torch.var_mean",
               "torch.std_mean", "torch.ops.aten.var", "torch.ops.aten.std", "torch.ops.aten.var_mean",
               "torch.ops.aten.std_mean"),
))


def check_biased_variance(fn: Callable[[torch.Tensor], torch.Tensor]) -> Verdict:
    """Check ``fn(x)``: the biased variance over the last dim, shape ``x.shape[:-1]``,
    by hand: ``torch.var``, ``torch.std`` and their methods refuse to run while it is checked."""
    return check("biased_variance", fn)


register(Exercise(
    name="output_variance",
    reference=lambda var, eps: var / (var + eps),
    cases=[
        Case("variances 0.0546, 0.0418, 0.109 (the lesson's first three) and 1.25, eps = 1e-5",
             lambda g: (torch.tensor([0.0546, 0.0418, 0.1090, 1.25]), 1e-5)),
        Case("variances near eps, eps = 1e-5", lambda g: (torch.tensor([1e-3, 1e-5, 1e-7]), 1e-5)),
        Case("a constant token (variance 0) and a unit one, eps = 1e-2",
             lambda g: (torch.tensor([0.0, 1.0]), 1e-2)),
    ],
    mistakes={
        "the output's variance is exactly 1 only when eps is negligible next to var: LayerNorm "
        "divides by sqrt(var + eps), not by sqrt(var).":
            lambda var, eps: torch.ones_like(var),
        "that is the output's standard deviation; its variance has no square root.":
            lambda var, eps: (var / (var + eps)).sqrt(),
        "upside down: the output's variance is var / (var + eps), at most 1.":
            lambda var, eps: (var + eps) / var,
    },
    hint="y = (x - mean) / sqrt(var + eps) divides every centred value by sqrt(var + eps), "
         "so the variance is divided by (var + eps).",
    example="torch.tensor([1.0, 1e-5]), 1e-5",
    shape_hint="one output variance per input variance: the same shape as `var`.",
))


def check_output_variance(fn: Callable[[torch.Tensor, float], torch.Tensor]) -> Verdict:
    """Check ``fn(var, eps)``: the variance of LayerNorm's output (no gamma/beta) for tokens
    whose biased variance is ``var``: ``var / (var + eps)``."""
    return check("output_variance", fn)
