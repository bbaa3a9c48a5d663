"""Real-browser tests of the widgets, in JupyterLab and Notebook 7 with Debian's Chromium.

To add a chapter's widgets, add a line to WIDGETS: the notebook, the label of each slider to
drag, and the drop-down choices to try. The test runs the notebook (in grading mode, so data is
small) in a laptop's window, 1280 x 800, with JupyterLab's file browser open (issue 41), and checks
the layout of every widget in it: each slider's track at least 150 px wide, no control or part of
one outside the notebook column, each explorer (controls and figure) no taller than the window, the
column at least as wide as the figures are drawn for (seqlab.widgets.NOTEBOOK_COLUMN_PX). Then it
drags each slider with the mouse and checks that its value moved in proportion to the pixels
dragged, that the figure changed and, for the widgets sized to the notebook (issue 27), that it is
shown at full size, not shrunk; it keeps a screenshot under build/screenshots/ (the sizes of the
figures themselves, text of at least 10 px and labels apart, are measured without a browser in
tests/test_widget_legibility.py and tests/test_figures.py).
In JupyterLab these checks run inside tests/test_browser_a11y.py's Lab run of each chapter (check_widgets, with
the file browser open): running every notebook in the browser once for both saves the suite 8 notebook runs
(about 2 min of the serial phase). This file runs them in Notebook 7, with its own server and browser.
"""

from __future__ import annotations

import contextlib
import shutil
from dataclasses import dataclass

import pytest

from browser import (choose_option, chromium, chromium_path, drag_slider, error_outputs, figure_scale, figure_source,
                     new_page, open_notebook, run_all_cells, screenshot, wait_for_new_figure,
                     wait_until_idle, widget_box, widget_layout)
from course import BUILD, SOLUTIONS, record
from seqlab.widgets import NOTEBOOK_COLUMN_PX
from servers import jupyter, shut_down_kernels



@dataclass(frozen=True)
class WidgetCase:
    notebook: str  # relative to solutions/
    sliders: tuple[str, ...]  # the description of each slider to drag
    full_size: bool = False  # its figures fit the notebook's width (seqlab.widgets.FIGURE_WIDTH): never shrunk
    choices: tuple[tuple[str, str], ...] = ()  # (drop-down, option) to pick, then measure again: the tallest views


WIDGETS = [
    WidgetCase("01-ngram-language-models/01-ngram-language-models.ipynb", sliders=("top k",)),
    WidgetCase("02-hidden-markov-models/02-hidden-markov-models.ipynb", sliders=("step t",)),
    WidgetCase("03-recurrent-neural-networks/03-recurrent-neural-networks.ipynb", sliders=("length T",)),
    WidgetCase("04-vanishing-gradients-gru-lstm/04-vanishing-gradients-gru-lstm.ipynb", sliders=("length T", "radius", "forget bias")),
    WidgetCase("05-word-embeddings/05-word-embeddings.ipynb", sliders=("neighbours",), full_size=True,
               choices=(("layout", "t-SNE"),)),
    WidgetCase("06-seq2seq-beam-search-bleu/06-seq2seq-beam-search-bleu.ipynb", sliders=("beam width",), full_size=True),
    WidgetCase("07-attention/07-attention.ipynb", sliders=("output step",)),
    WidgetCase("08-transformers/08-transformers.ipynb", sliders=("head", "d_model"), full_size=True,
               choices=(("attention", "encoder"),)),
]

# Notebook 7 (the same widget renderers in another page) with the two-slider attention explorer of chapter 8: a
# notebook run in the browser costs 30-60 s of the suite's time. JupyterLab: every chapter, in test_browser_a11y.py.
NOTEBOOK_7 = {"08-transformers"}
CASES = [case for case in WIDGETS if case.notebook.split("/")[0] in NOTEBOOK_7]
WIDGETS_OF_CHAPTER = {case.notebook.split("/")[0]: case for case in WIDGETS}


@pytest.fixture(scope="module")
def front_ends(tmp_path_factory):
    """``front_ends(app)`` -> (base URL, browser): a server per front end, started when first asked for, serving
    a copy of each chapter it runs (the front end saves the notebook it runs, and solutions/ must stay untouched)."""
    root = tmp_path_factory.mktemp("served")
    for case in CASES:
        chapter = case.notebook.split("/")[0]
        shutil.copytree(SOLUTIONS / chapter, root / chapter)
    with contextlib.ExitStack() as stack:
        browser = stack.enter_context(chromium())
        servers: dict[str, str] = {}

        def front_end(app: str) -> tuple[str, object]:
            if app not in servers:
                servers[app] = stack.enter_context(jupyter(app, root, NBGRADER_EXECUTION="autograde"))
            return servers[app], browser

        yield front_end


