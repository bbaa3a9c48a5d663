"""Per-student feedback HTML with no hidden test in it, made by the grading job itself.

The same nbgrader feedback template and the same cleaning as `nbgrader generate_feedback`
with this course's configuration: ClearHiddenTests removes the hidden tests' source,
RedactTracebacks keeps an error's type and message but not the line that raised, and
HideTestOutputs drops what graded test cells with hidden tests printed. On top of that, from
what the trusted side reported: a test that failed in its hidden part shows only "a hidden
test failed" (never its message, inputs or traceback), and what the student's cells printed
after the first graded test is left out (the student's code has seen hidden inputs by then).
Scores come from the job's result, so feedback needs no gradebook and is made in parallel by
the workers; after manual grading, `nbgrader generate_feedback` remakes it.
"""

from __future__ import annotations

import copy
import functools
import html
import os

from nbconvert.exporters import HTMLExporter
from nbformat import NotebookNode
from nbformat.v4 import new_markdown_cell, new_output
from nbgrader import utils
from nbgrader.preprocessors import ClearHiddenTests, NbGraderPreprocessor
from traitlets.config import Config

from course_preprocessors import RedactTracebacks

NBGRADER = os.path.dirname(utils.__file__)


class HideTestOutputs(NbGraderPreprocessor):
    """In graded test cells that hold hidden tests, keep only the error (type and message)."""

    def preprocess_cell(self, cell, resources, cell_index):
        if cell.cell_type == "code" and utils.is_grade(cell) and "BEGIN HIDDEN TESTS" in cell.source:
            cell.outputs = [o for o in cell.get("outputs", []) if o.output_type == "error"]
        return cell, resources


HIDDEN_FAILED = "a hidden test failed (hidden tests and their messages are not shown in feedback)"
LEFT_OUT = "[left out of feedback: what the notebook printed after the first graded test]"


def from_trusted_side(nb: NotebookNode, cells: dict) -> None:
    """Hidden failures without their message; the student's outputs after the first graded test left out."""
    seen_test = False
    for cell in nb.cells:
        if cell.cell_type != "code":
            continue
        meta = cell.metadata.get("nbgrader", {})
        if utils.is_grade(cell) and not utils.is_solution(cell):
            seen_test = True
            if cells.get(meta.get("grade_id"), {}).get("hidden_failure"):
                cell.outputs = [new_output("error", ename="HiddenTestFailed", evalue=HIDDEN_FAILED,
                                           traceback=[f"HiddenTestFailed: {HIDDEN_FAILED}"])]
        elif seen_test and cell.get("outputs"):
            cell.outputs = [new_output("stream", name="stdout", text=LEFT_OUT + "\n")]


def plain_feedback(entry: dict, student: str, chapter: str, notebook: str) -> str:
    """A page with the scores and the grader's notes, for when the notebook itself cannot be rendered."""
    rows = "".join(f"<tr><td>{html.escape(str(gid))}</td><td>{c['auto_score']:g} / {c['max_score']:g}</td></tr>"
                   for gid, c in entry.get("cells", {}).items() if c.get("test"))
    notes = "".join(f"<li>{html.escape(str(n))}</li>" for n in entry.get("problems", []) + entry.get("repairs", []))
    return (f"<html><body><h1>{html.escape(notebook)} ({html.escape(chapter)}) for {html.escape(student)}</h1>"
            f"<table>{rows}</table><ul>{notes}</ul></body></html>")


@functools.lru_cache(maxsize=1)
def exporter() -> HTMLExporter:
    """One per worker process: its Jinja environment compiles the templates once, not for every notebook."""
    c = Config()
    c.HTMLExporter.template_name = "feedback"
    c.HTMLExporter.extra_template_basedirs = [os.path.join(NBGRADER, "server_extensions", "formgrader", "templates")]
    c.HTMLExporter.extra_template_paths = [os.path.join(NBGRADER, "server_extensions", "formgrader", "static",
                                                        "node_modules", "bootstrap", "dist", "css")]
    return HTMLExporter(config=c)


def feedback_html(nb: NotebookNode, entry: dict, student: str, chapter: str, notebook: str) -> str:
    nb = copy.deepcopy(nb)
    cells = entry.get("cells", {})
    for cell in nb.cells:
        meta = cell.metadata.get("nbgrader", {})
        if utils.is_grade(cell) and meta.get("grade_id") in cells:
            meta["score"] = cells[meta["grade_id"]]["auto_score"]
            meta["points"] = cells[meta["grade_id"]]["max_score"]
        if utils.is_solution(cell) or utils.is_grade(cell):
            meta.setdefault("comment", None)
    from_trusted_side(nb, cells)
    notes = entry.get("problems", []) + entry.get("repairs", [])
    if notes:
        nb.cells.insert(0, new_markdown_cell("**The grader noted:**\n\n" + "\n".join(f"- {n}" for n in notes)))
    from jupyter_core.paths import jupyter_config_dir

    resources = {"config_dir": jupyter_config_dir(), "nbgrader": {"student": student, "assignment": chapter, "notebook": notebook,
                              "score": sum(c["auto_score"] or 0 for c in cells.values()),
                              "max_score": sum(c["max_score"] for c in cells.values()), "late_penalty": 0}}
    for pre in (ClearHiddenTests(), RedactTracebacks(), HideTestOutputs()):
        nb, resources = pre.preprocess(nb, resources)
    body, _ = exporter().from_notebook_node(nb, resources=resources)
    return body
