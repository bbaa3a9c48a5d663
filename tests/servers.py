"""Start and stop Jupyter servers for tests: a free local port, a token, a whole process group."""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
import urllib.request
from pathlib import Path
from typing import Iterator

TOKEN = "course-test-token"


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def wait_for(url: str, server: subprocess.Popen, seconds: float) -> bytes:
    """GET ``url`` until it answers 200; fail early if the server died."""
    deadline, last_error = time.time() + seconds, None
    while time.time() < deadline:
        if server.poll() is not None:
            output = server.stdout.read() if server.stdout else ""
            raise RuntimeError(f"the server exited with {server.returncode}:\n{output[-3000:]}")
        try:
            with urllib.request.urlopen(url, timeout=5) as response:
                return response.read()
        except OSError as error:
            last_error = error
            time.sleep(0.5)
    raise TimeoutError(f"{url} did not answer in {seconds:.0f} s: {last_error}")


def stop(server: subprocess.Popen) -> None:
    with contextlib.suppress(ProcessLookupError):
        os.killpg(server.pid, signal.SIGTERM)
    try:
        server.wait(timeout=20)
    except subprocess.TimeoutExpired:
        os.killpg(server.pid, signal.SIGKILL)


def root_flag() -> list[str]:
    return ["--allow-root"] if os.geteuid() == 0 else []


# JupyterLab 4 and Notebook 7 render only the cells near the viewport; tests see every cell,
# and no news pop-up covers the screenshots.
TEST_SETTINGS = {
    "@jupyterlab/notebook-extension/tracker.jupyterlab-settings": '{"windowingMode": "none"}',
    "@jupyterlab/apputils-extension/notification.jupyterlab-settings": '{"fetchNews": "false", "checkForUpdates": false}',
}


@contextlib.contextmanager
def jupyter(app: str, root: Path, **env: str) -> Iterator[str]:
    """``jupyter lab`` or ``jupyter notebook`` serving ``root``; yields the base URL (token in TOKEN)."""
    settings = Path(tempfile.mkdtemp(prefix="jupyter-settings-"))
    for name, text in TEST_SETTINGS.items():
        (settings / name).parent.mkdir(parents=True, exist_ok=True)
        (settings / name).write_text(text)
    # A fresh workspace too: JupyterLab would otherwise reopen the tabs of an earlier run.
    env = {"JUPYTERLAB_SETTINGS_DIR": str(settings), "JUPYTERLAB_WORKSPACES_DIR": str(settings / "workspaces"), **env}
    port = free_port()
    scripts = Path(sys.executable).parent
    command = [str(scripts / "jupyter"), app, "--no-browser", f"--port={port}", "--ServerApp.ip=127.0.0.1",
               f"--ServerApp.token={TOKEN}", f"--ServerApp.root_dir={root}", *root_flag()]
    environment = {**os.environ, **env, "PATH": os.pathsep.join([str(scripts), os.environ.get("PATH", "")])}
    server = subprocess.Popen(command, env=environment, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                              text=True, start_new_session=True)
    base = f"http://127.0.0.1:{port}"
    try:
        wait_for(f"{base}/api/status?token={TOKEN}", server, 120)
        yield base
    finally:
        stop(server)
        shutil.rmtree(settings, ignore_errors=True)


def shut_down_kernels(base: str) -> None:
    """End every session and kernel of a running server (what closing a notebook's tab leaves running)."""
    def call(method: str, path: str):
        request = urllib.request.Request(f"{base}{path}?token={TOKEN}", method=method)
        with urllib.request.urlopen(request, timeout=30) as response:
            return json.loads(response.read() or b"null")

    for session in call("GET", "/api/sessions"):
        call("DELETE", f"/api/sessions/{session['id']}")
    for kernel in call("GET", "/api/kernels"):
        call("DELETE", f"/api/kernels/{kernel['id']}")
