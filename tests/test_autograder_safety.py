"""The instructors' grading tool (autograder/grade.py) against honest, adversarial and broken submissions.

One batch (tests/adversarial/generate.py, chapter 1, as an LMS export) is graded once by the
real command with 2 parallel sandboxes; each test checks one safety promise on its results.
"""

from __future__ import annotations

import csv
import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from course import REPO, SOLUTIONS

sys.path.insert(0, str(REPO / "autograder"))
sys.path.insert(0, str(REPO / "tests"))
from adversarial.generate import CH1, write_export  # noqa: E402
from sandbox import bubblewrap  # noqa: E402

pytestmark = [pytest.mark.slow, pytest.mark.skipif(bubblewrap() is None, reason="bubblewrap is not installed")]
GRADE = [sys.executable, str(REPO / "autograder" / "grade.py")]
FAST = ["--cell-timeout", "10", "--memory-gb", "1", "--no-progress"]


def grade(workspace: Path, *args: str, timeout: int = 600) -> subprocess.CompletedProcess:
    return subprocess.run([*GRADE, str(workspace), *args], capture_output=True, text=True, timeout=timeout)


@pytest.fixture(scope="module")
def batch(tmp_path_factory):
    root = tmp_path_factory.mktemp("grading")
    gradebook_before = None
    expected = write_export(root / "export", CH1, targets=[str(SOLUTIONS), str(root / "workspace"), str(root / "export"), "/root"])
    workspace = root / "workspace"
    done = grade(workspace, "--submissions", str(root / "export"), "--chapter", CH1, *FAST)
    assert done.returncode == 0, done.stderr[-3000:]
    rows = {r["student"]: r for r in csv.DictReader(open(workspace / "grades.csv"))}
    results = {p.parent.name: json.loads(p.read_text()) for p in (workspace / "autograder-results" / CH1).glob("*/result.json")}
    return {"workspace": workspace, "rows": rows, "results": results, "expected": expected, "stderr": done.stderr,
            "root": root, "gradebook_before": gradebook_before}


def score(batch, student):
    return float(batch["rows"][student]["score"])


def problems(batch, student):
    return batch["rows"][student]["problems"]


def test_every_submission_is_graded_and_lands_in_the_gradebook(batch):
    from nbgrader.api import Gradebook

    assert set(batch["rows"]) == set(batch["expected"])
    with Gradebook(f"sqlite:///{batch['workspace'] / 'gradebook.db'}") as gb:
        assert gb.find_submission(CH1, "honest_solution").score == 21
        assert {s.student.id for s in gb.assignment_submissions(CH1)} == set(batch["expected"])
    for student in batch["expected"]:
        assert (batch["workspace"] / "feedback" / student / CH1).exists() or "missing" in problems(batch, student) \
            or "not a valid" in problems(batch, student) or "nbformat" in problems(batch, student)


def test_honest_scores_and_warning_keeps_points(batch):
    full = float(batch["rows"]["honest_solution"]["max_score"])
    assert score(batch, "honest_solution") == full
    assert score(batch, "honest_warning") == full, "a correct answer that emits a library warning keeps its points"
    assert score(batch, "honest_release") == 0
    assert 0 < score(batch, "partly_wrong") < full
    assert not problems(batch, "honest_solution") and not problems(batch, "honest_warning")


def test_editing_deleting_duplicating_tests_gains_nothing(batch):
    full = float(batch["rows"]["honest_solution"]["max_score"])
    for student in ("edit_tests", "delete_tests", "duplicate_tests"):
        assert score(batch, student) == 0, student
    # the repairs never cost an honest answer its points, and never abort the batch (nbgrader #1083)
    assert score(batch, "duplicate_tests_solution") == full
    assert score(batch, "delete_tests_solution") == full


def test_changing_metadata_or_points_gains_nothing(batch):
    assert score(batch, "change_metadata") == 0
    assert float(batch["rows"]["change_metadata"]["max_score"]) == float(batch["rows"]["honest_solution"]["max_score"])


def test_hard_coding_visible_answers_gains_nothing(batch):
    assert score(batch, "hardcoded_visible_tests") == 0


def test_monkeypatching_comparisons_and_check_helpers_is_caught(batch):
    for student, word in (("monkeypatch_numpy", "numpy"), ("monkeypatch_check", "seqlab.check")):
        assert score(batch, student) == 0
        assert "tampering detected" in problems(batch, student) and word in problems(batch, student)


def test_swallowing_exceptions_and_hiding_tracebacks_is_caught(batch):
    assert score(batch, "swallow_exceptions") == 0
    assert "AST transformers" in problems(batch, "swallow_exceptions")


def test_exiting_or_killing_the_kernel(batch):
    for student in ("sys_exit", "os_exit", "kill_kernel"):
        assert score(batch, student) == 0
    assert "exited" in problems(batch, "os_exit")
    assert "killed" in problems(batch, "kill_kernel")


