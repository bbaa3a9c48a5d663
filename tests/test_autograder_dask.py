"""grade.py on a Dask distributed cluster (issue 30; autograder/dask_grading.py): the same grades as the local pool,
workers that die or refuse, a scheduler that goes away, and the safety suite's attacks run through the cluster.

The class holds one of each malformed input too (issue 39; tests/test_autograder_inputs.py, write_malformed): an
encrypted zip, a zip with a name flagged UTF-8 that is not, a broken deflate stream, non-UTF-8 file names, a linked
chapter folder, a 250-character id, a zip of 251 notebooks, a folder of 225 MiB, links. Both ways grade every one of
them (the chapter's notebook kept, or refused with its reason) with identical grades.csv. SEQLAB_DASK_HONEST=N adds N
honest students (the issue's 50-student measurement: N=49 beside the malformed ones; each path's time is printed).

Every submission is graded in chapter 7, with chapter 6 the chapter that grades fastest (benchmark.py here: a median
3.7 s of running per honest notebook in each; the safety suite grades chapter 7 too); the class is small and graded once by each path (module fixture `batch`).
The fault tests start a scheduler and workers of their own as separate processes (`dask scheduler`,
`dask worker --preload dask_grading`), as an instructor's cluster would run them.
"""

from __future__ import annotations

import collections
import csv
import io
import json
import os
import shutil
import signal
import subprocess
import sys
import tarfile
import threading
import time
from pathlib import Path

import pytest

from course import REPO, SOLUTIONS

pytest.importorskip("distributed")
sys.path.insert(0, str(REPO / "autograder"))
sys.path.insert(0, str(REPO / "tests"))
from adversarial.generate import write_export  # noqa: E402
from safe_input import Refused  # noqa: E402
from sandbox import bubblewrap  # noqa: E402
from test_autograder_inputs import LONG_ID, write_malformed, zip_of  # noqa: E402
from test_autograder_safety import CELL_LIMIT, COURSE, snoop_report, tree_hash  # noqa: E402 - the safety suite's own helpers

import dask_grading  # noqa: E402

pytestmark = [pytest.mark.slow, pytest.mark.skipif(bubblewrap() is None, reason="bubblewrap is not installed")]
BATCH = "07-attention"
GRADE = [sys.executable, str(REPO / "autograder" / "grade.py")]
FAST = ["--cell-timeout", str(CELL_LIMIT), "--memory-gb", "1", "--no-progress", "--chapter", BATCH]
DASK = str(Path(sys.executable).parent / "dask")
# honest, wrong, adversarial (edited tests), broken, and two of the safety suite's red-team attacks, as an LMS export
CLASS = ["honest_solution", "partly_wrong", "edit_tests", "broken_json", "snoop", "plant_symlinks"]
SMALL = ["honest_solution", "partly_wrong", "broken_json"]  # the fault tests' class
HONEST_EXTRA = int(os.environ.get("SEQLAB_DASK_HONEST", "0"))  # more honest students (a measured run; 0 in the suite)


def grade(workspace: Path, *args: str, timeout: int = 600) -> subprocess.CompletedProcess:
    return subprocess.run([*GRADE, str(workspace), *args], capture_output=True, text=True, timeout=timeout)


def rows(workspace: Path) -> dict[str, dict]:
    return {r["student"]: r for r in csv.DictReader(open(workspace / "grades.csv"))}


def results(workspace: Path) -> dict[str, dict]:
    return {p.parent.name: json.loads(p.read_text()) for p in (workspace / "autograder-results" / BATCH).glob("*/result.json")}


