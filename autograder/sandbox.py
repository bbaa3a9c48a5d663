"""Where code runs while grading: per worker, two sandboxed fork servers and a fresh pair of runners per notebook.

- The STUDENT sandbox (bubblewrap) sees a read-only system (/usr), the Python that runs the
  course and the `seqlab` helpers, its own empty /tmp and /dev, and ONE writable folder, the
  scratch folder of the submission being graded (emptied and made anew for each submission).
  It does not see solutions/, the gradebook, the workspace, other submissions or the home
  folder, has no network (own network namespace) and its own PID namespace.
- The TRUSTED sandbox runs the course's test cells. It never runs a student's code, sees the
  same read-only files, and nothing writable but its own /tmp; it does not see the scratch folder.

Each sandbox holds a zygote (inkernel/zygote.py) that imported numpy, matplotlib, torch and
seqlab once; each notebook gets a forked runner on each side (~0.1 s instead of ~3 s). The
grader talks to the zygotes and the runners only over socket pairs it created and handed
down as inherited descriptors: no socket file, connection file, kernelspec, exit marker or
configuration of the grader's lies anywhere a sandbox can write, so nothing a submission
plants there is ever opened, followed or run by the grader or a later submission.

Without bubblewrap, `Sandbox(..., sandboxed=False)` runs the same zygotes with the same
rlimits but no isolation; grade.py refuses that unless the instructor passes --allow-unsandboxed.
"""

from __future__ import annotations

import dataclasses
import json
import os
import shutil
import socket
import subprocess
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
INKERNEL = HERE / "inkernel"
if str(INKERNEL) not in sys.path:
    sys.path.insert(0, str(INKERNEL))
from zygote import empty_folder  # noqa: E402 - the fork server's own clean-up, for the scratch folder here
ETC_FILES = ["ld.so.cache", "ld.so.conf", "ld.so.conf.d", "localtime", "passwd", "group", "nsswitch.conf",
             "fonts", "mime.types"]


@dataclasses.dataclass(frozen=True)
class Limits:
    """What one notebook may use. The defaults suit this course's grading mode (COURSE.md)."""

    cell_timeout: int = 60  # seconds of own time per cell (wall time less waiting for a CPU; inkernel/owntime.py)
    backstop: float = 3.0  # wall time beyond backstop × cell_timeout always stops a cell
    notebook_timeout: int = 600  # wall seconds for the whole notebook
    cpu_seconds: int = 600  # CPU seconds for the runner process, whole notebook (RLIMIT_CPU)
    memory_bytes: int = 4 * 2**30  # address space the runner may add to the preloaded libraries' (RLIMIT_AS)
    file_bytes: int = 256 * 2**20  # largest file the runner may write (RLIMIT_FSIZE)
    output_bytes: int = 2 * 2**20  # outputs kept per notebook; the rest is dropped and reported
    pids: int = 256  # processes and threads in a whole sandbox (cgroup)
    cpus: float = 1.0  # CPU quota of a whole sandbox, in cores (cgroup)
    scratch_bytes: int = 256 * 2**20  # the submission's working folder (a tmpfs)
    tmp_bytes: int = 256 * 2**20  # /tmp (a tmpfs)
    shm_bytes: int = 64 * 2**20  # /dev/shm (a tmpfs)
    # matplotlib figures drawn as PNGs, as nbgrader's kernels draw them. No test reads a figure, and drawing and laying
    # them out was 0.6-2.7 s of a notebook's 3-7 s of grading (autograder/README.md, Speed): off, a figure's output is
    # the line "[a figure with 2 axes: not drawn while grading]"; grade.py --figures draws them.
    figures: bool = False

    def for_kernel(self) -> dict:
        return {"memory_bytes": self.memory_bytes, "cpu_seconds": self.cpu_seconds, "file_bytes": self.file_bytes}


def unsandboxed_refusal(program: str) -> str:
    """What grade.py, job.py and serve.py say when they refuse to run students' code without bubblewrap."""
    return (f"{program}: bubblewrap (bwrap) is missing or cannot create namespaces here, so submitted code cannot be "
            "isolated.\n  Install it (apt-get install bubblewrap), grade inside Docker (see autograder/README.md), "
            "or pass --allow-unsandboxed to accept running students' code with your permissions.")


def bubblewrap() -> str | None:
    """The path of a working `bwrap`, or None (missing, or user namespaces disabled)."""
    path = shutil.which("bwrap")
    if not path:
        return None
    try:
        done = subprocess.run([path, "--unshare-all", "--cap-drop", "ALL", "--ro-bind", "/", "/", "--dev", "/dev", "--proc", "/proc",
                               "true"], capture_output=True, timeout=20)
    except (OSError, subprocess.TimeoutExpired):
        return None
    return path if done.returncode == 0 else None


