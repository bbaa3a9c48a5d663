"""Every chapter's solution notebook, run the way a learner or a CI runs it: `jupyter nbconvert --execute`.

``course.execute`` drives nbclient inside the pytest process; this runs the command-line tool in a
subprocess, with the venv's ``jupyter`` first on PATH (as ``make`` or an activated venv has it), from
the repository root, in learner mode (no ``NBGRADER_EXECUTION``), and writes to a temporary folder.
Issue 14: chapters 2 and 3 stopped at their long cells until the cell timeout under nbconvert.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import time
from datetime import datetime
from pathlib import Path

import nbformat
import pytest

from course import LEARNER_BUDGET_S, REPO, errors_of, record, solution_notebooks

SOLUTIONS = solution_notebooks()
SCRIPTS = Path(sys.executable).parent
CELL_TIMEOUT_S = LEARNER_BUDGET_S  # one cell longer than the whole notebook's budget has failed anyway
BACKSTOP_S = 3 * LEARNER_BUDGET_S  # the whole command; nbconvert's own cell timeout should come first


def learner_environment() -> dict[str, str]:
    env = dict(os.environ, PATH=os.pathsep.join([str(SCRIPTS), os.environ.get("PATH", "")]))
    env.pop("NBGRADER_EXECUTION", None)  # a learner's run: full-sized cells
    env.pop("MPLBACKEND", None)  # as in a learner's shell: the kernel chooses the inline backend
    return env


def timing(nb) -> dict:
    """From the kernel's timestamps that nbclient keeps in each cell's metadata: the seconds the cells ran,
    the slowest three, and pauses of over 5 s between one cell's reply and the next cell's start (time lost
    outside the notebook's code, in the client or the kernel's messaging)."""
    stamps = []
    for i, cell in enumerate(nb.cells):
        execution = cell.get("metadata", {}).get("execution", {})
        if "iopub.status.busy" in execution and "shell.execute_reply" in execution:
            start, end = (datetime.fromisoformat(execution[k].replace("Z", "+00:00"))
                          for k in ("iopub.status.busy", "shell.execute_reply"))
            stamps.append((i, start, end))
    seconds = sorted((((end - start).total_seconds(), i) for i, start, end in stamps), reverse=True)
    pauses = [f"before cell {i}: {(start - before).total_seconds():.0f} s"
              for (_, _, before), (i, start, _) in zip(stamps, stamps[1:]) if (start - before).total_seconds() > 5]
    return {"cells_s": round(sum(s for s, _ in seconds), 1),
            "first_to_last_s": round((stamps[-1][2] - stamps[0][1]).total_seconds(), 1) if stamps else 0.0,
            "slowest": [f"cell {i}: {s:.1f} s" for s, i in seconds[:3]], "pauses": pauses}


@pytest.mark.slow
@pytest.mark.parametrize("path", SOLUTIONS, ids=[p.stem for p in SOLUTIONS])
def test_nbconvert_execute_runs_clean_within_budget(path, tmp_path):
    env = learner_environment()
    jupyter = shutil.which("jupyter", path=env["PATH"])
    assert jupyter and Path(jupyter).parent == SCRIPTS, f"`jupyter` on PATH is {jupyter}, not the venv's"
    command = ["jupyter", "nbconvert", "--to", "notebook", "--execute", str(path.relative_to(REPO)),
               "--output-dir", str(tmp_path), f"--ExecutePreprocessor.timeout={CELL_TIMEOUT_S}"]
    start = time.perf_counter()
    try:
        done = subprocess.run(command, cwd=REPO, env=env, capture_output=True, text=True, timeout=BACKSTOP_S)
    except subprocess.TimeoutExpired:  # the kernel exits by itself once nbconvert, its parent, is gone
        pytest.fail(f"`{' '.join(command)}` still ran after {BACKSTOP_S} s")
    seconds = time.perf_counter() - start
    assert done.returncode == 0, (f"`{' '.join(command)}` failed (exit {done.returncode}) after {seconds:.0f} s:\n"
                                  + done.stderr[-3000:])
    nb = nbformat.read(tmp_path / path.name, as_version=4)
    code = [(i, cell) for i, cell in enumerate(nb.cells) if cell.cell_type == "code" and cell.source.strip()]
    unexecuted = [i for i, cell in code if cell.get("execution_count") is None]
    assert not unexecuted, f"code cells nbconvert did not execute: {unexecuted}"
    failures = [(i, errors_of(cell)) for i, cell in code if errors_of(cell)]
    assert not failures, f"cells with errors or stderr output: {failures}"
    figures = timing(nb)
    record(f"nbconvert-{path.stem}", seconds=round(seconds, 1), budget=LEARNER_BUDGET_S, **figures)
    assert seconds <= LEARNER_BUDGET_S, f"{path.name} took {seconds:.0f} s under nbconvert (budget {LEARNER_BUDGET_S} s): {figures}"
