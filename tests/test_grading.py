"""The nbgrader round trip through the real `nbgrader` commands, in a workspace outside the repository."""

from __future__ import annotations

import html
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import nbformat
import pytest

from course import REPO, SOLUTIONS, hidden_test_lines, is_graded_test, nbgrader_meta

sys.path.insert(0, str(REPO / "autograder"))
from course_preprocessors import KeepWarningsVisible, RedactTracebacks, is_only_warnings  # noqa: E402
from workspace import make_workspace  # noqa: E402

WARNING = '__import__("warnings").warn("this call will change in a future release", FutureWarning)'
# Plain nbgrader's pipeline (its configuration and the course's preprocessors) does not depend on the chapter, so
# its round trip runs in a numpy and a torch chapter; every chapter's solution goes through the instructors'
# grader (test_autograder_chapters.py and the batches it names), and solution and release run in grading mode
# (test_notebooks.py).
ROUND_TRIP_CHAPTERS = ["01-ngram-language-models", "07-attention"]  # the cheapest torch chapter to grade


def nbgrader(workspace: Path, *args: str) -> str:
    scripts = str(Path(sys.executable).parent)
    env = {**os.environ, "PATH": os.pathsep.join([scripts, os.environ.get("PATH", "")])}
    done = subprocess.run([sys.executable, "-m", "nbgrader", *args], cwd=workspace, env=env,
                          capture_output=True, text=True, timeout=900)
    assert done.returncode == 0, f"nbgrader {' '.join(args)} failed:\n{done.stdout[-3000:]}\n{done.stderr[-3000:]}"
    return done.stdout + done.stderr


def with_warning(source: Path, target: Path) -> None:
    """The solution, with every answer emitting a FutureWarning when it is called."""
    nb = nbformat.read(source, as_version=4)
    for cell in nb.cells:
        if nbgrader_meta(cell).get("solution"):
            cell.source = re.sub(r"^(\s*)### BEGIN SOLUTION\n", lambda m: f"{m.group(0)}{m.group(1)}{WARNING}\n",
                                 cell.source, flags=re.M)
    nbformat.write(nb, target)


def visible_text(page: str) -> str:
    return html.unescape(re.sub(r"<[^>]+>", "", page))


@pytest.mark.slow
@pytest.mark.parametrize("chapter", ROUND_TRIP_CHAPTERS)
def test_nbgrader_round_trip(chapter, tmp_path):
    from nbgrader.api import Gradebook

    workspace = make_workspace(tmp_path / "workspace")
    nbgrader(workspace, "generate_assignment", chapter, "--force",
             f"--CourseDirectory.release_directory={tmp_path / 'release'}")
    released = tmp_path / "release" / chapter
    students = {"alice": "solution", "bob": "untouched release", "carol": "solution that warns"}
    for student in students:
        folder = workspace / "submitted" / student / chapter
        folder.mkdir(parents=True)
        for source in sorted((SOLUTIONS / chapter).glob("*.ipynb")):
            if student == "alice":
                shutil.copy(source, folder / source.name)
            elif student == "bob":
                shutil.copy(released / source.name, folder / source.name)
            else:
                with_warning(source, folder / source.name)
    nbgrader(workspace, "autograde", chapter)
    nbgrader(workspace, "generate_feedback", chapter)

    with Gradebook(f"sqlite:///{workspace / 'gradebook.db'}") as gradebook:
        scores = {s: gradebook.find_submission(chapter, s) for s in students}
        max_score = scores["alice"].max_score
        assert max_score > 0
        assert scores["alice"].score == max_score, "the solutions must get full marks"
        assert scores["bob"].score == 0, "the untouched release must get zero"
        assert scores["carol"].score == max_score, "a correct answer that triggers a warning keeps its points"

    warned = [cell for path in (workspace / "autograded" / "carol" / chapter).glob("*.ipynb")
              for cell in nbformat.read(path, as_version=4).cells
              if is_graded_test(cell) and any(o.get("name") == "stdout" and "FutureWarning" in o.get("text", "")
                                              for o in cell.outputs)]
    assert warned, "carol's warnings should appear (moved to stdout) in her graded test cells"

    secrets = hidden_test_lines(chapter)
    assert secrets, "the chapter has hidden tests to protect"
    for student in ("alice", "bob"):
        pages = list((workspace / "feedback" / student / chapter).glob("*.html"))
        assert pages, f"no feedback for {student}"
        # a line the student wrote too is no leak (a solution's answer may read as a hidden reference does)
        own = "\n".join(c.source for path in (workspace / "submitted" / student / chapter).glob("*.ipynb")
                        for c in nbformat.read(path, as_version=4).cells)
        for page in pages:
            text = visible_text(page.read_text())
            leaked = [line for line in secrets if line in text and line not in own]
            assert not leaked, f"{student}'s feedback shows hidden tests: {leaked[:3]}"
            assert "BEGIN HIDDEN TESTS" not in text
    bob_text = visible_text(next((workspace / "feedback" / "bob" / chapter).glob("*.html")).read_text())
    assert "NotImplementedError" in bob_text, "feedback still says why a test failed"


