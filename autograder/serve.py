"""Students submit during the term: a service that grades a chapter's notebook with the course's own grader.

    python autograder/serve.py WORKSPACE [--port 8000] [--host 127.0.0.1] [--db-url URL] [--jobs N] [--queue N] [--hub]
    python autograder/serve.py WORKSPACE issue-tokens roster.csv [--out tokens.csv] [--reissue]
    python autograder/serve.py WORKSPACE export [--chapter CH ...]

The instructor starts it on the grading machine; students hold a token each (``issue-tokens``, stored hashed) and
``POST /submit/{chapter}`` their saved notebook (in a JupyterHub, ``--hub``: the Hub's users with their Hub tokens,
autograder/serve_hub.py) (``python -m seqlab.submit`` or the notebook's Submit button). Each
submission is stored, then graded by the very job grade.py runs (job.run_job in a process pool of sandboxes, the
same two runners), and the student reads per exercise (a graded test cell): the visible checks' messages, and the
hidden tests as passed / failed, with which hidden check failed (its description, never its values) only where the
term's visibility schedule allows (autograder/policy.py); never hidden test code or values, nor an error message
the student's own code raised after hidden tests had called it.

Hidden verdicts are rate-limited per student and exercise by a token bucket kept in the database (so a restart
keeps it): the first attempts are free, then each further attempt waits longer (okpy's cooldown, growing), and an
exercise that passed has no limit. A submission is accepted while one of its unpassed exercises has an attempt left;
the others' hidden verdicts are withheld in that submission, with the time they can next be checked. The queue of
waiting submissions is bounded: when it is full the reply is 503 with Retry-After, and nothing is stored. Every
submission, its verdicts and the grader's result stay in the database and in WORKSPACE/service/; a restart grades
what was waiting. ``export`` writes each student's last submission (before their due date where the policy sets
one) into WORKSPACE/submitted/ for grade.py. Logs are JSON lines on stderr and in WORKSPACE/service/log.jsonl.
"""

from __future__ import annotations

import argparse
import asyncio
import concurrent.futures as futures
import contextlib
import copy
import csv
import dataclasses
import datetime as dt
import hashlib
import json
import logging
import multiprocessing
import os
import secrets
import shutil
import signal
import stat
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

import grade  # noqa: E402 - the pool's worker functions, the chapters, student ids: the same as batch grading
import policy as term_policy  # noqa: E402
from feedback import capped  # noqa: E402 - messages cut as feedback pages cut them
from job import graded_notebooks  # noqa: E402
from sandbox import Limits, bubblewrap, unsandboxed_refusal  # noqa: E402

from fastapi import FastAPI, Header, Request  # noqa: E402 - module level: the routes' annotations are read as strings
from fastapi.responses import JSONResponse  # noqa: E402
from sqlalchemy import (Column, Float, Integer, LargeBinary, MetaData, PrimaryKeyConstraint, String, Table, Text,  # noqa: E402
                        create_engine, func, select)

MAX_NOTEBOOK_BYTES = 50 * 2**20  # as batch grading reads (job.read_student refuses larger ones in the worker)
# a hidden check's message, where the schedule shows it, is cut as feedback pages cut it (feedback.MESSAGE_CAP); a
# visible check's is the student's own notebook's, and cut there it lost the hint that ends it
VISIBLE_MESSAGE_CAP = 1000
WAITING = ("queued", "grading")

log = logging.getLogger("seqlab.serve")


# -- the database -----------------------------------------------------------------------------------------------------

schema = MetaData()
students = Table(
    "students", schema,
    Column("student", String(255), primary_key=True),
    Column("token_sha256", String(64), unique=True, nullable=False),
    Column("issued_at", Float, nullable=False))
submissions = Table(
    "submissions", schema,
    Column("id", Integer, primary_key=True, autoincrement=True),
    Column("student", String(255), nullable=False, index=True),
    Column("chapter", String(255), nullable=False),
    Column("received_at", Float, nullable=False),
    Column("notebook", LargeBinary, nullable=False),
    Column("sha256", String(64), nullable=False),
    Column("status", String(16), nullable=False, index=True),  # queued, grading, graded, failed
    Column("charged", Text, nullable=False),  # JSON: the exercises whose hidden verdict this submission shows
    Column("started_at", Float), Column("finished_at", Float),
    Column("score", Float), Column("max_score", Float),
    Column("verdicts", Text),  # JSON: per exercise, what the student may be shown (hidden messages filtered on reading)
    Column("result", Text),  # JSON: the grading job's result.json, for the instructor
    Column("problem", Text))
buckets = Table(
    "buckets", schema,
    Column("student", String(255), nullable=False),
    Column("chapter", String(255), nullable=False),
    Column("exercise", String(255), nullable=False),
    Column("tokens", Float, nullable=False),
    Column("updated_at", Float, nullable=False),
    Column("attempts", Integer, nullable=False),
    Column("passed_at", Float),
    PrimaryKeyConstraint("student", "chapter", "exercise"))


def engine_for(workspace: Path, db_url: str | None):
    (workspace / "service").mkdir(parents=True, exist_ok=True)
    url = db_url or f"sqlite:///{workspace / 'service' / 'submissions.db'}"
    engine = create_engine(url, future=True)
    schema.create_all(engine)
    return engine


def token_hash(token: str) -> str:
    """Tokens are 32 random bytes: a plain SHA-256 is enough to keep a leaked database from holding usable tokens."""
    return hashlib.sha256(token.encode()).hexdigest()


def iso(moment: float | None) -> str | None:
    return None if moment is None else dt.datetime.fromtimestamp(moment, dt.timezone.utc).isoformat(timespec="seconds")


