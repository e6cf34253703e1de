"""Checks: compare a result with a reference, and give a learner instant feedback.

- :func:`compare` is makemore's ``cmp``: exact / close / max difference, as a one-row
  DataFrame (``pd.concat`` several to build a table).
- :class:`Exercise` describes one exercise: a reference callable, seeded input cases
  and the common mistakes worth a hint. :func:`check` runs a learner's function on every
  case and returns a :class:`Verdict` that shows as one friendly line ("✅ ..." / "❌ ..."), in the
  language set by :func:`helpers.set_language`: every hint, case description and message is a
  :class:`helpers.language.Text`, English with its Chinese beside it.
  Each topic declares its exercises with :func:`register`: LayerNorm by hand in
  :mod:`helpers.exercises.layer_norm`, the others beside their topic (see :mod:`helpers.exercises`).
"""

from __future__ import annotations

import contextlib
import math
import pkgutil
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from unittest import mock

import pandas as pd
import torch

from helpers.language import Text, say

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
    """One input for an exercise: ``make(generator)`` returns the positional arguments.

    ``description`` names the case in the ❌ line: a :class:`~helpers.language.Text` (English and
    Chinese) for every registered exercise; the verdict's table is indexed by its English."""

    description: str
    make: Callable[[torch.Generator], tuple]


