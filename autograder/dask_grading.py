"""grade.py's jobs on a Dask distributed cluster: the same job (job.py), run by workers that may be other machines.

    python autograder/grade.py WORKSPACE --cluster local:4          # a local cluster of 4 worker processes
    python autograder/grade.py WORKSPACE --scheduler tcp://host:8786  # a cluster that is already running

A worker is started from a checkout of the course at the graded commit, with this folder importable:

    PYTHONPATH=$PWD/autograder dask worker tcp://host:8786 --nthreads 4 --preload dask_grading

What travels through the scheduler is bytes: a tar of the submission folder (its notebooks, their ``.refused``
notes, timestamp.txt) in, a tar of the result folder (result.json, executed notebooks, feedback pages) out. Both
ends unpack with the same rules as the grader's input (safe_input.py): regular files with plain names only, no
links, no folders, no path that leaves the folder, within size limits.

A worker grades only when it holds the course at the graded version (job.course_version over the chapter's
sources and the grader's code, the same hash grade.py keeps in every result) and bubblewrap works there (or the
instructor passed --allow-unsandboxed); it checks once per chapter and otherwise refuses every job with the reason
(WorkerRefused). Each worker thread keeps its sandbox (two fork servers) between jobs, as the local pool's worker
processes do. Merging into the gradebook stays on the instructor's machine (grade.py).

Faults: a worker that dies in the middle of a job has its job rescheduled by the scheduler; after
ALLOWED_FAILURES such deaths the job is lost (JobLost) and grade.py records it as ungraded with the reason. A
scheduler that goes away ends the run (SchedulerGone); what finished is in the gradebook and a rerun grades the rest.
"""

from __future__ import annotations

import collections
import concurrent.futures as futures
import io
import os
import pickle
import queue
import re
import sys
import tarfile
import tempfile
import threading
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
if str(HERE) not in sys.path:
    sys.path.insert(0, str(HERE))

from safe_input import Refused, entries, is_real_dir, read_file  # noqa: E402

REPO = HERE.parent
SOLUTIONS = REPO / "solutions"
# A job may run at most 1 + ALLOWED_FAILURES times when workers die under it (the scheduler's allowed-failures).
ALLOWED_FAILURES = 2
SUBMISSION_NAME = re.compile(r"[^/\\\x00]+\.(ipynb|ipynb\.refused)|timestamp\.txt")
RESULT_NAME = re.compile(r"[^/\\\x00]+\.(ipynb|html|json)")
MAX_MEMBERS = 200
MAX_TAR_BYTES = 200 * 2**20  # a submission's notebooks are at most 50 MB each (safe_input.MAX_NOTEBOOK_BYTES)


class WorkerRefused(Exception):
    """A worker that must not grade these jobs (another course version, no sandbox); str() is the reason."""

    def __init__(self, reason: str, worker: str | None = None):
        super().__init__(reason, worker)

    def __str__(self) -> str:
        return str(self.args[0])

    @property
    def worker(self) -> str | None:
        return self.args[1]


class JobLost(Exception):
    """Workers died under the job more often than the scheduler's allowed-failures (ALLOWED_FAILURES for --cluster):
    no further try in this run."""


class SchedulerGone(Exception):
    """The scheduler cannot be reached any more: the run stops, a rerun grades the rest."""


class NoWorker(Exception):
    """Every worker of the cluster refused the jobs: the run stops with their reasons."""


# -- bytes in, bytes out ------------------------------------------------------------------------------

def _add(archive: tarfile.TarFile, name: str, data: bytes) -> None:
    info = tarfile.TarInfo(name)
    info.size, info.mode, info.mtime = len(data), 0o600, 0
    archive.addfile(info, io.BytesIO(data))