@pytest.fixture(scope="module")
def batch(tmp_path_factory):
    """The class graded by the local pool (2 sandboxes) and by a local Dask cluster (2 workers x 1 slot)."""
    root = tmp_path_factory.mktemp("dask")
    canary = root / "canary.txt"
    canary.write_text("the grader must never change this file\n")
    export = root / "export"
    expected = write_export(export, BATCH, targets=[str(SOLUTIONS), str(root), str(canary), "/root"], only=CLASS)
    malformed = write_malformed(export, root / "outside")
    solution = next((SOLUTIONS / BATCH).glob("*.ipynb"))
    for i in range(HONEST_EXTRA):
        (export / f"honest_{i:02d}.zip").write_bytes(zip_of({f"{BATCH}/{solution.name}": solution.read_bytes()}))
    write_export(root / "small", BATCH, only=SMALL)
    write_export(root / "tiny", BATCH, only=["broken_json"])
    before = tree_hash(*COURSE, canary, export)
    started = time.perf_counter()
    pool = grade(root / "pool", "--submissions", str(export), "--jobs", "2", *FAST, timeout=3600)
    pool_seconds = time.perf_counter() - started
    assert pool.returncode == 0, pool.stderr[-3000:]
    started = time.perf_counter()
    done = grade(root / "dask", "--submissions", str(export), "--cluster", "local:2", "--jobs", "1", *FAST, timeout=3600)
    seconds = time.perf_counter() - started
    assert done.returncode == 0, done.stderr[-3000:]
    after = tree_hash(*COURSE, canary, export)
    students = len(expected) + len(malformed) + HONEST_EXTRA
    print(f"\n{students} students ({len(malformed)} malformed inputs): the pool {pool_seconds:.1f} s, "
          f"--cluster local:2 {seconds:.1f} s", file=sys.stderr)
    return {"root": root, "export": export, "small": root / "small", "tiny": root / "tiny", "expected": expected,
            "malformed": malformed, "pool": root / "pool", "dask": root / "dask", "stderr": done.stderr,
            "pool_stderr": pool.stderr, "seconds": seconds,
            "changed": sorted(k for k in set(before) | set(after) if before.get(k) != after.get(k))}


def test_a_local_cluster_grades_a_class_exactly_as_the_local_pool(batch):
    ours, theirs = rows(batch["dask"]), rows(batch["pool"])
    assert set(ours) == set(CLASS) | set(batch["malformed"]) | {f"honest_{i:02d}" for i in range(HONEST_EXTRA)}
    assert ours == theirs, "scores, maximums and reasons must not depend on where the jobs ran"
    full = float(ours["honest_solution"]["max_score"])
    assert float(ours["honest_solution"]["score"]) == full > 0
    assert 0 < float(ours["partly_wrong"]["score"]) < full
    assert float(ours["edit_tests"]["score"]) == 0 and "not a valid notebook" in ours["broken_json"]["problems"]
    assert "on a local Dask cluster: 2 worker(s), 2 thread(s) in all" in batch["stderr"]
    # the same result files, cell by cell, as the pool's; each names the worker that graded it
    dask_results, pool_results = results(batch["dask"]), results(batch["pool"])
    for student, result in dask_results.items():
        assert result["graded_by"] and result["graded_by"].startswith("tcp://")
        for notebook, entry in result["notebooks"].items():
            theirs = pool_results[student]["notebooks"][notebook]
            assert {g: c["auto_score"] for g, c in entry["cells"].items()} == \
                {g: c["auto_score"] for g, c in theirs["cells"].items()}, student
        assert result["submission_hash"] == pool_results[student]["submission_hash"]
    assert len({r["graded_by"] for r in dask_results.values()}) == 2, "both workers graded"
    # and the workspace's outputs are there for formgrader and the students
    assert (batch["dask"] / "feedback" / "honest_solution" / BATCH).is_dir()
    assert (batch["dask"] / "autograded" / "partly_wrong" / BATCH / f"{BATCH}.ipynb").is_file()


@pytest.mark.parametrize("way", ["pool", "dask"])
def test_every_malformed_input_is_graded_or_refused_with_its_reason_and_the_class_is_graded(batch, way):
    """Issue 39: today the pool stops with a traceback (an encrypted zip, a mislabelled name, a broken stream, a
    non-UTF-8 file name): nobody is graded; and the cluster fails what the pool grades (a linked chapter folder, a
    250-character id, 251 notebooks, 225 MiB), each recorded as 0 with "the grader failed" and exit status 1."""
    graded = rows(batch[way])
    for student, (expect, reason) in batch["malformed"].items():
        row = graded[student]
        assert float(row["max_score"]) > 0, student
        if expect == "full":
            assert float(row["score"]) == float(row["max_score"]), (student, row["problems"])
        else:
            assert float(row["score"]) == 0 and reason in row["problems"], (student, row["problems"])
        assert "the grader failed" not in row["problems"], (student, row["problems"])
    for i in range(HONEST_EXTRA):
        row = graded[f"honest_{i:02d}"]
        assert float(row["score"]) == float(row["max_score"]) and not row["problems"], row
    report = (batch[way] / "grading-report.md").read_text(encoding="utf-8")
    assert "encrypted" in report and f"## {LONG_ID} /" not in report, "the long id is graded, with no problem"


