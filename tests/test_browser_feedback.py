"""What a student's work can do in the instructor's browser, opened in a real one (Debian's Chromium, through Playwright).

The grader writes two pages per submission that a browser opens on the Jupyter server's origin: the feedback page,
and the autograded notebook, which formgrader renders with nbconvert (nbgrader's formgrade template, on the classic
one). Each is opened here, as formgrader shows it and as nbconvert's classic and lab exports show it, and must run
nothing: no dialog, no console message with the payloads' mark, no event handler attribute, no script of the
student's, no javascript:, vbscript: or data: link (only a PNG, JPEG or GIF may be an inline picture).

`views` and `what_runs` serve the attack batches too (tests/test_autograder_attacks.py, tests/test_autograder_safety.py
open every page of their graded exports that a payload reaches, `pages_a_payload_reaches`); the tests here build the hostile notebook directly, as the grader's
executor reports outputs, so every metadata field and output kind is reached, and check that the payloads do run in
a browser when nothing cleans them.

Mistakes these tests were written against: image metadata written unquoted (`width=1 onerror=...`); cleaned HTML
stored as markdown and rendered a second time (`\\[x\\](javascript:...)` became a link); the grader's notes, which
quote a student's cell id, rendered as markdown; data: links and class attributes allowed.
"""

from __future__ import annotations

import copy
import sys
from pathlib import Path

import nbformat
import pytest
from nbformat.v4 import new_code_cell, new_output

from browser import chromium, chromium_path
from course import REPO

sys.path.insert(0, str(REPO / "autograder"))
sys.path.insert(0, str(REPO / "tests"))
import feedback  # noqa: E402
from adversarial.generate import ACTIVE_MARK, HOSTILE_OUTPUTS, TINY_PNG, hostile_cells, load  # noqa: E402
from job import score_cells  # noqa: E402
from test_autograder_feedback import canonical_of, source_of  # noqa: E402

MARK = ACTIVE_MARK
CHAPTERS = ["01-ngram-language-models", "05-word-embeddings", "08-transformers"]
needs_chromium = pytest.mark.skipif(chromium_path() is None, reason="Chromium is not installed (apt-get install chromium)")

# Run in the page once it has loaded: what could run (event handlers, scripts with the mark) or be followed (links).
FIND_ACTIVE = r"""mark => {
  const TEMPLATES_OWN = ['toggle_name(true);', 'toggle_name(false);'];  // formgrade's "show the student's name"
  const found = [];
  const bad = value => {
    try { return ['javascript:', 'vbscript:', 'data:'].includes(new URL(value.trim(), document.baseURI).protocol); }
    catch (error) { return /^\s*(javascript|vbscript|data):/i.test(value); }
  };
  for (const element of document.querySelectorAll('*')) {
    const tag = element.tagName.toLowerCase();
    for (const attribute of element.attributes) {
      const name = attribute.name.toLowerCase(), value = attribute.value;
      if (name.startsWith('on') && !TEMPLATES_OWN.includes(value.trim())) found.push(`${tag} ${name}=${value.slice(0, 100)}`);
      const picture = tag === 'img' && name === 'src' && /^data:image\/(png|jpeg|gif);base64,/i.test(value.trim());
      if (['href', 'src', 'action', 'formaction', 'data', 'xlink:href', 'poster', 'background'].includes(name)
          && bad(value) && !picture) found.push(`${tag} ${name}=${value.slice(0, 100)}`);
    }
    if (['iframe', 'frame', 'object', 'embed', 'base', 'form'].includes(tag)) found.push(`<${tag}>`);
    if (tag === 'script' && element.textContent.includes(mark)) found.push(`script: ${element.textContent.slice(0, 100)}`);
    if (tag === 'meta' && /refresh/i.test(element.getAttribute('http-equiv') || '')) found.push('meta refresh');
    if (element.classList.contains('alert-success')) found.push(`a fake banner: ${element.textContent.slice(0, 60)}`);
  }
  return found;
}"""


def views(autograded: Path, templates: tuple[str, ...] = ("formgrader", "classic", "lab")) -> dict[str, str]:
    """The autograded notebook as formgrader renders it (its HTMLExporter with nbgrader's formgrade template and the
    resources formgrader passes), and as nbconvert's classic and lab HTML exports render it."""
    from nbconvert.exporters import HTMLExporter
    from nbgrader.server_extensions.formgrader import handlers
    from traitlets.config import Config

    pages = {}
    config = Config()
    config.HTMLExporter.template_name = "formgrade"
    config.HTMLExporter.extra_template_basedirs = [handlers.template_path]
    resources = {"assignment_id": "chapter", "notebook_id": autograded.stem, "submission_id": "1", "index": 0, "total": 1,
                 "base_url": "/", "student": "student", "last_name": None, "first_name": None,
                 "notebook_path": "/notebooks/" + autograded.name}
    if "formgrader" in templates:
        pages["formgrader"] = HTMLExporter(config=config).from_filename(str(autograded), resources=resources)[0]
    for template in set(templates) & {"classic", "lab"}:
        pages[template] = HTMLExporter(template_name=template).from_filename(str(autograded))[0]
    return pages


