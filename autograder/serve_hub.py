"""The submission service (serve.py) as a JupyterHub service: the students are the Hub's users.

    python autograder/serve.py WORKSPACE --hub

JupyterHub starts it (a managed service) or the instructor does (an external one) with the Hub's environment:
JUPYTERHUB_API_URL, JUPYTERHUB_API_TOKEN, JUPYTERHUB_SERVICE_NAME, JUPYTERHUB_SERVICE_PREFIX and, for a managed
service, JUPYTERHUB_SERVICE_URL (where it listens). A request carries a token of the Hub's (``Authorization: token
T`` or ``Bearer T``); jupyterhub.services.auth.HubAuth asks the Hub who owns it (GET /hub/api/user with that token,
answered with the owner's model: kind, name, scopes) and keeps the answer for a few minutes. The student is the
user's name (as grade.py spells ids); a token that the Hub does not know is refused (401), and so is one whose
scopes do not include access to this service (403: by default ``access:services!service=<name>``, as HubAuth reads
it from JUPYTERHUB_OAUTH_ACCESS_SCOPES or the service's name). No roster and no issued tokens are needed.

In the student's notebook the Submit button and ``python -m seqlab.submit`` send the notebook server's own
JUPYTERHUB_API_TOKEN when no token is given, so the Hub's configuration gives that token the scope (see
autograder/README.md, "Submissions during the term"):

    c.JupyterHub.services = [{"name": "seqlab-submit", "url": "http://127.0.0.1:10101",
                              "command": ["python", "autograder/serve.py", "/srv/grading", "--hub"]}]
    c.JupyterHub.load_roles = [{"name": "user", "scopes": ["self", "access:services!service=seqlab-submit"]}]
    c.Spawner.server_token_scopes = ["users:activity!user", "access:servers!server",
                                     "access:services!service=seqlab-submit"]
    c.Spawner.environment = {"SEQLAB_SUBMIT_SERVER": "http://127.0.0.1:8000/services/seqlab-submit"}
"""

from __future__ import annotations

import os
import re
import urllib.parse

HUB_TOKEN = re.compile(r"(?:token|bearer)\s+(\S+)\s*$", re.IGNORECASE)


class HubUnavailable(RuntimeError):
    """Hub authentication cannot start here: the message says what is missing."""


class HubStudents:
    """Who a request's Hub token belongs to, through jupyterhub.services.auth.HubAuth."""

    def __init__(self):
        try:
            from jupyterhub.services.auth import HubAuth
        except ImportError:
            raise HubUnavailable("--hub needs JupyterHub's service library: pip install 'seqlab[hub]' "
                                 "(or pip install jupyterhub) on the grading machine") from None
        if not os.environ.get("JUPYTERHUB_API_TOKEN"):
            raise HubUnavailable("--hub: JUPYTERHUB_API_TOKEN is not set; run the service from the Hub's "
                                 "c.JupyterHub.services (a managed service), or set the Hub's variables for an "
                                 "external one (JUPYTERHUB_API_URL, JUPYTERHUB_API_TOKEN, JUPYTERHUB_SERVICE_NAME)")
        self.auth = HubAuth()
        prefix = os.environ.get("JUPYTERHUB_SERVICE_PREFIX", "").strip("/")
        self.root_path = f"/{prefix}" if prefix else ""

    def mounted(self, app):
        """The app below the service's prefix. The Hub's proxy forwards /services/<name>/... with the prefix kept
        (uvicorn's --root-path is for proxies that strip it: it would prepend it again), so a request's path stays
        whole and the prefix becomes its ASGI root_path, below which Starlette matches the routes; a path without
        it (a health check on the service's own port) reaches them as it is."""
        if not self.root_path:
            return app
        root = self.root_path

        async def below_prefix(scope, receive, send):
            if scope["type"] in ("http", "websocket") and (scope["path"] == root or scope["path"].startswith(root + "/")):
                scope = {**scope, "root_path": root}
            await app(scope, receive, send)

        return below_prefix

    async def student_of(self, authorization: str | None, clean_id, refused) -> str:
        """The student's id for this Authorization header, or ``refused(status, reason)`` raised."""
        found = HUB_TOKEN.match(authorization or "")
        if not found:
            raise refused(401, "no token: send 'Authorization: token YOUR_HUB_TOKEN' (in the Hub, the Submit button "
                               "and python -m seqlab.submit send your server's token)")
        try:
            user = await self.auth.user_for_token(found.group(1), sync=False)
        except Exception as error:  # noqa: BLE001 - tornado's HTTPError, or a connection the Hub did not answer
            raise refused(502, f"the Hub could not be asked whose token this is ({getattr(error, 'log_message', None) or error}); "
                               "try again in a minute", retry_after=60) from None
        if user is None:
            raise refused(401, "the Hub does not know this token (log in to the Hub again, or restart your server)")
        if user.get("kind", "user") != "user":
            raise refused(403, f"this is a {user.get('kind')}'s token ({user.get('name')}); a student submits with "
                               "their own")
        wanted = self.auth.access_scopes
        if wanted and not self.auth.check_scopes(wanted, user):
            raise refused(403, f"your Hub token does not grant access to this service (it needs the scope "
                               f"{' or '.join(sorted(wanted))}); your instructor adds it to the users' role and to "
                               "c.Spawner.server_token_scopes")
        name = str(user.get("name") or "")
        student = clean_id(name)
        if not student:
            raise refused(403, f"the Hub's user name {name[:80]!r} is no usable student id")
        return student


def listen_address(host: str | None, port: int | None) -> tuple[str, int]:
    """Where a Hub-managed service listens: JUPYTERHUB_SERVICE_URL, unless --host/--port say otherwise."""
    url = urllib.parse.urlsplit(os.environ.get("JUPYTERHUB_SERVICE_URL", ""))
    return host or url.hostname or "127.0.0.1", port or url.port or 8000
