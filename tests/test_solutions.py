"""Every notebook exercise: its solution passes, its stub and every known mistake fail helpfully,
and handing in torch's or the set's own function fails too.

The solutions are read from the notebooks' ``<details><summary>Solution</summary>`` blocks, so the
tested code is the code a learner opens; nothing is kept twice.
"""

from __future__ import annotations

import json
import pathlib
import re

import pytest
import torch
import torch.nn.functional as F

import helpers
from helpers.exercises import (
    checking,
    layer_norm,
    layer_norm_at_work,
    norm_family,
    numerics,
    training_speed,
)
from helpers.exercises.checking import ALWAYS_FORBIDDEN, check
from helpers.lessons import bn_vs_ln, placement, sequence

NOTEBOOKS = pathlib.Path(__file__).resolve().parent.parent / "notebooks"
_DETAILS = re.compile(r"<details><summary>Solution</summary>.*?```python\n(.*?)```.*?</details>", re.S)
_CHECK_CALL = re.compile(r"^((?:placement\.)?check_\w+)\((\w+)\)$")


def _cells(path: pathlib.Path) -> list[tuple[str, str]]:
    """``(kind, source)`` of each py:percent cell, markdown comments un-commented."""
    cells = []
    for chunk in re.split(r"^# %%", path.read_text(), flags=re.M)[1:]:
        header, _, body = chunk.partition("\n")
        if "[markdown]" in header:
            body = "\n".join(line[2:] if line.startswith("# ") else line.lstrip("#") for line in body.splitlines())
            cells.append(("markdown", body))
        else:
            cells.append(("code", body))
    return cells


def _namespace() -> dict:
    ns = {"torch": torch, "F": F, "helpers": helpers, "placement": placement}
    for module in (layer_norm, layer_norm_at_work, sequence, bn_vs_ln, training_speed, numerics, norm_family):
        ns.update({name: getattr(module, name) for name in dir(module) if name.startswith("check_")})
    return ns


def _exercises() -> list[tuple[str, str, str, str, str]]:
    """``(notebook, checker, function name, stub cell, solution code)`` for every exercise."""
    found = []
    for path in sorted((NOTEBOOKS / "py").glob("[0-9][0-9]_*.py")):
        stubs, solutions = [], []
        for kind, source in _cells(path):
            if kind == "code":
                last = source.strip().splitlines()[-1] if source.strip() else ""
                call = _CHECK_CALL.match(last)
                if call and re.search(rf"^def {call[2]}\(", source, re.M):
                    stubs.append((call[1], call[2], source))
            else:
                solutions += _DETAILS.findall(source)
        assert len(stubs) == len(solutions), f"{path.name}: {len(stubs)} exercises, {len(solutions)} solutions"
        found += [(path.stem, checker, name, stub, solution)
                  for (checker, name, stub), solution in zip(stubs, solutions, strict=True)]
    return found


EXERCISES = _exercises()
IDS = [f"{nb[:2]}-{name}" for nb, _, name, _, _ in EXERCISES]


def _verdict(checker: str, code: str, name: str) -> checking.Verdict:
    ns = _namespace()
    exec(compile(code, f"<{name}>", "exec"), ns)  # noqa: S102 (the notebook's own cell)
    return eval(f"{checker}({name})", ns)  # noqa: S307


def test_every_notebook_with_a_checker_has_its_exercises_found():
    by_notebook = {nb[:2] for nb, *_ in EXERCISES}
    assert by_notebook == {"00", "01", "02", "11", "12", "13", "14", "15", "16"}
    assert len(EXERCISES) == 19  # the core path's 1 + 1 + 1; the deep dives' 2 + 4 + 2 + 4 + 3 + 1


@pytest.mark.parametrize("notebook, checker, name, stub, solution", EXERCISES, ids=IDS)
def test_the_solution_passes(notebook, checker, name, stub, solution):
    assert re.search(rf"^def {name}\(", solution, re.M), "the solution defines the stub's function"
    verdict = _verdict(checker, solution, name)
    assert verdict, verdict.message
    assert verdict.message.startswith("✅")


@pytest.mark.parametrize("notebook, checker, name, stub, solution", EXERCISES, ids=IDS)
def test_the_stub_runs_and_fails_with_a_hint(notebook, checker, name, stub, solution):
    code = "\n".join(stub.strip().splitlines()[:-1])
    assert "TODO" in code
    verdict = _verdict(checker, code, name)
    assert not verdict and verdict.message.startswith("❌")
    assert "Hint:" in verdict.message and "Traceback" not in verdict.message


