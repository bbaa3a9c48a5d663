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


BUDGETS = {"learner": LEARNER_BUDGET_S, "grading": GRADING_BUDGET_S}
RUNS = [pytest.param(path, mode, id=f"{path.stem}-{mode}", marks=[pytest.mark.slow] if mode == "learner" else [])
        for path in SOLUTIONS for mode in BUDGETS]


@pytest.mark.parametrize("path, mode", RUNS)
def test_solution_runs_clean_within_budget(path, mode):
    nb, seconds = execute(path, grading=mode == "grading")
    check_clean(nb)
    record(f"time-{path.stem}-{mode}", seconds=round(seconds, 1), budget=BUDGETS[mode])
    assert seconds <= BUDGETS[mode], f"{path.name} took {seconds:.1f} s in {mode} mode (budget {BUDGETS[mode]} s)"


@pytest.mark.parametrize("path", SOLUTIONS, ids=IDS)
def test_released_notebook_fails_every_graded_test(path):
    nb, _ = execute(student_notebook(path), grading=True, allow_errors=True)
    graded = [cell for cell in nb.cells if is_graded_test(cell)]
    assert graded, f"{path.name} has no graded test cell"
    passing = [cell.metadata.nbgrader["grade_id"] for cell in graded
               if not any(o.output_type == "error" for o in cell.outputs)]
    assert not passing, f"graded tests that pass on the untouched release: {passing}"
