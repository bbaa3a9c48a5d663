"""axe-core on every chapter's student notebook, in JupyterLab and in Notebook 7, after the widgets render (issue 47).

What a student opens is notebooks/<chapter>/<chapter>.ipynb with the exercises filled in (each solution cell of the
release replaced by the solution's, as a student who did the exercises has it: the widgets call the student's code,
so an empty notebook shows none). Each chapter is served once and seen twice:

1. **JupyterLab**, with its file browser open as on a laptop: the notebook runs in the browser (Run All, in grading
   mode, so data is small); its widgets are measured and dragged (tests/test_browser_widgets.py's check_widgets: one
   run of each notebook serves both files' checks); then axe-core
   (WCAG 2.1 A and AA rules) looks at the whole page. A violation of impact "serious" or "critical" whose element
   is the course's content, a rendered markdown cell or a cell's output (figures, tables, the widgets the
   notebook shows), fails the test. The rest is the front end's own (menus, toolbars, the cells' code editor,
   prompts and collapse buttons) and goes to the report, build/results/a11y.json, without failing. Then a
   keyboard-only walk through one widget of the chapter: Tab to the slider named in KEYBOARD, an arrow key moves
   it, and the widget's text equivalent (its collapsed <details> block, seqlab.a11y) follows. Last, the notebook
   is saved with its widgets' state (the widget manager's saveState setting).
2. **Notebook 7** opens the saved notebook without running it: its outputs and widgets render from the saved
   state, and axe looks again. (Run without the JupyterLab case before it, the notebook is executed with nbclient
   instead.)

Run alone (serial), after the parallel part of `make test`, like the other browser tests. Figures per chapter and
front end (violations in the content and in the chrome, seconds) go to build/results/a11y.json; docs/accessibility.md
quotes them.
"""

from __future__ import annotations

import contextlib
import json
import tempfile
import time
from pathlib import Path

import nbformat
import pytest

from browser import (accept_kernel_dialog, chromium, chromium_path, code_prompts, error_outputs, new_page,
                     open_notebook, run_all_cells, show_file_browser, wait_until_idle, widget_box)
from course import BUILD, CHAPTERS, NOTEBOOKS, SOLUTIONS, execute, nbgrader_meta
from servers import TEST_SETTINGS, TOKEN, jupyter, shut_down_kernels
from test_browser_widgets import WIDGETS_OF_CHAPTER, WINDOW, check_widgets

axe_base = pytest.importorskip("axe_playwright_python.base", reason="axe-playwright-python is in the test extra")

WCAG_21_AA = ["wcag2a", "wcag2aa", "wcag21a", "wcag21aa"]
FAILING_IMPACTS = {"serious", "critical"}
WIDGET_VIEW = "application/vnd.jupyter.widget-view+json"

# One slider per chapter with widgets, walked with the keyboard alone (the explorers of test_browser_widgets.py).
KEYBOARD = {
    "01-ngram-language-models": "top k",
    "02-hidden-markov-models": "step t",
    "03-recurrent-neural-networks": "length T",
    "04-vanishing-gradients-gru-lstm": "forget bias",
    "05-word-embeddings": "neighbours",
    "06-seq2seq-beam-search-bleu": "beam width",
    "07-attention": "output step",
    "08-transformers": "head",
}

# Runs axe in the page and says, for each element a violation names, whether it is the course's content: inside a
# rendered markdown cell or a cell's output. An element inside a shadow root is named by its host's selector first.
_AXE_RUN = """async (options, context) => {
  const results = await axe.run(context || document, options);
  const where = target => {
    let selector = target[0];
    if (Array.isArray(selector)) selector = selector[0];
    let element = null;
    try { element = document.querySelector(selector); } catch (error) { return 'unknown'; }
    if (!element) return 'unknown';
    if (element.closest('.jp-OutputArea-output, .jp-MarkdownOutput')) return 'content';
    return element.closest('.jp-Cell') ? 'cell controls' : 'chrome';
  };
  return results.violations.map(v => ({id: v.id, impact: v.impact, help: v.help, helpUrl: v.helpUrl,
    nodes: v.nodes.map(n => ({where: where(n.target), impact: n.impact || v.impact, target: JSON.stringify(n.target),
                              html: n.html.slice(0, 300)}))}));
}"""


