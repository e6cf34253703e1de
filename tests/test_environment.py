"""The three environment files agree: requirements.txt (exact pins, `make lab`/`make test`),
pyproject.toml (the package's floors, which Colab satisfies) and environment.yml (conda-forge).

The *runtime* set is the package's own dependencies (pyproject [project] dependencies) plus
what a learner needs to open the notebooks: jupyterlab and ipykernel. Every runtime package
must be pinned in requirements.txt and listed in environment.yml (under its conda-forge name).
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest
import tomllib
import yaml
from packaging.requirements import Requirement
from packaging.specifiers import SpecifierSet
from packaging.utils import canonicalize_name
from packaging.version import Version

ROOT = Path(__file__).resolve().parents[1]
PYPROJECT = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))
NOTEBOOK_RUNTIME = ("jupyterlab", "ipykernel")
# PyPI name -> conda-forge name, where they differ.
CONDA_NAME = {"torch": "pytorch-cpu", "matplotlib": "matplotlib-base"}
PIN = re.compile(r"^([A-Za-z0-9][A-Za-z0-9._-]*)==([0-9][0-9A-Za-z.+!-]*)$")


def _project_deps() -> dict[str, Requirement]:
    reqs = [Requirement(r) for r in PYPROJECT["project"]["dependencies"]]
    return {canonicalize_name(r.name): r for r in reqs}


def runtime_packages() -> list[str]:
    return sorted({*_project_deps(), *NOTEBOOK_RUNTIME})


def _requirement_lines(path: Path) -> list[str]:
    lines = []
    for raw in path.read_text(encoding="utf-8").splitlines():
        line = raw.strip()
        if line and not line.startswith("#"):
            lines.append(line)
    return lines


def requirements_pins(path: Path = ROOT / "requirements.txt") -> dict[str, str]:
    return {canonicalize_name(PIN.match(line)[1]): PIN.match(line)[2]
            for line in _requirement_lines(path) if PIN.match(line)}


def _conda_dependencies() -> tuple[dict, dict[str, str]]:
    env = yaml.safe_load((ROOT / "environment.yml").read_text(encoding="utf-8"))
    conda = {}
    for dep in env["dependencies"]:
        if isinstance(dep, str):
            name = re.split(r"[\s=<>!~]", dep, maxsplit=1)[0]
            conda[name.lower()] = dep
    return env, conda


@pytest.mark.parametrize("path", ["requirements.txt", "requirements-colab.txt"])
def test_every_requirement_line_is_an_exact_pin(path):
    bad = [line for line in _requirement_lines(ROOT / path) if not PIN.match(line)]
    assert not bad, f"{path}: every line must be `name==version` (no ranges, no +local): {bad}"
    names = [canonicalize_name(PIN.match(line)[1]) for line in _requirement_lines(ROOT / path)]
    dupes = sorted({n for n in names if names.count(n) > 1})
    assert not dupes, f"{path} pins these more than once: {dupes}"


@pytest.mark.parametrize("path", ["requirements.txt", "requirements-colab.txt"])
def test_torch_is_pinned_to_the_cpu_release_on_disk(path):
    assert requirements_pins(ROOT / path).get("torch") == "2.13.0", (
        f"{path} must pin torch==2.13.0 (the CPU build this project's machines install)")


@pytest.mark.parametrize("package", runtime_packages())
def test_runtime_package_is_pinned_in_requirements(package):
    pins = requirements_pins()
    assert package in pins, f"requirements.txt lacks runtime package {package!r}"
    req = _project_deps().get(package)
    if req is not None:
        assert Version(pins[package]) in req.specifier, (
            f"requirements.txt pins {package}=={pins[package]}, outside pyproject's {req}")


@pytest.mark.parametrize("package", runtime_packages())
def test_runtime_package_is_in_environment_yml(package):
    _, conda = _conda_dependencies()
    name = CONDA_NAME.get(package, package)
    assert name in conda, f"environment.yml lacks {name!r} (for {package!r} in requirements.txt)"


def test_environment_yml_is_conda_forge_only_cpu_only_and_installs_the_package():
    env, conda = _conda_dependencies()
    assert env["channels"] == ["conda-forge", "nodefaults"]
    assert conda.get("python") == "python=3.11"
    assert "pytorch" not in conda and "pytorch-gpu" not in conda and "torch" not in conda, (
        "environment.yml must use the CPU-only `pytorch-cpu`")
    assert not any("cuda" in name for name in conda), "environment.yml must not pull CUDA"
    assert "pip" in conda
    pip_sections = [d["pip"] for d in env["dependencies"] if isinstance(d, dict) and "pip" in d]
    assert pip_sections == [["-e ."]], "environment.yml installs the package with `pip: [-e .]`"


def test_colab_requirements_have_colabs_versions():
    pins = requirements_pins(ROOT / "requirements-colab.txt")
    expected = {"ipywidgets": "7.7.1", "pandas": "2.2.3", "matplotlib": "3.10.0",
                "numpy": "2.1.3", "torch": "2.13.0", "setuptools": "84.2.1"}
    assert {k: pins.get(k) for k in expected} == expected
    for name in ("ipykernel", "nbclient", "nbformat", "tqdm"):
        assert name in pins, f"requirements-colab.txt lacks {name}"
    for name, req in _project_deps().items():
        assert Version(pins[name]) in req.specifier, (
            f"Colab's {name}=={pins[name]} is outside pyproject's floor {req}: "
            "installing the package in Colab would replace it")


@pytest.mark.parametrize(
    ("package", "spec"),
    [("ipywidgets", ">=7.7,<9"), ("pandas", ">=2.2"), ("matplotlib", ">=3.8"),
     ("torch", ">=2.4"), ("numpy", ""), ("tqdm", "")],
)
def test_pyproject_floors(package, spec):
    deps = _project_deps()
    assert package in deps, f"pyproject [project] dependencies lack {package}"
    assert deps[package].specifier == SpecifierSet(spec), (
        f"pyproject pins {deps[package]}; expected {package}{spec}")
