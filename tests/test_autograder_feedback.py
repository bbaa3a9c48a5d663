"""What a student's feedback (and the autograded notebook) may show, and a grading job that fails.

1. Nothing active survives from the student's side: a script, an event handler, a javascript: link, SVG,
   JavaScript or widget outputs, in outputs or in the student's own markdown (feedback.sanitize).
2. Once a test cell with hidden tests has run, the student's code has seen hidden inputs: an error it raised
   later shows its type only, any other error and what a test printed at most 200 characters
   (feedback.from_trusted_side, with the test kernel's report of where an error came from).
3. A job that fails twice is recorded as 0 with its reason, and grade.py exits non-zero.

Mistakes these tests were written against, before the code: an allow-list applied to course markdown as well
(its <details> hints escaped into text); sanitizing the feedback page only, so that formgrader still renders
the autograded notebook's scripts; a student error wrapped by a check helper (raise ... from error) counted as
the test's own; a failing job retried forever, or dropped from grades.csv with exit status 0.
"""

from __future__ import annotations

import copy
import functools
import csv
import html
import re
import sys
import time
from html.parser import HTMLParser
from pathlib import Path

import nbformat
import pytest
from nbformat.v4 import new_code_cell, new_markdown_cell, new_output, new_raw_cell

from course import REPO, SOLUTIONS, is_graded_test

sys.path.insert(0, str(REPO / "autograder"))
sys.path.insert(0, str(REPO / "autograder" / "inkernel"))
sys.path.insert(0, str(REPO / "tests"))
import feedback  # noqa: E402
import grade  # noqa: E402
from adversarial.generate import load  # noqa: E402
from job import canonical, score_cells  # noqa: E402
from sandbox import bubblewrap  # noqa: E402

CHAPTERS = ["01-ngram-language-models", "05-word-embeddings", "08-transformers"]
MARK = "PWN"  # in every payload: what runs must never contain it


def source_of(chapter: str) -> Path:
    return next((SOLUTIONS / chapter).glob("*.ipynb"))


@functools.lru_cache(maxsize=None)
def _canonical(chapter: str) -> nbformat.NotebookNode:
    return canonical(source_of(chapter))


def canonical_of(chapter: str) -> nbformat.NotebookNode:
    """The chapter's notebook as the grader rebuilds a submission from it (a fresh copy each time)."""
    return copy.deepcopy(_canonical(chapter))


class Active(HTMLParser):
    """Everything in a page a browser would run: script bodies, event handlers, javascript: URLs, embeds."""

    def __init__(self):
        super().__init__()
        self.found: list[str] = []
        self._in_script = False

    def handle_starttag(self, tag, attrs):
        self._in_script = tag == "script"
        if tag in ("iframe", "object", "embed", "svg", "math", "base", "form"):
            self.found.append(f"<{tag}> {attrs}")
        for name, value in attrs:
            value = value or ""
            if name.startswith("on") or value.strip().lower().startswith(("javascript:", "data:text/html")):
                self.found.append(f"{tag} {name}={value[:80]}")
            if tag == "script" and name == "src":
                self.found.append(f"script src={value[:80]}")

    def handle_endtag(self, tag):
        self._in_script = False if tag == "script" else self._in_script

    def handle_data(self, data):
        if self._in_script:
            self.found.append(f"script: {data[:200]}")


def active_marks(page: str) -> list[str]:
    parser = Active()
    parser.feed(page)
    return [item for item in parser.found if MARK in item]


HTML_OUTPUTS = {
    "script": f"<b>result</b><script>alert('{MARK}')</script>",
    "img onerror": f"<img src=x onerror=\"alert('{MARK}')\">",
    "javascript link": f"<a href=\"javascript:alert('{MARK}')\">click</a>",
    "svg onload in html": f"<svg onload=\"alert('{MARK}')\"><circle r=3 /></svg>",
    "iframe": f"<iframe src=\"data:text/html,<script>alert('{MARK}')</script>\"></iframe>",
    "style-less form": f"<form action=\"javascript:alert('{MARK}')\"><button>go</button></form>",
}
OTHER_OUTPUTS = {
    "application/javascript": f"alert('{MARK}')",
    "image/svg+xml": f"<svg xmlns='http://www.w3.org/2000/svg' onload=\"alert('{MARK}')\"/>",
    "text/markdown": f"**bold** <script>alert('{MARK}')</script> <img src=x onerror=\"alert('{MARK}')\">",
    "application/vnd.jupyter.widget-view+json": {"model_id": MARK, "version_major": 2, "version_minor": 0},
}
MARKDOWN = {
    "script": f"My answer.\n\n<script>alert('{MARK}')</script>",
    "img onerror": f"See ![x](y) <img src=x onerror=\"alert('{MARK}')\"> and $a<b$",
    "javascript link": f"[a link](javascript:alert('{MARK}')) and <a href=\"javascript:alert('{MARK}')\">another</a>",
}


