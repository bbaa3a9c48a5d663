"""Run one rebuilt notebook in two runners: the student's code in one, the course's tests in the other.

The student runner (sandboxed) runs every cell but the graded tests: given cells, answer cells,
the student's own cells. The trusted runner runs the course's `definitions` cells (from the
source, never the student's copy) and the graded test cells, whose calls of the student's
functions travel to the student runner as data (inkernel/wire.py). A test cell's verdict is
what the trusted runner reports: nothing in the student's process can change it.

Limits: a timeout per cell that counts the runner's own time (wall time less the time it waited
for a CPU that other processes held; inkernel/owntime.py), which the runner enforces itself; wall
time beyond `Limits.backstop` × the timeout stops the cell whatever the runner's own time says,
and the grader kills a runner that has not answered `GRACE_S` after that; a deadline for the
notebook, a byte budget for outputs, and a runner that dies (os._exit, a signal, the CPU or memory
rlimit) ends the run with the reason in plain words instead of an exception.
"""

from __future__ import annotations

import dataclasses
import os
import signal
import socket
import sys
import time
from pathlib import Path

import nbformat
from nbformat import NotebookNode

sys.path.insert(0, str(Path(__file__).resolve().parent / "inkernel"))
from sandbox import Limits, Sandbox, Zygote  # noqa: E402
from wire import Channel, PeerGone, WireError  # noqa: E402

GRACE_S = 10  # beyond the backstop (Limits.backstop × the cell timeout), before a runner that does not answer is killed
CONTROL_FRAME_BYTES = 64 * 2**20  # the most a runner may send the grader at once (its outputs are budgeted far below)
CONTROL_FRAME_VALUES = 2_000_000  # and about how many JSON values that frame may make this process build
STREAMS = ("stdout", "stderr")


@dataclasses.dataclass
class Plan:
    """What the grader knows from the course's source about each cell of the rebuilt notebook."""

    tests: set[int]  # graded test cells: run in the trusted runner
    course: dict[int, list[str]]  # test cell -> the source's `definitions` cells to run in the trusted runner first
    answer_names: list[str]  # names the source's answer cells define: proxies in the trusted runner
    classes: list[str]  # classes the `definitions` cells define: they travel by their fields
    hidden_from: dict[int, int]  # test cell -> first line (1-based) of its hidden tests
    classes_in: dict[str, list[str]] = dataclasses.field(default_factory=dict)  # definitions source -> its classes
    # the trusted runner's own environment variables: the student's hidden-test seed (job.student_seed), which the
    # student's runner never gets
    test_environment: dict[str, str] = dataclasses.field(default_factory=dict)


@dataclasses.dataclass
class Execution:
    replies: dict[int, str] = dataclasses.field(default_factory=dict)  # cell index -> "ok" / "error"
    hidden_failures: set[int] = dataclasses.field(default_factory=set)  # test cells that failed in a hidden test
    student_errors: set[int] = dataclasses.field(default_factory=set)  # test cells failed by an error the student's code raised
    problems: list[str] = dataclasses.field(default_factory=list)  # plain-words reasons (runner died, ...)
    not_run: list[int] = dataclasses.field(default_factory=list)  # cell indexes never executed
    timed_out: list[int] = dataclasses.field(default_factory=list)
    backstopped: set[int] = dataclasses.field(default_factory=set)  # timed out at the backstop (wall time)
    cell_time: dict[int, dict] = dataclasses.field(default_factory=dict)  # cell index -> the runner's wall_s, own_s, ...
    own_time: bool | None = None  # False: the runners could not tell own time (no schedstat) and counted wall time
    peer_time: bool | None = None  # False: the test kernel could not read the student runner's wait (none credited)
    output_dropped_bytes: int = 0
    kernel_ready_s: float = 0.0
    course_rerun_s: float = 0.0  # the course's definitions run again in the test kernel, and the class guard in the student's
    seconds: float = 0.0


class RunnerDied(Exception):
    pass


class ProtocolBroken(RunnerDied):
    """The runner sent what is not a frame within the limits (inkernel/wire.py: parse_json); it was killed."""


def describe_exit(status: dict | None, limits: Limits) -> str:
    if not status:
        return "the kernel died"
    sig = status.get("signal")
    if sig == signal.SIGXCPU:
        return f"the kernel used more than its {limits.cpu_seconds} s of CPU time and was stopped"
    if sig == signal.SIGKILL:
        return "the kernel was killed (SIGKILL), most often by running out of memory or by the grader after a timeout"
    if sig == signal.SIGXFSZ:
        return f"the kernel wrote a file larger than {limits.file_bytes:,d} bytes and was stopped"
    if sig:
        return f"the kernel died from signal {signal.Signals(sig).name}"
    return f"the kernel exited with code {status.get('exit')} (sys.exit, os._exit, exit() or a crash)"