def _replaying(exercise: checking.Exercise, wrong):
    """A learner's function that returns what ``wrong`` gives on each case, computed beforehand:
    a mistake written by hand, even where ``wrong`` itself calls a function the check refuses."""
    answers = [(args, wrong(*args)) for args in exercise.inputs()]

    def replay(*args):
        for known, answer in answers:
            if all(torch.equal(a, b) if isinstance(a, torch.Tensor) else a == b for a, b in zip(args, known, strict=True)):
                return answer.clone()
        raise AssertionError("not one of the exercise's cases")
    return replay


@pytest.mark.parametrize("name", sorted(checking._REGISTRY))
def test_every_listed_mistake_fails_with_its_hint(name):
    exercise = checking._REGISTRY[name]
    for hint, wrong in exercise.mistakes.items():
        verdict = check(exercise, _replaying(exercise, wrong))
        assert not verdict, f"{name}: the mistake {hint!r} passes"
        assert hint in verdict.message, f"{name}: {verdict.message}"


HANDED_IN = [
    ("sentence_layer_norm", lambda x: helpers.layer_norm(x, x.shape[-2:])),
    ("sentence_layer_norm", lambda x: torch.nn.LayerNorm(x.shape[-2:], elementwise_affine=False)(x)),
    ("sentence_layer_norm", lambda x: helpers.LayerNorm(x.shape[-2:], elementwise_affine=False)(x)),
    ("pre_ln_residual", lambda x, w: x + F.layer_norm(x, x.shape[-1:]) @ w),
    ("pre_ln_residual", lambda x, w: x + torch.nn.LayerNorm(x.shape[-1], elementwise_affine=False)(x) @ w),
    ("biased_variance", lambda x: x.var(-1, unbiased=False)),
    ("biased_variance", lambda x: torch.var(x, -1, correction=0)),
    ("biased_variance", lambda x: x.std(-1, unbiased=False) ** 2),
    ("biased_variance", lambda x: torch.var_mean(x, -1, correction=0)[0]),
    ("sentence_layer_norm", lambda x: F.layer_norm(x, x.shape[-2:])),
    ("masked_sentence_layer_norm", lambda x, mask: helpers.lessons.sequence.masked_layer_norm(x, mask)),
    ("batch_norm_train", lambda x: F.batch_norm(x, None, None, training=True)),
    ("batch_norm_train", lambda x: torch.nn.BatchNorm1d(x.shape[1], affine=False)(x)),
    ("batch_norm_train", lambda x: helpers.batch_norm(x, None, None, training=True)),
    ("batch_norm_train", lambda x: F.instance_norm(x.T.unsqueeze(0)).squeeze(0).T),
    ("batch_norm_train", lambda x: helpers.instance_norm(x.T.unsqueeze(0)).squeeze(0).T),
    ("batch_norm_train", lambda x: helpers.normalize(x, 0)),
    ("ln_by_geometry", lambda x: helpers.functional.normalize(x, -1, 0.0)),
    ("running_var_update", lambda rv, x: (F.batch_norm(x, torch.zeros_like(rv), rv, training=True), rv)[1]),
    ("saturated_fraction", lambda t: placement.saturated_fraction(t)),
    ("dead_fraction", lambda a: placement.dead_fraction(a)),
    ("pre_ln_residual", lambda x, w: x + helpers.layer_norm(x, x.shape[-1:]) @ w),
    ("noisy_layer_norm", lambda a, shift, scale: F.layer_norm(a, a.shape[-1:]) * scale + shift),
    ("layer_norm_backward", lambda x, dy, eps: torch.autograd.grad(
        F.layer_norm(x.requires_grad_(), x.shape[-1:], eps=eps), x, dy)[0]),
    ("layer_norm_backward", lambda x, dy, eps: torch.autograd.grad(
        ((x.requires_grad_() - x.mean(-1, keepdim=True))
         / torch.sqrt(x.var(-1, unbiased=False, keepdim=True) + eps)), x, dy)[0]),
    ("chan_merge_m2", lambda *args: helpers.lessons.variance.chan_merge(*args)[2]),
    ("group_norm_by_hand", lambda x, groups, eps: F.group_norm(x, groups, eps=eps)),
    ("group_norm_by_hand", lambda x, groups, eps: helpers.group_norm(x, groups, eps=eps)),
    ("group_norm_by_hand", lambda x, groups, eps: torch.nn.GroupNorm(groups, x.shape[1], eps=eps, affine=False,
                                                                     dtype=x.dtype)(x)),
    ("group_norm_by_hand", lambda x, groups, eps: helpers.normalize(x.reshape(len(x), groups, -1), -1,
                                                                    eps).reshape(x.shape)),
    ("ln_by_geometry", lambda x: F.layer_norm(x, x.shape[-1:], eps=0.0)),
    ("ln_by_geometry", lambda x: helpers.layer_norm(x, x.shape[-1:], eps=0.0)),
    ("ln_by_geometry", lambda x: (x - x.mean(-1, keepdim=True)) / x.std(-1, correction=0, keepdim=True)),
    # the same kernels through the operator registry, the packet and an explicit overload
    ("sentence_layer_norm", lambda x: torch.ops.aten.layer_norm(x, x.shape[-2:])),
    ("sentence_layer_norm", lambda x: torch.ops.aten.native_layer_norm(x, x.shape[-2:], None, None, 1e-5)[0]),
    ("pre_ln_residual", lambda x, w: x + torch.ops.aten.native_layer_norm.default(x, x.shape[-1:], None, None,
                                                                                1e-5)[0] @ w),
    ("batch_norm_train", lambda x: torch.ops.aten.native_batch_norm(x, None, None, None, None, True, 0.1, 1e-5)[0]),
    ("biased_variance", lambda x: torch.ops.aten.var.correction(x, [-1], correction=0)),
    ("ln_before_activation", lambda x, w, b, g, be: torch.tanh(F.layer_norm(x @ w.T + b, w.shape[:1], g, be))),
    ("ln_before_activation", lambda x, w, b, g, be: torch.tanh(helpers.layer_norm(x @ w.T + b, w.shape[:1], g, be))),
    ("ln_before_activation", lambda x, w, b, g, be: torch.tanh(torch.nn.LayerNorm(len(w))(x @ w.T + b) * g + be)),
    ("rms_norm", lambda x, w: F.rms_norm(x, x.shape[-1:], w, eps=1e-6)),
    ("rms_norm", lambda x, w: helpers.rms_norm(x, x.shape[-1:], w, eps=1e-6)),
    ("rms_norm", lambda x, w: torch.nn.RMSNorm(x.shape[-1], eps=1e-6)(x) * w),
]