def completed_student_notebook(chapter: str):
    """The released notebook with every solution cell (code and written answers) as the solution has it."""
    solutions = {nbgrader_meta(c)["grade_id"]: c.source
                 for c in nbformat.read(SOLUTIONS / chapter / f"{chapter}.ipynb", as_version=4).cells
                 if nbgrader_meta(c).get("solution")}
    notebook = nbformat.read(NOTEBOOKS / chapter / f"{chapter}.ipynb", as_version=4)
    for cell in notebook.cells:
        if nbgrader_meta(cell).get("solution"):
            cell.source = solutions[nbgrader_meta(cell)["grade_id"]]
    return notebook


# The cells' code editors are the front end's (CodeMirror, JupyterLab's theme colours) and the largest part of a
# notebook's page: they are scanned in the first notebook of each front end only (the report lists what axe finds
# there under "cell controls"), which saves about a third of axe's time on the others.
CODE_EDITORS = ".jp-InputArea-editor"
EDITORS_SCANNED: set[str] = set()


def run_axe(page, *, with_editors: bool = True) -> list[dict]:
    page.evaluate(axe_base.AXE_SCRIPT)
    options = {"runOnly": {"type": "tag", "values": WCAG_21_AA}, "resultTypes": ["violations"]}
    context = {"exclude": [[CODE_EDITORS]]} if not with_editors else None
    return page.evaluate(f"options => (({_AXE_RUN})(options, {json.dumps(context)}))", options)


def summarise(violations: list[dict]) -> dict:
    """Per place (content, cell controls, chrome): each rule with its impact and how many elements break it."""
    places: dict[str, dict[str, dict]] = {}
    for violation in violations:
        for node in violation["nodes"]:
            rules = places.setdefault(node["where"], {})
            rule = rules.setdefault(violation["id"], {"impact": node["impact"], "elements": 0, "help": violation["help"],
                                                      "example": node["html"][:200]})
            rule["elements"] += 1
    return places


def content_failures(violations: list[dict]) -> list[str]:
    return [f"{v['id']} ({node['impact']}): {v['help']} -- {node['target']} {node['html'][:200]}"
            for v in violations for node in v["nodes"]
            if node["where"] in ("content", "unknown") and node["impact"] in FAILING_IMPACTS]


REPORT: dict[str, dict] = {}


def write_report() -> None:
    BUILD.joinpath("results").mkdir(parents=True, exist_ok=True)
    BUILD.joinpath("results", "a11y.json").write_text(json.dumps(REPORT, indent=1, sort_keys=True))


@pytest.fixture(scope="module")
def served(tmp_path_factory):
    """A folder with each chapter's completed student notebook; the front ends save into it."""
    root = tmp_path_factory.mktemp("a11y")
    for chapter in CHAPTERS:
        (root / chapter).mkdir()
        nbformat.write(completed_student_notebook(chapter), root / chapter / f"{chapter}.ipynb")
    return root


@pytest.fixture(scope="module")
def front_ends(served):
    """``front_ends(app)`` -> (base URL, browser): a server per front end, started when first asked for. Their
    settings keep the test settings of servers.py and have the widget manager save the widgets' state."""
    settings = Path(tempfile.mkdtemp(prefix="a11y-settings-"))
    for name, text in {**TEST_SETTINGS,
                       "@jupyter-widgets/jupyterlab-manager/plugin.jupyterlab-settings": '{"saveState": true}'}.items():
        (settings / name).parent.mkdir(parents=True, exist_ok=True)
        (settings / name).write_text(text)
    with contextlib.ExitStack() as stack:
        browser = stack.enter_context(chromium())
        servers: dict[str, str] = {}

        def front_end(app: str) -> tuple[str, object]:
            if app not in servers:
                servers[app] = stack.enter_context(jupyter(
                    app, served, NBGRADER_EXECUTION="autograde", JUPYTERLAB_SETTINGS_DIR=str(settings),
                    JUPYTERLAB_WORKSPACES_DIR=str(settings / "workspaces")))
            return servers[app], browser

        yield front_end
    write_report()


