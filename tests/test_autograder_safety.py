"""The instructors' grading tool (autograder/grade.py) against honest, adversarial and broken submissions.

One batch (tests/adversarial/generate.py, chapter 1, as an LMS export) is graded once by the
real command with 2 parallel sandboxes; each test checks one safety promise on its results.
A second batch is graded on ONE worker, honest students before and after submissions that try
to leave something behind; a third is an export full of links. The course, a canary file and
the workspace's inputs are hashed before and after every batch.
"""

from __future__ import annotations

import csv
import hashlib
import json
import os
import re
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from course import REPO, SOLUTIONS, check_grader_timings, hidden_test_lines, is_graded_test, record

sys.path.insert(0, str(REPO / "autograder"))
sys.path.insert(0, str(REPO / "tests"))
from adversarial.generate import _zip, load, persistence_batch, write_export  # noqa: E402
from sandbox import bubblewrap, unsandboxed_refusal  # noqa: E402

pytestmark = [pytest.mark.slow, pytest.mark.skipif(bubblewrap() is None, reason="bubblewrap is not installed")]
GRADE = [sys.executable, str(REPO / "autograder" / "grade.py")]
# The honest cells of chapters 1 and 7 take at most a few seconds each in grading mode; each loop in the batch costs
# its job slot the limit (and one that ignores the interrupt, the backstop: 3 x the limit), so the limit stays short.
CELL_LIMIT = 10
FAST = ["--cell-timeout", str(CELL_LIMIT), "--memory-gb", "1", "--no-progress"]


def grade(workspace: Path, *args: str, timeout: int = 1800) -> subprocess.CompletedProcess:
    """The instructors' command; ``timeout`` only stops a hung run (the 30-submission batch took 422 s beside the
    suite's other worker, and more than 600 beside two)."""
    return subprocess.run([*GRADE, str(workspace), *args], capture_output=True, text=True, timeout=timeout)


def tree_hash(*roots: Path) -> dict[str, str]:
    """Every file under the roots (links not followed) -> sha256 of its bytes."""
    found = {}
    for root in roots:
        paths = [root] if root.is_file() else [p for p in root.rglob("*") if p.is_file() and not p.is_symlink()]
        for path in paths:
            if "__pycache__" not in path.parts:
                found[str(path)] = hashlib.sha256(path.read_bytes()).hexdigest()
    return found


# Every submission here is graded in chapter 7, the cheapest chapter to grade: its solution grades in about 7 s
# (chapter 1's takes about 45: its hidden tests call the student's code 2,566 times), and its untouched release in
# 16 s of a busy suite's worker against chapter 1's 26 (given cells). The attacks do not depend on the chapter.
# Chapter 1's hard-coded answers are rejected in tests/test_ch01_mistakes.py. COURSE is what the submissions aim at: the chapter's sources and
# release, the grader (other chapters' files may be edited while the suite runs on a developer's machine).
BATCH = "07-attention"
COURSE = [REPO / "solutions" / BATCH, REPO / "notebooks" / BATCH, REPO / "autograder"]


@pytest.fixture(scope="module")
def batch(tmp_path_factory):
    root = tmp_path_factory.mktemp("grading")
    gradebook_before = None
    canary = root / "canary.txt"
    canary.write_text("the grader must never change this file\n")
    expected = write_export(root / "export", BATCH, targets=[str(SOLUTIONS), str(root / "workspace"), str(root / "export"),
                                                           "/root", str(canary)])
    workspace = root / "workspace"
    before = tree_hash(*COURSE, canary, root / "export")
    done = grade(workspace, "--submissions", str(root / "export"), "--chapter", BATCH, *FAST)
    assert done.returncode == 0, done.stderr[-3000:]
    after = tree_hash(*COURSE, canary, root / "export")
    changed = sorted(k for k in set(before) | set(after) if before.get(k) != after.get(k))
    assert not changed, f"files of the course, the export or the canary changed: {changed[:10]}"
    rows = {r["student"]: r for r in csv.DictReader(open(workspace / "grades.csv"))}
    results = {p.parent.name: json.loads(p.read_text()) for p in (workspace / "autograder-results" / BATCH).glob("*/result.json")}
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
        honest = gb.find_submission(BATCH, "honest_solution")
        assert honest.score == honest.max_score > 0  # every point of chapter 7
        assert {s.student.id for s in gb.assignment_submissions(BATCH)} == set(batch["expected"])
    for student in batch["expected"]:
        assert (batch["workspace"] / "feedback" / student / BATCH).exists() or "missing" in problems(batch, student) \
            or "not a valid" in problems(batch, student) or "nbformat" in problems(batch, student)