@pytest.mark.parametrize("name, fn", HANDED_IN, ids=[f"{n}-{i}" for i, (n, _) in enumerate(HANDED_IN)])
def test_handing_in_the_answer_fails_and_says_so(name, fn):
    verdict = check(name, fn)
    assert not verdict
    assert "which hands in the answer" in verdict.message, verdict.message


def test_everything_refused_is_put_back():
    check("biased_variance", lambda x: x.var(-1))
    check("layer_norm_backward", lambda x, dy, eps: torch.autograd.grad(x.sum(), x)[0])
    x = torch.randn(3, 4, requires_grad=True)
    F.layer_norm(x, (4,)).sum().backward()
    assert x.grad is not None and torch.var(x, -1).shape == (3,) and x.var(-1).shape == (3,)
    assert placement.saturated_fraction(torch.zeros(2)).item() == 0.0
    assert len(ALWAYS_FORBIDDEN) > 10


@pytest.mark.parametrize("name", ["sentence_layer_norm", "batch_norm_train", "biased_variance", "group_norm_by_hand"])
def test_the_one_pass_formula_fails_at_a_large_mean(name):
    exercise = checking._REGISTRY[name]
    [(hint, one_pass)] = [(h, f) for h, f in exercise.mistakes.items() if "E[x²] - E[x]²" in h]
    large = [args for case, args in zip(exercise.cases, exercise.inputs(), strict=True) if "10000" in case.description]
    assert large, "a case with a mean around 10000"
    for args in large:
        assert args[0].dtype == torch.float32 and args[0].mean().abs() > 5e3
        why, got_hint, _ = checking._run(exercise, _replaying(exercise, one_pass), args)
        assert why is not None and got_hint == hint  # the solutions pass it: test_the_solution_passes


@pytest.mark.parametrize("path", sorted(NOTEBOOKS.glob("[0-9][0-9]_*.ipynb")), ids=lambda p: p.stem[:2])
def test_no_stored_output_shows_a_passed_check(path):
    notebook = json.loads(path.read_text())
    for cell in notebook["cells"]:
        assert "✅" not in json.dumps(cell.get("outputs", []), ensure_ascii=False), \
            f"{path.name}: a stored output shows a ✅"