def pack_submission(folder: Path, notebooks: list[str]) -> bytes:
    """The submission folder as a tar: what job.py reads of it, never following anything.

    The chapter's notebooks travel with their bytes, their ``.refused`` notes and timestamp.txt as they are; a notebook
    of another name travels empty (job.py reads only its name, to say that a notebook must keep its name), at most
    MAX_MEMBERS - 10 of them, so that no submission the local pool grades is too large or too many files here (the
    hash that decides what is graded again is taken of the instructor's folder, not of this tar).
    A notebook the grader will not read (a link, a hard link, a device, too large) travels as ``<name>.refused`` with
    the reason, which job.py turns into the same zero and the same reason as reading it locally would give; so does a
    submission folder that is a link (job.py's own words for it)."""
    buffer = io.BytesIO()
    with tarfile.open(fileobj=buffer, mode="w:gz") as archive:  # closed before its bytes are taken: the gzip trailer
        if not is_real_dir(folder):
            for name in notebooks:
                _add(archive, f"{name}.refused", f"the folder {folder.name} is a link; it was not followed".encode())
        else:
            read = {"timestamp.txt", *notebooks, *(f"{name}.refused" for name in notebooks)}
            others = 0
            for entry in entries(folder):
                if not SUBMISSION_NAME.fullmatch(entry.name) or entry.name.startswith("."):
                    continue
                if entry.name not in read:
                    if others < MAX_MEMBERS - 10:
                        _add(archive, entry.name, b"")
                        others += 1
                    continue
                try:
                    _add(archive, entry.name, read_file(Path(entry.path), 4096 if entry.name == "timestamp.txt" else
                                                        50 * 2**20))
                except Refused as why:
                    if entry.name.endswith(".ipynb"):
                        _add(archive, f"{entry.name}.refused", str(why).encode())
                except OSError:
                    continue
    return buffer.getvalue()


def unpack(data: bytes, into: Path, allowed: re.Pattern) -> list[str]:
    """Write a tar's members into the (empty) folder ``into``: regular files whose plain names ``allowed`` matches,
    within MAX_MEMBERS and MAX_TAR_BYTES; anything else (a link, a folder, a device, a path with a separator or
    ``..``) is refused whole with a reason (safe_input.Refused). Returns the names written."""
    if not isinstance(data, (bytes, bytearray)) or len(data) > MAX_TAR_BYTES:
        raise Refused("the archive is not bytes or is too large")
    names: list[str] = []
    total = 0
    try:
        with tarfile.open(fileobj=io.BytesIO(data), mode="r:*") as archive:
            members = []
            for member in archive:
                if len(members) >= MAX_MEMBERS:
                    raise Refused(f"the archive holds more than {MAX_MEMBERS} files")
                name = member.name
                if not member.isreg():
                    raise Refused(f"{name[:80]!r} in the archive is not a regular file (a link, a folder?); nothing "
                                  "was unpacked")
                if name in (".", "..") or "/" in name or "\\" in name or not allowed.fullmatch(name):
                    raise Refused(f"{name[:80]!r} in the archive is not a plain file name the grader expects; nothing "
                                  "was unpacked")
                total += member.size
                if total > MAX_TAR_BYTES:
                    raise Refused("the archive's files are too large together")
                members.append(member)
            if len({m.name for m in members}) != len(members):
                raise Refused("the archive names a file twice")
            for member in members:
                source = archive.extractfile(member)
                assert source is not None
                fd = os.open(into / member.name, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, 0o600)
                with os.fdopen(fd, "wb") as target:
                    target.write(source.read(member.size + 1)[: member.size])
                names.append(member.name)
    except (tarfile.TarError, EOFError, OSError) as error:
        raise Refused(f"the archive could not be read ({type(error).__name__}: {error})") from None
    return names


def pack_result(out: Path) -> bytes:
    buffer = io.BytesIO()
    with tarfile.open(fileobj=buffer, mode="w:gz") as archive:
        for entry in entries(out):
            if RESULT_NAME.fullmatch(entry.name) and entry.is_file(follow_symlinks=False):
                _add(archive, entry.name, read_file(Path(entry.path), MAX_TAR_BYTES))
    return buffer.getvalue()


