"""Submit a chapter's saved notebook to the course's submission service, and read its verdicts.

From a terminal::

    python -m seqlab.submit 07-attention.ipynb --server https://grader.example.edu --token YOUR_TOKEN

or, in the notebook, a Submit button (it posts the notebook as last SAVED, so save first)::

    import seqlab.submit
    seqlab.submit.button(server="https://grader.example.edu", token="YOUR_TOKEN")

The server and token may also come from the environment (SEQLAB_SUBMIT_SERVER, SEQLAB_SUBMIT_TOKEN; in a JupyterHub
whose instructor runs the service as a Hub service, the notebook server's JUPYTERHUB_API_TOKEN). The service
(autograder/serve.py) grades the notebook with the course's grader and answers, per exercise: the visible checks'
outcome and messages, the hidden tests' outcome (and the failing check's message where the course shows it), and
when the hidden tests may next be checked: the first attempts are free, then waits grow; an exercise that passed
has no limit. Only the Python standard library is used here.
"""

from __future__ import annotations

import argparse
import contextlib
import html
import json
import os
import re
import sys
import threading
import time
import urllib.error
import urllib.request
from pathlib import Path

from seqlab.i18n import ENGLISH, N_, _, edition_of

DESCRIPTION = N_("Submit a chapter's saved notebook to the course's submission service, and read its verdicts.")
CHAPTER_NAME = re.compile(r"\d\d-[a-z0-9-]+")


class SubmitError(Exception):
    """The service refused or could not be reached; the message says why and what to do."""

    def __init__(self, message: str, retry_after: int | None = None, status: int | None = None):
        super().__init__(message)
        self.retry_after, self.status = retry_after, status


def chapter_of(notebook: Path) -> str:
    """The course's notebooks are named after their chapter (07-attention.ipynb), as is a chapter's folder."""
    for name in (notebook.stem, notebook.resolve().parent.name):
        if CHAPTER_NAME.fullmatch(name):
            return name
    raise SubmitError(_("cannot tell the chapter from {name}: keep the notebook's own name "
                        "(e.g. 07-attention.ipynb) or pass --chapter").format(name=notebook.name))


def _request(method: str, url: str, token: str, body: bytes | None = None, timeout: float = 60) -> dict:
    request = urllib.request.Request(url, data=body, method=method, headers={
        "Authorization": f"Bearer {token}", "Content-Type": "application/x-ipynb+json", "Accept": "application/json"})
    try:
        with urllib.request.urlopen(request, timeout=timeout) as response:
            return json.loads(response.read().decode("utf-8"))
    except urllib.error.HTTPError as error:
        try:
            said = json.loads(error.read().decode("utf-8")).get("error")
        except (ValueError, AttributeError):
            said = None
        retry = error.headers.get("Retry-After")
        raise SubmitError(said or _("the service answered {code} {reason}").format(code=error.code, reason=error.reason),
                          int(retry) if retry and retry.isdigit() else None, error.code) from None
    except (urllib.error.URLError, OSError) as error:
        reason = getattr(error, "reason", error)
        raise SubmitError(_("cannot reach the submission service at {url}: {reason}").format(url=url, reason=reason)) from None
    except ValueError:
        raise SubmitError(_("the service at {url} did not answer with JSON (is the address right?)").format(url=url)) from None


def settings(server: str | None, token: str | None) -> tuple[str, str]:
    server = (server or os.environ.get("SEQLAB_SUBMIT_SERVER") or "").rstrip("/")
    # in a JupyterHub the notebook server's own token names the student to a service run by the Hub (serve.py --hub)
    token = (token or os.environ.get("SEQLAB_SUBMIT_TOKEN") or os.environ.get("JUPYTERHUB_API_TOKEN") or "").strip()
    if not server:
        raise SubmitError(_("no server: pass --server URL (or set SEQLAB_SUBMIT_SERVER); your instructor gives the address"))
    if not token:
        raise SubmitError(_("no token: pass --token (or set SEQLAB_SUBMIT_TOKEN); your instructor gives each student one"))
    return server, token