def test_a_rerun_on_the_cluster_grades_nothing_again(batch):
    done = grade(batch["dask"], "--cluster", "local:2", *FAST)
    assert done.returncode == 0, done.stderr[-2000:]
    assert "0 to grade" in done.stderr and "Dask cluster" not in done.stderr, "nothing to grade: no cluster is started"


def test_red_team_cases_hold_through_the_cluster(batch):
    """Two of the safety suite's attacks (tests/test_autograder_safety.py), submitted through the scheduler: the
    sandbox on the worker hides the course, the workspace, the export and the network, and what the submission plants
    is never followed; the course, the export and a canary file are unchanged."""
    ours = rows(batch["dask"])
    assert float(ours["snoop"]["score"]) == 0 and float(ours["plant_symlinks"]["score"]) == 0
    report = snoop_report(batch["dask"] / "autograded" / "snoop" / BATCH / f"{BATCH}.ipynb")
    assert not [k for k, v in report.items() if v in ("READ", "EXECUTED", "WROTE", "CONNECTED")], report
    assert not list(SOLUTIONS.rglob("PWNED")) and not list(batch["root"].rglob("PWNED"))
    assert not batch["changed"], f"files of the course, the export or the canary changed: {batch['changed'][:10]}"


# -- bytes in, bytes out: the same safe-input rules at both ends (no grading) ------------------------------------------

def tar_of(*members: tarfile.TarInfo, data: bytes = b"{}") -> bytes:
    buffer = io.BytesIO()
    with tarfile.open(fileobj=buffer, mode="w:gz") as archive:
        for member in members:
            archive.addfile(member, io.BytesIO(data) if member.isreg() else None)
    return buffer.getvalue()


def member(name: str, kind: bytes = tarfile.REGTYPE, target: str = "") -> tarfile.TarInfo:
    info = tarfile.TarInfo(name)
    info.type, info.linkname, info.size = kind, target, 2 if kind == tarfile.REGTYPE else 0
    return info


@pytest.mark.parametrize("bad", [
    member("a.ipynb", tarfile.SYMTYPE, "/etc/passwd"), member("a.ipynb", tarfile.LNKTYPE, "b.ipynb"),
    member("../a.ipynb"), member("/tmp/a.ipynb"), member("sub/a.ipynb"), member("sub", tarfile.DIRTYPE),
    member("a.ipynb", tarfile.FIFOTYPE), member("a.py"), member(".."),
], ids=["symlink", "hardlink", "dotdot", "absolute", "subfolder", "folder", "fifo", "unexpected-name", "parent"])
def test_an_archive_with_anything_but_plain_files_is_refused_whole(tmp_path, bad):
    into = tmp_path / "in"
    into.mkdir()
    with pytest.raises(Refused):
        dask_grading.unpack(tar_of(member("ok.ipynb"), bad), into, dask_grading.SUBMISSION_NAME)
    assert not list(tmp_path.rglob("a.*")) and not (tmp_path / "etc").exists()
    assert not os.listdir(into), "nothing is unpacked from a refused archive"
    with pytest.raises(Refused):
        dask_grading.unpack(b"not a tar file", into, dask_grading.SUBMISSION_NAME)


def test_a_linked_notebook_travels_as_its_refusal_with_the_local_reason(tmp_path):
    folder = tmp_path / "alice" / BATCH
    folder.mkdir(parents=True)
    (tmp_path / "secret.ipynb").write_text("{}")
    (folder / f"{BATCH}.ipynb").symlink_to(tmp_path / "secret.ipynb")
    into = tmp_path / "in"
    into.mkdir()
    names = dask_grading.unpack(dask_grading.pack_submission(folder, [f"{BATCH}.ipynb"]), into, dask_grading.SUBMISSION_NAME)
    assert names == [f"{BATCH}.ipynb.refused"]
    assert "symbolic link" in (into / names[0]).read_text()


def test_a_linked_chapter_folder_travels_as_its_refusal_in_a_whole_archive(tmp_path):
    """Today the tar's bytes are taken before the gzip stream is closed: the worker cannot read the archive."""
    (tmp_path / "elsewhere").mkdir()
    (tmp_path / "alice").mkdir()
    (tmp_path / "alice" / BATCH).symlink_to(tmp_path / "elsewhere", target_is_directory=True)
    into = tmp_path / "in"
    into.mkdir()
    data = dask_grading.pack_submission(tmp_path / "alice" / BATCH, [f"{BATCH}.ipynb"])
    assert dask_grading.unpack(data, into, dask_grading.SUBMISSION_NAME) == [f"{BATCH}.ipynb.refused"]
    assert "is a link; it was not followed" in (into / f"{BATCH}.ipynb.refused").read_text()