def place_result(data: bytes, out: Path, submission_hash: str, worker: str | None = None) -> None:
    """The worker's result folder, unpacked beside ``out`` and moved into place; result.json last (grade.py takes a
    result folder with a result.json as complete). Its submission hash is the one of the instructor's folder (what
    job.py hashes there may differ from what travelled: a link travels as its reason). ``graded_by`` names the worker."""
    import json
    import shutil

    from job import write_result

    out.parent.mkdir(parents=True, exist_ok=True)
    staging = Path(tempfile.mkdtemp(prefix=".staging-", dir=out.parent))  # not the id's name: a 250-character id fits
    try:
        unpack(data, staging, RESULT_NAME)
        result = json.loads((staging / "result.json").read_text())
        result["submission_hash"] = submission_hash
        result["graded_by"] = worker
        (staging / "result.json").unlink()
        out.mkdir(exist_ok=True)
        (out / "result.json").unlink(missing_ok=True)
        for path in staging.iterdir():
            target = out / path.name
            if target.is_dir() and not target.is_symlink():
                shutil.rmtree(target)
            os.replace(path, target)
        write_result(out, result)
    finally:
        shutil.rmtree(staging, ignore_errors=True)


# -- on the worker --------------------------------------------------------------------------------------

_checked: dict[tuple, str | None] = {}  # (chapter, version, allow_unsandboxed) -> None (fine) or the refusal
_sandboxed: bool | None = None
_idle: dict[tuple, queue.SimpleQueue] = {}  # (limits, sandboxed) -> sandboxes no thread is using
_all_sandboxes: list = []
_slots: threading.BoundedSemaphore | None = None
_lock = threading.Lock()


def sandbox_available() -> bool:
    global _sandboxed
    if _sandboxed is None:
        from sandbox import bubblewrap

        _sandboxed = bubblewrap() is not None
    return _sandboxed


def check_worker(versions: dict[str, str], allow_unsandboxed: bool) -> str | None:
    """Why this worker must not grade these chapters at these versions, or None. Checked once per chapter."""
    from job import course_version

    for chapter, version in sorted(versions.items()):
        key = (chapter, version, allow_unsandboxed)
        with _lock:
            if key not in _checked:
                source = SOLUTIONS / chapter
                if not any(source.glob("*.ipynb")):
                    why = f"the worker's course ({REPO}) has no chapter {chapter}"
                elif course_version(source) != version:
                    why = (f"the worker's course ({REPO}) is version {course_version(source)} of {chapter}, the grader "
                           f"grades version {version}: start the worker from a checkout of the graded commit")
                elif not sandbox_available() and not allow_unsandboxed:
                    why = ("bubblewrap (bwrap) is missing or cannot create namespaces on this worker, so submitted "
                           "code cannot be isolated (install it, or grade with --allow-unsandboxed)")
                else:
                    why = None
                _checked[key] = why
            if _checked[key]:
                return _checked[key]
    return None


def _take_sandbox(limits, sandboxed: bool):
    from sandbox import Sandbox

    key = (limits, sandboxed)
    with _lock:
        idle = _idle.setdefault(key, queue.SimpleQueue())
    try:
        return idle.get_nowait()
    except queue.Empty:
        pass
    root = Path(tempfile.mkdtemp(prefix="seqlab-dask-worker-"))
    sandbox = Sandbox(root, limits, sandboxed=sandboxed)
    with _lock:
        _all_sandboxes.append(sandbox)
    sandbox.start()
    return sandbox


def close_sandboxes() -> None:
    """Stop every fork server this worker process started (its teardown; bwrap's --die-with-parent covers a kill)."""
    import shutil

    with _lock:
        sandboxes, _all_sandboxes[:] = list(_all_sandboxes), []
        _idle.clear()
    for sandbox in sandboxes:
        try:
            sandbox.close()
        except Exception:  # noqa: BLE001 - teardown goes on
            pass
        shutil.rmtree(sandbox.root, ignore_errors=True)