def test_grading_a_class_prints_no_library_warnings(batch):
    """An instructor reads grade.py's terminal: a library's notice there (nbformat's cell ids, SQLAlchemy's
    autoflush in nbgrader's gradebook) reads like an error and changes no grade (issue 41)."""
    warned = re.findall(r"^.*\b\w+Warning\b.*$", batch["stderr"], re.M)
    assert not warned, "grade.py printed library warnings:\n" + "\n".join(warned[:5])


def test_honest_scores_and_warning_keeps_points(batch):
    full = float(batch["rows"]["honest_solution"]["max_score"])
    assert score(batch, "honest_solution") == full
    check_grader_timings([entry.get("timings", {}) for entry in batch["results"]["honest_solution"]["notebooks"].values()])
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


def test_forging_the_verdict_from_inside_the_student_kernel_gains_nothing(batch):
    # the tests run in another process: patching numpy or seqlab.check, wrapping cells in try/except,
    # rewriting how the shell reports errors or what the runner sends, lying values: no point
    for student in ("monkeypatch_numpy", "monkeypatch_check", "swallow_exceptions", "forge_shell", "forge_runner",
                    "lying_values"):
        assert score(batch, student) == 0, student


def test_hidden_tests_never_reach_the_student(batch):
    import nbformat

    assert score(batch, "read_frames") == 0
    secrets = hidden_test_lines(BATCH)
    executed = nbformat.read(batch["workspace"] / "autograded" / "read_frames" / BATCH / f"{BATCH}.ipynb", as_version=4)
    printed = "".join(o.get("text", "") for c in executed.cells if c.cell_type == "code" and not c.metadata.get("nbgrader")
                      for o in c.outputs if o.output_type == "stream")
    assert "STOLEN" in printed, "the attack's own cell should have run and printed what it found"
    assert not [line for line in secrets if line in printed], "a hidden test's source reached the student's process"


def test_breaking_the_protocol_gets_zero_and_a_reason(batch):
    assert score(batch, "break_protocol") == 0
    assert problems(batch, "break_protocol"), "a submission that breaks the channel is reported"


def test_unusual_but_correct_answers_keep_their_points(batch):
    # every answer prints while a test calls it, and is wrapped by a decorator
    assert score(batch, "unusual_but_correct") == float(batch["rows"]["honest_solution"]["max_score"])


def test_links_the_submission_plants_are_never_followed(batch):
    assert score(batch, "plant_symlinks") == 0
    assert not list(SOLUTIONS.rglob("PWNED")) and not list(batch["root"].rglob("PWNED"))


def test_exiting_or_killing_the_kernel(batch):
    for student in ("sys_exit", "os_exit", "kill_kernel"):
        assert score(batch, student) == 0
    assert "exited" in problems(batch, "os_exit")
    assert "killed" in problems(batch, "kill_kernel")


def test_infinite_loops_are_stopped(batch):
    # stopped at the limit of its own time, or, on a machine too busy to give it that within 3 x the limit, by the backstop
    assert score(batch, "infinite_loop") == 0 and re.search(rf"ran longer than (3 × )?{CELL_LIMIT} s", problems(batch, "infinite_loop"))
    assert score(batch, "loop_ignoring_interrupt") == 0
    # it ignores every signal the runner uses: the grader stops the kernel (reported as not answering, or as dead)
    assert "kernel" in problems(batch, "loop_ignoring_interrupt")


