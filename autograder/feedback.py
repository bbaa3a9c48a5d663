"""Per-student feedback HTML with no hidden test in it, made by the grading job itself.

The same nbgrader feedback template and the same cleaning as `nbgrader generate_feedback`
with this course's configuration: ClearHiddenTests removes the hidden tests' source,
RedactTracebacks keeps an error's type and message but not the line that raised, and
HideTestOutputs drops what graded test cells with hidden tests printed. On top of that, from
what the trusted side reported: a test that failed in its hidden part shows only "a hidden
test failed" (never its message, inputs or traceback), and what the student's cells printed
after the first graded test is left out (the student's code has seen hidden inputs by then).
`sanitize` (applied to the autograded notebook before it is written, so to feedback too) keeps no
script, event handler or active content from what the student wrote or what ran, by rebuilding every
cell and output from an allow-list: outputs lose JavaScript, SVG and widget views, their HTML passes
an allow-list (no class, no data: or javascript: link) and their metadata keeps only an image's size
(positive numbers) and flags; cells keep only nbgrader's checked fields and tags; the notebook keeps
only its kernel's and language's names. A markdown cell that is not the course's own is rendered
once, cleaned and kept as a raw HTML cell, so that no markdown pass runs over the cleaned HTML again.
Long cells are cut and shown without colours, and a page not made in FEEDBACK_SECONDS is a plain one.
A page is in the language of the student's notebook edition (its metadata's "language", which sanitize keeps when
it is one the course has, EDITIONS): the Chinese edition's page has nbgrader's headings, the verdicts, the notes and
the term policy's penalty and visibility lines in Chinese (PAGE_WORDS, POLICY_SENTENCES), and the chapter's Chinese
markdown (i18n/zh/<chapter>.po) counts as the course's own.
Scores come from the job's result, so
feedback needs no gradebook and is made in parallel by the workers; after manual grading,
`nbgrader generate_feedback` remakes it.
"""

from __future__ import annotations

import contextlib
import copy
import dataclasses
import functools
import html
import os
import re
import signal
import threading
import time

import bleach
from nbconvert.exporters import HTMLExporter, TemplateExporter
from nbconvert.filters.ansi import ansi2html
from nbconvert.filters.highlight import Highlight2HTML
from nbconvert.filters.widgetsdatatypefilter import WidgetsDataTypeFilter
from nbconvert.filters.markdown import markdown2html_mistune
import nbformat
from nbformat import NotebookNode
from nbformat.v4 import new_code_cell, new_markdown_cell, new_output, new_raw_cell
from nbgrader import utils
from nbgrader.preprocessors import ClearHiddenTests, NbGraderPreprocessor
from traitlets.config import Config

from course_preprocessors import RedactTracebacks
from mathml import markdown_with_mathml, without_mathjax

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


def capped(text, limit: int = MESSAGE_CAP) -> str:
    text = text if isinstance(text, str) else "".join(text)
    return text if len(text) <= limit else text[:limit] + " [cut]"


def from_trusted_side(nb: NotebookNode, cells: dict, language: str = "en") -> None:
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
                said = words(language)[HIDDEN_FAILED]
                cell.outputs = [new_output("error", ename="HiddenTestFailed", evalue=said,
                                           traceback=[f"HiddenTestFailed: {said}"])]
            elif hidden_ran:
                for output in cell.get("outputs", []):
                    if output.get("output_type") == "error":
                        message = words(language)[STUDENT_ERROR] if reported.get("student_error") \
                            else capped(output.get("evalue", ""))
                        output.evalue, output.traceback = message, [f"{output.get('ename', 'Error')}: {message}"]
                    elif output.get("output_type") == "stream":  # a test that prints what the student's code returned
                        output.text = capped(output.get("text", ""))
            hidden_ran = hidden_ran or "BEGIN HIDDEN TESTS" in cell.source
        elif seen_test and cell.get("outputs"):
            cell.outputs = [new_output("stream", name="stdout", text=words(language)[LEFT_OUT] + "\n")]


def term_notes(term: "TermView", held: int, language: str = "en") -> list[str]:
    """The policy's lines at the top of a page: the penalty and why, and which scores wait for the due date."""
    if language == "zh":
        return chinese_term_notes(term, held)
    notes = []
    if term.late_penalty > 0 or term.penalty_reason:
        notes.append(f"Late submission: {term.penalty_reason} (-{term.late_penalty:g} points on this notebook)")
    if held:
        notes.append(f"Before the due date this page shows the visible checks only: {term.note}. The score of "
                     f"{held} test cell{'s' if held != 1 else ''} with hidden tests is not counted above until then.")
    return notes


