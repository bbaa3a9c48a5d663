"""A learner's work is never lost (issue 41): it lives in work/, which `make lab` opens and no course update
touches; `make release` keeps every file under notebooks/ that it did not write; Jupyter's checkpoints and a
learner's own notebooks never fail a test.

The slow tests work on a copy of the course (this checkout's files, uncommitted ones included, in a git repository
of its own), so that they can release, edit and commit without touching the checkout the suite runs in.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

import pytest

from browser import chromium, chromium_path, new_page, wait_for_kernel
from course import NOTEBOOKS, REPO
from servers import TOKEN, free_port, root_flag, stop, wait_for

sys.path.insert(0, str(REPO / "helpers"))
from seqlab import work  # noqa: E402

CHAPTER = "07-attention"
NAME = f"{CHAPTER}/{CHAPTER}.ipynb"
VENV = Path(sys.executable).parent.parent
GIT = ["git", "-c", "user.name=learner", "-c", "user.email=learner@example.org", "-c", "commit.gpgsign=false"]


def course_copy(tmp_path: Path) -> Path:
    """This checkout's tracked and untracked-but-not-ignored files under tmp_path/course, committed once."""
    listed = subprocess.run(["git", "-C", str(REPO), "ls-files", "-z", "-c", "-o", "--exclude-standard"],
                            capture_output=True, check=True).stdout.split(b"\0")
    course = tmp_path / "course"
    for name in filter(None, (os.fsdecode(n) for n in listed)):
        if (REPO / name).is_file():
            (course / name).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(REPO / name, course / name)
    subprocess.run(["git", "init", "-q", str(course)], check=True)
    subprocess.run([*GIT, "-C", str(course), "add", "-A"], check=True)
    subprocess.run([*GIT, "-C", str(course), "commit", "-q", "-m", "the course"], check=True)
    return course


def release(course: Path, *args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, str(course / "autograder" / "release.py"), *args], cwd=course,
                          capture_output=True, text=True, timeout=600)


def make(course: Path, *targets: str, **kw) -> subprocess.Popen | subprocess.CompletedProcess:
    """`make` in the copy with this suite's .venv, which make must neither create nor reinstall (-o: taken as done)."""
    command = ["make", "--no-print-directory", "-C", str(course), f"VENV={VENV}", "-o", f"{VENV}/.lab",
               "-o", f"{VENV}/.test", "-o", f"{VENV}/.torch", *targets]
    if kw.pop("background", False):
        return subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                                start_new_session=True, **kw)
    return subprocess.run(command, capture_output=True, text=True, timeout=600, **kw)


needs_git = pytest.mark.skipif(shutil.which("git") is None or not (REPO / ".git").exists(),
                               reason="the course copy is made from this checkout's git index")


def test_work_copies_once_and_never_overwrites(tmp_path):
    release_dir, work_dir = tmp_path / "notebooks", tmp_path / "work"
    (release_dir / "01-a").mkdir(parents=True)
    (release_dir / "01-a" / "01-a.ipynb").write_text("release 1")
    (release_dir / "01-a" / ".ipynb_checkpoints").mkdir()
    (release_dir / "01-a" / ".ipynb_checkpoints" / "01-a-checkpoint.ipynb").write_text("checkpoint")
    lines = work.update(release_dir, work_dir)
    assert (work_dir / "01-a" / "01-a.ipynb").read_text() == "release 1"
    assert not (work_dir / "01-a" / ".ipynb_checkpoints").exists(), "Jupyter's checkpoints are no course notebook"
    assert lines[0].startswith("copied")

    (work_dir / "01-a" / "01-a.ipynb").write_text("my answers")
    (release_dir / "01-a" / "01-a.ipynb").write_text("release 2")
    (release_dir / "02-b").mkdir()
    (release_dir / "02-b" / "02-b.ipynb").write_text("new chapter")
    lines = work.update(release_dir, work_dir)
    assert (work_dir / "01-a" / "01-a.ipynb").read_text() == "my answers", "a learner's copy was overwritten"
    assert (work_dir / "02-b" / "02-b.ipynb").read_text() == "new chapter", "a new chapter was not copied"
    assert any("changed since you copied it" in line and "01-a" in line for line in lines), lines


def test_work_refuses_a_file_in_the_way(tmp_path):
    (tmp_path / "work").write_text("not a folder")
    (tmp_path / "notebooks").mkdir()
    with pytest.raises(SystemExit, match="not a folder"):
        work.update(tmp_path / "notebooks", tmp_path / "work")


