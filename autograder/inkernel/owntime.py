"""Cell time limits that count a runner's own time, so that a busy machine cannot push an honest student past them.

own time = wall time since the cell (or a call from a test) began
           - the time the runner's main thread spent runnable but waiting for a CPU (its run-queue wait)
           - the other runner's run-queue wait during calls made to it, capped: the test kernel reads the
             student runner's from outside (its schedstat, opened by the grader and handed down), never from
             the student's replies; the student's runner may take the test kernel's word for its own

The run-queue wait is the second field of /proc/thread-self/schedstat (nanoseconds; the first is time on a
CPU). Sleeping or blocking (on a socket, a pipe, a child process) is NOT forgiven: it counts as time used,
so own time is never more lenient than the thread's own CPU time plus its own blocking.

The student's other processes: waiting under the sandbox's CPU quota (cgroups.py: one core for all the
submission's processes) is run-queue wait too, so a submission that forks CPU hogs would be forgiven the wait
its own hogs cause, and their CPU time counted nowhere. So where the student sandbox's control group can be
read (``GroupCpu``: its CPU usage, an open file handed down by the grader to both runners), own time is never
less than the CPU time that group used since the cell (or the call) began: every process of the submission,
children and threads included. An honest runner is one thread and its group uses no more than its own time;
a cell that forks CPU burners is stopped once they and it together have used its limit of CPU time. The test
kernel's clock counts the student's group in the same way (the student's code runs there during its calls).

The backstop: whatever the run-queue says, wall time beyond ``backstop × limit`` always stops the cell.
Where /proc/thread-self/schedstat cannot be read (not Linux, a kernel without scheduler statistics), the
run-queue wait reads as 0 and the limit is plain wall time (``RunQueue.reason`` says why).

How it is enforced: SIGALRM (ITIMER_REAL) is armed for what is left of the limit; when it fires, the handler
computes own time; if some is left, it re-arms the timer for what is left (own time cannot grow faster than
wall time) and returns, else it raises CellTimeout, and once more at the backstop if the code swallowed that
one (the grader kills a runner that swallows both). While a request to the other runner is in flight, only
the backstop is enforced here: the other side runs under its own clock for the time this side has left,
and reports its run-queue wait, credited on return up to what this side measured. The test kernel does
not take the student's word: it reads the student runner's wait from outside (``peer``) and keeps the
limit itself during calls too, IN_FLIGHT_GRACE_S after the student's own clock would have answered.
"""

from __future__ import annotations

import math
import os
import signal
import time

SCHEDSTAT = "/proc/thread-self/schedstat"
MIN_ALARM_S = 0.005  # the shortest re-arm: a timer that keeps firing in a loop helps nobody
IN_FLIGHT_GRACE_S = 0.5  # past the limit, while the student's code runs for a test, before the test kernel stops it


class CellTimeout(Exception):
    """The cell (or a call from a test) ran past its time."""


class RunQueue:
    """The run-queue wait of the thread that made it (the runner's main thread), in seconds; or, made from an
    open ``fd`` of another process's schedstat, of that process's main thread (the test kernel's view of the
    student's runner, opened by the grader outside both sandboxes)."""

    def __init__(self, path: str = SCHEDSTAT, fd: int | None = None):
        self.fd: int | None = None
        self.reason = ""
        self.last = 0.0
        if fd is None:
            try:
                fd = os.open(path, os.O_RDONLY | os.O_CLOEXEC)
            except OSError as error:
                self.reason = f"{path} cannot be read ({error.strerror})"
                return
        else:
            path = f"the schedstat handed down (fd {fd})"
        fields = _fields(fd)
        if fields is None:
            os.close(fd)
            self.reason = f"{path} does not hold scheduler statistics"
            return
        if fields[2] == 0:  # a thread that runs Python has been scheduled: zeros mean the kernel keeps none
            os.close(fd)
            self.reason = "the kernel keeps no scheduler statistics (schedstat reads 0)"
            return
        self.fd = fd
        self.last = fields[1] / 1e9

    @property
    def available(self) -> bool:
        return self.fd is not None

    def wait(self) -> float:
        """Seconds this thread has waited, runnable, for a CPU (never decreasing; 0 where unknown)."""
        if self.fd is None:
            return 0.0
        fields = _fields(self.fd)
        if fields is not None and fields[1] / 1e9 >= self.last:
            self.last = fields[1] / 1e9
        return self.last