def test_what_the_pool_grades_travels_whatever_else_the_folder_holds(tmp_path):
    """A chapter folder of 251 notebooks, or of 225 MiB of notebooks of other names: the chapter's notebook arrives
    as it is, the others by name only (job.py reads no more of them), within the archive's limits (today: refused,
    "more than 200 files" / "too large together", and the job fails twice)."""
    name = f"{BATCH}.ipynb"
    good = next((SOLUTIONS / BATCH).glob("*.ipynb")).read_bytes()
    for case, strays in (("many", {f"copy-{i:03d}.ipynb": 0 for i in range(250)}),
                         ("large", {f"draft-{i}.ipynb": 45 * 2**20 for i in range(5)})):
        folder = tmp_path / case / BATCH
        folder.mkdir(parents=True)
        (folder / name).write_bytes(good)
        (folder / "timestamp.txt").write_text("2026-11-27 12:00:00")
        for stray, size in strays.items():
            with open(folder / stray, "wb") as f:
                f.truncate(size)
        into = tmp_path / f"{case}-in"
        into.mkdir()
        names = dask_grading.unpack(dask_grading.pack_submission(folder, [name]), into, dask_grading.SUBMISSION_NAME)
        assert (into / name).read_bytes() == good and (into / "timestamp.txt").read_text() == "2026-11-27 12:00:00"
        others = sorted(set(names) - {name, "timestamp.txt"})
        assert others == sorted(strays)[: dask_grading.MAX_MEMBERS - 10] and not any(
            (into / o).stat().st_size for o in others)


def test_a_result_of_a_250_character_id_is_put_in_place(tmp_path):
    """Today the staging folder is named after the id, longer than a file name may be (ENAMETOOLONG)."""
    result_dir = tmp_path / "result"
    result_dir.mkdir()
    (result_dir / "result.json").write_text(json.dumps({"student": LONG_ID, "score": 1}))
    (result_dir / f"{BATCH}.html").write_text("<p>feedback</p>")
    out = tmp_path / "autograder-results" / BATCH / LONG_ID
    dask_grading.place_result(dask_grading.pack_result(result_dir), out, "abc", "tcp://worker")
    assert json.loads((out / "result.json").read_text())["graded_by"] == "tcp://worker"
    assert (out / f"{BATCH}.html").read_text() == "<p>feedback</p>" and os.listdir(out.parent) == [LONG_ID]


def test_jobs_tars_are_made_when_sent_never_for_a_whole_class_at_start(tmp_path, monkeypatch):
    """Today every job's tar is made by submit(), so grade.py (which submits the whole class at once) holds them all.
    Here a cluster of one slot: two jobs out at a time, the next tar made when one completes."""
    packed: list[str] = []
    sent: list = []
    monkeypatch.setattr(dask_grading, "pack_submission", lambda folder, names: packed.append(folder.parent.name) or b"")

    class Client:
        def scheduler_info(self):
            return {"workers": {"tcp://one": {"nthreads": 1}}}

    pool = dask_grading.DaskPool.__new__(dask_grading.DaskPool)
    pool.__dict__.update(client=Client(), jobs=1, refused={}, versions={BATCH: "v"}, _lock=threading.Lock(),
                         _waiting=collections.deque(), _in_flight=0, _dispatching=False)  # what __init__ sets
    monkeypatch.setattr(pool, "_send", lambda outer, *args, **kwargs: sent.append(outer), raising=False)
    for student in range(10):
        (tmp_path / f"s{student}" / BATCH).mkdir(parents=True)
    outers = [pool.submit(None, str(tmp_path / f"s{i}" / BATCH), BATCH, f"s{i}", str(tmp_path / "out" / f"s{i}"))
              for i in range(10)]
    assert packed == ["s0", "s1"], "the first two tars are made; the other eight jobs wait as their paths"
    sent[0].set_result({"score": 1})
    assert packed == ["s0", "s1", "s2"]
    for index in range(1, 8):  # sent grows as slots free; the eighth to end lets the last job out
        sent[index].set_exception(RuntimeError("failed"))  # a job that fails frees its slot too
    assert packed == [f"s{i}" for i in range(10)] and sum(o.done() for o in outers) == 8


def test_a_worker_with_another_course_version_refuses_before_reading_anything():
    with pytest.raises(dask_grading.WorkerRefused, match="start the worker from a checkout of the graded commit"):
        dask_grading.grade_job(b"never unpacked", BATCH, "alice", "0" * 16, None, False, 1)
    assert "--cluster" in grade(REPO / "build" / "never", "--cluster", "remote:2", *FAST).stderr


