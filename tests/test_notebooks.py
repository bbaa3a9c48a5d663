"""Every chapter, automatically: the solutions run clean and within budget; the release fails every graded test."""

from __future__ import annotations

import pytest

from course import (GRADING_BUDGET_S, LEARNER_BUDGET_S, errors_of, execute, is_graded_test, record,
                    solution_notebooks, student_notebook)

SOLUTIONS = solution_notebooks()
IDS = [p.stem for p in SOLUTIONS]


def check_clean(nb) -> None:
    failures = [(i, errors_of(cell)) for i, cell in enumerate(nb.cells) if cell.cell_type == "code" and errors_of(cell)]
    assert not failures, f"cells with errors or stderr output: {failures}"


@pytest.mark.slow
@pytest.mark.parametrize("path", SOLUTIONS, ids=IDS)
def test_solution_runs_in_learner_mode_within_budget(path):
    nb, seconds = execute(path, grading=False)
    check_clean(nb)
    record(f"time-{path.stem}-learner", seconds=round(seconds, 1), budget=LEARNER_BUDGET_S)
    assert seconds <= LEARNER_BUDGET_S, f"{path.name} took {seconds:.0f} s in learner mode (budget {LEARNER_BUDGET_S} s)"


@pytest.mark.parametrize("path", SOLUTIONS, ids=IDS)
def test_solution_runs_in_grading_mode_within_budget(path):
    nb, seconds = execute(path, grading=True)
    check_clean(nb)
    record(f"time-{path.stem}-grading", seconds=round(seconds, 1), budget=GRADING_BUDGET_S)
    assert seconds <= GRADING_BUDGET_S, f"{path.name} took {seconds:.1f} s in grading mode (budget {GRADING_BUDGET_S} s)"


@pytest.mark.parametrize("path", SOLUTIONS, ids=IDS)
def test_released_notebook_fails_every_graded_test(path):
    nb, _ = execute(student_notebook(path), grading=True, allow_errors=True)
    graded = [cell for cell in nb.cells if is_graded_test(cell)]
    assert graded, f"{path.name} has no graded test cell"
    passing = [cell.metadata.nbgrader["grade_id"] for cell in graded
               if not any(o.output_type == "error" for o in cell.outputs)]
    assert not passing, f"graded tests that pass on the untouched release: {passing}"