def pages_a_payload_reaches(feedback_pages: dict[str, str], autograded: list[Path], hostile: set[str],
                            control: str) -> dict[str, str]:
    """The pages of a graded batch to open in the browser: every page that carries the payloads' mark (each payload
    the attack batches plant has it), the hostile students' pages in every view, and the control student's pages.
    A page without the mark has nothing of a payload to run; opening all of a batch's pages (two per student, 40-70
    a batch) cost the suite about 3 min of its parallel part. Returns ``"student view" -> HTML``."""
    opened = {f"{student} feedback": page for student, page in feedback_pages.items()
              if student in hostile or student == control or MARK in page}
    for path in sorted(autograded):
        student = path.parent.parent.name
        if student in hostile or student == control or MARK in path.read_text(encoding="utf-8", errors="replace"):
            shown = views(path, ("formgrader", "classic", "lab") if student in hostile else ("formgrader",))
            opened.update({f"{student} {view}": page for view, page in shown.items()})
    missing = {f"{student} {view}" for student in hostile for view in ("feedback", "formgrader")} - set(opened)
    assert not missing, f"hostile students without their pages: {sorted(missing)}"
    return opened


def what_runs(browser, pages: dict[str, str], settle_ms: int = 300) -> dict[str, list[str]]:
    """name -> what ran (a dialog, a console message with MARK) or could run (FIND_ACTIVE) in each page, opened from a
    file with the network cut off (a page's CDN scripts fail; a student's `src=x` fails and fires its onerror)."""
    import tempfile

    found = {}
    with tempfile.TemporaryDirectory(prefix="pages-") as folder:
        for name, page_html in pages.items():
            path = Path(folder) / f"page-{len(found)}.html"
            path.write_text(page_html)
            context = browser.new_context()
            context.route("**/*", lambda route: route.continue_() if route.request.url.startswith("file:")
                          else route.abort())
            page = context.new_page()
            ran: list[str] = []
            page.on("dialog", lambda dialog, ran=ran: (ran.append(f"dialog: {dialog.message}"), dialog.dismiss()))
            page.on("console", lambda message, ran=ran: ran.append(f"console: {message.text}") if MARK in message.text
                    else None)
            try:
                page.goto(path.as_uri(), wait_until="load", timeout=60_000)
                page.wait_for_timeout(settle_ms)
                ran += page.evaluate(FIND_ACTIVE, MARK)
            finally:
                context.close()
            found[name] = ran
    return {name: ran for name, ran in found.items() if ran}