def plain_feedback(entry: dict, student: str, chapter: str, notebook: str, term: "TermView | None" = None,
                   language: str = "en") -> str:
    """A page with the scores and the grader's notes, for when the notebook itself cannot be rendered. Before the due
    date (``term.hidden_verdicts`` false) a test cell with hidden tests shows no score."""
    term = term or TermView()
    held = set() if term.hidden_verdicts else {gid for gid, c in entry.get("cells", {}).items() if c.get("test") and c.get("hidden", True)}
    rows = "".join(f"<tr><td>{html.escape(str(gid))}</td><td>{c['auto_score']:g} / {c['max_score']:g}</td></tr>"
                   if gid not in held else f"<tr><td>{html.escape(str(gid))}</td><td>{html.escape(policy_in(term.note, language))}</td></tr>"
                   for gid, c in entry.get("cells", {}).items() if c.get("test"))
    notes = "".join(f"<li>{html.escape(str(n))}</li>"
                    for n in term_notes(term, len(held), language) + entry.get("problems", []) + entry.get("repairs", []))
    heading = words(language)["{notebook} ({chapter}) for {student}"].format(
        notebook=html.escape(notebook), chapter=html.escape(chapter), student=html.escape(student))
    return (f"<html{' lang=' + chr(34) + HTML_LANG[language] + chr(34) if language in HTML_LANG else ''}><body><h1>{heading}</h1>"
            f"<table>{rows}</table><ul>{notes}</ul></body></html>")


# ---- the page in the language of the student's edition ---------------------------------------------------------

EDITION_KEY = "language"  # the notebook metadata that names its edition (autograder/i18n.py writes "zh")
EDITIONS = {"zh"}  # the editions a page can be written in besides English
HTML_LANG = {"zh": "zh-Hans"}
# What this module writes on a page, by its English. A key missing from a language is a KeyError in the tests.
PAGE_WORDS = {
    "zh": {
        "a hidden test failed (hidden tests and their messages are not shown in feedback)":
            "一个隐藏测试未通过（反馈中不显示隐藏测试及其信息）",
        "[left out of feedback: what the notebook printed after the first graded test]":
            "[反馈中略去：第一个评分测试之后 notebook 打印的内容]",
        "raised by your code after hidden tests had called it (its message is not shown in feedback)":
            "由你的代码在隐藏测试调用它之后抛出（反馈中不显示其信息）",
        "visible checks passed; {note}": "可见检查已通过；{note}",
        "The grader noted:": "评分程序的说明：",
        "a figure of the notebook": "notebook 中的一幅图",
        "{notebook} ({chapter}) for {student}": "{notebook}（{chapter}），学生 {student}",
        "Late submission: {reason} (-{points} points on this notebook)": "迟交：{reason}（本 notebook 扣 {points} 分）",
        "Before the due date this page shows the visible checks only: {note}. The score of {held} test cell{s} with "
        "hidden tests is not counted above until then.":
            "截止日期之前，本页只显示可见检查的结果：{note}。含隐藏测试的 {held} 个测试单元格的得分在那之前不计入上面的总分。",
    },
}
# nbgrader's feedback template (formgrader/templates/feedback/index.html.j2) writes these; each pattern is anchored on
# the template's own markup (a class or a heading the student's cleaned outputs cannot carry).
TEMPLATE_WORDS = {
    "zh": [
        (r"<html>", '<html lang="zh-Hans">'),
        (r"(<h4>[^<]*) \(Score: ([^)<]*)\)</h4>", r"\1（得分：\2）</h4>"),
        (r'(<li><a href="#[^"]*">)Test cell</a> \(Score: ([^)<]*)\)</li>', r"\1测试单元格</a>（得分：\2）</li>"),
        (r'(<li><a href="#[^"]*">)Coding free-response</a> \(Score: ([^)<]*)\)</li>', r"\1编程简答</a>（得分：\2）</li>"),
        (r'(<li><a href="#[^"]*">)Written response</a> \(Score: ([^)<]*)\)</li>', r"\1书面回答</a>（得分：\2）</li>"),
        (r'(<li><a href="#[^"]*">)Task</a> \(Score: ([^)<]*)\)</li>', r"\1任务</a>（得分：\2）</li>"),
        (r'(<li><a href="#comment-[^"]*">)Comment</a></li>', r"\1评语</a></li>"),
        (r'<li class="late-penalty">Late submission penalty \(Score: ([^)<]*)\)</li>',
         r'<li class="late-penalty">迟交扣分（得分：\1）</li>'),
        (r'<span class="pull-right">(\s*)Score: ([^<]*?) <a href="#top">\(Top\)</a>',
         r'<span class="pull-right">\1得分：\2 <a href="#top">（回到顶部）</a>'),
        (r'<span class="pull-right"><a href="#top">\(Top\)</a></span>', r'<span class="pull-right"><a href="#top">（回到顶部）</a></span>'),
        (r"<span class=\"nbgrader-label\">Student's answer</span>", '<span class="nbgrader-label">学生的答案</span>'),
        (r"<span class=\"nbgrader-label\">Student's task</span>", '<span class="nbgrader-label">学生的任务</span>'),
        (r'<span class="nbgrader-label">Grade cell: <code>', '<span class="nbgrader-label">评分单元格：<code>'),
        (r'<span class="nbgrader-label">Task: <code>', '<span class="nbgrader-label">任务：<code>'),
        (r"<b>Comments:</b>", "<b>评语：</b>"),
    ],
}
# The sentences autograder/policy.py writes (Penalty.reason, Policy.visibility_note), as patterns, in Chinese. A
# sentence none of them reads stays English on a Chinese page (tests/test_i18n_feedback.py covers every form).
STAMP = r"\d{4}-\d\d-\d\d \d\d:\d\d UTC"
POLICY_SENTENCES = {
    "zh": [
        (rf"^submitted (?P<submitted>{STAMP}), after the last accepted time (?P<last>{STAMP}) \((?P<whose>your extended due date"
         rf"|the due date) (?P<due>{STAMP}) \+ (?P<days>[\d.]+) days?\): not accepted, 0 points$",
         "提交于 {submitted}，晚于最后接受时间 {last}（{whose} {due} 加 {days} 天）：不予接受，0 分"),
        (rf"^submitted (?P<submitted>{STAMP}), (?P<n>\d+) started days? after (?P<whose>your extended due date|the due date) "
         rf"(?P<due>{STAMP}): (?P<percent>[\d.]+)% off(?P<cap> \(the cap\))? at (?P<per_day>[\d.]+)% per day$",
         "提交于 {submitted}，在{whose} {due} 之后的第 {n} 天内（不足一天按一天计）：扣 {percent}%{cap}，每天 {per_day}%"),
        (r"^the LMS marked it late and the export gives no submission time; charged as 1 started day: (?P<percent>[\d.]+)% off"
         r"(?P<cap> \(the cap\))? at (?P<per_day>[\d.]+)% per day$",
         "教学平台标记为迟交，导出的数据里没有提交时间；按迟交 1 天计：扣 {percent}%{cap}，每天 {per_day}%"),
        (r"^the hidden tests' verdicts are not shown in feedback in this course$", "本课程的反馈中不显示隐藏测试的结果"),
        (rf"^the hidden tests' verdicts are shown after the due date \((?P<due>{STAMP})\)$", "隐藏测试的结果在截止日期（{due}）之后显示"),
    ],
}
POLICY_WORDS = {"zh": {"your extended due date": "你延期后的截止日期", "the due date": "截止日期", " (the cap)": "（已达上限）"}}