def attacked(chapter: str) -> nbformat.NotebookNode:
    """The chapter's canonical notebook with the student's answers replaced by payloads: outputs of every kind,
    markdown of the student's own, an edited course explanation, a raw cell."""
    nb = canonical_of(chapter)
    answer = next(i for i, c in enumerate(nb.cells) if c.cell_type == "code" and c.metadata.get("nbgrader", {}).get("solution"))
    outputs = [new_output("display_data", data={"text/html": text, "text/plain": "result"}) for text in HTML_OUTPUTS.values()]
    outputs += [new_output("display_data", data={kind: value}) for kind, value in OTHER_OUTPUTS.items()]
    outputs.append(new_output("execute_result", data={"text/html": HTML_OUTPUTS["script"]}, execution_count=1))
    nb.cells[answer].outputs = outputs
    explanation = next(i for i, c in enumerate(nb.cells) if c.cell_type == "markdown" and "nbgrader" not in c.metadata)
    nb.cells[explanation].source += f"\n\n<img src=x onerror=\"alert('{MARK}')\">"
    extra = [new_markdown_cell(text) for text in MARKDOWN.values()] + [new_raw_cell(f"<script>alert('{MARK}')</script>")]
    nb.cells[answer + 1:answer + 1] = extra
    return nb


def page_of(nb, chapter: str, cells: dict | None = None) -> str:
    """The feedback page for ``nb``: every graded cell at 0 points, unless ``cells`` says otherwise."""
    scored = score_cells(canonical_of(chapter), None, "not graded in this test")
    entry = {"cells": {**scored, **(cells or {})}, "problems": [], "repairs": []}
    return feedback.feedback_html(nb, entry, "mallory", chapter, source_of(chapter).stem)


# -- 1. nothing active from the student's side -----------------------------------------------------------------

@pytest.mark.parametrize("chapter", CHAPTERS)
def test_feedback_runs_nothing_the_student_wrote(chapter):
    raw = attacked(chapter)
    if chapter == CHAPTERS[0]:  # the test's own check, once: each payload would run if nothing cleaned it
        live = active_marks(page_of(copy.deepcopy(raw), chapter))
        assert len(live) >= 8, f"the payloads should be live before sanitizing: {live}"
    clean = feedback.sanitize(raw, feedback.course_markdown(str(source_of(chapter))))
    page = page_of(clean, chapter)
    assert not active_marks(page), active_marks(page)[:5]
    assert MARK in html.unescape(re.sub(r"<[^>]+>", "", page)), "what the student wrote is still shown, as text"
    kinds = {k for c in clean.cells if c.cell_type == "code" for o in c.get("outputs", []) for k in o.get("data", {})}
    assert not kinds - feedback.SAFE_OUTPUTS - feedback.CLEANED_OUTPUTS, kinds


def test_the_courses_own_markdown_keeps_its_html():
    chapter = CHAPTERS[0]
    course = feedback.course_markdown(str(source_of(chapter)))
    with_html = [text for text in course if re.search(r"<(details|summary|table|br|sub|sup)\b", text)]
    nb = canonical_of(chapter)
    before = [c.source for c in nb.cells if c.cell_type == "markdown"]
    feedback.sanitize(nb, course)
    assert [c.source for c in nb.cells if c.cell_type == "markdown"] == before
    assert with_html or before, "the chapter has markdown to keep"


def test_a_students_own_markdown_and_the_graders_notes_are_html_on_the_page_not_escaped_text():
    """nbconvert's template cleans raw cells again with a shorter list of tags than feedback's: a student's written
    answer (made a raw cell by sanitize) showed its paragraphs, headings and <details> as &lt;p&gt; text."""
    chapter = CHAPTERS[0]
    course = feedback.course_markdown(str(source_of(chapter)))
    answer = "## My answer\n\nThe **bigram** model wins.\n\n<details><summary>Why</summary>Fewer zeros.</details>"
    nb = feedback.sanitize(nbformat.v4.new_notebook(cells=[new_markdown_cell(answer)]), course)
    scored = score_cells(canonical_of(chapter), None, "not graded in this test")
    entry = {"cells": scored, "problems": ["a note from the grader"], "repairs": []}
    page = feedback.feedback_html(nb, entry, "mallory", chapter, source_of(chapter).stem)
    for shown in ("<h2", "<p>The <strong>bigram</strong> model wins.</p>", "<details><summary>Why</summary>",
                  "<p><strong>The grader noted:</strong></p>"):
        assert shown in page, shown
    assert "&lt;p&gt;" not in page and "&lt;h2&gt;" not in page and "&lt;details&gt;" not in page


