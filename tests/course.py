"""What the test suites share: where the chapters are, running notebooks, loading a chapter's code."""

from __future__ import annotations

import contextlib
import json
import os
import sys
import time
from pathlib import Path
from typing import Any, Iterator

import nbformat
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


def student_notebook(solution: Path) -> Path:
    return NOTEBOOKS / solution.parent.name / solution.name


def nbgrader_meta(cell: Any) -> dict:
    return cell.get("metadata", {}).get("nbgrader", {})


def is_graded_test(cell: Any) -> bool:
    meta = nbgrader_meta(cell)
    return cell.cell_type == "code" and bool(meta.get("grade")) and not meta.get("solution")


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


def execute(path: Path, *, grading: bool, allow_errors: bool = False, timeout: int = 600) -> tuple[Any, float]:
    """Run a notebook top to bottom in a fresh kernel; return it with its outputs and the wall time.

    ``grading=True`` sets NBGRADER_EXECUTION=autograde as nbgrader does.
    """
    nb = nbformat.read(path, as_version=4)
    client = NotebookClient(
        nb, timeout=timeout, kernel_name="python3", allow_errors=allow_errors,
        resources={"metadata": {"path": str(path.parent)}},
    )
    scripts = str(Path(sys.executable).parent)
    with environment(NBGRADER_EXECUTION="autograde" if grading else None, MPLBACKEND=None,
                     PATH=os.pathsep.join([scripts, os.environ.get("PATH", "")])):
        start = time.perf_counter()
        client.execute()
        seconds = time.perf_counter() - start
    return nb, seconds


def errors_of(cell: Any) -> list[str]:
    """'ename: evalue' of each error output of a cell, and a note for any stderr output."""
    found = []
    for output in cell.get("outputs", []):
        if output.output_type == "error":
            found.append(f"{output.ename}: {output.evalue}")
        elif output.output_type == "stream" and output.name == "stderr":
            found.append(f"stderr: {output.text[:200]}")
    return found


def load_definitions(chapter: str, notebook: str | None = None) -> dict[str, Any]:
    """Execute a chapter's reusable code in this process and return its namespace.

    That is every cell tagged "definitions" (imports, constants, given helpers) and every
    nbgrader solution cell, in notebook order; nothing that loads data, trains or plots.
    """
    sources = sorted((SOLUTIONS / chapter).glob("*.ipynb"))
    path = next(p for p in sources if notebook is None or p.name == notebook)
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
