"""The submission service's instructor commands and its rate limit's arithmetic, without a running service
(tests/test_serve.py runs the service itself)."""

from __future__ import annotations

import csv
import sqlite3
import subprocess
import sys
import time

import pytest

from course import REPO

pytest.importorskip("fastapi")
sys.path.insert(0, str(REPO / "autograder"))
import serve  # noqa: E402


def run(*args: str) -> subprocess.CompletedProcess:
    """The command in this process (a new interpreter would spend seconds importing the grader): its exit status
    and what it wrote to stderr; a refusal is a SystemExit whose message Python prints alone, with no traceback."""
    import contextlib
    import io

    said = io.StringIO()
    with contextlib.redirect_stderr(said):
        try:
            code = serve.main(list(args))
        except SystemExit as stop:
            code = stop.code if isinstance(stop.code, int) else 1
            if isinstance(stop.code, str):
                said.write(stop.code)
    return subprocess.CompletedProcess(args, code, "", said.getvalue())


def test_waits_are_free_at_first_then_grow_to_the_cap():
    rate = serve.RateLimit(free_attempts=3, first_wait_s=60, growth=2, max_wait_s=900)
    row, now, waits = {"tokens": 3.0, "updated_at": 0.0, "attempts": 0}, 0.0, []
    for _ in range(10):  # a student who submits the moment each attempt is allowed
        at = rate.next_allowed(row, now)
        waits.append(round(at - now))
        now = at
        row = {"tokens": rate.tokens_at(row, now) - 1, "updated_at": now, "attempts": row["attempts"] + 1}
    assert waits == [0, 0, 0, 60, 120, 240, 480, 900, 900, 900]
    idle = {"tokens": 0.0, "updated_at": 0.0, "attempts": 3}
    assert rate.tokens_at(idle, 10 * 3600) == 3, "a bucket refills to the free attempts, never beyond"


def test_tokens_are_issued_once_stored_hashed_and_reissued_only_when_asked(tmp_path):
    roster = tmp_path / "roster.csv"
    roster.write_text("Name,Login,Email\nAda,ada_1,ada@x.edu\nBo,bo.2,bo@x.edu\n")
    first = run(str(tmp_path / "ws"), "issue-tokens", str(roster), "--out", str(tmp_path / "t1.csv"))
    assert first.returncode == 0, first.stderr
    issued = {r["student"]: r["token"] for r in csv.DictReader(open(tmp_path / "t1.csv"))}
    assert set(issued) == {"ada_1", "bo.2"} and len(set(issued.values())) == 2
    assert (tmp_path / "t1.csv").stat().st_mode & 0o077 == 0, "the tokens file is readable by its owner only"
    db = tmp_path / "ws" / "service" / "submissions.db"
    stored = dict(sqlite3.connect(db).execute("select student, token_sha256 from students").fetchall())
    assert stored == {s: serve.token_hash(t) for s, t in issued.items()}
    again = run(str(tmp_path / "ws"), "issue-tokens", str(roster), "--out", str(tmp_path / "t2.csv"))
    assert again.returncode == 0 and "already had one" in again.stderr
    assert list(csv.DictReader(open(tmp_path / "t2.csv"))) == []
    reissued = run(str(tmp_path / "ws"), "issue-tokens", str(roster), "--out", str(tmp_path / "t3.csv"), "--reissue")
    new = {r["student"]: r["token"] for r in csv.DictReader(open(tmp_path / "t3.csv"))}
    assert reissued.returncode == 0 and set(new) == set(issued) and not set(new.values()) & set(issued.values())


@pytest.mark.parametrize("content, said", [
    ("student\nalice\nbob smith\n", "no usable student id"),
    ("student\nalice\nalice\n", "twice"),
    ("", "empty"),
])
def test_a_bad_roster_is_refused_with_the_reason_and_no_traceback(tmp_path, content, said):
    roster = tmp_path / "roster.csv"
    roster.write_text(content)
    done = run(str(tmp_path / "ws"), "issue-tokens", str(roster))
    assert done.returncode != 0 and said in done.stderr and "Traceback" not in done.stderr, done.stderr


