"""A notebook kernel for grading: runs cells with IPython, speaks JSON frames over inherited sockets.

One process per notebook and side, forked from a zygote (zygote.py):

- the STUDENT runner runs the course's given cells, the answer cells and the student's own
  cells; between cells it answers the trusted runner's requests (call a function, construct
  or use an object, read names) on the peer socket;
- the TRUSTED runner runs the course's `definitions` cells and the graded test cells; the
  names that answer cells define are proxies (wire.Remote) to the student runner.

The grader talks to each runner on its control socket: {"op": "run", "code", ...} →
{"status", "outputs", ...}. No file, socket path or configuration of the grader's lies where
a submission could write it: both sockets are inherited file descriptors.

Time limits count each runner's own time, not the time it waited for a CPU that others held
(owntime.py); wall time beyond ``backstop`` × the limit always stops a cell.
"""

from __future__ import annotations

import builtins
import io
import json
import os
import reprlib
import select
import signal
import socket
import sys
import time
import traceback

from owntime import CLOCKS, CellTimeout, Clock, GroupCpu, RunQueue, on_alarm  # noqa: F401
from wire import Channel, Codec, Peer, Remote, RemoteError, WireError, only_data, raised_by_peer, write_back  # noqa: F401

CALL_OUTPUT_BYTES = 64 * 1024  # what a student's function may print during one call from a test (then dropped)
BACKSTOP = 3.0  # wall time beyond BACKSTOP × the time limit always stops a cell (the grader may say otherwise)
IDLE_S = 30.0  # the time limit of a request that comes outside any cell


class Outputs:
    """nbformat outputs of the cell being run, with a byte budget."""

    def __init__(self, budget: int):
        self.items: list[dict] = []
        self.budget = budget
        self.used = 0
        self.dropped = 0

    def _fits(self, size: int) -> bool:
        if self.used + size > self.budget:
            self.dropped += size
            return False
        self.used += size
        return True

    def stream(self, name: str, text: str) -> None:
        if not text or not self._fits(len(text)):
            return
        if self.items and self.items[-1]["output_type"] == "stream" and self.items[-1]["name"] == name:
            self.items[-1]["text"] += text
        else:
            self.items.append({"output_type": "stream", "name": name, "text": text})

    def display(self, kind: str, data: dict, metadata: dict, count: int | None = None) -> None:
        data = {str(k): v for k, v in (data or {}).items() if isinstance(v, (str, dict, list))}
        if not self._fits(sum(len(json.dumps(v)) if not isinstance(v, str) else len(v) for v in data.values())):
            return
        output = {"output_type": kind, "data": data, "metadata": metadata if isinstance(metadata, dict) else {}}
        if kind == "execute_result":
            output["execution_count"] = count
        self.items.append(output)

    def error(self, ename: str, evalue: str, tb: list[str]) -> None:
        self.items.append({"output_type": "error", "ename": ename, "evalue": evalue[:4000], "traceback": tb[-40:]})


class Stream(io.TextIOBase):
    def __init__(self, sink, name: str):
        self.sink, self.name = sink, name

    def writable(self) -> bool:
        return True

    def write(self, text) -> int:
        text = str(text)
        self.sink(self.name, text)
        return len(text)

    def flush(self) -> None:
        pass

    def isatty(self) -> bool:
        return False

    @property
    def encoding(self):
        return "utf-8"