# -- rate limits --------------------------------------------------------------------------------------------------------

@dataclasses.dataclass(frozen=True)
class RateLimit:
    """A token bucket per student and exercise: FREE attempts at once, refilled one per interval, where the interval
    starts at FIRST_WAIT seconds after the free attempts and grows by GROWTH with every attempt beyond them, up to
    MAX_WAIT (okpy's cooldown, ok-client#305; there growing at first, later a flat 60 s)."""

    free_attempts: int = 3
    first_wait_s: float = 60.0
    growth: float = 2.0
    max_wait_s: float = 900.0

    def interval(self, attempts: int) -> float:
        beyond = min(64, max(0, attempts - self.free_attempts))
        return min(self.max_wait_s, self.first_wait_s * self.growth ** beyond)

    def tokens_at(self, row, now: float) -> float:
        return min(float(self.free_attempts), row["tokens"] + max(0.0, now - row["updated_at"]) / self.interval(row["attempts"]))

    def next_allowed(self, row, now: float) -> float:
        """When the exercise's hidden tests may next be checked (``now`` if an attempt is left)."""
        tokens = self.tokens_at(row, now)
        return now if tokens >= 1 else now + (1 - tokens) * self.interval(row["attempts"])


class Refused(Exception):
    """A request answered with an error: HTTP status, the reason in words, and when to try again (seconds)."""

    def __init__(self, status: int, reason: str, retry_after: float | None = None, **details):
        super().__init__(reason)
        self.status, self.reason, self.retry_after, self.details = status, reason, retry_after, details


# -- verdicts -----------------------------------------------------------------------------------------------------------

def hidden_check(error: dict) -> str:
    """What a failed hidden check may say: which check failed, never its values. seqlab.check's messages read
    "<what was checked>: expected <value>, got <value>" (or "<what> raised <Error>: <its message>", where the
    message is the student's code's), so only the part before the first ': ' is kept; another error, its type only."""
    name = str(error.get("ename", "Error"))[:100]
    if name != "CheckFailed":
        return name
    what = str(error.get("evalue", "")).splitlines()[0] if error.get("evalue") else ""
    return capped(f"{name}: {what.split(': ')[0]}") if what else name


def pass_lines(source: str) -> list[str]:
    """The lines seqlab.check.passed("...") prints in a test cell's visible part, from its source."""
    import ast

    visible = source.split("### BEGIN HIDDEN TESTS")[0]
    try:
        calls = [node for node in ast.walk(ast.parse(visible)) if isinstance(node, ast.Call)
                 and getattr(node.func, "id", getattr(node.func, "attr", None)) == "passed" and node.args
                 and isinstance(node.args[0], ast.Constant) and isinstance(node.args[0].value, str)]
    except SyntaxError:
        calls = []
    return [capped(f"\u2713 {call.args[0].value}") for call in calls] or ["the visible checks passed"]


def exercise_verdicts(nb, cells: dict) -> list[dict]:
    """Per graded test cell of the executed notebook: points, the visible checks' outcome and messages, the hidden
    tests' outcome and the failing hidden check's message (capped; None where the student's own code raised it, as
    its message may carry a hidden test's inputs). Messages come from feedback.from_trusted_side's view: a hidden
    failure shows no output of its cell there, and an error raised after hidden tests ran keeps little of its text."""
    from feedback import from_trusted_side
    from nbgrader import utils

    view = copy.deepcopy(nb)
    from_trusted_side(view, cells)
    verdicts = []
    for raw, shown in zip(nb.cells, view.cells):
        if raw.cell_type != "code" or not utils.is_grade(raw) or utils.is_solution(raw):
            continue
        gid = raw.metadata.nbgrader["grade_id"]
        cell = cells.get(gid, {})
        has_hidden = "BEGIN HIDDEN TESTS" in raw.source
        passed = bool(cell.get("max_score")) and cell.get("auto_score") == cell.get("max_score")
        errors = [o for o in shown.get("outputs", []) if o.get("output_type") == "error"]
        printed = "".join(o.get("text", "") for o in shown.get("outputs", []) if o.get("output_type") == "stream")
        hidden_message = None
        if cell.get("hidden_failure"):
            visible, messages, hidden = "passed", [], "failed"
            raised = [o for o in raw.get("outputs", []) if o.get("output_type") == "error"]
            if raised and not cell.get("student_error"):
                hidden_message = hidden_check(raised[-1])
        elif passed:
            visible, hidden = "passed", "passed" if has_hidden else None
            # what a cell with hidden tests printed may hold what the student's code printed while hidden tests
            # called it (feedback pages show none of it): the course's own pass line is read from the source instead
            messages = pass_lines(raw.source) if has_hidden else \
                [capped(line) for line in printed.splitlines() if line.strip()][:5]
        else:
            visible, hidden = "failed", "not run" if has_hidden else None
            messages = [capped(f"{o.get('ename', 'Error')}: {o.get('evalue', '')}", VISIBLE_MESSAGE_CAP) for o in errors][:3]
            if cell.get("reason"):
                messages.append(capped(cell["reason"]))
            if not messages:
                messages = ["the check failed"]
        verdicts.append({"exercise": gid, "points": cell.get("auto_score"), "max_points": cell.get("max_score"),
                         "passed": passed, "visible": visible, "visible_messages": messages, "hidden": hidden,
                         "hidden_message": hidden_message})
    return verdicts