def submit(notebook: str | os.PathLike, server: str | None = None, token: str | None = None,
           chapter: str | None = None, wait: bool = True, timeout: float = 900, on_update=None) -> dict:
    """Post the saved notebook; with ``wait``, poll until it is graded and return the verdicts (a dict).

    ``on_update(reply)`` is called with each answer while it waits (queued, its position, grading)."""
    server, token = settings(server, token)
    path = Path(notebook)
    try:
        body = path.read_bytes()
    except OSError as error:
        raise SubmitError(_("cannot read {path}: {reason}").format(path=path, reason=error.strerror)) from None
    chapter = chapter or chapter_of(path)
    reply = _request("POST", f"{server}/submit/{chapter}", token, body)
    if not wait:
        return reply
    deadline = time.monotonic() + timeout
    while reply.get("status") in (None, "queued", "grading"):
        if on_update is not None:
            on_update(reply)
        if time.monotonic() > deadline:
            raise SubmitError(_("not graded within {timeout:.0f} s; see it later with GET {server}/submissions").format(
                timeout=timeout, server=server))
        time.sleep(min(5.0, max(1.0, reply.get("estimated_wait_s", 2) / 4)))
        reply = _request("GET", f"{server}/submissions/{reply['id']}", token)
    return reply


MARKS = {"passed": "✓", "failed": "✗", "withheld": "…", "not run": "–"}
# What the service says of a submission (queued, grading, graded, failed) and of an exercise's checks.
STATUSES = (N_("queued"), N_("grading"), N_("graded"), N_("failed"), N_("passed"), N_("withheld"), N_("not run"),
            N_("none"))


def status_text(status) -> str:
    """A status the service sent, in the edition's language; one this module does not know, as it came."""
    return _(status) if status in STATUSES else str(status)


def report_lines(reply: dict) -> list[str]:
    """The verdicts in plain text: a line per exercise, its messages indented below."""
    if reply.get("status") != "graded":
        # a submission that "failed" could not be graded: said in words of its own, not as a check that failed
        said = N_("submission {id} of {chapter}: failed") if reply.get("status") == "failed" else \
            N_("submission {id} of {chapter}: {outcome}")
        return [_(said).format(id=reply.get("id"), chapter=reply.get("chapter"), outcome=status_text(reply.get("status")))] + \
            [f"  {p}" for p in reply.get("problems", [])]
    score = _("score withheld") if reply.get("score") is None else f"{reply['score']:g} / {reply['max_score']:g}"
    lines = [_("submission {id} of {chapter}: {outcome}").format(id=reply["id"], chapter=reply["chapter"], outcome=score)]
    for problem in reply.get("problems", []):
        lines.append("  " + _("note: {problem}").format(problem=problem))
    for verdict in reply.get("exercises", []):
        points = "?" if verdict.get("points") is None else f"{verdict['points']:g}"
        mark = "✓" if verdict["visible"] == "passed" and verdict.get("hidden") in (None, "passed") else "✗"
        if verdict.get("hidden") == "withheld":
            mark = MARKS["withheld"]
        hidden = _("; hidden tests: {hidden}").format(hidden=status_text(verdict["hidden"])) if verdict.get("hidden") else ""
        lines.append(f"{mark} {verdict['exercise']}  {points}/{verdict['max_points']:g}  "
                     + _("visible checks: {visible}{hidden}").format(visible=status_text(verdict["visible"]), hidden=hidden))
        lines += [f"    {note}" for note in verdict_notes(verdict)]
    return lines


def verdict_notes(verdict: dict) -> list[str]:
    """What an exercise's verdict says beyond passed / failed: the failing visible checks' messages, the hidden
    check's, why a hidden verdict is not shown, and the attempts left or when the hidden tests may next be checked."""
    notes = list(verdict.get("visible_messages", [])) if verdict["visible"] != "passed" else []
    if verdict.get("hidden_message"):
        notes.append(_("hidden check: {message}").format(message=verdict["hidden_message"]))
    if verdict.get("hidden_note"):
        notes.append(f"({verdict['hidden_note']})")
    if verdict.get("next_allowed"):
        notes.append(_("next check of the hidden tests allowed at {time}").format(time=verdict["next_allowed"]))
    elif verdict.get("attempts_left") is not None:
        notes.append(_("attempts left now: {count}").format(count=verdict["attempts_left"]))
    return notes


