"""What the test suites share: where the chapters are, running notebooks, loading a chapter's code."""

from __future__ import annotations

import contextlib
import functools
import json
import os
import re
import resource
import shutil
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable, Iterator

import nbformat
import pytest
from nbclient import NotebookClient

REPO = Path(__file__).resolve().parent.parent
SOLUTIONS = REPO / "solutions"
NOTEBOOKS = REPO / "notebooks"
BUILD = REPO / "build"

# Budgets from COURSE.md, on this project's 2-core machine.
LEARNER_BUDGET_S = 180
GRADING_BUDGET_S = 20

CHAPTERS = sorted(p.name for p in SOLUTIONS.iterdir() if p.is_dir() and not p.name.startswith("."))


def solution_notebooks() -> list[Path]:
    return [nb for chapter in CHAPTERS for nb in sorted((SOLUTIONS / chapter).glob("*.ipynb"))]


def main_notebooks() -> list[Path]:
    """Each chapter's own notebook, named after its folder: the graded one. A chapter folder may hold an optional
    notebook beside it (chapter 3's ablation), released and run like the others but with no exercises."""
    return [nb for nb in solution_notebooks() if nb.stem == nb.parent.name]


def student_notebook(solution: Path) -> Path:
    return NOTEBOOKS / solution.parent.name / solution.name


def nbgrader_meta(cell: Any) -> dict:
    return cell.get("metadata", {}).get("nbgrader", {})


def is_graded_test(cell: Any) -> bool:
    meta = nbgrader_meta(cell)
    return cell.cell_type == "code" and bool(meta.get("grade")) and not meta.get("solution")


def hidden_test_lines(chapter: str) -> list[str]:
    """What a leak check looks for in feedback: each line (over 25 characters) of the chapter's hidden tests that
    the released notebook does not show anyway (a signature or an import the visible part has too, or a line that
    is part of a visible one, is no secret)."""
    hidden, given = [], []
    for path in sorted((SOLUTIONS / chapter).glob("*.ipynb")):
        for cell in nbformat.read(path, as_version=4).cells:
            if is_graded_test(cell) and "### BEGIN HIDDEN TESTS" in cell.source:
                block = cell.source.split("### BEGIN HIDDEN TESTS")[1].split("### END HIDDEN TESTS")[0]
                hidden += [line.strip() for line in block.splitlines() if len(line.strip()) > 25]
        given += [cell.source for cell in nbformat.read(student_notebook(path), as_version=4).cells]
    shown = "\n".join(given)
    return [line for line in hidden if line not in shown]


@contextlib.contextmanager
def environment(**values: str | None) -> Iterator[None]:
    """Set (or with None, remove) environment variables for the duration; kernels inherit them."""
    saved = {key: os.environ.get(key) for key in values}
    try:
        for key, value in values.items():
            if value is None:
                os.environ.pop(key, None)
            else:
                os.environ[key] = value
        yield
    finally:
        for key, value in saved.items():
            if value is None:
                os.environ.pop(key, None)
            else:
                os.environ[key] = value


@dataclass(frozen=True)
class Seconds:
    """What a notebook run cost: processor seconds (the budget) and wall-clock seconds (reported beside it).

    Budgets count processor time so that a busy machine does not fail a notebook and a slow one still fails:
    on 2 shared cores the wall time of the same run varied 2-3x with the load, its processor time did not.
    """

    cpu: float
    wall: float

    def __str__(self) -> str:
        return f"{self.cpu:.1f} s of CPU ({self.wall:.1f} s wall)"