def words(language: str) -> dict[str, str]:
    """This module's page texts in ``language`` (English: the texts themselves)."""
    table = PAGE_WORDS.get(language)
    if table is None:
        return _EnglishWords()
    return table


class _EnglishWords(dict):
    def __missing__(self, key: str) -> str:
        return key


def policy_in(sentence: str, language: str) -> str:
    """A sentence of autograder/policy.py in ``language``; one it has no pattern for stays as it is."""
    for pattern, template in POLICY_SENTENCES.get(language, []):
        found = re.match(pattern, sentence)
        if found:
            parts = {name: POLICY_WORDS[language].get(value, value) if value else "" for name, value in found.groupdict().items()}
            return template.format(**parts)
    return sentence


def chinese_term_notes(term: "TermView", held: int) -> list[str]:
    said, notes = words("zh"), []
    if term.late_penalty > 0 or term.penalty_reason:
        notes.append(said["Late submission: {reason} (-{points} points on this notebook)"].format(
            reason=policy_in(term.penalty_reason, "zh"), points=f"{term.late_penalty:g}"))
    if held:
        notes.append(said["Before the due date this page shows the visible checks only: {note}. The score of {held} test "
                          "cell{s} with hidden tests is not counted above until then."].format(
            note=policy_in(term.note, "zh"), held=held, s=""))
    return notes


def edition_of(nb: NotebookNode) -> str:
    """The edition a (sanitized) notebook says it is: one of EDITIONS, else English."""
    language = nb.get("metadata", {}).get(EDITION_KEY)
    return language if isinstance(language, str) and language in EDITIONS else "en"


def in_language(page: str, language: str) -> str:
    """nbgrader's template words of a rendered page in ``language``."""
    for pattern, replacement in TEMPLATE_WORDS.get(language, []):
        page = re.sub(pattern, replacement, page, count=1 if pattern == "<html>" else 0)
    return page


# What a student's notebook may carry into a page, by allow-list: a page (the feedback, or the autograded notebook as
# formgrader renders it with nbconvert's classic template) writes some metadata unquoted (an image's width and height)
# and renders markdown and raw cells again, so everything is rebuilt from what is known here and nothing else is kept.
# Outputs: these kinds as they are (checked: base64 images, JSON values); HTML through the allow-list below; markdown
# rendered once and kept as HTML; every other kind (JavaScript, SVG, widget views, anything unknown) dropped.
SAFE_OUTPUTS = {"text/plain", "text/latex", "image/png", "image/jpeg", "image/gif", "application/json"}
CLEANED_OUTPUTS = {"text/html"}
IMAGES = {"image/png", "image/jpeg", "image/gif"}
BASE64 = re.compile(r"[A-Za-z0-9+/=\s]*")
SAFE_TAGS = {"a", "abbr", "b", "blockquote", "br", "code", "dd", "del", "details", "div", "dl", "dt", "em", "h1", "h2",
             "h3", "h4", "h5", "h6", "hr", "i", "img", "kbd", "li", "ol", "p", "pre", "s", "span", "strong", "sub",
             "summary", "sup", "table", "tbody", "td", "tfoot", "th", "thead", "tr", "u", "ul"}