def test_memory_is_limited(batch):
    assert score(batch, "memory_hog") == 0 and "memory limit" in problems(batch, "memory_hog")


def graders_own_peak(stderr: str) -> tuple[int, int]:
    """(MiB, MiB): the peak memory grade.py reports for its own process and for its busiest grading worker."""
    found = re.search(r"at its peak: (\d+) MiB here, (\d+) MiB in a grading worker", stderr)
    assert found, "grade.py no longer reports its own peak memory"
    return int(found.group(1)), int(found.group(2))


def test_the_graders_own_memory_stays_bounded(batch):
    """Issue 23: the grader's own processes (not the kernels, which have limits of their own) read every entry of the
    export, broken ones and a flood of output included, in bounded memory: measured 297 / 227 MiB for four
    submissions, 302 / 245 MiB for this batch of 33."""
    here, worker = graders_own_peak(batch["stderr"])
    record("grader_own_memory_safety_batch", submissions=len(batch["expected"]), main_mib=here, worker_mib=worker)
    assert here < 1024 and worker < 1024, (here, worker)


def test_gigabytes_of_output_are_not_kept(batch):
    assert score(batch, "print_flood") == 0
    executed = batch["workspace"] / "autograded" / "print_flood" / BATCH / f"{BATCH}.ipynb"
    assert executed.stat().st_size < 20 * 2**20


def snoop_report(executed_path: Path) -> dict:
    """What the `snoop` submission found it could do from inside its sandbox: target -> READ, WROTE, ... or a refusal."""
    import nbformat

    executed = nbformat.read(executed_path, as_version=4)
    text = next(o.text for c in executed.cells if c.cell_type == "code" for o in c.outputs
                if o.output_type == "stream" and "SNOOP " in o.text)
    return json.loads(text.split("SNOOP ", 1)[1].splitlines()[0])


def test_the_sandbox_hides_solutions_gradebook_other_students_and_network(batch):
    assert score(batch, "snoop") == 0
    report = snoop_report(batch["workspace"] / "autograded" / "snoop" / BATCH / f"{BATCH}.ipynb")
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
    for student in ("os_exit", "memory_hog", "broken_json", "infinite_loop"):
        assert f"## {student} /" in report
    assert "## honest_solution /" not in report


def test_feedback_has_no_hidden_tests(batch):
    import html
    import re

    secrets = hidden_test_lines(BATCH)
    pages = list((batch["workspace"] / "feedback").rglob("*.html"))
    assert len(pages) >= 20
    for page in pages:
        text = html.unescape(re.sub(r"<[^>]+>", "", page.read_text()))
        # a line the student wrote too is not a leak (a decorator's `return function(*args, **kwargs)`)
        own = "".join(p.read_text() for p in (batch["workspace"] / "submitted" / page.parent.parent.name).rglob("*.ipynb"))
        assert not [s for s in secrets if s in text and s not in own], page
    # a failure inside the hidden tests shows that a hidden test failed, not its message
    partly = (batch["workspace"] / "feedback" / "partly_wrong" / BATCH / f"{BATCH}.html").read_text()
    assert "a hidden test failed" in partly or "partly_wrong" in batch["rows"]


def test_errors_raised_after_hidden_tests_show_no_message_of_the_students(batch):
    """Every answer raises an error whose message holds every argument tests passed it, hidden tests' too: feedback
    shows such messages only from the test cells before the first with hidden tests, later ones by type only."""
    import html
    import re

    import nbformat
    from feedback import STUDENT_ERROR

    assert score(batch, "leak_via_errors") == 0
    page = (batch["workspace"] / "feedback" / "leak_via_errors" / BATCH / f"{BATCH}.html").read_text()
    text = html.unescape(re.sub(r"<[^>]+>", "", page))
    source = nbformat.read(next((SOLUTIONS / BATCH).glob("*.ipynb")), as_version=4)
    tests = [c for c in source.cells if is_graded_test(c)]
    before_hidden = next(i for i, c in enumerate(tests) if "BEGIN HIDDEN TESTS" in c.source) + 1
    assert STUDENT_ERROR in text, "later tests failed by the student's error show its type only"
    shown = text.count("ValueError: LEAK ")  # (the attack's own source, shown in its cell, says "LEAK " too)
    assert 0 < shown <= before_hidden, (shown, before_hidden)