@dataclass(frozen=True)
class Exercise:
    """An exercise a learner's function is checked against.

    Args:
        name: the key in the registry, e.g. ``"sentence_layer_norm"``.
        reference: computes the right answer from a case's arguments (torch's own, ideally).
        cases: the inputs, each made from a seeded generator, easy ones first.
        mistakes: ``hint -> wrong implementation``; when a learner's output matches a wrong
            implementation's (and not the reference's), the verdict gives that hint. Each hint
            (and ``hint``, ``shape_hint``, each case's description) is a
            :class:`~helpers.language.Text`, so that the feedback follows
            :func:`helpers.set_language`; a plain ``str`` is said in English only.
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
    hint: str = Text("compare your steps with the formula, one line at a time.",
                     "把你的每一步和公式逐行对照。")
    seed: int = 0
    example: str = "torch.randn(4)"
    shape_hint: str = Text("the output has the input's shape: one normalized value per input value.",
                           "输出与输入形状相同：每个输入值对应一个归一化后的值。")
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
    "helpers.rms_norm", "helpers.autograd.LayerNormFunction.apply", "helpers.lessons.sequence.masked_layer_norm",
    "helpers.functional.instance_norm", "helpers.functional.normalize", "helpers.instance_norm",
    "helpers.normalize",
    "helpers.speed.compiled.CompiledLayerNormFunction.apply", "helpers.speed.compiled.CompiledRMSNormFunction.apply",
    "helpers.speed.compiled.layer_norm_backward", "helpers.speed.one_pass.layer_norm_backward",
    "helpers.speed.one_pass.rms_norm_backward",
)


class ForbiddenCall(RuntimeError):
    """Raised by a forbidden function (:data:`ALWAYS_FORBIDDEN`) called while a check runs."""


def _resolve(dotted: str) -> tuple[object, str]:
    """``"a.b.C.f"`` -> ``(a.b.C, "f")``: the owner (modules imported, then attributes) and the name."""
    owner, _, attr = dotted.rpartition(".")
    return pkgutil.resolve_name(owner), attr


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


@contextlib.contextmanager
def refusing(names: Sequence[str], namespaces: Sequence[dict] = ()) -> Iterator[None]:
    """While inside, every function named in ``names`` raises :class:`ForbiddenCall`.

    Each name is replaced where it lives (``torch.nn.functional.layer_norm`` in its module), and
    also wherever ``namespaces`` (a learner's globals) hold the same object under any name, so
    that ``from torch.nn.functional import layer_norm`` in an earlier cell does not slip past.
    Everything is put back on the way out, even after an error: ``mock.patch`` deletes again a
    class's inherited attribute (``Tensor.var``, ``Function.apply``), so that inheritance shows
    the original, and a learner's global is set back alone (not the whole namespace, which the
    learner's function may have changed meanwhile).
    """
    with contextlib.ExitStack() as stack:
        originals: dict[int, tuple[str, object]] = {}  # id -> (name, the object, kept alive)
        for name in names:
            try:
                owner, attr = _resolve(name)
                original = getattr(owner, attr)
            except (ImportError, AttributeError):
                continue  # not in this torch: nothing to refuse
            originals.setdefault(id(original), (name, original))
            stack.enter_context(mock.patch.object(owner, attr, _Refuser(name)))
        for namespace in namespaces:
            for key, value in list(namespace.items()):
                if callable(value) and id(value) in originals:
                    stack.callback(namespace.__setitem__, key, value)
                    namespace[key] = _Refuser(originals[id(value)][0])
        yield


def _forbidden_name(fn: Callable, names: Sequence[str]) -> str | None:
    """The name in ``names`` of the function ``fn`` is (through a bound method or a partial), if any."""
    target = getattr(fn, "func", fn)  # functools.partial
    target = getattr(target, "__func__", target)  # a bound method
    for name in names:
        try:
            original = pkgutil.resolve_name(name)
        except (ImportError, AttributeError):
            continue
        if getattr(original, "__func__", original) is target:
            return name
    return None


def register(exercise: Exercise) -> Exercise:
    """Add ``exercise`` to the registry under ``exercise.name`` (replacing one of that name)."""
    _REGISTRY[exercise.name] = exercise
    return exercise


def _clone(args: tuple) -> tuple:
    return tuple(a.clone() if isinstance(a, torch.Tensor) else a for a in args)


def _fmt(x: float) -> str:
    return f"{x:.2g}" if math.isfinite(x) else str(x)


#: What the checker itself says, in both languages ({...} are filled in as with str.format).
_SAID = {
    "forbidden": Text("your function called {err}, which hands in the answer instead of computing it",
                      "你的函数调用了 {err}，这是直接交出答案，而不是自己算出来"),
    "forbidden hint": Text("write it from the formula with elementary operations (mean, subtraction, a square root).",
                           "照着公式用基本运算（均值、减法、平方根）自己写出来。"),
    "raised": Text("your function raised {kind}: {err}", "你的函数抛出了 {kind}：{err}"),
    "raised hint": Text("read the error's last line; try your function on `{example}` in a cell of its own.",
                        "先读报错的最后一行；再在单独的单元格里用 `{example}` 试试你的函数。"),
    "not a tensor": Text("your function returned {kind}, expected a torch.Tensor",
                         "你的函数返回了 {kind}，应当返回 torch.Tensor"),
    "not a tensor hint": Text("return the tensor you computed, not a number or a list.",
                              "返回你算出的张量，而不是一个数或一个列表。"),
    "shape": Text("your function returned shape {got}, expected {expected}",
                  "你的函数返回的形状是 {got}，应为 {expected}"),
    "dtype": Text("your function returned dtype {got}, expected {expected}",
                  "你的函数返回的 dtype 是 {got}，应为 {expected}"),
    "dtype hint": Text("keep the input's dtype (no `.double()` or float64 constants).",
                       "保持输入的 dtype（不要用 `.double()`，也不要用 float64 常数）。"),
    "difference": Text("max difference {diff} from the reference", "与参考结果的最大差值为 {diff}"),
    "in place": Text("your function changed its argument {i} in place", "你的函数原地修改了第 {i} 个参数"),
    "in place hint": Text("compute on new tensors (`x = x - mean`, not `x -= mean`): the caller's tensor must "
                          "come back unchanged, as it does from `nn.LayerNorm`.",
                          "在新的张量上计算，写 `x = x - mean`，不要写 `x -= mean`。调用者传入的张量必须原样保留，"
                          "`nn.LayerNorm` 也是这样。"),
    "passed": Text("✅ {name}: all {n} cases match the reference. Well done!",
                   "✅ {name}：全部 {n} 个用例都与参考结果一致。做得好！"),
    "failed": Text("❌ {name}: case '{case}': {why}.\n   Hint: {hint}",
                   "❌ {name}：用例“{case}”：{why}。\n   提示：{hint}"),
}


def _run(exercise: Exercise, fn: Callable, args: tuple) -> tuple[str | None, str | None, dict]:
    """Run ``fn(*args)`` against the reference: (what is wrong, a hint, a table row); (None, None, row) if right."""
    expected = exercise.reference(*_clone(args))
    namespaces = [fn.__globals__] if isinstance(getattr(fn, "__globals__", None), dict) else []
    try:
        handed_in = _forbidden_name(fn, (*ALWAYS_FORBIDDEN, *exercise.forbidden))
        if handed_in is not None:  # the forbidden function itself, passed in as it is
            raise ForbiddenCall(handed_in)
        given = _clone(args)  # copies: a function that changes them cannot spoil the check
        with refusing((*ALWAYS_FORBIDDEN, *exercise.forbidden), namespaces):
            got = fn(*given)
    except ForbiddenCall as err:
        return say(_SAID["forbidden"]).format(err=err), say(_SAID["forbidden hint"]), {"ok": False}
    except Exception as err:  # the learner's code: any error is feedback, not a crash
        why = say(_SAID["raised"]).format(kind=type(err).__name__, err=err)
        return why, say(_SAID["raised hint"]).format(example=exercise.example), {"ok": False}
    if not isinstance(got, torch.Tensor):
        return say(_SAID["not a tensor"]).format(kind=type(got).__name__), say(_SAID["not a tensor hint"]), \
            {"ok": False}
    if got.shape != expected.shape:
        why = say(_SAID["shape"]).format(got=tuple(got.shape), expected=tuple(expected.shape))
        return why, say(exercise.shape_hint), {"ok": False}
    row = compare(got, expected).iloc[0].to_dict()
    if got.dtype != expected.dtype:
        why = say(_SAID["dtype"]).format(got=got.dtype, expected=expected.dtype)
        return why, say(_SAID["dtype hint"]), {**row, "ok": False}
    if not row["close"]:
        why = say(_SAID["difference"]).format(diff=_fmt(row["max_abs_diff"]))
        return why, say(_diagnose(exercise, got, args) or exercise.hint), {**row, "ok": False}
    changed = _changed(args, given)
    if changed is not None:  # a right answer that spoils its caller's tensor, as `x -= mean` does
        return say(_SAID["in place"]).format(i=changed), say(_SAID["in place hint"]), {**row, "ok": False}
    return None, None, {**row, "ok": True}


def _changed(before: tuple, after: tuple) -> int | None:
    """The position (from 1) of the first tensor argument that a call changed in place, or None."""
    for i, (a, b) in enumerate(zip(before, after, strict=True), 1):
        if isinstance(a, torch.Tensor) and not (a.shape == b.shape and bool(((a == b) | (a != a) & (b != b)).all())):
            return i
    return None


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
            them in place cannot spoil the check, and fails it with its own hint).

    Returns:
        A :class:`Verdict`: ``✅`` when every case matches the reference within
        :func:`compare`'s default tolerances (same shape and dtype too); otherwise ``❌``
        with the first failing case, how far off it is and a hint. ``verdict.table``
        has a row per case.
    """
    if isinstance(exercise, str):
        exercise = _REGISTRY[exercise]
    if not callable(fn):
        raise TypeError(f"check(): argument 'fn' must be a function, got {type(fn).__name__}")
    rows, failure = [], None
    for case, args in zip(exercise.cases, exercise.inputs(), strict=True):
        why, hint, row = _run(exercise, fn, args)
        rows.append({"case": str.__str__(case.description), **row})
        if why is not None and failure is None:
            failure = (case, why, hint)
    table = pd.DataFrame(rows).set_index("case")
    if failure is None:
        n = len(exercise.cases)
        return Verdict(True, say(_SAID["passed"]).format(name=exercise.name, n=n), table)
    case, why, hint = failure
    message = say(_SAID["failed"]).format(name=exercise.name, case=say(case.description), why=why, hint=hint)
    return Verdict(False, message, table)
