"""grade.py on a Dask distributed cluster (issue 30; autograder/dask_grading.py): the same grades as the local pool,
workers that die or refuse, a scheduler that goes away, and the safety suite's attacks run through the cluster.

Every submission is graded in chapter 7, with chapter 6 the chapter that grades fastest (benchmark.py here: a median
3.7 s of running per honest notebook in each; the safety suite grades chapter 7 too); the class is small and graded once by each path (module fixture `batch`).
The fault tests start a scheduler and workers of their own as separate processes (`dask scheduler`,
`dask worker --preload dask_grading`), as an instructor's cluster would run them.
"""

from __future__ import annotations

import csv
import io
import json
import os
import shutil
import signal
import subprocess
import sys
import tarfile
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
    write_export(root / "small", BATCH, only=SMALL)
    write_export(root / "tiny", BATCH, only=["broken_json"])
    before = tree_hash(*COURSE, canary, export)
    pool = grade(root / "pool", "--submissions", str(export), "--jobs", "2", *FAST)
    assert pool.returncode == 0, pool.stderr[-3000:]
    started = time.perf_counter()
    done = grade(root / "dask", "--submissions", str(export), "--cluster", "local:2", "--jobs", "1", *FAST)
    seconds = time.perf_counter() - started
    assert done.returncode == 0, done.stderr[-3000:]
    after = tree_hash(*COURSE, canary, export)
    return {"root": root, "export": export, "small": root / "small", "tiny": root / "tiny", "expected": expected, "pool": root / "pool",
            "dask": root / "dask",
            "stderr": done.stderr, "seconds": seconds,
            "changed": sorted(k for k in set(before) | set(after) if before.get(k) != after.get(k))}


def test_a_local_cluster_grades_a_class_exactly_as_the_local_pool(batch):
    ours, theirs = rows(batch["dask"]), rows(batch["pool"])
    assert set(ours) == set(CLASS)
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
