"""What a student's JupyterLab shows against an instructor's, in a real browser (Debian's Chromium, 1280 px).

`make lab` puts jupyter-config/student first on Jupyter's config path: nbgrader's Validate button stays in the
notebook's toolbar, its instructor tools (the Nbgrader menu with the formgrader, the Create Assignment panel) are
gone. An instructor's Jupyter reads the installed configuration and shows them all. tests/test_lab_command.py
checks the configuration each one reads; this test checks what the page then shows. No cell runs.
"""

from __future__ import annotations

import shutil

import pytest

from browser import chromium, chromium_path, new_page
from course import BUILD, NOTEBOOKS, REPO
from servers import TOKEN, jupyter

CHAPTER = "01-ngram-language-models"
STUDENT_CONFIG = REPO / "jupyter-config" / "student"


@pytest.mark.slow
@pytest.mark.skipif(chromium_path() is None, reason="Chromium is not installed (apt-get install chromium)")
@pytest.mark.parametrize("who", ["student", "instructor"])
def test_a_student_s_lab_has_validate_and_no_instructor_tools(who, tmp_path):
    shutil.copytree(NOTEBOOKS / CHAPTER, tmp_path / CHAPTER)
    env = {"JUPYTER_CONFIG_PATH": str(STUDENT_CONFIG)} if who == "student" else {"JUPYTER_CONFIG_PATH": ""}
    with jupyter("lab", tmp_path, **env) as base, chromium() as browser, new_page(browser, 1280, 800) as page:
        page.goto(f"{base}/lab/tree/{CHAPTER}/{CHAPTER}.ipynb?token={TOKEN}&reset")
        page.wait_for_selector(".jp-Notebook .jp-Cell", timeout=90_000)
        toolbar = page.locator(".jp-NotebookPanel-toolbar")
        toolbar.get_by_text("Validate", exact=True).wait_for(timeout=30_000)  # the last toolbar item to arrive
        menus = page.locator(".lm-MenuBar-itemLabel").all_inner_texts()
        panels = page.locator(".lm-TabBar-tab").evaluate_all("tabs => tabs.map(t => t.getAttribute('title') || '')")
        (BUILD / "screenshots").mkdir(parents=True, exist_ok=True)
        page.screenshot(path=str(BUILD / "screenshots" / f"lab-{who}.png"))
    assert "File" in menus and "Kernel" in menus, menus
    if who == "student":
        assert "Nbgrader" not in menus, f"the student's Lab shows nbgrader's instructor menu: {menus}"
        assert not [p for p in panels if "Create Assignment" in p], f"the student's Lab shows the panel: {panels}"
    else:
        assert "Nbgrader" in menus, f"the instructor's Lab lacks nbgrader's menu: {menus}"
        assert [p for p in panels if "Create Assignment" in p], f"the instructor's Lab lacks the panel: {panels}"