def clean_outputs(items, budget: list[int], execution: Execution) -> list[NotebookNode]:
    """Outputs a runner reported, as valid nbformat outputs within the notebook's byte budget."""
    kept: list[NotebookNode] = []
    for item in items if isinstance(items, list) else []:
        if not isinstance(item, dict):
            continue
        kind = item.get("output_type")
        try:
            if kind == "stream" and item.get("name") in STREAMS:
                output = nbformat.v4.new_output("stream", name=item["name"], text=str(item.get("text", "")))
                size = len(output.text)
            elif kind in ("display_data", "execute_result") and isinstance(item.get("data"), dict):
                data = {str(k): v for k, v in item["data"].items() if isinstance(v, (str, dict, list))}
                metadata = item.get("metadata") if isinstance(item.get("metadata"), dict) else {}
                output = nbformat.v4.new_output(kind, data=data, metadata=metadata)
                if kind == "execute_result":
                    output.execution_count = item.get("execution_count") if isinstance(item.get("execution_count"), int) else None
                size = sum(len(str(v)) for v in data.values())
            elif kind == "error":
                trace = item.get("traceback") if isinstance(item.get("traceback"), list) else []
                output = nbformat.v4.new_output("error", ename=str(item.get("ename", "Error"))[:200],
                                                evalue=str(item.get("evalue", ""))[:4000],
                                                traceback=[str(t)[:2000] for t in trace[-40:]])
                size = len(output.evalue)
            else:
                continue
        except (TypeError, ValueError):
            continue
        if budget[0] - size < 0 and kind != "error":
            if not execution.output_dropped_bytes:
                kept.append(nbformat.v4.new_output("stream", name="stdout", text="\n[the grader dropped the rest of "
                                                   "the output: more than the notebook's budget]\n"))
            execution.output_dropped_bytes += size
            continue
        budget[0] -= size
        kept.append(output)
    return kept


class Side:
    """The grader's end of one runner: its control channel and the zygote that forked it."""

    def __init__(self, name: str, zygote: Zygote, channel: Channel):
        self.name, self.zygote, self.channel = name, zygote, channel
        self.dead = False

    def ask(self, message: dict, seconds: float) -> dict:
        if self.dead:
            raise RunnerDied(self.name)
        try:
            self.channel.send(message, timeout=5)
            reply = self.channel.recv(time.monotonic() + seconds)
        except PeerGone as error:
            self.dead = True
            raise RunnerDied(str(error)) from None
        except WireError as error:
            self.kill()
            raise ProtocolBroken(str(error)) from None
        return reply

    def kill(self) -> None:
        self.dead = True
        self.zygote.kill()


def start_runners(sandbox: Sandbox, plan: Plan) -> tuple[Side, Side]:
    sandbox.ensure_started()
    s_ours, s_theirs = socket.socketpair(socket.AF_UNIX, socket.SOCK_STREAM)
    t_ours, t_theirs = socket.socketpair(socket.AF_UNIX, socket.SOCK_STREAM)
    peer_s, peer_t = socket.socketpair(socket.AF_UNIX, socket.SOCK_STREAM)
    budget = sandbox.limits.output_bytes
    # the CPU time of all the student sandbox's processes, for both runners' clocks (owntime.GroupCpu)
    group_cpu, group_unit = sandbox.cgroup.open_cpu_usage() if sandbox.cgroup is not None else (None, None)
    try:
        backstop = sandbox.limits.backstop
        figures = sandbox.limits.figures
        sandbox.student.fork({"side": "s", "output_bytes": budget, "backstop": backstop, "figures": figures,
                              "group_cpu_unit": group_unit}, s_theirs, peer_s, group_cpu=group_cpu)
        watch = sandbox.student.open_schedstat()  # the student's run-queue wait, for the test kernel's clock
        try:
            sandbox.trusted.fork({"side": "t", "output_bytes": budget, "answer_names": plan.answer_names,
                                  "classes": plan.classes, "backstop": backstop, "figures": figures,
                                  "group_cpu_unit": group_unit}, t_theirs, peer_t, watch, group_cpu=group_cpu,
                                 environment=plan.test_environment)
        finally:
            if watch is not None:
                os.close(watch)
    finally:
        if group_cpu is not None:
            os.close(group_cpu)
        for sock in (s_theirs, t_theirs, peer_s, peer_t):
            sock.close()
    return Side("student", sandbox.student, Channel(s_ours, CONTROL_FRAME_BYTES, CONTROL_FRAME_VALUES)), \
        Side("trusted", sandbox.trusted, Channel(t_ours, CONTROL_FRAME_BYTES, CONTROL_FRAME_VALUES))


