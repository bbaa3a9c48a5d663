"""What an instructor runs to hand a chapter out and to open formgrader (issue 41): the README's commands work."""

from __future__ import annotations

import json
import subprocess
import sys
import urllib.request
import zipfile
from pathlib import Path

import pytest

from course import NOTEBOOKS, REPO
from servers import TOKEN, free_port, root_flag, stop, wait_for

CHAPTER = "07-attention"
MANIFEST = json.loads((NOTEBOOKS / ".release-manifest.json").read_text())


def release_tool(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, str(REPO / "autograder" / "release.py"), *args], capture_output=True,
                          text=True, timeout=120)


def test_handout_zips_the_released_chapter_only(tmp_path):
    done = release_tool("--handout", str(tmp_path), "--chapter", CHAPTER)
    assert done.returncode == 0, done.stderr
    with zipfile.ZipFile(tmp_path / f"{CHAPTER}.zip") as bundle:
        names = bundle.namelist()
        assert names == sorted(r for r in MANIFEST if r.startswith(f"{CHAPTER}/")), names
        assert bundle.read(names[0]) == (NOTEBOOKS / names[0]).read_bytes()
    assert [p.name for p in tmp_path.iterdir()] == [f"{CHAPTER}.zip"], "only the chapter asked for"


def test_handout_names_an_unknown_chapter_and_a_misused_option(tmp_path):
    done = release_tool("--handout", str(tmp_path), "--chapter", "07-atention")
    assert done.returncode != 0 and "no chapter 07-atention" in done.stderr and "Traceback" not in done.stderr
    done = release_tool("--chapter", CHAPTER)
    assert done.returncode == 2 and "--chapter goes with --handout" in done.stderr


def test_workspace_has_a_writable_exchange(tmp_path):
    sys.path.insert(0, str(REPO / "autograder"))
    from workspace import make_workspace

    config = (make_workspace(tmp_path / "w") / "nbgrader_config.py").read_text()
    assert f"c.Exchange.root = {str((tmp_path / 'w' / 'exchange').resolve())!r}" in config
    assert (tmp_path / "w" / "exchange").is_dir()


@pytest.mark.slow
def test_make_formgrader_opens_formgrader_on_the_course(tmp_path):
    port = free_port()
    args = " ".join([f"--no-browser --ServerApp.token={TOKEN} --ServerApp.ip=127.0.0.1", *root_flag()])
    venv = Path(sys.executable).parent.parent
    server = subprocess.Popen(["make", "--no-print-directory", "-C", str(REPO), f"VENV={venv}", "-o", f"{venv}/.lab",
                               "formgrader", f"DIR={tmp_path / 'grading'}", f"PORT={port}", f"LAB_ARGS={args}"],
                              stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, start_new_session=True)
    base = f"http://127.0.0.1:{port}"
    try:
        assignments = json.loads(wait_for(f"{base}/formgrader/api/assignments?token={TOKEN}", server, 120))
        with urllib.request.urlopen(f"{base}/formgrader/?token={TOKEN}", timeout=30) as page:
            assert page.status == 200 and "formgrader" in page.read().decode().lower()
    finally:
        stop(server)
    # one assignment per chapter; the Chinese edition (zh/<chapter>/) is the same assignment, not another one
    chapters = {r.split("/")[0] for r in MANIFEST if not r.startswith("zh/")}
    assert sorted(a["name"] for a in assignments) == sorted(chapters), assignments