# -- faults, on a cluster of separate processes ---------------------------------------------------------------------

class Cluster:
    """A scheduler and workers as an instructor runs them: `dask scheduler`, `dask worker --preload dask_grading`."""

    def __init__(self, root: Path, allowed_failures: int = dask_grading.ALLOWED_FAILURES):
        self.root, self.processes = root, []
        self.file = root / "scheduler.json"
        env = {**os.environ, "DASK_DISTRIBUTED__SCHEDULER__ALLOWED_FAILURES": str(allowed_failures)}
        self.scheduler = self.start([DASK, "scheduler", "--port", "0", "--no-dashboard", "--scheduler-file", str(self.file)],
                                    env)
        deadline = time.time() + 60
        while not self.file.exists() and time.time() < deadline:
            time.sleep(0.2)
        self.address = json.loads(self.file.read_text())["address"]

    def start(self, command: list[str], env: dict) -> subprocess.Popen:
        log = open(self.root / f"process-{len(self.processes)}.log", "w")
        process = subprocess.Popen(command, env=env, stdout=log, stderr=subprocess.STDOUT, start_new_session=True)
        self.processes.append(process)
        return process

    def worker(self, course: Path = REPO) -> subprocess.Popen:
        """One worker process (no nanny: a killed worker stays dead) with one slot, running the course at ``course``."""
        env = {**os.environ, "PYTHONPATH": str(course / "autograder")}
        return self.start([DASK, "worker", self.address, "--nthreads", "1", "--no-nanny", "--preload", "dask_grading",
                           "--death-timeout", "20", "--memory-limit", "0"], env)

    def close(self) -> None:
        for process in reversed(self.processes):
            if process.poll() is None:
                os.killpg(process.pid, signal.SIGTERM)
        for process in self.processes:
            try:
                process.wait(timeout=30)
            except subprocess.TimeoutExpired:
                os.killpg(process.pid, signal.SIGKILL)
                process.wait()


@pytest.fixture
def remote(tmp_path):
    cluster = Cluster(tmp_path)
    yield cluster
    cluster.close()


def grading(workspace: Path, *args: str) -> subprocess.Popen:
    return subprocess.Popen([*GRADE, str(workspace), *args], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)


def wait_for(condition, timeout: float, what: str):
    deadline = time.time() + timeout
    while time.time() < deadline:
        found = condition()
        if found:
            return found
        time.sleep(0.2)
    raise AssertionError(f"timed out waiting for {what}")


def grading_children(process: subprocess.Popen) -> list:
    """The fork servers (bwrap) a worker started: it is grading, or has graded."""
    import psutil

    try:
        return psutil.Process(process.pid).children(recursive=True)
    except psutil.NoSuchProcess:
        return []


def pool_rows(batch, students=SMALL) -> dict[str, dict]:
    return {k: v for k, v in rows(batch["pool"]).items() if k in students}


def joined(cluster: Cluster, workers: int) -> None:
    from distributed import Client

    with Client(cluster.address, timeout=60) as client:
        client.wait_for_workers(workers, timeout=120)


def test_a_worker_killed_mid_job_has_its_job_finished_by_the_other(batch, remote):
    first, second = remote.worker(), remote.worker()
    joined(remote, 2)
    workspace = batch["root"] / "killed"
    run = grading(workspace, "--submissions", str(batch["small"]), "--scheduler", remote.address, "--jobs", "1", *FAST)
    # the first worker to start its sandbox (about 3 s of imports) is in the middle of its first job: killed there
    victim = wait_for(lambda: next((w for w in (first, second) if grading_children(w)), None), 180, "a job to start")
    time.sleep(1.0)
    children = grading_children(victim)
    victim.send_signal(signal.SIGKILL)
    victim.wait(timeout=30)
    stdout, stderr = run.communicate(timeout=600)
    assert run.returncode == 0, stderr[-3000:]
    assert rows(workspace) == pool_rows(batch), "every job completes, with the pool's grades"
    graded_by = {r["graded_by"] for r in results(workspace).values()}
    assert len(graded_by) == 1, f"after the kill, the other worker graded every job: {graded_by}"
    assert "failed" not in stderr
    wait_for(lambda: not [c for c in children if c.is_running() and c.status() != "zombie"], 30,
             "the killed worker's fork servers to end (bwrap --die-with-parent)")


