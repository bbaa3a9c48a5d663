"""The Submit button (seqlab.submit.button, issue 45) in a real browser, in JupyterLab and in Notebook 7, against the
real submission service (autograder/serve.py under uvicorn on a port, started as tests/test_serve.py starts it).

A student opens chapter 7 (their answers in it), runs the cell that shows the button, breaks an answer in the
editor (tanh forgotten in additive_scores) and runs that cell. Pressing Submit before saving sends nothing and says
that code run after the last save is not in the file; after Ctrl-S a press sends the saved file, and the page shows
the verdicts: the score, the failing visible check's message, and when the hidden tests may next be checked (one
free attempt here). A press from the keyboard within the wait shows the wait and sends nothing. The button is found
by its accessible name and its messages by their live regions' roles, as a screen reader finds them.
"""

from __future__ import annotations

import csv
import re
import sqlite3
import subprocess
import sys
import time

import nbformat
import pytest
from playwright.sync_api import expect

from browser import chromium, chromium_path, new_page, open_notebook
from course import BUILD, REPO, SOLUTIONS
from servers import free_port, jupyter, shut_down_kernels

sys.path.insert(0, str(REPO / "autograder"))
from sandbox import bubblewrap  # noqa: E402

pytest.importorskip("fastapi")
pytest.importorskip("uvicorn")
from test_serve import SERVE, start, stop  # noqa: E402 - the same service, started and stopped the same way

pytestmark = [pytest.mark.serial, pytest.mark.slow,
              pytest.mark.skipif(chromium_path() is None, reason="Chromium is not installed (apt-get install chromium)"),
              pytest.mark.skipif(bubblewrap() is None, reason="bubblewrap is not installed")]

CHAPTER = "07-attention"
APPS = ["lab", "notebook"]
STUDENTS = {app: f"student-{app}" for app in APPS}
WRONG_ANSWER = ("def additive_scores(query, keys, W_q, W_k, v):\n"
                "    return (keys @ W_k.T + (query @ W_q.T)[:, None, :]) @ v  # tanh forgotten\n")
BUTTON_CELL = "from seqlab.submit import button\nbutton(server={server!r}, token={token!r})"


@pytest.fixture(scope="module")
def service(tmp_path_factory):
    """One free attempt per exercise, then a 600 s wait; one grader."""
    root = tmp_path_factory.mktemp("serve-browser")
    workspace = root / "workspace"
    workspace.mkdir()
    (root / "roster.csv").write_text("student\n" + "\n".join(STUDENTS.values()) + "\n")
    issued = subprocess.run([*SERVE, str(workspace), "issue-tokens", str(root / "roster.csv"), "--out",
                             str(root / "tokens.csv")], capture_output=True, text=True, timeout=120)
    assert issued.returncode == 0, issued.stderr
    tokens = {row["student"]: row["token"] for row in csv.DictReader(open(root / "tokens.csv"))}
    port = free_port()
    server = start(workspace, port, "--jobs", "1", "--free-attempts", "1")
    yield {"url": f"http://127.0.0.1:{port}", "tokens": tokens, "workspace": workspace}
    stop(server)


def student_notebook(folder, server: str, token: str):
    """The chapter with the student's (correct) answers and, at the end, the cell that shows the Submit button."""
    notebook = nbformat.read(SOLUTIONS / CHAPTER / f"{CHAPTER}.ipynb", as_version=4)
    cell = nbformat.v4.new_code_cell(BUTTON_CELL.format(server=server, token=token))
    cell.pop("id", None)
    notebook.cells.append(cell)
    folder.mkdir(parents=True)
    path = folder / f"{CHAPTER}.ipynb"
    nbformat.write(notebook, path)
    return path


def run_cell(page, cell, attempts: int = 3) -> None:
    """Put the cursor in the cell's editor and run it (Shift-Enter), as a student does; wait for its prompt.

    A front end whose kernel is still connecting can take the key and run nothing, silently (the fresh clone's run
    at 96557ec: '[ ]:' with the kernel idle, as with Run All in tests/browser.run_all_cells): run it again then, in
    place (Ctrl-Enter), since Shift-Enter has moved on to the next cell."""
    prompt = cell.locator(".jp-InputPrompt")
    ran = lambda: re.fullmatch(r"\[\d+\]:", prompt.inner_text().strip())  # noqa: E731
    for attempt in range(attempts):
        cell.locator(".jp-InputArea-editor").click()
        page.keyboard.press("Shift+Enter" if attempt == 0 else "Control+Enter")
        deadline = time.time() + 60
        while time.time() < deadline and not ran():
            if "*" not in prompt.inner_text() and time.time() > deadline - 45 and \
                    page.locator('.jp-Notebook-ExecutionIndicator[data-status="idle"]').count():
                break  # 15 s and never queued, the kernel idle: the key was dropped
            page.wait_for_timeout(250)
        if ran():
            return
    page.screenshot(path=str(BUILD / "screenshots" / "submit-cell-did-not-run.png"))
    raise AssertionError(f"the cell did not run: {prompt.inner_text()!r} (build/screenshots/submit-cell-did-not-run.png)")


