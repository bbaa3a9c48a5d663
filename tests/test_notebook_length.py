"""A chapter's main notebook stays readable in one sitting: at most so many words of markdown (issue 40, 6).

Chapter 3 had grown to 11,391 words and chapter 4 to 10,221; their limits, and those of chapters 8 and 9 (a
chapter split in two), are below. Words are what a reader reads: every markdown cell's text split at white
space, hints, answers, tables and the glossary included. Optional notebooks beside a chapter's main one
(chapter 3's ablation) are not counted: the main notebook is the one a learner must read.
"""

from __future__ import annotations

import nbformat
import pytest

from course import main_notebooks

WORD_LIMITS = {"03": 8000, "04": 8000, "08": 6000, "09": 6000, "10": 6000}  # by the chapter folder's number
LIMITED = [p for p in main_notebooks() if p.parent.name[:2] in WORD_LIMITS]


def markdown_words(nb) -> int:
    return sum(len(cell.source.split()) for cell in nb.cells if cell.cell_type == "markdown")


def test_every_limited_chapter_is_found():
    assert {p.parent.name[:2] for p in LIMITED} >= {"03", "04", "08"}, [p.name for p in LIMITED]


@pytest.mark.parametrize("path", LIMITED, ids=[p.stem for p in LIMITED])
def test_main_notebook_stays_under_its_word_limit(path):
    words, limit = markdown_words(nbformat.read(path, as_version=4)), WORD_LIMITS[path.parent.name[:2]]
    assert words <= limit, (f"{path.name}: {words:,d} words of markdown, over its limit of {limit:,d} by "
                            f"{words - limit:,d}: tighten the prose, or move an optional part to a notebook beside it")


def test_words_are_counted_in_markdown_only():
    nb = nbformat.v4.new_notebook(cells=[nbformat.v4.new_markdown_cell("## Title\n\nthree words here | and $x = 1$"),
                                         nbformat.v4.new_code_cell("print('not counted at all')")])
    assert markdown_words(nb) == 10  # "##", "|" and the pieces of a formula count as the text shows them
