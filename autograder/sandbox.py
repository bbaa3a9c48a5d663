"""Where submitted code runs: one sandboxed fork server per worker, one fresh kernel per notebook.

Isolation (Linux, bubblewrap): the sandbox sees a read-only system (/usr), the Python that
runs the course and the `seqlab` helpers, its own empty /tmp and /dev, and ONE writable
folder, the worker's scratch folder, which holds only the submission being graded. It does
not see solutions/, the gradebook, the workspace, other submissions or the home folder. It
has no network (its own network namespace: the kernel talks to the grader over ZMQ's `ipc`
transport, unix sockets in a bound folder) and its own PID namespace. Each kernel gets
rlimits: address space (memory), CPU seconds for the whole notebook, the size of any file it
writes. Each cell also has a wall-clock timeout (executor.py).

Speed: the zygote (inkernel/zygote.py) imports numpy, matplotlib, torch and seqlab once;
each notebook then gets a forked copy of it, a kernel ready in ~0.1 s instead of ~3 s. The
zygote never runs submitted code, so each kernel starts from the same clean state; after a
kernel ends, the zygote kills whatever it left running and empties /tmp and /dev/shm, and
the grader empties the scratch folder.

Without bubblewrap, `Sandbox(..., sandboxed=False)` runs the same zygote with the same
rlimits but no filesystem, network or PID isolation; grade.py refuses that unless the
instructor passes --allow-unsandboxed. Docker is the documented alternative (README).
"""

from __future__ import annotations

import dataclasses
import json
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

from jupyter_client.kernelspec import KernelSpecManager
from jupyter_client.manager import AsyncKernelManager

HERE = Path(__file__).resolve().parent
INKERNEL = HERE / "inkernel"
PROXY = HERE / "kernel_proxy.py"
ETC_FILES = ["ld.so.cache", "ld.so.conf", "ld.so.conf.d", "localtime", "passwd", "group", "nsswitch.conf",
             "fonts", "mime.types"]


@dataclasses.dataclass(frozen=True)
class Limits:
    """What one notebook may use. The defaults suit this course's grading mode (COURSE.md)."""

    cell_timeout: int = 60  # wall seconds per cell, as nbgrader_config.py
    notebook_timeout: int = 600  # wall seconds for the whole notebook
    cpu_seconds: int = 600  # CPU seconds for the kernel process, whole notebook (RLIMIT_CPU)
    memory_bytes: int = 4 * 2**30  # address space the kernel may add to the preloaded libraries' (RLIMIT_AS)
    file_bytes: int = 256 * 2**20  # largest file the kernel may write (RLIMIT_FSIZE)
    output_bytes: int = 2 * 2**20  # outputs kept per notebook; the rest is dropped and reported

    def for_kernel(self) -> dict:
        return {"memory_bytes": self.memory_bytes, "cpu_seconds": self.cpu_seconds, "file_bytes": self.file_bytes}


def bubblewrap() -> str | None:
    """The path of a working `bwrap`, or None (missing, or user namespaces disabled)."""
    path = shutil.which("bwrap")
    if not path:
        return None
    try:
        done = subprocess.run([path, "--unshare-all", "--ro-bind", "/", "/", "--dev", "/dev", "--proc", "/proc",
                               "true"], capture_output=True, timeout=20)
    except (OSError, subprocess.TimeoutExpired):
        return None
    return path if done.returncode == 0 else None


def seqlab_root() -> Path:
    import seqlab

    return Path(seqlab.__file__).resolve().parent.parent


def kernel_environment(scratch: Path, state: Path) -> dict[str, str]:
    return {
        "NBGRADER_EXECUTION": "autograde",
        "HOME": str(scratch),
        "TMPDIR": "/tmp",
        "IPYTHONDIR": str(state / "ipython"),
        "MPLCONFIGDIR": str(state / "mpl"),
        "PYDEVD_DISABLE_FILE_VALIDATION": "1",
    }