def test_rerun_regrades_only_what_is_missing_and_gives_identical_grades(batch):
    workspace = batch["workspace"]
    before = {k: (r["score"], r["problems"]) for k, r in batch["rows"].items()}
    gone = workspace / "autograder-results" / BATCH / "partly_wrong" / "result.json"
    gone.unlink()
    done = grade(workspace, "--chapter", BATCH, "--jobs", "1", *FAST)
    assert done.returncode == 0, done.stderr[-2000:]
    assert "1 to grade" in done.stderr
    after = {r["student"]: (r["score"], r["problems"]) for r in csv.DictReader(open(workspace / "grades.csv"))}
    assert after == before, "grades must not depend on the order or the degree of parallelism"


def test_interrupted_run_loses_nothing(tmp_path):
    write_export(tmp_path / "export", BATCH, only=["honest_release", "sys_exit", "edit_tests", "delete_tests"])
    workspace = tmp_path / "workspace"
    process = subprocess.Popen([*GRADE, str(workspace), "--submissions", str(tmp_path / "export"), *FAST, "--jobs", "1"],
                               stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    deadline = time.time() + 120
    results = workspace / "autograder-results" / BATCH
    while time.time() < deadline and not list(results.glob("*/result.json")):
        time.sleep(0.5)
    process.send_signal(signal.SIGINT)
    process.communicate(timeout=60)
    done = grade(workspace, *FAST)
    assert done.returncode == 0, done.stderr[-2000:]
    rows = list(csv.DictReader(open(workspace / "grades.csv")))
    assert {r["student"] for r in rows if r["chapter"] == BATCH} == {"honest_release", "sys_exit", "edit_tests", "delete_tests"}


def test_refuses_to_grade_unsandboxed_unless_told(tmp_path):
    env = {**os.environ, "PATH": "/nonexistent"}  # no bwrap on PATH
    done = subprocess.run([*GRADE, str(tmp_path / "w"), "--no-progress"], capture_output=True, text=True, env=env, timeout=120)
    assert done.returncode == 2 and "--allow-unsandboxed" in done.stderr
    assert unsandboxed_refusal("grade") in done.stderr  # the words job.py and serve.py use too


@pytest.fixture(scope="module")
def persistence(tmp_path_factory):
    """Honest students graded before and after submissions that try to leave something behind, on one worker."""
    import nbformat

    root = tmp_path_factory.mktemp("persistence")
    export = root / "export"
    export.mkdir()
    name = load("release", BATCH)[1]
    expected = {}
    for student, (nb, expect) in persistence_batch(BATCH).items():
        (export / f"{student}_{name}").write_text(nbformat.writes(nb))
        expected[student] = expect
    canary = root / "canary.txt"
    canary.write_text("canary\n")
    before = tree_hash(*COURSE, canary)
    done = grade(root / "workspace", "--submissions", str(export), "--chapter", BATCH, *FAST, "--jobs", "1")
    assert done.returncode == 0, done.stderr[-3000:]
    after = tree_hash(*COURSE, canary)
    changed = sorted(k for k in set(before) | set(after) if before.get(k) != after.get(k))
    assert not changed, f"files of the course or the canary changed: {changed[:10]}"
    rows = {r["student"]: r for r in csv.DictReader(open(root / "workspace" / "grades.csv"))}
    return {"rows": rows, "expected": expected}


def test_nothing_passes_from_one_submission_to_the_next(persistence):
    rows = persistence["rows"]
    assert set(rows) == set(persistence["expected"]), "every submission gets a grade"
    full = float(rows["a_honest"]["max_score"])
    for student in ("a_honest", "c_honest", "e_honest"):
        assert float(rows[student]["score"]) == full, (student, rows[student]["problems"])
        assert not rows[student]["problems"], (student, rows[student]["problems"])
    for student in ("b_persist_files", "d_hit_zygote"):
        assert float(rows[student]["score"]) == 0


LOCK_IN = """import os
here = os.getcwd()
for top in ('/tmp', '/dev/shm', here):
    inner = os.path.join(top, 'locked', 'inner')
    os.makedirs(inner, exist_ok=True)
    open(os.path.join(inner, 'planted.py'), 'w').write('raise SystemExit')
    os.chmod(inner, 0o500)  # what is inside cannot be removed
    os.chmod(os.path.join(top, 'locked'), 0o000)  # nor can the folder be read
print('LOCKED')
"""
BURY = """import os
os.chdir('/tmp')
for _ in range(3000):  # deeper than a recursive removal goes
    os.mkdir('deep')
    os.chdir('deep')
print('BURIED')
"""
LOOK = "import os\nprint('FOUND', sorted(n for top in ('/tmp', '/dev/shm', os.getcwd()) for n in os.listdir(top)))"


REMOUNT = """import os, subprocess, sys
import seqlab
status = {line.split(':')[0]: line.split(':')[1].strip() for line in open('/proc/self/status') if line.startswith('Cap')}
print('CAPS', status['CapEff'], status['CapBnd'])
try:
    os.mknod('/tmp/disk', 0o600 | 0o060000, os.makedev(8, 0))
    print('MKNOD')
except OSError:
    pass
for target in [sys.prefix, os.path.dirname(os.path.dirname(seqlab.__file__)), '/usr', '/']:
    subprocess.run(['mount', '-o', 'remount,bind,rw', target], capture_output=True)
    try:
        open(os.path.join(target, 'ESCAPED'), 'w').write('written from a submission')
        print('WROTE', target)
    except OSError:
        pass
"""


@pytest.fixture(scope="module")
def lone_sandbox(tmp_path_factory):
    from sandbox import Limits, Sandbox

    worker = Sandbox(tmp_path_factory.mktemp("lone") / "worker", Limits(cell_timeout=20))
    yield worker
    worker.close()


def printed_by(worker, code: str, ok: bool = True) -> str:
    """What one cell printed, run as a submission of its own in ``worker`` (no tests); ``ok``: it must not fail."""
    import nbformat
    from executor import Plan, run

    nb = nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell(code)])
    worker.reset_scratch()
    execution = run(nb, worker, Plan(tests=set(), course={}, answer_names=[], classes=[], hidden_from={}))
    worker.after_submission()
    assert execution.replies == {0: "ok"} or not ok, execution.problems
    return "".join(o.get("text", "") for o in nb.cells[0].outputs)


