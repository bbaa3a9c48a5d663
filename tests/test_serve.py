"""The submission service (autograder/serve.py, issue 45) against the real running service: uvicorn on a free port
in a subprocess, a real HTTP client (httpx), the real grader behind it.

One service grades chapter 7 for the whole module (tests run in file order on one worker): honest, wrong and
adversarial notebooks get the verdicts grade.py gives the same notebooks; a token reads only its own student's
submissions; 20 students submitting at once get no more than their free attempts, the rest told when to retry;
a crash (SIGKILL of the whole service) loses no submission and no spent attempt.
"""

from __future__ import annotations

import asyncio
import csv
import json
import os
import re
import signal
import sqlite3
import subprocess
import sys
import time
from pathlib import Path

import pytest

from course import REPO, hidden_test_lines

sys.path.insert(0, str(REPO / "autograder"))
sys.path.insert(0, str(REPO / "tests"))
from adversarial.generate import load, submissions  # noqa: E402
from sandbox import bubblewrap  # noqa: E402
from servers import free_port  # noqa: E402

httpx = pytest.importorskip("httpx")
pytest.importorskip("fastapi")
pytest.importorskip("uvicorn")

pytestmark = [pytest.mark.slow, pytest.mark.xdist_group("serve"),
              pytest.mark.skipif(bubblewrap() is None, reason="bubblewrap is not installed")]

CHAPTER = "07-attention"
SERVE = [sys.executable, str(REPO / "autograder" / "serve.py")]
GRADE = [sys.executable, str(REPO / "autograder" / "grade.py")]
LIMITS = ["--cell-timeout", "10", "--memory-gb", "1"]
FREE = 3
CROWD = [f"crowd{n:02d}" for n in range(20)]
# honest, wrong (one answer returns None; one hard-coded to the visible example) and two of the safety suite's cheats
GRADED = ["honest_solution", "partly_wrong", "hardcoded_additive", "monkeypatch_check", "leak_via_errors"]


def hardcoded_additive():
    """additive_scores returns the visible examples' values, elsewhere zeros of the right shape, dtype and graph: the
    visible checks pass, a hidden check of values fails (its message holds the expected values, never shown)."""
    nb = load("solution", CHAPTER)[0]
    cell = next(c for c in nb.cells if c.cell_type == "code" and "def additive_scores(" in c.source
                and c.metadata.get("nbgrader", {}).get("solution"))
    cell.source = ("import math\nimport torch\n\ndef additive_scores(query, keys, W_q, W_k, v):\n"
                   "    t = math.tanh\n"
                   "    if tuple(query.shape) == (1, 1):\n"
                   "        return torch.tensor([[t(2.0) - 2 * t(2.5), t(0.5) + 2 * t(0.5)]])\n"
                   "    if tuple(query.shape) == (2, 2) and query.dtype == torch.float32:\n"
                   "        return torch.tensor([[t(2.0) + t(0.0), t(1.0) + t(1.0)], [t(2.0) + t(3.0), t(1.0) + t(3.0)]])\n"
                   "    return 0 * (query @ W_q.T).sum(-1, keepdim=True) + 0 * (keys @ W_k.T @ v)\n")
    return nb


def notebooks() -> dict[str, bytes]:
    import nbformat

    made = submissions(CHAPTER)
    made["hardcoded_additive"] = (hardcoded_additive(), "partial")
    for notebook, _ in made.values():
        if isinstance(notebook, nbformat.NotebookNode):
            for cell in notebook.cells:  # the course's notebooks are nbformat 4.4, without cell ids
                cell.pop("id", None)
    return {name: nbformat.writes(made[name][0]).encode() for name in GRADED + ["os_exit"]}