@pytest.mark.parametrize("text", list(MARKDOWN.values()), ids=list(MARKDOWN))
def test_an_edited_course_explanation_is_cleaned_like_the_students_own(text):
    chapter = CHAPTERS[1]
    course = feedback.course_markdown(str(source_of(chapter)))
    explanation = sorted(course)[0]
    nb = nbformat.v4.new_notebook(cells=[new_markdown_cell(explanation + "\n\n" + text)])
    page = page_of(feedback.sanitize(nb, course), chapter)
    assert not active_marks(page)


# -- 2. after hidden tests: no message the student's code wrote ------------------------------------------------

def graded_tests(nb) -> list[int]:
    return [i for i, c in enumerate(nb.cells) if is_graded_test(c)]


@pytest.mark.parametrize("chapter", CHAPTERS)
@pytest.mark.parametrize("from_student", [True, False], ids=["raised by the student's code", "raised by the test"])
def test_after_hidden_tests_an_error_shows_no_student_message(chapter, from_student):
    nb = canonical_of(chapter)
    tests = graded_tests(nb)
    first_hidden = next(i for i in tests if "BEGIN HIDDEN TESTS" in nb.cells[i].source)
    before = [i for i in tests if i <= first_hidden]
    after = [i for i in tests if i > first_hidden]
    assert after, "the chapter has a test after its first hidden tests"
    secret = {index: f"SECRET{index}:" + "x" * 3000 for index in before + after[:2]}
    cells = {}
    for index, text in secret.items():
        nb.cells[index].outputs = [new_output("stream", name="stdout", text=f"printed {text}\n"),
                                   new_output("error", ename="ValueError", evalue=f"message {text}", traceback=[])]
        cells[nb.cells[index].metadata.nbgrader["grade_id"]] = {"auto_score": 0, "max_score": 1, "test": True,
                                                                "student_error": from_student}
    page = html.unescape(re.sub(r"<[^>]+>", "", page_of(nb, chapter, cells)))
    for index in before:  # the student's code had seen no hidden input yet: the message is the student's own
        assert f"message {secret[index]}" in page, index
    for index in after[:2]:
        assert secret[index] not in page, f"cell {index}: shown in full after hidden tests had run"
        shown = re.findall(rf"SECRET{index}:x*", page)
        assert all(len(s) <= feedback.MESSAGE_CAP for s in shown), [len(s) for s in shown]
        if from_student:
            assert not re.search(rf"message SECRET{index}:", page), "a message the student's code wrote"
    assert (feedback.STUDENT_ERROR in page) == from_student


# -- 3. a job that fails twice ------------------------------------------------------------------------------

REAL_WORKER = grade._worker_job


def fail_for_bob(submission: str, chapter: str, student: str, out: str, hidden_seed: str | None = None) -> dict:
    """The grading job, broken for one student (module level: the worker processes unpickle it by name)."""
    if student == "bob":
        raise RuntimeError("the grader broke on this submission")
    return REAL_WORKER(submission, chapter, student, out, hidden_seed)


@pytest.mark.slow
@pytest.mark.skipif(bubblewrap() is None, reason="bubblewrap is not installed")
def test_a_job_that_fails_twice_is_recorded_as_zero_and_the_run_fails(tmp_path, monkeypatch, capsys):
    chapter = CHAPTERS[0]
    release, name = load("release", chapter)
    export = tmp_path / "export"
    export.mkdir()
    for student in ("alice", "bob"):
        (export / f"{student}_{name}").write_text(nbformat.writes(release))
    args = [str(tmp_path / "workspace"), "--submissions", str(export), "--chapter", chapter, "--jobs", "2",
            "--cell-timeout", "20", "--no-progress"]
    monkeypatch.setattr(grade, "_worker_job", fail_for_bob)
    assert grade.main(args) == 1, "a run that leaves a submission ungraded fails"
    told = capsys.readouterr().err
    assert "bob" in told and "trying once more" in told and "NOT all graded" in told, told[-2000:]
    rows = {r["student"]: r for r in csv.DictReader(open(tmp_path / "workspace" / "grades.csv"))}
    assert set(rows) == {"alice", "bob"}, "the failed submission is in grades.csv"
    assert float(rows["bob"]["score"]) == 0 and "failed on this submission twice" in rows["bob"]["problems"]
    assert rows["bob"]["problems"].count("the grader broke on this submission") == 2, rows["bob"]["problems"]
    assert "## bob /" in (tmp_path / "workspace" / "grading-report.md").read_text()
    assert "failed" not in rows["alice"]["problems"]
    monkeypatch.setattr(grade, "_worker_job", REAL_WORKER)  # the cause fixed: the next run grades bob, and only bob
    assert grade.main(args) == 0
    assert "1 to grade" in capsys.readouterr().err
    rows = {r["student"]: r for r in csv.DictReader(open(tmp_path / "workspace" / "grades.csv"))}
    assert "failed" not in rows["bob"]["problems"] and rows["bob"]["max_score"] == rows["alice"]["max_score"]