# Run alone, after the parallel part of `make test`: beside another worker's notebooks, 2 of 26 runs in the browser
# stopped with cells never run (a different chapter each time), while all 16 passed in a serial run.
@pytest.mark.serial
@pytest.mark.slow
@pytest.mark.skipif(chromium_path() is None, reason="Chromium is not installed (apt-get install chromium)")
@pytest.mark.parametrize("case", CASES, ids=[f"{c.notebook.split('/')[0]}-notebook" for c in CASES])
def test_widgets_render_and_respond(case, front_ends):
    base, browser = front_ends("notebook")
    try:
        with new_page(browser, width=WINDOW[0], height=WINDOW[1]) as page:  # a laptop's window (issues 27, 41)
            open_notebook(page, base, "notebook", case.notebook)
            run_all_cells(page)
            wait_until_idle(page)
            assert not error_outputs(page), f"errors in the notebook: {error_outputs(page)[:2]}"
            check_widgets(page, case, "notebook")
    finally:
        shut_down_kernels(base)


def check_widgets(page, case: WidgetCase, app: str) -> None:
    """In a page whose notebook has run: every widget fits (assert_widgets_fit), at the explorer's first settings and
    after each drop-down choice; each slider dragged with the mouse moves in proportion and changes the figure, shown
    at full size where the case says so; a screenshot of each; the figures go to the test record."""
    chapter = case.notebook.split("/")[0]
    layouts = [widget_layout(page)]
    assert_widgets_fit(layouts[-1], app)
    for label, option in case.choices:  # before the sliders move: at the explorer's first settings
        box = widget_box(page, label)
        before = figure_source(box)
        choose_option(page, box, label, option)
        wait_for_new_figure(box, before)
        layouts.append(widget_layout(page))
        assert_widgets_fit(layouts[-1], app, f"with {label} = {option}")
    drags = {}
    for label in case.sliders:
        box = widget_box(page, label)
        before = figure_source(box)
        assert before.startswith("data:image/png"), "the widget shows no figure"
        moved = drags[label] = drag_slider(page, box, label)
        assert abs(moved["moved_px"] - moved["pixels"]) <= 0.2 * abs(moved["pixels"]) + 8, (
            f"dragging {label!r} {moved['pixels']} px along its {moved['track']:.0f} px track moved its value "
            f"{moved['moved_px']:.0f} px' worth ({moved['before']:g} -> {moved['after']:g})")
        wait_for_new_figure(box, before)
        if case.full_size:
            scale = figure_scale(box)
            assert scale > 0.99, f"the {label!r} widget's figure is shrunk to {scale:.0%} at 1280 px"
        name = f"{chapter}-{label.replace(' ', '_')}-{app}.png"
        assert screenshot(box, BUILD / "screenshots" / name).stat().st_size > 10_000
    record(f"widgets_{chapter}_{app}", column_px=layouts[0]["column"],
           narrowest_track_px=min((s["track"] for s in layouts[0]["sliders"]), default=None),
           tallest_explorer_px=max(e["height"] for layout in layouts for e in layout["explorers"]),
           drags={label: f"{m['pixels']} px -> {m['moved_px']:.0f} px ({m['before']:g} -> {m['after']:g})"
                  for label, m in drags.items()})


WINDOW = (1280, 800)
SMALLEST_TRACK_PX = 150  # a 60 px drag then moves a slider by at most 40% of its range


def assert_widgets_fit(layout: dict, app: str, when: str = "") -> None:
    """Every slider's track at least SMALLEST_TRACK_PX wide, every control inside the notebook column, every
    explorer no taller than the window, the column as wide as the course draws its figures for."""
    where = f"in {app} at {WINDOW[0]} x {WINDOW[1]}" + (f", {when}" if when else "")
    narrow = [(s["label"], round(s["track"])) for s in layout["sliders"] if s["track"] < SMALLEST_TRACK_PX]
    assert not narrow, f"slider tracks narrower than {SMALLEST_TRACK_PX} px {where}: {narrow}"
    cut = sorted({(c["label"], c["part"], round(c["left"]), round(c["right"]), round(c["column_right"]))
                  for c in layout["controls"] if c["width"] < 1 or c["left"] < c["column_left"] - 1
                  or c["right"] > c["column_right"] + 1})
    assert not cut, f"controls cut off or collapsed {where} (label, part, left, right, column's right edge): {cut}"
    tall = [(e["labels"], round(e["height"])) for e in layout["explorers"] if e["height"] > layout["window"]["height"]]
    assert not tall, f"explorers taller than the {layout['window']['height']} px window {where}: {tall}"
    assert layout["explorers"], "no explorer found in the notebook"
    assert layout["column"] >= NOTEBOOK_COLUMN_PX, (
        f"the notebook column is {layout['column']:.0f} px wide {where}: seqlab.widgets.NOTEBOOK_COLUMN_PX "
        f"({NOTEBOOK_COLUMN_PX}) is wrong, and figures drawn for it are shrunk")
