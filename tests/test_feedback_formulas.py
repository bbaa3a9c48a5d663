"""Feedback pages show the course's formulas offline (issue 41): MathML made at grading time, no MathJax from a CDN.

Before, nbgrader's feedback template loaded MathJax from cdnjs: a student opening the page offline saw every formula
as raw LaTeX. Now each formula of the course's markdown is MathML (autograder/mathml.py) and the page loads no script.
"""

from __future__ import annotations

import re
import sys

import nbformat
import pytest
from nbconvert.filters.markdown import markdown2html_mistune

from course import REPO, SOLUTIONS
from browser import chromium, chromium_path, new_page

sys.path.insert(0, str(REPO / "autograder"))
sys.path.insert(0, str(REPO / "autograder" / "inkernel"))
import feedback  # noqa: E402
import mathml  # noqa: E402
from job import canonical, score_cells  # noqa: E402

CHAPTER = "02-hidden-markov-models"


def test_formulas_become_mathml_and_code_keeps_its_dollars():
    page = markdown2html_mistune(mathml.markdown_with_mathml(
        "Perplexity $\\exp(H)$ costs \\$5.\n\n$$\\sum_i p_i = 1$$\n\n`a$b$c` and\n```\nx = '$y$'\n```"))
    assert page.count("<math") == 2 and 'display="block"' in page and 'display="inline"' in page
    assert "$5" in page and "a$b$c" in page and "x = '$y$'" in page
    assert "\\exp" not in page and "\\sum" not in page


def test_an_unknown_formula_is_shown_as_written():
    assert mathml.formula("\\frac{1}{", display=False).startswith("<code>")


def formulas_in(source: str) -> int:
    prose = mathml.CODE.split(source)[::2]
    return sum(len(mathml.DISPLAY.findall(p)) + len(mathml.INLINE.findall(mathml.DISPLAY.sub("", p))) for p in prose)


def feedback_page(chapter: str) -> tuple[str, int]:
    source = (SOLUTIONS / chapter / f"{chapter}.ipynb")
    nb = feedback.sanitize(canonical(source), feedback.course_markdown(str(source)))
    entry = {"cells": score_cells(canonical(source), None, "not graded in this test"), "problems": [], "repairs": []}
    course = nbformat.read(source, as_version=4)
    expected = sum(formulas_in(c.source) for c in course.cells if c.cell_type == "markdown")
    return feedback.feedback_html(nb, entry, "alice", chapter, source.stem), expected


def test_a_feedback_page_has_every_course_formula_as_mathml_and_no_mathjax():
    page, expected = feedback_page(CHAPTER)
    assert expected > 100
    assert page.count("<math") == expected, f"{page.count('<math')} MathML formulas, the course has {expected}"
    assert not re.search(r"cdnjs|<script[^>]*mathjax", page, re.I), "the page still loads MathJax from the network"
    assert not re.search(r"<script\b[^>]*\bsrc=", page, re.I), "the page loads a script"


@pytest.mark.slow
@pytest.mark.skipif(chromium_path() is None, reason="Chromium is not installed (apt-get install chromium)")
def test_offline_the_browser_draws_the_formulas(tmp_path):
    page, _ = feedback_page(CHAPTER)
    (tmp_path / "feedback.html").write_text(page, encoding="utf-8")
    with chromium() as browser, new_page(browser, 1280, 800) as tab:
        tab.route("**/*", lambda route: route.abort() if not route.request.url.startswith("file:") else route.continue_())
        tab.goto((tmp_path / "feedback.html").as_uri())
        drawn = tab.locator("math").evaluate_all("ms => ms.filter(m => m.getBoundingClientRect().width > 0).length")
        prose = tab.locator(".text_cell_render").evaluate_all("cells => cells.map(c => c.innerText).join(' ')")
        raw_tex = re.findall(r"\\(?:frac|sum|mid|log|mathbf)\b|\$[^$\n]{1,40}\$", prose)
        tab.locator("math").nth(3).scroll_into_view_if_needed()
        tab.screenshot(path=str(tmp_path / "formulas.png"))
    assert drawn > 100, f"only {drawn} formulas drawn offline"
    assert not raw_tex, "raw LaTeX shows in the page's text"