def test_a_submission_has_no_capabilities_and_cannot_remount_what_it_only_reads(lone_sandbox):
    """Graded as root, the sandbox once kept every capability: a submission remounted the venv writable and wrote
    into it. The course, the venv and the system stay read-only, and no device can be made."""
    import seqlab

    places = [Path(sys.prefix), Path(seqlab.__file__).resolve().parent.parent, Path("/usr"), Path("/")]
    printed = printed_by(lone_sandbox, REMOUNT, ok=False)
    escaped = [p / "ESCAPED" for p in places if (p / "ESCAPED").exists()]
    for path in escaped:
        path.unlink()
    assert not escaped and "WROTE" not in printed and "MKNOD" not in printed, (escaped, printed)
    assert "CAPS 0000000000000000 0000000000000000" in printed, printed


def test_what_a_submission_locks_or_buries_in_its_folders_is_gone_for_the_next(lone_sandbox):
    """Folders made unreadable or unwritable, and a tree 3,000 folders deep, in every writable place: the fork
    server makes them writable and removes them, or (the deep tree) ends so that the next runs in a fresh sandbox."""
    for attack, done in ((LOCK_IN, "LOCKED"), (BURY, "BURIED")):
        assert done in printed_by(lone_sandbox, attack)
        seen = printed_by(lone_sandbox, LOOK)
        assert "FOUND" in seen and "'locked'" not in seen and "'deep'" not in seen, (done, seen)


