"""The submission service as a JupyterHub service (serve.py --hub, autograder/serve_hub.py, issue 45), against a stub
Hub: a small local HTTP server that answers GET /hub/api/user as the Hub does (the token's owner's model: kind,
name, scopes; 403 for a token it does not know), so no Hub has to run. The service runs under uvicorn on a port
with the environment a Hub gives a managed service, behind the prefix the Hub's proxy keeps (/services/<name>/).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest

from course import REPO

sys.path.insert(0, str(REPO / "autograder"))
from sandbox import bubblewrap  # noqa: E402

httpx = pytest.importorskip("httpx")
pytest.importorskip("fastapi")
pytest.importorskip("jupyterhub")
from servers import free_port  # noqa: E402
from test_serve import CHAPTER, LIMITS, SERVE, finished, notebooks, stop  # noqa: E402

pytestmark = [pytest.mark.slow, pytest.mark.xdist_group("serve-hub"),
              pytest.mark.skipif(bubblewrap() is None, reason="bubblewrap is not installed")]

NAME = "seqlab-submit"
PREFIX = f"/services/{NAME}"
ACCESS = f"access:services!service={NAME}"


def user_model(name: str, *scopes: str, kind: str = "user") -> dict:
    """GET /hub/api/user's answer for a token (JupyterHub's REST API: the owner's model and the token's scopes)."""
    model = {"kind": kind, "name": name, "admin": False, "roles": ["user"], "groups": [], "server": f"/user/{name}/",
             "pending": None, "created": "2026-09-01T08:00:00.000000Z", "last_activity": "2026-11-28T09:00:00.000000Z",
             "servers": {}, "token_id": f"a{len(name)}", "session_id": None,
             "scopes": sorted({f"read:users:name!user={name}", f"read:users:groups!user={name}",
                               f"users:activity!user={name}", f"access:servers!server={name}/", *scopes})}
    if kind == "service":
        model = {"kind": "service", "name": name, "roles": [], "scopes": sorted(scopes), "token_id": "s1",
                 "session_id": None}
    return model


TOKENS = {
    "alice-token": user_model("alice", ACCESS),
    "bob-token": user_model("bob", ACCESS),
    "carol-token": user_model("carol"),  # her server's token was not given access to the service
    "service-token": user_model("cull-idle", ACCESS, kind="service"),
}


class StubHub(BaseHTTPRequestHandler):
    asked: list[tuple[str, str]] = []

    def do_GET(self):  # noqa: N802 - http.server's name
        token = self.headers.get("Authorization", "")
        StubHub.asked.append((self.path, token))
        scheme, _, value = token.partition(" ")
        model = TOKENS.get(value) if scheme.lower() == "token" else None
        if self.path.split("?")[0] != "/hub/api/user" or model is None:
            body, status = {"status": 403, "message": "Forbidden"}, 403
        else:
            body, status = model, 200
        data = json.dumps(body).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def log_message(self, *args):  # quiet
        pass


@pytest.fixture(scope="module")
def hub_service(tmp_path_factory):
    hub = ThreadingHTTPServer(("127.0.0.1", 0), StubHub)
    threading.Thread(target=hub.serve_forever, daemon=True).start()
    workspace = tmp_path_factory.mktemp("serve-hub") / "workspace"
    workspace.mkdir()
    port = free_port()
    env = {**os.environ, "JUPYTERHUB_API_URL": f"http://127.0.0.1:{hub.server_port}/hub/api",
           "JUPYTERHUB_API_TOKEN": "the-service-s-own-token", "JUPYTERHUB_SERVICE_NAME": NAME,
           "JUPYTERHUB_SERVICE_PREFIX": f"{PREFIX}/", "JUPYTERHUB_SERVICE_URL": f"http://127.0.0.1:{port}",
           "JUPYTERHUB_BASE_URL": "/"}
    log = open(workspace.parent / "serve.log", "ab")
    server = subprocess.Popen([*SERVE, str(workspace), "--hub", "--jobs", "1", *LIMITS], env=env, stdout=log,
                              stderr=subprocess.STDOUT, start_new_session=True)
    url = f"http://127.0.0.1:{port}{PREFIX}"
    deadline = time.time() + 180
    while True:
        assert server.poll() is None, (workspace.parent / "serve.log").read_text()[-3000:]
        try:
            if httpx.get(f"{url}/health", timeout=5).status_code == 200:
                break
        except httpx.HTTPError:
            pass
        assert time.time() < deadline, "the service did not answer /health in 180 s"
        time.sleep(0.5)
    yield {"url": url, "workspace": workspace, "server": server}
    stop(server)
    hub.shutdown()


def hub_auth(token: str) -> dict:
    return {"Authorization": f"token {token}"}


def test_the_hub_says_who_the_student_is_and_what_they_may_read(hub_service, tmp_path):
    url = hub_service["url"]
    limits = httpx.get(f"{url}/limits/{CHAPTER}", headers=hub_auth("alice-token"), timeout=30)
    assert limits.status_code == 200, limits.text
    assert limits.json()["chapter"] == CHAPTER and limits.json()["exercises"]
    assert ("/hub/api/user", "token alice-token") in StubHub.asked, "the service should ask the Hub with the token"

    for headers, status, said in (({}, 401, "no token"),
                                  (hub_auth("forged"), 401, "does not know this token"),
                                  (hub_auth("carol-token"), 403, ACCESS),
                                  (hub_auth("service-token"), 403, "service's token")):
        refused = httpx.get(f"{url}/submissions", headers=headers, timeout=30)
        assert refused.status_code == status and said in refused.json()["error"], refused.text

    # python -m seqlab.submit in alice's notebook server: no token given, the server's JUPYTERHUB_API_TOKEN is sent
    notebook = tmp_path / f"{CHAPTER}.ipynb"
    notebook.write_bytes(notebooks()["os_exit"])
    env = {**os.environ, "JUPYTERHUB_API_TOKEN": "alice-token", "SEQLAB_SUBMIT_SERVER": url}
    env.pop("SEQLAB_SUBMIT_TOKEN", None)
    sent = subprocess.run([sys.executable, "-m", "seqlab.submit", str(notebook), "--no-wait", "--json"], env=env,
                          capture_output=True, text=True, timeout=120)
    assert sent.returncode == 0, sent.stderr
    sid = json.loads(sent.stdout)["id"]
    reply = httpx.get(f"{url}/submissions/{sid}", headers=hub_auth("alice-token"), timeout=30)
    assert reply.status_code == 200 and reply.json()["chapter"] == CHAPTER
    assert httpx.get(f"{url}/submissions/{sid}", headers=hub_auth("bob-token"), timeout=30).status_code == 404
    assert httpx.get(f"{url}/submissions", headers=hub_auth("bob-token"), timeout=30).json() == \
        {"student": "bob", "submissions": []}
    assert [s["id"] for s in httpx.get(f"{url}/submissions", headers={"Authorization": "Bearer alice-token"},
                                       timeout=30).json()["submissions"]] == [sid]
    assert finished({"url": url, "tokens": {"alice": "alice-token"}}, "alice", sid)["status"] == "graded"


def test_hub_mode_without_the_hub_s_variables_or_library_says_what_is_missing(tmp_path):
    env = {k: v for k, v in os.environ.items() if not k.startswith("JUPYTERHUB_")}
    done = subprocess.run([*SERVE, str(tmp_path / "workspace"), "--hub", "--allow-unsandboxed"], env=env,
                          capture_output=True, text=True, timeout=120)
    assert done.returncode == 2 and "JUPYTERHUB_API_TOKEN is not set" in done.stderr, done.stderr
    assert "Traceback" not in done.stderr