# No class (the page's own CSS would dress a student's text as a score banner), style, id or name; no data: URL (an
# image of the student's own is a PNG output, not an inline picture in HTML).
SAFE_ATTRIBUTES = {"a": ["href", "title"], "abbr": ["title"], "img": ["src", "alt", "title", "width", "height"],
                   "td": ["colspan", "rowspan", "align"], "th": ["colspan", "rowspan", "align"]}
SAFE_PROTOCOLS = {"http", "https", "mailto"}
# Sizes: cleaning HTML costs about 3.5 s a MB, here and again where the page is rendered (nbconvert cleans raw cells).
CLEAN_CHARS = 100_000  # a student's markdown cell or HTML output longer than this is shown as text, cut here
CLEAN_BUDGET = 1_000_000  # characters of a student's HTML and markdown per notebook; after that, a note only
NOT_SHOWN = "[{what} of {size:,d} characters was not shown here: the notebook's room for such text was used up]"


def clean_html(text: str) -> str:
    """HTML with only the allow-list's tags, attributes and link protocols; anything else is shown as text, never run."""
    return bleach.clean(text, tags=SAFE_TAGS, attributes=SAFE_ATTRIBUTES, protocols=SAFE_PROTOCOLS, strip=False,
                        strip_comments=True)


def page_clean_html(text: str) -> str:
    """The page template's cleaning (nbconvert's ``clean_html`` filter: code, outputs and raw cells) with this module's
    tags added. nbconvert's own list lacks p, h1-h6, details, img and the table's parts, so a student's markdown that
    :func:`clean_html` already made safe came out as escaped text (``&lt;p&gt;``); its ``class`` and ``id`` on every
    tag stay, for the highlighted code's spans (a student's HTML has lost them to :func:`clean_html` before)."""
    from nbconvert.filters.strings import _get_default_css_sanitizer

    sanitizer = _get_default_css_sanitizer()
    return bleach.clean(text, tags={*bleach.ALLOWED_TAGS, "div", "pre", "code", "span", "table", "tr", "td", *SAFE_TAGS},
                        attributes={**bleach.ALLOWED_ATTRIBUTES, **SAFE_ATTRIBUTES, "*": ["class", "id"]},
                        protocols=SAFE_PROTOCOLS, **({"css_sanitizer": sanitizer} if sanitizer else {}))


def _text(value) -> str:
    if isinstance(value, str):
        return value
    return "".join(v for v in value if isinstance(v, str)) if isinstance(value, list) else ""


def _cut(text: str, limit: int) -> str:
    return text if len(text) <= limit else text[:limit] + f"\n[{len(text) - limit:,d} more characters not shown]"


class Room:
    """What is left of a notebook's CLEAN_BUDGET."""

    def __init__(self):
        self.left = CLEAN_BUDGET

    def html(self, text: str, what: str, markdown: bool = False) -> str | None:
        """``text`` (HTML, or markdown rendered once) cleaned; a long one as escaped text; None once the room is gone."""
        if self.left <= 0:
            return None
        self.left -= min(len(text), CLEAN_CHARS)
        if len(text) > CLEAN_CHARS:
            return f"<pre>{html.escape(_cut(text, CLEAN_CHARS))}</pre><p><em>[{what} was too long to render]</em></p>"
        return clean_html(rendered(text) if markdown else text)


def rendered(markdown: str) -> str:
    """Markdown as HTML (not yet cleaned); markdown the renderer refuses (a missing attachment) as escaped text."""
    try:
        return markdown2html_mistune(markdown)
    except Exception:  # noqa: BLE001 - the student's text must never stop the grading job
        return f"<pre>{html.escape(markdown)}</pre>"


# Cell and output metadata a page may read, each with its check; every other key is dropped. (nbgrader's grade_id is
# written into pages unescaped and unquoted: only the course's kind of ids; score and comment come from the gradebook.)
WORD = re.compile(r"[A-Za-z0-9_-]{1,200}")
NBGRADER_FIELDS = {"grade": bool, "solution": bool, "locked": bool, "task": bool, "schema_version": int,
                   "points": "number", "grade_id": WORD, "checksum": re.compile(r"[0-9a-f]{1,128}"),
                   "cell_type": re.compile(r"code|markdown|raw")}
LANGUAGE_FIELDS = {"name", "version", "pygments_lexer", "file_extension", "mimetype", "nbconvert_exporter"}
IMAGE_FIELDS = {"width": "size", "height": "size", "unconfined": bool, "needs_background": re.compile(r"light|dark")}