def grade_job(data: bytes, chapter: str, student: str, version: str, limits, allow_unsandboxed: bool,
              slots: int, hidden_seed: str | None = None) -> dict:
    """The Dask task: one submission's tar in, its result folder's tar out (with grade.py's progress figures).
    ``hidden_seed`` is the student's seed for this chapter (job.student_seed), never the course's secret: a worker
    can draw this student's hidden-test inputs and no one else's."""
    global _slots
    import shutil

    from job import run_job

    why = check_worker({chapter: version}, allow_unsandboxed)
    if why:
        raise WorkerRefused(why, worker_address())
    with _lock:
        if _slots is None:
            _slots = threading.BoundedSemaphore(max(1, slots))
    with _slots:
        started = time.perf_counter()
        work = Path(tempfile.mkdtemp(prefix="seqlab-dask-job-"))
        try:
            submission = work / "in" / chapter
            submission.mkdir(parents=True)
            unpack(data, submission, SUBMISSION_NAME)
            out = work / "out"
            sandboxed = sandbox_available()
            sandbox = _take_sandbox(limits, sandboxed)
            try:
                result = run_job(submission, SOLUTIONS / chapter, student, out, sandbox, hidden_seed=hidden_seed)
            except BaseException:
                sandbox.close()  # in an unknown state: never handed to the next job
                raise
            _idle[(limits, sandboxed)].put(sandbox)
            return {"student": student, "chapter": chapter, "score": result["score"], "max_score": result["max_score"],
                    "seconds": time.perf_counter() - started, "peak_mib": peak_mib(), "result": pack_result(out),
                    "worker": worker_address()}
        finally:
            shutil.rmtree(work, ignore_errors=True)


def peak_mib() -> float | None:
    """This process's peak resident memory (VmHWM) in MiB; None where /proc does not say (not Linux). grade.py's pool
    workers report it too (grade.py imports this module, never the other way)."""
    try:
        with open("/proc/self/status") as status:
            for line in status:
                if line.startswith("VmHWM:"):
                    return int(line.split()[1]) / 1024
    except (OSError, ValueError, IndexError):
        pass
    return None


def worker_address() -> str | None:
    try:
        from distributed import get_worker

        return get_worker().address
    except (ImportError, ValueError):
        return None


def dask_setup(worker) -> None:
    """`--preload dask_grading`: check the sandbox when the worker starts (logged), stop the fork servers at its end."""
    import atexit
    import logging

    log = logging.getLogger("distributed.worker")
    if sandbox_available():
        log.info("seqlab grading: bubblewrap works here; course at %s", REPO)
    else:
        log.warning("seqlab grading: bubblewrap does not work here: jobs are refused unless --allow-unsandboxed")
    atexit.register(close_sandboxes)


def dask_teardown(worker) -> None:
    close_sandboxes()


# -- on the instructor's machine ------------------------------------------------------------------------

class _Call:
    """Unpickled on a worker, a call of grade_job. The task the scheduler sees is pickle.loads of bytes: recent
    schedulers unpickle the tasks they are sent, and the scheduler need not hold the course (only the workers do)."""

    def __init__(self, function, *args):
        self.function, self.args = function, args

    def __reduce__(self):
        return self.function, self.args


def parse_cluster(spec: str) -> int:
    """``local:N`` -> N worker processes."""
    match = re.fullmatch(r"local:(\d+)", spec.strip())
    if not match or int(match.group(1)) < 1:
        raise ValueError(f"--cluster {spec!r}: expected local:N with N >= 1 worker processes (e.g. local:4)")
    return int(match.group(1))


def quiet() -> None:
    """Dask's own log lines stay out of grade.py's report: a lost scheduler is logged with tracebacks that say less
    than grade.py's one line (SchedulerGone), and a dying worker's lines come before grade.py says what it did."""
    import logging

    for name in [n for n in logging.root.manager.loggerDict if n.split(".")[0] in ("distributed", "tornado")] + \
            ["distributed", "tornado"]:
        logging.getLogger(name).setLevel(logging.CRITICAL)