def hostile_notebook(chapter: str) -> nbformat.NotebookNode:
    """The chapter as the grader rebuilds it, with a hostile student's cells (tests/adversarial/generate.py's
    hostile_cells) and the outputs the executor would report for HOSTILE_OUTPUTS, plus what the executor itself
    never lets through (a stream's name, a count) in case another path does; the notebook's metadata hostile too."""
    nb = hostile_cells(canonical_of(chapter))
    run = f"alert('{MARK}')"
    outputs = [
        new_output("display_data", data={"image/png": TINY_PNG},
                   metadata={"image/png": {"width": f"1 onerror={run}", "height": f"1 onload={run}"}}),
        new_output("display_data", data={"image/jpeg": TINY_PNG},
                   metadata={"width": f"1 onerror={run}", "unconfined": f"1 onclick={run}", "alt": f"\"><b onclick=\"{run}",
                             "filenames": {"image/jpeg": f"javascript:{run}"}}),
        new_output("display_data", data={"image/png": f"\" onerror=\"{run}\" x=\""}),
        new_output("display_data", data={"text/html": f"<b>boxed</b><img src=x onerror=\"{run}\">"},
                   metadata={"text/html": {"isolated": True}}),
        new_output("display_data", data={"text/markdown": f"\\[twice\\](javascript:{run}) <b>[in html](javascript:{run})</b>"}),
        new_output("display_data", data={"text/html": "<div class=\"alert alert-success\">Score: 100 / 100</div>"
                                                      f"<a href=\"data:text/html;base64,PHNjcmlwdD4=\">{MARK}</a>"}),
        new_output("display_data", data={"text/latex": f"<img src=x onerror=\"{run}\">"}),
        new_output("display_data", data={"image/svg+xml": f"<svg xmlns='http://www.w3.org/2000/svg' onload=\"{run}\"/>"}),
        new_output("display_data", data={"application/javascript": run}),
        new_output("display_data", data={"application/vnd.jupyter.widget-view+json": {
            "model_id": f"</script><script>{run}</script>", "version_major": 2, "version_minor": 0}}),
        new_output("execute_result", data={"image/png": TINY_PNG}, metadata={"width": f"1 onerror={run}"},
                   execution_count=1),
        new_output("stream", name="stdout", text=f"<script>{run}</script>\x1b[31mred\x1b[0m\n"),
        new_output("error", ename=f"<img src=x onerror=\"{run}\">", evalue=f"<script>{run}</script>",
                   traceback=[f"\x1b]8;;javascript:{run}\x1b\\a link\x1b]8;;\x1b\\ <img src=x onerror=\"{run}\">"]),
    ]
    stream = new_output("stream", name="stdout", text="named\n")
    stream["name"] = f"stdout\"><img src=x onerror=\"{run}\">"
    outputs.append(stream)
    cell = new_code_cell(HOSTILE_OUTPUTS, outputs=outputs, execution_count=1)
    cell.pop("id", None)
    nb.cells.insert(next(i for i, c in enumerate(nb.cells) if c.cell_type == "code" and c.metadata.get("nbgrader", {})
                         .get("solution")) + 1, cell)
    nb.metadata["title"] = f"</title><script>{run}</script>"
    nb.metadata["language_info"] = {"name": "python", "pygments_lexer": f"<img src=x onerror=\"{run}\">"}
    return nb


@pytest.fixture(scope="module")
def browser():
    with chromium() as opened:
        yield opened


def all_views(nb, chapter: str, folder: Path) -> dict[str, str]:
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / source_of(chapter).name
    nbformat.write(nb, path)
    scored = score_cells(canonical_of(chapter), None, "not graded in this test")
    entry = {"cells": scored, "problems": [f"a cell with the id <img src=x onerror=\"alert('{MARK}')\"> was made ungraded"],
             "repairs": [f"[a note](javascript:alert('{MARK}'))"]}
    pages = {"feedback": feedback.feedback_html(nbformat.read(path, as_version=4), entry, "mallory", chapter,
                                                source_of(chapter).stem)}
    return {**pages, **views(path)}


@pytest.mark.slow
@needs_chromium
def test_the_payloads_run_when_nothing_cleans_them(browser, tmp_path):
    """The test's own check: each kind of payload runs, or leaves a link, in formgrader's view of an uncleaned notebook."""
    chapter = CHAPTERS[0]
    path = tmp_path / source_of(chapter).name
    nbformat.write(hostile_notebook(chapter), path)
    found = what_runs(browser, views(path))
    formgrader = " ".join(found.get("formgrader", []))
    for evidence in ("dialog: ", "img onerror=", "img onload=", "a href=javascript:", "a href=data:", "<iframe>",
                     "a fake banner: Score: 100 / 100"):
        assert evidence in formgrader, (evidence, found.get("formgrader"))


@pytest.mark.slow
@needs_chromium
@pytest.mark.parametrize("chapter", CHAPTERS)
def test_nothing_of_the_students_runs_in_any_view(browser, tmp_path, chapter):
    nb = feedback.sanitize(hostile_notebook(chapter), feedback.course_markdown(str(source_of(chapter))))
    pages = all_views(nb, chapter, tmp_path)
    assert not what_runs(browser, pages)
    for name, page in pages.items():  # what the student wrote is still shown, as text
        assert MARK in page and "Score: 100 / 100" in page, name
        assert "celltag_x" not in page, name


@pytest.mark.slow
@needs_chromium
def test_an_honest_notebook_looks_the_same_and_passes_the_browser_check(browser, tmp_path):
    """The course's own pages pass the check (no false alarm), and cleaning keeps their cells as they are."""
    chapter = CHAPTERS[2]
    solution = load("solution", chapter)[0]
    clean = feedback.sanitize(copy.deepcopy(solution), feedback.course_markdown(str(source_of(chapter))))
    assert [(c.cell_type, c.source, c.metadata) for c in clean.cells] == \
        [(c.cell_type, c.source, c.metadata) for c in solution.cells]
    assert not what_runs(browser, all_views(clean, chapter, tmp_path))