def read_verdicts(out: Path, chapter: str) -> tuple[dict, list[dict], list[str]]:
    """The job's result, the exercises' verdicts and the notebook-level problems (what grade.py's report says)."""
    import nbformat

    result = json.loads((out / "result.json").read_text())
    verdicts, problems = [], []
    if result.get("problem"):
        problems.append(result["problem"])
    for source in graded_notebooks(grade.SOLUTIONS / chapter):
        entry = result["notebooks"].get(source.stem, {})
        problems += entry.get("problems", []) + entry.get("repairs", [])
        executed = out / source.name
        if entry.get("status") == "graded" and executed.exists():
            verdicts += exercise_verdicts(nbformat.read(executed, as_version=4), entry["cells"])
        else:
            for gid, cell in entry.get("cells", {}).items():
                if cell.get("test"):
                    verdicts.append({"exercise": gid, "points": 0, "max_points": cell.get("max_score"), "passed": False,
                                     "visible": "not run", "visible_messages": [capped(cell.get("reason") or "not graded")],
                                     "hidden": None, "hidden_message": None})
    return result, verdicts, [capped(str(p), 500) for p in problems]


def _worker_start(root: str, limits: Limits, sandboxed: bool) -> None:
    """grade.py's worker start, in a worker that may have been forked while the server ran (a pool made anew after
    a worker died): uvicorn's SIGTERM handler and the server's sockets are not the worker's to keep, or a stopped
    service would leave the worker running and holding the port."""
    signal.signal(signal.SIGTERM, signal.SIG_DFL)
    for name in os.listdir("/proc/self/fd") if os.path.isdir("/proc/self/fd") else []:
        with contextlib.suppress(OSError, ValueError):
            if stat.S_ISSOCK(os.fstat(int(name)).st_mode):
                os.close(int(name))
    grade._worker_start(root, limits, sandboxed)


# -- the service --------------------------------------------------------------------------------------------------------

