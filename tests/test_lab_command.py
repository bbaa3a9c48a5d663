"""The README's "open the course" command really serves the course."""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import time
import urllib.request

import pytest

from course import NOTEBOOKS, REPO, solution_notebooks


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def readme_open_command() -> str:
    readme = (REPO / "README.md").read_text()
    block = readme.split("```bash", 1)[1].split("```", 1)[0]
    commands = [line.split("#")[0].strip() for line in block.splitlines() if line.strip()]
    assert commands[0] == "make lab", f"the README's first command should open the course, found {commands[0]!r}"
    return commands[0]


@pytest.mark.slow
def test_make_lab_serves_the_chapter_notebooks():
    port, token = free_port(), "course-test-token"
    args = f"--no-browser --ServerApp.token={token} --ServerApp.ip=127.0.0.1"
    if os.geteuid() == 0:
        args += " --allow-root"
    command = readme_open_command().split() + [f"PORT={port}", f"LAB_ARGS={args}"]
    server = subprocess.Popen(command, cwd=REPO, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                              start_new_session=True, text=True)
    chapter = solution_notebooks()[0]
    url = f"http://127.0.0.1:{port}/api/contents/{chapter.parent.name}/{chapter.name}?token={token}"
    try:
        deadline, last_error = time.time() + 240, None
        while time.time() < deadline:
            assert server.poll() is None, f"`make lab` exited early:\n{server.stdout.read()[-3000:]}"
            try:
                with urllib.request.urlopen(url, timeout=5) as response:
                    model = json.load(response)
                break
            except OSError as error:
                last_error = error
                time.sleep(1)
        else:
            pytest.fail(f"JupyterLab did not serve {url} in time: {last_error}")
        assert model["type"] == "notebook"
        expected = json.loads((NOTEBOOKS / chapter.parent.name / chapter.name).read_text())
        assert len(model["content"]["cells"]) == len(expected["cells"]), "served the student notebook from notebooks/"
        with urllib.request.urlopen(f"http://127.0.0.1:{port}/lab?token={token}", timeout=10) as response:
            assert response.status == 200 and b"JupyterLab" in response.read()
    finally:
        os.killpg(server.pid, signal.SIGTERM)
        try:
            server.wait(timeout=20)
        except subprocess.TimeoutExpired:
            os.killpg(server.pid, signal.SIGKILL)