def _checked(value, check):
    """``value`` if it passes ``check`` (a type, a pattern it must match whole, "number" or "size"), else None."""
    if check is bool or check is int:
        return value if type(value) is check else None
    if isinstance(check, re.Pattern):
        return value if isinstance(value, str) and check.fullmatch(value) else None
    if isinstance(value, bool) or not isinstance(value, (int, float)) or value != value or abs(value) == float("inf"):
        return None
    if check == "size":  # an image's width or height, in pixels
        return value if 0 < value <= 100_000 else None
    return value if value >= 0 else None


def _fields(given, checks: dict) -> dict:
    if not isinstance(given, dict):
        return {}
    kept = {key: _checked(given.get(key), check) for key, check in checks.items() if key in given}
    return {key: value for key, value in kept.items() if value is not None}


def cell_metadata(metadata) -> dict:
    """The cell metadata a page or nbgrader reads, checked: nbgrader's fields, tags, whether it is collapsed."""
    metadata = metadata if isinstance(metadata, dict) else {}
    kept = {}
    grading = _fields(metadata.get("nbgrader"), NBGRADER_FIELDS)
    if grading and ("grade_id" in grading or not any(grading.get(f) for f in ("grade", "solution", "locked", "task"))):
        kept["nbgrader"] = grading  # (a graded cell without a usable id is no graded cell)
    tags = metadata.get("tags")
    if isinstance(tags, list) and all(isinstance(t, str) and WORD.fullmatch(t) for t in tags):
        kept["tags"] = list(tags)[:50]
    view = _fields(metadata.get("jupyter"), {"source_hidden": bool, "outputs_hidden": bool})
    if view:
        kept["jupyter"] = view
    kept.update(_fields(metadata, {"collapsed": bool, "editable": bool, "deletable": bool}))
    return kept


def notebook_metadata(metadata) -> dict:
    """The kernel's and the language's names (the language picks the highlighter); nothing else (no widget state,
    no title)."""
    metadata = metadata if isinstance(metadata, dict) else {}
    name = re.compile(r"[\w .+()-]{1,100}")
    kept = {}
    kernel = _fields(metadata.get("kernelspec"), {"name": name, "display_name": name, "language": name})
    if kernel:
        kept["kernelspec"] = kernel
    language = _fields(metadata.get("language_info"), {field: name for field in LANGUAGE_FIELDS})
    if language:
        kept["language_info"] = language
    if isinstance(metadata.get(EDITION_KEY), str) and metadata[EDITION_KEY] in EDITIONS:  # a course edition's name only
        kept[EDITION_KEY] = metadata[EDITION_KEY]
    return kept


def output_metadata(metadata, kinds) -> dict:
    """An image's size (positive numbers), whether it is unconfined and its background: per kind or for the output."""
    kept = _fields(metadata, IMAGE_FIELDS)
    for kind in kinds & IMAGES:
        fields = _fields(metadata.get(kind) if isinstance(metadata, dict) else None, IMAGE_FIELDS)
        if fields:
            kept[kind] = fields
    return kept


def clean_output(output, room: Room) -> NotebookNode | None:
    """The output rebuilt from what a page may show (None: nothing of it may be shown)."""
    if not isinstance(output, dict):
        return None
    kind = output.get("output_type")
    if kind == "stream":
        name = output.get("name") if output.get("name") in ("stdout", "stderr") else "stdout"
        return new_output("stream", name=name, text=_text(output.get("text", "")))
    if kind == "error":
        trace = output.get("traceback") if isinstance(output.get("traceback"), list) else []
        return new_output("error", ename=_text(output.get("ename", "Error"))[:200] or "Error",
                          evalue=_text(output.get("evalue", ""))[:4000], traceback=[_text(t)[:2000] for t in trace[-40:]])
    if kind not in ("display_data", "execute_result") or not isinstance(output.get("data"), dict):
        return None
    given, data = output["data"], {}
    for key in SAFE_OUTPUTS & set(given):
        value = given[key]
        if key == "application/json":
            if isinstance(value, (dict, list)):
                data[key] = value
        elif key in IMAGES:
            if _text(value) and BASE64.fullmatch(_text(value)):
                data[key] = _text(value)
        else:
            data[key] = _text(value)
    if "text/html" in given or "text/markdown" in given:
        markdown = "text/html" not in given  # markdown is rendered here, once, and kept as HTML
        text = _text(given["text/markdown" if markdown else "text/html"])
        cleaned = room.html(text, "this output", markdown=markdown)
        if cleaned is not None:
            data["text/html"] = cleaned
        elif "text/plain" not in data:
            data["text/plain"] = NOT_SHOWN.format(what="an HTML output", size=len(text))
    if not data:
        data["text/plain"] = "[an output that could run code in a browser was left out]"
    metadata = output_metadata(output.get("metadata"), set(data))
    if kind == "execute_result":
        count = output.get("execution_count")
        return new_output(kind, data=data, metadata=metadata, execution_count=count if type(count) is int else None)
    return new_output(kind, data=data, metadata=metadata)