def refusal(reply: dict) -> str | None:
    """Why the trusted runner did not run a cell: what the student's kernel answered its request for names with."""
    refused = reply.get("refused")
    if not isinstance(refused, list) or not refused:
        return None
    return "the student's kernel answered the test kernel's request for names with " + \
        "; ".join(str(problem)[:400] for problem in refused[:5])


def seconds_of(reply: dict) -> float:
    """The wall time a runner reports for a cell (0 if it reports none)."""
    wall = reply.get("time", {}).get("wall_s") if isinstance(reply.get("time"), dict) else None
    return float(wall) if isinstance(wall, (int, float)) and 0 <= wall < 1e6 else 0.0


class Stop(Exception):
    def __init__(self, index: int, side: Side, timed_out: bool, detail: str, reason: str | None = None):
        super().__init__(detail)
        self.index, self.side, self.timed_out, self.detail = index, side, timed_out, detail
        self.reason = reason  # the report's words, where the one who stopped knows them best


def run(nb: NotebookNode, sandbox: Sandbox, plan: Plan) -> Execution:
    """Execute ``nb`` in place with the two runners; report what happened."""
    limits = sandbox.limits
    execution = Execution()
    start = time.perf_counter()
    deadline = time.monotonic() + limits.notebook_timeout
    code_cells = [i for i, c in enumerate(nb.cells) if c.cell_type == "code"]
    budget = [limits.output_bytes]
    done: set[int] = set()
    student = trusted = None

    def stop(reason: str, index: int) -> None:
        execution.problems.append(reason)
        execution.not_run = [i for i in code_cells if i >= index and i not in done]

    def ask(side: Side, index: int, message: dict, timeout: float) -> dict:
        """The runner stops the cell at its own time limit, or at the backstop; a runner still silent after the
        backstop and GRACE_S is killed."""
        began = time.monotonic()
        wait = limits.backstop * timeout + GRACE_S
        try:
            return side.ask(message, wait)
        except ProtocolBroken as error:
            who = "the student's kernel" if side is student else "the test kernel"
            raise Stop(index, side, False, str(error), f"{who} sent the grader a message it does not read ({error}) "
                       f"while running cell #{index}; the kernel was stopped") from None
        except RunnerDied as error:
            timed = time.monotonic() - began >= wait - 1
            if timed:
                side.kill()
            raise Stop(index, side, timed, str(error)) from None

    hits_before = sandbox.cgroup.counters() if sandbox.cgroup is not None else {}
    tests_hits_before = sandbox.trusted_cgroup.counters() if sandbox.trusted_cgroup is not None else {}
    try:
        try:
            student, trusted = start_runners(sandbox, plan)
            for side in (student, trusted):
                ready = side.channel.recv(time.monotonic() + 60)
                if not ready.get("ready"):
                    raise WireError("the runner did not say it is ready")
                if side is trusted:  # the student's runner could say anything; both run on the same kernel
                    execution.own_time = ready.get("own_time") is True
                    execution.peer_time = ready.get("peer_time") is True
        except (RuntimeError, WireError) as error:
            stop(f"the kernel did not start: {error}", 0)
            return execution
        execution.kernel_ready_s = time.perf_counter() - start
        count = 0
        for index in code_cells:
            cell = nb.cells[index]
            if time.monotonic() > deadline:
                stop(f"the notebook ran longer than {limits.notebook_timeout} s; the cells from #{index} on were "
                     "not run", index)
                break
            timeout = min(limits.cell_timeout, max(1.0, deadline - time.monotonic()))
            if index in plan.tests:
                for code in plan.course.get(index, []):
                    names = plan.classes_in.get(code)
                    if names:  # the course's classes travel by value: the student's kernel must know them too
                        guard = (f"if not all(isinstance(globals().get(_n), type) for _n in {names!r}):\n"
                                 f"    exec(compile({code!r}, '<course definitions>', 'exec'), globals())")
                        guarded = ask(student, index, {"op": "run", "code": guard, "timeout": timeout}, timeout)
                        execution.course_rerun_s += seconds_of(guarded)
                for code in plan.course.get(index, []):  # the course's own code, from the source
                    course = ask(trusted, index, {"op": "run", "code": code, "timeout": timeout}, timeout)
                    execution.course_rerun_s += seconds_of(course)
                    if refusal(course):  # the student's doing, not the course's
                        execution.problems.append(f"the course's definitions before cell #{index} were not run: "
                                                  f"{refusal(course)}")
                    elif course.get("status") != "ok":
                        execution.problems.append(f"the course's definitions before cell #{index} failed in the "
                                                  "test kernel; tests after it may fail")
                reply = ask(trusted, index, {"op": "run", "code": cell.source, "timeout": timeout}, timeout)
            else:
                reply = ask(student, index, {"op": "run", "code": cell.source, "timeout": timeout}, timeout)
            status = reply.get("status") if reply.get("status") in ("ok", "error") else "error"
            outputs = clean_outputs(reply.get("outputs"), budget, execution)
            dropped = reply.get("dropped")
            execution.output_dropped_bytes += dropped if isinstance(dropped, int) and dropped > 0 else 0
            timeouts = [o for o in outputs if o.output_type == "error" and o.ename == "CellTimeout"]
            if timeouts:
                execution.timed_out.append(index)
                if any("backstop" in o.evalue for o in timeouts):
                    execution.backstopped.add(index)
            if isinstance(reply.get("time"), dict):
                execution.cell_time[index] = {k: v for k, v in reply["time"].items()
                                              if isinstance(k, str) and isinstance(v, (int, float))}
            if index in plan.tests and refusal(reply):
                execution.problems.append(f"the test in cell #{index} was not run: {refusal(reply)}")
            if index in plan.tests and status == "error":
                line, hidden = reply.get("error_line"), plan.hidden_from.get(index)
                if hidden is not None and (not isinstance(line, int) or line >= hidden):
                    execution.hidden_failures.add(index)
                if reply.get("error_from_student") is not False:  # anything but a plain "no" from the test kernel
                    execution.student_errors.add(index)
            count += 1
            cell.outputs, cell.execution_count = outputs, count
            execution.replies[index] = status
            done.add(index)
            if index in plan.tests and reply.get("peer_broken"):
                student.kill()  # the student's code stopped answering a test, or garbled its answer: nothing more runs
                if reply.get("peer_protocol"):
                    detail = str(reply["peer_broken"])[:300]
                    raise Stop(index + 1, student, False, detail, f"a test in cell #{index} called the student's code, "
                               f"whose kernel sent the test kernel a message it does not read ({detail}); the kernel "
                               "was stopped")
                raise Stop(index + 1, student, False, "the student's code did not answer a test in time",
                           f"a test in cell #{index} called the student's code, which ran past the cell's time and "
                           "did not answer its interrupt; the kernel was stopped")
    except Stop as stopped:
        index = stopped.index
        if stopped.reason is not None:
            reason = stopped.reason
        elif stopped.side is student:
            status_info = sandbox.student.wait_exit(5)
            backstop = f"{limits.backstop:g} × {limits.cell_timeout} s of wall time"
            if stopped.timed_out and index in done:
                reason = (f"a test in cell #{index - 1} called the student's code, which ran past the "
                          f"{limits.cell_timeout} s limit and did not answer the interrupt by the backstop "
                          f"({backstop}); the kernel was stopped")
            elif stopped.timed_out:
                reason = (f"cell #{index} ran past the {limits.cell_timeout} s limit and did not answer the "
                          f"interrupt by the backstop ({backstop}); the kernel was stopped")
            else:
                reason = f"{describe_exit(status_info, limits)} while running cell #{index}"
        else:
            reason = (f"the test in cell #{index} ran past the {limits.cell_timeout} s limit and did not stop by the "
                      f"backstop ({limits.backstop:g} × {limits.cell_timeout} s of wall time)" if stopped.timed_out
                      else f"the test kernel stopped while running cell #{index} ({stopped.detail})")
        if stopped.timed_out and index not in done:
            execution.timed_out.append(index)
        stop(reason, index)
    finally:
        for side in (student, trusted):
            if side is not None and not side.dead:
                try:
                    side.channel.send({"op": "exit"}, timeout=2)
                except WireError:
                    pass
        for side in (student, trusted):
            if side is not None:
                side.zygote.wait_exit(10)
                side.channel.sock.close()
    if sandbox.cgroup is not None:
        hits = sandbox.cgroup.counters()
        if hits.get("memory", 0) > hits_before.get("memory", 0):
            execution.problems.append(f"the submission reached its memory limit ({limits.memory_bytes / 2**30:.1f} GiB "
                                      "for all its processes together, on top of the preloaded libraries)")
        if hits.get("pids", 0) > hits_before.get("pids", 0):
            execution.problems.append(f"the submission reached its limit of {limits.pids} processes and threads")
    if sandbox.trusted_cgroup is not None:
        hits = sandbox.trusted_cgroup.counters()
        if hits.get("memory", 0) > tests_hits_before.get("memory", 0):
            execution.problems.append("the test kernel reached its memory limit (the values the student's code returned "
                                      "to the tests were too large)")
    execution.seconds = time.perf_counter() - start
    return execution