def _fields(fd: int) -> tuple[int, int, int] | None:
    try:
        parts = os.pread(fd, 256, 0).split()
        return int(parts[0]), int(parts[1]), int(parts[2])
    except (OSError, ValueError, IndexError):
        return None


class GroupCpu:
    """The CPU time used so far by every process of a control group, in seconds, from an open file handed down by
    the grader (cgroups.py, ``Cgroup.open_cpu_usage``): cgroup v1's ``cpuacct.usage`` (nanoseconds) or v2's
    ``cpu.stat`` (``usage_usec``). Reading costs 15-20 µs, so a reading is kept for ``KEEP_S``."""

    KEEP_S = 0.01

    def __init__(self, fd: int, unit: str):
        self.fd, self.unit = fd, unit
        self.last, self.read_at = 0.0, -math.inf
        self.available = self._read() is not None

    def _read(self) -> float | None:
        try:
            text = os.pread(self.fd, 4096, 0).decode("ascii", "replace")
            if self.unit == "usec":
                for line in text.splitlines():
                    key, _, value = line.partition(" ")
                    if key == "usage_usec":
                        return int(value) / 1e6
                return None
            return int(text.split()[0]) / 1e9
        except (OSError, ValueError, IndexError):
            return None

    def used(self) -> float:
        """Seconds of CPU the group has used (never decreasing; at most KEEP_S old)."""
        now = time.monotonic()
        if now - self.read_at >= self.KEEP_S:
            value = self._read()
            if value is not None and value >= self.last:
                self.last = value
            self.read_at = now
        return self.last


def available() -> tuple[bool, str]:
    """Whether this machine can tell own time (checked in the calling thread), and if not, why."""
    queue = RunQueue()
    if queue.fd is not None:
        os.close(queue.fd)
    return queue.available, queue.reason


CLOCKS: list["Clock"] = []  # open clocks, innermost last; the SIGALRM handler looks at the innermost