def test_links_in_the_input_are_refused_with_a_reason(tmp_path):
    import nbformat

    name = load("release", BATCH)[1]
    solution = next((SOLUTIONS / BATCH).glob("*.ipynb"))
    export = tmp_path / "export"
    export.mkdir()
    outside = tmp_path / "outside.ipynb"
    outside.write_text(nbformat.writes(load("solution", BATCH)[0]))
    (export / f"link_file_{name}").symlink_to(solution)  # a notebook that is a link to the solution
    (export / "link_dir").mkdir()
    (export / "link_dir" / BATCH).symlink_to(solution.parent, target_is_directory=True)  # a chapter folder that is a link
    os.link(outside, export / f"hard_link_{name}")  # a hard link to a file outside the export
    info = __import__("zipfile").ZipInfo(f"{BATCH}/{name}")
    info.external_attr = (0o120777 << 16)  # a symbolic link inside a zip file, as `zip -y` stores it
    buffer = __import__("io").BytesIO()
    with __import__("zipfile").ZipFile(buffer, "w") as archive:
        archive.writestr(info, str(solution))
        archive.writestr(f"../../{name}", "{}")
    (export / "zip_link.zip").write_bytes(buffer.getvalue())
    (export / "honest.zip").write_bytes(_zip({f"{BATCH}/{name}": solution.read_bytes()}))
    done = grade(tmp_path / "workspace", "--submissions", str(export), "--chapter", BATCH, *FAST)
    assert done.returncode == 0, done.stderr[-3000:]
    rows = {r["student"]: r for r in csv.DictReader(open(tmp_path / "workspace" / "grades.csv"))}
    assert float(rows["honest"]["score"]) == float(rows["honest"]["max_score"])
    for student in ("link_file", "link_dir", "hard_link", "zip_link"):
        assert student in rows, (student, sorted(rows))
        assert float(rows[student]["score"]) == 0, student
        assert "link" in rows[student]["problems"] or "outside" in rows[student]["problems"], (student, rows[student]["problems"])


def test_a_crash_while_making_feedback_still_records_the_grade(tmp_path, monkeypatch):
    import feedback
    import job
    from sandbox import Limits, Sandbox

    def broken(*args, **kwargs):
        raise RuntimeError("the template failed")

    monkeypatch.setattr(feedback, "feedback_html", broken)
    submission = tmp_path / "submission"
    submission.mkdir()
    (submission / f"{BATCH}.ipynb").write_bytes(next((SOLUTIONS / BATCH).glob("*.ipynb")).read_bytes())
    sandbox = Sandbox(tmp_path / "worker", Limits(cell_timeout=30))
    try:
        result = job.run_job(submission, SOLUTIONS / BATCH, "alice", tmp_path / "out", sandbox)
    finally:
        sandbox.close()
    assert result["score"] == result["max_score"] > 0
    entry = next(iter(result["notebooks"].values()))
    assert any("feedback page could not be made" in p for p in entry["problems"])
    assert (tmp_path / "out" / f"{BATCH}.html").read_text().count("alice") >= 1


def cgroups_available() -> bool:
    from cgroups import Cgroup

    group, _ = Cgroup.create(f"seqlab-probe-{os.getpid()}")
    if group is None:
        return False
    group.remove()
    return True


def grade_students(root: Path, notebooks: dict, *args: str, chapter: str = BATCH) -> dict[str, dict]:
    import nbformat

    export = root / "export"
    export.mkdir(parents=True)
    name = load("release", chapter)[1]
    for student, nb in notebooks.items():
        (export / f"{student}_{name}").write_text(nbformat.writes(nb))
    done = grade(root / "workspace", "--submissions", str(export), "--chapter", chapter, "--no-progress", *args)
    assert done.returncode == 0, done.stderr[-3000:]
    rows = {r["student"]: r for r in csv.DictReader(open(root / "workspace" / "grades.csv"))}
    for student in rows:
        result = json.loads((root / "workspace" / "autograder-results" / chapter / student / "result.json").read_text())
        rows[student]["run_s"] = sum(e.get("timings", {}).get("run_s", 0) for e in result["notebooks"].values())
    return rows


