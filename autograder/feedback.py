"""Per-student feedback HTML with no hidden test in it, made by the grading job itself.

The same nbgrader feedback template and the same cleaning as `nbgrader generate_feedback`
with this course's configuration: ClearHiddenTests removes the hidden tests' source,
RedactTracebacks keeps an error's type and message but not the line that raised, and
HideTestOutputs drops what graded test cells with hidden tests printed. On top of that, from
what the trusted side reported: a test that failed in its hidden part shows only "a hidden
test failed" (never its message, inputs or traceback), and what the student's cells printed
after the first graded test is left out (the student's code has seen hidden inputs by then).
`sanitize` (applied to the autograded notebook before it is written, so to feedback too) keeps no
script, event handler or active content from what the student wrote or what ran: outputs lose
JavaScript, SVG and widget views, and their HTML passes an allow-list; a markdown cell that is not
the course's own is rendered and cleaned the same way. Scores come from the job's result, so
feedback needs no gradebook and is made in parallel by the workers; after manual grading,
`nbgrader generate_feedback` remakes it.
"""

from __future__ import annotations

import copy
import functools
import html
import os
import re

import bleach
from nbconvert.exporters import HTMLExporter, TemplateExporter
from nbconvert.filters.highlight import Highlight2HTML
from nbconvert.filters.widgetsdatatypefilter import WidgetsDataTypeFilter
from nbconvert.filters.markdown import markdown2html_mistune
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
STUDENT_ERROR = "raised by your code after hidden tests had called it (its message is not shown in feedback)"
MESSAGE_CAP = 200  # characters of an error's message, once hidden tests have run


def capped(text) -> str:
    text = text if isinstance(text, str) else "".join(text)
    return text if len(text) <= MESSAGE_CAP else text[:MESSAGE_CAP] + " [cut]"


def from_trusted_side(nb: NotebookNode, cells: dict) -> None:
    """Hidden failures without their message; the student's outputs after the first graded test left out; once a
    test cell with hidden tests has run, an error keeps its type and at most MESSAGE_CAP characters of its message,
    and one that the student's code raised keeps only its type (its message may carry a hidden test's inputs)."""
    seen_test = hidden_ran = False
    for cell in nb.cells:
        if cell.cell_type != "code":
            continue
        meta = cell.metadata.get("nbgrader", {})
        if utils.is_grade(cell) and not utils.is_solution(cell):
            seen_test = True
            reported = cells.get(meta.get("grade_id"), {})
            if reported.get("hidden_failure"):
                cell.outputs = [new_output("error", ename="HiddenTestFailed", evalue=HIDDEN_FAILED,
                                           traceback=[f"HiddenTestFailed: {HIDDEN_FAILED}"])]
            elif hidden_ran:
                for output in cell.get("outputs", []):
                    if output.get("output_type") == "error":
                        message = STUDENT_ERROR if reported.get("student_error") else capped(output.get("evalue", ""))
                        output.evalue, output.traceback = message, [f"{output.get('ename', 'Error')}: {message}"]
                    elif output.get("output_type") == "stream":  # a test that prints what the student's code returned
                        output.text = capped(output.get("text", ""))
            hidden_ran = hidden_ran or "BEGIN HIDDEN TESTS" in cell.source
        elif seen_test and cell.get("outputs"):
            cell.outputs = [new_output("stream", name="stdout", text=LEFT_OUT + "\n")]


def plain_feedback(entry: dict, student: str, chapter: str, notebook: str) -> str:
    """A page with the scores and the grader's notes, for when the notebook itself cannot be rendered."""
    rows = "".join(f"<tr><td>{html.escape(str(gid))}</td><td>{c['auto_score']:g} / {c['max_score']:g}</td></tr>"
                   for gid, c in entry.get("cells", {}).items() if c.get("test"))
    notes = "".join(f"<li>{html.escape(str(n))}</li>" for n in entry.get("problems", []) + entry.get("repairs", []))
    return (f"<html><body><h1>{html.escape(notebook)} ({html.escape(chapter)}) for {html.escape(student)}</h1>"
            f"<table>{rows}</table><ul>{notes}</ul></body></html>")


# Outputs a browser shows as they are, with nothing active in them; every other kind (JavaScript, SVG, widget views,
# anything unknown) is dropped, and HTML and markdown pass the allow-list below.
SAFE_OUTPUTS = {"text/plain", "text/latex", "image/png", "image/jpeg", "image/gif", "application/json"}
CLEANED_OUTPUTS = {"text/html", "text/markdown"}
SAFE_TAGS = {"a", "abbr", "b", "blockquote", "br", "code", "dd", "del", "details", "div", "dl", "dt", "em", "h1", "h2",
             "h3", "h4", "h5", "h6", "hr", "i", "img", "kbd", "li", "ol", "p", "pre", "s", "span", "strong", "sub",
             "summary", "sup", "table", "tbody", "td", "tfoot", "th", "thead", "tr", "u", "ul"}
