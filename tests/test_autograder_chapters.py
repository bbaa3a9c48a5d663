"""Every chapter, automatically, through the instructors' grader (two kernels, data-only calls).

The solution must get full marks: a test cell that breaks the test-cell convention
(autograder/CONVENTION.md) — handing a student's object to a library, calling .backward() on a returned
tensor — fails here, in the chapter that broke it. The chapters that the attack and safety batches grade
already (their honest students, with the same assertions) are left to them: grading a notebook through the
grader costs 15-50 s of the suite's time, and the suite is bound by its CPU.
"""

from __future__ import annotations

import shutil
import sys

import pytest

from course import CHAPTERS, REPO, SOLUTIONS, check_grader_timings, record

sys.path.insert(0, str(REPO / "autograder"))
from sandbox import Limits, Sandbox, bubblewrap  # noqa: E402

pytestmark = [pytest.mark.slow, pytest.mark.skipif(bubblewrap() is None, reason="bubblewrap is not installed")]


@pytest.fixture(scope="module")
def sandbox(tmp_path_factory):
    worker = Sandbox(tmp_path_factory.mktemp("worker"), Limits())
    yield worker
    worker.close()


def graded_elsewhere() -> set[str]:
    """Chapters whose solution other batches already grade through grade.py, full marks and timings asserted there:
    the attack batches' honest student (tests/test_autograder_attacks.py) and the safety batch's
    (tests/test_autograder_safety.py). Every chapter's release fails every graded test in tests/test_notebooks.py,
    and through the grader in those batches (stubs of every kind get 0)."""
    from test_autograder_attacks import CHAPTERS as ATTACKED
    from test_autograder_safety import BATCH

    return set(ATTACKED) | {BATCH}


def test_every_chapter_is_graded_by_the_instructors_grader_somewhere():
    assert set(CHAPTERS) == set(ONLY_HERE) | graded_elsewhere()


ONLY_HERE = [c for c in CHAPTERS if c not in graded_elsewhere()]


@pytest.mark.parametrize("chapter", ONLY_HERE)
def test_grader_gives_the_solution_full_marks(chapter, sandbox, tmp_path):
    import job

    submission = tmp_path / "submission"
    submission.mkdir()
    for source in SOLUTIONS.joinpath(chapter).glob("*.ipynb"):
        shutil.copy(source, submission / source.name)
    result = job.run_job(submission, SOLUTIONS / chapter, "solution", tmp_path / "out", sandbox)
    failed = {gid: (cell["auto_score"], cell["reason"]) for entry in result["notebooks"].values()
              for gid, cell in entry["cells"].items() if cell["test"] and cell["auto_score"] != cell["max_score"]}
    problems = [p for entry in result["notebooks"].values() for p in entry.get("problems", [])]
    timings = [entry.get("timings", {}) for entry in result["notebooks"].values()]
    record(f"grader-{chapter}-solution", score=result["score"], max_score=result["max_score"],
           **{key: round(sum(t.get(key, 0) for t in timings), 3) for key in
              ("run_s", "kernel_ready_s", "calls", "wire_s", "course_rerun_s")})
    assert result["score"] == result["max_score"] > 0, f"tests that fail under the grader: {failed}; {problems}"
    check_grader_timings(timings)