def seqlab_root() -> Path:
    import seqlab

    return Path(seqlab.__file__).resolve().parent.parent


SCRATCH = "/home/student"  # inside the sandbox: a size-limited tmpfs, the submission's working folder


def runner_environment(cwd: str) -> dict[str, str]:
    return {
        "NBGRADER_EXECUTION": "autograde",
        "HOME": cwd,
        "TMPDIR": "/tmp",
        "IPYTHONDIR": "/tmp/.ipython",  # /tmp is emptied after every runner
        "MPLCONFIGDIR": "/tmp/.matplotlib",
        "PYDEVD_DISABLE_FILE_VALIDATION": "1",
    }


def _status(pid: int) -> dict[str, list[str]]:
    try:
        with open(f"/proc/{pid}/status") as f:
            return {key: value.split() for key, _, value in (line.partition(":") for line in f)}
    except OSError:
        return {}


def host_pid(root: int, ns_pid: int) -> int | None:
    """The pid, as this machine sees it, of the process that is ``ns_pid`` in its own PID namespace and descends
    from ``root`` (a fork server's bwrap, or the fork server itself when unsandboxed); None if there is none."""
    for entry in os.scandir("/proc"):
        if not entry.name.isdigit():
            continue
        pid = int(entry.name)
        if _status(pid).get("NSpid", [])[-1:] != [str(ns_pid)]:
            continue
        ancestor = pid
        for _ in range(16):  # bwrap, its init, the fork server, the runner
            ancestor = int((_status(ancestor).get("PPid") or ["0"])[0])
            if ancestor == root:
                return pid
            if ancestor <= 1:
                break
    return None


