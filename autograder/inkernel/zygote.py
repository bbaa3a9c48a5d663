"""The fork server that runs INSIDE one worker's sandbox (see sandbox.py).

It imports the heavy libraries once (IPython, ipykernel, numpy, matplotlib, torch, seqlab),
then, for each notebook to grade, forks a child that becomes a fresh IPython kernel. The
zygote never runs submitted code, so no state passes from one submission to the next: each
child starts from the same pristine copy of memory, and after it ends the zygote kills every
process left in the sandbox and empties the shared temporary folders.

Protocol (one JSON line each way, over the unix socket given with --socket): the proxy
(kernel_proxy.py, on the grader's side) sends {"connection_file", "cwd", "env", "limits"};
the zygote answers {"pid"} when the child runs, then {"exit": status} when it has ended.
If the proxy hangs up first, the child is killed.
"""

from __future__ import annotations

import json
import os
import resource
import select
import shutil
import signal
import socket
import sys
import time

PRELOAD = ("ipykernel.ipkernel", "ipykernel.zmqshell", "debugpy", "pdb", "pydoc", "matplotlib_inline.backend_inline",
           "numpy", "matplotlib", "matplotlib.pyplot", "torch", "seqlab", "seqlab.check", "seqlab.grading")


def preload() -> dict[str, float]:
    seconds = {}
    import IPython  # noqa: F401
    import ipykernel.kernelapp  # noqa: F401
    for name in PRELOAD:
        start = time.perf_counter()
        try:
            __import__(name)
        except Exception:  # noqa: BLE001 - a library the course lacks is simply not preloaded
            continue
        seconds[name] = round(time.perf_counter() - start, 3)
    # Read-only course data, parsed once per worker: every forked kernel finds it in seqlab's caches.
    for module, loader in (("seqlab.data", "_brown_table"), ("seqlab.names", "_table")):
        start = time.perf_counter()
        try:
            getattr(__import__(module, fromlist=[loader]), loader)()
        except Exception:  # noqa: BLE001 - a dataset the course lacks is simply not preloaded
            continue
        seconds[f"{module}.{loader}"] = round(time.perf_counter() - start, 3)
    return seconds


def apply_limits(limits: dict) -> None:
    """rlimits of the kernel: memory, CPU seconds for the whole notebook, file size, processes."""
    if limits.get("memory_bytes"):
        # on top of what the preloaded libraries already map (torch alone maps ~1-2 GB of address space)
        m = int(limits["memory_bytes"]) + _address_space()
        resource.setrlimit(resource.RLIMIT_AS, (m, m))
    if limits.get("cpu_seconds"):
        c = int(limits["cpu_seconds"])
        resource.setrlimit(resource.RLIMIT_CPU, (c, c + 5))
    if limits.get("file_bytes"):
        f = int(limits["file_bytes"])
        resource.setrlimit(resource.RLIMIT_FSIZE, (f, f))
    if limits.get("processes"):
        p = int(limits["processes"])
        resource.setrlimit(resource.RLIMIT_NPROC, (p, p))
    resource.setrlimit(resource.RLIMIT_CORE, (0, 0))


def _address_space() -> int:
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith("VmSize:"):
                return int(line.split()[1]) * 1024
    return 0


def run_kernel(request: dict) -> None:
    """In the forked child: become an IPython kernel on the given connection file."""
    for sig in (signal.SIGINT, signal.SIGTERM, signal.SIGCHLD, signal.SIGPIPE):
        signal.signal(sig, signal.SIG_DFL)
    os.setsid()
    os.environ.pop("JPY_PARENT_PID", None)
    os.environ.update(request.get("env", {}))
    os.chdir(request["cwd"])
    apply_limits(request.get("limits", {}))
    devnull = os.open(os.devnull, os.O_RDWR)
    for fd in (0, 1, 2):
        os.dup2(devnull, fd)
    from ipykernel.kernelapp import IPKernelApp

    app = IPKernelApp.instance()
    app.initialize(["-f", request["connection_file"], "--HistoryManager.enabled=False", "--quiet"])
    app.start()
    os._exit(0)


def clean_shared(child: int, folders: list[str], kill_all: bool, keep: str) -> None:
    """Kill every process the kernel left behind; empty the shared temporary folders."""
    try:
        os.killpg(child, signal.SIGKILL)  # the kernel's session (it called setsid)
    except (ProcessLookupError, PermissionError):
        pass
    if kill_all and os.getpid() <= 2:  # pid 2 under bwrap's init: only in our own PID namespace
        try:
            os.kill(-1, signal.SIGKILL)  # everything but us and init: daemons that left the session too
        except ProcessLookupError:
            pass
    while True:
        try:
            if os.waitpid(-1, os.WNOHANG) == (0, 0):
                break
        except ChildProcessError:
            break
    for folder in folders:
        for name in os.listdir(folder) if os.path.isdir(folder) else []:
            path = os.path.join(folder, name)
            if keep == path or keep.startswith(path + os.sep):  # the bound worker folder lies below
                continue
            try:
                shutil.rmtree(path) if os.path.isdir(path) and not os.path.islink(path) else os.unlink(path)
            except OSError:
                pass


def serve(path: str, shared: list[str], kill_all: bool, keep: str) -> None:
    server = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    server.bind(path)
    server.listen(1)
    while True:
        conn, _ = server.accept()
        stream = conn.makefile("rwb", buffering=0)
        line = stream.readline()
        if not line:
            conn.close()
            continue
        request = json.loads(line)
        pid = os.fork()
        if pid == 0:
            server.close()
            conn.close()
            try:
                run_kernel(request)
            finally:
                os._exit(70)
        stream.write((json.dumps({"pid": pid}) + "\n").encode())
        status = None
        while status is None:
            done, code = os.waitpid(pid, os.WNOHANG)
            if done:
                status = code
                break
            readable, _, _ = select.select([conn], [], [], 0.05)
            if readable and not conn.recv(1, socket.MSG_PEEK):  # the proxy hung up: end the kernel
                os.kill(pid, signal.SIGKILL)
                _, status = os.waitpid(pid, 0)
        clean_shared(pid, shared, kill_all, keep)
        if os.WIFSIGNALED(status):
            reply = {"exit": 128 + os.WTERMSIG(status), "signal": os.WTERMSIG(status)}
        else:
            reply = {"exit": os.WEXITSTATUS(status), "signal": None}
        try:
            stream.write((json.dumps(reply) + "\n").encode())
        except OSError:
            pass
        conn.close()


def main() -> None:
    args = dict(zip(sys.argv[1::2], sys.argv[2::2]))
    for extra in args.get("--path", "").split(os.pathsep):
        if extra:
            sys.path.insert(0, extra)
    os.environ.pop("JPY_PARENT_PID", None)
    seconds = preload()
    try:  # nobody in the sandbox may ptrace the zygote or read its memory
        import ctypes
        ctypes.CDLL(None).prctl(4, 0, 0, 0, 0)  # PR_SET_DUMPABLE = 4
    except Exception:  # noqa: BLE001
        pass
    with open(args["--ready"], "w") as f:
        json.dump({"preload_seconds": seconds, "pid": os.getpid()}, f)
    serve(args["--socket"], [p for p in args.get("--clean", "").split(os.pathsep) if p], args.get("--kill-all") == "1",
          args.get("--keep", "/nonexistent"))


if __name__ == "__main__":
    main()