def make_shell(outputs_ref):
    """A plain IPython shell whose displays, results and errors land in ``outputs_ref[0]``."""
    from IPython.core.displayhook import DisplayHook
    from IPython.core.displaypub import DisplayPublisher
    from IPython.core.interactiveshell import InteractiveShell

    class Publisher(DisplayPublisher):
        def publish(self, data, metadata=None, source=None, *, transient=None, update=False, **kwargs):
            outputs_ref[0].display("display_data", data, metadata or {})

        def clear_output(self, wait=False):
            outputs_ref[0].items = [o for o in outputs_ref[0].items if o["output_type"] == "error"]

    class Hook(DisplayHook):
        def write_output_prompt(self):
            pass

        def write_format_data(self, format_dict, md_dict=None):
            outputs_ref[0].display("execute_result", format_dict, md_dict or {}, self.prompt_count)

        def finish_displayhook(self):
            pass

    class Shell(InteractiveShell):
        last_error_line: int | None = None
        last_error_from_peer = False
        cell_file: str | None = None

        def init_display_pub(self):
            self.display_pub = Publisher(shell=self, parent=self)
            self.configurables.append(self.display_pub)

        def init_displayhook(self):
            self.displayhook = Hook(shell=self, cache_size=self.cache_size, parent=self)
            self.configurables.append(self.displayhook)
            self.display_trap = __import__("IPython.core.display_trap", fromlist=["DisplayTrap"]).DisplayTrap(hook=self.displayhook)

        def showtraceback(self, exc_tuple=None, filename=None, tb_offset=None, exception_only=False, running_compiled_code=False):
            etype, value, tb = exc_tuple or sys.exc_info()
            if etype is None:
                return
            line = None
            frame_tb = tb
            while frame_tb is not None:  # the outermost frame of the cell itself: the statement that failed
                if frame_tb.tb_frame.f_code.co_filename.startswith("<ipython-input"):
                    line = frame_tb.tb_lineno
                    break
                frame_tb = frame_tb.tb_next
            self.last_error_line = line
            self.last_error_from_peer = raised_by_peer(value)
            try:
                lines = traceback.format_exception(etype, value, tb)
            except Exception:  # noqa: BLE001 - an exception whose str() fails
                lines = [f"{getattr(etype, '__name__', 'Exception')}\n"]
            try:
                message = str(value)
            except Exception:  # noqa: BLE001
                message = "(an error whose message cannot be shown)"
            outputs_ref[0].error(getattr(etype, "__name__", "Exception"), message, [x.rstrip("\n") for x in lines])

        def showsyntaxerror(self, filename=None, running_compiled_code=False):
            self.showtraceback()

        def enable_gui(self, gui=None):
            pass

    InteractiveShell.clear_instance()
    shell = Shell.instance(colors="NoColor", history_length=0)
    shell.history_manager.enabled = False
    sys.modules["__main__"] = shell.user_module  # classes defined in cells can be named (pickled) by reference
    return shell


def describe_figure(figure) -> str:
    """"a figure with 2 axes", without drawing it."""
    axes = len(figure.axes)
    return f"a figure with {axes} ax{'es' if axes != 1 else 'is'}"


def screen_bound(values, asked: set[str], may_bind, may_be_handle, course_classes=()) -> tuple[dict, list[str]]:
    """What the trusted runner takes of the student kernel's answer to "bind", and what was wrong with that answer.

    The student's kernel is asked for some names and only ever sends some of those: an answer that is not a
    dict of names, or that holds a name nobody asked for (the course's `expect_same`, numpy's `np`, ...), is the
    student's error, and nothing of it is taken. Of the names asked for, one the test kernel holds of its own
    (``may_bind``) is left alone, and one that is not an answer (``may_be_handle``) is taken only as data: a
    given cell's name never becomes a handle to code in the student's kernel. An answer is the student's code (a
    handle to it) or data: one that holds a handle the test kernel lent (its own function or model, which the
    student's code was given in an earlier call) would make a test call the test's own code in the student's name;
    it is the student's error, and nothing of the answer is taken."""
    if not isinstance(values, dict):
        return {}, [f"a {type(values).__name__}, not a dict of names"]
    odd = [name for name in values if not isinstance(name, str) or not name.isidentifier()]
    if odd:
        return {}, [f"keys that are not names ({listed(odd)})"]
    unasked = [name for name in values if name not in asked]
    if unasked:
        return {}, [f"names it was not asked for ({listed(unasked)})"]
    theirs = [name for name, value in values.items()
              if may_be_handle(name) and not only_data(value, course_classes, handles=True)]
    if theirs:
        return {}, [f"answers that are the test kernel's own objects, lent to the student's code, not the student's "
                    f"code or data ({listed(theirs)})"]
    return {name: value for name, value in values.items()
            if may_bind(name) and (may_be_handle(name) or only_data(value, course_classes))}, []