# -- 4. what a page may cost: long cells, a time limit (issue 39) ----------------------------------------------

def with_long_cell(chapter: str, size: int = 1_050_000) -> nbformat.NotebookNode:
    """The chapter with a cell of the student's own holding more than 1 MB of ordinary code, after the first answer."""
    from adversarial.generate import long_cell

    nb = long_cell(canonical_of(chapter), size)
    for cell in nb.cells:
        cell.pop("id", None)
    return nb


def test_a_cell_of_a_megabyte_makes_a_small_page_quickly():
    """A 1 MB cell took 7-98 s to highlight and made a 25 MB page: now it is cut and shown without colours."""
    chapter = CHAPTERS[0]
    nb = with_long_cell(chapter)
    long = max(len(c.source) for c in nb.cells)
    assert long > 2**20
    page_of(canonical_of(chapter), chapter)  # the exporter made and the course's cells remembered, as in a worker
    started = time.perf_counter()
    page = page_of(nb, chapter)
    seconds = time.perf_counter() - started
    honest = page_of(canonical_of(chapter), chapter)
    assert len(page) < len(honest) + 300_000, (len(page), len(honest))
    assert seconds < 5, f"{seconds:.1f} s for the page"
    assert f"feedback shows {feedback.SHOWN_CHARS:,d} of this cell's {long:,d} characters" in html.unescape(page)
    remembered = max(len(key[0]) for h in feedback.exporter().highlighters.values() for key in h.made)
    assert remembered <= feedback.REMEMBER_CHARS, "a long cell was remembered"


def test_a_page_not_made_in_time_is_a_plain_page_with_the_reason(monkeypatch):
    chapter = CHAPTERS[0]
    monkeypatch.setattr(feedback, "FEEDBACK_SECONDS", 0.05)
    monkeypatch.setattr(feedback, "HIGHLIGHT_CHARS", 10**9)  # as before the limits: the long cell is highlighted
    monkeypatch.setattr(feedback, "HIGHLIGHT_BUDGET", 10**9)
    monkeypatch.setattr(feedback, "SHOWN_CHARS", 10**9)
    scored = score_cells(canonical_of(chapter), None, "not graded in this test")
    entry = {"cells": scored, "problems": [], "repairs": []}
    started = time.perf_counter()
    page = feedback.feedback_html(with_long_cell(chapter, 200_000), entry, "mallory", chapter, source_of(chapter).stem)
    assert time.perf_counter() - started < 5
    reason = f"the feedback page could not be made within {feedback.FEEDBACK_SECONDS} s"
    assert any(reason in p for p in entry["problems"]), entry["problems"]
    assert reason in page and "mallory" in page and "<table>" in page, page[:500]


@pytest.mark.parametrize("in_thread", [False, True], ids=["main thread (alarm)", "worker thread (checks only)"])
def test_the_time_limit_holds_without_the_alarm_too(monkeypatch, in_thread):
    """A Dask worker grades in a thread, where no alarm can be set: the page's own checks stop it."""
    import threading

    chapter = CHAPTERS[0]
    monkeypatch.setattr(feedback, "FEEDBACK_SECONDS", 0.05)
    monkeypatch.setattr(feedback, "HIGHLIGHT_CHARS", 10**9)
    monkeypatch.setattr(feedback, "HIGHLIGHT_BUDGET", 10**9)
    scored = score_cells(canonical_of(chapter), None, "not graded in this test")
    entry = {"cells": scored, "problems": [], "repairs": []}
    nb = with_long_cell(chapter, 60_000)
    made = {}

    def make():
        started = time.perf_counter()
        made["page"] = feedback.feedback_html(nb, entry, "mallory", chapter, source_of(chapter).stem)
        made["seconds"] = time.perf_counter() - started

    if in_thread:
        worker = threading.Thread(target=make)
        worker.start()
        worker.join(60)
    else:
        make()
    assert made["seconds"] < 5 and any("could not be made within" in p for p in entry["problems"]), made.get("seconds")
