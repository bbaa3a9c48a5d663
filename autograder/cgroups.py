"""Resource limits for a whole sandbox (every process a submission starts), with Linux control groups.

One group per worker sandbox, in each controller: `memory` (all its processes together, page
cache and tmpfs included), `pids` (processes and threads), `cpu` (a quota of one core, so a
spinning submission cannot slow the honest one graded beside it), and the CPU time its processes used
together (v2 `cpu.stat`; v1 `cpuacct`, mounted with `cpu` or apart), which a cell's own time never falls
below (inkernel/owntime.py, GroupCpu). cgroup v2 (one unified
hierarchy, as systemd sets up) and v1 (a folder per controller, as many containers have) both work.
Where neither can be written (a container without delegation), `Cgroup.create()` returns None
with the reason; grade.py says so at start-up and the per-process rlimits remain. With Docker,
`--memory`, `--pids-limit`, `--cpus` and `--tmpfs /tmp:size=...` give the same around grade.py.
"""

from __future__ import annotations

import os
import signal
import time
from pathlib import Path

ROOT = Path("/sys/fs/cgroup")
CONTROLLERS = ("memory", "pids", "cpu")
PERIOD_US = 100_000


def _read_int(path: Path, key: str | None = None) -> int:
    try:
        text = path.read_text()
    except OSError:
        return 0
    if key is None:
        text = text.strip()
        return int(text) if text.isdigit() else 0
    for line in text.splitlines():
        parts = line.split()
        if len(parts) == 2 and parts[0] == key and parts[1].isdigit():
            return int(parts[1])
    return 0


class Cgroup:
    """A control group per sandbox; ``enter()`` runs in the sandbox's first process before it executes."""

    def __init__(self, folders: dict[str, Path], v2: bool):
        self.folders, self.v2 = folders, v2

    @classmethod
    def create(cls, name: str) -> tuple["Cgroup | None", str]:
        unified = ROOT / "cgroup.controllers"
        try:
            if unified.exists():
                available = unified.read_text().split()
                if not set(CONTROLLERS) <= set(available):
                    return None, f"the cgroup v2 controllers {sorted(set(CONTROLLERS) - set(available))} are not delegated here"
                folder = ROOT / name
                folder.mkdir()
                return cls({c: folder for c in CONTROLLERS}, v2=True), ""
            folders = {}
            for controller in CONTROLLERS:
                base = ROOT / controller
                if not (base / "cgroup.procs").exists():
                    return None, f"no cgroup v1 '{controller}' controller is mounted"
                folders[controller] = base / name
                folders[controller].mkdir()
            # what the group's processes used of the CPU (owntime.GroupCpu): cpuacct, mounted with cpu or apart
            if not (folders["cpu"] / "cpuacct.usage").exists() and (ROOT / "cpuacct" / "cgroup.procs").exists():
                folders["cpuacct"] = ROOT / "cpuacct" / name
                try:
                    folders["cpuacct"].mkdir()
                except OSError:
                    del folders["cpuacct"]  # then the CPU time of a submission's children is not counted
            return cls(folders, v2=False), ""
        except OSError as error:
            return None, f"control groups cannot be created here ({error.strerror})"

    def limit(self, memory_bytes: int, pids: int, cpus: float) -> None:
        if self.v2:
            folder = self.folders["memory"]
            (folder / "memory.max").write_text(str(memory_bytes))
            (folder / "memory.swap.max").write_text("0") if (folder / "memory.swap.max").exists() else None
            (folder / "pids.max").write_text(str(pids))
            (folder / "cpu.max").write_text(f"{int(cpus * PERIOD_US)} {PERIOD_US}")
        else:
            (self.folders["memory"] / "memory.limit_in_bytes").write_text(str(memory_bytes))
            swap = self.folders["memory"] / "memory.memsw.limit_in_bytes"
            if swap.exists():
                try:
                    swap.write_text(str(memory_bytes))
                except OSError:
                    pass
            (self.folders["pids"] / "pids.max").write_text(str(pids))
            (self.folders["cpu"] / "cpu.cfs_period_us").write_text(str(PERIOD_US))
            (self.folders["cpu"] / "cpu.cfs_quota_us").write_text(str(int(cpus * PERIOD_US)))

    def enter(self) -> None:
        """Put the calling process (and so everything it starts) into the group."""
        pid = str(os.getpid())
        for folder in set(self.folders.values()):
            (folder / "cgroup.procs").write_text(pid)

    def memory_used(self) -> int:
        folder = self.folders["memory"]
        return _read_int(folder / ("memory.current" if self.v2 else "memory.usage_in_bytes"))

    def open_cpu_usage(self) -> tuple[int | None, str | None]:
        """An open, read-only file of the CPU time that the group's processes have used together, and its unit
        ("usec": v2's cpu.stat, usage_usec; "ns": v1's cpuacct.usage); (None, None) where there is none."""
        if self.v2:
            path, unit = self.folders["cpu"] / "cpu.stat", "usec"
        else:
            folder = self.folders.get("cpuacct", self.folders["cpu"])
            path, unit = folder / "cpuacct.usage", "ns"
        try:
            return os.open(path, os.O_RDONLY | os.O_CLOEXEC), unit
        except OSError:
            return None, None

    def counters(self) -> dict[str, int]:
        """How often each limit was hit so far."""
        memory, pids = self.folders["memory"], self.folders["pids"]
        if self.v2:
            return {"memory": _read_int(memory / "memory.events", "oom_kill") + _read_int(memory / "memory.events", "max"),
                    "pids": _read_int(pids / "pids.events", "max")}
        return {"memory": _read_int(memory / "memory.oom_control", "oom_kill") + _read_int(memory / "memory.failcnt"),
                "pids": _read_int(pids / "pids.events", "max")}

    def remove(self) -> None:
        for folder in set(self.folders.values()):
            for _ in range(50):
                pids = [int(p) for p in _lines(folder / "cgroup.procs")]
                for pid in pids:
                    try:
                        os.kill(pid, signal.SIGKILL)
                    except ProcessLookupError:
                        pass
                try:
                    folder.rmdir()
                    break
                except OSError:
                    time.sleep(0.05)


def _lines(path: Path) -> list[str]:
    try:
        return [line for line in path.read_text().split() if line.isdigit()]
    except OSError:
        return []
