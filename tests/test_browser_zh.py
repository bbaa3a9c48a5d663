"""The Chinese edition as a Chinese-reading student meets it, in a real browser (Debian's Chromium, 1280 px).

`make lab EDITION=zh` opens JupyterLab with jupyter-config/student-zh in front of the student's configuration: the
interface in Chinese (the lab extra's language pack, chosen by the settings override there). The student opens
chapter 1 of notebooks/zh/, reads its Chinese text, writes a build_vocab that forgets the alphabetical tie-break
and runs the exercise's visible test cell: the kernel, started by Jupyter Server for a notebook whose metadata
says "language": "zh", tells the mistake in Chinese (seqlab's catalog), without anything set by hand.

The Lab's configuration path is the one `make lab EDITION=zh` uses (read from `make -n`), so a Makefile that stops
putting the Chinese settings in front fails here.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
import time

import nbformat
import pytest

from browser import chromium, chromium_path, new_page
from course import BUILD, NOTEBOOKS, REPO
from servers import TOKEN, jupyter

sys.path.insert(0, str(REPO / "helpers"))
from seqlab import i18n as seqlab_i18n  # noqa: E402

CHAPTER = "01-ngram-language-models"
NOTEBOOK = f"{CHAPTER}.ipynb"
# The learner's build_vocab: right but for the tie-break, so the exercise's second check fails with its hint.
NO_TIE_BREAK = '''def build_vocab(sentences: list[list[str]], min_count: int = 2) -> list[str]:
    counts = Counter(w for s in sentences for w in s)
    kept = [w for w in counts if counts[w] >= min_count]
    kept.sort(key=lambda w: -counts[w])
    return [UNK, BOS, EOS] + kept'''
HINT = "keep words seen at least min_count times; break ties in frequency alphabetically"


def lab_config_path(edition: str) -> str:
    """JUPYTER_CONFIG_PATH as `make lab EDITION=...` sets it (the command make would run, not run)."""
    environment = {k: v for k, v in os.environ.items() if k not in ("JUPYTER_CONFIG_PATH", "MAKEFLAGS", "MAKELEVEL")}
    done = subprocess.run(["make", "-n", "--no-print-directory", "lab", f"EDITION={edition}"], cwd=REPO,
                          capture_output=True, text=True, env=environment, timeout=60)
    found = re.search(r"JUPYTER_CONFIG_PATH=(\S+)", done.stdout)
    assert found, f"`make -n lab EDITION={edition}` sets no JUPYTER_CONFIG_PATH:\n{done.stdout}\n{done.stderr}"
    return found.group(1)


def the_zh_notebook_with_no_tie_break(folder) -> None:
    nb = nbformat.read(NOTEBOOKS / "zh" / CHAPTER / NOTEBOOK, as_version=4)
    cell = next(c for c in nb.cells if c.cell_type == "code" and c.source.startswith("def build_vocab"))
    assert "raise NotImplementedError()" in cell.source
    cell.source = NO_TIE_BREAK
    (folder / CHAPTER).mkdir(parents=True)
    nbformat.write(nb, folder / CHAPTER / NOTEBOOK)


def wait_for_idle_kernel(page, seconds: float = 120) -> None:
    """The execution indicator's state is the same in every language (the kernel dialog's words are not)."""
    deadline = time.time() + seconds
    while time.time() < deadline:
        if page.locator('.jp-Notebook-ExecutionIndicator[data-status="idle"]').count():
            return
        page.wait_for_timeout(500)
    raise TimeoutError("the notebook's kernel did not become idle")


def run_cell(page, index: int) -> None:
    """Select code cell ``index`` by its prompt, as a person clicks beside it, and run it with Ctrl+Enter."""
    cell = page.locator(".jp-Notebook .jp-Cell").nth(index)
    cell.scroll_into_view_if_needed()
    cell.locator(".jp-InputPrompt").first.click()
    page.keyboard.press("Control+Enter")


def output_of(page, index: int, seconds: float = 90) -> str:
    """Code cell ``index``'s output once its prompt shows a number (it ran)."""
    cell = page.locator(".jp-Notebook .jp-Cell").nth(index)
    deadline = time.time() + seconds
    while time.time() < deadline:
        prompt = cell.locator(".jp-InputPrompt").first.inner_text().strip()
        if re.fullmatch(r"\[\d+\]:", prompt):
            return cell.locator(".jp-OutputArea").first.inner_text()
        page.wait_for_timeout(250)
    raise TimeoutError(f"cell {index} did not run (prompt {prompt!r})")


@pytest.mark.slow
@pytest.mark.serial
@pytest.mark.skipif(chromium_path() is None, reason="Chromium is not installed (apt-get install chromium)")
def test_the_chinese_edition_in_a_chinese_lab_reads_and_checks_in_chinese(tmp_path):
    the_zh_notebook_with_no_tie_break(tmp_path)
    cells = nbformat.read(tmp_path / CHAPTER / NOTEBOOK, as_version=4).cells
    needed = [i for i, c in enumerate(cells) if c.cell_type == "code" and (
        "from seqlab.check import" in c.source or c.source.startswith('BOS, EOS, UNK = ')
        or c.source.startswith("def build_vocab") or c.metadata.get("nbgrader", {}).get("grade_id") == "build_vocab_tests")]
    assert len(needed) == 4, needed
    title = cells[1].source.splitlines()[0].lstrip("# ")
    assert "章" in title, f"the zh notebook's title is not Chinese: {title!r}"
    hint = seqlab_i18n.translations("zh").gettext(HINT)
    assert hint != HINT, "the hint has no Chinese entry in seqlab's catalog"

    config = lab_config_path("zh")
    assert "jupyter-config/student-zh" in config and "jupyter-config/student" in config.split(":")[-1], config
    with jupyter("lab", tmp_path, JUPYTER_CONFIG_PATH=config) as base, chromium() as browser, \
            new_page(browser, 1280, 800) as page:
        page.goto(f"{base}/lab/tree/{CHAPTER}/{NOTEBOOK}?token={TOKEN}&reset")
        page.wait_for_selector(".jp-Notebook .jp-Cell", timeout=90_000)
        page.locator(".lm-MenuBar-itemLabel", has_text="内核").wait_for(timeout=60_000)
        menus = page.locator(".lm-MenuBar-itemLabel").all_inner_texts()
        heading = page.locator(".jp-MarkdownCell h1").first.inner_text()
        wait_for_idle_kernel(page)
        for index in needed:
            run_cell(page, index)
        said = output_of(page, needed[-1])
        (BUILD / "screenshots").mkdir(parents=True, exist_ok=True)
        page.screenshot(path=str(BUILD / "screenshots" / "lab-zh.png"))
    assert {"文件", "内核", "运行"} <= set(menus) and "File" not in menus, f"the Lab's menus are not Chinese: {menus}"
    assert heading.startswith("第 1 章"), heading
    assert "build_vocab(toy, min_count=2)：应为" in said and hint in said, \
        f"the visible check did not speak Chinese:\n{said}"
    assert "expected" not in said and "Hint:" not in said, f"English beside the Chinese:\n{said}"