@pytest.mark.skipif(not cgroups_available(), reason="control groups cannot be created here")
def test_limits_hold_for_the_whole_sandbox(tmp_path):
    """Memory spread over many processes, and disks filled. (Processes that together pass the student's memory
    share, and a flood of processes, are issue 23's limits attacks: tests/test_autograder_attacks.py, 3 chapters.)"""
    from adversarial.generate import FILL_DISKS, MEMORY_MANY, insert_before_first_answer

    stub = lambda code: insert_before_first_answer(load("release", BATCH)[0], code)  # noqa: E731
    disk_before = shutil.disk_usage(tmp_path).used
    rows = grade_students(tmp_path, {"memory_many": stub(MEMORY_MANY), "fill_disks": stub(FILL_DISKS)},
                          "--memory-gb", "1", "--cell-timeout", "40")
    assert set(rows) == {"memory_many", "fill_disks"}, "every submission gets a grade"
    assert "memory limit" in rows["memory_many"]["problems"], rows["memory_many"]["problems"]
    import nbformat

    executed = nbformat.read(tmp_path / "workspace" / "autograded" / "fill_disks" / BATCH / f"{BATCH}.ipynb", as_version=4)
    printed = "".join(o.get("text", "") for c in executed.cells if c.cell_type == "code" for o in c.outputs
                      if o.output_type == "stream")
    written = eval(printed.split("WRITTEN", 1)[1].splitlines()[0])  # noqa: S307 - our own submission's output
    assert all(size <= 300 * 2**20 for size in written.values()), written  # stopped at the tmpfs sizes
    assert shutil.disk_usage(tmp_path).used - disk_before < 200 * 2**20, "the host's disk filled up"


@pytest.mark.serial  # it compares wall times of two gradings: `make test` runs it alone, after the parallel part
@pytest.mark.skipif(not cgroups_available(), reason="control groups cannot be created here")
def test_a_cpu_hog_does_not_slow_the_honest_student_beside_it(tmp_path):
    from adversarial.generate import CPU_HOG, insert_before_first_answer

    solution = load("solution", BATCH)[0]
    quiet = grade_students(tmp_path / "quiet", {"a_honest": solution, "b_honest": solution}, "--jobs", "2")
    hog = insert_before_first_answer(load("release", BATCH)[0], CPU_HOG)
    noisy = grade_students(tmp_path / "noisy", {"a_hog": hog, "b_honest": solution}, "--jobs", "2")
    full = float(quiet["a_honest"]["max_score"])
    assert float(noisy["b_honest"]["score"]) == full == float(quiet["b_honest"]["score"])
    reference = max(quiet["a_honest"]["run_s"], quiet["b_honest"]["run_s"])
    assert noisy["b_honest"]["run_s"] <= 1.5 * reference + 2, (noisy["b_honest"]["run_s"], reference)


# -- issue 39, section 5: what a submission reaches in the test kernel through the wire --------------------------

@pytest.fixture(scope="module")
def wire_reach(tmp_path_factory):
    """One grading run (grade.py, one job at a time) of: a wrong answer that steers torch's global generator, in
    chapters 3, 4 and 8 (tests/adversarial/issue39.py), and chapter 1's stubs with an answer bound to a handle the
    test kernel lent."""
    import nbformat
    from adversarial.issue39 import LENT_CHAPTER, STEERING_CHAPTERS, lent_answer, steering

    root = tmp_path_factory.mktemp("wire-reach")
    export, workspace = root / "export", root / "workspace"
    export.mkdir()
    aimed_at = {}
    for chapter in STEERING_CHAPTERS:
        nb, aimed_at[chapter] = steering(chapter)
        (export / f"steer_{chapter[:2]}_{load('release', chapter)[1]}").write_text(nbformat.writes(nb))
    (export / f"lent_{LENT_CHAPTER[:2]}_{load('release', LENT_CHAPTER)[1]}").write_text(nbformat.writes(lent_answer()))
    chapters = [arg for chapter in (*STEERING_CHAPTERS, LENT_CHAPTER) for arg in ("--chapter", chapter)]
    done = grade(workspace, "--submissions", str(export), *chapters, "--jobs", "1", "--cell-timeout", "40",
                 "--memory-gb", "1", "--no-progress")
    assert done.returncode == 0, done.stderr[-3000:]
    results = {}
    for chapter in (*STEERING_CHAPTERS, LENT_CHAPTER):
        student = f"{'lent' if chapter == LENT_CHAPTER else 'steer'}_{chapter[:2]}"
        results[chapter] = json.loads((workspace / "autograder-results" / chapter / student / "result.json").read_text())
    return {"results": results, "aimed_at": aimed_at, "workspace": workspace}