def said(area, role: str, containing: str, seconds: float = 180) -> str:
    """The text of the live region with this role once it contains ``containing`` (the verdicts take a grading)."""
    region = area.get_by_role(role)
    deadline = time.time() + seconds
    while time.time() < deadline:
        if region.count() and containing in region.first.inner_text():
            return region.first.inner_text()
        time.sleep(0.25)
    shown = area.inner_text() if area.count() else "(nothing)"
    raise AssertionError(f"no {role} region saying {containing!r}; the button's output shows: {shown[:1500]}")


@pytest.mark.parametrize("app", APPS)
def test_the_submit_button_sends_the_saved_notebook_and_shows_verdicts_and_waits(app, service, tmp_path):
    student = STUDENTS[app]
    path = student_notebook(tmp_path / "work", service["url"], service["tokens"][student])
    with jupyter(app, tmp_path) as base, chromium() as browser, new_page(browser) as page:
        open_notebook(page, base, app, f"work/{path.name}")
        cells = page.locator(".jp-Notebook .jp-Cell")
        expect(cells).to_have_count(len(nbformat.read(path, as_version=4).cells), timeout=60_000)  # all rendered
        button_cell = cells.nth(cells.count() - 1)  # Shift-Enter in the last cell adds a cell after it
        run_cell(page, button_cell)
        press = button_cell.get_by_role("button", name="Submit")
        press.wait_for(timeout=60_000)
        output = button_cell.locator(".jp-OutputArea")
        said(output, "status", "Save the notebook")

        # a wrong answer typed into the editor and run, not saved: nothing is sent, and the page says why
        answer = cells.filter(has_text="def additive_scores(").first
        answer.locator(".jp-InputArea-editor").click()
        answer.locator(".cm-content").fill(WRONG_ANSWER)
        run_cell(page, answer)
        press.click()
        warning = said(output, "alert", "Not sent")
        assert "code you ran later is not in it" in warning and "def additive_scores" in warning, warning
        assert "tanh forgotten" not in path.read_text(), "the test's edit reached the file before it was saved"
        with sqlite3.connect(service["workspace"] / "service" / "submissions.db") as db:
            assert db.execute("select count(*) from submissions where student = ?", (student,)).fetchone()[0] == 0

        # saved (Ctrl-S), then pressed: the saved file goes, and its verdicts come back into the page
        answer.locator(".jp-InputArea-editor").click()
        page.keyboard.press("Control+s")
        deadline = time.time() + 30
        while "tanh forgotten" not in path.read_text() and time.time() < deadline:
            page.wait_for_timeout(250)
        assert "tanh forgotten" in path.read_text(), "Ctrl-S did not save the notebook"
        press.click()
        summary = said(output, "status", f"of {CHAPTER}:", seconds=300)
        assert re.search(rf"submission \d+ of {CHAPTER}: [\d.]+ / [\d.]+", summary), summary
        score, best = (float(x) for x in re.search(r": ([\d.]+) / ([\d.]+)", summary).groups())
        assert 0 < score < best, f"one exercise broken, the others right: {summary}"
        table = output.get_by_role("table", name="Verdicts per exercise")
        row = table.get_by_role("row").filter(has_text="additive_scores_tests")
        text = row.inner_text()
        assert "failed" in text and "the energies of the worked example" in text, text
        assert "tanh before the product with v" in text, f"the failing check's hint is not shown: {text}"
        assert re.search(r"next check of the hidden tests allowed at \d{4}-\d\d-\d\dT", text), text
        for untouched in ("attention_context_tests", "qkv_attention_tests"):  # answers that do not call additive_scores
            assert re.search(r"\bpassed\s+passed\b", table.get_by_role("row").filter(has_text=untouched).inner_text())
        assert not press.is_disabled()

        # pressed again from the keyboard within the wait: the wait is shown, nothing is sent
        press.focus()
        page.keyboard.press("Enter")
        refusal = said(output, "alert", "no attempt left")
        assert re.search(r"Try again in \d+ s", refusal), refusal
        with sqlite3.connect(service["workspace"] / "service" / "submissions.db") as db:
            assert db.execute("select count(*) from submissions where student = ?", (student,)).fetchone()[0] == 1
        shut_down_kernels(base)
