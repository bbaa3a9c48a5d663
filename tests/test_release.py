"""The student notebooks are what nbgrader makes of the sources, and every source follows the course's rules."""

from __future__ import annotations

import re
import subprocess
import sys
import tomllib

import nbformat
import pytest

from course import NOTEBOOKS, REPO, SOLUTIONS, is_graded_test, nbgrader_meta, solution_notebooks

SOURCES = solution_notebooks()
IDS = [p.stem for p in SOURCES]
COMMITTED = sorted(SOLUTIONS.glob("*/*.ipynb")) + sorted(NOTEBOOKS.glob("*/*.ipynb"))
SETTINGS = tomllib.loads((REPO / "pyproject.toml").read_text())["tool"]["seqlab"]


def test_notebooks_equal_what_nbgrader_generates_from_solutions():
    done = subprocess.run([sys.executable, str(REPO / "autograder" / "release.py"), "--check"],
                          capture_output=True, text=True, cwd=REPO)
    assert done.returncode == 0, f"notebooks/ drifted from solutions/ (run `make release`):\n{done.stdout}{done.stderr}"


@pytest.mark.parametrize("path", COMMITTED, ids=[f"{p.parent.parent.name}/{p.stem}" for p in COMMITTED])
def test_committed_notebooks_carry_no_outputs_or_execution_counts(path):
    nb = nbformat.read(path, as_version=4)
    dirty = [i for i, c in enumerate(nb.cells) if c.cell_type == "code" and (c.outputs or c.execution_count)]
    assert not dirty, f"{path.relative_to(REPO)}: cells {dirty} have outputs or execution counts"


@pytest.mark.parametrize("path", SOURCES, ids=IDS)
def test_source_starts_with_the_stamped_colab_setup_cell(path):
    first = nbformat.read(path, as_version=4).cells[0]
    assert "colab-setup" in first.metadata.get("tags", []), "the first cell must be the Colab setup cell"
    assert f"git+{SETTINGS['repository']}@{SETTINGS['branch']}" in first.source
    assert 'if "google.colab" in sys.modules:' in first.source, "the install must run only inside Colab"


def test_readme_badges_point_at_the_repository_and_every_student_notebook():
    readme = (REPO / "README.md").read_text()
    repo_path = SETTINGS["repository"].removeprefix("https://github.com/")
    for path in SOURCES:
        relative = f"notebooks/{path.parent.name}/{path.name}"
        assert f"colab.research.google.com/github/{repo_path}/blob/{SETTINGS['branch']}/{relative}" in readme


@pytest.mark.parametrize("path", SOURCES, ids=IDS)
def test_every_exercise_has_a_solution_region_and_hidden_tests(path):
    nb = nbformat.read(path, as_version=4)
    answers = [c for c in nb.cells if nbgrader_meta(c).get("solution")]
    tests = [c for c in nb.cells if is_graded_test(c)]
    assert len(answers) >= 6 and len(tests) >= 6, "a chapter has at least 6 graded exercises"
    for cell in answers:
        assert "### BEGIN SOLUTION" in cell.source and "### END SOLUTION" in cell.source, nbgrader_meta(cell)["grade_id"]
    for cell in tests:
        meta = nbgrader_meta(cell)
        assert meta.get("points", 0) > 0, f"{meta['grade_id']} gives no points"
        assert "### BEGIN HIDDEN TESTS" in cell.source, f"{meta['grade_id']} has no hidden tests"
        hidden = cell.source.split("### BEGIN HIDDEN TESTS")[1]
        assert re.search(r"default_rng\(|manual_seed\(|random\.seed\(", hidden), f"{meta['grade_id']}: hidden tests use no seeded random inputs"
    ids = [nbgrader_meta(c)["grade_id"] for c in nb.cells if nbgrader_meta(c)]
    assert len(ids) == len(set(ids)), "grade ids must be unique"


@pytest.mark.parametrize("path", SOURCES, ids=IDS)
def test_chapter_closes_with_a_bilingual_glossary(path):
    last = nbformat.read(path, as_version=4).cells[-1]
    assert last.cell_type == "markdown" and "Glossary" in last.source and "中文" in last.source
    assert last.source.count("\n|") >= 10, "the glossary should have at least 10 terms"