def test_export_takes_each_students_last_submission_before_their_due_date(tmp_path):
    workspace = tmp_path / "ws"
    engine = serve.engine_for(workspace, None)
    due = time.time() - 3600
    (workspace / "policy.toml").write_text(
        f'[chapters."07-attention"]\ndue = {time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(due))}\n'
        f'[extensions.late_ok]\n"07-attention" = 2\n')
    rows = [("early", due - 100, b"first"), ("early", due - 50, b"second"), ("early", due + 50, b"after due"),
            ("late_ok", due + 60, b"within the extension"), ("nobody_in_time", due + 10, b"late")]
    with engine.begin() as db:
        for student, received, body in rows:
            db.execute(serve.submissions.insert().values(student=student, chapter="07-attention", received_at=received,
                                                         notebook=body, sha256="x", status="graded", charged="[]"))
    done = run(str(workspace), "export")
    assert done.returncode == 0, done.stderr
    submitted = workspace / "submitted"
    assert (submitted / "early" / "07-attention" / "07-attention.ipynb").read_bytes() == b"second"
    assert (submitted / "late_ok" / "07-attention" / "07-attention.ipynb").read_bytes() == b"within the extension"
    assert not (submitted / "nobody_in_time").exists()
    assert (submitted / "early" / "07-attention" / "timestamp.txt").read_text().endswith(" UTC\n")


def test_the_button_names_code_run_after_the_last_save_that_the_file_lacks(tmp_path):
    """seqlab.submit's record of the kernel's runs: a cell run after the save whose code the saved file lacks is an
    unsaved edit; code the file holds, or code run before the save, is not."""
    import os
    import types

    import nbformat

    from seqlab.submit import _RunLog

    path = tmp_path / "07-attention.ipynb"
    notebook = nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell("x = 1"), nbformat.v4.new_code_cell("y = 2\n")])
    nbformat.write(notebook, path)
    os.utime(path, (1000.0, 1000.0))
    runs = _RunLog()
    runs.record(types.SimpleNamespace(raw_cell="x = 1"))  # recorded with the time it ran (now: after the save)
    runs.record(types.SimpleNamespace(raw_cell="  \n"))  # a blank run is not
    assert [source for _, source in runs.runs] == ["x = 1"]
    runs.runs = [(900.0, "scratch = 0"), (1100.0, "x = 1"), (1100.0, "  y = 2  "), (1200.0, "x = 10")]
    assert runs.unsaved(path) == [(1200.0, "x = 10")], "only the run after the save that the file lacks"
    os.utime(path, (1250.0, 1250.0))  # saved after that run (the edit kept or the cell deleted): nothing to say
    assert runs.unsaved(path) == []
    assert runs.unsaved(tmp_path / "missing.ipynb") == [], "an unreadable file is the service's to refuse"


def test_the_verdicts_are_a_table_with_headers_after_a_line_a_screen_reader_announces():
    from html.parser import HTMLParser

    from seqlab.submit import report_html

    reply = {"status": "graded", "id": 4, "chapter": "07-attention", "score": 9, "max_score": 11, "problems": [],
             "exercises": [{"exercise": "additive_scores_tests", "points": 0, "max_points": 2, "visible": "failed",
                            "visible_messages": ["CheckFailed: the energies <of> the worked example"], "hidden": "not run",
                            "hidden_message": None, "attempts_left": 0, "next_allowed": "2026-11-28T10:00:00+00:00"},
                           {"exercise": "qkv_attention_tests", "points": 4, "max_points": 4, "visible": "passed",
                            "visible_messages": ["ok"], "hidden": "passed", "hidden_message": None,
                            "attempts_left": None, "next_allowed": None}]}

    class Tags(HTMLParser):
        def __init__(self):
            super().__init__()
            self.seen = []

        def handle_starttag(self, tag, attrs):
            self.seen.append((tag, dict(attrs)))

    page = report_html(reply)
    tags = Tags()
    tags.feed(page)
    assert tags.seen[0] == ("div", {"role": "status", "aria-live": "polite"}), tags.seen[0]
    assert page.index("submission 4 of 07-attention: 9 / 11") < page.index("<table>")
    assert ("caption", {}) in tags.seen
    assert [a.get("scope") for t, a in tags.seen if t == "th"] == ["col"] * 5 + ["row"] * 2
    assert "the energies &lt;of&gt; the worked example" in page, "messages are escaped"
    assert "next check of the hidden tests allowed at 2026-11-28T10:00:00+00:00" in page
    refused = report_html({"status": "failed", "id": 5, "chapter": "07-attention", "problems": ["the grader failed"]})
    assert refused.startswith('<div role="status"') and "the grader failed" in refused
