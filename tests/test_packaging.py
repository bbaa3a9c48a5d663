"""Installation: lower bounds only (Colab-safe), environment.yml in step with pyproject.toml."""

from __future__ import annotations

import re
import tomllib

from packaging.requirements import Requirement

from course import REPO

PYPROJECT = tomllib.loads((REPO / "pyproject.toml").read_text())["project"]
CONDA_NAMES = {"pytorch": "torch"}
# What Colab ships (late 2026): seqlab must install there without replacing any of it.
COLAB = {"numpy": "2.0.2", "torch": "2.8.0", "ipywidgets": "7.7.1", "matplotlib": "3.10.0", "tqdm": "4.67.1"}


def requirements(names: list[str]) -> dict[str, str]:
    return {Requirement(r).name.lower(): str(Requirement(r).specifier) for r in names}


def conda_requirements() -> dict[str, str]:
    found, section = {}, None
    for line in (REPO / "environment.yml").read_text().splitlines():
        item = re.match(r"^\s*-\s+(\S+)\s*$", line)
        if re.match(r"^\w+:", line):
            section = line.split(":")[0]
        elif line.strip() == "- pip:":
            section = "pip"
        elif item and section == "dependencies" and item.group(1) != "pip" and not item.group(1).startswith("python"):
            spec = re.match(r"([A-Za-z0-9_.-]+)(.*)", item.group(1))
            found[CONDA_NAMES.get(spec.group(1), spec.group(1)).lower()] = spec.group(2)
    return found


def test_runtime_dependencies_are_lower_bounds_only():
    for requirement in PYPROJECT["dependencies"] + PYPROJECT["optional-dependencies"]["lab"]:
        for spec in Requirement(requirement).specifier:
            assert spec.operator == ">=", f"{requirement}: use a lower bound (>=), not {spec.operator}"


def test_colab_preinstalled_packages_already_satisfy_seqlab():
    runtime = requirements(PYPROJECT["dependencies"])
    for name, version in COLAB.items():
        assert Requirement(f"{name}{runtime[name]}").specifier.contains(version), f"{name} {version} would be replaced in Colab"


def test_environment_yml_matches_pyproject():
    pip_side = requirements(PYPROJECT["dependencies"] + PYPROJECT["optional-dependencies"]["lab"])
    assert conda_requirements() == pip_side


def test_environment_yml_installs_seqlab_itself():
    assert re.search(r"^\s+- -e \.\s*$", (REPO / "environment.yml").read_text(), re.M)


def test_references_stay_out_of_what_learners_install():
    learner = set(requirements(PYPROJECT["dependencies"] + PYPROJECT["optional-dependencies"]["lab"]))
    assert not learner & {"nltk", "hmmlearn", "sacrebleu", "gensim", "rotary-embedding-torch", "pytest"}