def listed(items: list, most: int = 5) -> str:
    """A few items of a list, each shortened, for a message that anyone may read."""
    shown = ", ".join(reprlib.repr(item)[:60] for item in items[:most])
    return shown + (f" and {len(items) - most:,d} more" if len(items) > most else "")


def course_class(cls: type) -> bool:
    """A class the course wrote: in a definitions cell (the test kernel's __main__) or in seqlab."""
    module = getattr(cls, "__module__", "") or ""
    return module == "__main__" or module == "seqlab" or module.startswith("seqlab.")


def lent(obj, name: str) -> bool:
    """Whether the student's code may read or call ``name`` of a test's object (CONVENTION.md, 3): a public method
    or attribute that a course class defines, or a public attribute of the object itself. What a library defines
    on it is not lent (nn.Module's load_state_dict or register_forward_hook, a list's append): through those the
    student's code could change what the test compares with."""
    if not isinstance(name, str) or name.startswith("_"):
        return False
    for cls in type(obj).__mro__:
        if name in vars(cls):
            return course_class(cls)
    return name in (getattr(obj, "__dict__", None) or {})


class Runner:
    def __init__(self, side: str, control: socket.socket, peer: socket.socket, config: dict):
        self.side = side
        self.config = config
        self.outputs_ref = [Outputs(int(config.get("output_bytes", 2 * 2**20)))]
        self.total_output_budget = int(config.get("output_bytes", 2 * 2**20))
        self.control = Channel(control, max_frame=64 * 2**20)
        self.shell = make_shell(self.outputs_ref)
        self.codec = Codec(side)
        self.codec.names = self.resolve_name
        self.queue = RunQueue()  # this (the main) thread's run-queue wait: what own time does not count
        # the test kernel: the student runner's run-queue wait, read from outside (never the student's word for it)
        watch = config.get("peer_schedstat_fd")
        self.peer_queue = RunQueue(fd=watch) if side == "t" and isinstance(watch, int) else None
        # both runners: the CPU time of the student sandbox's processes together (its control group), never less
        # than a cell's own time (owntime.GroupCpu)
        group_fd, group_unit = config.get("group_cpu_fd"), config.get("group_cpu_unit")
        self.group_cpu = GroupCpu(group_fd, str(group_unit)) if isinstance(group_fd, int) else None
        self.backstop = max(1.0, float(config.get("backstop", BACKSTOP)))
        self.peer = Peer(Channel(peer), self.codec, self.serve, self.peer_timeout, hooks=self,
                         keeps_own_randomness=side == "t", peer_keeps_own_randomness=side == "s")
        if side == "t":
            self.peer.randoms.watch_seeding()
        self.peer.errors["CellTimeout"] = CellTimeout  # a call of the student's code that ran out of time
        self.answer_names: list[str] = list(config.get("answer_names", []))
        self.bound: dict[str, object] = {}  # trusted side: what bind_names put into the namespace, by name
        signal.signal(signal.SIGALRM, on_alarm)
        import comm  # ipywidgets asks comm for a channel to a front end; there is none while grading

        comm.create_comm = lambda *args, **kwargs: comm.DummyComm(*args, **kwargs)
        self.shell.run_cell("%matplotlib inline", store_history=False, silent=True)
        if not config.get("figures", True):  # no PNG of a figure (Limits.figures), a line that says so instead; a
            from matplotlib.figure import Figure  # later `%matplotlib inline` keeps the formats set here
            from matplotlib_inline.config import InlineBackend

            InlineBackend.instance().figure_formats = set()
            self.shell.display_formatter.formatters["text/plain"].for_type(
                Figure, lambda figure, printer, cycle: printer.text(f"[{describe_figure(figure)}: not drawn while grading]"))
            Figure.tight_layout = lambda figure, *args, **kwargs: None  # it measures the drawn text: nothing to fit
        self.outputs_ref[0] = Outputs(self.total_output_budget)

    # -- names ---------------------------------------------------------------------------------------
    def resolve_name(self, name: str):
        """A {"$": "name"} reference to this side's namespace. Only the student side hands out names (its answers,
        by name, so that a proxy calls what the name holds now); the trusted side hands out none, so a name the
        student's kernel sends as the test's would be one of the test's own globals (an expected value): refused."""
        if self.side != "s":
            raise WireError("the student's kernel referred to a name of the test kernel's; only handles the test "
                            "kernel handed out can come back")
        try:
            return self.shell.user_ns[name]
        except KeyError:
            raise NameError(f"name {name!r} is not defined in the student's notebook") from None

    # -- time limits of requests (owntime.py) -----------------------------------------------------------
    def peer_timeout(self) -> tuple[float, float]:
        """(own, wall) seconds the other side may take to answer a request: what is left of the limit in force."""
        if not CLOCKS:
            return IDLE_S, IDLE_S * self.backstop
        own, wall = CLOCKS[-1].left()
        return max(0.1, own), max(0.1, wall)

    def request_begun(self):
        clock = CLOCKS[-1] if CLOCKS else None
        return (clock, clock.call_begun(), self.peer_waited()) if clock is not None else None

    def peer_waited(self) -> float | None:
        """The test kernel: the student runner's run-queue wait so far, measured from outside (0 where it cannot be)."""
        if self.side != "t":
            return None
        return self.peer_queue.wait() if self.peer_queue is not None else 0.0

    def request_ended(self, token, reply: dict | None) -> None:
        """The other side's run-queue wait during the call is not this side's own time (capped by Clock.call_ended).
        The test kernel counts the wait it measured itself; the student's runner takes the test kernel's reply."""
        if token is not None:
            clock, begun, peer_before = token
            reply = reply if isinstance(reply, dict) else {}
            error = reply.get("error")
            waited = reply.get("waited") if peer_before is None else self.peer_waited() - peer_before
            clock.call_ended(begun, waited, isinstance(error, dict) and error.get("type") == "CellTimeout")

    def answer_begun(self, message: dict):
        """The student side answers each request under a clock of its own: the time the test has left."""
        began = self.queue.wait()
        clock = None
        if self.side == "s":
            own, wall = message.get("seconds"), message.get("wall")
            own = float(own) if isinstance(own, (int, float)) and own > 0 else IDLE_S
            wall = float(wall) if isinstance(wall, (int, float)) and wall > 0 else own * self.backstop
            clock = Clock(own, wall, self.queue, call=True, group=self.group_cpu)
            clock.open()
        return clock, began

    def answer_ended(self, token) -> dict:
        """Close the request's clock; tell the other side how long this side waited for a CPU meanwhile."""
        if token is None:
            return {}
        clock, began = token
        if clock is not None:
            clock.close_quietly()
        return {"waited": round(self.queue.wait() - began, 6)}

    # -- requests of the other kernel ------------------------------------------------------------------
    def target(self, node) -> object:
        if not isinstance(node, dict):
            raise WireError("a malformed target")
        if node.get("$") == "name" and self.side == "s":
            return self.resolve_name(str(node.get("v")))
        if node.get("$") == "ref" and node.get("side") == self.side:
            return self.codec.decode_ref(node)
        raise WireError("a target that does not live on this side")

    def serve(self, message: dict) -> dict:
        op = message.get("op")
        trusted = self.side == "t"
        if trusted and op not in ("call", "getattr", "callmethod"):
            raise PermissionError(f"the student's code may not ask the test for {op!r}")
        if op == "bind" and not trusted:
            self.register(message.get("register"))
            return {"value": {"$": "dict", "v": [[name, self.bind(name)] for name in message.get("names", [])
                                                 if isinstance(name, str) and name in self.shell.user_ns]}}
        target = self.target(message.get("target"))
        if op == "getattr":
            name = str(message.get("name"))
            if trusted and not lent(target, name):
                raise PermissionError(f"the test's objects do not show {name!r} (only what the course defines)")
            return {"value": self.codec.encode(getattr(target, name))}
        if op == "typeof" and not trusted:
            return {"value": self.codec.encode([klass.__name__ for klass in type(target).__mro__])}
        if op == "setattr":
            setattr(target, str(message.get("name")), self.codec.decode(message.get("value")))
            return {"value": None}
        if op == "optimizer":
            import torch

            name = str(message.get("name"))
            if name.startswith("_") or not isinstance(getattr(torch.optim, name, None), type):
                raise ValueError(f"torch.optim has no optimizer called {name!r}")
            options = {str(k): self.codec.decode(v) for k, v in (message.get("options") or {}).items()}
            return {"value": self.codec.keep(getattr(torch.optim, name)(target.parameters(), **options))}
        if op == "grad" and not trusted:
            wrt, output = message.get("wrt"), message.get("output")
            args = [self.codec.decode(a) for a in message.get("args", [])]
            if not isinstance(wrt, int) or not 0 <= wrt < len(args):
                raise WireError("a gradient with respect to an argument that is not there")
            if output is not None and not isinstance(output, int):
                raise WireError("a gradient of an output that is not an index")
            weights = self.codec.decode(message.get("weights"))
            from seqlab.grading import value_and_grad

            began = time.monotonic()
            result = value_and_grad(target, *args, wrt=wrt, weights=weights, output=output)
            return {"value": self.codec.encode(result), "ran_s": round(time.monotonic() - began, 6)}
        if op == "measure" and not trusted:
            args = [self.codec.decode(a) for a in message.get("args", [])]
            kwargs = {str(k): self.codec.decode(v) for k, v in (message.get("kwargs") or {}).items()}
            from seqlab.modern import measure

            began = time.monotonic()
            result = measure(target, *args, **kwargs)  # what the student's function computes with, measured where it runs
            return {"value": self.codec.encode(result), "ran_s": round(time.monotonic() - began, 6)}
        if op == "callmethod":
            name = str(message.get("name"))
            if trusted and not lent(target, name):
                raise PermissionError(f"the test's objects do not show {name!r} (only what the course defines)")
            target = getattr(target, name)
        elif op != "call":
            raise WireError(f"unknown request {op!r}")
        if trusted and not callable(target):
            raise TypeError("this object of the test cannot be called")
        args = [self.codec.decode(a) for a in message.get("args", [])]
        kwargs = {str(k): self.codec.decode(v) for k, v in (message.get("kwargs") or {}).items()}
        if trusted:
            return {"value": self.codec.encode(target(*args, **kwargs))}
        return self.call_student(target, args, kwargs, message)

    def call_student(self, target, args: list, kwargs: dict, message: dict) -> dict:
        """Run the student's code for a test (under the request's clock); report its result and the arguments it changed."""
        saved = sys.stdout, sys.stderr
        printed = [0]

        def sink(name, text):  # what a student's function prints during a test call is not kept
            printed[0] += len(text)

        sys.stdout, sys.stderr = Stream(sink, "stdout"), Stream(sink, "stderr")
        began = time.monotonic()
        try:
            result = target(*args, **kwargs)
            ran = time.monotonic() - began  # the student's code itself; the rest of the call is the wire's
            value = self.codec.encode(result)
        finally:
            sys.stdout, sys.stderr = saved
        changed = {}
        for key, (original, now) in self.arguments(message, args, kwargs):
            if self.codec_equal(original, now) is False:
                changed[key] = now
        return {"value": value, "changed": changed, "ran_s": round(ran, 6)}

    def arguments(self, message: dict, args: list, kwargs: dict):
        from wire import fingerprint, is_mutable

        pairs = [(str(i), node, value) for i, (node, value) in enumerate(zip(message.get("args", []), args))]
        pairs += [(key, node, kwargs.get(key)) for key, node in (message.get("kwargs") or {}).items()]
        for key, node, value in pairs:
            if isinstance(node, dict) and node.get("$") == "iter":
                items = self.codec.iter_items.pop(id(value), None)
                if items is not None:
                    yield key, ({"$": "list", "v": node.get("v")}, self.safe_encode(items))
                continue
            if not is_mutable(value) or isinstance(value, Remote):
                continue
            if isinstance(node, dict) and node.get("$") in ("keep", "mirror"):
                entry = self.codec.mirrors.get(node.get("id"))
                now = fingerprint(value)
                if entry is not None and now != entry[1]:
                    entry[1] = now
                    yield key, (None, self.safe_encode(value))
                continue
            yield key, (node, self.safe_encode(value))

    def safe_encode(self, value):
        try:
            return self.codec.encode(value)
        except WireError:
            return None

    @staticmethod
    def codec_equal(a, b) -> bool:
        return b is None or (a is not None and json.dumps(a, sort_keys=True) == json.dumps(b, sort_keys=True))

    def bind(self, name: str):
        value = self.shell.user_ns[name]
        if callable(value) and not isinstance(value, (type(None),)) and (
                isinstance(value, type) or hasattr(value, "__code__") or hasattr(value, "__call__")) \
                and not self.is_data(value):
            return {"$": "name", "side": self.side, "v": name}
        return self.codec.encode(value)

    def is_data(self, value) -> bool:
        try:
            node = self.codec.encode(value)
        except WireError:
            return False
        return not (isinstance(node, dict) and node.get("$") == "ref")

    def register(self, names) -> None:
        """The course's own classes (defined in `definitions` cells) travel by their fields."""
        for name in names if isinstance(names, list) else []:
            value = self.shell.user_ns.get(name) if isinstance(name, str) else None
            if isinstance(value, type):
                self.codec.classes[f"course:{name}"] = value

    # -- cells -----------------------------------------------------------------------------------------
    def run_cell(self, message: dict) -> dict:
        code = str(message.get("code", ""))
        timeout = float(message.get("timeout", 60))
        outputs = Outputs(max(0, self.total_output_budget))
        self.outputs_ref[0] = outputs
        saved = sys.stdout, sys.stderr
        self.shell.last_error_line, self.shell.last_error_from_peer = None, False
        clock = Clock(timeout, self.backstop * timeout, self.queue, peer=self.peer_queue, group=self.group_cpu)
        result, late, refused = None, None, []
        calls = self.peer.calls, self.peer.call_s, self.peer.remote_s
        try:
            clock.open()
            if self.side == "t":
                refused = self.bind_names()
            sys.stdout, sys.stderr = Stream(outputs.stream, "stdout"), Stream(outputs.stream, "stderr")
            if not refused:
                result = self.shell.run_cell(code, store_history=True, silent=False)
        except CellTimeout as error:  # outside the cell's own code: fetching its names, or the runner's steps
            late = error
        finally:
            clock.close_quietly()
            sys.stdout, sys.stderr = saved
        figures = clock.figures()
        figures.update(calls=self.peer.calls - calls[0], call_s=round(self.peer.call_s - calls[1], 4),
                       remote_s=round(self.peer.remote_s - calls[2], 4))
        if self.side == "t":
            self.register(self.config.get("classes"))
        self.total_output_budget -= outputs.used
        if refused:
            outputs.error("ProtocolError", "this test was not run: the student's kernel answered the test kernel's "
                          "request for names with " + "; ".join(refused), [])
            status = "error"
            self.shell.last_error_line = 0  # before the cell's first line: not a failure inside its hidden tests
        elif result is None:
            outputs.error("CellTimeout", str(late), [])
            status = "error"
        else:
            status = "ok" if result.success else "error"
        if result is not None and not result.success and not any(o["output_type"] == "error" for o in outputs.items):
            error = result.error_in_exec or result.error_before_exec
            outputs.error(type(error).__name__, str(error), [])
        return {"status": status, "outputs": outputs.items, "dropped": outputs.dropped,
                "error_line": self.shell.last_error_line, "error_from_student": self.shell.last_error_from_peer,
                "count": self.shell.execution_count - 1,
                "peer_broken": self.peer.broken, "peer_protocol": self.peer.broke_protocol, "refused": refused,
                "time": figures}

    def bind_names(self) -> list[str]:
        """Before a test cell: the answer names from the student kernel, as proxies to the student's code.

        Nothing else is asked for. A name that a test cell reads and that neither the course's definitions, the
        test cells before it nor Python's builtins define is never fetched (the student controls a given cell's
        data, and could make it whatever a test compares with): the cell fails with a NameError, a fault of the
        course that its own tests find, since every chapter's solution must get full marks through this grader.

        Returns what was wrong with the student kernel's answer, in plain words; then nothing is bound and the
        cell is not run. (Silence is not such a problem: the executor reports a student kernel that stopped.)"""
        asked = set(self.answer_names)
        if not asked or self.peer.broken:
            return []
        try:
            values = self.peer.request("bind", names=sorted(asked), register=list(self.config.get("classes", [])))
        except CellTimeout:
            raise
        except Exception as error:  # noqa: BLE001 - an answer that could not be read, or an error in its place
            if self.peer.broken:
                return []
            return [f"an answer that could not be used ({type(error).__name__}: {str(error)[:300]})"]
        accepted, problems = screen_bound(values, asked, self.may_bind, self.may_be_handle,
                                          tuple(self.codec.classes.values()))
        if not problems:
            self.shell.user_ns.update(accepted)
            self.bound.update(accepted)
        return problems

    def may_bind(self, name: str) -> bool:
        """Never over a builtin, nor over what the test kernel holds of its own (the course's helpers, numpy, a test's
        expected values): only over a name that is free or that an earlier bind_names put there."""
        if hasattr(builtins, name):
            return False
        if name not in self.shell.user_ns:
            return True
        return name in self.bound and self.shell.user_ns[name] is self.bound[name]

    def may_be_handle(self, name: str) -> bool:
        """Only what the source's answer cells define is the student's code; any other name comes by value."""
        return name in self.answer_names

    # -- the loop ----------------------------------------------------------------------------------------
    def loop(self) -> None:
        channels = [self.control.sock] + ([self.peer.channel.sock] if self.side == "s" else [])
        while True:
            ready, _, _ = select.select(channels, [], [])
            if self.control.sock in ready:
                try:
                    message = self.control.recv()
                except WireError:
                    return
                if message.get("op") == "run":
                    self.control.send(self.run_cell(message))
                elif message.get("op") == "exit":
                    return
            elif self.side == "s":
                try:
                    message = self.peer.channel.recv()
                except WireError:
                    channels = [self.control.sock]
                    continue
                if message.get("kind") == "req":
                    try:
                        reply = self.peer.answer(message)
                    except CellTimeout as error:  # the request's one interrupt, in the runner's own steps
                        while CLOCKS:
                            CLOCKS[-1].close_quietly()
                        reply = {"kind": "rep", "id": message.get("id"),
                                 "error": {"type": "CellTimeout", "message": str(error)}}
                    try:
                        self.peer.channel.send(reply, timeout=30)
                    except WireError:
                        channels = [self.control.sock]


def main(control_fd: int, peer_fd: int, config: dict, watch_fd: int | None = None, group_fd: int | None = None) -> None:
    control = socket.socket(fileno=control_fd)
    peer = socket.socket(fileno=peer_fd)
    runner = Runner(config["side"], control, peer, {**config, "peer_schedstat_fd": watch_fd, "group_cpu_fd": group_fd})
    runner.control.send({"ready": True, "own_time": runner.queue.available, "own_time_problem": runner.queue.reason,
                         "peer_time": runner.peer_queue is not None and runner.peer_queue.available,
                         "group_cpu": runner.group_cpu is not None and runner.group_cpu.available})
    runner.loop()