def as_html_cell(text: str, metadata: dict) -> NotebookNode:
    """A raw cell that nbconvert writes into the page as HTML, once (a markdown cell would be rendered again, and
    markdown makes links of text that cleaning leaves alone)."""
    return new_raw_cell(text, metadata={**metadata, "raw_mimetype": "text/html"})


def sanitize(nb: NotebookNode, course_markdown: frozenset[str] = frozenset()) -> NotebookNode:
    """Nothing active from the student's side survives (in place; returns ``nb``): see the module's notes.

    ``course_markdown``: the sources of the chapter's own markdown cells, which are shown as they are. A markdown cell
    of the student's own (or a course cell the student edited) becomes a raw HTML cell: rendered here, cleaned, and
    written into a page once; formgrader shows it, and no markdown pass runs over it again."""
    room = Room()
    cells = []
    for cell in nb.cells:
        source = _text(cell.get("source", ""))
        metadata = cell_metadata(cell.get("metadata"))
        kind = cell.get("cell_type")
        if kind == "markdown" and source in course_markdown:
            cells.append(new_markdown_cell(source, metadata=metadata))
        elif kind in ("markdown", "raw"):
            what = "a markdown cell" if kind == "markdown" else "a raw cell"
            cleaned = room.html(source, what, markdown=kind == "markdown")
            cells.append(as_html_cell(NOT_SHOWN.format(what=what.capitalize(), size=len(source)) if cleaned is None
                                      else cleaned, metadata))
        elif kind == "code":
            outputs = [clean_output(o, room) for o in cell.get("outputs", []) if isinstance(cell.get("outputs"), list)]
            count = cell.get("execution_count")
            cells.append(new_code_cell(source, metadata=metadata, outputs=[o for o in outputs if o is not None],
                                       execution_count=count if type(count) is int else None))
    if nb.get("nbformat_minor", 0) < 5:  # cell ids came with 4.5; otherwise each keeps the fresh one made here
        for cell in cells:
            cell.pop("id", None)
    nb.cells = cells
    nb.metadata = nbformat.from_dict(notebook_metadata(nb.get("metadata")))
    return nb


@functools.lru_cache(maxsize=16)
def course_markdown(source: str) -> frozenset[str]:
    """The markdown cells of a chapter's source notebook (a path), as the course wrote them, and their translations
    in each edition's catalog (i18n/<language>/<chapter>.po): a Chinese notebook's text is the course's too."""
    english = [c for c in nbformat.read(source, as_version=4).cells if c.cell_type == "markdown"]
    own = {c.source for c in english}
    chapter = os.path.basename(os.path.dirname(os.path.abspath(source)))
    for language in sorted(EDITIONS):
        catalog = _catalog(chapter, language)
        if catalog is None:
            continue
        for cell in english:
            message = catalog.get(cell.source, context=cell.get("metadata", {}).get("nbgrader", {}).get("grade_id") or None)
            if message is not None and message.string and not message.fuzzy:
                own.add(message.string)
    return frozenset(own)


def _catalog(chapter: str, language: str):
    """The chapter's catalog in ``language`` (autograder/i18n.py), or None without one (or without Babel)."""
    try:
        import i18n
    except ImportError:
        return None
    try:
        return i18n.read_catalog(chapter, language)
    except SystemExit:  # an unreadable catalog: its text is then shown as the student's (cleaned), never trusted
        return None


# How much of a notebook's code a feedback page shows and colours: pygments takes about 4.4 s a MB (a 1 MB cell took 98 s
# and made a 25 MB page before these limits); a chapter's own code is 56,000-103,000 characters, its longest cell 12,849.
HIGHLIGHT_CHARS = 20_000  # a longer cell is shown without colours
HIGHLIGHT_BUDGET = 400_000  # characters coloured per page; after that, cells are shown without colours
SHOWN_CHARS = 100_000  # a longer cell is cut in the feedback page, with a note (the autograded notebook keeps it whole)
SHOWN_BUDGET = 2_000_000  # characters of code per page; after that, a cell shows a note only
REMEMBER_CHARS = 16_000  # only cells this short are remembered for the next page
REMEMBERED_MOST = 8_000_000  # characters of remembered pages; then the memory starts again
FEEDBACK_SECONDS = 30  # a page not made by then becomes a plain page (scores and notes) with the reason


class FeedbackTooSlow(Exception):
    pass


@contextlib.contextmanager
def time_limit(seconds: float):
    """Yield the deadline; past it, FeedbackTooSlow is raised by the page's own checks (every highlighted cell and
    output) and, where this is the main thread and SIGALRM is free, by an alarm wherever the work is."""
    deadline = time.monotonic() + seconds
    armed = (threading.current_thread() is threading.main_thread() and hasattr(signal, "setitimer")
             and signal.getsignal(signal.SIGALRM) in (signal.SIG_DFL, None) and not signal.getitimer(signal.ITIMER_REAL)[0])
    if armed:
        def stop(signum, frame):
            raise FeedbackTooSlow()

        signal.signal(signal.SIGALRM, stop)
        signal.setitimer(signal.ITIMER_REAL, seconds)
    try:
        yield deadline
    finally:
        if armed:
            signal.setitimer(signal.ITIMER_REAL, 0)
            signal.signal(signal.SIGALRM, signal.SIG_DFL)


