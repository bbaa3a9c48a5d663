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
           run_s=sum(t.get("run_s", 0) for t in timings))
    if kind == "solution":
        assert result["score"] == result["max_score"] > 0, f"tests that fail under the grader: {failed}; {problems}"
    else:
        assert result["score"] == 0, f"the untouched release scored {result['score']}"
