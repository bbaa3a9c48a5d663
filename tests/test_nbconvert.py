"""Every chapter's solution notebook, run the way a learner or a CI runs it: `jupyter nbconvert --execute`.

``course.learner_run`` runs the command-line tool in a subprocess, with the venv's ``jupyter`` first on
PATH (as ``make`` or an activated venv has it), from the repository root, in learner mode (no
``NBGRADER_EXECUTION``), once per notebook per session: the budget test and the chapters' result
tests read the same run.
Issue 14: chapters 2 and 3 stopped at their long cells until the cell timeout under nbconvert.
"""

from __future__ import annotations

import re
import shutil
import sys
from datetime import datetime
from pathlib import Path

import pytest

from course import LEARNER_BUDGET_S, errors_of, learner_environment, learner_marks, learner_run, record, solution_notebooks

SOLUTIONS = solution_notebooks()
SCRIPTS = Path(sys.executable).parent


# A cell that runs longer than this (wall seconds, in the learner run beside the suite's other worker) shows a
# progress bar (issue 41): the longest cells without one run under 3 s on a quiet machine.
PROGRESS_AFTER_S = 10
PROGRESS_BAR = re.compile(r"\d+%\|")  # tqdm's "epochs:  40%|####      | 2/5 [...]", as a widget's text or a stream


def cell_span(cell) -> tuple[datetime, datetime] | None:
    """When the kernel began and finished the cell (nbclient's timestamps in its metadata), or None if it never ran."""
    execution = cell.get("metadata", {}).get("execution", {})
    if "iopub.status.busy" not in execution or "shell.execute_reply" not in execution:
        return None
    start, end = (datetime.fromisoformat(execution[k].replace("Z", "+00:00")) for k in ("iopub.status.busy", "shell.execute_reply"))
    return start, end


def cell_seconds(cell) -> float | None:
    span = cell_span(cell)
    return None if span is None else (span[1] - span[0]).total_seconds()


def shows_progress(cell) -> bool:
    texts = [o.get("text", "") if o.get("output_type") == "stream" else o.get("data", {}).get("text/plain", "")
             for o in cell.get("outputs", [])]
    return any(PROGRESS_BAR.search(t if isinstance(t, str) else "".join(t)) for t in texts)


def timing(nb) -> dict:
    """From the kernel's timestamps that nbclient keeps in each cell's metadata: the seconds the cells ran,
    the slowest three, and pauses of over 5 s between one cell's reply and the next cell's start (time lost
    outside the notebook's code, in the client or the kernel's messaging)."""
    stamps = [(i, *span) for i, cell in enumerate(nb.cells) if (span := cell_span(cell)) is not None]
    seconds = sorted((((end - start).total_seconds(), i) for i, start, end in stamps), reverse=True)
    pauses = [f"before cell {i}: {(start - before).total_seconds():.0f} s"
              for (_, _, before), (i, start, _) in zip(stamps, stamps[1:]) if (start - before).total_seconds() > 5]
    return {"cells_s": round(sum(s for s, _ in seconds), 1),
            "first_to_last_s": round((stamps[-1][2] - stamps[0][1]).total_seconds(), 1) if stamps else 0.0,
            "slowest": [f"cell {i}: {s:.1f} s" for s, i in seconds[:3]], "pauses": pauses}


@pytest.mark.parametrize("path", [pytest.param(p, marks=learner_marks(p.parent.name)) for p in SOLUTIONS], ids=[p.stem for p in SOLUTIONS])
def test_nbconvert_execute_runs_clean_within_budget(path):
    jupyter = shutil.which("jupyter", path=learner_environment()["PATH"])
    assert jupyter and Path(jupyter).parent == SCRIPTS, f"`jupyter` on PATH is {jupyter}, not the venv's"
    run = learner_run(path)  # the same run the chapter's own result tests read
    command = " ".join(run.command)
    assert run.returncode == 0, f"`{command}` failed (exit {run.returncode}) after {run.seconds}:\n{run.stderr[-3000:]}"
    nb = run.notebook
    code = [(i, cell) for i, cell in enumerate(nb.cells) if cell.cell_type == "code" and cell.source.strip()]
    unexecuted = [i for i, cell in code if cell.get("execution_count") is None]
    assert not unexecuted, f"code cells nbconvert did not execute: {unexecuted}"
    failures = [(i, errors_of(cell)) for i, cell in code if errors_of(cell)]
    assert not failures, f"cells with errors or stderr output: {failures}"
    figures = timing(nb)
    record(f"nbconvert-{path.stem}", cpu_seconds=round(run.seconds.cpu, 1), wall_seconds=round(run.seconds.wall, 1),
           budget=LEARNER_BUDGET_S, **figures)
    assert run.seconds.cpu <= LEARNER_BUDGET_S, \
        f"{path.name} took {run.seconds} under nbconvert (budget {LEARNER_BUDGET_S} s of CPU): {figures}"
    silent = [f"cell {i} ({cell_seconds(cell):.0f} s)" for i, cell in code
              if (cell_seconds(cell) or 0) > PROGRESS_AFTER_S and not shows_progress(cell)]
    assert not silent, f"long cells that show no progress bar (tqdm): {silent}"