class DaskPool:
    """Submit grade.py's jobs to a Dask cluster; each job's concurrent.futures.Future completes with the same dict
    as the local pool's worker (after the result folder is unpacked into place), or fails with the reason."""

    def __init__(self, *, scheduler: str | None, local_workers: int | None, jobs: int, limits, allow_unsandboxed: bool,
                 versions: dict[str, str], connect_timeout: float = 30, log=print):
        import dask
        from distributed import Client, LocalCluster

        self.jobs, self.limits, self.allow_unsandboxed, self.versions, self.log = jobs, limits, allow_unsandboxed, versions, log
        self.cluster = None
        self.refused: dict[str, str] = {}  # worker address -> its reason
        self.closing = False
        self.gone: str | None = None
        self._lock = threading.Lock()
        self._waiting: collections.deque = collections.deque()  # jobs not sent yet: (future, submission, chapter, ...)
        self._in_flight = 0
        self._dispatching = False
        dask.config.set({"distributed.scheduler.allowed-failures": ALLOWED_FAILURES,
                         "distributed.comm.timeouts.connect": f"{connect_timeout}s",
                         "distributed.client.heartbeat": "2s", "distributed.worker.daemon": False,
                         "distributed.logging.distributed": "error"})
        if local_workers is not None:
            # Spawned worker processes import this module from this checkout (PYTHONPATH); fork servers are
            # children of the worker process, so the nanny's memory limit would count nothing of theirs: none.
            os.environ["PYTHONPATH"] = os.pathsep.join([str(HERE), *filter(None, [os.environ.get("PYTHONPATH")])])
            self.cluster = LocalCluster(n_workers=local_workers, threads_per_worker=jobs, processes=True,
                                        memory_limit=0, dashboard_address=None,
                                        worker_class="distributed.Nanny", preload=["dask_grading"])
            scheduler = self.cluster.scheduler_address
        self.address = scheduler
        self.client = Client(scheduler, timeout=connect_timeout, set_as_default=False)
        quiet()
        self.check_workers()

    def describe(self) -> str:
        workers = self.client.scheduler_info().get("workers", {})
        threads = sum(w.get("nthreads", 0) for w in workers.values())
        where = "a local Dask cluster" if self.cluster is not None else f"the Dask scheduler at {self.address}"
        return f"{where}: {len(workers)} worker(s), {threads} thread(s) in all, at most {self.jobs} job(s) at once on each"

    def check_workers(self) -> None:
        """Every worker checks the course version and its sandbox once; the refusals are printed, and jobs go to the
        others. No worker at all, or none that accepts: NoWorker."""
        try:
            self.client.wait_for_workers(1, timeout=60)
        except Exception as error:  # noqa: BLE001 - distributed raises TimeoutError or its own
            raise NoWorker(f"no worker joined {self.address} within 60 s ({type(error).__name__})") from None
        answers = self.client.run(check_worker, self.versions, self.allow_unsandboxed)
        for address, why in sorted(answers.items()):
            if why:
                self.refuse(address, why)
        if not self.good_workers():
            raise NoWorker("; ".join(f"{a}: {w}" for a, w in sorted(self.refused.items())))

    def refuse(self, address: str, why: str) -> None:
        if address not in self.refused:
            self.refused[address] = why
            self.log(f"grade: the worker {address} refuses to grade: {why}")

    def good_workers(self) -> list[str]:
        return sorted(set(self.client.scheduler_info().get("workers", {})) - set(self.refused))

    def submit(self, _function, submission: str, chapter: str, student: str, out: str,
               hidden_seed: str | None = None) -> futures.Future:
        """Like ProcessPoolExecutor.submit(grade._worker_job, *job). The job waits here as its paths: its submission's
        tar is made when it is sent, and only in_flight_limit() jobs are out at a time, so the grader (and the
        scheduler) hold the tars of the jobs being graded, never a whole class's."""
        outer: futures.Future = futures.Future()
        outer.set_running_or_notify_cancel()
        with self._lock:
            self._waiting.append((outer, submission, chapter, student, out, hidden_seed))
        self._dispatch()
        return outer

    def in_flight_limit(self) -> int:
        """Twice the job slots of the workers that grade: each has its next job at hand when one ends."""
        workers = self.client.scheduler_info().get("workers", {})
        slots = sum(min(max(1, w.get("nthreads", 1)), self.jobs) for a, w in workers.items() if a not in self.refused)
        return max(2, 2 * slots)

    def _dispatch(self) -> None:
        """Send waiting jobs while there is room. One thread sends at a time; a job that completes at once (its tar
        could not be made, the scheduler is gone) frees its room to the loop that sent it, not to a nested call."""
        with self._lock:
            if self._dispatching:
                return
            self._dispatching = True
        try:
            try:
                limit = self.in_flight_limit()
            except Exception:  # noqa: BLE001 - the scheduler is gone: _send says so for each job
                limit = 2
            while True:
                with self._lock:
                    if not self._waiting or self._in_flight >= limit:
                        self._dispatching = False
                        return
                    job = self._waiting.popleft()
                    self._in_flight += 1
                job[0].add_done_callback(self._finished)
                self._start(*job)
        except BaseException:
            with self._lock:
                self._dispatching = False
            raise

    def _finished(self, _outer: futures.Future) -> None:
        with self._lock:
            self._in_flight -= 1
        self._dispatch()

    def _start(self, outer: futures.Future, submission: str, chapter: str, student: str, out: str,
               hidden_seed: str | None = None) -> None:
        from job import graded_notebooks, submission_hash

        try:
            data = pack_submission(Path(submission), [p.name for p in graded_notebooks(SOLUTIONS / chapter)])
            local_hash = submission_hash(Path(submission))
        except Exception as error:  # noqa: BLE001 - this job's failure (grade.py tries once more, then records it)
            outer.set_exception(error)
            return
        self._send(outer, data, chapter, student, out, local_hash, restricted=bool(self.refused), hidden_seed=hidden_seed)

    def _send(self, outer: futures.Future, data: bytes, chapter: str, student: str, out: str, local_hash: str,
              restricted: bool, hidden_seed: str | None = None) -> None:
        workers = self.good_workers() if restricted else None
        if restricted and not workers:
            outer.set_exception(NoWorker("; ".join(f"{a}: {w}" for a, w in sorted(self.refused.items()))))
            return
        task = pickle.dumps(_Call(grade_job, data, chapter, student, self.versions[chapter], self.limits,
                                  self.allow_unsandboxed, self.jobs, hidden_seed))
        try:
            inner = self.client.submit(pickle.loads, task, key=f"grade-{chapter}-{student}-{time.time_ns()}",
                                       pure=False, workers=workers, allow_other_workers=False)
        except Exception as error:  # noqa: BLE001 - a closed client: the scheduler is gone
            outer.set_exception(SchedulerGone(f"{type(error).__name__}: {error}"))
            return

        def done(inner) -> None:
            from distributed.client import FutureCancelledError

            try:
                status = inner.status
                if status == "finished":
                    answer = inner.result()
                    place_result(answer.pop("result"), Path(out), local_hash, answer.get("worker"))
                    outer.set_result(answer)
                    return
                if status == "cancelled" or self.client.status not in ("running", "connecting", "newly-created"):
                    outer.set_exception(SchedulerGone(self.gone or f"the connection to {self.address} was lost"))
                    return
                error = inner.exception()
                if isinstance(error, WorkerRefused):
                    self.refuse(error.worker or "a worker", str(error))
                    self._send(outer, data, chapter, student, out, local_hash, restricted=True, hidden_seed=hidden_seed)
                    return
                name = type(error).__name__
                if name == "KilledWorker":
                    outer.set_exception(JobLost("the workers running it died more often than the scheduler's "
                                                f"allowed-failures allow ({str(error)[:200]})"))
                    return
                outer.set_exception(error)
            except FutureCancelledError:
                outer.set_exception(SchedulerGone(self.gone or f"the connection to {self.address} was lost"))
            except Exception as error:  # noqa: BLE001 - the result could not be read: this job's failure
                if not outer.done():
                    outer.set_exception(error)

        inner.add_done_callback(done)

    def stop_workers(self) -> None:
        """Ctrl-C: cancel what is queued; a local cluster's workers stop with it in close()."""
        with self._lock:
            self._waiting.clear()
        try:
            self.client.cancel(list(self.client.futures), force=True)
        except Exception:  # noqa: BLE001
            pass

    def close(self) -> None:
        self.closing = True
        for closing in (self.client, self.cluster):
            if closing is not None:
                try:
                    closing.close(timeout=20)
                except Exception:  # noqa: BLE001 - a gone scheduler: nothing left to close
                    pass

    def __enter__(self):
        return self

    def __exit__(self, *exc) -> None:
        self.close()