def start(workspace: Path, port: int, *extra: str) -> subprocess.Popen:
    log = open(workspace / f"serve-{port}.log", "ab")
    server = subprocess.Popen([*SERVE, str(workspace), "--port", str(port), "--jobs", "2", "--queue", "40",
                               "--per-student", "5", "--first-wait", "600", *LIMITS, *extra],
                              stdout=log, stderr=subprocess.STDOUT, start_new_session=True)
    deadline = time.time() + 180
    while time.time() < deadline:
        assert server.poll() is None, (workspace / f"serve-{port}.log").read_text()[-3000:]
        try:
            if httpx.get(f"http://127.0.0.1:{port}/health", timeout=5).status_code == 200:
                return server
        except httpx.HTTPError:
            time.sleep(0.5)
    raise TimeoutError("the service did not answer /health in 180 s")


def stop(server: subprocess.Popen, crash: bool = False) -> None:
    """SIGTERM (uvicorn's graceful stop), or SIGKILL of the service and every grading process: a crash."""
    try:
        os.killpg(server.pid, signal.SIGKILL if crash else signal.SIGTERM)
    except ProcessLookupError:
        return
    try:
        server.wait(timeout=30)
    except subprocess.TimeoutExpired:
        os.killpg(server.pid, signal.SIGKILL)
        server.wait(timeout=30)