def widget_views(path: Path) -> int:
    notebook = nbformat.read(path, as_version=4)
    return sum(WIDGET_VIEW in output.get("data", {}) for cell in notebook.cells if cell.cell_type == "code"
               for output in cell.get("outputs", []))


def has_outputs(path: Path) -> bool:
    return any(cell.get("outputs") for cell in nbformat.read(path, as_version=4).cells if cell.cell_type == "code")


def has_widget_state(path: Path) -> bool:
    return bool(nbformat.read(path, as_version=4).metadata.get("widgets"))


def save_with_widget_state(page, path: Path, seconds: float = 30) -> None:
    page.keyboard.press("Escape")  # command mode: Ctrl+S is the notebook's save
    page.keyboard.press("Control+s")
    deadline = time.time() + seconds
    while time.time() < deadline:
        with contextlib.suppress(Exception):  # the file may be half written
            if has_widget_state(path) or not KEYBOARD.get(path.stem):
                return
        page.wait_for_timeout(500)
    raise TimeoutError(f"JupyterLab did not save {path.name} with its widgets' state")


def text_equivalent(box) -> str:
    """The text of the explorer's text equivalent: its <details> blocks (collapsed or not), read by screen readers."""
    return "\n".join(box.locator("details").all_text_contents()).strip()


def keyboard_walk(page, chapter: str, label: str) -> dict:
    """Tab from the explorer's first control to the slider ``label``, press an arrow key, and see its value and
    its text equivalent follow. Returns what happened, for the report."""
    box = widget_box(page, label)
    control = box.locator(".widget-inline-hbox", has=page.locator(".widget-label", has_text=label)).first
    handle = control.locator('[role="slider"]').first
    # Enter the explorer at its first control, as a Tab from the cell above it would.
    box.evaluate("""box => box.querySelector('input, select, textarea, button, [tabindex="0"]').focus()""")
    tabs = 0
    while not handle.evaluate("element => element === document.activeElement"):
        assert tabs < 12, f"{chapter}: the slider {label!r} is not reached by Tab from its explorer's first control"
        page.keyboard.press("Tab")
        tabs += 1
    before_value = handle.get_attribute("aria-valuenow")
    before_text = text_equivalent(box)
    assert before_text, (f"{chapter}: the explorer with {label!r} has no text equivalent (a <details> block with "
                         "what its figure shows)")
    key = "ArrowLeft" if before_value == handle.get_attribute("aria-valuemax") else "ArrowRight"
    page.keyboard.press(key)
    deadline = time.time() + 30
    while time.time() < deadline and handle.get_attribute("aria-valuenow") == before_value:
        page.wait_for_timeout(100)
    after_value = handle.get_attribute("aria-valuenow")
    assert after_value != before_value, f"{chapter}: {key} on the focused slider {label!r} did not change its value"
    while time.time() < deadline and text_equivalent(box) == before_text:
        page.wait_for_timeout(200)
    assert text_equivalent(box) != before_text, (
        f"{chapter}: the slider {label!r} moved ({before_value} -> {after_value}) but its text equivalent did not follow")
    return {"slider": label, "tabs": tabs, "key": key, "value": f"{before_value} -> {after_value}"}


def wait_for_saved_widgets(page, views: int, seconds: float = 60) -> None:
    """Until every widget output of the saved notebook shows a rendered widget (from the saved state)."""
    deadline = time.time() + seconds
    while time.time() < deadline:
        accept_kernel_dialog(page)
        # A widget output is a panel (no data-mime-type) whose child is the widget's view.
        rendered = page.locator(".jp-OutputArea-output > .jupyter-widgets").count()
        if rendered >= views:
            return
        page.wait_for_timeout(250)
    raise TimeoutError(f"{views} widget views saved, {rendered} rendered in Notebook 7")


# Every chapter in JupyterLab; in Notebook 7 (the same renderers in another page) the chapters with widgets: a
# notebook there costs about 10 s of the suite's time.
CASES = [(chapter, app) for app in ("lab", "notebook") for chapter in CHAPTERS if app == "lab" or chapter in KEYBOARD]

