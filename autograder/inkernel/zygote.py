"""The fork server that runs INSIDE a sandbox (see sandbox.py): one per worker and side.

It imports the heavy libraries once (IPython, numpy, matplotlib, torch, seqlab), then, for
each notebook, forks a child that becomes a runner (runner.py). The zygote never runs
submitted code; every child starts from the same pristine memory, and after it ends the
zygote kills every process left in the sandbox and empties the shared temporary folders.

It talks to the grader only over an inherited SOCK_SEQPACKET socket (--control FD): the
grader sends {"op": "fork", ...} with two descriptors attached (the runner's control and peer
sockets) and gets {"event": "started", "pid"}, later {"event": "exit", "exit", "signal"};
{"op": "kill"} ends the running child, {"op": "ping"} is answered with {"event": "pong"}.
There is no socket file, no ready file and no folder of the zygote's that a child could reach;
the zygote is not dumpable, so a child cannot ptrace it or read its memory.
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
from pathlib import Path

PRELOAD = ("IPython.core.interactiveshell", "IPython.core.displayhook", "IPython.core.displaypub", "comm",
           "matplotlib_inline.backend_inline", "numpy", "matplotlib", "matplotlib.pyplot", "torch", "seqlab",
           "seqlab.check", "seqlab.grading", "pdb", "pydoc")


def preload() -> dict[str, float]:
    seconds = {}
    for name in PRELOAD:
        start = time.perf_counter()
        try:
            __import__(name)
        except Exception:  # noqa: BLE001 - a library the course lacks is simply not preloaded
            continue
        seconds[name] = round(time.perf_counter() - start, 3)
    # Read-only course data, parsed once per worker: every forked runner finds it in seqlab's caches.
    for module, loader in (("seqlab.data", "_brown_table"), ("seqlab.data", "_brown_lower_table"),
                           ("seqlab.names", "_table"), ("seqlab.dates", "_table")):
        start = time.perf_counter()
        try:
            getattr(__import__(module, fromlist=[loader]), loader)()
        except Exception:  # noqa: BLE001 - a dataset the course lacks is simply not preloaded
            continue
        seconds[f"{module}.{loader}"] = round(time.perf_counter() - start, 3)
    start = time.perf_counter()
    if warm_torch():
        seconds["warm_torch"] = round(time.perf_counter() - start, 3)
    return seconds


def warm_torch() -> bool:
    """Run once what torch sets up lazily the first time a model trains, so no runner pays for it again.

    A forked runner's first optimizer step, recurrent layer and backward pass cost about 1.5 s of one-time set-up
    (torch imports its compiler stack for the optimizers, fills dispatch caches); every notebook that trains paid it.
    The work here is the course's own kind (embeddings, RNN/GRU/LSTM packed and not, attention, LayerNorm, the
    losses, Adam and SGD); it leaves no trace a runner can see: the global random states of torch, NumPy and
    `random` are put back, and torch stays on one thread (a thread alive at fork() would not exist in the runner).
    """
    try:
        import random

        import numpy as np
        import torch
        import torch.nn.functional as F
        from torch import nn
    except Exception:  # noqa: BLE001 - without torch there is nothing to warm
        return False
    if torch.get_num_threads() != 1:  # (the sandbox sets OMP_NUM_THREADS=1) more would start a pool of threads
        return False
    states = torch.get_rng_state(), np.random.get_state(), random.getstate()
    grad_enabled = torch.is_grad_enabled()
    try:
        torch.set_grad_enabled(True)
        embed, linear, norm = nn.Embedding(11, 8), nn.Linear(16, 11), nn.LayerNorm(16)
        cells = [nn.RNN(8, 16, batch_first=True), nn.GRU(8, 16, batch_first=True),
                 nn.LSTM(8, 16, batch_first=True, bidirectional=False)]
        attention = nn.MultiheadAttention(16, 2, batch_first=True)
        parameters = [p for m in (embed, linear, norm, attention, *cells) for p in m.parameters()]
        for optimizer in (torch.optim.Adam(parameters, lr=1e-3), torch.optim.AdamW(parameters, lr=1e-3),
                          torch.optim.SGD(parameters, lr=0.1, momentum=0.9)):
            tokens = torch.randint(0, 11, (3, 5))  # (B, T)
            x = embed(tokens)  # (B, T, E)
            lengths = torch.tensor([5, 4, 2])
            outputs = []
            for cell in cells:
                y, _ = cell(x)  # (B, T, H)
                packed = nn.utils.rnn.pack_padded_sequence(x, lengths, batch_first=True, enforce_sorted=False)
                y_packed, _ = nn.utils.rnn.pad_packed_sequence(cell(packed)[0], batch_first=True, total_length=5)
                outputs += [y, y_packed]
            h = norm(sum(outputs))
            h, _ = attention(h, h, h, need_weights=True)
            h = F.scaled_dot_product_attention(h, h, h, is_causal=True)
            logits = linear(torch.tanh(h))  # (B, T, V)
            loss = F.cross_entropy(logits.reshape(-1, 11), tokens.reshape(-1)) + F.mse_loss(h, torch.zeros_like(h))
            optimizer.zero_grad()
            loss.backward()
            nn.utils.clip_grad_norm_(parameters, 1.0)
            optimizer.step()
        with torch.no_grad():
            torch.multinomial(F.softmax(logits[0], dim=-1), 1)
            logits.topk(2, dim=-1)
            F.log_softmax(logits, dim=-1).argmax(-1)
    except Exception:  # noqa: BLE001 - a torch without some of this is simply warmed less
        pass
    finally:
        torch.set_grad_enabled(grad_enabled)
        torch.set_rng_state(states[0])
        np.random.set_state(states[1])
        random.setstate(states[2])
    return True


def threads() -> int:
    """How many threads this process has: one, or a forked runner would miss what the others held."""
    try:
        return len(os.listdir("/proc/self/task"))
    except OSError:
        return 1


def apply_limits(limits: dict) -> None:
    """rlimits of the runner: memory, CPU seconds for the whole notebook, file size."""
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
    resource.setrlimit(resource.RLIMIT_CORE, (0, 0))


def _address_space() -> int:
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith("VmSize:"):
                return int(line.split()[1]) * 1024
    return 0


def run_child(request: dict, control_fd: int, peer_fd: int, watch_fd: int | None = None,
              group_fd: int | None = None) -> None:
    """In the forked child: become a runner on the two inherited sockets."""
    for sig in (signal.SIGINT, signal.SIGTERM, signal.SIGCHLD, signal.SIGPIPE):
        signal.signal(sig, signal.SIG_DFL)
    os.setsid()
    try:  # under a memory limit for the whole sandbox, the runner goes first, never the fork server
        with open("/proc/self/oom_score_adj", "w") as f:
            f.write("1000")
    except OSError:
        pass
    os.environ.update({str(k): str(v) for k, v in request.get("env", {}).items()})
    os.makedirs(os.environ.get("IPYTHONDIR", "/tmp/ipython"), exist_ok=True)
    os.chdir(request["cwd"])
    apply_limits(request.get("limits", {}))
    devnull = os.open(os.devnull, os.O_RDWR)
    for fd in (0, 1, 2):
        os.dup2(devnull, fd)
    sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
    import runner

    runner.main(control_fd, peer_fd, request["config"], watch_fd, group_fd)


def clean_shared(child: int, folders: list[str], kill_all: bool) -> list[str]:
    """Kill every process the runner left behind; empty the shared temporary folders; return what could not go."""
    try:
        os.killpg(child, signal.SIGKILL)  # the runner's session (it called setsid)
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
    return [path for folder in folders for path in empty_folder(folder)]


# The sandbox's read-only binds that lie inside a shared folder (a course cloned under /tmp: its venv and code are
# bound at the same path inside the sandbox's empty /tmp): never removed, and the folders that hold them are
# emptied around them, or the fork server would end after every runner (main sets it from --keep).
KEEP: frozenset[str] = frozenset()


def empty_folder(folder: str, keep: frozenset[str] | None = None) -> list[str]:
    """Remove what is in ``folder``, links never followed; folders the runner made unreadable or unwritable are
    made writable again first; the paths in ``keep`` (default KEEP) and the folders on the way to them stay.
    Returns what is still there besides them (the fork server then ends, and its sandbox is made anew)."""
    keep = KEEP if keep is None else keep
    kept = {os.path.normpath(path) for path in keep}
    holding = {str(parent) for path in kept for parent in Path(path).parents}  # the folders on the way to a kept path
    pending = [folder]
    while pending:  # no recursion: a tree may be thousands of folders deep
        try:
            with os.scandir(pending.pop()) as entries:
                for entry in entries:
                    if entry.is_dir(follow_symlinks=False) and entry.path not in kept:
                        if entry.path not in holding:
                            os.chmod(entry.path, 0o700)
                        pending.append(entry.path)
        except OSError:
            pass
    left, folders = [], [folder]
    while folders:  # the folder itself, then the folders on the way to a kept path (as deep as the path)
        current = folders.pop()
        for name in os.listdir(current) if os.path.isdir(current) else []:
            path = os.path.join(current, name)
            if path in kept:
                continue
            if path in holding and os.path.isdir(path) and not os.path.islink(path):
                folders.append(path)
                continue
            try:
                shutil.rmtree(path) if os.path.isdir(path) and not os.path.islink(path) else os.unlink(path)
            except (OSError, RecursionError):
                pass
            if os.path.lexists(path):
                left.append(path)
    return left


def send(control: socket.socket, message: dict) -> None:
    control.send(json.dumps(message).encode())


def serve(control: socket.socket, shared: list[str], kill_all: bool) -> None:
    while True:
        try:
            data, fds, _, _ = socket.recv_fds(control, 1 << 20, 4)
        except OSError:
            return
        if not data:
            return  # the grader is gone
        request = json.loads(data)
        if request.get("op") == "ping":
            send(control, {"event": "pong"})
            for fd in fds:
                os.close(fd)
            continue
        # after the two sockets, the descriptors that request["extra_fds"] names, in its order: "peer_schedstat" (the
        # student runner's, for the test kernel), "group_cpu" (the student sandbox's CPU usage, for both)
        roles = request.get("extra_fds", ["peer_schedstat"] if len(fds) == 3 else [])
        if request.get("op") != "fork" or not 2 <= len(fds) <= 4 or not isinstance(roles, list) \
                or len(roles) != len(fds) - 2:
            for fd in fds:
                os.close(fd)
            continue
        extra = dict(zip(roles, fds[2:]))
        pid = os.fork()
        if pid == 0:
            control.close()
            try:
                run_child(request, fds[0], fds[1], extra.get("peer_schedstat"), extra.get("group_cpu"))
            finally:
                os._exit(70)
        for fd in fds:
            os.close(fd)
        send(control, {"event": "started", "pid": pid})
        status = None
        while status is None:
            done, code = os.waitpid(pid, os.WNOHANG)
            if done:
                status = code
                break
            readable, _, _ = select.select([control], [], [], 0.05)
            if readable:
                message = control.recv(1 << 16)
                if not message or json.loads(message).get("op") == "kill":
                    os.killpg(pid, signal.SIGKILL) if _alive(pid) else None
                    _, status = os.waitpid(pid, 0)
                    if not message:
                        clean_shared(pid, shared, kill_all)
                        return
        left = clean_shared(pid, shared, kill_all)
        if os.WIFSIGNALED(status):
            reply = {"event": "exit", "exit": 128 + os.WTERMSIG(status), "signal": os.WTERMSIG(status)}
        else:
            reply = {"event": "exit", "exit": os.WEXITSTATUS(status), "signal": None}
        try:
            send(control, reply)
        except OSError:
            return
        if left:  # the next submission must not find it: this fork server ends, and the grader starts a fresh one
            return


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
        return True
    except ProcessLookupError:
        return False


def main() -> None:
    args = dict(zip(sys.argv[1::2], sys.argv[2::2]))
    for extra in args.get("--path", "").split(os.pathsep):
        if extra:
            sys.path.insert(0, extra)
    control = socket.socket(fileno=int(args["--control"]))
    seconds = preload()
    try:  # nobody in the sandbox may ptrace the zygote, read its memory or its descriptors
        import ctypes
        ctypes.CDLL(None).prctl(4, 0, 0, 0, 0)  # PR_SET_DUMPABLE = 4
    except Exception:  # noqa: BLE001
        pass
    send(control, {"event": "ready", "preload_seconds": seconds, "pid": os.getpid(), "threads": threads()})
    global KEEP
    KEEP = frozenset(os.path.normpath(p) for p in args.get("--keep", "").split(os.pathsep) if p)
    serve(control, [p for p in args.get("--clean", "").split(os.pathsep) if p], args.get("--kill-all") == "1")


if __name__ == "__main__":
    main()