def process_cpu_seconds(pid: int) -> float:
    """A live process's processor time, its threads' and its reaped children's, from /proc/<pid>/stat."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return sum(int(value) for value in fields[11:15]) / os.sysconf("SC_CLK_TCK")  # utime stime cutime cstime


def children_cpu_seconds() -> float:
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def execute(path: Path, *, grading: bool, allow_errors: bool = False, timeout: int = 600) -> tuple[Any, Seconds]:
    """Run a notebook top to bottom in a fresh kernel; return it with its outputs and what it cost.

    ``grading=True`` sets NBGRADER_EXECUTION=autograde as nbgrader does, and one thread (OMP_NUM_THREADS=1) as
    the instructors' grader runs a submission (autograder/sandbox.py); the processor time is then the kernel's
    own, read after its last cell (the budget COURSE.md sets: 20 s of the kernel's CPU time). With torch's default
    two threads beside another job, idle threads spinning for work had added up to 5 s of CPU to a notebook.
    A solution notebook in learner mode is run once per test session, the way a learner or a CI runs it
    (``jupyter nbconvert --execute``, see ``learner_run``), and every suite that needs it shares that run.
    """
    if not grading and not allow_errors and path.resolve().is_relative_to(SOLUTIONS):
        run = learner_run(path)
        if run.returncode != 0:
            raise RuntimeError(f"`{' '.join(run.command)}` failed (exit {run.returncode}) after {run.seconds}:\n"
                               + run.stderr[-3000:])
        return run.notebook, run.seconds
    nb = nbformat.read(path, as_version=4)
    kernel_cpu: list[float | None] = [None]

    def after_cell(**_: Any) -> None:
        try:
            kernel_cpu[0] = process_cpu_seconds(client.km.provisioner.pid)
        except OSError:  # no /proc (macOS): the budget falls back to wall time, never more lenient on a quiet machine
            kernel_cpu[0] = None

    client = NotebookClient(
        nb, timeout=timeout, kernel_name="python3", allow_errors=allow_errors,
        resources={"metadata": {"path": str(path.parent)}}, on_cell_complete=after_cell, on_cell_error=after_cell,
    )
    scripts = str(Path(sys.executable).parent)
    with environment(NBGRADER_EXECUTION="autograde" if grading else None, MPLBACKEND=None,
                     OMP_NUM_THREADS="1" if grading else os.environ.get("OMP_NUM_THREADS"),
                     PATH=os.pathsep.join([scripts, os.environ.get("PATH", "")])):
        start = time.perf_counter()
        client.execute()
        wall = time.perf_counter() - start
    return nb, Seconds(cpu=wall if kernel_cpu[0] is None else kernel_cpu[0], wall=wall)


@dataclass(frozen=True)
class LearnerRun:
    command: list[str]
    returncode: int
    seconds: Seconds  # the whole command's: nbconvert, its kernel and whatever the kernel started
    stderr: str
    notebook: Any  # the executed notebook, or None if nbconvert wrote none


def learner_environment() -> dict[str, str]:
    """A learner's shell with the venv active: its ``jupyter`` first on PATH, full-sized cells."""
    scripts = str(Path(sys.executable).parent)
    env = dict(os.environ, PATH=os.pathsep.join([scripts, os.environ.get("PATH", "")]))
    # torch's OpenMP threads that wait for a core another process holds spin, and spinning counts as processor
    # time: chapter 4 took 82 s of it alone and 169 s beside the suite's other worker. Waiting threads that sleep
    # instead leave the budget counting the notebook's work (a learner's own setting is kept).
    env.setdefault("OMP_WAIT_POLICY", "PASSIVE")
    env.pop("NBGRADER_EXECUTION", None)
    env.pop("MPLBACKEND", None)  # as in a learner's shell: the kernel chooses the inline backend
    return env


def learner_marks(chapter: str) -> list:
    """The marks of a test that reads a chapter's learner run: slow, and (under pytest-xdist's
    ``--dist loadgroup``) on the same worker as the chapter's other such tests, so the notebook runs once."""
    return [pytest.mark.slow, pytest.mark.xdist_group(f"learner-{chapter}")]


def reads_learner_run(chapter: str) -> Callable:
    """``learner_marks`` as a decorator."""
    def decorate(test: Callable) -> Callable:
        for mark in learner_marks(chapter):
            test = mark(test)
        return test
    return decorate


@functools.cache
def learner_run(path: Path) -> LearnerRun:
    """``jupyter nbconvert --to notebook --execute`` from the repository root, once per notebook per session.

    Its processor time is that of the whole command (nbconvert's own start, about 3 s, included): the
    kernel is nbconvert's child and is reaped by it, so its time reaches this process's children's.
    """
    cell_timeout = LEARNER_BUDGET_S  # one cell longer than the whole notebook's budget has failed anyway
    out = Path(tempfile.mkdtemp(prefix="learner-run-"))
    command = ["jupyter", "nbconvert", "--to", "notebook", "--execute", str(path.resolve().relative_to(REPO)),
               "--output-dir", str(out), f"--ExecutePreprocessor.timeout={cell_timeout}"]
    start, cpu_before = time.perf_counter(), children_cpu_seconds()
    try:  # the kernel exits by itself once nbconvert, its parent, is gone
        done = subprocess.run(command, cwd=REPO, env=learner_environment(), capture_output=True, text=True,
                              timeout=3 * LEARNER_BUDGET_S)
        returncode, stderr = done.returncode, done.stderr
    except subprocess.TimeoutExpired:
        returncode, stderr = -1, f"still running after {3 * LEARNER_BUDGET_S} s"
    seconds = Seconds(cpu=children_cpu_seconds() - cpu_before, wall=time.perf_counter() - start)
    written = out / path.name
    notebook = nbformat.read(written, as_version=4) if written.exists() else None
    shutil.rmtree(out, ignore_errors=True)
    return LearnerRun(command, returncode, seconds, stderr, notebook)


def printed_text(nb: Any) -> str:
    """Everything an executed notebook's code cells printed (their text outputs), in order."""
    return "".join(o.get("text", "") for c in nb.cells if c.cell_type == "code" for o in c.get("outputs", []))


def printed_results(nb: Any) -> dict:
    """The figures a notebook printed as ``RESULTS {json}`` (its chapter's tests assert them)."""
    for cell in nb.cells:
        for output in cell.get("outputs", []):
            if output.output_type == "stream" and "RESULTS " in output.text:
                return json.loads(re.search(r"RESULTS (\{.*\})", output.text).group(1))
    raise AssertionError("the notebook printed no RESULTS line")


def errors_of(cell: Any) -> list[str]:
    """'ename: evalue' of each error output of a cell, and a note for any stderr output."""
    found = []
    for output in cell.get("outputs", []):
        if output.output_type == "error":
            found.append(f"{output.ename}: {output.evalue}")
        elif output.output_type == "stream" and output.name == "stderr":
            found.append(f"stderr: {output.text[:200]}")
    return found


def learner_results(path: Path) -> tuple[dict, Seconds]:
    """The solution run as a learner runs it (``execute``): no cell may raise or write to stderr, and the run stays
    within the learner budget. Returns the figures it printed (``RESULTS {json}``) and what the run took."""
    nb, seconds = execute(path, grading=False)
    problems = [(i, e) for i, c in enumerate(nb.cells) for e in errors_of(c)]
    assert not problems, problems
    assert seconds.cpu < LEARNER_BUDGET_S, f"the notebook took {seconds}"
    return printed_results(nb), seconds


def record_timing(name: str, seconds: Seconds, **figures: Any) -> None:
    """Keep a learner run's processor and wall time (and any of its own timings) as ``<name>_timing``."""
    record(f"{name}_timing", notebook_cpu_seconds=round(seconds.cpu, 1), notebook_wall_seconds=round(seconds.wall, 1),
           **figures)


def load_definitions(chapter: str, notebook: str | None = None) -> dict[str, Any]:
    """Execute a chapter's reusable code in this process and return its namespace.

    That is every cell tagged "definitions" (imports, constants, given helpers) and every
    nbgrader solution cell, in notebook order; nothing that loads data, trains or plots.
    """
    path = SOLUTIONS / chapter / (notebook or f"{chapter}.ipynb")  # by default the chapter's own, graded notebook
    nb = nbformat.read(path, as_version=4)
    namespace: dict[str, Any] = {"__name__": f"chapter_{chapter.replace('-', '_')}"}
    for cell in nb.cells:
        if cell.cell_type != "code":
            continue
        if "definitions" in cell.metadata.get("tags", []) or nbgrader_meta(cell).get("solution"):
            exec(compile(cell.source, f"{path.name}[{nb.cells.index(cell)}]", "exec"), namespace)
    return namespace


def record(name: str, **figures: Any) -> None:
    """Keep measured figures under build/results/ (printed at the end of the test session)."""
    BUILD.joinpath("results").mkdir(parents=True, exist_ok=True)
    BUILD.joinpath("results", f"{name}.json").write_text(json.dumps(figures, indent=1, default=str))


def check_grader_timings(timings: list[dict]) -> None:
    """The timings of an honest result.json's notebooks: what the second kernel costs is accounted for
    (benchmark.py reports it): every chapter's tests call the student's code, and the wire's share of those
    calls is neither negative nor more than the calls."""
    for t in timings:
        assert t["calls"] > 0, f"no call from a test reached the student's code: {t}"
        assert 0 <= t["student_code_s"] <= t["calls_s"] <= t["test_cells_s"] + 0.01 <= t["run_s"] + 0.01, t
        assert t["wire_s"] == pytest.approx(t["calls_s"] - t["student_code_s"], abs=0.002), t
        assert 0 <= t["course_rerun_s"] < t["run_s"], t
