"""Every chapter, automatically: the solutions run clean and within budget in grading mode; the release fails every graded test."""

from __future__ import annotations

import pytest

from course import GRADING_BUDGET_S, errors_of, execute, is_graded_test, record, solution_notebooks, student_notebook

SOLUTIONS = solution_notebooks()
IDS = [p.stem for p in SOLUTIONS]


def check_clean(nb) -> None:
    failures = [(i, errors_of(cell)) for i, cell in enumerate(nb.cells) if cell.cell_type == "code" and errors_of(cell)]
    assert not failures, f"cells with errors or stderr output: {failures}"


@pytest.mark.parametrize("path", SOLUTIONS, ids=IDS)
def test_solution_runs_clean_within_budget_in_grading_mode(path):
    """Learner mode (the whole notebook, full size) is tested as a learner runs it: tests/test_nbconvert.py."""
    nb, seconds = execute(path, grading=True)
    check_clean(nb)
    record(f"time-{path.stem}-grading", cpu_seconds=round(seconds.cpu, 1), wall_seconds=round(seconds.wall, 1),
           budget=GRADING_BUDGET_S)
    assert seconds.cpu <= GRADING_BUDGET_S, f"{path.name} took {seconds} in grading mode (budget {GRADING_BUDGET_S} s of CPU)"


@pytest.mark.parametrize("path", SOLUTIONS, ids=IDS)
def test_released_notebook_fails_every_graded_test(path):
    nb, _ = execute(student_notebook(path), grading=True, allow_errors=True)
    graded = [cell for cell in nb.cells if is_graded_test(cell)]
    assert graded, f"{path.name} has no graded test cell"
    passing = [cell.metadata.nbgrader["grade_id"] for cell in graded
               if not any(o.output_type == "error" for o in cell.outputs)]
    assert not passing, f"graded tests that pass on the untouched release: {passing}"