def report_html(reply: dict) -> str:
    """The verdicts as the button shows them: a line that a screen reader announces (the score, or why there is
    none), then a table with a header row, a row per exercise and its messages in the last column."""
    lines = report_lines(reply)
    if reply.get("status") != "graded":
        return _announce(html.escape(lines[0]), "".join(f"<div>{html.escape(line.strip())}</div>" for line in lines[1:]))
    rows = []
    for verdict in reply.get("exercises", []):
        points = "?" if verdict.get("points") is None else f"{verdict['points']:g}"
        cells = [f"{points} / {verdict['max_points']:g}", status_text(verdict["visible"]),
                 status_text(verdict.get("hidden") or "none")]
        rows.append(f"<tr><th scope=\"row\">{html.escape(verdict['exercise'])}</th>"
                    + "".join(f"<td>{html.escape(str(c))}</td>" for c in cells)
                    + "<td>" + "<br>".join(html.escape(n) for n in verdict_notes(verdict)) + "</td></tr>")
    problems = "".join(f"<div>{html.escape(_('note: {problem}').format(problem=p))}</div>" for p in reply.get("problems", []))
    headers = "".join(f'<th scope="col">{html.escape(_(header))}</th>'
                      for header in (N_("exercise"), N_("score"), N_("visible checks"), N_("hidden tests"), N_("messages")))
    table = (f"<table><caption>{html.escape(_('Verdicts per exercise'))}</caption><thead><tr>{headers}</tr></thead>"
             f"<tbody>{''.join(rows)}</tbody></table>")
    return _announce(html.escape(lines[0]), problems + table)


def _announce(summary: str, details: str = "", urgent: bool = False) -> str:
    """The summary in a live region, so that a screen reader reads it when it changes without the student moving
    there (role=alert for what stopped the submission, role=status otherwise); the details follow it."""
    role = "alert" if urgent else "status"
    return f'<div role="{role}" aria-live="{"assertive" if urgent else "polite"}"><b>{summary}</b></div>{details}'


class _RunLog:
    """When the kernel ran which code: what the saved file lacks, if it was run after the file was saved, is an
    edit the student has not saved (the kernel cannot see the editor; unsaved edits never run go unnoticed)."""

    def __init__(self):
        self.runs: list[tuple[float, str]] = []

    def record(self, info) -> None:
        source = getattr(info, "raw_cell", "") or ""
        if source.strip():
            self.runs.append((time.time(), source))

    def unsaved(self, path: Path) -> list[tuple[float, str]]:
        try:
            import nbformat

            saved_at = path.stat().st_mtime
            cells = nbformat.read(path, as_version=4).cells
        except Exception:  # noqa: BLE001 - an unreadable file is the service's to refuse, with its reason
            return []
        sources = {c.source.strip() for c in cells if c.cell_type == "code"}
        return [(at, source) for at, source in self.runs if at > saved_at and source.strip() not in sources]


_run_log: _RunLog | None = None


def _watch_runs() -> _RunLog | None:
    global _run_log
    if _run_log is None:
        try:
            from IPython import get_ipython
        except ImportError:
            return None
        shell = get_ipython()
        if shell is None:
            return None
        _run_log = _RunLog()
        shell.events.register("pre_run_cell", _run_log.record)
    return _run_log


def _saved_notebook(chapter: str | None) -> Path:
    """The notebook this kernel runs: Jupyter Server names it in JPY_SESSION_NAME; else the chapter's in the folder."""
    session = os.environ.get("JPY_SESSION_NAME")
    if session and session.endswith(".ipynb") and Path(session).is_file():
        return Path(session)
    found = sorted(Path.cwd().glob(f"{chapter}.ipynb" if chapter else "[0-9][0-9]-*.ipynb"))
    if len(found) == 1:
        return found[0]
    raise SubmitError(_("cannot tell which notebook to submit: pass notebook='07-attention.ipynb' to button()"))