class Zygote:
    """One sandboxed fork server: start(), then fork() a runner per notebook, close() at the end."""

    def __init__(self, side: str, scratch: Path | None, limits: Limits, sandboxed: bool, python: str | None = None,
                 cgroup=None):
        self.side = side  # "s" (student: sees the scratch folder) or "t" (trusted)
        self.scratch = scratch
        self.limits = limits
        self.sandboxed = sandboxed
        self.python = python or sys.executable
        self.process: subprocess.Popen | None = None
        self.control: socket.socket | None = None
        self.preload_seconds: dict[str, float] = {}
        self.threads: int | None = None
        self.start_seconds = 0.0
        self.bwrap = bubblewrap() if sandboxed else None
        if sandboxed and not self.bwrap:
            raise RuntimeError("bubblewrap (bwrap) is not available")
        self.cgroup = cgroup
        self.child: int | None = None
        self.last_exit: dict | None = None

    @property
    def cwd(self) -> str:
        if not self.sandboxed:
            return str(self.scratch) if self.scratch is not None else "/tmp"
        return SCRATCH if self.scratch is not None else "/tmp"

    def command(self, fd: int) -> list[str]:
        shared = ["/tmp", "/dev/shm"] + ([SCRATCH] if self.scratch is not None else []) if self.sandboxed else []
        prefixes = {Path(sys.base_prefix).resolve(), Path(sys.prefix), Path(sys.prefix).resolve(), seqlab_root(), INKERNEL}
        # binds inside a shared folder (a course or venv under /tmp) stay when the fork server empties it
        keep = sorted(str(p) for p in prefixes if any(Path(folder) in p.parents for folder in shared))
        inner = [self.python, str(INKERNEL / "zygote.py"), "--control", str(fd), "--path", str(seqlab_root()),
                 "--clean", os.pathsep.join(shared), "--keep", os.pathsep.join(keep),
                 "--kill-all", "1" if self.sandboxed else "0"]
        if not self.sandboxed:
            return inner
        # no capabilities inside: as root, bwrap keeps them all (in its user namespace, where uid 0 is the host's root),
        # and with CAP_SYS_ADMIN a submission could remount the read-only binds (the venv, the course) writable
        args = [self.bwrap, "--unshare-all", "--cap-drop", "ALL", "--die-with-parent", "--new-session", "--ro-bind", "/usr", "/usr"]
        for name in ("bin", "lib", "lib64", "sbin", "lib32"):
            if Path("/" + name).is_symlink():
                args += ["--symlink", os.readlink("/" + name), "/" + name]
            elif Path("/" + name).exists():
                args += ["--ro-bind", "/" + name, "/" + name]
        for name in ETC_FILES:
            if Path("/etc", name).exists():
                args += ["--ro-bind", f"/etc/{name}", f"/etc/{name}"]
        # The empty /tmp first: the course (a clone, a venv) or the scratch folder may lie under /tmp,
        # and a later mount would hide them.
        limits = self.limits
        args += ["--proc", "/proc", "--dev", "/dev", "--size", str(limits.tmp_bytes), "--tmpfs", "/tmp",
                 "--size", str(limits.shm_bytes), "--tmpfs", "/dev/shm"]
        for prefix in sorted(prefixes, key=lambda p: len(p.parts)):
            args += ["--ro-bind", str(prefix), str(prefix)]
        if self.scratch is not None:  # the submission's folder: a tmpfs of its own, never a folder of the host's
            args += ["--size", str(limits.scratch_bytes), "--tmpfs", SCRATCH, "--chdir", SCRATCH]
        else:
            args += ["--chdir", "/tmp"]
        args += ["--remount-ro", "/",  # nothing outside /tmp and the scratch folder is writable, even in memory
                 "--unsetenv", "JPY_PARENT_PID"]
        return args + inner

    def environment(self) -> dict[str, str]:
        cwd = self.cwd
        return {
            "PATH": os.pathsep.join([str(Path(self.python).parent), "/usr/local/bin", "/usr/bin", "/bin"]),
            "LANG": "C.UTF-8",
            "PYTHONHASHSEED": "0",
            "PYTHONDONTWRITEBYTECODE": "1",
            "OMP_NUM_THREADS": "1",  # one core per runner: the pool runs one notebook per core
            "MKL_NUM_THREADS": "1",
            "OPENBLAS_NUM_THREADS": "1",
            "MPLBACKEND": "module://matplotlib_inline.backend_inline",
            **runner_environment(cwd),
        }

    def start(self, timeout: float = 120) -> None:
        start = time.perf_counter()
        ours, theirs = socket.socketpair(socket.AF_UNIX, socket.SOCK_SEQPACKET)
        cwd = self.scratch if self.scratch is not None and not self.sandboxed else None
        self.process = subprocess.Popen(self.command(theirs.fileno()), env=self.environment(), stdin=subprocess.DEVNULL,
                                        stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, cwd=cwd,
                                        pass_fds=(theirs.fileno(),),
                                        preexec_fn=self.cgroup.enter if self.cgroup is not None else None)
        theirs.close()
        self.control = ours
        event = self.receive(timeout)
        if not event or event.get("event") != "ready":
            error = b""
            if self.process.poll() is not None and self.process.stderr:
                error = self.process.stderr.read()[-2000:]
            self.close()
            raise RuntimeError(f"the grading sandbox did not start: {error.decode(errors='replace')}")
        self.preload_seconds = event.get("preload_seconds", {})
        self.threads = event.get("threads")  # 1: nothing but the fork server's own thread is alive at fork()
        self.start_seconds = time.perf_counter() - start

    def receive(self, timeout: float) -> dict | None:
        assert self.control is not None
        self.control.settimeout(timeout)
        try:
            data = self.control.recv(1 << 20)
        except (OSError, socket.timeout):
            return None
        finally:
            self.control.settimeout(None)
        if not data:
            return None
        try:
            message = json.loads(data)
        except (ValueError, RecursionError):  # the fork server never runs submitted code; still, never crash on it
            return None
        return message if isinstance(message, dict) else None

    def alive(self) -> bool:
        return self.process is not None and self.process.poll() is None and self.control is not None

    def healthy(self) -> bool:
        """The zygote answers a ping: a child did not stop or kill it."""
        if not self.alive():
            return False
        try:
            self.control.send(json.dumps({"op": "ping"}).encode())
        except OSError:
            return False
        event = self.receive(5)
        return bool(event and event.get("event") == "pong")

    def ensure_started(self) -> None:
        if not self.alive():
            self.close()
            self.start()

    def fork(self, config: dict, control: socket.socket, peer: socket.socket, watch: int | None = None,
             group_cpu: int | None = None, environment: dict[str, str] | None = None) -> int:
        """Start a runner on these two sockets (their other ends stay with the caller); ``watch``, an open
        schedstat of the other side's runner, and ``group_cpu``, the student sandbox's CPU usage
        (``Cgroup.open_cpu_usage``; its unit in ``config["group_cpu_unit"]``), are handed down to the runner as well;
        ``environment`` is added to this runner's environment only (the test kernel's hidden-test seed)."""
        self.ensure_started()
        cwd = self.cwd
        extra = [(role, fd) for role, fd in (("peer_schedstat", watch), ("group_cpu", group_cpu)) if fd is not None]
        request = {"op": "fork", "cwd": cwd, "env": {**runner_environment(cwd), **(environment or {})},
                   "limits": self.limits.for_kernel(),
                   "config": config, "extra_fds": [role for role, _ in extra]}
        fds = [control.fileno(), peer.fileno()] + [fd for _, fd in extra]
        socket.send_fds(self.control, [json.dumps(request).encode()], fds)
        event = self.receive(30)
        if not event or event.get("event") != "started":
            self.close()
            raise RuntimeError("the sandbox did not start a runner")
        self.child, self.last_exit = int(event["pid"]), None
        return self.child

    def open_schedstat(self) -> int | None:
        """An open, read-only /proc/<pid>/schedstat of the runner just forked (its main thread), as this machine
        sees it: the test kernel reads the student's run-queue wait from it. None where it cannot be found."""
        if self.process is None or self.child is None:
            return None
        pid = host_pid(self.process.pid, self.child)
        if pid is None:
            return None
        try:
            return os.open(f"/proc/{pid}/schedstat", os.O_RDONLY | os.O_CLOEXEC)
        except OSError:
            return None

    def kill(self) -> None:
        if self.alive() and self.child is not None:
            try:
                self.control.send(json.dumps({"op": "kill"}).encode())
            except OSError:
                pass

    def wait_exit(self, timeout: float = 10) -> dict | None:
        """How the last runner ended ({"exit", "signal"}), or None if the zygote did not say."""
        if self.child is None:
            return self.last_exit
        if not self.alive():
            return None
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            event = self.receive(max(0.05, deadline - time.monotonic()))
            if event is None:
                break
            if event.get("event") == "exit":
                self.child, self.last_exit = None, event
                return event
        self.close()  # a zygote that does not report its child's end is not trusted with the next one
        return None

    def close(self) -> None:
        if self.control is not None:
            self.control.close()
            self.control = None
        if self.process is not None:
            if self.process.poll() is None:
                self.process.kill()
            self.process.wait()
            if self.process.stderr:
                self.process.stderr.close()
            self.process = None