class Sandbox:
    """One worker's sandbox: start() it, then kernel_manager() for each notebook, close() at the end."""

    def __init__(self, root: Path, limits: Limits = Limits(), sandboxed: bool = True, python: str | None = None):
        self.root = Path(root)
        self.limits = limits
        self.sandboxed = sandboxed
        self.python = python or sys.executable
        self.process: subprocess.Popen | None = None
        self.preload_seconds: dict[str, float] = {}
        self.start_seconds = 0.0
        self.kernels = 0
        self.bwrap = bubblewrap() if sandboxed else None
        if sandboxed and not self.bwrap:
            raise RuntimeError("bubblewrap (bwrap) is not available")

    # -- folders ----------------------------------------------------------------------------------
    @property
    def scratch(self) -> Path:
        return self.root / "scratch"

    @property
    def state(self) -> Path:
        return self.root / "state"

    @property
    def socket(self) -> Path:
        return self.root / "ctl" / "zygote.sock"

    def reset_scratch(self) -> Path:
        shutil.rmtree(self.scratch, ignore_errors=True)
        self.scratch.mkdir(parents=True)
        return self.scratch

    # -- the zygote -------------------------------------------------------------------------------
    def command(self) -> list[str]:
        shared = ["/tmp", "/dev/shm"] if self.sandboxed else []
        inner = [self.python, str(INKERNEL / "zygote.py"), "--socket", str(self.socket),
                 "--ready", str(self.root / "ctl" / "ready.json"), "--path", str(seqlab_root()),
                 "--clean", os.pathsep.join(shared), "--kill-all", "1" if self.sandboxed else "0", "--keep", str(self.root)]
        if not self.sandboxed:
            return inner
        prefixes = {Path(sys.base_prefix).resolve(), Path(sys.prefix), Path(sys.prefix).resolve(), seqlab_root(), INKERNEL}
        args = [self.bwrap, "--unshare-all", "--die-with-parent", "--new-session",
                "--ro-bind", "/usr", "/usr"]
        for name in ("bin", "lib", "lib64", "sbin", "lib32"):
            if Path("/" + name).is_symlink():
                args += ["--symlink", os.readlink("/" + name), "/" + name]
            elif Path("/" + name).exists():
                args += ["--ro-bind", "/" + name, "/" + name]
        for name in ETC_FILES:
            if Path("/etc", name).exists():
                args += ["--ro-bind", f"/etc/{name}", f"/etc/{name}"]
        # The empty /tmp first: the course (a clone, a venv) or the worker folder may lie under /tmp,
        # and a later mount would hide them.
        args += ["--proc", "/proc", "--dev", "/dev", "--tmpfs", "/tmp"]
        for prefix in sorted(prefixes, key=lambda p: len(p.parts)):
            args += ["--ro-bind", str(prefix), str(prefix)]
        args += ["--bind", str(self.root), str(self.root), "--chdir", str(self.scratch),
                 "--remount-ro", "/",  # nothing outside /tmp and the worker folder is writable, even in memory
                 "--unsetenv", "JPY_PARENT_PID"]
        return args + inner

    def environment(self) -> dict[str, str]:
        env = {
            "PATH": os.pathsep.join([str(Path(self.python).parent), "/usr/local/bin", "/usr/bin", "/bin"]),
            "LANG": "C.UTF-8",
            "PYTHONHASHSEED": "0",
            "PYTHONDONTWRITEBYTECODE": "1",
            "OMP_NUM_THREADS": "1",  # one core per kernel: the pool runs one kernel per core
            "MKL_NUM_THREADS": "1",
            "OPENBLAS_NUM_THREADS": "1",
            "MPLBACKEND": "module://matplotlib_inline.backend_inline",
            **kernel_environment(self.scratch, self.state),
        }
        return env

    def start(self, timeout: float = 120) -> None:
        start = time.perf_counter()
        for folder in ("ctl", "ipc", "state/ipython", "state/mpl"):
            (self.root / folder).mkdir(parents=True, exist_ok=True)
        self.reset_scratch()
        ready = self.root / "ctl" / "ready.json"
        for stale in (ready, self.socket):
            stale.unlink(missing_ok=True)
        log = open(self.root / "ctl" / "zygote.log", "ab")
        self.process = subprocess.Popen(self.command(), env=self.environment(), stdin=subprocess.DEVNULL,
                                        stdout=log, stderr=log, cwd=self.scratch)
        log.close()
        while not (ready.exists() and self.socket.exists()):
            if self.process.poll() is not None:
                raise RuntimeError(f"the grading sandbox did not start: {(self.root / 'ctl' / 'zygote.log').read_text()[-2000:]}")
            if time.perf_counter() - start > timeout:
                raise RuntimeError("the grading sandbox did not start in time")
            time.sleep(0.02)
        time.sleep(0.01)
        self.preload_seconds = json.loads(ready.read_text())["preload_seconds"]
        self.start_seconds = time.perf_counter() - start

    def alive(self) -> bool:
        return self.process is not None and self.process.poll() is None

    def ensure_started(self) -> None:
        if not self.alive():
            self.close()
            self.start()

    def close(self) -> None:
        if self.process is not None:
            if self.process.poll() is None:
                self.process.kill()
            self.process.wait()
            self.process = None

    # -- kernels ----------------------------------------------------------------------------------
    def kernel_manager(self) -> AsyncKernelManager:
        """A jupyter_client kernel manager whose kernel is a fresh fork of the zygote."""
        self.ensure_started()
        self.kernels += 1
        specs = self.root / "kernels" / "seqlab-grading"
        specs.mkdir(parents=True, exist_ok=True)
        request = {"env": kernel_environment(self.scratch, self.state), "limits": self.limits.for_kernel()}
        (specs / "kernel.json").write_text(json.dumps({
            "argv": [sys.executable, str(PROXY), str(self.socket), "{connection_file}", str(self.scratch),
                     json.dumps(request)],
            "display_name": "seqlab grading sandbox", "language": "python", "interrupt_mode": "message",
        }))
        ipc = self.root / "ipc"
        for old in ipc.iterdir():
            old.unlink(missing_ok=True)
        km = AsyncKernelManager(
            kernel_name="seqlab-grading", transport="ipc", ip=str(ipc / f"k{self.kernels}"),
            kernel_spec_manager=KernelSpecManager(kernel_dirs=[str(self.root / "kernels")], ensure_native_kernel=False),
            connection_file=str(ipc / f"k{self.kernels}.json"),
        )
        return km

    def exit_status(self, km: AsyncKernelManager) -> dict | None:
        """How the last kernel ended (exit code, signal), as the proxy recorded it."""
        path = Path(km.connection_file + ".exit")
        try:
            return json.loads(path.read_text())
        except (OSError, ValueError):
            return None
