"""The Chinese edition run and read as the English one is (issue 46): nbconvert executes it, and its prose quotes
only figures the notebook prints.

* ``jupyter nbconvert --execute`` runs the Chinese edition of chapters 1 and 2 (the solution with its markdown
  from the catalog and the Chinese setup cell, what a learner who solved the zh notebook has) in grading mode, as
  the grader runs a submission: no cell fails or writes to stderr, and with the kernel told the notebook's path
  (Jupyter Server's JPY_SESSION_NAME) every visible test cell's pass line is Chinese.
* tests/test_claims.py's rules over each chapter's Chinese markdown: every number a Chinese cell quotes is printed
  by the chapter's learner run (the run test_claims reads, shared in its xdist group, so no notebook runs twice), or
  is a number its English cell quotes under one of test_claims' exemptions (its ALLOWLIST's sentence is English,
  so an allowed number is recognised through the English cell), or one the English rules do not check there (a
  chapter, exercise or hint number, which Chinese writes as 第 3 章, 练习 2, 提示 1).
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import nbformat
import pytest

from course import CHAPTERS, GRADING_BUDGET_S, REPO, SOLUTIONS, errors_of, is_graded_test, learner_marks, learner_run

sys.path.insert(0, str(REPO / "autograder"))
import i18n  # noqa: E402
import release  # noqa: E402
import test_claims as claims  # noqa: E402

TRANSLATED = [c for c in CHAPTERS if i18n.catalog_path(c).exists()]
NUMBER = i18n.NUMBER  # the numbers of a text as the catalogs keep them (each end of a range on its own)
ZH_SETUP_CELL = release.SETUP_CELL_ZH.format(**release.course_settings())
CHINESE_PASS_NOTE = "(可见检查已通过；隐藏测试在评分时运行)"
ENGLISH_PASS_NOTE = "(visible checks passed; hidden tests run at grading)"


def chinese_solution(path: Path):
    """The solution notebook as the Chinese edition has it: markdown from the chapter's catalog, the zh setup cell."""
    return i18n.translated_notebook(path, i18n.read_catalog(path.parent.name), setup_cell=ZH_SETUP_CELL)


def main_solution(chapter: str) -> Path:
    return SOLUTIONS / chapter / f"{chapter}.ipynb"


@pytest.mark.slow
@pytest.mark.xdist_group("i18n-nbconvert")
@pytest.mark.parametrize("chapter", ["01-ngram-language-models", "02-hidden-markov-models"])
def test_nbconvert_executes_the_chinese_edition_in_grading_mode_and_it_speaks_chinese(chapter, tmp_path):
    notebook = tmp_path / f"{chapter}.ipynb"
    nbformat.write(chinese_solution(main_solution(chapter)), notebook)
    scripts = str(Path(sys.executable).parent)
    environment = {**os.environ, "PATH": os.pathsep.join([scripts, os.environ.get("PATH", "")]),
                   "NBGRADER_EXECUTION": "autograde", "OMP_NUM_THREADS": "1", "JPY_SESSION_NAME": str(notebook)}
    environment.pop("SEQLAB_LANGUAGE", None)
    done = subprocess.run(["jupyter", "nbconvert", "--to", "notebook", "--execute", str(notebook), "--output-dir",
                           str(tmp_path / "out"), f"--ExecutePreprocessor.timeout={6 * GRADING_BUDGET_S}"],
                          cwd=REPO, env=environment, capture_output=True, text=True, timeout=20 * GRADING_BUDGET_S)
    assert done.returncode == 0, f"nbconvert --execute of the Chinese {chapter} failed:\n{done.stderr[-3000:]}"
    executed = nbformat.read(tmp_path / "out" / notebook.name, as_version=4)
    failures = [(i, errors_of(cell)) for i, cell in enumerate(executed.cells) if cell.cell_type == "code" and errors_of(cell)]
    assert not failures, f"cells with errors or stderr output: {failures}"
    lines = [line for cell in executed.cells if is_graded_test(cell) for output in cell.get("outputs", [])
             if output.get("output_type") == "stream" for line in output.text.splitlines() if line.startswith("\u2713")]
    tests = [cell for cell in executed.cells if is_graded_test(cell)]
    assert len(lines) >= len(tests) >= 6, f"{len(tests)} graded test cells printed {len(lines)} pass lines"
    english = [line for line in lines if ENGLISH_PASS_NOTE in line or CHINESE_PASS_NOTE not in line]
    assert not english, f"pass lines not in Chinese in the Chinese edition: {english}"