# ipywidgets 8 draws a slider's handle (noUiSlider, role="slider") with no accessible name and ties no label to it
# (leongersen/noUiSlider#1019); seqlab.widgets.Explorer names every handle with a script (SLIDER_NAMES_JS). An unnamed
# handle in the content means that script did not run or missed a slider: it fails like any other violation, and the
# report counts such handles apart.


def run_whole_notebook(page, attempts: int = 2) -> None:
    """Run All, then wait until every cell has run. Once (10:24 on a loaded machine, chapter 2) a Run All ran one
    cell and the kernel went idle with the rest never queued and no error shown: Run All again then, since what this
    test checks is the rendered notebook, not the menu."""
    for attempt in range(attempts):
        run_all_cells(page)
        try:
            wait_until_idle(page, seconds=90 if attempt + 1 < attempts else 240)
            return
        except TimeoutError:
            stalled = (page.locator('.jp-Notebook-ExecutionIndicator[data-status="idle"]').count()
                       and not error_outputs(page) and not any("*" in p for p in code_prompts(page)))
            if not stalled or attempt + 1 == attempts:
                raise


def is_unnamed_slider_handle(failure: str) -> bool:
    return failure.startswith("aria-input-field-name ") and 'class="noUi-handle' in failure and 'role="slider"' in failure


@pytest.mark.serial
@pytest.mark.slow
@pytest.mark.skipif(chromium_path() is None, reason="Chromium is not installed (apt-get install chromium)")
@pytest.mark.parametrize("chapter, app", CASES, ids=[f"{c}-{a}" for c, a in CASES])
def test_widgets_respond_and_no_serious_violations_in_the_notebook(chapter, app, served, front_ends):
    path = served / chapter / f"{chapter}.ipynb"
    start = time.perf_counter()
    if app == "notebook" and not has_outputs(path):
        executed, _ = execute(path, grading=True)  # JupyterLab's case did not run (or failed before it saved)
        nbformat.write(executed, path)
    base, browser = front_ends(app)
    walk = None
    try:
        with new_page(browser, width=WINDOW[0], height=WINDOW[1]) as page:
            if app == "lab":
                open_notebook(page, base, app, f"{chapter}/{chapter}.ipynb")
                show_file_browser(page)
                run_whole_notebook(page)
                assert not error_outputs(page), f"errors in the notebook: {error_outputs(page)[:1]}"
                if chapter in WIDGETS_OF_CHAPTER:
                    check_widgets(page, WIDGETS_OF_CHAPTER[chapter], app)
            else:
                page.goto(f"{base}/notebooks/{chapter}/{chapter}.ipynb?token={TOKEN}")
                page.wait_for_selector(".jp-Notebook .jp-Cell", timeout=90_000)
                wait_for_saved_widgets(page, widget_views(path))
            axe_start = time.perf_counter()
            violations = run_axe(page, with_editors=app not in EDITORS_SCANNED)
            axe_seconds = time.perf_counter() - axe_start
            EDITORS_SCANNED.add(app)
            if app == "lab":
                save_with_widget_state(page, path)
            failures = content_failures(violations)
            unnamed_sliders = [f for f in failures if is_unnamed_slider_handle(f)]
            REPORT[f"{chapter} {app}"] = {"violations": summarise(violations), "content_failures": len(failures),
                                          "unnamed_slider_handles": len(unnamed_sliders), "seconds": None,
                                          "axe_seconds": round(axe_seconds, 1)}
            if app == "lab" and chapter in KEYBOARD:
                walk = keyboard_walk(page, chapter, KEYBOARD[chapter])
            assert not failures, (f"{len(failures)} serious or critical axe violations in {chapter}'s content in "
                                  f"{app} ({len(unnamed_sliders)} of them slider handles left unnamed: did "
                                  f"seqlab.widgets.SLIDER_NAMES_JS run?):\n" + "\n".join(failures[:12]))
    finally:
        shut_down_kernels(base)
        if f"{chapter} {app}" in REPORT:
            REPORT[f"{chapter} {app}"].update(seconds=round(time.perf_counter() - start, 1), keyboard=walk)
        write_report()
