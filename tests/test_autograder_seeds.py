"""Per-student hidden-test inputs (issue 44, part 3).

grade.py derives each student's seed from the course's secret (WORKSPACE/secret), the chapter and the student id
(job.student_seed) and hands it to the test kernel only; the hidden tests draw their random inputs from it
(seqlab.grading.hidden_seed / hidden_generator), the visible tests keep their fixed ones, and without a seed (a
learner, nbconvert, plain nbgrader) the hidden tests draw what they always drew.

End to end: an export of two students graded by grade.py through the process pool, then regraded through
`--cluster local:2`. hana hands in chapter 7 with alignment_accuracy answered by a table of the inputs her own hidden
tests draw (read off in this process, as a student could read them off another's run); ivan hands in the very same
notebook. hana's table passes (it covers every call her tests make), ivan's fails his hidden tests, and the regrade
draws hana's inputs again (her table passes again).
"""

from __future__ import annotations

import csv
import hashlib
import json
import os
import stat
import subprocess
import sys
from pathlib import Path

import nbformat
import pytest

from course import CHAPTERS, REPO, environment
from mistakes import GradedCells

sys.path.insert(0, str(REPO / "autograder"))
sys.path.insert(0, str(REPO / "tests"))
from adversarial.generate import load  # noqa: E402
from job import HIDDEN_SEED_VAR, course_secret, inputs_fingerprint, student_seed  # noqa: E402
from sandbox import bubblewrap  # noqa: E402
from test_autograder_safety import CELL_LIMIT, grade  # noqa: E402

from seqlab import grading  # noqa: E402

CH7 = "07-attention"
TABLED_CELL = "alignment_accuracy_tests"
SECRET = "5eed" * 16  # the test's course secret, written into the workspace before grade.py runs


# -- the helper and the seed -----------------------------------------------------------------------------------------

def test_without_a_seed_the_hidden_tests_draw_the_notebooks_fixed_inputs(monkeypatch):
    monkeypatch.delenv(HIDDEN_SEED_VAR, raising=False)
    assert grading.hidden_seed(14) == 14
    assert grading.hidden_generator(14).random() == __import__("numpy").random.default_rng(14).random()
    import torch

    assert torch.equal(torch.randn(3, generator=grading.hidden_generator(72, kind="torch")),
                       torch.randn(3, generator=torch.Generator().manual_seed(72)))


def test_a_students_seed_changes_every_draw_and_the_same_seed_repeats_it(monkeypatch):
    alice, bob = (student_seed(SECRET, CH7, who) for who in ("alice", "bob"))
    assert alice != bob and alice == student_seed(SECRET, CH7, "alice")
    assert student_seed(SECRET, "08-transformers", "alice") != alice, "a student's seed differs per chapter"
    assert student_seed("another course's secret " * 2, CH7, "alice") != alice
    draws = {}
    for who, seed in (("alice", alice), ("bob", bob), ("alice again", alice)):
        monkeypatch.setenv(HIDDEN_SEED_VAR, seed)
        draws[who] = (grading.hidden_seed(14), grading.hidden_generator(14).integers(1 << 30, size=4).tolist())
        assert grading.hidden_seed(14) != grading.hidden_seed(15), "each salt draws its own inputs"
        assert 0 <= grading.hidden_seed(14) < 2**63
    assert draws["alice"] == draws["alice again"] != draws["bob"]
    assert draws["alice"][0] != 14
    with pytest.raises(ValueError, match="kind must be"):
        grading.hidden_generator(1, kind="jax")


def test_the_secret_is_made_once_readable_by_its_owner_only(tmp_path):
    secret = course_secret(tmp_path)
    assert len(secret) == 64 and int(secret, 16) >= 0
    assert stat.S_IMODE(os.stat(tmp_path / "secret").st_mode) == 0o600
    assert course_secret(tmp_path) == secret, "the same secret for the whole term"
    (tmp_path / "secret").write_text("short\n")
    with pytest.raises(ValueError, match="no usable secret"):
        course_secret(tmp_path)
    assert inputs_fingerprint(None) == "fixed" and inputs_fingerprint("a") != inputs_fingerprint("b")


def test_a_job_is_graded_again_when_its_students_seed_changes(tmp_path):
    import grade

    submission, out = tmp_path / "submitted" / "alice" / CH7, tmp_path / "result"
    submission.mkdir(parents=True)
    (submission / f"{CH7}.ipynb").write_text("{}")
    out.mkdir()
    seed = student_seed(SECRET, CH7, "alice")
    (out / "result.json").write_text(json.dumps({"course_version": "v1", "hidden_inputs": inputs_fingerprint(seed),
                                                 "submission_hash": grade.submission_hash(submission)}))
    assert grade.up_to_date(out, submission, "v1", seed)
    assert not grade.up_to_date(out, submission, "v1", student_seed("a new secret for the course " * 2, CH7, "alice"))
    assert not grade.up_to_date(out, submission, "v1", None), "graded with a seed, not with the fixed inputs"


def test_job_py_reads_the_secret_file_or_says_why_not(tmp_path, capsys):
    import job

    base = [str(tmp_path), "--chapter", CH7, "--student", "alice", "--out", str(tmp_path / "out")]
    assert job.main(base + ["--secret", str(tmp_path / "missing")]) == 2
    assert "cannot read the secret file" in capsys.readouterr().err
    (tmp_path / "short").write_text("abc\n")
    assert job.main(base + ["--secret", str(tmp_path / "short")]) == 2
    assert "no usable secret" in capsys.readouterr().err


# -- every chapter's solution under a few students' seeds (seeds_check.py runs 50) ----------------------------------