def button(server: str | None = None, token: str | None = None, notebook: str | os.PathLike | None = None,
           chapter: str | None = None):
    """A Submit button: posts the notebook as last saved, then shows the verdicts and the next allowed times.

    It is a plain button (a keyboard's Enter or Space presses it); what it says next appears in a live region that
    screen readers announce. Code run after the last save that the saved file lacks is named before anything is
    sent: save and press again, or press again to send the saved file as it is."""
    import ipywidgets as widgets

    press = widgets.Button(description=_("Submit"), icon="upload", button_style="primary",
                           tooltip=_("Send the notebook as last saved (save it first) to be graded"))
    shown = widgets.HTML(value=_announce(_("Save the notebook (Ctrl-S), then press Submit: the saved file is sent.")))
    runs = _watch_runs()
    warned: set[str] = set()

    def show(text: str) -> None:
        shown.value = text

    def work() -> None:
        try:
            path = Path(notebook) if notebook else _saved_notebook(chapter)
            saved = time.strftime("%H:%M:%S", time.localtime(path.stat().st_mtime))
            unsaved = runs.unsaved(path) if runs else []
            if unsaved and {source for _, source in unsaved} != warned:  # said once; a second press sends
                warned.clear()
                warned.update(source for _, source in unsaved)
                first = unsaved[0][1].strip().splitlines()[0][:80]
                show(_announce(
                    _("Not sent: {name} was saved at {saved}, and code you ran later is not in it "
                      "(first: “{first}”, run at {ran}).").format(
                        name=path.name, saved=saved, first=html.escape(first),
                        ran=time.strftime('%H:%M:%S', time.localtime(unsaved[0][0]))),
                    "<div>" + _("Save the notebook (Ctrl-S), then press Submit. To send the saved file as it is, press "
                                "Submit again.") + "</div>", urgent=True))
                return
            warned.clear()
            show(_announce(_("Sending {name} as saved at {saved}…").format(name=html.escape(path.name), saved=saved)))

            def waiting(reply: dict) -> None:
                where = _(", position {position}").format(position=reply["position"]) if reply.get("position") else ""
                show(_announce(_("Submission {id}: {status}{where}; about {wait} s…").format(
                    id=reply.get("id"), status=html.escape(status_text(reply.get("status"))), where=where,
                    wait=reply.get("estimated_wait_s", "?"))))

            reply = submit(path, server, token, chapter, on_update=waiting)
            show(report_html(reply))
        except SubmitError as error:
            retry = _(" Try again in {seconds} s.").format(seconds=error.retry_after) if error.retry_after else ""
            show(_announce(_("Not submitted: {reason}").format(reason=html.escape(str(error))) + retry, urgent=True))
        except Exception as error:  # noqa: BLE001 - a button must always say what happened
            show(_announce(_("Not submitted: {reason}").format(
                reason=f"{html.escape(type(error).__name__)}: {html.escape(str(error))}"), urgent=True))
        finally:
            press.disabled = False
            press.description = _("Submit")

    def clicked(_button):
        press.disabled = True
        press.description = _("Submitting…")
        threading.Thread(target=work, daemon=True).start()

    press.on_click(clicked)
    box = widgets.VBox([press, shown])
    box.submit_button, box.verdicts = press, shown  # for tests and for a course cell that wants to press it
    return box


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m seqlab.submit", description=_(DESCRIPTION))
    parser.add_argument("notebook", type=Path, help=_("the saved notebook, e.g. 07-attention.ipynb"))
    parser.add_argument("--server", help=_("the service's address (or SEQLAB_SUBMIT_SERVER)"))
    parser.add_argument("--token", help=_("your token (or SEQLAB_SUBMIT_TOKEN)"))
    parser.add_argument("--chapter", help=_("the chapter (default: from the notebook's name)"))
    parser.add_argument("--no-wait", action="store_true", help=_("submit and return; read the verdicts later"))
    parser.add_argument("--json", action="store_true", help=_("print the service's answer as JSON"))
    args = parser.parse_args(argv)
    with _speaking_the_edition_of(args.notebook):
        return _submit_and_report(args)


@contextlib.contextmanager
def _speaking_the_edition_of(notebook: Path):
    """A terminal has no running notebook to tell seqlab its edition: the notebook submitted tells it (a notebook of
    notebooks/zh/ is Chinese), unless SEQLAB_LANGUAGE chooses."""
    chosen = os.environ.get("SEQLAB_LANGUAGE")
    edition = edition_of(notebook)
    if (chosen or "").strip() or edition == ENGLISH:
        yield
        return
    os.environ["SEQLAB_LANGUAGE"] = edition
    try:
        yield
    finally:
        if chosen is None:
            del os.environ["SEQLAB_LANGUAGE"]
        else:
            os.environ["SEQLAB_LANGUAGE"] = chosen


def _submit_and_report(args: argparse.Namespace) -> int:
    def progress(reply: dict) -> None:
        if not args.json:
            print(_("submission {id}: {status}").format(id=reply.get("id"), status=status_text(reply.get("status")))
                  + (_(", position {position}").format(position=reply["position"]) if reply.get("position") else ""),
                  file=sys.stderr)

    try:
        reply = submit(args.notebook, args.server, args.token, args.chapter, wait=not args.no_wait, on_update=progress)
    except SubmitError as error:
        retry = _(" (try again in {seconds} s)").format(seconds=error.retry_after) if error.retry_after else ""
        print(f"seqlab.submit: {error}{retry}", file=sys.stderr)
        return 3 if error.retry_after else 1
    print(json.dumps(reply, indent=1, ensure_ascii=False) if args.json else "\n".join(report_lines(reply)))
    return 0


if __name__ == "__main__":
    sys.exit(main())
