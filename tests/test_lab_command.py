"""The README's "open the course" command really serves the course."""

from __future__ import annotations

import json
import subprocess

import pytest

from course import NOTEBOOKS, REPO, solution_notebooks
from servers import TOKEN, free_port, root_flag, stop, wait_for


def readme_open_command() -> str:
    readme = (REPO / "README.md").read_text()
    block = readme.split("```bash", 1)[1].split("```", 1)[0]
    commands = [line.split("#")[0].strip() for line in block.splitlines() if line.strip()]
    assert commands[0] == "make lab", f"the README's first command should open the course, found {commands[0]!r}"
    return commands[0]


@pytest.mark.slow
def test_make_lab_serves_the_chapter_notebooks():
    port = free_port()
    args = " ".join([f"--no-browser --ServerApp.token={TOKEN} --ServerApp.ip=127.0.0.1", *root_flag()])
    command = readme_open_command().split() + [f"PORT={port}", f"LAB_ARGS={args}"]
    server = subprocess.Popen(command, cwd=REPO, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                              start_new_session=True, text=True)
    chapter = solution_notebooks()[0]
    base = f"http://127.0.0.1:{port}"
    try:
        # The first call may install the course into .venv: allow for it.
        model = json.loads(wait_for(f"{base}/api/contents/{chapter.parent.name}/{chapter.name}?token={TOKEN}", server, 300))
        assert model["type"] == "notebook"
        expected = json.loads((NOTEBOOKS / chapter.parent.name / chapter.name).read_text())
        assert len(model["content"]["cells"]) == len(expected["cells"]), "served the student notebook from notebooks/"
        assert b"JupyterLab" in wait_for(f"{base}/lab?token={TOKEN}", server, 30)
    finally:
        stop(server)