@pytest.mark.slow
@pytest.mark.parametrize("chapter", CHAPTERS)
def test_every_solution_passes_its_hidden_tests_under_other_students_seeds(chapter):
    done = subprocess.run([sys.executable, str(REPO / "autograder" / "seeds_check.py"), "--chapter", chapter,
                           "--seeds", "3", "--secret", "tests/test_autograder_seeds.py"],
                          capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    assert "0 failure(s)" in done.stdout


# -- end to end: an answer read off one student's inputs fails another's --------------------------------------------

def key_of(weights, expected) -> str:
    """What identifies one call's inputs, as the tabled answer computes it (values in logical order, not memory's)."""
    w, e = weights.detach().contiguous(), expected.contiguous()
    head = repr((tuple(w.shape), str(w.dtype), tuple(e.shape), str(e.dtype))).encode()
    return hashlib.sha256(head + w.numpy().tobytes() + e.numpy().tobytes()).hexdigest()


def inputs_table(seed: str) -> dict[str, object]:
    """Every call of alignment_accuracy that the test cell makes under this student's seed, and what the solution
    answered (or that it raised ValueError)."""
    cells = GradedCells(CH7)
    solution = cells.base["alignment_accuracy"]
    table: dict[str, object] = {}

    def recorder(weights, expected):
        try:
            answer = solution(weights, expected)
        except ValueError:
            table[key_of(weights, expected)] = "ValueError"
            raise
        table[key_of(weights, expected)] = [float(answer[0]), float(answer[1])]
        return answer

    namespace = {**cells.base, **cells.fresh_earlier(TABLED_CELL), "alignment_accuracy": recorder}
    with environment(**{HIDDEN_SEED_VAR: seed}):
        exec(compile(cells.sources[TABLED_CELL], TABLED_CELL, "exec"), namespace)
    return table


TABLED_ANSWER = '''

import hashlib as _hashlib

_ANSWERS = {table!r}  # alignment_accuracy's answers for the inputs one student's tests draw


def alignment_accuracy(weights, expected):
    w, e = weights.detach().contiguous(), expected.contiguous()
    head = repr((tuple(w.shape), str(w.dtype), tuple(e.shape), str(e.dtype))).encode()
    found = _ANSWERS.get(_hashlib.sha256(head + w.numpy().tobytes() + e.numpy().tobytes()).hexdigest())
    if found == "ValueError":
        raise ValueError("no scored step")
    return (0.0, 0.0) if found is None else (found[0], found[1])
'''


def tabled_notebook(table: dict) -> str:
    nb, _ = load("solution", CH7)
    cell = next(c for c in nb.cells if c.metadata.get("nbgrader", {}).get("solution") and "def alignment_accuracy" in c.source)
    cell.source += TABLED_ANSWER.format(table=table)
    return nbformat.writes(nb)


def cell_scores(workspace: Path, student: str) -> tuple[dict, str]:
    result = json.loads((workspace / "autograder-results" / CH7 / student / "result.json").read_text())
    cells = result["notebooks"][CH7]["cells"]
    return {gid: (c["auto_score"], c["max_score"], c["hidden_failure"]) for gid, c in cells.items() if c["test"]}, \
        result["hidden_inputs"]


@pytest.mark.slow
@pytest.mark.xdist_group("seeds")
@pytest.mark.skipif(bubblewrap() is None, reason="bubblewrap is not installed")
def test_an_answer_read_off_one_students_inputs_fails_another_student_and_a_regrade_draws_the_same(tmp_path):
    workspace, export = tmp_path / "workspace", tmp_path / "export"
    workspace.mkdir()
    export.mkdir()
    (workspace / "secret").write_text(SECRET + "\n")
    os.chmod(workspace / "secret", 0o600)
    table = inputs_table(student_seed(SECRET, CH7, "hana"))
    assert len(table) > 10 and "ValueError" in table.values()
    text = tabled_notebook(table)
    for student in ("hana", "ivan"):
        (export / f"{student}_{CH7}.ipynb").write_text(text)
    fast = ["--chapter", CH7, "--cell-timeout", str(CELL_LIMIT), "--memory-gb", "1", "--no-progress"]

    done = grade(workspace, "--submissions", str(export), "--jobs", "2", *fast)
    assert done.returncode == 0, done.stderr[-3000:]
    hana, hana_inputs = cell_scores(workspace, "hana")
    ivan, ivan_inputs = cell_scores(workspace, "ivan")
    assert hana_inputs != ivan_inputs != "fixed"
    assert hana_inputs == inputs_fingerprint(student_seed(SECRET, CH7, "hana"))
    assert all(score == top for score, top, _ in hana.values()), hana  # full marks: the table covers her inputs
    assert ivan[TABLED_CELL][0] == 0 and ivan[TABLED_CELL][2], ivan  # a hidden test failed on his own inputs
    assert {g: s for g, s in ivan.items() if g != TABLED_CELL} == {g: s for g, s in hana.items() if g != TABLED_CELL}
    grades = (workspace / "grades.csv").read_text()

    done = grade(workspace, "--regrade", "--cluster", "local:2", "--jobs", "1", *fast)
    assert done.returncode == 0, done.stderr[-3000:]
    assert "2 to grade" in done.stderr
    assert cell_scores(workspace, "hana") == (hana, hana_inputs), "the regrade on the cluster drew hana's inputs again"
    assert cell_scores(workspace, "ivan") == (ivan, ivan_inputs)
    assert list(csv.DictReader(grades.splitlines())) == list(csv.DictReader((workspace / "grades.csv").read_text().splitlines()))
    assert (workspace / "secret").read_text().strip() == SECRET, "grade.py keeps the course's secret"