@pytest.mark.parametrize("chapter", ["03-recurrent-neural-networks", "04-vanishing-gradients-gru-lstm", "08-transformers"])
def test_a_student_cannot_choose_the_random_inputs_of_later_tests(wire_reach, chapter):
    """A wrong answer that sets torch's global generator to all-zero words after its calls scored the test cell it
    aims at in full while the test kernel took the student's global random states (chapter 3's padding check,
    chapter 4's random batches, chapter 8's cached attention, each drew zeros); the test kernel keeps its own."""
    result = wire_reach["results"][chapter]
    cells = next(iter(result["notebooks"].values()))["cells"]
    aimed_at = cells[wire_reach["aimed_at"][chapter]]
    assert aimed_at["max_score"] > 0 and aimed_at["auto_score"] == 0, (chapter, aimed_at)


def test_an_answer_bound_to_a_handle_the_test_kernel_lent_is_refused(wire_reach):
    result = wire_reach["results"]["01-ngram-language-models"]
    found = " ".join(p for entry in result["notebooks"].values() for p in entry.get("problems", []))
    assert "the test kernel's own objects" in found and "'kn_prob'" in found, found[:2000]
    assert result["score"] == 0


def test_no_page_of_the_batch_runs_anything_in_a_browser(batch):
    """Issue 39: every page of the batch a payload reaches, and an honest student's, opened in Chromium: the feedback
    pages and the autograded notebooks as formgrader renders them (the hostile ones as nbconvert's classic and lab
    exports too): nothing runs, no javascript:/data: link."""
    from browser import chromium, chromium_path
    from test_browser_feedback import pages_a_payload_reaches, what_runs

    if chromium_path() is None:
        pytest.skip("Chromium is not installed (apt-get install chromium)")
    workspace = batch["workspace"]
    feedback_pages = {p.parent.parent.name: p.read_text() for p in (workspace / "feedback").rglob("*.html")}
    hostile = {student for student in feedback_pages if student.startswith("browser_")}
    pages = pages_a_payload_reaches(feedback_pages, list((workspace / "autograded").glob(f"*/{BATCH}/*.ipynb")),
                                    hostile, control="honest_solution")
    assert len(hostile) == 2 and len(pages) >= 4 * len(hostile) + 2, sorted(pages)
    with chromium() as browser:
        ran = what_runs(browser, pages)
    assert not ran, {name: found[:3] for name, found in list(ran.items())[:5]}
    assert score(batch, "browser_outputs") == 0 and score(batch, "browser_cells") == 0


def test_a_cell_of_a_megabyte_makes_a_small_feedback_page(batch):
    """Issue 39: a student's cell of 1 MB was highlighted whole (a page 17-25 MB, 3-98 s of the grader's worker)."""
    import html

    pages = batch["workspace"] / "feedback"
    page = (pages / "long_cell" / BATCH / f"{BATCH}.html").read_text()
    release = (pages / "honest_release" / BATCH / f"{BATCH}.html").read_text()
    assert len(page) < len(release) + 300_000, (len(page), len(release))
    assert "feedback shows 100,000 of this cell's" in html.unescape(page)
    seconds = {s: batch["results"][s]["seconds"] for s in ("long_cell", "honest_release")}
    assert seconds["long_cell"] < seconds["honest_release"] + 20, seconds
    assert score(batch, "long_cell") == 0
