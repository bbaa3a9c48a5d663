"""Every chapter, automatically, through the instructors' grader (two kernels, data-only calls).

The solution must get full marks and the untouched release none: a test cell that breaks the
test-cell convention (autograder/CONVENTION.md) — handing a student's object to a library,
calling .backward() on a returned tensor — fails here, in the chapter that broke it.
"""

from __future__ import annotations

import shutil
import sys

import pytest

from course import CHAPTERS, NOTEBOOKS, REPO, SOLUTIONS, record

sys.path.insert(0, str(REPO / "autograder"))
from sandbox import Limits, Sandbox, bubblewrap  # noqa: E402

pytestmark = [pytest.mark.slow, pytest.mark.skipif(bubblewrap() is None, reason="bubblewrap is not installed")]


@pytest.fixture(scope="module")
def sandbox(tmp_path_factory):
    worker = Sandbox(tmp_path_factory.mktemp("worker"), Limits())
    yield worker
    worker.close()


@pytest.mark.parametrize("chapter", CHAPTERS)
@pytest.mark.parametrize("kind", ["solution", "release"])
def test_grader_gives_the_solution_full_marks_and_the_release_none(chapter, kind, sandbox, tmp_path):
    import job

    submission = tmp_path / "submission"
    submission.mkdir()
    for source in (SOLUTIONS if kind == "solution" else NOTEBOOKS).joinpath(chapter).glob("*.ipynb"):
        shutil.copy(source, submission / source.name)
    result = job.run_job(submission, SOLUTIONS / chapter, kind, tmp_path / "out", sandbox)
    failed = {gid: (cell["auto_score"], cell["reason"]) for entry in result["notebooks"].values()
              for gid, cell in entry["cells"].items() if cell["test"] and cell["auto_score"] != cell["max_score"]}
    problems = [p for entry in result["notebooks"].values() for p in entry.get("problems", [])]
    timings = [entry.get("timings", {}) for entry in result["notebooks"].values()]
    record(f"grader-{chapter}-{kind}", score=result["score"], max_score=result["max_score"],
           **{key: round(sum(t.get(key, 0) for t in timings), 3) for key in
              ("run_s", "kernel_ready_s", "calls", "wire_s", "course_rerun_s")})
    if kind == "solution":
        assert result["score"] == result["max_score"] > 0, f"tests that fail under the grader: {failed}; {problems}"
        # what the second kernel costs is accounted for (benchmark.py reports it): every chapter's tests call
        # the student's code, and the wire's share of those calls is neither negative nor more than the calls
        for t in timings:
            assert t["calls"] > 0, f"no call from a test reached the student's code: {t}"
            assert 0 <= t["student_code_s"] <= t["calls_s"] <= t["test_cells_s"] + 0.01 <= t["run_s"] + 0.01, t
            assert t["wire_s"] == pytest.approx(t["calls_s"] - t["student_code_s"], abs=0.002), t
            assert 0 <= t["course_rerun_s"] < t["run_s"], t
    else:
        assert result["score"] == 0, f"the untouched release scored {result['score']}"