def _before(deadline: float) -> None:
    if time.monotonic() > deadline:
        raise FeedbackTooSlow()


class RememberedHighlight(Highlight2HTML):
    """Highlight2HTML that keeps what it made: a chapter's given and test cells read the same in every submission,
    and pygments took 60% of a feedback page's 0.2 s. Only short cells are remembered, and a page colours at most
    HIGHLIGHT_BUDGET characters, no cell longer than HIGHLIGHT_CHARS (those are shown as plain text)."""

    def __init__(self, **kwargs):
        super().__init__(**kwargs)
        self.made: dict[tuple, str] = {}
        self.remembered = 0
        self.begin_page(float("inf"))

    def begin_page(self, deadline: float) -> None:
        self.left, self.deadline = HIGHLIGHT_BUDGET, deadline

    def __call__(self, source, language=None, metadata=None):
        _before(self.deadline)
        key = (source, language, (metadata or {}).get("magics_language"))
        page = self.made.get(key)
        if page is not None:
            return page
        if len(source) > HIGHLIGHT_CHARS or len(source) > self.left:
            return f'<div class=" highlight hl-{html.escape(str(self.pygments_lexer))}"><pre>{html.escape(source)}</pre></div>\n'
        self.left -= len(source)
        page = super().__call__(source, language, metadata)
        if len(source) <= REMEMBER_CHARS:
            if self.remembered + len(page) > REMEMBERED_MOST:
                self.made.clear()
                self.remembered = 0
            self.made[key] = page
            self.remembered += len(page)
        return page


def shown_in_feedback(nb: NotebookNode) -> None:
    """Long cells cut, with a note, within the page's SHOWN_BUDGET (in place: a copy of the notebook)."""
    left = SHOWN_BUDGET
    for cell in nb.cells:
        if cell.cell_type != "code":
            continue
        size = len(cell.source)
        shown = max(0, min(size, SHOWN_CHARS, left))
        left -= shown
        if shown < size:
            cell.source = (cell.source[:shown] + f"\n# [feedback shows {shown:,d} of this cell's {size:,d} characters; "
                           "the autograded notebook keeps them all]")


class FeedbackExporter(HTMLExporter):
    """nbconvert's HTML exporter without its accessibility pass over the finished page, which parses and writes the
    whole page again with BeautifulSoup (2 of a stub submission's 6 s of grading in chapter 8) to give images alt
    text and JupyterLab-template cells a tabindex. nbgrader's feedback template is the classic one, without such
    cells; images get their alt text here."""

    def __init__(self, **kwargs):
        super().__init__(**kwargs)
        self.highlighters: dict[str, RememberedHighlight] = {}  # one per lexer, kept with the exporter

    def from_notebook_node(self, nb, resources=None, deadline: float = float("inf"), **kw):
        language = nb.metadata.get("language_info", {})
        lexer = language.get("pygments_lexer", language.get("name"))
        resources = self._init_resources(resources)
        if lexer not in self.highlighters:
            self.highlighters[lexer] = RememberedHighlight(pygments_lexer=lexer, parent=self)
        self.highlighters[lexer].begin_page(deadline)
        self.register_filter("highlight_code", self.filters.get("highlight_code", self.highlighters[lexer]))
        self.register_filter("ansi2html", lambda text: _before(deadline) or ansi2html(text))
        self.register_filter("clean_html", page_clean_html)
        self.register_filter("filter_data_type", WidgetsDataTypeFilter(notebook_metadata=self._nb_metadata, parent=self,
                                                                       resources=resources))
        page, resources = TemplateExporter.from_notebook_node(self, nb, resources, **kw)
        alt = words(edition_of(nb))["a figure of the notebook"]
        return re.sub(r"<img\b(?![^>]*\balt=)", f'<img alt="{alt}"', page), resources


@functools.lru_cache(maxsize=1)
def exporter() -> HTMLExporter:
    """One per worker process: its Jinja environment compiles the templates once, not for every notebook."""
    c = Config()
    c.HTMLExporter.template_name = "feedback"
    c.HTMLExporter.extra_template_basedirs = [os.path.join(NBGRADER, "server_extensions", "formgrader", "templates")]
    c.HTMLExporter.extra_template_paths = [os.path.join(NBGRADER, "server_extensions", "formgrader", "static",
                                                        "node_modules", "bootstrap", "dist", "css")]
    return FeedbackExporter(config=c)


@dataclasses.dataclass(frozen=True)
class TermView:
    """What the term's policy (autograder/policy.py) changes on a page, decided when grade.py writes the reports:
    whether the hidden tests' verdicts show yet (``note`` says when they will), and a late penalty with its reason."""

    hidden_verdicts: bool = True
    note: str = ""
    late_penalty: float = 0.0  # points off this notebook
    penalty_reason: str = ""