def test_infinite_loops_are_stopped(batch):
    assert score(batch, "infinite_loop") == 0 and "ran longer than 10 s" in problems(batch, "infinite_loop")
    assert score(batch, "loop_ignoring_interrupt") == 0
    # it ignores SIGINT: the kernel is stopped (reported as not answering, or as dead)
    assert "kernel" in problems(batch, "loop_ignoring_interrupt")


def test_memory_is_limited(batch):
    assert score(batch, "memory_hog") == 0 and "memory limit" in problems(batch, "memory_hog")


def test_gigabytes_of_output_are_not_kept(batch):
    assert score(batch, "print_flood") == 0
    executed = batch["workspace"] / "autograded" / "print_flood" / CH1 / f"{CH1}.ipynb"
    assert executed.stat().st_size < 20 * 2**20


def test_the_sandbox_hides_solutions_gradebook_other_students_and_network(batch):
    assert score(batch, "snoop") == 0
    import nbformat

    executed = nbformat.read(batch["workspace"] / "autograded" / "snoop" / CH1 / f"{CH1}.ipynb", as_version=4)
    text = next(o.text for c in executed.cells if c.cell_type == "code" for o in c.outputs
                if o.output_type == "stream" and "SNOOP " in o.text)
    report = json.loads(text.split("SNOOP ", 1)[1].splitlines()[0])
    assert not [k for k, v in report.items() if v in ("READ", "EXECUTED", "WROTE", "CONNECTED")], report
    assert not list(SOLUTIONS.rglob("PWNED")) and not list(batch["root"].rglob("PWNED"))


def test_broken_submissions_get_a_reason_and_never_stop_the_others(batch):
    assert "not a valid notebook" in problems(batch, "broken_json")
    assert "nbformat version 99" in problems(batch, "wrong_nbformat")
    assert "must keep its name" in problems(batch, "renamed_notebook")
    assert "no notebook" in problems(batch, "empty_zip")
    for student in ("broken_json", "wrong_nbformat", "renamed_notebook", "empty_zip"):
        assert score(batch, student) == 0


def test_report_lists_non_test_losses_in_plain_words(batch):
    report = (batch["workspace"] / "grading-report.md").read_text()
    for student in ("os_exit", "memory_hog", "monkeypatch_numpy", "broken_json", "infinite_loop"):
        assert f"## {student} /" in report
    assert "## honest_solution /" not in report


def test_feedback_has_no_hidden_tests(batch):
    secrets = []
    import nbformat

    for cell in nbformat.read(next((SOLUTIONS / CH1).glob("*.ipynb")), as_version=4).cells:
        if "### BEGIN HIDDEN TESTS" in cell.source:
            hidden = cell.source.split("### BEGIN HIDDEN TESTS")[1].split("### END HIDDEN TESTS")[0]
            secrets += [line.strip() for line in hidden.splitlines() if len(line.strip()) > 25]
    import html
    import re

    for page in (batch["workspace"] / "feedback").rglob("*.html"):
        text = html.unescape(re.sub(r"<[^>]+>", "", page.read_text()))
        assert not [s for s in secrets if s in text], page


def test_rerun_regrades_only_what_is_missing_and_gives_identical_grades(batch):
    workspace = batch["workspace"]
    before = {k: (r["score"], r["problems"]) for k, r in batch["rows"].items()}
    gone = workspace / "autograder-results" / CH1 / "partly_wrong" / "result.json"
    gone.unlink()
    done = grade(workspace, "--chapter", CH1, "--jobs", "1", *FAST)
    assert done.returncode == 0, done.stderr[-2000:]
    assert "1 to grade" in done.stderr
    after = {r["student"]: (r["score"], r["problems"]) for r in csv.DictReader(open(workspace / "grades.csv"))}
    assert after == before, "grades must not depend on the order or the degree of parallelism"


def test_interrupted_run_loses_nothing(tmp_path):
    write_export(tmp_path / "export", CH1, only=["honest_release", "sys_exit", "edit_tests", "delete_tests"])
    workspace = tmp_path / "workspace"
    process = subprocess.Popen([*GRADE, str(workspace), "--submissions", str(tmp_path / "export"), *FAST, "--jobs", "1"],
                               stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    deadline = time.time() + 120
    results = workspace / "autograder-results" / CH1
    while time.time() < deadline and not list(results.glob("*/result.json")):
        time.sleep(0.5)
    process.send_signal(signal.SIGINT)
    process.communicate(timeout=60)
    done = grade(workspace, *FAST)
    assert done.returncode == 0, done.stderr[-2000:]
    rows = list(csv.DictReader(open(workspace / "grades.csv")))
    assert {r["student"] for r in rows if r["chapter"] == CH1} == {"honest_release", "sys_exit", "edit_tests", "delete_tests"}


def test_refuses_to_grade_unsandboxed_unless_told(tmp_path):
    env = {**os.environ, "PATH": "/nonexistent"}  # no bwrap on PATH
    done = subprocess.run([*GRADE, str(tmp_path / "w"), "--no-progress"], capture_output=True, text=True, env=env, timeout=120)
    assert done.returncode == 2 and "--allow-unsandboxed" in done.stderr
