"""Real-browser tests of the widgets, in JupyterLab and Notebook 7 with Debian's Chromium.

To add a chapter's widgets, add a line to WIDGETS: the notebook, and the label of each
slider to move. The test runs the notebook (in grading mode, so data is small) in a 1280 px
wide window, checks that each widget rendered a control and a figure, moves the slider, checks
that the figure changed and, for the widgets sized to the notebook (issue 27), that it is shown at
full size, not shrunk, and keeps a screenshot under build/screenshots/ (the sizes themselves, text
of at least 10 px and labels apart, are measured without a browser in tests/test_widget_legibility.py).
One server per front end and one browser serve every chapter (starting them cost 9 s a test);
each test has a page of its own and shuts its kernel down.
"""

from __future__ import annotations

import contextlib
import shutil
from dataclasses import dataclass

import pytest

from browser import (chromium, chromium_path, error_outputs, figure_scale, figure_source, new_page, nudge_slider,
                     open_notebook, run_all_cells, screenshot, wait_for_new_figure, wait_until_idle, widget_box)
from course import BUILD, SOLUTIONS
from servers import jupyter, shut_down_kernels



@dataclass(frozen=True)
class WidgetCase:
    notebook: str  # relative to solutions/
    sliders: tuple[str, ...]  # the description of a slider in each widget to test
    full_size: bool = False  # its figures fit the notebook's width (seqlab.widgets.FIGURE_WIDTH): never shrunk


WIDGETS = [
    WidgetCase("01-ngram-language-models/01-ngram-language-models.ipynb", sliders=("top k",)),
    WidgetCase("02-hidden-markov-models/02-hidden-markov-models.ipynb", sliders=("step t",)),
    WidgetCase("03-recurrent-neural-networks/03-recurrent-neural-networks.ipynb", sliders=("length T",)),
    WidgetCase("04-vanishing-gradients-gru-lstm/04-vanishing-gradients-gru-lstm.ipynb", sliders=("forget bias",)),
    WidgetCase("05-word-embeddings/05-word-embeddings.ipynb", sliders=("neighbours",), full_size=True),
    WidgetCase("06-seq2seq-beam-search-bleu/06-seq2seq-beam-search-bleu.ipynb", sliders=("beam width",), full_size=True),
    WidgetCase("07-attention/07-attention.ipynb", sliders=("output step",)),
    WidgetCase("08-transformers/08-transformers.ipynb", sliders=("head", "d_model"), full_size=True),
]

# Every chapter in JupyterLab; Notebook 7 (the same widget renderers in another page) with the two-slider
# attention explorer of chapter 8: a notebook run in the browser costs 30-60 s of the suite's time.
NOTEBOOK_7 = {"08-transformers"}
CASES = [(case, app) for case in WIDGETS for app in ("lab", "notebook")
         if app == "lab" or case.notebook.split("/")[0] in NOTEBOOK_7]


@pytest.fixture(scope="module")
def front_ends(tmp_path_factory):
    """``front_ends(app)`` -> (base URL, browser): a server per front end, started when first asked for, serving
    a copy of every chapter (the front end saves the notebook it runs, and solutions/ must stay untouched)."""
    root = tmp_path_factory.mktemp("served")
    for case in WIDGETS:
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
@pytest.mark.parametrize("case, app", CASES, ids=[f"{c.notebook.split('/')[0]}-{a}" for c, a in CASES])
def test_widgets_render_and_respond(case, app, front_ends):
    base, browser = front_ends(app)
    try:
        with new_page(browser, width=1280, height=800) as page:  # a laptop's window (issue 27)
            open_notebook(page, base, app, case.notebook)
            run_all_cells(page)
            wait_until_idle(page)
            assert not error_outputs(page), f"errors in the notebook: {error_outputs(page)[:2]}"
            for label in case.sliders:
                box = widget_box(page, label)
                before = figure_source(box)
                assert before.startswith("data:image/png"), "the widget shows no figure"
                nudge_slider(page, box, label)
                wait_for_new_figure(box, before)
                if case.full_size:
                    scale = figure_scale(box)
                    assert scale > 0.99, f"the {label!r} widget's figure is shrunk to {scale:.0%} at 1280 px"
                name = f"{case.notebook.split('/')[0]}-{label.replace(' ', '_')}-{app}.png"
                assert screenshot(box, BUILD / "screenshots" / name).stat().st_size > 10_000
    finally:
        shut_down_kernels(base)