PENDING = "visible checks passed; {note}"  # the same words whether the hidden tests passed or failed
HIDDEN_REGION = re.compile(r"[ \t]*### BEGIN HIDDEN TESTS.*?### END HIDDEN TESTS[ \t]*\n?", re.S)


def visible_only(nb: NotebookNode, cells: dict, note: str, language: str = "en") -> list[str]:
    """Before the due date: a graded test cell with hidden tests shows no score and no hidden verdict, only what its
    visible checks said (a visible check's failure as usual; otherwise one line that reads the same whether the hidden
    tests passed or not). Returns the grade ids whose scores are held back."""
    held = []
    for cell in nb.cells:
        meta = cell.metadata.get("nbgrader", {})
        if cell.cell_type != "code" or not utils.is_grade(cell) or utils.is_solution(cell) \
                or "BEGIN HIDDEN TESTS" not in cell.source:
            continue
        reported = cells.get(meta.get("grade_id"), {})
        visible_failed = not reported.get("hidden_failure") and (reported.get("auto_score") or 0) < reported.get("max_score", 0)
        if visible_failed:  # as HideTestOutputs would: the visible check's error only
            cell.outputs = [o for o in cell.get("outputs", []) if o.get("output_type") == "error"]
        else:
            cell.outputs = [new_output("stream", name="stdout",
                                       text=words(language)[PENDING].format(note=policy_in(note, language)) + "\n")]
        held.append(meta.get("grade_id"))
        # No score line for it on the page (the template shows one for grade cells only); nbgrader's ClearHiddenTests
        # refuses a hidden region outside a grade cell, so the region goes here, as it would there.
        cell.source = HIDDEN_REGION.sub("", cell.source)
        meta["grade"] = False
    return held


def feedback_html(nb: NotebookNode, entry: dict, student: str, chapter: str, notebook: str,
                  term: TermView = TermView()) -> str:
    """The feedback page of a graded (and sanitized) notebook; one not made within FEEDBACK_SECONDS is a plain page
    with the scores and the reason (also added to the entry's problems)."""
    try:
        with time_limit(FEEDBACK_SECONDS) as deadline:
            return _feedback_page(nb, entry, student, chapter, notebook, deadline, term)
    except FeedbackTooSlow:
        entry.setdefault("problems", []).append(
            f"the feedback page could not be made within {FEEDBACK_SECONDS} s; a plain one with the scores was written")
        return plain_feedback(entry, student, chapter, notebook, term, edition_of(nb))


def notes_cell(notes: list, language: str = "en") -> NotebookNode:
    """The grader's notes as HTML written into the page once (they quote the student's names and ids: escaped)."""
    items = "".join(f"<li>{html.escape(str(note))}</li>" for note in notes)
    return as_html_cell(f"<p><strong>{words(language)['The grader noted:']}</strong></p><ul>{items}</ul>", {})


def _feedback_page(nb: NotebookNode, entry: dict, student: str, chapter: str, notebook: str, deadline: float,
                  term: TermView = TermView()) -> str:
    nb = copy.deepcopy(nb)
    cells = entry.get("cells", {})
    for cell in nb.cells:
        meta = cell.metadata.get("nbgrader", {})
        if utils.is_grade(cell) and meta.get("grade_id") in cells:
            meta["score"] = cells[meta["grade_id"]]["auto_score"]
            meta["points"] = cells[meta["grade_id"]]["max_score"]
        if utils.is_solution(cell) or utils.is_grade(cell):
            meta.setdefault("comment", None)
    language = edition_of(nb)
    from_trusted_side(nb, cells, language)
    held = [] if term.hidden_verdicts else visible_only(nb, cells, term.note, language)
    shown_in_feedback(nb)
    # Markdown cells left here are the course's own (sanitize made a student's raw HTML): formulas as MathML, offline.
    for cell in nb.cells:
        if cell.cell_type == "markdown":
            cell.source = markdown_with_mathml(cell.source)
    notes = term_notes(term, len(held), language) + entry.get("problems", []) + entry.get("repairs", [])
    if notes:
        nb.cells.insert(0, notes_cell(notes, language))
    from jupyter_core.paths import jupyter_config_dir

    counted = [c for gid, c in cells.items() if gid not in held]
    resources = {"config_dir": jupyter_config_dir(), "nbgrader": {"student": student, "assignment": chapter, "notebook": notebook,
                              "score": sum(c["auto_score"] or 0 for c in counted),
                              "max_score": sum(c["max_score"] for c in counted), "late_penalty": term.late_penalty}}
    for pre in (ClearHiddenTests(), RedactTracebacks(), HideTestOutputs()):
        nb, resources = pre.preprocess(nb, resources)
    body, _ = exporter().from_notebook_node(nb, resources=resources, deadline=deadline)
    return in_language(without_mathjax(body), language)