def test_workspace_must_be_outside_the_repository(tmp_path):
    with pytest.raises(ValueError, match="outside the repository"):
        make_workspace(REPO / "grading")
    config = (make_workspace(tmp_path / "w", db_url="postgresql://grader@db/course") / "nbgrader_config.py").read_text()
    assert "autograder/nbgrader_config.py" in config and "postgresql://grader@db/course" in config


def test_warning_detection():
    assert is_only_warnings("/x/y.py:3: FutureWarning: soon\n  warnings.warn('soon')\n")
    assert is_only_warnings("<ipython-input-1>:2: RuntimeWarning: divide by zero encountered in log\n")
    assert not is_only_warnings("Traceback (most recent call last):\n")
    assert not is_only_warnings("/x.py:3: UserWarning: a\nsomething else printed to stderr\n")
    assert not is_only_warnings("")


def stream(name, text):
    return nbformat.v4.new_output("stream", name=name, text=text)


def test_keep_warnings_visible_moves_only_warnings():
    cell = nbformat.v4.new_code_cell("f()")
    cell.outputs = [stream("stderr", "/a.py:1: FutureWarning: x\n  y\n"), stream("stderr", "real error\n")]
    KeepWarningsVisible().preprocess_cell(cell, {}, 0)
    assert [o.name for o in cell.outputs] == ["stdout", "stderr"]


def test_redact_tracebacks_only_in_graded_cells():
    error = {"output_type": "error", "ename": "CheckFailed", "evalue": "P is wrong", "traceback": ["line 3: _secret = 42"]}
    graded = nbformat.v4.new_code_cell("...", metadata={"nbgrader": {"grade": True, "solution": False, "grade_id": "t", "points": 1}})
    plain = nbformat.v4.new_code_cell("...")
    graded.outputs = [nbformat.from_dict(dict(error))]
    plain.outputs = [nbformat.from_dict(dict(error))]
    RedactTracebacks().preprocess_cell(graded, {}, 0)
    RedactTracebacks().preprocess_cell(plain, {}, 0)
    assert graded.outputs[0].traceback == ["CheckFailed: P is wrong"]
    assert plain.outputs[0].traceback == ["line 3: _secret = 42"]


@pytest.mark.slow
def test_plain_nbgrader_gives_the_chinese_edition_the_scores_of_the_english(tmp_path):
    """Issue 46: grading is language-blind under plain nbgrader too (autograder/grade.py: tests/test_i18n.py). The
    same code in both editions, graded by `nbgrader autograde`: the Chinese solution gets full marks, the Chinese
    release as students get it (notebooks/zh/) zero, and a partly wrong answer the same points in each test cell in
    Chinese as in English."""
    from nbgrader.api import Gradebook

    import i18n
    from adversarial.generate import partly_wrong

    chapter = "07-attention"  # the cheapest torch chapter to grade
    name = f"{chapter}.ipynb"
    catalog = i18n.read_catalog(chapter)
    workspace = make_workspace(tmp_path / "workspace")
    nbgrader(workspace, "generate_assignment", chapter, "--force",
             f"--CourseDirectory.release_directory={tmp_path / 'release'}")
    wrong = tmp_path / "partly-wrong" / name
    wrong.parent.mkdir()
    nbformat.write(partly_wrong(nbformat.read(SOLUTIONS / chapter / name, as_version=4)), wrong)
    submitted = {"zh_solution": i18n.translated_notebook(SOLUTIONS / chapter / name, catalog),
                 "zh_release": nbformat.read(REPO / "notebooks" / "zh" / chapter / name, as_version=4),
                 "en_partly_wrong": nbformat.read(wrong, as_version=4),
                 "zh_partly_wrong": i18n.translated_notebook(wrong, catalog)}
    for student, notebook in submitted.items():
        folder = workspace / "submitted" / student / chapter
        folder.mkdir(parents=True)
        nbformat.write(notebook, folder / name)
    assert submitted["zh_release"].metadata["language"] == "zh" and submitted["zh_partly_wrong"].metadata["language"] == "zh"
    nbgrader(workspace, "autograde", chapter)

    with Gradebook(f"sqlite:///{workspace / 'gradebook.db'}") as gradebook:
        cells = {student: {grade.name: grade.score for grade in
                           gradebook.find_submission_notebook(chapter, chapter, student).grades}
                 for student in submitted}
        total = {student: gradebook.find_submission(chapter, student).score for student in submitted}
        max_score = gradebook.find_submission(chapter, "zh_solution").max_score
    assert total["zh_solution"] == max_score > 0, cells["zh_solution"]
    assert total["zh_release"] == 0, cells["zh_release"]
    assert cells["zh_partly_wrong"] == cells["en_partly_wrong"], (cells["zh_partly_wrong"], cells["en_partly_wrong"])
    assert 0 < total["en_partly_wrong"] < max_score, total