def test_the_manifest_lists_exactly_the_released_notebooks():
    manifest = json.loads((NOTEBOOKS / ".release-manifest.json").read_text())
    released = sorted(p.relative_to(NOTEBOOKS).as_posix() for pattern in ("*/*.ipynb", "zh/*/*.ipynb")  # zh: issue 46
                      for p in NOTEBOOKS.glob(pattern))
    tracked = subprocess.run(["git", "-C", str(REPO), "ls-files", "notebooks"], capture_output=True, text=True)
    if tracked.returncode == 0:  # in a checkout the learner's own notebooks may lie there: compare with git's
        released = sorted(n.removeprefix("notebooks/") for n in tracked.stdout.split() if n.endswith(".ipynb"))
    assert sorted(manifest) == released


@pytest.mark.slow
@needs_git
def test_release_keeps_checkpoints_own_notebooks_and_edits(tmp_path):
    course = course_copy(tmp_path)
    chapter = course / "notebooks" / CHAPTER
    original = (course / "notebooks" / NAME).read_bytes()
    (chapter / ".ipynb_checkpoints").mkdir()
    checkpoint = chapter / ".ipynb_checkpoints" / f"{CHAPTER}-checkpoint.ipynb"
    checkpoint.write_bytes(original)
    own = chapter / "my-experiments.ipynb"
    own.write_text('{"cells": [], "metadata": {}, "nbformat": 4, "nbformat_minor": 5}')
    edited = original.replace(b"raise NotImplementedError()", b"return None  # my answer", 1)
    assert edited != original
    (course / "notebooks" / NAME).write_bytes(edited)

    checked = release(course, "--check")
    assert checked.returncode == 0, f"a learner's files failed the release check:\n{checked.stdout}{checked.stderr}"
    assert "edited here since the release" in checked.stdout and "my-experiments.ipynb" in checked.stdout

    released = release(course)
    assert released.returncode == 0, released.stderr
    assert (course / "work" / NAME).read_bytes() == edited, "the learner's edit was not kept in work/"
    assert f"your version is now work/{NAME}" in released.stdout, released.stdout
    assert (course / "notebooks" / NAME).read_bytes() == original, "the release notebook was not put back"
    assert checkpoint.read_bytes() == original and own.exists(), "release deleted a file it did not write"

    # An edit committed to notebooks/ is the course's own drift, not a learner's: the check fails on it.
    (course / "notebooks" / NAME).write_bytes(edited)
    subprocess.run([*GIT, "-C", str(course), "commit", "-q", "-am", "hand-edited release"], check=True)
    drifted = release(course, "--check")
    assert drifted.returncode == 1 and "committed with edits" in drifted.stderr, drifted.stderr


@pytest.mark.slow
@needs_git
@pytest.mark.skipif(chromium_path() is None, reason="Chromium is not installed (apt-get install chromium)")
def test_the_readme_path_open_edit_save_test_release_keeps_the_learners_file(tmp_path):
    """`make lab`, open chapter 7 in the browser, type an answer, save; the release tests pass; `make release`;
    the saved notebook is still there, with the answer."""
    course = course_copy(tmp_path)
    port = free_port()
    args = " ".join([f"--no-browser --ServerApp.token={TOKEN} --ServerApp.ip=127.0.0.1", *root_flag()])
    server = make(course, "lab", f"PORT={port}", f"LAB_ARGS={args}", background=True)
    base = f"http://127.0.0.1:{port}"
    saved = course / "work" / NAME
    marker = "# my answer, typed in the Lab"
    try:
        wait_for(f"{base}/api/contents/{NAME}?token={TOKEN}", server, 120)
        with chromium() as browser, new_page(browser, 1280, 800) as page:
            page.goto(f"{base}/lab/tree/{NAME}?token={TOKEN}&reset")
            page.wait_for_selector(".jp-Notebook .jp-Cell", timeout=90_000)
            wait_for_kernel(page)
            editor = page.locator(".jp-CodeCell .cm-content").nth(1)
            editor.click()
            page.keyboard.press("Control+End")
            page.keyboard.type("\n" + marker)
            page.keyboard.press("Control+s")
            deadline = time.time() + 30
            while marker not in saved.read_text(encoding="utf-8") and time.time() < deadline:
                time.sleep(0.5)
    finally:
        stop(server)
    assert marker in saved.read_text(encoding="utf-8"), "the Lab did not save the learner's edit into work/"
    assert not (course / "notebooks" / CHAPTER / ".ipynb_checkpoints").exists(), "the Lab wrote into notebooks/"

    tests = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "tests/test_release.py",
                            "tests/test_learner_work.py::test_the_manifest_lists_exactly_the_released_notebooks"],
                           cwd=course, capture_output=True, text=True, timeout=600)
    assert tests.returncode == 0, f"the release tests failed beside a learner's work:\n{tests.stdout[-3000:]}"
    released = make(course, "release")
    assert released.returncode == 0, released.stdout + released.stderr
    assert marker in saved.read_text(encoding="utf-8"), "`make release` lost the learner's saved notebook"
    relaunched = make(course, "work")
    assert relaunched.returncode == 0 and marker in saved.read_text(encoding="utf-8"), "`make work` overwrote it"