# ---- the figures the Chinese prose quotes ---------------------------------------------------------------------

def unbacked_in_chinese(english_cells: list[str], chinese_cells: list[str], printed: list[float], chapter: str) -> list[str]:
    """One line per number a Chinese markdown cell quotes (test_claims' rules) that is neither printed nor a number
    its English cell quotes and test_claims backs there (printed within the English rounding, or in its ALLOWLIST)
    or leaves unchecked (a reference, a year)."""
    found = []
    for index, (english, chinese) in enumerate(zip(english_cells, chinese_cells)):
        checked_in_english = claims.quoted_numbers(english)
        # The English check's verdict on the same number, read within the English sentence's rounding ("about
        # 24,000" is rounded there; test_claims' APPROX words are English, so 大约 24,000 would be read exactly).
        backed_in_english = {q.text for q in checked_in_english if claims.allowed(chapter, q) or claims.matches(q, printed)}
        unchecked_in_english = (set(i18n.kept_parts(english)["number"])
                                - {q.text.rstrip("%").replace(",", "") for q in checked_in_english})
        for quoted in claims.quoted_numbers(chinese):
            if claims.matches(quoted, printed) or quoted.text in backed_in_english:
                continue
            if set(n.replace(",", "") for n in NUMBER.findall(quoted.text)) <= unchecked_in_english:
                continue  # a reference or a year in English too: 第 3-4 章 is "chapters 3-4"
            found.append(f"chapter {chapter}, cell {index}: {quoted.text!r} is not printed, in «{quoted.sentence}»")
    return found


def markdown_pairs(chapter: str) -> tuple[list[str], list[str]]:
    english, chinese = [], []
    for path in sorted((SOLUTIONS / chapter).glob("*.ipynb")):
        translated = chinese_solution(path)
        for en, zh in zip(nbformat.read(path, as_version=4).cells, translated.cells):
            if en.cell_type == "markdown":
                english.append(en.source)
                chinese.append(zh.source)
    return english, chinese


@pytest.mark.parametrize("chapter", [pytest.param(c, marks=learner_marks(c)) for c in TRANSLATED])
def test_every_number_the_chinese_prose_quotes_is_printed(chapter):
    english, chinese = markdown_pairs(chapter)
    printed = []
    for path in sorted((SOLUTIONS / chapter).glob("*.ipynb")):
        run = learner_run(path)  # the run test_claims reads for the English prose
        assert run.notebook is not None, f"{path.name}: nbconvert wrote no notebook (exit {run.returncode})"
        printed += claims.printed_numbers(claims.outputs_text(run.notebook))
    problems = unbacked_in_chinese(english, chinese, printed, chapter[:2])
    assert not problems, f"{len(problems)} number(s) in the Chinese prose that the notebook does not print:\n" + "\n".join(problems)


def test_a_chinese_figure_the_notebook_does_not_print_is_named():
    english = ["The vocabulary keeps 24,344 words (see §3, Exercise 2, and chapters 3-4); the discount is 0.75."]
    printed = claims.printed_numbers("vocabulary: 24,344 words")
    faithful = ["词表保留 24,344 个词（见 §3、练习 2 和第 3-4 章）；折扣为 0.75。"]
    assert unbacked_in_chinese(english, faithful, printed, "01") == [], \
        "a printed figure, a reference and an allowed setting (01's D = 0.75) pass"
    slipped = ["词表保留 24,345 个词（见 §3、练习 2 和第 3-4 章）；折扣为 0.75。"]
    assert unbacked_in_chinese(english, slipped, printed, "01") == [
        "chapter 01, cell 0: '24,345' is not printed, in «词表保留 24,345 个词（见 §3、练习 2 和第 3-4 章）；折扣为 0.75。»"]
    wrong_chapters = ["词表保留 24,344 个词（见 §3、练习 2 和第 3-5 章）；折扣为 0.75。"]
    assert unbacked_in_chinese(english, wrong_chapters, printed, "01")[0].startswith("chapter 01, cell 0: '3-5' is not printed")
    about = (["The vocabulary keeps about 24,000 words."], ["词表大约保留 24,000 个词。"])
    assert unbacked_in_chinese(*about, printed, "01") == [], "the English sentence's rounding holds for the Chinese"
    unlisted = ["词表保留 24,344 个词（见 §3、练习 2 和第 3-4 章）；折扣为 0.8。"]
    assert unbacked_in_chinese(english, unlisted, printed, "01")[0].startswith("chapter 01, cell 0: '0.8' is not printed")