SAFE_ATTRIBUTES = {"a": ["href", "title"], "abbr": ["title"], "img": ["src", "alt", "title", "width", "height"],
                   "td": ["colspan", "rowspan", "align"], "th": ["colspan", "rowspan", "align"], "span": ["class"],
                   "div": ["class"], "code": ["class"], "table": ["class"]}
SAFE_PROTOCOLS = {"http", "https", "mailto", "data"}  # bleach allows data: only as an image's inline picture


def clean_html(text: str) -> str:
    """HTML with only the allow-list's tags and attributes; anything else is shown as text, never run."""
    def allowed(tag: str, name: str, value: str) -> bool:
        if name == "src" and value.strip().lower().startswith("data:"):
            return tag == "img" and value.strip().lower().startswith(("data:image/png", "data:image/jpeg", "data:image/gif"))
        return name in SAFE_ATTRIBUTES.get(tag, [])

    return bleach.clean(text, tags=SAFE_TAGS, attributes=allowed, protocols=SAFE_PROTOCOLS, strip=False, strip_comments=True)


def sanitize(nb: NotebookNode, course_markdown: frozenset[str] = frozenset()) -> NotebookNode:
    """Nothing active from the student's side survives (in place; returns ``nb``): see the module's notes.

    ``course_markdown``: the sources of the chapter's own markdown cells, which are shown as they are."""
    for cell in nb.cells:
        if cell.cell_type == "markdown" and cell.source not in course_markdown:
            cell.source = clean_html(markdown2html_mistune(cell.source))
            cell.pop("attachments", None)
        elif cell.cell_type == "raw":
            cell.source = clean_html(cell.source)
        elif cell.cell_type == "code":
            for output in cell.get("outputs", []):
                if output.get("output_type") not in ("display_data", "execute_result"):
                    continue
                data = output.get("data", {})
                for kind in list(data):
                    if kind in CLEANED_OUTPUTS:
                        text = data[kind] if isinstance(data[kind], str) else "".join(data[kind])
                        data[kind] = clean_html(markdown2html_mistune(text) if kind == "text/markdown" else text)
                    elif kind not in SAFE_OUTPUTS:
                        del data[kind]
                if not data:
                    data["text/plain"] = "[an output that could run code in a browser was left out]"
    return nb


@functools.lru_cache(maxsize=16)
def course_markdown(source: str) -> frozenset[str]:
    """The markdown cells of a chapter's source notebook (a path), as the course wrote them."""
    import nbformat

    return frozenset(c.source for c in nbformat.read(source, as_version=4).cells if c.cell_type == "markdown")


class RememberedHighlight(Highlight2HTML):
    """Highlight2HTML that keeps what it made: a chapter's given and test cells read the same in every submission,
    and pygments took 60% of a feedback page's 0.2 s."""

    MOST = 4096  # cells remembered; then it starts again

    def __init__(self, **kwargs):
        super().__init__(**kwargs)
        self.made: dict[tuple, str] = {}

    def __call__(self, source, language=None, metadata=None):
        key = (source, language, (metadata or {}).get("magics_language"))
        page = self.made.get(key)
        if page is None:
            if len(self.made) >= self.MOST:
                self.made.clear()
            page = self.made[key] = super().__call__(source, language, metadata)
        return page


class FeedbackExporter(HTMLExporter):
    """nbconvert's HTML exporter without its accessibility pass over the finished page, which parses and writes the
    whole page again with BeautifulSoup (2 of a stub submission's 6 s of grading in chapter 8) to give images alt
    text and JupyterLab-template cells a tabindex. nbgrader's feedback template is the classic one, without such
    cells; images get their alt text here."""

    def __init__(self, **kwargs):
        super().__init__(**kwargs)
        self.highlighters: dict[str, RememberedHighlight] = {}  # one per lexer, kept with the exporter

    def from_notebook_node(self, nb, resources=None, **kw):
        language = nb.metadata.get("language_info", {})
        lexer = language.get("pygments_lexer", language.get("name"))
        resources = self._init_resources(resources)
        if lexer not in self.highlighters:
            self.highlighters[lexer] = RememberedHighlight(pygments_lexer=lexer, parent=self)
        self.register_filter("highlight_code", self.filters.get("highlight_code", self.highlighters[lexer]))
        self.register_filter("filter_data_type", WidgetsDataTypeFilter(notebook_metadata=self._nb_metadata, parent=self,
                                                                       resources=resources))
        page, resources = TemplateExporter.from_notebook_node(self, nb, resources, **kw)
        return re.sub(r"<img\b(?![^>]*\balt=)", '<img alt="a figure of the notebook"', page), resources


@functools.lru_cache(maxsize=1)
def exporter() -> HTMLExporter:
    """One per worker process: its Jinja environment compiles the templates once, not for every notebook."""
    c = Config()
    c.HTMLExporter.template_name = "feedback"
    c.HTMLExporter.extra_template_basedirs = [os.path.join(NBGRADER, "server_extensions", "formgrader", "templates")]
    c.HTMLExporter.extra_template_paths = [os.path.join(NBGRADER, "server_extensions", "formgrader", "static",
                                                        "node_modules", "bootstrap", "dist", "css")]
    return FeedbackExporter(config=c)


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