class Clock:
    """The time limit of one cell or one call: ``limit`` seconds of own time, ``wall_limit`` seconds of wall time."""

    def __init__(self, limit: float, wall_limit: float, queue: RunQueue, call: bool = False,
                 peer: RunQueue | None = None, group: GroupCpu | None = None):
        self.limit, self.wall_limit, self.queue = float(limit), float(wall_limit), queue
        self.call = call  # the student's code called from a test: its limit is what the test cell had left
        # the test kernel's clock: the student runner's run-queue wait, read from outside. With it, this clock
        # keeps the limit while the student's code runs (crediting that wait as it grows), instead of leaving
        # it to the student's own clock until the backstop.
        self.peer = peer if peer is not None and peer.available else None
        self.peer_at = 0.0  # the student's wait when the calls in flight began
        # the student sandbox's processes together (GroupCpu): own time is never less than the CPU they used
        self.group = group if group is not None and group.available else None
        self.group0 = self.group.used() if self.group is not None else 0.0
        self.start = time.monotonic()
        self.wait0 = queue.wait()
        self.credit = 0.0  # the other runner's run-queue wait during calls made to it
        self.in_flight = 0  # requests to the other runner awaiting their reply
        self.active = False
        self.over = False  # the limit's interrupt was raised; only the backstop's is left

    def wall(self) -> float:
        return time.monotonic() - self.start

    def waited(self) -> float:
        return self.queue.wait() - self.wait0

    def own(self) -> float:
        own = self.wall() - self.waited() - self.credit - self.peer_waiting()
        return max(own, self.group_used()) if self.group is not None else own

    def group_used(self) -> float:
        """CPU seconds the student sandbox's processes used since this clock began (0 where unknown)."""
        return self.group.used() - self.group0 if self.group is not None else 0.0

    def peer_waiting(self) -> float:
        """The student's run-queue wait so far in the calls in flight (credited for good when they end)."""
        if self.peer is None or not self.in_flight:
            return 0.0
        return max(0.0, self.peer.wait() - self.peer_at)

    def keeps_limit_in_flight(self) -> bool:
        return self.peer is not None

    def left(self) -> tuple[float, float]:
        """(own seconds left, wall seconds left before the backstop)."""
        return self.limit - self.own(), self.wall_limit - self.wall()

    def figures(self) -> dict:
        figures = {"wall_s": round(self.wall(), 3), "own_s": round(self.own(), 3), "waited_s": round(self.waited(), 3),
                   "credit_s": round(self.credit, 3)}
        if self.group is not None:
            figures["group_cpu_s"] = round(self.group_used(), 3)
        return figures

    def expired(self) -> str | None:
        """Why the time is up (the CellTimeout's message; the grader looks for "backstop" in it), or None."""
        own_left, wall_left = self.left()
        what = "the student's code, called from a test," if self.call else "the cell"
        if wall_left <= 0:
            return (f"{what} ran past the backstop, {self.wall_limit:.1f} s of wall time (its own time was "
                    f"{self.own():.1f} s of {self.limit:.1f} s), and was interrupted")
        in_flight_ok = self.in_flight and (not self.keeps_limit_in_flight() or own_left > -IN_FLIGHT_GRACE_S)
        if own_left <= 0 and not in_flight_ok and not self.over:
            limit = f"the {self.limit:.1f} s its test cell had left" if self.call else f"its time limit of {self.limit:g} s"
            if self.group is not None and self.group_used() >= self.wall() - self.waited() - self.credit - self.peer_waiting():
                return (f"{what} ran past {limit} and was interrupted (own time {self.own():.1f} s: the CPU time "
                        f"that the student's processes used together, {self.wall():.1f} s of wall time)")
            return (f"{what} ran past {limit} and was interrupted (own time {self.own():.1f} s: {self.wall():.1f} s "
                    f"of wall time, less {self.waited() + self.credit:.1f} s spent waiting for a CPU that other "
                    "processes held)")
        return None

    def arm(self) -> None:
        own_left, wall_left = self.left()
        if self.over or (self.in_flight and not self.keeps_limit_in_flight()):
            delay = wall_left
        else:  # in flight: a little after the limit, so that the student's own clock answers first if it is honest
            delay = min(own_left + (IN_FLIGHT_GRACE_S if self.in_flight else 0.0), wall_left)
        signal.setitimer(signal.ITIMER_REAL, max(delay, MIN_ALARM_S))

    def open(self) -> "Clock":
        self.active = True
        CLOCKS.append(self)
        self.arm()
        return self

    def close(self) -> None:
        self.active = False
        signal.setitimer(signal.ITIMER_REAL, 0)
        for i in range(len(CLOCKS) - 1, -1, -1):
            if CLOCKS[i] is self:
                del CLOCKS[i]
        if CLOCKS and CLOCKS[-1].active:
            CLOCKS[-1].arm()

    def close_quietly(self) -> None:
        """close(), even if an interrupt of this clock arrives on the way in (the work it limited is done)."""
        try:
            self.close()
        except CellTimeout:
            self.close()

    # -- calls to the other runner -------------------------------------------------------------------------
    def call_begun(self) -> tuple[float, float]:
        if not self.in_flight and self.peer is not None:
            self.peer_at = self.peer.wait()
        self.in_flight += 1
        if self.active and CLOCKS and CLOCKS[-1] is self:
            self.arm()
        return time.monotonic(), self.queue.wait()

    def call_ended(self, begun: tuple[float, float], waited, timed_out: bool = False) -> float:
        """The other side's run-queue wait during the call, credited up to the wall time of the call that this
        side did not itself spend waiting for a CPU; returns the credit. A call that ran out of time is this
        clock's interrupt (raised by the caller as CellTimeout): only the backstop's is left."""
        self.in_flight = max(0, self.in_flight - 1)
        if timed_out and not self.in_flight:
            self.over = True
        credit = 0.0
        if not self.in_flight and isinstance(waited, (int, float)) and not isinstance(waited, bool) \
                and math.isfinite(waited):
            t0, w0 = begun
            ceiling = (time.monotonic() - t0) - (self.queue.wait() - w0)
            credit = min(max(float(waited), 0.0), max(ceiling, 0.0))
            self.credit += credit
        if self.active and CLOCKS and CLOCKS[-1] is self:
            self.arm()
        return credit


def on_alarm(signum, frame) -> None:
    clock = CLOCKS[-1] if CLOCKS else None
    if clock is None or not clock.active:
        return
    why = clock.expired()
    if why is None:
        clock.arm()
        return
    if clock.wall() < clock.wall_limit:  # the limit: code that swallows this interrupt gets one more, at the backstop
        clock.over = True
        clock.arm()
    else:
        clock.active = False  # the backstop: the last interrupt
    raise CellTimeout(why)