class Service:
    """The database, the queue and the grading pool behind the HTTP routes."""

    def __init__(self, workspace: Path, engine, rate: RateLimit, limits: Limits, jobs: int, queue: int,
                 per_student: int, sandboxed: bool, policy_file: Path | None = None):
        self.workspace, self.engine, self.rate, self.limits = workspace, engine, rate, limits
        self.jobs, self.capacity, self.per_student, self.sandboxed = jobs, queue, per_student, sandboxed
        self.root = workspace / "service"
        self.policy_file = policy_file
        self.policy_seen: tuple | None = None
        self.policy: term_policy.Policy = term_policy.Policy()
        self.chapters = grade.chapters()
        self.exercises = {chapter: self.test_cells(chapter) for chapter in self.chapters}
        self.pool: futures.ProcessPoolExecutor | None = None
        self.work_root = None
        self.queue: asyncio.Queue | None = None
        self.waiting = 0  # submissions accepted and not yet finished (the bound applies to these)
        self.grading_s = 15.0  # a running mean of one job's seconds, for "try in N s"
        self.consumers: list[asyncio.Task] = []
        self.stopping = False
        self.hub = None  # serve_hub.HubStudents where the Hub says who the students are (--hub)
        self.policy = term_policy.for_workspace(workspace, policy_file, self.chapters)  # a bad file stops the start
        self.policy_seen = self.policy_stat()
        # grade.py's secret: a student's hidden tests draw the same inputs here as in the final grading
        self.secret = grade.workspace_secret(workspace)

    @staticmethod
    def test_cells(chapter: str) -> list[str]:
        import nbformat
        from nbgrader import utils

        return [c.metadata.nbgrader["grade_id"] for source in graded_notebooks(grade.SOLUTIONS / chapter)
                for c in nbformat.read(source, as_version=4).cells if utils.is_grade(c) and not utils.is_solution(c)]

    def policy_stat(self) -> tuple | None:
        try:
            found = (self.policy_file or self.workspace / "policy.toml").stat()
        except OSError:
            return None
        return found.st_mtime_ns, found.st_size

    def reload_policy(self) -> None:
        """The term policy, read again when its file changes (a due date moved while the service runs)."""
        seen = self.policy_stat()
        if seen == self.policy_seen:
            return
        try:
            self.policy = term_policy.for_workspace(self.workspace, self.policy_file, self.chapters)
            self.policy_seen = seen
        except term_policy.PolicyError as error:  # keep the last good policy, say why
            event("policy_unreadable", level=logging.ERROR, reason=str(error))

    # the pool: grade.py's own worker functions, one sandbox (two fork servers) per worker
    def start_pool(self) -> None:
        import tempfile

        self.work_root = self.work_root or tempfile.mkdtemp(prefix="seqlab-serve-")
        self.pool = futures.ProcessPoolExecutor(max_workers=self.jobs, mp_context=multiprocessing.get_context("fork"),
                                                initializer=_worker_start,
                                                initargs=(self.work_root, self.limits, self.sandboxed))
        for future in [self.pool.submit(time.sleep, 0) for _ in range(self.jobs)]:
            future.result()

    def stop_pool(self) -> None:
        if self.pool is None:
            return
        processes = list((getattr(self.pool, "_processes", None) or {}).values())
        self.pool.shutdown(wait=False, cancel_futures=True)
        for process in processes:
            process.terminate()
        for process in processes:
            process.join(timeout=10)
            if process.is_alive():
                process.kill()
        self.pool = None

    def close(self) -> None:
        self.stop_pool()
        if self.work_root:
            shutil.rmtree(self.work_root, ignore_errors=True)

    # who is asking
    async def identify(self, authorization: str | None) -> str:
        if self.hub is not None:
            return await self.hub.student_of(authorization, grade.clean_id, Refused)
        return self.student_of(authorization)

    def student_of(self, authorization: str | None) -> str:
        scheme, _, token = (authorization or "").partition(" ")
        if scheme.lower() != "bearer" or not token.strip():
            raise Refused(401, "no token: send 'Authorization: Bearer YOUR_TOKEN' (your instructor gave you the token)")
        with self.engine.connect() as db:
            student = db.execute(select(students.c.student).where(students.c.token_sha256 == token_hash(token.strip()))).scalar()
        if student is None:
            raise Refused(401, "this token is not valid (ask your instructor for your token)")
        return student

    def chapter_named(self, chapter: str) -> str:
        if chapter not in self.chapters:
            raise Refused(404, f"no chapter {chapter!r}; the course's chapters are: {', '.join(self.chapters)}")
        return chapter

    # rate limits
    def bucket_rows(self, db, student: str, chapter: str, now: float) -> dict[str, dict]:
        found = {r.exercise: dict(r._mapping) for r in db.execute(
            select(buckets).where(buckets.c.student == student, buckets.c.chapter == chapter).with_for_update())}
        return {ex: found.get(ex) or {"student": student, "chapter": chapter, "exercise": ex,
                                      "tokens": float(self.rate.free_attempts), "updated_at": now, "attempts": 0,
                                      "passed_at": None, "new": True}
                for ex in self.exercises[chapter]}

    def limits_of(self, student: str, chapter: str, now: float | None = None) -> dict[str, dict]:
        now = time.time() if now is None else now
        with self.engine.connect() as db:
            rows = self.bucket_rows(db, student, chapter, now)
        return {ex: self.limit_entry(row, now) for ex, row in rows.items()}

    def limit_entry(self, row: dict, now: float) -> dict:
        if row["passed_at"] is not None:
            return {"passed": True, "attempts_left": None, "next_allowed": None, "wait_s": 0}
        left = int(self.rate.tokens_at(row, now))
        at = self.rate.next_allowed(row, now)
        return {"passed": False, "attempts_left": left, "next_allowed": None if left else iso(at),
                "wait_s": 0 if left else max(1, int(at - now + 0.999))}

    def save_bucket(self, db, row: dict) -> None:
        values = {k: row[k] for k in ("tokens", "updated_at", "attempts", "passed_at")}
        if row.get("new"):
            db.execute(buckets.insert().values(student=row["student"], chapter=row["chapter"], exercise=row["exercise"],
                                               **values))
        else:
            db.execute(buckets.update().where(buckets.c.student == row["student"], buckets.c.chapter == row["chapter"],
                                              buckets.c.exercise == row["exercise"]).values(**values))

    def estimated_wait(self, ahead: int) -> int:
        return max(1, int(round((ahead // max(1, self.jobs) + 1) * self.grading_s)))

    def admit(self, student: str, chapter: str, notebook: bytes) -> dict:
        """Store a submission and take one attempt from each unpassed exercise that has one, in one transaction
        (the event loop runs this without yielding, so concurrent requests of one service cannot interleave here;
        with_for_update keeps it so on PostgreSQL). The queue's bound and the student's own waiting submissions are
        checked first and cost no attempt."""
        now = time.time()
        if self.waiting >= self.capacity:
            wait = self.estimated_wait(self.waiting)
            raise Refused(503, f"the grader is busy ({self.waiting} submissions waiting); try again in {wait} s", wait)
        with self.engine.begin() as db:
            mine = db.execute(select(func.count()).select_from(submissions).where(
                submissions.c.student == student, submissions.c.status.in_(WAITING))).scalar()
            if mine >= self.per_student:
                wait = self.estimated_wait(self.waiting)
                raise Refused(429, f"you have {mine} submission(s) still being graded; try again in {wait} s "
                                   "(GET /submissions shows them)", wait)
            rows = self.bucket_rows(db, student, chapter, now)
            charged, withheld = [], {}
            for ex, row in rows.items():
                if row["passed_at"] is not None:
                    continue
                tokens = self.rate.tokens_at(row, now)
                if tokens >= 1:
                    charged.append(ex)
                    row.update(tokens=tokens - 1, updated_at=now, attempts=row["attempts"] + 1)
                else:
                    withheld[ex] = self.rate.next_allowed(row, now)
            if withheld and not charged:
                soonest = min(withheld.values())
                raise Refused(429, f"no attempt left for any unpassed exercise of {chapter} until {iso(soonest)}; "
                                   f"try again in {int(round(soonest - now))} s (run the visible checks in your "
                                   "notebook meanwhile)", soonest - now,
                              limits={ex: self.limit_entry(row, now) for ex, row in rows.items()})
            for ex in charged:
                self.save_bucket(db, rows[ex])
            sid = db.execute(submissions.insert().values(
                student=student, chapter=chapter, received_at=now, notebook=notebook,
                sha256=hashlib.sha256(notebook).hexdigest(), status="queued", charged=json.dumps(charged))).inserted_primary_key[0]
        self.waiting += 1
        self.queue.put_nowait(sid)
        event("submission_accepted", id=sid, student=student, chapter=chapter, bytes=len(notebook),
              hidden_checked=len(charged), hidden_withheld=len(withheld), waiting=self.waiting)
        return {"id": sid, "chapter": chapter, "status": "queued", "received_at": iso(now),
                "position": self.waiting, "estimated_wait_s": self.estimated_wait(self.waiting - 1),
                "poll": f"/submissions/{sid}", "hidden_checked": charged,
                "hidden_withheld": {ex: iso(at) for ex, at in withheld.items()}}

    def refund(self, db, student: str, chapter: str, charged: list[str]) -> None:
        """Give back the attempts a submission took when it showed no hidden verdict (invalid notebook, grader failure)."""
        now = time.time()
        rows = self.bucket_rows(db, student, chapter, now)
        for ex in charged:
            row = rows[ex]
            row.update(tokens=min(float(self.rate.free_attempts), self.rate.tokens_at(row, now) + 1), updated_at=now,
                       attempts=max(0, row["attempts"] - 1))
            self.save_bucket(db, row)

    # grading
    async def consume(self) -> None:
        while True:
            sid = await self.queue.get()
            try:
                await self.grade(sid)
            except asyncio.CancelledError:
                raise
            except Exception as error:  # noqa: BLE001 - one submission never stops the service; it stays queued
                event("grading_error", level=logging.ERROR, id=sid, error=f"{type(error).__name__}: {str(error)[:300]}")
                self.waiting = max(0, self.waiting - 1)

    async def grade(self, sid: int) -> None:
        with self.engine.begin() as db:
            row = db.execute(select(submissions).where(submissions.c.id == sid)).first()
            if row is None or row.status not in WAITING:
                self.waiting = max(0, self.waiting - 1)
                return
            db.execute(submissions.update().where(submissions.c.id == sid).values(status="grading", started_at=time.time()))
        chapter, student = row.chapter, row.student
        folder = self.root / "submissions" / str(sid) / chapter
        shutil.rmtree(folder.parent, ignore_errors=True)
        folder.mkdir(parents=True)
        (folder / graded_notebooks(grade.SOLUTIONS / chapter)[0].name).write_bytes(row.notebook)
        out = self.root / "results" / str(sid)
        shutil.rmtree(out, ignore_errors=True)
        loop = asyncio.get_running_loop()
        failures = []
        started = time.perf_counter()
        for _ in range(2):  # as grade.py: a job that fails (the grader's error, never the student's) is tried once more
            try:
                await loop.run_in_executor(self.pool, grade._worker_job, str(folder), chapter, student, str(out),
                                           grade.student_seed(self.secret, chapter, student))
                failures = []
                break
            except futures.process.BrokenProcessPool as broken:
                if self.stopping:  # the workers were stopped with the service: graded again at the next start
                    return
                failures.append(f"BrokenProcessPool: {broken}")
                self.stop_pool()
                self.start_pool()
            except Exception as error:  # noqa: BLE001
                failures.append(f"{type(error).__name__}: {str(error)[:300]}")
        seconds = time.perf_counter() - started
        charged = json.loads(row.charged)
        with self.engine.begin() as db:
            if failures:
                db.execute(submissions.update().where(submissions.c.id == sid).values(
                    status="failed", finished_at=time.time(), problem="; then ".join(failures)))
                self.refund(db, student, chapter, charged)
            else:
                result, verdicts, problems = await asyncio.to_thread(read_verdicts, out, chapter)
                graded = all(e.get("status") == "graded" for e in result["notebooks"].values())
                rows = self.bucket_rows(db, student, chapter, time.time())
                passed_before = {ex for ex, bucket in rows.items()  # no limit on these: their verdict is always shown
                                 if bucket["passed_at"] is not None and bucket["passed_at"] <= row.received_at}
                for verdict in verdicts:
                    verdict["hidden_checked"] = verdict["exercise"] in charged or verdict["exercise"] in passed_before
                if not graded:
                    self.refund(db, student, chapter, charged)
                    for verdict in verdicts:
                        verdict["hidden_checked"] = False
                else:
                    for verdict in verdicts:  # passed, as far as this submission showed: no limit from now on
                        bucket = rows.get(verdict["exercise"])
                        if verdict["passed"] and verdict["hidden_checked"] and bucket and bucket["passed_at"] is None:
                            bucket["passed_at"] = time.time()
                            self.save_bucket(db, bucket)
                db.execute(submissions.update().where(submissions.c.id == sid).values(
                    status="graded", finished_at=time.time(), score=result["score"], max_score=result["max_score"],
                    verdicts=json.dumps({"exercises": verdicts, "problems": problems}), result=json.dumps(result)))
        self.grading_s = 0.7 * self.grading_s + 0.3 * seconds
        self.waiting = max(0, self.waiting - 1)
        event("submission_graded" if not failures else "submission_failed", id=sid, student=student, chapter=chapter,
              seconds=round(seconds, 2), failures=failures or None, waiting=self.waiting)

    def requeue(self) -> int:
        """Submissions a stopped service left waiting or half graded go back into the queue, oldest first."""
        with self.engine.begin() as db:
            ids = [r.id for r in db.execute(select(submissions.c.id).where(submissions.c.status.in_(WAITING))
                                            .order_by(submissions.c.id))]
            if ids:
                db.execute(submissions.update().where(submissions.c.id.in_(ids)).values(status="queued"))
        for sid in ids:
            self.queue.put_nowait(sid)
        self.waiting = len(ids)
        return len(ids)

    # what a student reads
    def reply_for(self, row, now: float) -> dict:
        reply = {"id": row.id, "chapter": row.chapter, "status": row.status, "received_at": iso(row.received_at),
                 "finished_at": iso(row.finished_at)}
        if row.status in WAITING:
            ahead = 0
            with self.engine.connect() as db:
                ahead = db.execute(select(func.count()).select_from(submissions).where(
                    submissions.c.status.in_(WAITING), submissions.c.id < row.id)).scalar()
            reply.update(position=ahead + 1, estimated_wait_s=self.estimated_wait(ahead))
            return reply
        if row.status == "failed":
            reply["problems"] = ["the grader failed on this submission (the grader's error, not yours); it took no "
                                 "attempt, and your instructor has the reason"]
            return reply
        stored = json.loads(row.verdicts)
        self.reload_policy()
        messages = self.policy.shows_hidden_verdicts(row.chapter, row.student, dt.datetime.fromtimestamp(now, dt.timezone.utc))
        limits = self.limits_of(row.student, row.chapter, now)
        exercises, withheld = [], False
        for verdict in stored["exercises"]:
            shown = {k: verdict[k] for k in ("exercise", "points", "max_points", "visible", "visible_messages", "hidden")}
            if verdict["hidden"] is not None and not verdict["hidden_checked"]:
                withheld = True
                entry = limits.get(verdict["exercise"], {})
                shown.update(points=None, hidden="withheld", hidden_note=(
                    "not checked in this submission (no attempt was left); "
                    + (f"next check allowed at {entry['next_allowed']}" if entry.get("next_allowed") else
                       "an attempt is left now: submit again")))
            elif verdict["hidden"] == "failed":
                shown["hidden_message"] = verdict["hidden_message"] if messages else None
                if not messages:
                    shown["hidden_note"] = self.policy.visibility_note(row.chapter, row.student)
                elif verdict["hidden_message"] is None:
                    shown["hidden_note"] = "raised by your code after hidden tests had called it (its message is not shown)"
            limit = limits.get(verdict["exercise"], {})
            shown.update(attempts_left=limit.get("attempts_left"), next_allowed=limit.get("next_allowed"))
            exercises.append(shown)
        reply.update(score=None if withheld else row.score, max_score=row.max_score, exercises=exercises,
                     problems=stored["problems"])
        if withheld:
            reply["score_note"] = "the total is not shown while an exercise's hidden verdict is withheld"
        return reply

    def submission(self, student: str, sid: int) -> dict:
        with self.engine.connect() as db:
            row = db.execute(select(submissions).where(submissions.c.id == sid, submissions.c.student == student)).first()
        if row is None:  # another student's submission reads as one that does not exist
            raise Refused(404, f"you have no submission {sid}")
        return self.reply_for(row, time.time())

    def listing(self, student: str) -> list[dict]:
        with self.engine.connect() as db:
            rows = db.execute(select(submissions.c.id, submissions.c.chapter, submissions.c.status,
                                     submissions.c.received_at, submissions.c.finished_at)
                              .where(submissions.c.student == student).order_by(submissions.c.id)).all()
        return [{"id": r.id, "chapter": r.chapter, "status": r.status, "received_at": iso(r.received_at),
                 "finished_at": iso(r.finished_at), "url": f"/submissions/{r.id}"} for r in rows]


# -- logs ---------------------------------------------------------------------------------------------------------------

class JsonLines(logging.Formatter):
    def format(self, record: logging.LogRecord) -> str:
        entry = {"time": iso(record.created), "level": record.levelname.lower(), "event": record.getMessage()}
        entry.update(getattr(record, "fields", {}))
        if record.exc_info:
            entry["error"] = self.formatException(record.exc_info)[-2000:]
        return json.dumps(entry, default=str)


def event(name: str, level: int = logging.INFO, **fields) -> None:
    log.log(level, name, extra={"fields": fields})


def setup_logs(root: Path) -> None:
    log.setLevel(logging.INFO)
    log.propagate = False
    for handler in (logging.StreamHandler(sys.stderr), logging.FileHandler(root / "log.jsonl")):
        handler.setFormatter(JsonLines())
        log.addHandler(handler)
    for name in ("uvicorn", "uvicorn.error"):  # uvicorn's own notices as JSON lines too
        logging.getLogger(name).handlers = log.handlers
        logging.getLogger(name).propagate = False


# -- HTTP ---------------------------------------------------------------------------------------------------------------

def make_app(service: Service):
    @contextlib.asynccontextmanager
    async def lifespan(app):
        service.queue = asyncio.Queue()
        requeued = service.requeue()
        service.consumers = [asyncio.create_task(service.consume()) for _ in range(service.jobs)]
        event("service_started", jobs=service.jobs, queue=service.capacity, requeued=requeued,
              sandboxed=service.sandboxed, chapters=len(service.chapters))
        try:
            yield
        finally:
            service.stopping = True
            for task in service.consumers:
                task.cancel()
            await asyncio.gather(*service.consumers, return_exceptions=True)
            service.close()  # a submission being graded stays 'grading' and is graded again at the next start
            event("service_stopped", waiting=service.waiting)

    app = FastAPI(title="seqlab submissions", lifespan=lifespan, docs_url=None, redoc_url=None, openapi_url=None)

    def refused(error: Refused) -> JSONResponse:
        headers = {}
        if error.retry_after is not None:
            headers["Retry-After"] = str(max(1, int(error.retry_after + 0.999)))
        if error.status == 401:
            headers["WWW-Authenticate"] = "Bearer"
        body = {"error": error.reason, **error.details}
        if error.retry_after is not None:
            body["retry_after_s"] = int(headers["Retry-After"])
        return JSONResponse(body, status_code=error.status, headers=headers)

    @app.exception_handler(Refused)
    async def on_refused(request: Request, error: Refused):
        request.state.refusal = error.reason
        return refused(error)

    @app.middleware("http")
    async def access_log(request: Request, call_next):
        started = time.perf_counter()
        try:
            response = await call_next(request)
        except Exception:
            event("request_error", level=logging.ERROR, method=request.method, path=request.url.path)
            raise
        event("request", method=request.method, path=request.url.path, status=response.status_code,
              ms=round(1000 * (time.perf_counter() - started), 1), student=getattr(request.state, "student", None),
              refusal=getattr(request.state, "refusal", None))
        return response

    async def who(request: Request, authorization: str | None) -> str:
        request.state.student = await service.identify(authorization)
        return request.state.student

    @app.get("/health")
    async def health():
        return {"status": "ok", "waiting": service.waiting, "queue_capacity": service.capacity, "jobs": service.jobs,
                "sandboxed": service.sandboxed, "chapters": service.chapters}

    @app.post("/submit/{chapter}", status_code=202)
    async def submit(chapter: str, request: Request, authorization: str | None = Header(default=None)):
        student = await who(request, authorization)
        service.chapter_named(chapter)
        declared = request.headers.get("content-length")
        if declared and declared.isdigit() and int(declared) > MAX_NOTEBOOK_BYTES:
            raise Refused(413, f"the notebook is larger than {MAX_NOTEBOOK_BYTES // 2**20} MB; clear its outputs and save it again")
        body, size = [], 0
        async for chunk in request.stream():
            size += len(chunk)
            if size > MAX_NOTEBOOK_BYTES:
                raise Refused(413, f"the notebook is larger than {MAX_NOTEBOOK_BYTES // 2**20} MB; clear its outputs and save it again")
            body.append(chunk)
        notebook = b"".join(body)
        if not notebook.strip():
            raise Refused(400, "the request held no notebook: send the saved .ipynb file as the request body")
        return service.admit(student, chapter, notebook)

    @app.get("/submissions")
    async def own_submissions(request: Request, authorization: str | None = Header(default=None)):
        student = await who(request, authorization)
        return {"student": student, "submissions": service.listing(student)}

    @app.get("/submissions/{sid}")
    async def one_submission(sid: int, request: Request, authorization: str | None = Header(default=None)):
        return service.submission(await who(request, authorization), sid)

    @app.get("/limits/{chapter}")
    async def limits(chapter: str, request: Request, authorization: str | None = Header(default=None)):
        student = await who(request, authorization)
        return {"chapter": service.chapter_named(chapter), "exercises": service.limits_of(student, chapter)}

    return app


# -- the instructor's commands ------------------------------------------------------------------------------------------

ROSTER_COLUMNS = ("student", "student_id", "id", "login", "username", "user", "sis login id", "email")


def roster_ids(path: Path) -> list[str]:
    """Student ids from a roster CSV: the column named student / id / login / username / email, else the first."""
    try:
        rows = list(csv.reader(path.read_text(encoding="utf-8-sig").splitlines()))
    except (OSError, UnicodeDecodeError) as error:
        raise SystemExit(f"serve: cannot read the roster {path}: {getattr(error, 'strerror', None) or error}")
    rows = [r for r in rows if any(cell.strip() for cell in r)]
    if not rows:
        raise SystemExit(f"serve: the roster {path} is empty")
    header = [cell.strip().lower() for cell in rows[0]]
    column = next((header.index(name) for name in ROSTER_COLUMNS if name in header), None)
    body = rows[1:] if column is not None else rows
    column = column or 0
    ids, bad = [], []
    for number, row in enumerate(body, 2 if body is not rows else 1):
        value = row[column].strip() if column < len(row) else ""
        if not value or grade.clean_id(value) != value:
            bad.append(f"line {number}: {value!r}")
        else:
            ids.append(value)
    if bad:
        raise SystemExit("serve: these roster entries are no usable student id (letters, digits and . _ @ + - only; "
                         "the id grades.csv will show):\n  " + "\n  ".join(bad[:20]))
    if len(set(ids)) != len(ids):
        twice = sorted({i for i in ids if ids.count(i) > 1})
        raise SystemExit(f"serve: the roster names these students twice: {', '.join(twice[:20])}")
    return ids


def issue_tokens(workspace: Path, roster: Path, out: Path | None, reissue: bool, db_url: str | None) -> int:
    ids = roster_ids(roster)
    engine = engine_for(workspace, db_url)
    issued = []
    with engine.begin() as db:
        have = {r.student for r in db.execute(select(students.c.student))}
        for student in ids:
            if student in have and not reissue:
                continue
            token = secrets.token_urlsafe(32)
            if student in have:
                db.execute(students.update().where(students.c.student == student).values(
                    token_sha256=token_hash(token), issued_at=time.time()))
            else:
                db.execute(students.insert().values(student=student, token_sha256=token_hash(token), issued_at=time.time()))
            issued.append((student, token))
    out = out or workspace / f"tokens-{dt.datetime.now(dt.timezone.utc):%Y%m%d-%H%M%S}.csv"
    fd = os.open(out, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)  # tokens are passwords: readable by you only
    with os.fdopen(fd, "w", newline="") as handle:
        writer = csv.writer(handle, lineterminator="\n")
        writer.writerow(["student", "token"])
        writer.writerows(issued)
    kept = len([s for s in ids if s not in dict(issued)])
    print(f"serve: {len(issued)} token(s) written to {out} (hand each student their own; only their hashes are "
          f"stored){f'; {kept} student(s) already had one (--reissue replaces them)' if kept else ''}", file=sys.stderr)
    return 0


def export_submitted(workspace: Path, wanted: list[str] | None, db_url: str | None, policy_file: Path | None) -> int:
    """Each student's last submission of each chapter, before their due date where the policy sets one, into
    WORKSPACE/submitted/<student>/<chapter>/ with nbgrader's timestamp.txt: then grade.py grades them as a batch."""
    engine = engine_for(workspace, db_url)
    chapters = grade.chapters()
    policy = term_policy.for_workspace(workspace, policy_file, chapters)
    written = 0
    with engine.connect() as db:
        rows = db.execute(select(submissions.c.id, submissions.c.student, submissions.c.chapter,
                                 submissions.c.received_at).order_by(submissions.c.id)).all()
        last: dict[tuple[str, str], tuple] = {}
        for row in rows:
            if wanted and row.chapter not in wanted:
                continue
            due = policy.due(row.chapter, row.student)
            if due is not None and row.received_at > due.timestamp():
                continue
            last[(row.student, row.chapter)] = row
        for (student, chapter), row in sorted(last.items()):
            notebook = db.execute(select(submissions.c.notebook).where(submissions.c.id == row.id)).scalar()
            folder = workspace / "submitted" / student / chapter
            folder.mkdir(parents=True, exist_ok=True)
            (folder / graded_notebooks(grade.SOLUTIONS / chapter)[0].name).write_bytes(notebook)
            received = dt.datetime.fromtimestamp(row.received_at, dt.timezone.utc)
            (folder / "timestamp.txt").write_text(term_policy.timestamp_text(received) + "\n")
            written += 1
    print(f"serve: {written} submission(s) written to {workspace / 'submitted'}; grade them with "
          f"python autograder/grade.py {workspace}", file=sys.stderr)
    return 0


def main(argv: list[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    command = argv[1] if len(argv) > 1 and argv[1] in ("issue-tokens", "export") else None
    if command:
        argv.pop(1)
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("workspace", type=Path, help="the grading workspace (as grade.py's)")
    parser.add_argument("--db-url", help="SQLAlchemy URL of the service's database (default: sqlite in WORKSPACE/service)")
    parser.add_argument("--policy", type=Path, help="the term policy (default: WORKSPACE/policy.toml; autograder/policy.py)")
    if command == "issue-tokens":
        parser.add_argument("roster", type=Path, help="a CSV of students (a column student / id / login / email)")
        parser.add_argument("--out", type=Path, help="where to write the tokens (default: WORKSPACE/tokens-<time>.csv)")
        parser.add_argument("--reissue", action="store_true", help="replace the tokens of students who have one")
    elif command == "export":
        parser.add_argument("--chapter", action="append", help="only this chapter (repeatable)")
    else:
        parser.add_argument("--host", help="default 127.0.0.1 (with --hub: JUPYTERHUB_SERVICE_URL's)")
        parser.add_argument("--port", type=int, help="default 8000 (with --hub: JUPYTERHUB_SERVICE_URL's)")
        parser.add_argument("--hub", action="store_true", help="run as a JupyterHub service: the Hub's users submit "
                            "with their Hub tokens (autograder/serve_hub.py; needs seqlab[hub])")
        parser.add_argument("--jobs", type=int, default=os.cpu_count() or 1, help="parallel sandboxes (default: every core)")
        parser.add_argument("--queue", type=int, default=32, help="submissions that may wait; beyond: 503, try later")
        parser.add_argument("--per-student", type=int, default=2, help="a student's submissions that may wait at once")
        parser.add_argument("--free-attempts", type=int, default=RateLimit.free_attempts)
        parser.add_argument("--first-wait", type=float, default=RateLimit.first_wait_s, help="seconds (default 60)")
        parser.add_argument("--wait-growth", type=float, default=RateLimit.growth)
        parser.add_argument("--max-wait", type=float, default=RateLimit.max_wait_s, help="seconds (default 900)")
        parser.add_argument("--memory-gb", type=float, default=4.0)
        parser.add_argument("--cell-timeout", type=int, default=60)
        parser.add_argument("--allow-unsandboxed", action="store_true")
    args = parser.parse_args(argv)
    workspace = args.workspace.expanduser().resolve()
    if command == "issue-tokens":
        return issue_tokens(workspace, args.roster, args.out, args.reissue, args.db_url)
    if command == "export":
        return export_submitted(workspace, args.chapter, args.db_url, args.policy)
    for name, value in (("--jobs", args.jobs), ("--queue", args.queue), ("--per-student", args.per_student),
                        ("--free-attempts", args.free_attempts)):
        if value < 1:
            parser.error(f"{name} must be at least 1")
    if args.first_wait <= 0 or args.max_wait < args.first_wait or args.wait_growth < 1:
        parser.error("waits: --first-wait > 0, --max-wait >= --first-wait and --wait-growth >= 1")
    sandboxed = bubblewrap() is not None
    if not sandboxed and not args.allow_unsandboxed:
        print(unsandboxed_refusal("serve"), file=sys.stderr)
        return 2
    hub = None
    if args.hub:
        import serve_hub

        try:
            hub = serve_hub.HubStudents()
        except serve_hub.HubUnavailable as error:
            print(f"serve: {error}", file=sys.stderr)
            return 2
        host, port = serve_hub.listen_address(args.host, args.port)
    else:
        host, port = args.host or "127.0.0.1", args.port or 8000
    os.environ["PATH"] = os.pathsep.join([str(Path(sys.executable).parent), os.environ.get("PATH", "")])
    engine = engine_for(workspace, args.db_url)
    setup_logs(workspace / "service")
    try:
        service = Service(workspace, engine, RateLimit(args.free_attempts, args.first_wait, args.wait_growth, args.max_wait),
                          Limits(cell_timeout=args.cell_timeout, memory_bytes=int(args.memory_gb * 2**30)),
                          args.jobs, args.queue, args.per_student, sandboxed, args.policy)
    except term_policy.PolicyError as error:
        print(f"serve: {error}", file=sys.stderr)
        return 2
    service.hub = hub
    import uvicorn

    # the workers fork before the server opens its socket, so no grading process holds the port
    service.start_pool()
    try:
        app = make_app(service)
        uvicorn.run(hub.mounted(app) if hub else app, host=host, port=port, log_config=None, access_log=False,
                    timeout_graceful_shutdown=5)
    finally:
        service.close()
    return 0


if __name__ == "__main__":
    sys.exit(main())