def test_a_job_whose_workers_die_too_often_is_recorded_ungraded_with_the_reason(batch, tmp_path):
    """The scheduler's allowed-failures (2 in the README's recipe; 0 here, so that one death is too many): then the job
    is not tried again in this run, it is recorded as 0 with the reason, grade.py exits 1, and the next run grades it."""
    cluster = Cluster(tmp_path, allowed_failures=0)
    try:
        first, second = cluster.worker(), cluster.worker()
        joined(cluster, 2)
        workspace = tmp_path / "workspace"
        run = grading(workspace, "--submissions", str(batch["small"]), "--scheduler", cluster.address, "--jobs", "1", *FAST)
        victim = wait_for(lambda: next((w for w in (first, second) if grading_children(w)), None), 180, "a job to start")
        time.sleep(1.0)
        victim.send_signal(signal.SIGKILL)
        stdout, stderr = run.communicate(timeout=600)
    finally:
        cluster.close()
    assert run.returncode == 1, stderr[-3000:]
    # the job it was running, and the one the scheduler had queued on it too
    lost = {s: r for s, r in results(workspace).items() if r.get("failed")}
    assert 1 <= len(lost) <= 2, stderr[-3000:]
    for student, result in lost.items():
        assert "JobLost" in result["problem"] and "died" in result["problem"], result["problem"]
        assert float(rows(workspace)[student]["score"]) == 0
    assert "trying once more" not in stderr and "NOT all graded" in stderr
    others = {k: v for k, v in rows(workspace).items() if k not in lost}
    assert others == {k: v for k, v in pool_rows(batch).items() if k not in lost}
    # (that a rerun grades just what is missing or failed: the scheduler test below, and the safety suite)


def test_a_worker_with_another_course_version_refuses_and_never_grades(batch, remote, tmp_path):
    other = tmp_path / "other-course"
    shutil.copytree(REPO / "autograder", other / "autograder", ignore=shutil.ignore_patterns("__pycache__"))
    shutil.copytree(SOLUTIONS / BATCH, other / "solutions" / BATCH)
    notebook = next((other / "solutions" / BATCH).glob("*.ipynb"))
    notebook.write_text(notebook.read_text().replace("attention", "attentions", 1))  # a test changed since
    remote.worker(course=other)
    workspace = tmp_path / "workspace"
    joined(remote, 1)
    done = grade(workspace, "--submissions", str(batch["tiny"]), "--scheduler", remote.address, *FAST)
    assert done.returncode == 1, done.stderr[-2000:]
    assert "refuses to grade" in done.stderr and "start the worker from a checkout of the graded commit" in done.stderr
    assert not list((workspace / "autograder-results").rglob("result.json")), "the refusing worker graded nothing"
    # a worker of the graded version joins: the jobs go to it alone
    remote.worker()
    joined(remote, 2)
    done = grade(workspace, "--scheduler", remote.address, *FAST)
    assert done.returncode == 0, done.stderr[-3000:]
    assert "refuses to grade" in done.stderr
    assert rows(workspace) == pool_rows(batch, ["broken_json"])
    assert len({r["graded_by"] for r in results(workspace).values()}) == 1


def test_a_scheduler_gone_mid_batch_stops_cleanly_and_a_rerun_grades_only_the_rest(batch, remote):
    remote.worker()
    joined(remote, 1)
    workspace = batch["root"] / "scheduler-gone"
    run = grading(workspace, "--submissions", str(batch["small"]), "--scheduler", remote.address, "--jobs", "1", *FAST)
    done_dir = workspace / "autograder-results" / BATCH
    wait_for(lambda: list(done_dir.glob("*/result.json")), 300, "a first result")
    os.killpg(remote.scheduler.pid, signal.SIGKILL)
    stdout, stderr = run.communicate(timeout=180)
    assert run.returncode == 1, stderr[-3000:]
    assert "Run the same command again" in stderr and "Traceback" not in stderr
    kept = {p.parent.name: p.stat().st_mtime_ns for p in done_dir.glob("*/result.json")}
    assert 0 < len(kept) < len(SMALL)
    rerun = grade(workspace, "--jobs", "2", *FAST)
    assert rerun.returncode == 0, rerun.stderr[-3000:]
    assert f"{len(SMALL) - len(kept)} to grade" in rerun.stderr
    assert {p.parent.name: p.stat().st_mtime_ns for p in done_dir.glob("*/result.json") if p.parent.name in kept} == kept, \
        "what the cluster graded is not graded twice"
    assert rows(workspace) == pool_rows(batch)
