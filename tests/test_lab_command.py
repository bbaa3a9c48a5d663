"""The README's "open the course" command really serves the course."""

from __future__ import annotations

import json
import re
import subprocess
import urllib.error
import urllib.request

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
        assert len(model["content"]["cells"]) == len(expected["cells"]), "served the learner's copy in work/ of the student notebook"
        page = wait_for(f"{base}/lab?token={TOKEN}", server, 30).decode()
        assert "JupyterLab" in page
        # a student's Lab: nbgrader's Validate, none of the instructor's panels, menus or pages
        config = json.loads(re.search(r'id="jupyter-config-data"[^>]*>(.*?)</script>', page, re.S).group(1))
        disabled = set(config.get("disabledExtensions", []))
        assert INSTRUCTOR_PLUGINS <= disabled and "@jupyter/nbgrader:validate-assignment" not in disabled, disabled
        assert status_of(f"{base}/formgrader?token={TOKEN}") == 404, "the instructor's formgrader is served"
        assert status_of(f"{base}/nbgrader_version?token={TOKEN}&version=0") != 404, "Validate has no server side"
    finally:
        stop(server)


INSTRUCTOR_PLUGINS = {"@jupyter/nbgrader:formgrader", "@jupyter/nbgrader:create-assignment",
                      "@jupyter/nbgrader:course-list", "@jupyter/nbgrader:assignment-list", "@jupyter/nbgrader:menu"}


def status_of(url: str) -> int:
    try:
        with urllib.request.urlopen(url, timeout=10) as response:
            return response.status
    except urllib.error.HTTPError as error:
        return error.code


STUDENT_CONFIG = REPO / "jupyter-config" / "student"


@pytest.mark.parametrize("who", ["student", "instructor"])
def test_only_the_instructor_gets_nbgrader_s_instructor_tools(who, monkeypatch):
    """The configuration each one's Jupyter reads: `make lab` puts jupyter-config/student first on the config path;
    an instructor's Jupyter (`make workspace`, then `jupyter lab` there) reads the installed one, where nbgrader
    enables every part of itself."""
    from jupyter_core.paths import jupyter_config_path
    from jupyter_server.extension.config import ExtensionConfigManager
    from jupyterlab_server.config import get_page_config

    monkeypatch.setenv("JUPYTER_CONFIG_PATH", str(STUDENT_CONFIG) if who == "student" else "")
    paths = jupyter_config_path()
    servers = ExtensionConfigManager(read_config_path=paths).get_jpserver_extensions()
    disabled = set(get_page_config([str(p) + "/labconfig" for p in paths]).get("disabledExtensions", {}))
    assert servers.get("nbgrader.server_extensions.validate_assignment") is True
    if who == "student":
        assert not any(servers.get(f"nbgrader.server_extensions.{name}") for name in ("formgrader", "course_list",
                                                                                       "assignment_list")), servers
        assert INSTRUCTOR_PLUGINS <= disabled, disabled
    else:
        assert servers.get("nbgrader.server_extensions.formgrader") is True, servers
        assert not disabled & INSTRUCTOR_PLUGINS, disabled
