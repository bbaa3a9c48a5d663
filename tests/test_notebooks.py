"""Every chapter, automatically: the solutions run clean and within budget in grading mode; the release fails every graded test."""

from __future__ import annotations

import re

import nbformat
import pytest

from course import (GRADING_BUDGET_S, errors_of, execute, is_graded_test, main_notebooks, nbgrader_meta, record,
                    solution_notebooks, student_notebook)

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


@pytest.mark.parametrize("path", main_notebooks(), ids=[p.stem for p in main_notebooks()])
def test_released_notebook_fails_every_graded_test(path):
    nb, _ = execute(student_notebook(path), grading=True, allow_errors=True)
    graded = [cell for cell in nb.cells if is_graded_test(cell)]
    assert graded, f"{path.name} has no graded test cell"
    passing = [cell.metadata.nbgrader["grade_id"] for cell in graded
               if not any(o.output_type == "error" for o in cell.outputs)]
    assert not passing, f"graded tests that pass on the untouched release: {passing}"


OPTIMIZER_STEP = re.compile(r"\w*optimizer\.step\(\)")
ONE_THREAD_FOR_THE_NOTEBOOK = re.compile(r"^torch\.set_num_threads\(1\)", re.M)


def loops_off_the_thread_rule(nb) -> list[int]:
    """The cells that take optimizer steps on torch's default number of threads: not through seqlab.train.fit, not
    inside seqlab.train.torch_threads, and after no cell that set one thread for the whole notebook."""
    found, one_thread = [], False
    for i, cell in enumerate(nb.cells):
        if cell.cell_type != "code" or nbgrader_meta(cell):
            continue
        one_thread = one_thread or bool(ONE_THREAD_FOR_THE_NOTEBOOK.search(cell.source))
        if OPTIMIZER_STEP.search(cell.source) and not one_thread and not re.search(r"\bfit\(|\btorch_threads\(", cell.source):
            found.append(i)
    return found


@pytest.mark.parametrize("path", SOLUTIONS, ids=IDS)
def test_every_training_loop_keeps_the_one_thread_rule(path):
    """Issue 40, 6: chapter 3's train_tbptt and chapter 4's character LM trained on torch's default threads and took
    583 s and 557 s in a kernel on a busy machine, against about 14 s and 11 s of CPU on one thread. The grading-mode
    budget cannot see it (the grader sets OMP_NUM_THREADS=1), nor can a learner run with OMP_WAIT_POLICY=PASSIVE
    reliably; so the rule is read from the source: a loop that takes optimizer steps runs through fit, inside
    torch_threads, or after a cell that set torch.set_num_threads(1) for the whole notebook."""
    cells = loops_off_the_thread_rule(nbformat.read(path, as_version=4))
    assert not cells, (f"cells {cells} train on torch's default threads: use seqlab.train.fit, or "
                       f"`with torch_threads(1):` around the loop")


def test_a_loop_off_the_thread_rule_is_found():
    loop = "for step in range(10):\n    loss.backward()\n    optimizer.step()"
    nb = nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell("import torch", metadata={"tags": ["definitions"]}),
                                         nbformat.v4.new_code_cell(loop)])
    assert loops_off_the_thread_rule(nb) == [1]
    nb.cells[1].source = "with torch_threads(1):\n" + "\n".join("    " + line for line in loop.splitlines())
    assert loops_off_the_thread_rule(nb) == []
    nb.cells[1].source = loop
    nb.cells.append(nbformat.v4.new_code_cell("torch.set_num_threads(1)"))
    assert loops_off_the_thread_rule(nb) == [1]  # set after the loop ran: too late
    nb.cells.insert(1, nb.cells.pop())
    assert loops_off_the_thread_rule(nb) == []