TESTS_MEMORY = 2**30  # the test kernel's memory beyond its fork server's: the tests' own data and what they decode


class Sandbox:
    """One worker: a student zygote and a trusted zygote, and the scratch folder of the current submission."""

    def __init__(self, root: Path, limits: Limits = Limits(), sandboxed: bool = True, python: str | None = None,
                 use_cgroups: bool = True):
        from cgroups import Cgroup

        self.root = Path(root)
        self.limits = limits
        self.sandboxed = sandboxed
        self.root.mkdir(parents=True, exist_ok=True)
        self.reset_scratch()
        # One control group for the student's side (its fork server, runner and every process they start) and one
        # for the test kernel's: the submission's limits are the student's alone, never shared with the tests'.
        name = f"seqlab-{os.getpid()}-{id(self):x}"
        self.cgroup, self.cgroup_problem = Cgroup.create(name) if use_cgroups else (None, "cgroups were switched off")
        self.trusted_cgroup = Cgroup.create(name + "-tests")[0] if self.cgroup is not None else None
        self.memory_limit = 0
        self.student = Zygote("s", self.scratch, limits, sandboxed, python, self.cgroup)
        self.trusted = Zygote("t", None, limits, sandboxed, python, self.trusted_cgroup)

    @property
    def scratch(self) -> Path:
        return self.root / "scratch"

    def reset_scratch(self) -> Path:
        """A fresh, empty scratch folder (unsandboxed runs; a sandbox's scratch is its own tmpfs, emptied by
        the fork server); what a submission left is removed without following links."""
        # Emptied entry by entry: shutil.rmtree works on descriptors and never follows a planted symlink.
        self.scratch.mkdir(mode=0o700, exist_ok=True)
        if empty_folder(str(self.scratch)):  # what cannot go (a tree too deep to remove) is moved out of the way
            self.scratch.rename(self.root / f"left-{time.monotonic_ns()}")
            self.scratch.mkdir(mode=0o700)
        return self.scratch

    def start(self) -> None:
        self.student.start()
        self.trusted.start()
        self.set_limits()

    def set_limits(self) -> None:
        """The student's side: what its fork server holds (the preloaded libraries) plus the submission's budget; the
        test kernel's side: what its fork server holds plus TESTS_MEMORY. Processes and CPU: each side its own."""
        if self.cgroup is not None and not self.memory_limit:
            self.memory_limit = self.cgroup.memory_used() + self.limits.memory_bytes
            self.cgroup.limit(self.memory_limit, self.limits.pids, self.limits.cpus)
            if self.trusted_cgroup is not None:
                self.trusted_cgroup.limit(self.trusted_cgroup.memory_used() + TESTS_MEMORY, self.limits.pids,
                                          self.limits.cpus)

    def ensure_started(self) -> None:
        self.student.ensure_started()
        self.trusted.ensure_started()
        self.set_limits()

    def after_submission(self) -> None:
        """Between submissions: a zygote that a child stopped or damaged is replaced."""
        for zygote in (self.student, self.trusted):
            if not zygote.healthy():
                zygote.close()
        self.reset_scratch()

    def close(self) -> None:
        self.student.close()
        self.trusted.close()
        for group in (self.cgroup, self.trusted_cgroup):
            if group is not None:
                group.remove()
        self.cgroup = self.trusted_cgroup = None

    @property
    def preload_seconds(self) -> dict:
        return self.student.preload_seconds