def leftovers(workspace: Path) -> list[str]:
    """Processes whose command line names the workspace: the service's and its graders'."""
    found = []
    for entry in Path("/proc").iterdir():
        try:
            command = (entry / "cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
        except OSError:
            continue
        if str(workspace) in command and entry.name.isdigit():
            found.append(f"{entry.name}: {command[:200]}")
    return found


@pytest.fixture(scope="module")
def service(tmp_path_factory):
    root = tmp_path_factory.mktemp("serve")
    workspace = root / "workspace"
    workspace.mkdir()
    roster = root / "roster.csv"
    roster.write_text("student\n" + "\n".join(GRADED + CROWD + ["bob"]) + "\n")
    issued = subprocess.run([*SERVE, str(workspace), "issue-tokens", str(roster), "--out", str(root / "tokens.csv")],
                            capture_output=True, text=True, timeout=120)
    assert issued.returncode == 0, issued.stderr
    tokens = {row["student"]: row["token"] for row in csv.DictReader(open(root / "tokens.csv"))}
    port = free_port()
    state = {"root": root, "workspace": workspace, "tokens": tokens, "port": port, "url": f"http://127.0.0.1:{port}",
             "server": start(workspace, port), "ids": {}}
    yield state
    stop(state["server"])


def auth(service, student: str) -> dict:
    return {"Authorization": f"Bearer {service['tokens'][student]}"}


def finished(service, student: str, sid: int, seconds: float = 600) -> dict:
    deadline = time.time() + seconds
    while time.time() < deadline:
        reply = httpx.get(f"{service['url']}/submissions/{sid}", headers=auth(service, student), timeout=30)
        assert reply.status_code == 200, reply.text
        if reply.json()["status"] not in ("queued", "grading"):
            return reply.json()
        time.sleep(0.5)
    raise TimeoutError(f"submission {sid} of {student} was not graded in {seconds:.0f} s")


def test_verdicts_are_grade_py_s_and_show_no_hidden_test(service):
    made = notebooks()
    replies = {}
    for student in GRADED:
        posted = httpx.post(f"{service['url']}/submit/{CHAPTER}", content=made[student], headers=auth(service, student),
                            timeout=60)
        assert posted.status_code == 202, posted.text
        assert posted.json()["hidden_checked"], "a first submission checks every exercise's hidden tests"
        service["ids"][student] = posted.json()["id"]
    for student in GRADED:
        replies[student] = finished(service, student, service["ids"][student])

    export = service["root"] / "export"
    export.mkdir()
    name = load("release", CHAPTER)[1]
    for student in GRADED:
        (export / f"{student}_{name}").write_bytes(made[student])
    batch = service["root"] / "batch"
    done = subprocess.run([*GRADE, str(batch), "--submissions", str(export), "--chapter", CHAPTER, "--jobs", "2",
                           "--no-progress", *LIMITS], capture_output=True, text=True, timeout=1200)
    assert done.returncode == 0, done.stderr[-3000:]
    for student in GRADED:
        result = json.loads((batch / "autograder-results" / CHAPTER / student / "result.json").read_text())
        cells = {gid: c for nb in result["notebooks"].values() for gid, c in nb["cells"].items() if c["test"]}
        reply = replies[student]
        assert reply["status"] == "graded"
        assert reply["score"] == result["score"] and reply["max_score"] == result["max_score"], student
        assert {e["exercise"]: e["points"] for e in reply["exercises"]} == \
            {gid: c["auto_score"] for gid, c in cells.items()}, student
        for verdict in reply["exercises"]:
            cell = cells[verdict["exercise"]]
            assert (verdict["hidden"] == "failed") == cell["hidden_failure"], (student, verdict)
            assert (verdict["visible"] == "passed") == (cell["hidden_failure"] or cell["auto_score"] == cell["max_score"])
    service["partly_wrong"] = replies["partly_wrong"]
    assert replies["honest_solution"]["score"] == replies["honest_solution"]["max_score"] > 0
    assert 0 < replies["partly_wrong"]["score"] < replies["partly_wrong"]["max_score"]
    assert replies["monkeypatch_check"]["score"] == replies["leak_via_errors"]["score"] == 0

    wrong = {e["exercise"]: e for e in replies["hardcoded_additive"]["exercises"]}["additive_scores_tests"]
    assert wrong["visible"] == "passed" and wrong["hidden"] == "failed" and wrong["points"] == 0
    assert wrong["hidden_message"].startswith("CheckFailed: "), "with no policy, which hidden check failed is shown"
    assert not {"expected", "got", "tensor("} & set(re.split(r"[\s,]+", wrong["hidden_message"])), \
        f"a hidden check's values were shown: {wrong['hidden_message']}"
    secrets = hidden_test_lines(CHAPTER)
    shown = json.dumps(replies)
    assert not [line for line in secrets if line in shown], "a hidden test's source reached a student's reply"

    # the visibility schedule decides, read again when the policy file changes: "never" shows no hidden message
    (service["workspace"] / "policy.toml").write_text('[visibility]\nhidden_verdicts = "never"\n')
    again = finished(service, "hardcoded_additive", service["ids"]["hardcoded_additive"])
    wrong = {e["exercise"]: e for e in again["exercises"]}["additive_scores_tests"]
    assert wrong["hidden"] == "failed" and wrong["hidden_message"] is None and "not shown" in wrong["hidden_note"]
    (service["workspace"] / "policy.toml").unlink()

    # what passed has no limit from then on; what failed has its free attempts less the one taken
    limits = httpx.get(f"{service['url']}/limits/{CHAPTER}", headers=auth(service, "partly_wrong")).json()["exercises"]
    points = {e["exercise"]: e for e in replies["partly_wrong"]["exercises"]}
    for exercise, limit in limits.items():
        if points[exercise]["points"] == points[exercise]["max_points"]:
            assert limit["passed"] and limit["wait_s"] == 0
        else:
            assert not limit["passed"] and limit["attempts_left"] == FREE - 1


def test_a_token_reads_only_its_own_students_submissions(service):
    url, alice = service["url"], "honest_solution"
    theirs = service["ids"][alice]
    assert httpx.get(f"{url}/submissions/{theirs}", headers=auth(service, alice)).status_code == 200
    other = httpx.get(f"{url}/submissions/{theirs}", headers=auth(service, "bob"))
    assert other.status_code == 404 and "score" not in other.text
    listing = httpx.get(f"{url}/submissions", headers=auth(service, "bob")).json()
    assert listing["student"] == "bob" and listing["submissions"] == []
    mine = httpx.get(f"{url}/submissions", headers=auth(service, alice)).json()["submissions"]
    assert [s["id"] for s in mine] == [theirs]
    for headers in ({}, {"Authorization": "Bearer not-a-token"}, {"Authorization": service["tokens"][alice]}):
        refused = httpx.get(f"{url}/submissions/{theirs}", headers=headers)
        assert refused.status_code == 401 and refused.headers["www-authenticate"] == "Bearer", refused.text
        assert httpx.post(f"{url}/submit/{CHAPTER}", content=b"{}", headers=headers).status_code == 401
    assert httpx.post(f"{url}/submit/99-nothing", content=b"{}", headers=auth(service, "bob")).status_code == 404
    stored = sqlite3.connect(service["workspace"] / "service" / "submissions.db").execute(
        "select token_sha256 from students").fetchall()
    assert stored and not {t for (t,) in stored} & set(service["tokens"].values()), "tokens are stored hashed only"


def test_the_command_line_and_the_button_submit_and_show_the_verdicts(service, tmp_path):
    """python -m seqlab.submit and seqlab.submit.button() post a saved notebook and show what the service answered;
    a wrong token or no service is said in a line, never a traceback."""
    from seqlab.submit import button

    notebook = tmp_path / f"{CHAPTER}.ipynb"
    notebook.write_bytes(notebooks()["partly_wrong"])
    submit = [sys.executable, "-m", "seqlab.submit", str(notebook), "--server", service["url"]]
    done = subprocess.run([*submit, "--token", service["tokens"]["bob"]], capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stderr
    expected = service["partly_wrong"]
    assert f"of {CHAPTER}: {expected['score']:g} / {expected['max_score']:g}" in done.stdout, done.stdout
    for verdict in expected["exercises"]:
        line = next(l for l in done.stdout.splitlines() if f" {verdict['exercise']}  " in l)
        assert line.startswith("✓" if verdict["points"] == verdict["max_points"] else "✗"), line
    assert f"attempts left now: {FREE - 1}" in done.stdout
    for token, said in (("not-a-token", "token is not valid"),):
        refused = subprocess.run([*submit, "--token", token], capture_output=True, text=True, timeout=120)
        assert refused.returncode == 1 and said in refused.stderr and "Traceback" not in refused.stderr, refused.stderr
    nowhere = subprocess.run([sys.executable, "-m", "seqlab.submit", str(notebook), "--server",
                              f"http://127.0.0.1:{free_port()}", "--token", "x"], capture_output=True, text=True, timeout=120)
    assert nowhere.returncode == 1 and "cannot reach" in nowhere.stderr and "Traceback" not in nowhere.stderr

    box = button(server=service["url"], token=service["tokens"]["bob"], notebook=notebook)
    box.submit_button.click()
    deadline = time.time() + 600
    while not re.search(r"<b>(submission \d+ of|Not submitted)", box.verdicts.value) and time.time() < deadline:
        time.sleep(0.5)
    shown = box.verdicts.value
    assert shown.startswith('<div role="status" aria-live="polite"><b>submission'), shown  # announced by a screen reader
    assert f"{expected['score']:g} / {expected['max_score']:g}" in shown, shown
    assert f"attempts left now: {FREE - 2}" in shown and not box.submit_button.disabled
    listing = httpx.get(f"{service['url']}/submissions", headers=auth(service, "bob")).json()["submissions"]
    assert len(listing) == 2 and all(s["status"] == "graded" for s in listing)


async def burst(service, notebook: bytes, per_student: int) -> dict[str, list]:
    async with httpx.AsyncClient(base_url=service["url"], timeout=120) as client:
        async def one(student):
            return student, await client.post(f"/submit/{CHAPTER}", content=notebook, headers=auth(service, student))

        answers = await asyncio.gather(*[one(s) for s in CROWD for _ in range(per_student)])
    by_student: dict[str, list] = {s: [] for s in CROWD}
    for student, answer in answers:
        by_student[student].append(answer)
    return by_student


def test_rate_limits_and_the_queue_hold_under_20_concurrent_students(service):
    """20 students send 5 submissions each at once: at most FREE accepted each, every other told when to retry
    (429: no attempt left; 503: the queue of 40 is full), and an attempt is spent only by an accepted submission."""
    exit_early = notebooks()["os_exit"]  # graded fast (the kernel exits at the first answer), 0 points
    answers = asyncio.run(burst(service, exit_early, 5))
    codes = [a.status_code for replies in answers.values() for a in replies]
    assert set(codes) <= {202, 429, 503}, codes
    assert codes.count(503) > 0, "60 admissible submissions and a queue of 40: some must be told the grader is busy"
    db = sqlite3.connect(service["workspace"] / "service" / "submissions.db")
    for student, replies in answers.items():
        accepted = [a for a in replies if a.status_code == 202]
        assert len(accepted) <= FREE, f"{student}: {len(accepted)} accepted"
        for answer in replies:
            if answer.status_code != 202:
                wait = int(answer.headers["retry-after"])
                assert wait >= 1 and answer.json()["retry_after_s"] == wait and "try again in" in answer.json()["error"]
        attempts = {n for (n,) in db.execute("select attempts from buckets where student = ?", (student,))}
        assert attempts == ({len(accepted)} if accepted else set()), f"{student}: attempts {attempts}, accepted {len(accepted)}"
        stored = db.execute("select count(*) from submissions where student = ?", (student,)).fetchone()[0]
        assert stored == len(accepted), "a refused submission is not stored"
        service["ids"].setdefault("crowd", {})[student] = [a.json()["id"] for a in accepted]
    limited = [s for s, replies in answers.items() if [a.status_code for a in replies].count(202) == FREE
               and 429 in [a.status_code for a in replies]]
    assert limited, "some student should have had FREE submissions accepted and the next refused for the rate limit"
    assert sum(len(ids) for ids in service["ids"]["crowd"].values()) >= 40, "the queue of 40 should have filled"


def test_a_crash_loses_no_submission_and_no_spent_attempt(service):
    """SIGKILL of the service and its graders mid-queue; the restarted service grades every waiting submission and
    still refuses the students who have no attempt left."""
    db_path = service["workspace"] / "service" / "submissions.db"
    stop(service["server"], crash=True)
    waiting = sqlite3.connect(db_path).execute(
        "select count(*) from submissions where status in ('queued', 'grading')").fetchone()[0]
    assert waiting > 0, "the crash should leave submissions waiting (the burst queued up to 40)"
    service["server"] = start(service["workspace"], service["port"])
    for student, ids in service["ids"]["crowd"].items():
        listed = httpx.get(f"{service['url']}/submissions", headers=auth(service, student)).json()["submissions"]
        assert [s["id"] for s in listed] == ids
        for sid in ids:
            assert finished(service, student, sid)["status"] == "graded"
    full = [s for s, ids in service["ids"]["crowd"].items() if len(ids) == FREE]
    assert full, "some crowd student should have spent every free attempt"
    again = httpx.post(f"{service['url']}/submit/{CHAPTER}", content=notebooks()["os_exit"], headers=auth(service, full[0]))
    assert again.status_code == 429 and int(again.headers["retry-after"]) > 60, again.text
    log = (service["workspace"] / "service" / "log.jsonl").read_text().splitlines()
    events = [json.loads(line)["event"] for line in log]
    assert events.count("service_started") == 2 and "submission_graded" in events and "request" in events

    # stopped (SIGTERM to the service and its graders, as a shell's kill of the group) while submissions wait: they
    # stay stored for the next start, and no grading process outlives the service (a pool made anew while the
    # server ran once kept uvicorn's SIGTERM handler and the port)
    room = [s for s, ids in service["ids"]["crowd"].items() if len(ids) < FREE][:4]
    before = sqlite3.connect(db_path).execute("select count(*) from submissions").fetchone()[0]
    for student in room:  # the solution takes seconds to grade: the stop finds jobs in the graders
        posted = httpx.post(f"{service['url']}/submit/{CHAPTER}", content=notebooks()["honest_solution"],
                            headers=auth(service, student))
        assert posted.status_code == 202, posted.text
    stop(service["server"])
    time.sleep(1)
    assert not leftovers(service["workspace"]), "a process of the service outlived it"
    stored = sqlite3.connect(db_path).execute("select count(*) from submissions").fetchone()[0]
    assert room and stored == before + len(room)
